//! The rackbench/ab-v1 document: the verdict (stats::sequential's
//! `Verdict` fields, which are ab-v1's), the load and time it took, and
//! every round's pair, the set-aside ones included. Field names are a
//! contract (docs/RECORD_FORMAT.md); add, never rename.

use super::{End, Outcome, Round, SetAside, Side, Window};
use crate::stats::sequential::{Call, Verdict};
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "rackbench/ab-v1";

/// One side as the document names it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SideInfo {
    /// "A" or "B".
    pub side: String,
    /// What distinguishes it ("workers=2", "label=control").
    pub label: String,
}

/// One window in a pair.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WindowDoc {
    pub figure: Option<f64>,
    pub load_s: f64,
    /// Why the machine disturbed it, when it did.
    pub disturbed: Option<String>,
    /// The window's record, relative to the results directory (or the
    /// caller's id for it).
    pub record: Option<String>,
}

/// A counted round.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PairDoc {
    pub round: usize,
    /// "A" or "B": which side ran first.
    pub first: String,
    pub a: WindowDoc,
    pub b: WindowDoc,
    /// ln(B / A).
    pub log_ratio: f64,
    /// The interval after this round (None while unbounded).
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    pub change_pct: f64,
    /// The counted attempt was itself disturbed (past --rerun-disturbed).
    pub disturbed: bool,
    /// Attempts of this round set aside, disturbed, before it.
    pub set_aside: Vec<SetAsideDoc>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SetAsideDoc {
    pub a: WindowDoc,
    pub b: WindowDoc,
    pub why: String,
}

/// The whole document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AbDocument {
    pub schema: String,
    pub verdict: Call,
    pub metric: String,
    pub change_pct: f64,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    pub rounds: usize,
    pub rounds_disturbed_rerun: usize,
    /// Seconds of counted load over both sides (set-aside windows too).
    pub load_s: f64,
    pub wall_s: f64,
    pub margin_pct: f64,
    pub noise_pct: f64,
    pub alpha: f64,
    pub method: String,
    /// The verdict in words.
    pub reason: String,
    /// "verdict", "interrupted" or "failed".
    pub end: String,
    /// Why it failed, when `end` is "failed".
    pub error: Option<String>,
    pub a: SideInfo,
    pub b: SideInfo,
    pub seed: u64,
    /// Where the windows ran: "fresh" (a server started per window) or
    /// "kept" (each side's server kept running, `--keep-running`).
    /// Documents written before it existed are "fresh".
    #[serde(default = "fresh")]
    pub servers: String,
    /// The lag-1 autocorrelation of the counted rounds' log-ratios; null
    /// under SERIAL_MIN_ROUNDS rounds (absent in documents made before
    /// it existed).
    #[serde(default)]
    pub serial_correlation: Option<f64>,
    /// What the reader must know beside the verdict, in words (rounds
    /// serially correlated, so the interval's 5% may not hold).
    #[serde(default)]
    pub warnings: Vec<String>,
    pub pairs: Vec<PairDoc>,
}

/// The fewest rounds whose serial correlation is worth a figure.
pub const SERIAL_MIN_ROUNDS: usize = 8;

/// The lag-1 autocorrelation of `x`, or None under SERIAL_MIN_ROUNDS
/// values or without spread.
pub fn serial_correlation(x: &[f64]) -> Option<f64> {
    if x.len() < SERIAL_MIN_ROUNDS {
        return None;
    }
    let m = x.iter().sum::<f64>() / x.len() as f64;
    let squares: f64 = x.iter().map(|v| (v - m).powi(2)).sum();
    let lag: f64 = x.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum();
    (squares > 0.0).then(|| lag / squares)
}

/// The warning for rounds that lean the same way for stretches: a lag-1
/// autocorrelation beyond 2/sqrt(n), what independent rounds exceed about
/// 2.5% of the time. The interval assumes independent rounds; on this
/// machine's rounds with such a stretch kept, an A/A was called different
/// 9.7% of the time, not 5% (tests/ab_error_rate.rs, docs/STATISTICS.md).
pub fn serial_warning(rho: Option<f64>, n: usize) -> Option<String> {
    let rho = rho?;
    let limit = 2.0 / (n as f64).sqrt();
    (rho > limit).then(|| {
        format!(
            "the rounds lean the same way for stretches (lag-1 autocorrelation {rho:.2} over \
             {n} rounds, beyond {limit:.2}): the interval assumes independent rounds, so a \
             faster or slower may be wrong more often than 5% (docs/STATISTICS.md, \
             \"Sequential A/B\"); run it again, with fresh servers if these were kept"
        )
    })
}

