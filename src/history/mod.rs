//! The same groups over many runs (issue 42): each run a results
//! directory, in date order, each point a group's metric in one run with
//! the interval of its median, whether the machine disturbed it, and its
//! verdict against a baseline; the steps between neighbouring runs; the
//! rackbench/history-v1 document.
//!
//! Every verdict is compare's (`stats::compare::compare`, the same
//! families, rank test, interval and noise threshold); the words are the
//! A/B's (faster, slower, equivalent, undecided). A step is a
//! neighbouring pair compare calls significant whose adjusted p stays
//! under the level after Holm's adjustment over the series' pairs, so a
//! dozen runs of noise name no step. `read` finds and opens the runs;
//! the formats are `report::history`'s.

pub mod read;

use crate::stats::bootstrap::median;
use crate::stats::compare::{
    compare, higher_is_better, FailIf, GroupSamples, Row, Side, SideSamples, ALPHA, METRICS,
};
use crate::stats::disturbance::DisturbedRuns;
use crate::stats::sequential::DEFAULT_MARGIN_PCT;
use crate::stats::significance::holm;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

pub const SCHEMA: &str = "rackbench/history-v1";

/// What each run is compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Baseline {
    /// The run before it.
    Last,
    /// The repeats of the N runs before it, pooled.
    MedianOf(usize),
    /// One results directory (one of the runs, or not).
    Dir(PathBuf),
}

impl Baseline {
    /// `last`, `median-of-N` (N ≥ 1) or a directory.
    pub fn parse(s: &str) -> Result<Baseline, String> {
        if s == "last" {
            return Ok(Baseline::Last);
        }
        if let Some(n) = s.strip_prefix("median-of-") {
            return match n.parse::<usize>() {
                Ok(n) if n >= 1 => Ok(Baseline::MedianOf(n)),
                _ => Err(format!(
                    "--baseline {s}: write median-of-N with N a whole number from 1 (median-of-5)"
                )),
            };
        }
        Ok(Baseline::Dir(PathBuf::from(s)))
    }

    /// How the document names it.
    pub fn label(&self) -> String {
        match self {
            Baseline::Last => "last".into(),
            Baseline::MedianOf(n) => format!("median-of-{n}"),
            Baseline::Dir(d) => d.display().to_string(),
        }
    }
}

/// One run as read from disk (`read::open`).
#[derive(Debug, Clone)]
pub struct Run {
    pub dir: PathBuf,
    /// RFC 3339 UTC: the manifest's `started_at`, else its first trial's.
    pub started: String,
    pub commit: Option<String>,
    /// The runtimes its trials ran on, as labels, joined by " / ".
    pub runtime: Option<String>,
    pub samples: SideSamples,
}

impl Run {
    fn side(&self) -> Side {
        Side {
            dir: self.dir.clone(),
            selector: None,
        }
    }
}

/// A run as the document lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    pub run: String,
    pub started: String,
    pub commit: Option<String>,
    pub runtime: Option<String>,
}

/// One group's metric in one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    pub run: String,
    pub started: String,
    /// The median over the run's repeats.
    pub value: f64,
    /// The interval of that median ([`median_interval`]).
    pub ci_low: f64,
    pub ci_high: f64,
    /// Repeats counted.
    pub n: usize,
    /// Whether the machine disturbed any of its repeats.
    pub disturbed: bool,
    /// faster, slower, equivalent or undecided against the baseline;
    /// null for the points that make the baseline.
    pub verdict_vs_baseline: Option<String>,
    /// The change against the baseline's median, in percent, and its
    /// 95% interval (compare's); null where the verdict is.
    pub change_pct: Option<f64>,
    pub change_ci_low_pct: Option<f64>,
    pub change_ci_high_pct: Option<f64>,
}

