//! How a history (history-v1) is shown as text: a table per group and
//! metric (each run's date, commit, runtime, median with its interval,
//! disturbed, the verdict against the baseline), then the steps named,
//! on the terminal, in Markdown and as CSV (one line per point). The
//! chart page is `history_html`'s.
//!
//! It renders a `History` it is given; the statistics are
//! `history`'s and compare's.

use super::compare::figure;
use super::table::{Align, Cell, Column, Kind, Row, Table, Width};
use crate::history::{History, Point, Series};
use crate::stats::compare::{metric_words, pct};
use std::fmt::Write;

/// A commit as people quote it: its first 10 characters.
pub(super) fn short_commit(c: Option<&str>) -> String {
    c.map_or("-".into(), |c| c.chars().take(10).collect())
}

/// The run's commit and runtime, from the document's run list.
fn run_facts<'a>(h: &'a History, run: &str) -> (Option<&'a str>, Option<&'a str>) {
    h.runs
        .iter()
        .find(|r| r.run == run)
        .map_or((None, None), |r| {
            (r.commit.as_deref(), r.runtime.as_deref())
        })
}

/// The verdict cell: the word and the change with its interval; "baseline"
/// for the points that make it.
fn verdict(p: &Point) -> String {
    match (&p.verdict_vs_baseline, p.change_pct) {
        (None, _) => "baseline".into(),
        (Some(w), Some(c)) => match (p.change_ci_low_pct, p.change_ci_high_pct) {
            (Some(lo), Some(hi)) => format!("{w} {} ({} … {})", pct(c), pct(lo), pct(hi)),
            _ => format!("{w} {}", pct(c)),
        },
        (Some(w), None) => w.clone(),
    }
}

const HEADS: [(&str, Align); 8] = [
    ("run", Align::Left),
    ("started", Align::Left),
    ("commit", Align::Left),
    ("runtime", Align::Left),
    ("median", Align::Right),
    ("interval", Align::Right),
    ("disturbed", Align::Left),
    ("vs baseline", Align::Left),
];

/// A row per run of one series.
fn table(h: &History, s: &Series) -> Table {
    let columns = HEADS
        .iter()
        .map(|(head, a)| {
            Column::new(Kind::Text, *a)
                .term(head, Width::Fit)
                .page(head)
        })
        .collect();
    let rows = s
        .points
        .iter()
        .map(|p| {
            let (commit, runtime) = run_facts(h, &p.run);
            Row::new(
                [
                    p.run.clone(),
                    p.started.clone(),
                    short_commit(commit),
                    runtime.unwrap_or("-").to_string(),
                    figure(&s.metric, p.value),
                    format!(
                        "{} – {}",
                        figure(&s.metric, p.ci_low),
                        figure(&s.metric, p.ci_high)
                    ),
                    if p.disturbed { "yes" } else { "" }.to_string(),
                    verdict(p),
                ]
                .into_iter()
                .map(Cell::text)
                .collect(),
            )
        })
        .collect();
    Table {
        columns,
        rows,
        class: None,
        caption: None,
        wide: true,
    }
}

/// "hello direct connections=4: p99 latency".
pub(super) fn title(s: &Series) -> String {
    format!("{}: {}", s.group, metric_words(&s.metric))
}

/// The steps of a series in lines; "no step" when none.
fn steps(s: &Series) -> Vec<String> {
    if s.steps.is_empty() {
        return vec!["no significant step".into()];
    }
    s.steps
        .iter()
        .map(|st| format!("step: {}", st.words))
        .collect()
}

fn head(h: &History) -> String {
    format!(
        "{} runs, {} to {}; baseline: {}{}",
        h.runs.len(),
        h.runs.first().map_or("-", |r| r.started.as_str()),
        h.runs.last().map_or("-", |r| r.started.as_str()),
        h.baseline,
        match &h.primary_metric {
            Some(m) => format!("; primary metric: {m}"),
            None => String::new(),
        }
    )
}

/// The terminal text: each series' table and its steps.
pub fn terminal(h: &History) -> String {
    let mut out = format!("{}\n", head(h));
    for s in &h.groups {
        let _ = write!(out, "\n{}\n{}", title(s), table(h, s).terminal_lines());
        for line in steps(s) {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

/// The same as a Markdown document.
pub fn markdown(h: &History) -> String {
    let mut out = format!("# rackbench history\n\n{}\n", head(h));
    for s in &h.groups {
        let _ = write!(out, "\n## {}\n\n{}\n", title(s), table(h, s).markdown());
        for line in steps(s) {
            let _ = writeln!(out, "- {line}");
        }
    }
    let _ = write!(out, "\nMethod: {}.\n", h.method);
    out
}

/// One line per point: group, metric, run, started, commit, runtime,
/// value, interval, repeats, disturbed, verdict and change.
pub fn csv(h: &History) -> String {
    let mut out = String::from(
        "group,metric,run,started,commit,runtime,value,ci_low,ci_high,n,disturbed,verdict_vs_baseline,change_pct,change_ci_low_pct,change_ci_high_pct\n",
    );
    let q = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.3}"));
    for s in &h.groups {
        for p in &s.points {
            let (commit, runtime) = run_facts(h, &p.run);
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{:.3},{:.3},{:.3},{},{},{},{},{},{}",
                q(&s.group),
                q(&s.metric),
                q(&p.run),
                q(&p.started),
                commit.unwrap_or(""),
                q(runtime.unwrap_or("")),
                p.value,
                p.ci_low,
                p.ci_high,
                p.n,
                p.disturbed,
                p.verdict_vs_baseline.as_deref().unwrap_or(""),
                opt(p.change_pct),
                opt(p.change_ci_low_pct),
                opt(p.change_ci_high_pct),
            );
        }
    }
    out
}
