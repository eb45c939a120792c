//! A against B: two results directories (or two selections of one), trial
//! groups paired by app, topology and load shape, and for each pair and
//! metric the medians, the relative change, a bootstrap 95% interval, a
//! Holm-adjusted rank test, and a verdict in words. A primary metric named
//! before the run is judged in a family of its own (its groups only); the
//! other metrics form the second family. A row without a significant
//! difference says how many repeats would resolve a 5% change.
//!
//! It is arithmetic over samples: `store::samples` reads the results
//! directories and hands it each group's figures per repeat (the one list
//! of `store::figures`). It never reads a file and never runs anything:
//! `rackbench run --aa` runs, then compares.

use super::bootstrap::{change_ci_pct, change_pct, median, RESAMPLES};
use super::disturbance::{DisturbedRuns, GroupDisturbance};
use super::histogram;
use super::significance::{holm, mann_whitney_p, smallest_p};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The level of every test and the complement of every interval.
pub const ALPHA: f64 = 0.05;
/// Changes whose whole 95% interval lies within this many percent of zero
/// are not called significant, however consistent (criterion.rs's noise
/// threshold, the same 1%): on a shared machine the two sides of an A/A
/// run drift apart by a few tenths of a percent, and HDR buckets quantize
/// a percentile to 0.1%, so such a change is real but means nothing.
pub const NOISE_PCT: f64 = 1.0;

/// Metrics compared, in table order: (name in compare-v1, words, higher is better).
pub const METRICS: &[(&str, &str, bool)] = &[
    ("throughput", "throughput", true),
    ("p50", "p50 latency", false),
    ("p90", "p90 latency", false),
    ("p99", "p99 latency", false),
    ("rss_peak", "RSS peak", false),
    ("pss_peak", "PSS peak", false),
    ("cpu_per_request", "server CPU per request", false),
    ("error_rate", "error rate", false),
    // Telemetry (`server_metrics.telemetry`), only when both sides have it.
    (
        "gc_runs_per_1k_requests",
        "GC runs per 1,000 requests",
        false,
    ),
    ("gc_time_share", "GC time share", false),
    ("queue_us_mean", "queue time", false),
    ("app_us_mean", "app time", false),
    // ActiveRecord's share of the app time (an app that loads it).
    ("db_us_mean", "SQL time", false),
    ("pool_wait_us_mean", "pool wait", false),
];

/// The metrics judged per endpoint of a mix, each row named
/// `endpoint:NAME:METRIC` ([`endpoint_metric`]): (METRIC, words, higher
/// is better). Three, not every figure: every row joins the family of the
/// headline rows (so the multiple-comparison control covers them) and so
/// raises the repeats each row needs to come out significant.
pub const ENDPOINT_METRICS: &[(&str, &str, bool)] = &[
    ("throughput", "throughput", true),
    ("p50", "p50 latency", false),
    ("p99", "p99 latency", false),
];

/// `endpoint:NAME:METRIC`, a per-endpoint row's metric in compare-v1.
pub fn endpoint_metric(endpoint: &str, metric: &str) -> String {
    format!("endpoint:{endpoint}:{metric}")
}

/// (endpoint, METRIC) of a per-endpoint row's metric; None for the
/// headline metrics.
pub fn split_endpoint_metric(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix("endpoint:")?.rsplit_once(':')
}

/// A metric in words: "p99 latency", "p99 latency of show"; "?" for a
/// name neither list knows.
pub fn metric_words(metric: &str) -> String {
    let (list, short, of) = match split_endpoint_metric(metric) {
        Some((e, m)) => (ENDPOINT_METRICS, m, Some(e)),
        None => (METRICS, metric, None),
    };
    let words = list.iter().find(|m| m.0 == short).map_or("?", |m| m.1);
    match of {
        Some(e) => format!("{words} of {e}"),
        None => words.to_string(),
    }
}

/// Whether a higher figure of this metric is better.
pub fn higher_is_better(metric: &str) -> bool {
    let (list, short) = match split_endpoint_metric(metric) {
        Some((_, m)) => (ENDPOINT_METRICS, m),
        None => (METRICS, metric),
    };
    list.iter().any(|m| m.0 == short && m.2)
}

/// The change a non-significant row says it would take to resolve, and
/// with what power (`repeats_for_5pct`).
pub const RESOLVE_PCT: f64 = 5.0;
pub const POWER: f64 = 0.8;

/// `name` is a metric of `METRICS`, or a one-line error listing them
/// (`what` says where the name came from: `--metric`, `primary_metric`).
pub fn check_metric(what: &str, name: &str) -> Result<(), String> {
    if METRICS.iter().any(|m| m.0 == name) {
        return Ok(());
    }
    Err(format!(
        "{what} \"{name}\" is not a metric: use one of {}",
        METRICS.iter().map(|m| m.0).collect::<Vec<_>>().join(", ")
    ))
}

/// One side of a comparison: a results directory, maybe narrowed to one
/// server or variant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Side {
    pub dir: PathBuf,
    /// `key=value[,key=value…]` narrowing the trials (server, variant,
    /// label; runtime, yjit, allocator).
    pub selector: Option<String>,
}

impl Side {
    /// How the side is shown: `DIR` or `DIR:key=value`.
    pub fn label(&self) -> String {
        match &self.selector {
            Some(s) => format!("{}:{s}", self.dir.display()),
            None => self.dir.display().to_string(),
        }
    }
}

/// A group's per-repeat figures, by metric name (`METRICS`).
pub type Figures = BTreeMap<&'static str, Vec<f64>>;

