//! The fit search: which workers × threads give the most throughput inside
//! a memory limit, under a latency objective, with no errors and no worker
//! killed for memory.
//!
//! Like the break-point search, it sees only a closure that measures one
//! candidate (`Candidate` in, `Outcome` out), so the lab drives it with
//! real trials (`app::fit`) and its tests with model servers whose truth is
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
//!
//! Its parts: the data it takes and gives (`record`, fit-v1's body), one
//! candidate's judgement (`judge`), and the recommendation against its
//! runner-up (`conclude`); the search itself is here.

mod conclude;
mod judge;
mod record;

pub use conclude::grid;
pub use judge::judge_candidate;
pub use record::{
    Candidate, Difference, FitOptions, FitResult, LatencyUs, MemoryModel, Outcome, Repeat, Tried,
    Verdict, SCHEMA,
};

use conclude::conclude;
use judge::plural;

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
