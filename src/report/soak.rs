//! Soaks in every report (issue 29): for each trial whose record has a
//! `soak`, each worker's growth per hour and its verdict (the terminal's
//! lines, a Markdown table), and in the HTML report its memory over time,
//! one line per worker with the fitted slope drawn over it, beside the
//! table of verdicts.
//!
//! A study without soaks gets nothing from here: no section, no line, no
//! link, its reports byte for byte as before. It fits nothing: slopes and
//! verdicts are the record's (`lab::soak`); only the fitted line's
//! intercept, which the record does not keep, is placed here (the median
//! of the points' offsets from the slope, as Theil-Sen places it).

use super::svg::{esc, Axis, Plot, PALETTE};
use super::table::{Align, Cell, Column, Kind, Row, Table};
use super::{Report, TrialRow};
use crate::lab::soak::{Growth, SoakRecord, SoakWorker};
use crate::sampler::SeriesPoint;
use std::fmt::Write;

const MIB: f64 = 1024.0 * 1024.0;

/// Every trial with a soak, in the study's order.
fn soaks(report: &Report) -> Vec<(&TrialRow, &SoakRecord)> {
    report
        .trials
        .iter()
        .filter_map(|t| Some((t, t.record.as_ref()?.soak.as_ref()?)))
        .collect()
}

impl Report {
    /// Whether some trial's record has a soak (the HTML report's link).
    pub fn has_soak(&self) -> bool {
        !soaks(self).is_empty()
    }
}

/// "+14.0" or "-".
fn slope(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:+.1}"))
}

/// "+11.0 to +17.0" or "-".
fn interval(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("{lo:+.1} to {hi:+.1}"),
        _ => "-".into(),
    }
}

/// "worker 1 (pid 11)", the verdict's own name for it.
fn name(w: &SoakWorker) -> &str {
    w.verdict.split_once(": ").map_or(&w.verdict, |(n, _)| n)
}

/// The verdict without the worker's name.
fn words(verdict: &str) -> &str {
    verdict.split_once(": ").map_or(verdict, |(_, v)| v)
}

/// "2 workers over 40 s at 200 req/s".
fn heading(s: &SoakRecord) -> String {
    format!(
        "{} worker{} over {} at {} req/s",
        s.workers.len(),
        if s.workers.len() == 1 { "" } else { "s" },
        duration(s.duration_s),
        s.rate_rps
    )
}