/// A significant change between two neighbouring runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    /// The run before and the run where the step shows.
    pub from: String,
    pub to: String,
    /// faster or slower.
    pub verdict: String,
    pub change_pct: Option<f64>,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    /// The p after compare's and the series' Holm adjustments.
    pub p_adjusted: f64,
    /// In words: "p99 latency +48.1% (95% CI +40.2% to +57.0%) from
    /// runs/03 to runs/04".
    pub words: String,
}

/// One group's metric over the runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Series {
    pub group: String,
    pub metric: String,
    pub higher_is_better: bool,
    pub points: Vec<Point>,
    pub steps: Vec<Step>,
}

/// The body of history-v1.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct History {
    pub schema: String,
    pub baseline: String,
    /// The metric judged alone (compare's primary metric); null for all.
    pub primary_metric: Option<String>,
    pub seed: u64,
    pub method: String,
    pub runs: Vec<RunInfo>,
    pub groups: Vec<Series>,
}

/// The A/B's word for a judged row: significant rows by their direction,
/// the others equivalent when the change's whole interval lies inside the
/// A/B's margin, else undecided.
pub fn verdict_word(row: &Row) -> &'static str {
    if row.significant {
        return if row.direction == "better" {
            "faster"
        } else {
            "slower"
        };
    }
    match (row.ci_low_pct, row.ci_high_pct) {
        (Some(lo), Some(hi)) if lo >= -DEFAULT_MARGIN_PCT && hi <= DEFAULT_MARGIN_PCT => {
            "equivalent"
        }
        _ => "undecided",
    }
}

/// A distribution-free interval of the median from the order statistics:
/// the narrowest (x₍k₎, x₍n+1−k₎) holding the median with at least 95%
/// (binomial), or the whole range when even that is less sure (fewer
/// than 6 repeats: 2 to 5 give 50% to 94%).
pub fn median_interval(values: &[f64]) -> (f64, f64) {
    let mut x: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    x.sort_by(f64::total_cmp);
    let n = x.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    // P(x₍k₎ ≤ median ≤ x₍n+1−k₎) = 1 − 2·P(Bin(n, ½) ≤ k − 1).
    let tail = |k: usize| -> f64 {
        let mut c = 1.0f64;
        let mut s = 0.0;
        for i in 0..k {
            s += c;
            c = c * (n - i) as f64 / (i + 1) as f64;
        }
        s / 2f64.powi(n as i32)
    };
    let mut k = 1;
    while k < n.div_ceil(2) && 1.0 - 2.0 * tail(k + 1) >= 1.0 - ALPHA {
        k += 1;
    }
    (x[k - 1], x[n - k])
}

/// Each group's repeats in `runs` pooled into one side (a median-of-N
/// baseline).
fn pooled(runs: &[&Run]) -> SideSamples {
    let mut out = SideSamples::default();
    for r in runs {
        for (key, g) in &r.samples.groups {
            let p = out
                .groups
                .entry(key.clone())
                .or_insert_with(|| GroupSamples {
                    variant: g.variant.clone(),
                    ..Default::default()
                });
            for (m, xs) in &g.figures {
                p.figures.entry(m).or_default().extend(xs);
            }
            p.histograms.extend(g.histograms.iter().cloned());
            for (m, xs) in &g.endpoints {
                for x in xs {
                    p.add_endpoint(m.clone(), *x);
                }
            }
        }
        for (key, d) in &r.samples.disturbed {
            let p = out.disturbed.entry(key.clone()).or_default();
            *p = DisturbedRuns {
                runs: p.runs + d.runs,
                disturbed: p.disturbed + d.disturbed,
                unmeasured: p.unmeasured + d.unmeasured,
                steal_share_max: p.steal_share_max.max(d.steal_share_max),
                foreign_cpu_share_max: p.foreign_cpu_share_max.max(d.foreign_cpu_share_max),
            };
        }
        for rt in &r.samples.runtimes {
            if !out.runtimes.contains(rt) {
                out.runtimes.push(rt.clone());
            }
        }
    }
    out
}

/// A judged comparison's rows (empty when the two share no group).
pub type Rows = Vec<Row>;

