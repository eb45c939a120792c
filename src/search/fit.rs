//! The fit search: which workers × threads give the most throughput inside
//! a memory limit, under a latency objective, with no errors and no worker
//! killed for memory.
//!
//! Like the break-point search, it sees only a closure that measures one
//! candidate (`Candidate` in, `Outcome` out), so the lab drives it with
//! real trials (`cli::fit`) and its tests with model servers whose truth is
//! known. It never starts a server and never touches disk.
//!
//! It does not try every pair. The first two trials (1 and 2 workers) give
//! the memory of the base and of each further worker; that line bounds the
//! workers that can fit under the limit less the headroom, and a worker
//! killed for memory lowers the bound further. Throughput by workers is
//! concave (it rises until the CPUs are busy, then contention takes it
//! down), so the workers are bracketed by doubling until throughput stops
//! rising, then narrowed by ternary steps; the threads are searched the
//! same way at the best workers, and the two workers beside the best are
//! tried at the best threads. Every candidate is measured once (its
//! repeats together) and remembered.

use crate::stats::compare::{judge, Row};
use crate::stats::spread::Spread;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    fn score(&self) -> f64 {
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

/// Judges a measured candidate against the options.
pub fn judge_candidate(c: Candidate, o: &Outcome, opts: &FitOptions) -> Tried {
    let median_u = |f: fn(&Repeat) -> u64| {
        let v: Vec<f64> = o.repeats.iter().map(|r| f(r) as f64).collect();
        Spread::of(&v).map_or(0, |s| s.median.round() as u64)
    };
    let samples: Vec<f64> = o.repeats.iter().map(|r| r.throughput_rps).collect();
    let spread = Spread::of(&samples);
    let mut t = Tried {
        workers: c.workers,
        threads: c.threads,
        throughput_rps: spread.map_or(0.0, |s| s.median),
        throughput_spread: spread,
        throughput_samples_rps: samples,
        latency_us: LatencyUs {
            p50: median_u(|r| r.p50_us),
            p90: median_u(|r| r.p90_us),
            p99: median_u(|r| r.p99_us),
        },
        errors: o.repeats.iter().map(|r| r.errors).sum(),
        memory_peak_bytes: o
            .repeats
            .iter()
            .map(|r| r.memory_peak_bytes)
            .max()
            .unwrap_or(0),
        oom_kills: o.repeats.iter().map(|r| r.oom_kills).sum(),
        verdict: Verdict::Ok,
        why: None,
        trials: o.repeats.len().max(1),
    };
    let (verdict, why) = verdict(&t, o, opts);
    t.verdict = verdict;
    t.why = why;
    t
}

fn verdict(t: &Tried, o: &Outcome, opts: &FitOptions) -> (Verdict, Option<String>) {
    use crate::units::{fmt_bytes, fmt_us};
    if let Some(why) = &o.no_start {
        return (Verdict::NoStart, Some(why.clone()));
    }
    if o.repeats.is_empty() {
        return (Verdict::NoStart, Some("no trial ran".into()));
    }
    if t.oom_kills > 0 {
        return (
            Verdict::Oom,
            Some(format!(
                "{} killed for memory",
                plural(t.oom_kills, "process")
            )),
        );
    }
    if let Some(usable) = opts.usable_bytes().filter(|&u| t.memory_peak_bytes > u) {
        return (
            Verdict::Oom,
            Some(format!(
                "memory peak {} over {} (the limit less {:.0}% headroom)",
                fmt_bytes(t.memory_peak_bytes),
                fmt_bytes(usable),
                opts.headroom * 100.0
            )),
        );
    }
    if t.errors > 0 {
        return (Verdict::Errors, Some(plural(t.errors, "error")));
    }
    match opts.slo_p99_us {
        Some(slo) if t.latency_us.p99 > slo => (
            Verdict::Slo,
            Some(format!(
                "p99 {} over the {} objective",
                fmt_us(t.latency_us.p99 as f64),
                fmt_us(slo as f64)
            )),
        ),
        _ => (Verdict::Ok, None),
    }
}

fn plural(n: u64, what: &str) -> String {
    match (n, what) {
        (1, _) => format!("1 {what}"),
        (_, "process") => format!("{n} processes"),
        _ => format!("{n} {what}s"),
    }
}

/// Runs the search to its end (see `fit_until`).
pub fn fit(measure: impl FnMut(Candidate) -> Outcome, opts: FitOptions) -> FitResult {
    fit_until(measure, opts, || false)
}

/// The measured candidates, each measured once.
struct Lab<M, S> {
    measure: M,
    stop: S,
    opts: FitOptions,
    tried: Vec<Tried>,
    /// Workers at or above this were killed for memory or predicted over
    /// the limit: never tried.
    workers_cap: u32,
    interrupted: bool,
}

impl<M: FnMut(Candidate) -> Outcome, S: Fn() -> bool> Lab<M, S> {
    /// The candidate's score, measuring it if it is new; None once stopped.
    fn score(&mut self, c: Candidate) -> Option<f64> {
        if let Some(t) = self.tried.iter().find(|t| t.candidate() == c) {
            return Some(t.score());
        }
        if (self.stop)() {
            self.interrupted = true;
            return None;
        }
        let t = judge_candidate(c, &(self.measure)(c), &self.opts);
        if t.verdict == Verdict::Oom {
            self.workers_cap = self.workers_cap.min(c.workers.saturating_sub(1).max(1));
        }
        self.tried.push(t.clone());
        Some(t.score())
    }

    fn get(&self, c: Candidate) -> Option<&Tried> {
        self.tried.iter().find(|t| t.candidate() == c)
    }

    /// The best of `lo..=hi` for a concave `f`: grow by doubling from
    /// `from` while the score rises (and shrink by halving while it rises
    /// downward), then narrow the bracket by ternary steps; the bracket's
    /// last points are all tried. Returns the best value tried.
    /// On the workers axis (`workers`), a candidate over the memory
    /// limit also lowers the bracket's top to below it.
    fn peak(
        &mut self,
        (lo, hi): (u32, u32),
        from: u32,
        workers: bool,
        at: impl Fn(u32) -> Candidate,
    ) -> Option<u32> {
        let hi = hi.max(lo);
        let from = from.clamp(lo, hi);
        let (mut a, mut b) = (lo, hi);
        let f0 = self.score(at(from))?;
        // Upward: double while the score keeps rising.
        let (mut prev, mut fprev) = (from, f0);
        while prev < b {
            let next = (prev * 2).min(b).max(prev + 1);
            let fnext = self.score(at(next))?;
            if fnext <= fprev {
                b = next;
                break;
            }
            a = a.max(prev);
            (prev, fprev) = (next, fnext);
        }
        if workers {
            b = b.min(self.workers_cap).max(lo);
            a = a.min(b);
        }
        // Downward from `from` when going up did not help.
        if a == lo && from > lo && prev == from {
            let down = (from / 2).max(lo);
            let fdown = self.score(at(down))?;
            if fdown <= f0 {
                a = down;
            } else {
                b = from;
            }
        }
        while b - a > 2 {
            let m1 = a + (b - a) / 3;
            let m2 = b - (b - a) / 3;
            if self.score(at(m1))? < self.score(at(m2))? {
                a = m1 + 1;
            } else {
                b = m2;
            }
            if workers {
                b = b.min(self.workers_cap).max(lo);
                a = a.min(b);
            }
        }
        for v in a..=b {
            self.score(at(v))?;
        }
        (lo..=hi)
            .filter_map(|v| self.get(at(v)).map(|t| (v, t.score())))
            .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)))
            .map(|(v, _)| v)
    }
}

