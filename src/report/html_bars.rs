//! The HTML page's charts with one row per trial group: where the time goes
//! (the mean latency as stacked parts, with telemetry), peak memory (RSS
//! and PSS bars), CPU per request, and the spread of throughput across
//! repeats (a dot per run). The figures come from the groups and
//! time_split.rs's TimeSplit; this file only draws them.

use super::html_marks::alarm;
use super::svg::{color, esc, hbar_rows, Axis, Bar, BarRow, Plot, RED};
use super::{load_label, Group, Report, Status};
use crate::units::{fmt_count, fmt_us, fmt_us_short, mib};
use std::fmt::Write;

impl Report {
    /// Whether any group has telemetry, so the page has a time split.
    pub(super) fn has_telemetry(&self) -> bool {
        self.groups
            .iter()
            .any(|g| g.good().is_some_and(|sum| sum.telemetry.is_some()))
    }
}

/// Where the time goes: per trial group with telemetry, the client's
/// mean latency as one stacked bar of queue (behind nginx), app time
/// less GC, GC, and the rest. Means, because they add up: p50s of
/// parts do not make the p50 of the whole.
pub(super) fn time_split(s: &mut String, report: &Report) {
    let rows: Vec<(&Group, super::time_split::TimeSplit)> = report
        .groups
        .iter()
        .filter_map(|g| {
            g.good()
                .and_then(super::time_split::time_split)
                .map(|v| (g, v))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    s.push_str("<section class=\"chart\" id=\"time-split\"><h2>Where the time goes</h2><p class=\"note\">The client's mean latency per trial group (median over its runs), split by the telemetry middleware inside the server: <b>queue</b> is the wait between nginx and the app (nginx's X-Request-Start stamp; behind nginx only), <b>app</b> the app's own time less <b>GC</b> (GC time per request) and, for an app with ActiveRecord, less its <b>pool wait</b> (waiting for a database connection) and <b>SQL</b> (in queries; GC during a query counts as SQL), and the <b>rest</b> is everything outside the app: the server's parsing and writing, nginx, the network and the client; served directly, the rest includes the wait in the kernel's accept queue (see each trial's timeline). Means add up where percentiles do not.</p>");
    let total = |v: &super::time_split::TimeSplit| v.queue_us + v.app_us + v.rest_us;
    let xmax = rows.iter().map(|(_, v)| total(v)).fold(0f64, f64::max);
    let x = Axis::linear(
        0.0,
        if xmax > 0.0 { xmax * 1.12 } else { 1.0 },
        "mean latency per request",
        &fmt_us_short,
    );
    let y = Axis::rows(rows.len());
    let row_h = 24.0;
    let mut p = Plot::new(1150.0, 28.0 + 46.0 + row_h * rows.len() as f64, x, y).with_left(330.0);
    // Pool wait and SQL only when an app with ActiveRecord ran.
    let db = rows.iter().any(|(_, v)| v.db_us > 0.0 || v.pool_us > 0.0);
    let colors = [
        ("queue", "#4e79a7"),
        ("pool wait", "#e15759"),
        ("SQL", "#b07aa1"),
        ("app", "#59a14f"),
        ("GC", "#f28e2b"),
        ("rest", "#bab0ac"),
    ];
    let color = |name: &str| colors.iter().find(|c| c.0 == name).map_or("#999", |c| c.1);
    for (i, (g, v)) in rows.iter().enumerate() {
        let top = p.plot_top() + row_h * i as f64 + 4.0;
        let label = format!(
            "{} · {} · {} · {}",
            g.planned.variant,
            g.planned.app,
            g.planned.front(),
            load_label(&g.planned)
        );
        p.text_px(p.plot_left() - 8.0, top + 12.0, &label, "#222", "end");
        let mut at = 0.0;
        for (name, len) in v.parts() {
            if len > 0.0 {
                let tip = format!("{label}: {name} {}", fmt_us(len));
                p.hspan_px(at, at + len, top, 16.0, color(name), &tip);
            }
            at += len;
        }
        let end = p.px(at) + 6.0;
        p.text_px(
            end,
            top + 12.0,
            &format!("{} mean", fmt_us(at)),
            "#333",
            "start",
        );
    }
    for (name, c) in colors {
        if db || !matches!(name, "pool wait" | "SQL") {
            p.legend(name, c, false);
        }
    }
    s.push_str(&p.finish(
        if db {
            "Mean latency: queue, pool wait, SQL, app, GC and the rest"
        } else {
            "Mean latency: queue, app, GC and the rest"
        },
        true,
    ));
    s.push_str("</section>\n");
}

/// A horizontal bar chart, one row per group, bars from `bars`
/// (label, colour shade, value getter returning (median, min, max)).
#[allow(clippy::type_complexity)]
fn hbars(
    groups: &[&Group],
    variants: &[String],
    title: &str,
    xlabel: &str,
    bars: &[(&str, f64, &dyn Fn(&Group) -> Option<(f64, f64, f64)>)],
    fmt: &dyn Fn(f64) -> String,
) -> String {
    let rows: Vec<BarRow> = groups
        .iter()
        .map(|g| BarRow {
            label: format!("{} · {}", g.planned.variant, load_label(&g.planned)),
            color: color(variants, &g.planned.variant).to_string(),
            bars: bars
                .iter()
                .map(|(name, opacity, f)| Bar {
                    name,
                    opacity: *opacity,
                    value: f(g),
                })
                .collect(),
            empty: format!(
                "no data ({})",
                if g.notes().is_empty() {
                    "not measured".into()
                } else {
                    g.notes()
                }
            ),
            note: (g.short_notes(), alarm(g)),
        })
        .collect();
    hbar_rows(&rows, 230.0, title, xlabel, fmt)
}

/// Peak RSS and PSS per group and the memory per worker table, per
/// (app, front).
pub(super) fn memory(s: &mut String, report: &Report, variants: &[String]) {
    s.push_str("<section class=\"chart\" id=\"memory\"><h2>Memory</h2><p class=\"note\">Peak RSS (solid) and peak PSS (light) of the whole server process tree over the measured window, in MiB; median bar with min–max whisker across repeats. PSS splits pages shared between a master and its workers, so it is the fairer figure for preforking servers.</p>");
    for ((app, fr), groups) in report.sections() {
        let t = format!("Memory peak, {app}, {fr}");
        let rss = |g: &Group| {
            g.good().map(|m| {
                (
                    mib(m.rss_peak_bytes.median),
                    mib(m.rss_peak_bytes.min),
                    mib(m.rss_peak_bytes.max),
                )
            })
        };
        let pss = |g: &Group| {
            g.good()
                .and_then(|m| m.pss_peak_bytes)
                .map(|p| (mib(p.median), mib(p.min), mib(p.max)))
        };
        let svg = hbars(
            &groups,
            variants,
            &t,
            "peak memory (MiB)",
            &[("RSS", 1.0, &rss), ("PSS", 0.45, &pss)],
            &|v| format!("{v:.1}"),
        );
        let _ = write!(s, "<h3>{}</h3>{svg}", esc(&t));
        let per_worker = format!("Memory per worker, {app}, {fr}");
        s.push_str(&super::memory::html(&per_worker, &groups));
    }
    s.push_str("</section>\n");
}

/// Server CPU time per OK response per group, per (app, front).
pub(super) fn cpu(s: &mut String, report: &Report, variants: &[String]) {
    s.push_str("<section class=\"chart\" id=\"cpu\"><h2>CPU per request</h2><p class=\"note\">Server CPU time (user + system, whole process tree) per OK response, in milliseconds; median with min–max across repeats. Lower is better.</p>");
    for ((app, fr), groups) in report.sections() {
        let t = format!("Server CPU per request, {app}, {fr}");
        let cpu = |g: &Group| {
            g.good()
                .and_then(|m| m.cpu_ms_per_request)
                .map(|c| (c.median, c.min, c.max))
        };
        let svg = hbars(
            &groups,
            variants,
            &t,
            "server CPU per request (ms)",
            &[("CPU", 0.85, &cpu)],
            &|v| format!("{v:.3}"),
        );
        let _ = write!(s, "<h3>{}</h3>{svg}", esc(&t));
    }
    s.push_str("</section>\n");
}

/// Each run's throughput as a dot on its group's row, the median a tick,
/// the missing and failed runs named in red, per (app, front).
pub(super) fn spread(s: &mut String, report: &Report, variants: &[String]) {
    s.push_str("<section class=\"chart\" id=\"spread\"><h2>Spread across repeats</h2><p class=\"note\">Each dot is one run's throughput; the black tick is the median, the line spans min–max. Failed and missing runs are named in red.</p>");
    for ((app, fr), groups) in report.sections() {
        let t = format!("Throughput of each repeat, {app}, {fr}");
        let row_h = 24.0;
        let h = 28.0 + 46.0 + row_h * groups.len() as f64;
        let xmax = groups
            .iter()
            .flat_map(|g| {
                report
                    .trials
                    .iter()
                    .filter(move |t| t.planned.group == g.group)
            })
            .filter_map(|t| t.record.as_ref().map(|r| r.load.throughput_rps))
            .fold(0f64, f64::max);
        let x = Axis::linear(
            0.0,
            if xmax > 0.0 { xmax * 1.05 } else { 1.0 },
            "throughput (req/s)",
            &fmt_count,
        );
        let y = Axis::rows(groups.len());
        let mut p = Plot::new(1150.0, h, x, y).with_left(230.0);
        for (i, g) in groups.iter().enumerate() {
            let cy = p.plot_top() + row_h * i as f64 + row_h / 2.0;
            let c = color(variants, &g.planned.variant);
            p.text_px(
                p.plot_left() - 8.0,
                cy + 4.0,
                &format!("{} · {}", g.planned.variant, load_label(&g.planned)),
                "#222",
                "end",
            );
            if let Some(m) = g.good() {
                let tp = m.throughput_rps;
                p.hwhisker_px(tp.min, tp.max, cy, c);
                let mx = p.px(tp.median);
                p.text_px(mx, cy + 5.0, "|", "#000", "middle");
            }
            let mut bad = Vec::new();
            for t in report.trials.iter().filter(|t| t.planned.group == g.group) {
                match (&t.record, t.status) {
                    (Some(r), Status::Ok) => {
                        let tip = format!(
                            "{} repeat {}: {:.0} req/s, {} errors",
                            g.planned.variant,
                            t.planned.repeat,
                            r.load.throughput_rps,
                            r.load.errors.total()
                        );
                        let px = p.px(r.load.throughput_rps);
                        p.circle_px(px, cy, 5.0, c, &tip);
                    }
                    _ => bad.push(format!("rep {} {}", t.planned.repeat, t.status.label())),
                }
            }
            if !bad.is_empty() {
                let w = p.w;
                p.text_px(w - 20.0, cy + 4.0, &bad.join(", "), RED, "end");
            }
        }
        let _ = write!(s, "<h3>{}</h3>{}", esc(&t), p.finish(&t, true));
    }
    s.push_str("</section>\n");
}
