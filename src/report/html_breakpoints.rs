//! The break-point section of the HTML page: per search a chart of its
//! steps (throughput at each level, green when clean, red when failed,
//! probes small, the break point dashed) and a table of the steps with
//! the first failure's log line; a planned search without a record is
//! named missing. It draws the stored search and never searches.

use super::html_marks::GREY;
use super::svg::{color, esc, Axis, Plot, RED};
use super::table::{Align, Cell, Column, Kind, Row, Table};
use super::{breakpoint_front, Report};
use crate::units::{fmt_count, fmt_us, num};
use std::fmt::Write;

const GREEN: &str = "#2ca02c";

/// The break-point section: missing searches named, then a chart and a
/// table of steps per search.
pub(super) fn section(s: &mut String, report: &Report, variants: &[String]) {
    s.push_str("<section class=\"chart\" id=\"breakpoints\"><h2>Break points</h2><p class=\"note\">Each search step: throughput at that level, green when clean, red when it failed (errors, or p99 over the ceiling). The dashed line is the break point: the highest clean level. Small points are probes (short steps while searching); the break point's figures come from its full step.</p>");
    for id in &report.missing_breakpoints {
        let _ = write!(s, "<p><span class=\"status-missing\">missing</span> {}: the search was planned but has no record (not run).</p>", esc(id));
    }
    if report.breakpoints.is_empty() {
        s.push_str("<svg width=\"0\" height=\"0\"></svg>");
    }
    s.push_str("<div class=\"pair\">");
    for b in &report.breakpoints {
        let c = color(variants, &b.variant);
        let t = format!(
            "Break point, {} · {} · {}: {} {}",
            b.variant,
            b.app,
            breakpoint_front(b),
            b.mode,
            b.result.level.map_or("none".into(), num)
        ) + if b.result.confirmed {
            ""
        } else {
            " (interrupted before its full step: a probe's figures)"
        };
        let levels: Vec<f64> = b.result.steps.iter().map(|st| st.level).collect();
        let _ = write!(s, "<div><h3>{}</h3>", esc(&t));
        if let (Some(at), Some(why)) = (b.result.failed_at, b.result.why_failed()) {
            let _ = write!(
                s,
                "<p class=\"wrap\">First failing level {}: <span class=\"bad-text\">{}</span></p>",
                num(at),
                esc(&format!("{}: {why}", b.variant))
            );
        }
        if levels.is_empty() {
            s.push_str("<p class=\"bad-text\">No steps recorded.</p><svg width=\"0\" height=\"0\"></svg></div>");
            continue;
        }
        let (lo, hi) = levels
            .iter()
            .fold((f64::MAX, 0f64), |(a, z), v| (a.min(*v), z.max(*v)));
        let log = lo > 0.0 && hi / lo >= 8.0;
        let xlabel = if b.mode == "rate" {
            "offered rate (req/s)"
        } else {
            "concurrent connections"
        };
        let x = Axis::at(&levels, log, xlabel, &|v| num(v));
        let ymax = b
            .result
            .steps
            .iter()
            .map(|st| st.throughput_rps)
            .fold(1f64, f64::max);
        let y = Axis::linear(0.0, ymax * 1.1, "throughput (req/s)", &fmt_count);
        let mut p = Plot::new(570.0, 300.0, x, y).with_left(60.0);
        if let Some(l) = b.result.level {
            p.vline(l, c, &format!("break point {}", num(l)));
        }
        for (i, st) in b.result.steps.iter().enumerate() {
            let col = if st.clean { GREEN } else { RED };
            p.point(
                st.level,
                st.throughput_rps,
                if st.probe { 3.0 } else { 5.0 },
                col,
                &format!(
                    "step {} ({}): level {}, {:.0} req/s, {} errors, p99 {}{}",
                    i + 1,
                    if st.probe { "probe" } else { "full" },
                    num(st.level),
                    st.throughput_rps,
                    st.errors,
                    fmt_us(st.p99_us as f64),
                    st.why.as_ref().map_or(String::new(), |w| format!(" ({w})"))
                ),
            );
            p.text(
                st.level,
                st.throughput_rps,
                &format!("{}", i + 1),
                GREY,
                "start",
            );
        }
        p.legend("clean", GREEN, false);
        p.legend("failed", RED, false);
        s.push_str(&p.finish(&t, true));
        s.push_str(&steps(&b.result.steps).html());
        s.push_str("</div>");
    }
    s.push_str("</div></section>\n");
}

/// A search's steps as a table (shown in HTML): a failed step's row is
/// red, with why and the first failure's log line under it.
fn steps(steps: &[crate::search::StepResult]) -> Table {
    let rows = (steps.iter().enumerate())
        .map(|(i, st)| {
            let result = match &st.why {
                _ if st.clean => Cell::text("clean"),
                why => Cell::text(format!("failed: {}", why.as_deref().unwrap_or(""))),
            };
            let log = (st.first_failure.as_ref()).and_then(|f| f.log_line.clone());
            Row {
                bad: !st.clean,
                ..Row::new(vec![
                    Cell::num(Some((i + 1) as f64)),
                    Cell::text(if st.probe { "probe" } else { "full" }),
                    Cell::text(num(st.level)),
                    Cell::num(Some(st.throughput_rps)),
                    Cell::num(Some(st.errors as f64)),
                    Cell::num(Some(st.p99_us as f64)),
                    Cell::num(Some(st.settle_s)).marked("", "s"),
                    match log {
                        Some(line) => result.sub_code(line),
                        None => result,
                    },
                ])
            }
        })
        .collect();
    let col = |kind, head: &str| Column::new(kind, Align::Right).html(head);
    Table {
        columns: vec![
            col(Kind::Count, "Step"),
            Column::new(Kind::Text, Align::Left).html("Kind"),
            col(Kind::Text, "Level"),
            col(Kind::Rate, "req/s"),
            col(Kind::Count, "Errors"),
            col(Kind::Latency, "p99"),
            col(Kind::Fixed(2), "Settle"),
            Column::new(Kind::Text, Align::Left)
                .html("Result")
                .class("wrap"),
        ],
        rows,
        ..Table::default()
    }
}
