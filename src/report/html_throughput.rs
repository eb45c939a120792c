//! The throughput section of the HTML page: per app, front and load mode
//! (closed or open loop) one chart of throughput against the load level,
//! a line per server through the medians with min–max whiskers, a red ×
//! where a level has no good run, and the break points found for the same
//! chart as dashed lines. The break-point searches' own charts are in
//! html_breakpoints.rs; this file never reads a search's steps.

use super::html_marks::alarm;
use super::svg::{color, esc, Axis, Plot, RED};
use super::{load_label, Group, Report};
use crate::lab::trial::Topology;
use crate::store::records::StoredBreakpoint;
use crate::units::{fmt_count, num};
use std::fmt::Write;

/// The throughput section: a chart per (app, front) and load mode, or a
/// red line when there is no group to chart.
pub(super) fn section(s: &mut String, report: &Report, variants: &[String]) {
    s.push_str("<section class=\"chart\" id=\"throughput\"><h2>Throughput against concurrency</h2><p class=\"note\">One line per server through the median of the repeats; whiskers span min–max. A dashed vertical line marks a server's break point (highest load with no errors). A red × marks a load level with no good run.</p>");
    let mut drawn = 0;
    for ((app, fr), groups) in report.sections() {
        // Every group of a section has the same front.
        let behind_nginx = groups
            .first()
            .is_some_and(|g| g.planned.topology() != Topology::Direct);
        for rate_mode in [false, true] {
            let gs: Vec<&Group> = groups
                .iter()
                .copied()
                .filter(|g| g.planned.shape.rate.is_some() == rate_mode)
                .collect();
            if gs.is_empty() {
                continue;
            }
            let bps = chart_breakpoints(report, &app, behind_nginx, rate_mode);
            let t = format!(
                "Throughput, {app}, {fr}{}",
                if rate_mode { ", open loop" } else { "" }
            );
            throughput_chart(s, variants, &gs, &bps, &t, rate_mode);
            drawn += 1;
        }
    }
    if drawn == 0 {
        s.push_str("<p class=\"bad-text\">No trial groups to chart.</p><svg width=\"0\" height=\"0\"></svg>");
    }
    s.push_str("</section>\n");
}

/// The break points found for one throughput chart: same app, same
/// front (direct or behind nginx), same load mode (closed or open loop).
fn chart_breakpoints<'a>(
    report: &'a Report,
    app: &str,
    behind_nginx: bool,
    rate_mode: bool,
) -> Vec<&'a StoredBreakpoint> {
    report
        .breakpoints
        .iter()
        .filter(|b| {
            b.app == app && (b.behind == "nginx") == behind_nginx && (b.mode == "rate") == rate_mode
        })
        .collect()
}

/// The load level a group sits at on the throughput chart's x axis: the
/// offered rate in open loop, the connection count in closed loop.
fn level(g: &Group) -> f64 {
    g.planned
        .shape
        .rate
        .unwrap_or(g.planned.shape.connections as f64)
}

/// One throughput chart: axes spanning the groups and break points, one
/// line per server, the break points marked, then the titled SVG.
fn throughput_chart(
    s: &mut String,
    variants: &[String],
    gs: &[&Group],
    bps: &[&StoredBreakpoint],
    title: &str,
    rate_mode: bool,
) {
    let (mut plot, ymax) = throughput_plot(gs, bps, rate_mode);
    let present: Vec<&String> = variants
        .iter()
        .filter(|v| gs.iter().any(|g| &&g.planned.variant == v))
        .collect();
    for (vi, v) in present.iter().enumerate() {
        // Whiskers of servers at the same level side by side.
        let shift = (vi as f64 - (present.len() as f64 - 1.0) / 2.0) * 6.0;
        throughput_line(&mut plot, variants, gs, v, shift, ymax);
    }
    breakpoint_marks(&mut plot, variants, bps);
    let _ = write!(s, "<h3>{}</h3>{}", esc(title), plot.finish(title, true));
}

/// The empty throughput plot and its y maximum: x over every group's and
/// break point's level (log when they span 8× or more), y from 0 to the
/// highest throughput seen plus headroom.
fn throughput_plot(gs: &[&Group], bps: &[&StoredBreakpoint], rate_mode: bool) -> (Plot, f64) {
    let mut levels: Vec<f64> = gs.iter().map(|g| level(g)).collect();
    let bp_levels: Vec<f64> = bps.iter().filter_map(|b| b.result.level).collect();
    let all: Vec<f64> = levels.iter().chain(&bp_levels).copied().collect();
    levels.extend(bp_levels.iter().copied());
    let (lo, hi) = all
        .iter()
        .fold((f64::MAX, 0f64), |(a, b), v| (a.min(*v), b.max(*v)));
    let log = lo > 0.0 && hi / lo >= 8.0;
    let ymax = gs
        .iter()
        .filter_map(|g| g.good())
        .map(|m| m.throughput_rps.max)
        .chain(bps.iter().map(|b| b.throughput_rps))
        .fold(0f64, f64::max);
    let xlabel = if rate_mode {
        "offered rate (req/s)"
    } else {
        "concurrent connections"
    };
    let x = Axis::at(&levels, log, xlabel, &|v| num(v));
    let y = Axis::linear(0.0, ymax * 1.08, "throughput (req/s)", &fmt_count);
    (Plot::new(1150.0, 380.0, x, y), ymax)
}

/// One server's line: a whisker and median point per load level with a
/// good run, a red × where there is none, and the line through the medians.
fn throughput_line(
    plot: &mut Plot,
    variants: &[String],
    gs: &[&Group],
    v: &String,
    shift: f64,
    ymax: f64,
) {
    let mut pts = Vec::new();
    for g in gs.iter().filter(|g| &g.planned.variant == v) {
        let c = color(variants, v);
        let xv = level(g);
        match g.good() {
            Some(m) => {
                let t = &m.throughput_rps;
                plot.vwhisker_shift(xv, shift, t.min, t.max, c);
                plot.point(
                    xv,
                    t.median,
                    4.0,
                    c,
                    &format!(
                        "{v}, {}: {:.0} req/s (min {:.0}, max {:.0}, {} runs){}",
                        load_label(&g.planned),
                        t.median,
                        t.min,
                        t.max,
                        t.n,
                        if g.notes().is_empty() {
                            String::new()
                        } else {
                            format!("; {}", g.notes())
                        }
                    ),
                );
                if !g.short_notes().is_empty() {
                    plot.text(
                        xv,
                        t.median,
                        &format!("  {}", g.short_notes()),
                        alarm(g),
                        "start",
                    );
                }
                pts.push((xv, t.median));
            }
            None => {
                plot.text(xv, 0.0, "×", RED, "middle");
                plot.text(
                    xv,
                    ymax * 0.04,
                    &format!("{v}: no data ({})", g.notes()),
                    RED,
                    "middle",
                );
            }
        }
    }
    if !pts.is_empty() {
        plot.line(&pts, color(variants, v), 2.0, false, v);
        plot.legend(v, color(variants, v), false);
    }
}

/// Each found break point as a dashed vertical line and a point.
fn breakpoint_marks(plot: &mut Plot, variants: &[String], bps: &[&StoredBreakpoint]) {
    for b in bps {
        if let Some(l) = b.result.level {
            plot.vline(
                l,
                color(variants, &b.variant),
                &format!("{} break point {}", b.variant, num(l)),
            );
            plot.point(
                l,
                b.throughput_rps,
                5.0,
                color(variants, &b.variant),
                &format!("{} break point: {:.0} req/s", b.variant, b.throughput_rps),
            );
        }
    }
}