/// One group of one side: its variant, its figures per repeat, the
/// latency histograms of its runs, and with a mix its figures per
/// endpoint per repeat.
#[derive(Debug, Clone, Default)]
pub struct GroupSamples {
    pub variant: String,
    pub figures: Figures,
    pub histograms: Vec<Histogram<u64>>,
    /// (`endpoint:NAME:METRIC`, per-repeat figures), in the order met:
    /// the mix's endpoints, each [`ENDPOINT_METRICS`] in turn.
    pub endpoints: Vec<(String, Vec<f64>)>,
}

impl GroupSamples {
    /// Adds one repeat's figure of a per-endpoint metric.
    pub fn add_endpoint(&mut self, metric: String, v: f64) {
        match self.endpoints.iter_mut().find(|(m, _)| *m == metric) {
            Some((_, xs)) => xs.push(v),
            None => self.endpoints.push((metric, vec![v])),
        }
    }
}

/// One side's samples, by pair key (`store::read::pair_key`).
#[derive(Debug, Clone, Default)]
pub struct SideSamples {
    pub groups: BTreeMap<String, GroupSamples>,
    /// Each group's runs the machine disturbed (`stats::disturbance`).
    pub disturbed: BTreeMap<String, DisturbedRuns>,
    /// The runtimes the side's trials ran on, as labels ("debian-13 ruby
    /// 3.3.8 +yjit"); empty when no record says.
    pub runtimes: Vec<String>,
}

/// One metric of one group pair.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub group: String,
    pub metric: String,
    /// Median of A's repeats.
    pub a: f64,
    /// Median of B's repeats.
    pub b: f64,
    /// (median B / median A − 1) × 100; null when A's median is zero.
    pub change_pct: Option<f64>,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    pub significant: bool,
    pub n_a: usize,
    pub n_b: usize,
    pub verdict: String,
    /// Two-sided Mann–Whitney p, before adjustment.
    pub p_value: f64,
    /// Holm-adjusted p over all rows of this comparison.
    pub p_adjusted: f64,
    /// False when the repeats are too few for this row to ever come out
    /// significant among the comparison's rows (see `repeats_needed`).
    #[serde(default)]
    pub judged: bool,
    /// Latency rows: the percentile of all runs' requests merged per side
    /// (µs), its change, and a within-run 95% interval (requests as
    /// independent draws; it leaves out run-to-run noise, so it never makes
    /// a row significant). Null without stored histograms.
    #[serde(default)]
    pub merged_a_us: Option<f64>,
    #[serde(default)]
    pub merged_b_us: Option<f64>,
    #[serde(default)]
    pub merged_change_pct: Option<f64>,
    #[serde(default)]
    pub merged_ci_low_pct: Option<f64>,
    #[serde(default)]
    pub merged_ci_high_pct: Option<f64>,
    /// Whether the change is an improvement ("better"), a regression
    /// ("worse") or neither ("same"); "same" whenever not significant.
    pub direction: String,
    /// The comparison's primary metric (named before the run): judged in
    /// its own Holm family; the other rows are secondary.
    #[serde(default)]
    pub primary: bool,
    /// Each side's coefficient of variation over its repeats (sample
    /// standard deviation ÷ mean, in percent); null with fewer than two
    /// repeats or a zero mean.
    #[serde(default)]
    pub cv_a_pct: Option<f64>,
    #[serde(default)]
    pub cv_b_pct: Option<f64>,
    /// Rows without a significant difference: the repeats per side a test
    /// would need to resolve a 5% change with 80% power at this row's
    /// level, from the spread seen (`repeats_to_resolve`); null for
    /// significant rows and without a spread.
    #[serde(default)]
    pub repeats_for_5pct: Option<usize>,
}

/// Sample standard deviation ÷ mean, in percent.
fn cv_pct(x: &[f64]) -> Option<f64> {
    if x.len() < 2 {
        return None;
    }
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean != 0.0).then(|| var.sqrt() / mean.abs() * 100.0)
}

/// Repeats per side for a two-sided test at level `alpha` to detect a
/// change of `change_pct` with power `power`, the normal approximation
/// for two independent means with the sides' coefficients of variation:
/// n = ⌈(z(1 − α/2) + z(power))² · (cv_a² + cv_b²) ÷ change²⌉.
pub fn repeats_to_resolve(
    cv_a_pct: f64,
    cv_b_pct: f64,
    alpha: f64,
    power: f64,
    change_pct: f64,
) -> usize {
    let z = Normal::new(0.0, 1.0).expect("standard normal");
    let k = z.inverse_cdf(1.0 - alpha / 2.0) + z.inverse_cdf(power);
    let n = k * k * (cv_a_pct.powi(2) + cv_b_pct.powi(2)) / change_pct.powi(2);
    (n.ceil() as usize).max(1)
}

impl Row {
    /// One metric's row before judgement: both medians, the change, its
    /// bootstrap interval (seeded by `seed`) and the rank test's p. Used
    /// by `compare` (A against B) and the sweep (each value against the
    /// control); `judge` decides significance over all rows together.
    pub fn unjudged(group: &str, metric: &str, a: &[f64], b: &[f64], seed: u64) -> Row {
        let (ma, mb) = (median(a), median(b));
        let change = (ma != 0.0).then(|| change_pct(a, b));
        let ci = change.and(change_ci_pct(a, b, 1.0 - ALPHA, RESAMPLES, seed));
        Row {
            group: group.to_string(),
            metric: metric.to_string(),
            a: ma,
            b: mb,
            change_pct: change,
            ci_low_pct: ci.map(|c| c.0),
            ci_high_pct: ci.map(|c| c.1),
            significant: false,
            n_a: a.len(),
            n_b: b.len(),
            verdict: String::new(),
            p_value: mann_whitney_p(a, b),
            p_adjusted: 1.0,
            direction: "same".into(),
            judged: false,
            merged_a_us: None,
            merged_b_us: None,
            merged_change_pct: None,
            merged_ci_low_pct: None,
            merged_ci_high_pct: None,
            primary: false,
            cv_a_pct: cv_pct(a),
            cv_b_pct: cv_pct(b),
            repeats_for_5pct: None,
        }
    }
}