/// Runs the search; `measure` runs one candidate's trials, `stop` ends the
/// search early (Ctrl-C) with what was found so far.
pub fn fit_until(
    measure: impl FnMut(Candidate) -> Outcome,
    opts: FitOptions,
    stop: impl Fn() -> bool,
) -> FitResult {
    let max_w = if opts.processes {
        opts.max_workers.max(1)
    } else {
        1
    };
    let max_t = if opts.threads {
        opts.max_threads.max(1)
    } else {
        1
    };
    let t0 = opts.start_threads.clamp(1, max_t);
    let mut lab = Lab {
        measure,
        stop,
        opts: opts.clone(),
        tried: Vec::new(),
        workers_cap: max_w,
        interrupted: false,
    };
    let (model, sentence) = search(&mut lab, max_w, max_t, t0);
    let stopped_because = if lab.interrupted {
        "interrupted before the search ended (Ctrl-C); the recommendation is among what was tried"
            .to_string()
    } else {
        sentence
    };
    conclude(lab.tried, model, stopped_because, &opts)
}

/// The workers, then the threads, then the workers beside the best.
/// Returns the memory model and why it stopped.
fn search<M: FnMut(Candidate) -> Outcome, S: Fn() -> bool>(
    lab: &mut Lab<M, S>,
    max_w: u32,
    max_t: u32,
    t0: u32,
) -> (Option<MemoryModel>, String) {
    let at_t = |t| {
        move |w| Candidate {
            workers: w,
            threads: t,
        }
    };
    if lab.score(at_t(t0)(1)).is_none() {
        return (None, String::new());
    }
    if lab
        .get(at_t(t0)(1))
        .is_some_and(|t| t.verdict == Verdict::NoStart)
    {
        return (None, "even 1 worker did not start".into());
    }
    let mut model = None;
    if max_w >= 2 {
        if lab.score(at_t(t0)(2)).is_none() {
            return (None, String::new());
        }
        model = memory_model(lab.get(at_t(t0)(1)), lab.get(at_t(t0)(2)), &lab.opts, max_w);
        if let Some(m) = model {
            lab.workers_cap = lab.workers_cap.min(m.workers_that_fit);
        }
    }
    let cap = lab.workers_cap;
    let Some(w) = lab.peak((1, cap), 2.min(cap), true, at_t(t0)) else {
        return (model, String::new());
    };
    let at_w = |w| {
        move |t| Candidate {
            workers: w,
            threads: t,
        }
    };
    let Some(t) = lab.peak((1, max_t), t0, false, at_w(w)) else {
        return (model, String::new());
    };
    // The best workers were found at the start threads: search them
    // again at the best threads, from where they were (the trials already
    // run are remembered).
    let mut w = w;
    if t != t0 && max_w > 1 {
        let cap = lab.workers_cap;
        let Some(again) = lab.peak((1, cap), w, true, at_t(t)) else {
            return (model, String::new());
        };
        w = again;
    }
    let mut s = match (max_w > 1, max_t > 1) {
        (true, true) => format!(
            "throughput peaked at {w} workers (of 1–{}) and {t} threads (of 1–{max_t})",
            lab.workers_cap
        ),
        (true, false) => format!(
            "throughput peaked at {w} workers (of 1–{})",
            lab.workers_cap
        ),
        (false, true) => format!("throughput peaked at {t} threads (of 1–{max_t}); one process"),
        (false, false) => "nothing to vary: one process, one thread".into(),
    };
    if let Some(m) = model.filter(|m| m.workers_that_fit < max_w) {
        s.push_str(&format!(
            "; memory ({} + {} per worker) fits at most {} under the limit less headroom",
            crate::units::fmt_bytes(m.base_bytes),
            crate::units::fmt_bytes(m.per_worker_bytes),
            plural(m.workers_that_fit as u64, "worker")
        ));
    }
    if lab.workers_cap < max_w && model.is_none_or(|m| lab.workers_cap < m.workers_that_fit) {
        s.push_str(&format!(
            "; {} workers went over the memory limit",
            lab.workers_cap + 1
        ));
    }
    (model, s)
}

