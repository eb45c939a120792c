//! What the fit search takes and gives, the body of fit-v1: a candidate
//! (workers × threads), what measuring it showed (`Outcome`, its
//! `Repeat`s), the candidate judged (`Tried`, its `Verdict`), the
//! search's knobs (`FitOptions`), the memory model, and the result with
//! the recommendation against its runner-up (`FitResult`, `Difference`).
//!
//! Plain data: it never measures, judges or searches anything.

use crate::stats::spread::Spread;
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "rackbench/fit-v1";

/// One configuration of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Candidate {
    pub workers: u32,
    pub threads: u32,
}

/// What one repeat of a candidate showed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Repeat {
    pub throughput_rps: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    /// Failed requests, connections left unanswered and a server that died.
    pub errors: u64,
    /// The server's memory at its peak (the budget's group, else its
    /// process tree).
    pub memory_peak_bytes: u64,
    /// Processes the kernel killed for memory.
    pub oom_kills: u64,
}

/// What measuring a candidate showed: its repeats, or why it could not
/// start (then no repeat).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub repeats: Vec<Repeat>,
    pub no_start: Option<String>,
}

/// How a candidate fared against the rules, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The server did not start (or its trial could not run).
    NoStart,
    /// A process was killed for memory, or the peak left less headroom
    /// than asked.
    Oom,
    /// Requests failed.
    Errors,
    /// p99 over the objective.
    Slo,
    Ok,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::NoStart => "no-start",
            Verdict::Oom => "oom",
            Verdict::Errors => "errors",
            Verdict::Slo => "slo",
            Verdict::Ok => "ok",
        }
    }
}

/// Latency percentiles, the median of each across repeats, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyUs {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
}

/// A candidate measured and judged: one of fit-v1's `candidates[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tried {
    pub workers: u32,
    pub threads: u32,
    /// Median throughput across repeats, req/s (0 when it did not start).
    pub throughput_rps: f64,
    /// Median, min and max across repeats; null when it did not start.
    pub throughput_spread: Option<Spread>,
    /// Each repeat's throughput, req/s, in the order run.
    pub throughput_samples_rps: Vec<f64>,
    pub latency_us: LatencyUs,
    /// Errors over all repeats.
    pub errors: u64,
    /// The highest peak of any repeat.
    pub memory_peak_bytes: u64,
    /// Kills for memory over all repeats.
    pub oom_kills: u64,
    pub verdict: Verdict,
    /// Why a verdict other than ok, in a few words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Trials this candidate took (its repeats, or 1 that did not start).
    pub trials: usize,
}

impl Tried {
    pub fn candidate(&self) -> Candidate {
        Candidate {
            workers: self.workers,
            threads: self.threads,
        }
    }

    /// What the search climbs: throughput when the candidate held; below
    /// every candidate that held, one over the objective, the closer its
    /// p99 to the objective the higher (so the search walks toward the
    /// objective whichever side breaks it: too few workers queue, too
    /// many threads contend); lowest, one that failed, was killed or did
    /// not start.
    pub(super) fn score(&self) -> f64 {
        match self.verdict {
            Verdict::Ok => self.throughput_rps,
            Verdict::Slo => -1.0 - self.latency_us.p99 as f64 / 1e6,
            _ => -1e18,
        }
    }
}

/// The search's knobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitOptions {
    /// The server's memory limit; None searches without a memory bound.
    pub memory_limit_bytes: Option<u64>,
    /// The share of the limit to keep free under the peak (0.1 = 10%).
    pub headroom: f64,
    /// p99 ceiling, µs.
    pub slo_p99_us: Option<u64>,
    pub max_workers: u32,
    pub max_threads: u32,
    /// Threads while the workers are searched (the server's default,
    /// within the maximum).
    pub start_threads: u32,
    /// The server runs several threads per process.
    pub threads: bool,
    /// The server runs several worker processes.
    pub processes: bool,
    /// Seeds the bootstrap of the recommendation against its runner-up.
    pub seed: u64,
}

impl FitOptions {
    /// The memory a candidate may peak at: the limit less the headroom.
    pub fn usable_bytes(&self) -> Option<u64> {
        self.memory_limit_bytes
            .map(|l| (l as f64 * (1.0 - self.headroom)).floor() as u64)
    }
}

/// Memory as a line over workers, from the trials at 1 and 2 workers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryModel {
    pub base_bytes: u64,
    pub per_worker_bytes: u64,
    /// The most workers whose predicted peak fits under the limit less
    /// the headroom (capped at --max-workers).
    pub workers_that_fit: u32,
}

/// The recommendation against its runner-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// The rank test and the bootstrap interval both say the throughputs
    /// differ (compare's rule, `stats::compare::judge`).
    pub significant: bool,
    /// Whether these repeats could ever show a difference.
    pub judged: bool,
    /// Runner-up → recommendation, % of the runner-up's median.
    pub change_pct: Option<f64>,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    pub p_value: f64,
    /// In words: "+12.0% (95% CI +8.1% to +15.9%)" or "no significant
    /// difference".
    pub words: String,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitResult {
    /// Every candidate, in the order tried.
    pub candidates: Vec<Tried>,
    /// The highest-throughput ok candidate.
    pub recommendation: Option<Tried>,
    /// The next highest ok candidate.
    pub runner_up: Option<Tried>,
    pub difference: Option<Difference>,
    pub memory_model: Option<MemoryModel>,
    /// Trials run (every repeat of every candidate).
    pub trials: usize,
    /// Why the search stopped, one sentence.
    pub stopped_because: String,
}