/// A whole comparison, the body of compare-v1.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    pub schema: String,
    pub a: Side,
    pub b: Side,
    pub alpha: f64,
    pub method: String,
    pub seed: u64,
    /// The metric named before the run (`--metric`, a plan's
    /// `primary_metric`), judged alone; null when none was named.
    #[serde(default)]
    pub primary_metric: Option<String>,
    pub rows: Vec<Row>,
    /// Groups found on one side only.
    pub unpaired: Vec<String>,
    /// One line per group pair, then the overall line, then one line per
    /// group whose runs the machine disturbed.
    pub verdicts: Vec<String>,
    pub verdict: String,
    /// Per paired group, the runs the machine disturbed on each side
    /// (absent in comparisons made before it existed).
    #[serde(default)]
    pub disturbance: Vec<GroupDisturbance>,
    /// The runtimes A's and B's trials ran on (name, Ruby version,
    /// switches); absent when no record says (made before runtimes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_a: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_b: Vec<String>,
}

impl Comparison {
    /// How side A (`b` false) or B is named: its label, then the
    /// runtimes its trials ran on when known ("results/x:runtime=system
    /// (system ruby 3.1.2)").
    pub fn side_shown(&self, b: bool) -> String {
        let (side, rt) = if b {
            (&self.b, &self.runtime_b)
        } else {
            (&self.a, &self.runtime_a)
        };
        if rt.is_empty() {
            side.label()
        } else {
            format!("{} ({})", side.label(), rt.join(" / "))
        }
    }
}

