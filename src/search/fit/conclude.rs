//! The end of a fit search: the recommendation (the highest-throughput
//! candidate that held), its runner-up and whether they differ by
//! compare's statistics (`stats::compare::judge`), and the candidates by
//! (workers, threads) for the heatmap.
//!
//! It reads candidates already judged: it never measures one and never
//! chooses what to try.

use super::record::{Difference, FitOptions, FitResult, MemoryModel, Tried, Verdict};
use crate::stats::compare::{judge, Row};
use std::collections::BTreeMap;

/// The recommendation, its runner-up and whether they differ.
pub(super) fn conclude(
    tried: Vec<Tried>,
    memory_model: Option<MemoryModel>,
    stopped_because: String,
    opts: &FitOptions,
) -> FitResult {
    let mut ok: Vec<&Tried> = tried.iter().filter(|t| t.verdict == Verdict::Ok).collect();
    // Highest throughput first; on a tie, the smaller configuration.
    ok.sort_by(|a, b| {
        b.throughput_rps
            .total_cmp(&a.throughput_rps)
            .then((a.workers, a.threads).cmp(&(b.workers, b.threads)))
    });
    let recommendation = ok.first().map(|t| (*t).clone());
    let runner_up = ok.get(1).map(|t| (*t).clone());
    let difference = match (&recommendation, &runner_up) {
        (Some(a), Some(b)) => Some(difference(b, a, opts.seed)),
        _ => None,
    };
    let trials = tried.iter().map(|t| t.trials).sum();
    let stopped_because = if recommendation.is_none() && !stopped_because.is_empty() {
        format!("{stopped_because}; no configuration held")
    } else {
        stopped_because
    };
    FitResult {
        candidates: tried,
        recommendation,
        runner_up,
        difference,
        memory_model,
        trials,
        stopped_because,
    }
}

/// `best` against `runner_up` by compare's statistics: the rank test and
/// the bootstrap interval of the change in median throughput.
fn difference(runner_up: &Tried, best: &Tried, seed: u64) -> Difference {
    let mut rows = [Row::unjudged(
        "fit",
        "throughput",
        &runner_up.throughput_samples_rps,
        &best.throughput_samples_rps,
        seed,
    )];
    judge(&mut rows);
    let r = &rows[0];
    let words = if r.significant {
        match (r.change_pct, r.ci_low_pct, r.ci_high_pct) {
            (Some(c), Some(lo), Some(hi)) => format!(
                "{} faster (95% CI {} to {})",
                crate::stats::compare::pct(c),
                crate::stats::compare::pct(lo),
                crate::stats::compare::pct(hi)
            ),
            _ => "significantly faster".into(),
        }
    } else if !r.judged {
        format!(
            "no significant difference ({}+{} repeats cannot show one; --repeats {} could)",
            r.n_b,
            r.n_a,
            crate::stats::compare::repeats_needed(1)
        )
    } else {
        "no significant difference".into()
    };
    Difference {
        significant: r.significant,
        judged: r.judged,
        change_pct: r.change_pct,
        ci_low_pct: r.ci_low_pct,
        ci_high_pct: r.ci_high_pct,
        p_value: r.p_value,
        words,
    }
}

/// Candidates by (workers, threads), for the heatmap.
pub fn grid(result: &FitResult) -> BTreeMap<(u32, u32), &Tried> {
    result
        .candidates
        .iter()
        .map(|t| ((t.workers, t.threads), t))
        .collect()
}