/// Compare's rows of `b` against `a`; empty when they share no group.
fn rows(a: (&Side, &SideSamples), b: (&Side, &SideSamples), seed: u64, p: Option<&str>) -> Rows {
    compare(a, b, seed, p).map(|c| c.rows).unwrap_or_default()
}

/// What the runs are judged against: for each run, its baseline's rows
/// (None for the runs that make the baseline).
fn against_baseline(
    runs: &[Run],
    baseline: &Baseline,
    base_dir: Option<&Run>,
    seed: u64,
    primary: Option<&str>,
) -> Vec<Option<Rows>> {
    runs.iter()
        .enumerate()
        .map(|(i, run)| {
            let (side, samples) = match baseline {
                Baseline::Last => {
                    let prev = runs.get(i.checked_sub(1)?)?;
                    (prev.side(), prev.samples.clone())
                }
                Baseline::MedianOf(n) => {
                    let from = i.checked_sub(*n)?;
                    let before: Vec<&Run> = runs[from..i].iter().collect();
                    let side = Side {
                        dir: PathBuf::from(format!("median-of-{n} before {}", run.dir.display())),
                        selector: None,
                    };
                    (side, pooled(&before))
                }
                Baseline::Dir(_) => {
                    let b = base_dir?;
                    if b.dir == run.dir {
                        return None;
                    }
                    (b.side(), b.samples.clone())
                }
            };
            Some(rows(
                (&side, &samples),
                (&run.side(), &run.samples),
                seed,
                primary,
            ))
        })
        .collect()
}