/// Compare two sides' samples (`store::samples::compare` reads them).
/// `seed` seeds the bootstrap (each row its own stream); `primary` names
/// the metric judged alone (checked with `check_metric`).
pub fn compare(
    (a, la): (&Side, &SideSamples),
    (b, lb): (&Side, &SideSamples),
    seed: u64,
    primary: Option<&str>,
) -> Result<Comparison, String> {
    if let Some(m) = primary {
        check_metric("the primary metric", m)?;
    }
    let mut rows = Vec::new();
    let mut unpaired = Vec::new();
    for g in la.groups.keys().chain(lb.groups.keys()) {
        let paired = la.groups.contains_key(g) && lb.groups.contains_key(g);
        if !paired && !unpaired.contains(g) {
            unpaired.push(g.clone());
        }
    }
    for (group, ga) in &la.groups {
        let Some(gb) = lb.groups.get(group) else {
            continue;
        };
        let (fa, ha, fb, hb) = (&ga.figures, &ga.histograms, &gb.figures, &gb.histograms);
        // Every run of the side must have its histogram, or the merge
        // would weigh some runs and not others.
        let merged = |hs: &Vec<Histogram<u64>>, f: &Figures| {
            (hs.len() == f.get("p50").map_or(0, Vec::len))
                .then(|| histogram::merge(hs))
                .flatten()
        };
        let (mha, mhb) = (merged(ha, fa), merged(hb, fb));
        for &(metric, _, _) in METRICS {
            let (Some(xa), Some(xb)) = (fa.get(metric), fb.get(metric)) else {
                continue;
            };
            let stream = seed.wrapping_add((rows.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let q = match metric {
                "p50" => Some(0.5),
                "p90" => Some(0.9),
                "p99" => Some(0.99),
                _ => None,
            };
            let (mut merged_a, mut merged_b, mut merged_change) = (None, None, None);
            if let (Some(q), Some(ha), Some(hb)) = (q, &mha, &mhb) {
                merged_a = Some(ha.value_at_quantile(q) as f64);
                merged_b = Some(hb.value_at_quantile(q) as f64);
                merged_change = histogram::quantile_change(ha, hb, q, 2000, stream);
            }
            let mut row = Row::unjudged(group, metric, xa, xb, stream);
            row.merged_a_us = merged_a;
            row.merged_b_us = merged_b;
            row.merged_change_pct = merged_change.map(|c| c.0);
            row.merged_ci_low_pct = merged_change.map(|c| c.1);
            row.merged_ci_high_pct = merged_change.map(|c| c.2);
            row.primary = primary == Some(metric);
            rows.push(row);
        }
        // Per endpoint of a mix, when both sides ran it: secondary rows,
        // in the headline rows' family.
        for (metric, xa) in &ga.endpoints {
            let Some((_, xb)) = gb.endpoints.iter().find(|(m, _)| m == metric) else {
                continue;
            };
            let stream = seed.wrapping_add((rows.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            rows.push(Row::unjudged(group, metric, xa, xb, stream));
        }
    }
    if rows.is_empty() {
        return Err(format!(
            "{} and {} share no group (app, topology and load shape): compare runs of the same plan",
            a.label(),
            b.label()
        ));
    }
    judge(&mut rows);
    let per_endpoint = rows
        .iter()
        .any(|r| split_endpoint_metric(&r.metric).is_some());
    let disturbance = disturbed_groups(la, lb);
    let mut verdicts = pair_verdicts(&rows);
    verdicts.extend(super::disturbance::compare_lines(&disturbance));
    let verdict = overall(&rows);
    Ok(Comparison {
        schema: "rackbench/compare-v1".into(),
        a: a.clone(),
        b: b.clone(),
        alpha: ALPHA,
        method: match primary {
            None => "medians of per-repeat figures; 95% percentile-bootstrap interval of the change; \
                     two-sided Mann-Whitney U, Holm-adjusted over all rows"
                .to_string(),
            Some(m) => format!(
                "medians of per-repeat figures; 95% percentile-bootstrap interval of the change; \
                 two-sided Mann-Whitney U, Holm-adjusted over the {m} rows (primary, one per group) \
                 and separately over all other rows (secondary)"
            ),
        } + if per_endpoint {
            "; the per-endpoint rows (endpoint:NAME:METRIC) are in the family of the other metrics' rows"
        } else {
            ""
        },
        seed,
        primary_metric: primary.map(str::to_string),
        rows,
        unpaired,
        verdicts,
        verdict,
        disturbance,
        runtime_a: la.runtimes.clone(),
        runtime_b: lb.runtimes.clone(),
    })
}

/// Each paired group's disturbed runs on both sides.
fn disturbed_groups(a: &SideSamples, b: &SideSamples) -> Vec<GroupDisturbance> {
    a.groups
        .keys()
        .filter(|g| b.groups.contains_key(*g))
        .map(|g| GroupDisturbance {
            group: g.clone(),
            a: a.disturbed.get(g).copied().unwrap_or_default(),
            b: b.disturbed.get(g).copied().unwrap_or_default(),
        })
        .collect()
}

/// Holm-adjust, decide significance and write each row's verdict.
/// Significant means: adjusted p under ALPHA *and* an interval that leaves
/// out zero, so the two methods must agree before a change is claimed.
/// The primary rows are one Holm family, the others another (all rows
/// one family when there is no primary metric).
pub fn judge(rows: &mut [Row]) {
    for primary in [true, false] {
        let family: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i].primary == primary)
            .collect();
        let adjusted = holm(&family.iter().map(|&i| rows[i].p_value).collect::<Vec<_>>());
        for (&i, p) in family.iter().zip(adjusted) {
            judge_row(&mut rows[i], p, family.len());
        }
    }
}

/// Rows in `row`'s Holm family among `rows`.
fn family_size(rows: &[Row], row: &Row) -> usize {
    rows.iter().filter(|r| r.primary == row.primary).count()
}

/// One row's judgement, given its adjusted p and the size of its family.
fn judge_row(row: &mut Row, p_adjusted: f64, m: usize) {
    row.p_adjusted = p_adjusted;
    let excludes_zero = match (row.ci_low_pct, row.ci_high_pct) {
        (Some(lo), Some(hi)) => lo > 0.0 || hi < 0.0,
        // Without an interval (a zero baseline), the rank test decides.
        _ => row.n_a >= 2 && row.n_b >= 2,
    };
    row.significant = p_adjusted < ALPHA && excludes_zero && !within_noise(row);
    let higher_better = higher_is_better(&row.metric);
    if row.significant {
        let up = row.b > row.a;
        row.direction = if up == higher_better {
            "better"
        } else {
            "worse"
        }
        .into();
    }
    row.judged = row.significant || resolvable(row, m);
    // Holm's strictest step is α/m: the level the smallest p must reach.
    row.repeats_for_5pct = match (row.significant, row.cv_a_pct, row.cv_b_pct) {
        (false, Some(ca), Some(cb)) => Some(
            repeats_to_resolve(ca, cb, ALPHA / m as f64, POWER, RESOLVE_PCT).max(repeats_needed(m)),
        ),
        _ => None,
    };
    row.verdict = row_verdict(row, m);
}

/// The row's whole interval lies inside ±NOISE_PCT.
fn within_noise(row: &Row) -> bool {
    matches!((row.ci_low_pct, row.ci_high_pct),
        (Some(lo), Some(hi)) if lo >= -NOISE_PCT && hi <= NOISE_PCT)
}

fn words(metric: &str) -> String {
    metric_words(metric)
}

fn interval(row: &Row) -> String {
    match (row.ci_low_pct, row.ci_high_pct) {
        (Some(lo), Some(hi)) => format!("95% CI {} to {}", pct(lo), pct(hi)),
        _ => "no interval".to_string(),
    }
}

/// A percentage with a sign and sensible precision.
pub fn pct(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:+.0}%")
    } else {
        format!("{x:+.1}%")
    }
}

/// Whether a row *could* come out significant among `m` Holm-adjusted
/// rows: even the most extreme ranks give p ≥ 2/C(n_a+n_b, n_a), and Holm
/// multiplies the smallest p by m.
fn resolvable(row: &Row, m: usize) -> bool {
    row.n_a >= 2 && row.n_b >= 2 && smallest_p(row.n_a, row.n_b) * (m as f64) < ALPHA
}

/// The fewest repeats per side that can show a difference among `m` rows.
pub fn repeats_needed(m: usize) -> usize {
    (2..200)
        .find(|&k| smallest_p(k, k) * (m as f64) < ALPHA)
        .unwrap_or(200)
}

/// "; with this spread (±6.0%), ~23 repeats a side would resolve a 5%
/// change", or that these repeats already would have; empty without
/// `repeats_for_5pct`.
fn resolve_note(row: &Row) -> String {
    let (Some(n), Some(ca), Some(cb)) = (row.repeats_for_5pct, row.cv_a_pct, row.cv_b_pct) else {
        return String::new();
    };
    let spread = ((ca * ca + cb * cb) / 2.0).sqrt();
    if n <= row.n_a.min(row.n_b) {
        format!(
            "; with this spread (±{spread:.1}%), these repeats would have resolved a {RESOLVE_PCT:.0}% change (~{n} a side suffice)"
        )
    } else {
        format!(
            "; with this spread (±{spread:.1}%), ~{n} repeats a side would resolve a {RESOLVE_PCT:.0}% change"
        )
    }
}

fn row_verdict(row: &Row, m: usize) -> String {
    let note = resolve_note(row);
    row_words(row, m) + &note
}