/// `2h`, `90m`, `40s`.
fn duration(secs: f64) -> String {
    match secs.round() as u64 {
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// Each soak's verdicts under the terminal table; nothing without soaks.
pub(super) fn terminal(s: &mut String, report: &Report) {
    for (t, soak) in soaks(report) {
        let _ = writeln!(s, "\nsoak {}: {}", t.planned.id, heading(soak));
        for w in &soak.workers {
            let _ = writeln!(s, "  {}", w.verdict);
        }
        let _ = writeln!(s, "  {}", soak.rackbench.verdict);
    }
}

/// A `## Soak` section, a table of verdicts per soak; nothing without.
pub(super) fn markdown(s: &mut String, report: &Report) {
    let all = soaks(report);
    if all.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "## Soak\n\nEach worker's memory growth over the counted window (a Theil-Sen slope of USS, or RSS where `metric` says so, with its 95% interval), in MiB per hour.\n"
    );
    for (t, soak) in all {
        let _ = writeln!(s, "### {}: {}\n", t.planned.id, heading(soak));
        let columns = [
            ("Worker", Align::Left),
            ("Metric", Align::Left),
            ("Growth", Align::Right),
            ("95% CI", Align::Right),
            ("Shared", Align::Right),
            ("Verdict", Align::Left),
        ]
        .map(|(h, a)| Column::new(Kind::Text, a).md(h));
        let rows = (rows(soak).into_iter())
            .map(|(name, metric, g, shared, verdict)| {
                let cells = [
                    name,
                    metric,
                    slope(g.slope_mib_per_hour),
                    interval(g.ci_low_mib_per_hour, g.ci_high_mib_per_hour),
                    shared,
                    verdict,
                ];
                Row::new(cells.map(Cell::text).to_vec())
            })
            .collect();
        let table = Table {
            columns: columns.to_vec(),
            rows,
            ..Table::default()
        };
        s.push_str(&table.markdown());
        s.push('\n');
    }
}

/// (who, metric, growth, shared slope, verdict in words) per worker,
/// then the workers' total and rackbench itself.
fn rows(soak: &SoakRecord) -> Vec<(String, String, Growth, String, String)> {
    let mut out: Vec<_> = soak
        .workers
        .iter()
        .map(|w| {
            (
                name(w).to_string(),
                w.metric.clone(),
                w.growth,
                slope(w.shared_slope_mib_per_hour),
                words(&w.verdict).to_string(),
            )
        })
        .collect();
    if soak.workers.len() > 1 {
        let total = Growth {
            slope_mib_per_hour: soak.total_slope_mib_per_hour,
            ci_low_mib_per_hour: soak.total_ci_low_mib_per_hour,
            ci_high_mib_per_hour: soak.total_ci_high_mib_per_hour,
        };
        out.push((
            "all workers".into(),
            String::new(),
            total,
            "-".into(),
            "the slopes added up (the bounds too: a conservative interval)".into(),
        ));
    }
    out.push((
        "rackbench".into(),
        soak.rackbench.metric.clone(),
        soak.rackbench.growth,
        "-".into(),
        words(&soak.rackbench.verdict).to_string(),
    ));
    out
}

/// The HTML section: per soak, its chart and its table; nothing without
/// soaks.
pub(super) fn html(s: &mut String, report: &Report) {
    let all = soaks(report);
    if all.is_empty() {
        return;
    }
    s.push_str("<section class=\"chart\" id=\"soak\"><h2>Soak: memory over time</h2><p class=\"note\">Each worker's memory over the counted window (USS, the pages only it maps, or RSS where the table says so), one line per worker; the dashed line over it is its fitted growth (a Theil-Sen slope). A replaced worker ends its line and its replacement starts one.</p>");
    for (t, soak) in all {
        let title = format!("Memory per worker, {}: {}", t.planned.id, heading(soak));
        let _ = write!(s, "<h3>{}</h3>", esc(&title));
        s.push_str(&chart(soak, &title));
        s.push_str("<table><tr><th class=\"l\">Worker</th><th class=\"l\">Metric</th><th>Growth (MiB/hour)</th><th>95% CI</th><th>Shared (MiB/hour)</th><th class=\"l\">Verdict</th></tr>");
        for (name, metric, g, shared, verdict) in rows(soak) {
            let _ = write!(
                s,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l notes\">{}</td></tr>",
                esc(&name),
                esc(&metric),
                slope(g.slope_mib_per_hour),
                interval(g.ci_low_mib_per_hour, g.ci_high_mib_per_hour),
                shared,
                esc(&verdict)
            );
        }
        s.push_str("</table>");
    }
    s.push_str("</section>\n");
}

/// A worker's series as (time in the chart's unit, MiB of its metric).
fn points(w: &SoakWorker, per: f64) -> Vec<(f64, f64)> {
    let of = |p: &SeriesPoint| match w.metric.as_str() {
        "uss" => p.uss_bytes,
        _ => Some(p.rss_bytes),
    };
    w.series
        .iter()
        .filter_map(|p| of(p).map(|b| (p.t_s / per, b as f64 / MIB)))
        .collect()
}

/// The fitted line over `pts` (time in units of `per` seconds, MiB): the
/// slope from the record, the intercept the median offset.
fn fitted(pts: &[(f64, f64)], mib_per_hour: f64, per: f64) -> Vec<(f64, f64)> {
    let per_unit = mib_per_hour / 3600.0 * per;
    let mut offsets: Vec<f64> = pts.iter().map(|(x, y)| y - per_unit * x).collect();
    if offsets.is_empty() {
        return Vec::new();
    }
    offsets.sort_by(f64::total_cmp);
    let n = offsets.len();
    let b = if n % 2 == 1 {
        offsets[n / 2]
    } else {
        (offsets[n / 2 - 1] + offsets[n / 2]) / 2.0
    };
    let (x0, x1) = (pts[0].0, pts[n - 1].0);
    vec![(x0, b + per_unit * x0), (x1, b + per_unit * x1)]
}

/// Seconds, minutes or hours, as the soak's length reads best.
fn time_unit(end_s: f64) -> (f64, &'static str) {
    if end_s > 2.0 * 3600.0 {
        (3600.0, "hours into the window")
    } else if end_s > 180.0 {
        (60.0, "minutes into the window")
    } else {
        (1.0, "seconds into the window")
    }
}

/// The soak's chart: one line per worker, its fitted slope dashed.
fn chart(soak: &SoakRecord, title: &str) -> String {
    let end_s = soak
        .workers
        .iter()
        .filter_map(|w| w.series.last())
        .map(|p| p.t_s)
        .fold(soak.duration_s, f64::max);
    let (per, unit) = time_unit(end_s);
    let lines: Vec<Vec<(f64, f64)>> = soak.workers.iter().map(|w| points(w, per)).collect();
    let ys = || lines.iter().flatten().map(|p| p.1);
    let (lo, hi) = (ys().fold(f64::MAX, f64::min), ys().fold(f64::MIN, f64::max));
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (0.0, 1.0) };
    // A flat worker still gets a readable axis: at least 1 MiB tall.
    let pad = ((hi - lo) * 0.05).max(0.5);
    let x = Axis::linear(0.0, end_s / per, unit, &|v| format!("{v:.0}"));
    let y = Axis::linear((lo - pad).max(0.0), hi + pad, "MiB", &|v| format!("{v:.0}"));
    let mut p = Plot::new(760.0, 260.0, x, y);
    if soak
        .workers
        .iter()
        .any(|w| w.growth.slope_mib_per_hour.is_some())
    {
        p.legend("fitted growth", "#888", true);
    }
    for (i, (w, pts)) in soak.workers.iter().zip(&lines).enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        p.line(pts, color, 1.6, false, &w.verdict);
        let label = format!("{}: {}", name(w), slope(w.growth.slope_mib_per_hour));
        if let Some(m) = w.growth.slope_mib_per_hour {
            p.line(&fitted(pts, m, per), color, 1.2, true, &w.verdict);
            p.legend(&format!("{label} MiB/hour"), color, false);
        } else {
            p.legend(&label, color, false);
        }
    }
    p.finish(title, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Points = Vec<(f64, f64)>;

    /// (case, points, MiB/hour, per, the line's ends)
    #[test]
    fn the_fitted_line_runs_through_the_points_median_offset() {
        let rows: Vec<(&str, Points, f64, f64, Points)> = vec![
            (
                "on the line",
                vec![(0.0, 10.0), (1.0, 11.0), (2.0, 12.0)],
                3600.0,
                1.0,
                vec![(0.0, 10.0), (2.0, 12.0)],
            ),
            (
                "an outlier moves nothing",
                vec![(0.0, 10.0), (1.0, 50.0), (2.0, 12.0), (3.0, 13.0)],
                3600.0,
                1.0,
                vec![(0.0, 10.0), (3.0, 13.0)],
            ),
            (
                "minutes",
                vec![(0.0, 5.0), (1.0, 6.0)],
                60.0,
                60.0,
                vec![(0.0, 5.0), (1.0, 6.0)],
            ),
            ("nothing", vec![], 1.0, 1.0, vec![]),
        ];
        for (case, pts, m, per, want) in rows {
            let got = fitted(&pts, m, per);
            assert_eq!(got.len(), want.len(), "{case}");
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g.0 - w.0).abs() < 1e-9 && (g.1 - w.1).abs() < 1e-9,
                    "{case}: {got:?}"
                );
            }
        }
    }

    #[test]
    fn a_verdict_splits_into_the_worker_and_its_words() {
        let v = "worker 2 (pid 7): +14.0 MiB/hour (95% CI +11.0 to +17.0), still growing";
        assert_eq!(
            words(v),
            "+14.0 MiB/hour (95% CI +11.0 to +17.0), still growing"
        );
        assert_eq!(duration(7200.0), "2h");
        assert_eq!(duration(5400.0), "90m");
        assert_eq!(duration(40.0), "40s");
    }
}