/// The history of `runs` (in date order) against `baseline` (`base_dir`:
/// the directory's run when the baseline is one), and the newest run's
/// rows against it (None when it makes the baseline), which `--fail-if`
/// judges. `primary` is compare's primary metric; with it only that
/// metric is shown.
pub fn build(
    runs: &[Run],
    baseline: &Baseline,
    base_dir: Option<&Run>,
    seed: u64,
    primary: Option<&str>,
) -> (History, Option<Rows>) {
    let judged = against_baseline(runs, baseline, base_dir, seed, primary);
    // Against the last run, each run's rows are its step's rows.
    let neighbours: Vec<Rows> = if *baseline == Baseline::Last {
        judged
            .iter()
            .skip(1)
            .map(|r| r.clone().unwrap_or_default())
            .collect()
    } else {
        runs.windows(2)
            .map(|w| {
                rows(
                    (&w[0].side(), &w[0].samples),
                    (&w[1].side(), &w[1].samples),
                    seed,
                    primary,
                )
            })
            .collect()
    };
    let mut keys: Vec<String> = Vec::new();
    for r in runs {
        for k in r.samples.groups.keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let metrics: Vec<&str> = match primary {
        Some(m) => vec![m],
        None => METRICS.iter().map(|m| m.0).collect(),
    };
    let mut groups = Vec::new();
    for key in &keys {
        for &metric in &metrics {
            if let Some(s) = series(runs, key, metric, &judged, &neighbours) {
                groups.push(s);
            }
        }
    }
    let history = History {
        schema: SCHEMA.into(),
        baseline: baseline.label(),
        primary_metric: primary.map(str::to_string),
        seed,
        method: METHOD.into(),
        runs: runs
            .iter()
            .map(|r| RunInfo {
                run: r.dir.display().to_string(),
                started: r.started.clone(),
                commit: r.commit.clone(),
                runtime: r.runtime.clone(),
            })
            .collect(),
        groups,
    };
    (history, judged.last().cloned().flatten())
}

const METHOD: &str = "each point the median of the run's repeats with a distribution-free \
    interval of the median (order statistics, at least 95%, else the range); each run against \
    its baseline with compare's statistics (medians, 95% percentile-bootstrap interval of the \
    change, two-sided Mann-Whitney U, Holm-adjusted; significant only outside the 1% noise \
    threshold); equivalent when the whole interval lies within the A/B's 2% margin; a step \
    where neighbouring runs differ significantly after a further Holm adjustment over the \
    series' neighbouring pairs";

/// One group's metric over the runs; None when no run has it.
fn series(
    runs: &[Run],
    key: &str,
    metric: &str,
    judged: &[Option<Rows>],
    neighbours: &[Rows],
) -> Option<Series> {
    let find = |rows: &Rows| {
        rows.iter()
            .find(|r| r.group == key && r.metric == metric)
            .cloned()
    };
    let mut points = Vec::new();
    for (run, judged) in runs.iter().zip(judged) {
        let Some(xs) = run
            .samples
            .groups
            .get(key)
            .and_then(|g| g.figures.get(metric))
        else {
            continue;
        };
        let (ci_low, ci_high) = median_interval(xs);
        let row = judged.as_ref().and_then(find);
        let disturbed = run
            .samples
            .disturbed
            .get(key)
            .is_some_and(|d| d.disturbed > 0);
        points.push(Point {
            run: run.dir.display().to_string(),
            started: run.started.clone(),
            value: median(xs),
            ci_low,
            ci_high,
            n: xs.len(),
            disturbed,
            verdict_vs_baseline: row.as_ref().map(|r| verdict_word(r).to_string()),
            change_pct: row.as_ref().and_then(|r| r.change_pct),
            change_ci_low_pct: row.as_ref().and_then(|r| r.ci_low_pct),
            change_ci_high_pct: row.as_ref().and_then(|r| r.ci_high_pct),
        });
    }
    if points.is_empty() {
        return None;
    }
    Some(Series {
        group: key.to_string(),
        metric: metric.to_string(),
        higher_is_better: higher_is_better(metric),
        points,
        steps: steps(runs, neighbours, key, metric),
    })
}

/// The significant steps between neighbouring runs of one series, Holm
/// over its pairs.
fn steps(runs: &[Run], neighbours: &[Rows], key: &str, metric: &str) -> Vec<Step> {
    let pairs: Vec<(usize, &Row)> = neighbours
        .iter()
        .enumerate()
        .filter_map(|(i, rows)| {
            rows.iter()
                .find(|r| r.group == key && r.metric == metric)
                .map(|r| (i, r))
        })
        .collect();
    let adjusted = holm(&pairs.iter().map(|(_, r)| r.p_adjusted).collect::<Vec<_>>());
    pairs
        .iter()
        .zip(adjusted)
        .filter(|((_, r), p)| r.significant && *p < ALPHA)
        .map(|((i, r), p)| {
            let (from, to) = (
                runs[*i].dir.display().to_string(),
                runs[i + 1].dir.display().to_string(),
            );
            let words = format!(
                "{} {} ({}) from {from} to {to}: {}",
                crate::stats::compare::metric_words(metric),
                r.change_pct.map_or("?".into(), crate::stats::compare::pct),
                match (r.ci_low_pct, r.ci_high_pct) {
                    (Some(lo), Some(hi)) => format!(
                        "95% CI {} to {}",
                        crate::stats::compare::pct(lo),
                        crate::stats::compare::pct(hi)
                    ),
                    _ => "no interval".into(),
                },
                verdict_word(r)
            );
            Step {
                from,
                to,
                verdict: verdict_word(r).into(),
                change_pct: r.change_pct,
                ci_low_pct: r.ci_low_pct,
                ci_high_pct: r.ci_high_pct,
                p_adjusted: p,
                words,
            }
        })
        .collect()
}

/// The newest run's rows (`build`) that cross a `--fail-if` rule: (rule,
/// row). Only the newest run gates, so a step already in the history
/// fails no later build, and only a significant change crosses a rule.
pub fn breaches<'a>(newest: &'a [Row], rules: &'a [FailIf]) -> Vec<(&'a FailIf, &'a Row)> {
    rules
        .iter()
        .flat_map(|rule| {
            rule.breaches(newest)
                .into_iter()
                .map(move |row| (rule, row))
        })
        .collect()
}

#[cfg(test)]
mod tests;