fn row_words(row: &Row, m: usize) -> String {
    let what = words(&row.metric);
    if !row.significant && !resolvable(row, m) {
        if let (Some(c), Some(lo), Some(hi)) = (
            row.merged_change_pct,
            row.merged_ci_low_pct,
            row.merged_ci_high_pct,
        ) {
            return format!(
                "{what}: {} in the merged histograms of {}+{} runs (within-run 95% CI {} to {}, which leaves out run-to-run noise); too few repeats to call it significant ({} comparisons need {} a side)",
                pct(c),
                row.n_a,
                row.n_b,
                pct(lo),
                pct(hi),
                m,
                repeats_needed(m)
            );
        }
        return format!(
            "{what}: too few repeats to show a difference (n={}+{}; {} comparisons need {} repeats a side)",
            row.n_a,
            row.n_b,
            m,
            repeats_needed(m)
        );
    }
    let change = row
        .change_pct
        .map(pct)
        .unwrap_or_else(|| "from zero".into());
    if !row.significant && within_noise(row) {
        return format!(
            "{what} unchanged (within the ±{NOISE_PCT}% noise threshold: {change}, {})",
            interval(row)
        );
    }
    if !row.significant {
        return format!(
            "{what} unchanged (no significant difference: {change}, {})",
            interval(row)
        );
    }
    let size = row
        .change_pct
        .map(|c| format!("{:.0}%", c.abs()))
        .unwrap_or_default();
    let moved = if row.b > row.a { "higher" } else { "lower" };
    if row.metric == "throughput" {
        let word = if row.b > row.a { "faster" } else { "slower" };
        format!("B is {size} {word} in throughput ({})", interval(row))
    } else {
        format!(
            "B's {what} is {size} {moved} ({}; {})",
            interval(row),
            row.direction
        )
    }
}

/// One line per group pair: the primary metric's verdict first (when one
/// was named), then significant changes, then what did not move.
fn pair_verdicts(rows: &[Row]) -> Vec<String> {
    let mut groups: Vec<&str> = Vec::new();
    for r in rows {
        if !groups.contains(&r.group.as_str()) {
            groups.push(&r.group);
        }
    }
    groups
        .into_iter()
        .map(|g| {
            let rs: Vec<&Row> = rows.iter().filter(|r| r.group == g).collect();
            let mut parts: Vec<String> = rs
                .iter()
                .filter(|r| r.primary)
                .map(|r| format!("primary {}: {}", r.metric, r.verdict))
                .collect();
            let secondary: Vec<&Row> = rs.iter().copied().filter(|r| !r.primary).collect();
            let mut rest = secondary_parts(rows, &secondary);
            if !parts.is_empty() && !rest.is_empty() {
                rest[0] = format!("secondary: {}", rest[0]);
            }
            parts.append(&mut rest);
            format!("{g}: {}", parts.join("; "))
        })
        .collect()
}

/// The non-primary rows of one group in words: significant changes, then
/// the unchanged, then those the repeats cannot judge.
fn secondary_parts(rows: &[Row], rs: &[&Row]) -> Vec<String> {
    let mut parts: Vec<String> = rs
        .iter()
        .filter(|r| r.significant)
        .map(|r| r.verdict.clone())
        .collect();
    let same: Vec<String> = rs
        .iter()
        .filter(|r| !r.significant && r.judged)
        .map(|r| words(&r.metric))
        .collect();
    if !same.is_empty() {
        parts.push(format!(
            "{} unchanged (no significant difference)",
            same.join(", ")
        ));
    }
    let unknown: Vec<String> = rs
        .iter()
        .filter(|r| !r.judged)
        .map(|r| words(&r.metric))
        .collect();
    if !unknown.is_empty() {
        let (na, nb, m) = (rs[0].n_a, rs[0].n_b, family_size(rows, rs[0]));
        parts.push(format!(
            "{} cannot be judged from n={na}+{nb} repeats ({m} comparisons need {} a side)",
            unknown.join(", "),
            repeats_needed(m)
        ));
    }
    parts
}

/// The overall line: with a primary metric, its result first, then the
/// secondary rows' summary.
fn overall(rows: &[Row]) -> String {
    let (primary, secondary): (Vec<Row>, Vec<Row>) = rows.iter().cloned().partition(|r| r.primary);
    if primary.is_empty() {
        return family_summary(rows);
    }
    let head = match primary.as_slice() {
        [one] => one.verdict.clone(),
        many => family_summary(many),
    };
    if secondary.is_empty() {
        return format!("primary {}: {head}", primary[0].metric);
    }
    format!(
        "primary {}: {head}; secondary metrics: {}",
        primary[0].metric,
        family_summary(&secondary)
    )
}

/// One Holm family's rows in one line.
fn family_summary(rows: &[Row]) -> String {
    let groups = {
        let mut g: Vec<&str> = rows.iter().map(|r| r.group.as_str()).collect();
        g.sort();
        g.dedup();
        g.len()
    };
    // "throughput (2 of 3 groups)", or just "throughput" with one group.
    // The headline metrics in table order, then those per endpoint as met.
    let mut metrics: Vec<&str> = METRICS.iter().map(|m| m.0).collect();
    for r in rows {
        if !metrics.contains(&r.metric.as_str()) {
            metrics.push(&r.metric);
        }
    }
    let list = |direction: &str| -> Vec<String> {
        metrics
            .iter()
            .filter_map(|&metric| {
                let n = rows
                    .iter()
                    .filter(|r| r.metric == metric && r.direction == direction)
                    .count();
                (n > 0).then(|| {
                    let words = words(metric);
                    if groups > 1 {
                        format!("{words} ({n} of {groups} groups)")
                    } else {
                        words
                    }
                })
            })
            .collect()
    };
    let (better, worse) = (list("better"), list("worse"));
    let unjudged = rows.iter().filter(|r| !r.judged).count();
    let rest = rows.len() - rows.iter().filter(|r| r.significant).count();
    let tail = if unjudged > 0 {
        format!(
            "; {unjudged} of {} comparisons cannot be judged with these repeats ({} a side needed)",
            rows.len(),
            repeats_needed(rows.len())
        )
    } else {
        String::new()
    };
    if better.is_empty() && worse.is_empty() {
        return format!(
            "no significant difference in any of {} comparisons (Holm-adjusted, 5% level){tail}",
            rows.len()
        );
    }
    let mut parts = Vec::new();
    if !worse.is_empty() {
        parts.push(format!("B is worse in {}", worse.join(", ")));
    }
    if !better.is_empty() {
        let who = if worse.is_empty() {
            "B is better in"
        } else {
            "better in"
        };
        parts.push(format!("{who} {}", better.join(", ")));
    }
    format!(
        "{}; no significant difference in the other {rest} of {} comparisons{tail}",
        parts.join(", "),
        rows.len()
    )
}

