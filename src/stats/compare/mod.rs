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
//!
//! Its parts: the metrics' names and words (`metrics`), a row before
//! judgement (`row`), the judgement and each row's verdict (`judge`), the
//! per-pair and overall lines (`summary`), and `--fail-if` (`fail_if`);
//! the sides and the pairing of their groups are here.

mod fail_if;
mod judge;
mod metrics;
mod row;
mod summary;

pub use fail_if::FailIf;
pub use judge::{judge, pct, repeats_needed, NOISE_PCT};
pub use metrics::{
    check_metric, endpoint_metric, higher_is_better, metric_words, split_endpoint_metric,
    ENDPOINT_METRICS, METRICS,
};
pub use row::{repeats_to_resolve, Row, ALPHA, POWER, RESOLVE_PCT};

use super::disturbance::{DisturbedRuns, GroupDisturbance};
use super::histogram;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use summary::{overall, pair_verdicts};

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

#[cfg(test)]
mod tests {
    use super::*;

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