fn fresh() -> String {
    "fresh".into()
}

/// The document of an outcome. `record` names a window's record for the
/// document (its path in the results directory).
pub fn document<T>(
    outcome: &Outcome<T>,
    labels: (&str, &str),
    opts: &super::Options,
    record: impl Fn(&T) -> Option<String>,
) -> AbDocument {
    let v: &Verdict = &outcome.verdict;
    let win = |w: &Window<T>| WindowDoc {
        figure: w.figure,
        load_s: w.load_s,
        disturbed: w.disturbed.clone(),
        record: record(&w.record),
    };
    let aside = |s: &SetAside<T>| SetAsideDoc {
        a: win(&s.a),
        b: win(&s.b),
        why: s.why.clone(),
    };
    let pair = |r: &Round<T>| PairDoc {
        round: r.index,
        first: r.first.letter().to_string(),
        a: win(&r.a),
        b: win(&r.b),
        log_ratio: r.log_ratio(),
        ci_low_pct: r.verdict.ci_low_pct,
        ci_high_pct: r.verdict.ci_high_pct,
        change_pct: r.verdict.change_pct,
        disturbed: r.counted_disturbed(),
        set_aside: r.set_aside.iter().map(aside).collect(),
    };
    let (end, error) = match &outcome.end {
        End::Verdict => ("verdict", None),
        End::Interrupted => ("interrupted", None),
        End::Failed(why) => ("failed", Some(why.clone())),
    };
    let log_ratios: Vec<f64> = outcome.rounds.iter().map(|r| r.log_ratio()).collect();
    let serial = serial_correlation(&log_ratios);
    AbDocument {
        serial_correlation: serial,
        warnings: serial_warning(serial, log_ratios.len())
            .into_iter()
            .collect(),
        schema: SCHEMA.to_string(),
        verdict: v.verdict,
        metric: v.metric.clone(),
        change_pct: v.change_pct,
        ci_low_pct: v.ci_low_pct,
        ci_high_pct: v.ci_high_pct,
        rounds: v.rounds,
        rounds_disturbed_rerun: outcome.rounds_disturbed_rerun,
        load_s: outcome.load_s,
        wall_s: outcome.wall_s,
        margin_pct: v.margin_pct,
        noise_pct: opts.design.noise_pct,
        alpha: opts.design.alpha,
        method: v.method.clone(),
        reason: v.reason.clone(),
        end: end.to_string(),
        error,
        a: SideInfo {
            side: Side::A.letter().into(),
            label: labels.0.to_string(),
        },
        b: SideInfo {
            side: Side::B.letter().into(),
            label: labels.1.to_string(),
        },
        seed: opts.seed,
        servers: "fresh".into(),
        pairs: outcome.rounds.iter().map(pair).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_correlation_is_lag_1_and_warns_beyond_two_over_root_n() {
        assert_eq!(serial_correlation(&[0.1, -0.1, 0.2]), None, "too few");
        assert_eq!(serial_correlation(&[0.5; 10]), None, "no spread");
        // Alternating signs: strongly negative, never a warning.
        let alt: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 0.1 } else { -0.1 })
            .collect();
        let rho = serial_correlation(&alt).unwrap();
        assert!(rho < -0.9, "{rho}");
        assert_eq!(serial_warning(Some(rho), 20), None);
        // Two long stretches, one up, one down: strongly positive.
        let steps: Vec<f64> = (0..20).map(|i| if i < 10 { 0.1 } else { -0.1 }).collect();
        let rho = serial_correlation(&steps).unwrap();
        assert!(rho > 0.8, "{rho}");
        let w = serial_warning(Some(rho), 20).expect("a warning");
        assert!(w.contains("over 20 rounds, beyond 0.45"), "{w}");
        // The limit is 2/sqrt(n): 0.31 over 60 rounds (0.26) warns, over
        // 36 (0.33) does not.
        assert!(serial_warning(Some(0.31), 60).is_some());
        assert!(serial_warning(Some(0.31), 36).is_none());
    }
}