/// A `--fail-if` rule: `METRIC>+5%` or `METRIC<-3%`.
#[derive(Debug, Clone, PartialEq)]
pub struct FailIf {
    pub metric: String,
    /// true for `>`, false for `<`.
    pub above: bool,
    pub threshold_pct: f64,
}

impl FailIf {
    pub fn parse(s: &str) -> Result<FailIf, String> {
        let bad = || {
            format!(
                "--fail-if `{s}`: write METRIC>+N% or METRIC<-N% (e.g. 'p99>+5%', 'throughput<-3%'); metrics: {}, and with a mix endpoint:NAME:throughput|p50|p99",
                METRICS.iter().map(|m| m.0).collect::<Vec<_>>().join(", ")
            )
        };
        let (metric, rest, above) = if let Some((m, r)) = s.split_once('>') {
            (m, r, true)
        } else if let Some((m, r)) = s.split_once('<') {
            (m, r, false)
        } else {
            return Err(bad());
        };
        let metric = metric.trim();
        let per_endpoint = split_endpoint_metric(metric)
            .is_some_and(|(e, m)| !e.is_empty() && ENDPOINT_METRICS.iter().any(|x| x.0 == m));
        if !METRICS.iter().any(|m| m.0 == metric) && !per_endpoint {
            return Err(bad());
        }
        let number = rest.trim().strip_suffix('%').ok_or_else(bad)?;
        let threshold_pct: f64 = number.trim().parse().map_err(|_| bad())?;
        Ok(FailIf {
            metric: metric.to_string(),
            above,
            threshold_pct,
        })
    }

