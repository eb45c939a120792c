//! One metric of one group pair before judgement (`Row`): both medians,
//! the change, its bootstrap interval, the rank test's p and each side's
//! spread; the level of every test (`ALPHA`), and the repeats a side a
//! change of 5% would take to resolve (`repeats_to_resolve`).
//!
//! It computes a row from two lists of figures; it never decides
//! significance nor writes a verdict (`judge` does, over all rows
//! together) and never pairs groups (`compare` does).

use crate::stats::bootstrap::{change_ci_pct, change_pct, median, RESAMPLES};
use crate::stats::significance::mann_whitney_p;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

/// The level of every test and the complement of every interval.
pub const ALPHA: f64 = 0.05;

/// The change a non-significant row says it would take to resolve, and
/// with what power (`repeats_for_5pct`).
pub const RESOLVE_PCT: f64 = 5.0;
pub const POWER: f64 = 0.8;

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

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn row(metric: &str, xa: &[f64], xb: &[f64]) -> Row {
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
}
