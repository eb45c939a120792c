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
    pub pairs: Vec<PairDoc>,
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
    AbDocument {
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