    /// Rows whose *significant* change crosses this line.
    pub fn breaches<'a>(&self, rows: &'a [Row]) -> Vec<&'a Row> {
        rows.iter()
            .filter(|r| r.metric == self.metric && r.significant)
            .filter(|r| match r.change_pct {
                Some(c) if self.above => c > self.threshold_pct,
                Some(c) => c < self.threshold_pct,
                // A significant rise from zero crosses any "more than" line.
                None => self.above && r.b > r.a,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(metric: &str, xa: &[f64], xb: &[f64]) -> Row {
        let ci = change_ci_pct(xa, xb, 0.95, 2000, 1);
        Row {
            group: "hello direct connections=2".into(),
            metric: metric.into(),
            a: median(xa),
            b: median(xb),
            change_pct: Some(change_pct(xa, xb)),
            ci_low_pct: ci.map(|c| c.0),
            ci_high_pct: ci.map(|c| c.1),
            significant: false,
            n_a: xa.len(),
            n_b: xb.len(),
            verdict: String::new(),
            p_value: mann_whitney_p(xa, xb),
            p_adjusted: 1.0,
            direction: "same".into(),
            judged: false,
            merged_a_us: None,
            merged_b_us: None,
            merged_change_pct: None,
            merged_ci_low_pct: None,
            merged_ci_high_pct: None,
            primary: false,
            cv_a_pct: cv_pct(xa),
            cv_b_pct: cv_pct(xb),
            repeats_for_5pct: None,
        }
    }

    #[test]
    fn verdicts_read_like_seed_002() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2];
        let b: Vec<f64> = a.iter().map(|x| x * 1.12).collect();
        let p99a = [900.0, 950.0, 920.0, 980.0, 910.0, 940.0];
        let p99b = [930.0, 905.0, 960.0, 915.0, 945.0, 925.0];
        let mut rows = vec![row("throughput", &a, &b), row("p99", &p99a, &p99b)];
        judge(&mut rows);
        assert!(
            rows[0].significant && rows[0].direction == "better",
            "{rows:?}"
        );
        assert!(
            rows[0]
                .verdict
                .starts_with("B is 12% faster in throughput (95% CI"),
            "{}",
            rows[0].verdict
        );
        assert!(!rows[1].significant && rows[1].judged);
        assert!(
            rows[1]
                .verdict
                .starts_with("p99 latency unchanged (no significant difference"),
            "{}",
            rows[1].verdict
        );
        let pair = pair_verdicts(&rows);
        assert!(pair[0].contains("p99 latency unchanged"), "{pair:?}");
        assert_eq!(
            overall(&rows),
            "B is better in throughput; no significant difference in the other 1 of 2 comparisons"
        );
    }

    #[test]
    fn a_consistent_change_inside_the_noise_threshold_is_not_significant() {
        // An A/A run on a busy machine: every B run 0.2% slower, so the
        // rank test and the interval agree, yet 0.2% means nothing.
        let a = [50207.0, 50190.0, 50215.0, 50201.0, 50210.0, 50199.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.002).collect();
        let mut rows = vec![row("p50", &a, &b)];
        judge(&mut rows);
        assert!(rows[0].p_adjusted < ALPHA, "{:?}", rows[0]);
        assert!(!rows[0].significant, "{:?}", rows[0]);
        assert!(
            rows[0].verdict.contains("noise threshold"),
            "{}",
            rows[0].verdict
        );
        // 3% is outside it.
        let b: Vec<f64> = a.iter().map(|x| x * 1.03).collect();
        let mut rows = vec![row("p50", &a, &b)];
        judge(&mut rows);
        assert!(rows[0].significant, "{:?}", rows[0]);
    }

    #[test]
    fn few_repeats_are_never_significant_and_say_so() {
        let mut rows = vec![row(
            "throughput",
            &[100.0, 101.0, 99.0],
            &[200.0, 201.0, 199.0],
        )];
        judge(&mut rows);
        assert!(!rows[0].significant && !rows[0].judged);
        assert!(
            rows[0].verdict.contains("too few repeats"),
            "{}",
            rows[0].verdict
        );
        let mut one = vec![row("p50", &[100.0], &[200.0])];
        judge(&mut one);
        assert!(!one[0].significant && one[0].verdict.contains("too few repeats"));
        // Five a side can show a difference in one metric (2/252 < 5%),
        // not among eight Holm-adjusted ones (8 · 2/252 > 5%): say so.
        assert_eq!(repeats_needed(1), 4);
        assert_eq!(repeats_needed(8), 6);
        let five_a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let five_b = [200.0, 201.0, 199.0, 200.5, 199.5];
        let mut eight: Vec<Row> = (0..8).map(|_| row("p50", &five_a, &five_b)).collect();
        judge(&mut eight);
        assert!(
            eight
                .iter()
                .all(|r| !r.significant && r.verdict.contains("need 6 repeats")),
            "{:?}",
            eight[0].verdict
        );
    }

    /// By hand: (z(0.975) + z(0.8))² = (1.95996 + 0.84162)² = 7.84888;
    /// with 6% each side, 7.84888 · (36 + 36) / 25 = 22.60 → 23; with 12%,
    /// 7.84888 · 288 / 25 = 90.42 → 91. At α/8 (Holm's first step over 8
    /// rows) z(1 − 0.003125) = 2.73437: (2.73437 + 0.84162)² · 72 / 25
    /// = 36.82 → 37.
    #[test]
    fn repeats_to_resolve_a_5_percent_change_match_the_hand_computed_values() {
        let rows = [
            (6.0, 6.0, ALPHA, 23),
            (12.0, 12.0, ALPHA, 91),
            (6.0, 6.0, ALPHA / 8.0, 37),
            (0.0, 0.0, ALPHA, 1),
        ];
        for (ca, cb, alpha, want) in rows {
            assert_eq!(
                repeats_to_resolve(ca, cb, alpha, POWER, RESOLVE_PCT),
                want,
                "cv {ca}%/{cb}% at {alpha}"
            );
        }
        // cv: sample standard deviation over the mean.
        let cv = cv_pct(&[90.0, 100.0, 110.0]).unwrap();
        assert!((cv - 10.0).abs() < 1e-9, "{cv}");
        assert!(cv_pct(&[5.0]).is_none() && cv_pct(&[0.0, 0.0]).is_none());
    }

    #[test]
    fn a_row_without_a_difference_says_how_many_repeats_would_resolve_5_percent() {
        // About ±4% noise a side, 6 repeats, no real change.
        let a = [94.0, 100.0, 106.0, 97.0, 103.0, 100.0];
        let b = [95.0, 101.0, 105.0, 98.0, 104.0, 99.0];
        let mut rows = vec![row("throughput", &a, &b)];
        judge(&mut rows);
        let r = &rows[0];
        assert!(!r.significant && r.judged, "{r:?}");
        let n = r.repeats_for_5pct.expect("a spread");
        let want = repeats_to_resolve(
            r.cv_a_pct.unwrap(),
            r.cv_b_pct.unwrap(),
            ALPHA,
            POWER,
            RESOLVE_PCT,
        );
        assert_eq!(n, want);
        assert!(n > 6, "{n}");
        assert!(
            r.verdict.contains("no significant difference: +0.0%")
                && r.verdict
                    .ends_with(&format!("~{n} repeats a side would resolve a 5% change")),
            "{}",
            r.verdict
        );
        // A significant row has none.
        let c: Vec<f64> = a.iter().map(|x| x * 1.3).collect();
        let mut sig = vec![row("throughput", &a, &c)];
        judge(&mut sig);
        assert!(sig[0].significant && sig[0].repeats_for_5pct.is_none());
    }

    /// Five a side cannot show a difference among eight Holm-adjusted
    /// rows (8 · 2/252 > 5%), but a primary metric is its own family.
    #[test]
    fn a_primary_metric_is_judged_alone_and_the_rest_stay_adjusted_together() {
        let five_a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let five_b = [120.0, 121.0, 119.0, 120.5, 119.5];
        let mut rows: Vec<Row> = METRICS[..8]
            .iter()
            .map(|m| row(m.0, &five_a, &five_b))
            .collect();
        rows[0].primary = true;
        judge(&mut rows);
        assert!(rows[0].significant, "{:?}", rows[0]);
        assert!((rows[0].p_adjusted - rows[0].p_value).abs() < 1e-12);
        for r in &rows[1..] {
            assert!(!r.significant && !r.judged, "{r:?}");
            assert!(
                r.verdict.contains("7 comparisons need 6 repeats"),
                "{}",
                r.verdict
            );
        }
        let line = overall(&rows);
        assert!(
            line.starts_with("primary throughput: B is 20% faster in throughput"),
            "{line}"
        );
        assert!(
            line.contains("secondary metrics: no significant difference in any of 7"),
            "{line}"
        );
        let pair = pair_verdicts(&rows);
        assert!(
            pair[0].contains(": primary throughput: B is 20% faster"),
            "{pair:?}"
        );
        assert!(pair[0].contains("; secondary: "), "{pair:?}");
        assert!(check_metric("--metric", "p99").is_ok());
        let err = check_metric("--metric", "speed").unwrap_err();
        assert!(
            err.starts_with(
                "--metric \"speed\" is not a metric: use one of throughput, p50, p90, p99"
            ),
            "{err}"
        );
    }

    /// (metric, words, higher is better)
    #[test]
    fn endpoint_metrics_read_as_their_metric_of_the_endpoint() {
        let rows = [
            ("p99", "p99 latency", false),
            ("throughput", "throughput", true),
            ("endpoint:show:p99", "p99 latency of show", false),
            ("endpoint:show-2:throughput", "throughput of show-2", true),
            ("endpoint:show:rss_peak", "? of show", false),
            ("nonsense", "?", false),
        ];
        for (metric, words, higher) in rows {
            assert_eq!(metric_words(metric), words, "{metric}");
            assert_eq!(higher_is_better(metric), higher, "{metric}");
        }
        assert_eq!(
            split_endpoint_metric(&endpoint_metric("a", "p50")),
            Some(("a", "p50"))
        );
    }

    #[test]
    fn fail_if_parses_and_only_fires_on_significant_crossings() {
        let f = FailIf::parse("p99>+5%").unwrap();
        assert_eq!(
            f,
            FailIf {
                metric: "p99".into(),
                above: true,
                threshold_pct: 5.0
            }
        );
        let g = FailIf::parse("throughput<-3%").unwrap();
        assert!(!g.above && g.threshold_pct == -3.0);
        for bad in [
            "p99>5",
            "p98>+5%",
            "p99=+5%",
            "throughput<-x%",
            "endpoint:show:p90>+5%",
            "endpoint::p99>+5%",
        ] {
            assert!(FailIf::parse(bad).is_err(), "{bad}");
        }
        let e = FailIf::parse("endpoint:show:p99>+10%").unwrap();
        assert_eq!(
            e.metric, "endpoint:show:p99",
            "a mix's endpoint gates alone"
        );
        let a = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2];
        let worse: Vec<f64> = a.iter().map(|x| x * 1.10).collect();
        let mut rows = vec![row("p99", &a, &worse)];
        judge(&mut rows);
        assert_eq!(f.breaches(&rows).len(), 1);
        assert_eq!(FailIf::parse("p99>+15%").unwrap().breaches(&rows).len(), 0);
        // The same 10% from two runs per side is noise as far as we know: no failure.
        let mut noisy = vec![row("p99", &a[..2], &worse[..2])];
        judge(&mut noisy);
        assert!(f.breaches(&noisy).is_empty());
    }

    /// `runs` repeats of one group whose latency histograms' median is
    /// `base` (µs), with the figures read from them.
    fn side(base: u64, runs: u32) -> SideSamples {
        let mut g = GroupSamples {
            variant: format!("v{base}"),
            ..Default::default()
        };
        for r in 1..=runs {
            let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
            for i in 0..4000u64 {
                h.record(base + (i * 7919 + r as u64 * 13) % (base / 5))
                    .unwrap();
            }
            let figures = [
                ("throughput", 400.0 * 10_000.0 / base as f64 + r as f64),
                ("p50", h.value_at_quantile(0.5) as f64),
                ("p90", h.value_at_quantile(0.9) as f64),
                ("p99", h.value_at_quantile(0.99) as f64),
                ("error_rate", 0.0),
            ];
            for (m, v) in figures {
                g.figures.entry(m).or_default().push(v);
            }
            g.histograms.push(h);
        }
        let key = "hello direct connections=4".to_string();
        SideSamples {
            groups: [(key.clone(), g)].into(),
            disturbed: [(key, DisturbedRuns::default())].into(),
            runtimes: Vec::new(),
        }
    }

    #[test]
    fn few_repeats_compare_latency_from_merged_histograms() {
        let named = |d: &str| Side {
            dir: PathBuf::from(d),
            selector: None,
        };
        let (a, b) = (named("fast"), named("slow"));
        let c = compare((&a, &side(10_000, 2)), (&b, &side(11_500, 2)), 1, None).unwrap();
        let p50 = c.rows.iter().find(|r| r.metric == "p50").unwrap();
        assert_eq!((p50.n_a, p50.n_b), (2, 2));
        let (m, lo, hi) = (
            p50.merged_change_pct.unwrap(),
            p50.merged_ci_low_pct.unwrap(),
            p50.merged_ci_high_pct.unwrap(),
        );
        assert!((m - 15.0).abs() < 1.0, "{p50:?}");
        assert!(lo <= 15.0 && 15.0 <= hi, "{p50:?}");
        // Two runs a side cannot show run-to-run noise: never significant.
        assert!(!p50.significant);
        assert!(
            p50.verdict.contains("in the merged histograms of 2+2 runs"),
            "{}",
            p50.verdict
        );
        // Throughput has no histogram: it says how many repeats it needs.
        let t = c.rows.iter().find(|r| r.metric == "throughput").unwrap();
        assert!(t.merged_change_pct.is_none() && t.verdict.contains("too few repeats"));
        // A run without its histogram leaves the merge out.
        let mut short = side(11_500, 2);
        short.groups.values_mut().for_each(|g| {
            g.histograms.pop();
        });
        let c = compare((&a, &side(10_000, 2)), (&b, &short), 1, None).unwrap();
        let p50 = c.rows.iter().find(|r| r.metric == "p50").unwrap();
        assert!(p50.merged_change_pct.is_none(), "{p50:?}");
    }
}