/// The line through the peaks at 1 and 2 workers, and the workers it fits
/// under the limit less the headroom; None when either did not run.
fn memory_model(
    one: Option<&Tried>,
    two: Option<&Tried>,
    opts: &FitOptions,
    max_w: u32,
) -> Option<MemoryModel> {
    let (one, two) = (one?, two?);
    if one.trials == 0 || one.verdict == Verdict::NoStart || two.verdict == Verdict::NoStart {
        return None;
    }
    let per_worker = two.memory_peak_bytes.saturating_sub(one.memory_peak_bytes);
    let base = one.memory_peak_bytes.saturating_sub(per_worker);
    let fit = match (opts.usable_bytes(), per_worker) {
        (None, _) | (_, 0) => max_w,
        (Some(usable), p) => (usable.saturating_sub(base) / p).min(max_w as u64) as u32,
    };
    Some(MemoryModel {
        base_bytes: base,
        per_worker_bytes: per_worker,
        workers_that_fit: fit.max(1),
    })
}

/// The recommendation, its runner-up and whether they differ.
fn conclude(
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

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;
    type Rps = fn(u32, u32) -> f64;
    type Holds = fn(&Tried) -> bool;

    /// A model server whose truth is known: memory is `base` plus
    /// `per_worker` a worker (a process past `kill_at` is killed), and
    /// throughput and p99 are functions of the candidate, with a small
    /// deterministic noise between repeats.
    struct Model {
        base: u64,
        per_worker: u64,
        kill_at: Option<u64>,
        rps: fn(u32, u32) -> f64,
        p99_us: fn(u32, u32) -> u64,
        repeats: usize,
        noise: f64,
    }

    impl Model {
        fn rising() -> Model {
            Model {
                base: 100 * MIB,
                per_worker: 80 * MIB,
                kill_at: None,
                rps: |w, t| 100.0 * w as f64 + t as f64,
                p99_us: |_, _| 10_000,
                repeats: 1,
                noise: 0.0,
            }
        }

        fn measure(&self) -> impl FnMut(Candidate) -> Outcome + '_ {
            move |c| {
                let memory = self.base + c.workers as u64 * self.per_worker;
                let killed = self.kill_at.is_some_and(|k| memory > k);
                let repeats = (0..self.repeats)
                    .map(|r| {
                        // -1, 0, +1, -1, ... times the noise.
                        let wobble = ((r + c.workers as usize) % 3) as f64 - 1.0;
                        Repeat {
                            throughput_rps: (self.rps)(c.workers, c.threads)
                                * (1.0 + self.noise * wobble),
                            p50_us: 1_000,
                            p90_us: 2_000,
                            p99_us: (self.p99_us)(c.workers, c.threads),
                            errors: 0,
                            memory_peak_bytes: memory.min(self.kill_at.unwrap_or(u64::MAX)),
                            oom_kills: killed as u64,
                        }
                    })
                    .collect();
                Outcome {
                    repeats,
                    no_start: None,
                }
            }
        }
    }

    fn opts(limit: Option<u64>, max_workers: u32, max_threads: u32) -> FitOptions {
        FitOptions {
            memory_limit_bytes: limit,
            headroom: 0.1,
            slo_p99_us: None,
            max_workers,
            max_threads,
            start_threads: 5.min(max_threads),
            threads: max_threads > 1,
            processes: max_workers > 1,
            seed: 7,
        }
    }

    fn max_workers_tried(r: &FitResult) -> u32 {
        r.candidates.iter().map(|t| t.workers).max().unwrap()
    }

    /// Under a limit that holds N workers (with 10% headroom) and not
    /// N+1, the recommendation never has more than N, and nothing far
    /// above N is tried: the first two trials bound the rest.
    #[test]
    fn a_memory_limit_bounds_the_workers_tried_and_recommended() {
        // (base, per worker, limit, N workers that fit under 90% of it)
        let rows: &[(u64, u64, u64, u32)] = &[
            (100, 80, 512, 4),
            (50, 100, 1024, 8),
            (300, 30, 512, 5),
            (100, 150, 512, 2),
            (200, 300, 512, 0),
        ];
        for &(base, per, limit, n) in rows {
            let model = Model {
                base: base * MIB,
                per_worker: per * MIB,
                kill_at: Some(limit * MIB),
                ..Model::rising()
            };
            let r = fit(model.measure(), opts(Some(limit * MIB), 16, 1));
            let row = format!("{base}+{per}/worker under {limit} MiB: {r:#?}");
            match &r.recommendation {
                Some(best) => assert_eq!(best.workers, n, "{row}"),
                None => assert_eq!(n, 0, "{row}"),
            }
            assert!(max_workers_tried(&r) <= (n + 1).max(2), "{row}");
        }
    }

    /// A worker killed for memory the model did not foresee (the second
    /// trial underestimated the slope) lowers the bound at once.
    #[test]
    fn a_kill_the_model_missed_lowers_the_bound() {
        let model = Model {
            kill_at: Some(450 * MIB),
            ..Model::rising()
        };
        // 100 + 80 w: 4 workers (420 MiB) live, 5 are killed; no limit
        // given to the search, so only the kills tell it.
        let r = fit(model.measure(), opts(None, 16, 1));
        assert_eq!(r.recommendation.as_ref().unwrap().workers, 4, "{r:#?}");
        assert!(r.candidates.iter().any(|t| t.verdict == Verdict::Oom));
        assert!(max_workers_tried(&r) <= 8, "{r:#?}");
    }

    /// Throughput concave in workers: the peak is found in a few trials,
    /// not by trying all sixteen.
    #[test]
    fn a_concave_curve_is_climbed_to_its_peak_in_few_trials() {
        // (peak at, most trials of the sixteen)
        let rows: &[(u32, usize)] = &[(1, 4), (2, 5), (3, 5), (5, 8), (8, 10), (13, 10), (16, 10)];
        for &(peak, most) in rows {
            let model = Model {
                rps: match peak {
                    1 => |w, _| 1000.0 / (1.0 + 0.1 * (w as f64 - 1.0).powi(2)),
                    2 => |w, _| 1000.0 / (1.0 + 0.1 * (w as f64 - 2.0).powi(2)),
                    3 => |w, _| 1000.0 / (1.0 + 0.1 * (w as f64 - 3.0).powi(2)),
                    5 => |w, _| 1000.0 / (1.0 + 0.1 * (w as f64 - 5.0).powi(2)),
                    8 => |w, _| 1000.0 / (1.0 + 0.1 * (w as f64 - 8.0).powi(2)),
                    13 => |w, _| 1000.0 / (1.0 + 0.1 * (w as f64 - 13.0).powi(2)),
                    _ => |w, _| 1000.0 / (1.0 + 0.1 * (w as f64 - 16.0).powi(2)),
                },
                ..Model::rising()
            };
            let r = fit(model.measure(), opts(None, 16, 1));
            let best = r.recommendation.as_ref().unwrap();
            assert_eq!(best.workers, peak, "{r:#?}");
            assert!(r.trials <= most, "peak {peak}: {} trials: {r:#?}", r.trials);
            assert!(r
                .stopped_because
                .contains(&format!("peaked at {peak} workers")));
        }
    }

    /// An objective that high thread counts break: the recommendation is
    /// the most threads that hold it, and those over it are marked `slo`.
    #[test]
    fn an_objective_excludes_the_threads_that_break_it() {
        let model = Model {
            rps: |w, t| 100.0 * w as f64 * t as f64,
            p99_us: |_, t| 10_000 * t as u64,
            ..Model::rising()
        };
        let mut o = opts(None, 2, 16);
        o.slo_p99_us = Some(35_000);
        let r = fit(model.measure(), o);
        let best = r.recommendation.as_ref().unwrap();
        assert_eq!((best.workers, best.threads), (2, 3), "{r:#?}");
        assert!(r
            .candidates
            .iter()
            .all(|t| (t.threads > 3) == (t.verdict == Verdict::Slo)));
        assert!(r.candidates.iter().any(|t| t.verdict == Verdict::Slo));
    }

    /// A server without threads varies workers only; one without
    /// processes varies threads only; one with neither tries one thing.
    #[test]
    fn a_server_varies_only_what_it_has() {
        let model = Model::rising();
        // (processes, threads, what every candidate must satisfy)
        let rows: &[(bool, bool, Holds, usize)] = &[
            (true, false, |t| t.threads == 1, 2),
            (false, true, |t| t.workers == 1, 2),
            (false, false, |t| t.workers == 1 && t.threads == 1, 1),
        ];
        for &(processes, threads, holds, least) in rows {
            let mut o = opts(None, 8, 8);
            (o.processes, o.threads) = (processes, threads);
            let r = fit(model.measure(), o);
            assert!(r.candidates.iter().all(holds), "{r:#?}");
            assert!(r.candidates.len() >= least, "{r:#?}");
            assert!(r.recommendation.is_some());
        }
    }

    /// Two configurations within noise of each other are reported as no
    /// significant difference; a clear gap with enough repeats is not.
    #[test]
    fn ties_are_reported_as_not_significant() {
        // (throughput by workers, repeats, noise, significant)
        let rows: &[(Rps, usize, f64, bool)] = &[
            (|_, _| 1000.0, 5, 0.03, false),
            (|_, _| 1000.0, 3, 0.0, false),
            (|w, _| 1000.0 * w as f64, 5, 0.01, true),
        ];
        for &(rps, repeats, noise, significant) in rows {
            let model = Model {
                rps,
                repeats,
                noise,
                ..Model::rising()
            };
            let r = fit(model.measure(), opts(None, 4, 1));
            let d = r.difference.as_ref().unwrap();
            assert_eq!(d.significant, significant, "{r:#?}");
            assert_eq!(
                d.words.starts_with("no significant difference"),
                !significant,
                "{}",
                d.words
            );
            assert_eq!(r.trials, r.candidates.len() * repeats);
        }
    }

    /// A server that never starts: no recommendation, and the reason.
    #[test]
    fn a_server_that_does_not_start_gets_no_recommendation() {
        let measure = |_| Outcome {
            repeats: Vec::new(),
            no_start: Some("exited with status 1".into()),
        };
        let r = fit(measure, opts(Some(512 * MIB), 8, 8));
        assert!(r.recommendation.is_none());
        assert_eq!(r.candidates.len(), 1);
        assert_eq!(r.candidates[0].verdict, Verdict::NoStart);
        assert!(
            r.stopped_because.contains("did not start"),
            "{}",
            r.stopped_because
        );
    }

    /// Errors at high workers (an overloaded backend) keep them out of
    /// the recommendation, and Ctrl-C ends the search with what it has.
    #[test]
    fn errors_and_interruptions_are_judged() {
        let model = Model::rising();
        let mut measure = model.measure();
        let measure = move |c: Candidate| {
            let mut o = measure(c);
            if c.workers >= 5 {
                o.repeats[0].errors = 3;
            }
            o
        };
        let r = fit(measure, opts(None, 16, 1));
        assert_eq!(r.recommendation.as_ref().unwrap().workers, 4, "{r:#?}");
        assert!(r.candidates.iter().any(|t| t.verdict == Verdict::Errors));
        let calls = std::cell::Cell::new(0);
        let r = fit_until(
            |c| {
                calls.set(calls.get() + 1);
                model.measure()(c)
            },
            opts(None, 16, 1),
            || calls.get() >= 2,
        );
        assert_eq!(r.candidates.len(), 2);
        assert!(r.stopped_because.starts_with("interrupted"));
    }
}
