//! A history's page (`history --html`): one chart per group and metric
//! over the runs in date order, each run's median as a point on a line,
//! the interval of its median as a band, disturbed runs as hollow orange
//! rings, the points that make the baseline in grey, and each
//! significant step as a dashed line between its two runs, named. Self-
//! contained: inline SVG, no script.

use super::compare::figure;
use super::history::{short_commit, title};
use super::svg::{esc, Axis, Plot};
use crate::history::{History, Series};
use std::fmt::Write;

const LINE: &str = "#1f6fb2";
const BASELINE: &str = "#888888";
const DISTURBED: &str = "#e07000";
const SLOWER: &str = "#c0392b";
const FASTER: &str = "#1e8449";

/// "11-28 03:00" from an RFC 3339 time; the text itself when shorter.
fn short_date(t: &str) -> String {
    match (t.get(5..10), t.get(11..16)) {
        (Some(d), Some(h)) => format!("{d} {h}"),
        _ => t.to_string(),
    }
}

/// One series' chart.
fn chart(h: &History, s: &Series) -> String {
    let n = s.points.len();
    let xs: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let dates: Vec<String> = s.points.iter().map(|p| short_date(&p.started)).collect();
    let x = Axis::at(&xs, false, "run (UTC start)", &|v: f64| {
        dates.get(v.round() as usize).cloned().unwrap_or_default()
    });
    let hi = s
        .points
        .iter()
        .map(|p| p.ci_high.max(p.value))
        .fold(0.0f64, f64::max);
    let metric = s.metric.clone();
    let y = Axis::linear(0.0, hi * 1.08, &title(s), &|v| figure(&metric, v));
    let mut plot = Plot::new(900.0, 300.0, x, y).with_left(86.0);
    let band: Vec<(f64, f64, f64)> = s
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (i as f64, p.ci_low, p.ci_high))
        .collect();
    plot.band(&band, LINE, 0.15, "interval of each run's median");
    let line: Vec<(f64, f64)> = s
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| (i as f64, p.value))
        .collect();
    plot.line(&line, LINE, 1.5, false, &title(s));
    for (i, p) in s.points.iter().enumerate() {
        let commit = h
            .runs
            .iter()
            .find(|r| r.run == p.run)
            .and_then(|r| r.commit.as_deref());
        let verdict = p.verdict_vs_baseline.as_deref().unwrap_or("baseline");
        let what = format!(
            "{} ({}, commit {}): {} [{} – {}], {verdict}{}",
            p.run,
            p.started,
            short_commit(commit),
            figure(&s.metric, p.value),
            figure(&s.metric, p.ci_low),
            figure(&s.metric, p.ci_high),
            if p.disturbed { ", disturbed" } else { "" }
        );
        let colour = match verdict {
            "baseline" => BASELINE,
            "slower" => SLOWER,
            "faster" => FASTER,
            _ => LINE,
        };
        plot.point(i as f64, p.value, 4.0, colour, &what);
        if p.disturbed {
            let (px, py) = (plot.px(i as f64), plot.py(p.value));
            plot.ring_px(
                px,
                py,
                8.0,
                DISTURBED,
                &format!("{what}: the machine disturbed it"),
            );
        }
    }
    for st in &s.steps {
        let Some(to) = s.points.iter().position(|p| p.run == st.to) else {
            continue;
        };
        let colour = if st.verdict == "faster" {
            FASTER
        } else {
            SLOWER
        };
        let change = st.change_pct.map_or("?".into(), crate::stats::compare::pct);
        plot.vline(
            to as f64 - 0.5,
            colour,
            &format!("step {change}: {}", st.verdict),
        );
    }
    plot.legend("median", LINE, false);
    plot.legend("baseline", BASELINE, false);
    plot.legend("disturbed", DISTURBED, false);
    plot.finish(&title(s), false)
}

/// The self-contained page.
pub fn page(h: &History) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<p class=\"note\">{} runs from {} to {}; each run compared with the baseline ({}). \
         The line is each run's median, the band the interval of that median; grey points make \
         the baseline, red ones are significantly slower than it, green ones faster; an orange \
         ring marks a run the machine disturbed; a dashed line names a significant step between \
         two neighbouring runs.</p>",
        h.runs.len(),
        esc(h.runs.first().map_or("-", |r| r.started.as_str())),
        esc(h.runs.last().map_or("-", |r| r.started.as_str())),
        esc(&h.baseline)
    );
    for s in &h.groups {
        let _ = write!(body, "<section><h2>{}</h2>{}", esc(&title(s)), chart(h, s));
        if s.steps.is_empty() {
            body.push_str("<p>No significant step.</p>");
        } else {
            body.push_str("<ul>");
            for st in &s.steps {
                let _ = write!(body, "<li>step: {}</li>", esc(&st.words));
            }
            body.push_str("</ul>");
        }
        body.push_str("</section>");
    }
    let _ = write!(body, "<p class=\"note\">Method: {}.</p>", esc(&h.method));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rackbench history</title><style>body{{font-family:sans-serif;margin:24px;max-width:960px}}.note{{color:#555}}svg{{max-width:100%;height:auto}}</style></head><body><h1>rackbench history</h1>{body}</body></html>\n"
    )
}
