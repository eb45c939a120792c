//! The latency section of the HTML page: per app, front and load one chart
//! of every run's full latency distribution, the x axis in nines (90th,
//! 99th, 99.9th percentile…), y log scale, later repeats dashed, runs
//! without a record named in red. It reads the distributions the records
//! hold and never recomputes a percentile.

use super::svg::{color, esc, Axis, Plot, RED};
use super::{load_label, Report, TrialRow};
use crate::load::caveats::Caveats;
use crate::units::{fmt_us, fmt_us_short};
use std::fmt::Write;

/// The latency section: a chart per (app, front, load), side by side.
pub(super) fn section(s: &mut String, report: &Report, variants: &[String]) {
    s.push_str("<section class=\"chart\" id=\"latency\"><h2>Latency distribution</h2><p class=\"note\">Every run's full latency distribution (OK responses; a run flagged ≥ shows the ages of unanswered requests, lower bounds), log scale. The x axis is in nines: each step right is ten times rarer (90th, 99th, 99.9th percentile…). Dashed lines are later repeats.</p><div class=\"pair\">");
    let mut drawn = 0;
    for (app, fr, ld) in latency_keys(report) {
        let rows: Vec<&TrialRow> = report
            .trials
            .iter()
            .filter(|t| {
                t.planned.app == app && t.planned.front() == fr && load_label(&t.planned) == ld
            })
            .collect();
        let dists = latency_distributions(&rows);
        let t = format!("Latency percentiles, {app}, {fr}, {ld}");
        let _ = write!(s, "<div><h3>{}</h3>", esc(&t));
        if dists.is_empty() {
            let _ = write!(s, "<p class=\"bad-text\">No latency data: no good run.</p><svg width=\"0\" height=\"0\"></svg></div>");
            continue;
        }
        let mut plot = latency_plot(&dists);
        for (t, pts) in &dists {
            latency_line(&mut plot, variants, t, pts);
        }
        latency_missing_note(&mut plot, &rows);
        let _ = write!(s, "{}</div>", plot.finish(&t, true));
        drawn += 1;
    }
    if drawn == 0 {
        s.push_str("<svg width=\"0\" height=\"0\"></svg>");
    }
    s.push_str("</div></section>\n");
}

/// One latency chart per (app, front, load), in the order the groups
/// first name them.
fn latency_keys(report: &Report) -> Vec<(String, String, String)> {
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for g in &report.groups {
        let k = (
            g.planned.app.clone(),
            g.planned.front(),
            load_label(&g.planned),
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys
}

/// log10(1 / (1 - p)), p in percent: 0 → 0, 90 → 1, 99 → 2, 99.9 → 3.
fn nines(p: f64) -> f64 {
    (1.0 / (1.0 - p / 100.0)).log10()
}

/// Each recorded run's latency curve in nines (x) against microseconds
/// (y, at least 1 for the log scale), without the 100th percentile; runs
/// with no points are left out.
fn latency_distributions<'a>(rows: &[&'a TrialRow]) -> Vec<(&'a TrialRow, Vec<(f64, f64)>)> {
    rows.iter()
        .filter_map(|t| t.record.as_ref().map(|r| (*t, r)))
        .map(|(t, r)| {
            let pts = r
                .load
                .latency_distribution
                .iter()
                .filter(|p| p.percentile < 100.0)
                .map(|p| (nines(p.percentile), (p.latency_us as f64).max(1.0)))
                .collect();
            (t, pts)
        })
        .filter(|(_, p): &(_, Vec<_>)| !p.is_empty())
        .collect()
}

/// The empty latency plot: x in whole nines (at least 2), y log over
/// every curve's latencies.
fn latency_plot(dists: &[(&TrialRow, Vec<(f64, f64)>)]) -> Plot {
    let xmax = dists
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(x, _)| *x))
        .fold(2.0f64, f64::max)
        .ceil();
    let (ylo, yhi) = dists
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
        .fold((f64::MAX, 1f64), |(a, b), v| (a.min(v), b.max(v)));
    let x = Axis {
        min: 0.0,
        max: xmax,
        log: false,
        label: "percentile (%), in nines".into(),
        ticks: nines_ticks(xmax),
    };
    let y = Axis::log(ylo, yhi, "latency (log scale)", &fmt_us_short);
    Plot::new(570.0, 330.0, x, y).with_left(60.0)
}

/// Ticks 0, 90, 99, 99.9… up to `xmax` nines.
fn nines_ticks(xmax: f64) -> Vec<(f64, String)> {
    (0..=xmax as i32)
        .map(|n| {
            let label = if n == 0 {
                "0".to_string()
            } else {
                let p = 100.0 - 100.0 / 10f64.powi(n);
                let s = format!("{p:.6}");
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            };
            (n as f64, label)
        })
        .collect()
}

/// One run's latency curve (dashed for later repeats), its last point
/// marked, and its server in the legend.
fn latency_line(plot: &mut Plot, variants: &[String], t: &TrialRow, pts: &[(f64, f64)]) {
    let c = color(variants, &t.planned.variant);
    let flags = t
        .record
        .as_ref()
        .and_then(|r| Caveats::of(&r.load).short())
        .map_or(String::new(), |f| format!(" ({f})"));
    plot.line(
        pts,
        c,
        1.8,
        t.planned.repeat > 1,
        &format!("{} repeat {}{flags}", t.planned.variant, t.planned.repeat),
    );
    if let Some((_, last)) = pts.last() {
        let x = pts.last().map_or(0.0, |p| p.0);
        plot.point(
            x,
            *last,
            2.5,
            c,
            &format!(
                "{} repeat {}: {}{flags}",
                t.planned.variant,
                t.planned.repeat,
                fmt_us(*last)
            ),
        );
    }
    plot.legend(&t.planned.variant, c, false);
}

/// The runs of a latency chart with no record, named in red in its corner.
fn latency_missing_note(plot: &mut Plot, rows: &[&TrialRow]) {
    let missing: Vec<String> = rows
        .iter()
        .filter(|t| t.record.is_none())
        .map(|t| {
            format!(
                "{} rep {} {}",
                t.planned.variant,
                t.planned.repeat,
                t.status.label()
            )
        })
        .collect();
    if !missing.is_empty() {
        let top = plot.plot_top();
        let left = plot.plot_left();
        plot.text_px(
            left + 6.0,
            top + 14.0,
            &format!("no data: {}", missing.join("; ")),
            RED,
            "start",
        );
    }
}
