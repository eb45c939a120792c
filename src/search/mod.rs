//! Break-point search: the highest load level (connections in a closed
//! loop, or a rate in an open loop) a server takes with no errors, and
//! optionally within a latency ceiling.
//!
//! Seed 000 stepped concurrency up by 100 until errors appeared. This grows
//! the level geometrically until the first failing step, then bisects
//! between the last clean level and the first failing one until they are
//! within the stated resolution. When the first step already fails, it
//! bisects downward between 1 and the lowest failing level instead: "no
//! break point" means even one connection failed. The search knows nothing about how a step
//! is run: the caller passes a closure that applies one level of load and
//! says what happened, so it works the same on a URL or on a lab server,
//! and is tested with a model server.
//!
//! Most of a search's load time goes to clean steps: a failing one ends at
//! its first error. So while searching, clean levels are only *probed*
//! (a short step, `probe_s`), and the level the search settles on is then
//! *confirmed* with a full step, whose figures are the ones reported. A
//! level that passes its probe but fails the full step is a failure like
//! any other: the search goes on below it with full steps only, so the
//! reported break point has always held for a full step.

use crate::load::{ErrorCounts, FirstFailure, LoadConfig, LoadReport, Pacing};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

pub mod fit;
pub mod settle;

pub const SCHEMA: &str = "rackbench/breakpoint-v1";

/// What one step of load showed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StepResult {
    pub level: f64,
    pub throughput_rps: f64,
    pub errors: u64,
    pub p99_us: u64,
    /// Seconds of load this step applied (warm-up included).
    pub load_seconds: f64,
    /// False when the step failed (errors, or over the latency ceiling).
    pub clean: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// A short probe rather than a full step.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub probe: bool,
    /// Seconds waited before this step for the server to drain what the
    /// step before left it (see `settle`): 0 for the first step, and for a
    /// lab step, which starts a fresh server.
    #[serde(default)]
    pub settle_s: f64,
    /// Counted failures by kind (the load-v1 `errors`).
    #[serde(default)]
    pub errors_by_kind: ErrorCounts,
    /// Counted responses with an unexpected status, by code.
    #[serde(default)]
    pub status_codes: BTreeMap<u16, u64>,
    /// The step's first failure, warm-up included: why the level failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<FirstFailure>,
    /// Lab steps with telemetry on: the app's own time, p50, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_p50_us: Option<f64>,
    /// Lab steps with telemetry behind nginx: the wait between nginx and
    /// the app, p50, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_p50_us: Option<f64>,
    /// Lab steps with telemetry on: GC runs per 1,000 requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc_runs_per_1k_requests: Option<f64>,
    /// Lab steps: the longest accept queue of the server's own socket over
    /// the counted window (connections waiting for a worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_queue_max: Option<u32>,
}

/// How long a step runs: the caller maps these to durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// A short step that only asks "does this level fail?".
    Probe,
    /// A full step (warm-up and the whole duration): its figures count.
    Full,
}

/// How one step of a search loads the server: the one place a step's load
/// is set up, for a URL (`app::breakpoint`) and for the lab
/// (`lab::trial::TrialSpec::at_step`, used by `app::breakpoint` and the plan
/// runner).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepLoad {
    /// Levels are rates (open loop) rather than connections.
    pub rate_mode: bool,
    /// Counted length of a full step (its warm-up comes on top).
    pub step: Duration,
    /// Length of a probe step, which has no warm-up.
    pub probe: Duration,
    /// In rate mode, the connections to carry the rate (None keeps the
    /// base load's).
    pub rate_connections: Option<usize>,
}

impl StepLoad {
    /// Sets `load` to apply `level` as a step of `kind`.
    pub fn apply(&self, level: f64, kind: StepKind, load: &mut LoadConfig) {
        if self.rate_mode {
            load.pacing = Pacing::Rate(level);
            if let Some(c) = self.rate_connections {
                load.connections = c;
            }
        } else {
            load.connections = level as usize;
        }
        load.duration = Some(self.step);
        if kind == StepKind::Probe {
            load.duration = Some(self.probe);
            load.warmup = Duration::ZERO;
            load.warmup_until_steady = false;
        }
        load.requests = None;
        // A failing level is known at its first error, warm-up included:
        // the step ends there, so a failure costs next to nothing. Those
        // errors count even when their requests were sent during the
        // warm-up.
        load.stop_on_error = true;
    }
}

/// Whether the search's knobs can make a search: start > 0, max >= start,
/// growth > 1 and resolution > 0. The CLI and plan validation both ask
/// here, each naming the knobs as its user wrote them.
pub fn knobs_are_sane(start: f64, max: f64, growth: f64, resolution: f64) -> bool {
    growth > 1.0 && resolution > 0.0 && start > 0.0 && max >= start
}

impl StepResult {
    /// A step that could not run at all (the server would not start, say).
    pub fn failed(level: f64, why: String) -> StepResult {
        StepResult {
            level,
            errors: 1,
            why: Some(why),
            ..StepResult::default()
        }
    }

    /// A step from a load run at `level`. A connection left unanswered
    /// fails the step besides the counted errors, and so does a load
    /// stopped at its first error even when that error fell in the
    /// warm-up (not counted): at least one error then.
    pub fn from_load(level: f64, r: &LoadReport) -> StepResult {
        let counted = r.errors.total() + r.connections.never_answered;
        StepResult {
            level,
            throughput_rps: r.throughput_rps,
            errors: if r.stopped_on_error {
                counted.max(1)
            } else {
                counted
            },
            p99_us: r.latency_us.p99,
            load_seconds: r.load_seconds(),
            clean: true,
            errors_by_kind: r.errors,
            status_codes: r.status_codes.clone(),
            first_failure: r.first_failure.clone(),
            ..StepResult::default()
        }
    }

    /// Why the step failed, in a few words: the first failure's known
    /// reason, else its status line, else its kind.
    pub fn cause(&self) -> Option<String> {
        let f = self.first_failure.as_ref()?;
        Some(match (&f.reason, &f.status_line, f.status) {
            (Some(r), _, _) => r.clone(),
            (None, Some(line), _) => format!("\"{line}\""),
            (None, None, Some(code)) => format!("status {code}"),
            (None, None, None) => format!("{} ({})", f.kind, f.detail),
        })
    }
}

/// The search's knobs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SearchConfig {
    pub start: f64,
    /// Never go past this level.
    pub max: f64,
    /// Factor between levels while growing (2 doubles).
    pub growth: f64,
    /// Stop bisecting when (bad - good) / good is at most this.
    pub resolution: f64,
    /// Levels are whole numbers (connections) or not (rates).
    pub integer: bool,
    /// p99 ceiling in microseconds, if any.
    pub slo_p99_us: Option<u64>,
    /// Seconds of a probe step; 0 runs every step in full.
    #[serde(default)]
    pub probe_s: f64,
}

impl SearchConfig {
    /// The knobs of one search, over connections (whole levels) or, with
    /// `rate_mode`, a rate; `probe` zero runs every step in full. The one
    /// constructor `rackbench breakpoint` and the plan runner share, so a
    /// search's recorded `search` block means the same from either.
    pub fn new(
        rate_mode: bool,
        start: f64,
        max: f64,
        growth: f64,
        resolution: f64,
        slo_p99_us: Option<u64>,
        probe: Duration,
    ) -> SearchConfig {
        SearchConfig {
            start,
            max,
            growth,
            resolution,
            integer: !rate_mode,
            slo_p99_us,
            probe_s: probe.as_secs_f64(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Breakpoint {
    /// Highest clean level found (None when even the first step failed).
    pub level: Option<f64>,
    /// Throughput at that level.
    pub throughput_rps: f64,
    /// First failing level (None if `max` was reached cleanly).
    pub failed_at: Option<f64>,
    pub load_seconds: f64,
    pub steps: Vec<StepResult>,
    /// True when the search stopped at `max` without a failure.
    pub capped: bool,
    /// False when the level only passed a probe: the search was stopped
    /// (Ctrl-C) before its full step.
    #[serde(default = "yes")]
    pub confirmed: bool,
}

fn yes() -> bool {
    true
}

impl Breakpoint {
    /// Why the first failing level failed: its step's reason ("4 errors:
    /// 502 from nginx, upstream closed a kept-alive connection").
    pub fn why_failed(&self) -> Option<&str> {
        let at = self.failed_at?;
        self.steps
            .iter()
            .rev()
            .find(|s| !s.clean && s.level == at)
            .and_then(|s| s.why.as_deref())
    }

    /// Seconds spent waiting for the server to drain between steps.
    pub fn settle_seconds(&self) -> f64 {
        self.steps.iter().map(|s| s.settle_s).sum()
    }
}

/// Judges a step against the error and latency rules.
pub fn judge(mut step: StepResult, cfg: &SearchConfig) -> StepResult {
    step.clean = true;
    if step.errors > 0 {
        step.clean = false;
        let n = step.errors;
        let errors = format!("{n} error{}", if n == 1 { "" } else { "s" });
        step.why = Some(match step.why.take().or_else(|| step.cause()) {
            Some(cause) => format!("{errors}: {cause}"),
            None => errors,
        });
    } else if let Some(slo) = cfg.slo_p99_us {
        if step.p99_us > slo {
            step.clean = false;
            step.why = Some(format!(
                "p99 {} us over the {} us ceiling",
                step.p99_us, slo
            ));
        }
    }
    step
}

/// The lowest level a search tries: one connection, or one request a
/// second. When even this fails, there is no break point.
pub const FLOOR: f64 = 1.0;

fn round(level: f64, cfg: &SearchConfig) -> f64 {
    let l = level.min(cfg.max);
    if cfg.integer {
        l.round().max(1.0)
    } else {
        l
    }
}

/// A clean level seen so far.
#[derive(Clone, Copy)]
struct Good {
    level: f64,
    throughput_rps: f64,
    /// It held for a full step, not only for a probe.
    full: bool,
}

/// Runs the search. `step(level, kind)` applies one level and reports; it
/// is judged here. Stops early when `stop()` says so (Ctrl-C), returning
/// what was found so far.
pub fn find_breakpoint(
    cfg: &SearchConfig,
    mut step: impl FnMut(f64, StepKind) -> StepResult,
    stop: impl Fn() -> bool,
) -> Breakpoint {
    let mut steps: Vec<StepResult> = Vec::new();
    let mut kind = if cfg.probe_s > 0.0 {
        StepKind::Probe
    } else {
        StepKind::Full
    };
    let mut run = |level: f64, kind: StepKind, steps: &mut Vec<StepResult>| {
        let mut r = judge(step(level, kind), cfg);
        r.probe = kind == StepKind::Probe;
        let good = r.clean.then_some(Good {
            level,
            throughput_rps: r.throughput_rps,
            full: kind == StepKind::Full,
        });
        steps.push(r);
        good
    };
    let mut good: Option<Good> = None;
    let mut bad: Option<f64> = None;
    let mut level = round(cfg.start, cfg);
    // Grow until the first failure or the cap.
    while !stop() {
        match run(level, kind, &mut steps) {
            None => {
                bad = Some(level);
                break;
            }
            Some(g) => good = Some(g),
        }
        let next = round(level * cfg.growth, cfg);
        if level >= cfg.max || next <= level {
            break;
        }
        level = next;
    }
    loop {
        // Nothing held yet: search downward, bisecting between the lowest
        // level (1) and the lowest failing one, until a level holds or even
        // the lowest fails. A first step that fails says only that the
        // start was too high, not that there is no break point.
        while let (None, Some(b)) = (good, bad) {
            if stop() || b <= FLOOR {
                break;
            }
            let mut mid = round(FLOOR + (b - FLOOR) / 2.0, cfg);
            if mid >= b || (b - FLOOR) / FLOOR <= cfg.resolution {
                mid = FLOOR;
            }
            match run(mid, kind, &mut steps) {
                Some(m) => good = Some(m),
                None => bad = Some(mid),
            }
        }
        // Bisect between the last clean level and the first failing one.
        while let (Some(g), Some(b)) = (good, bad) {
            if stop() || (b - g.level) / g.level <= cfg.resolution {
                break;
            }
            let mid = round(g.level + (b - g.level) / 2.0, cfg);
            if mid <= g.level || mid >= b {
                break;
            }
            match run(mid, kind, &mut steps) {
                Some(m) => good = Some(m),
                None => bad = Some(mid),
            }
        }
        // Confirm a level that only passed a probe.
        let Some(g) = good.filter(|g| !g.full) else {
            break;
        };
        if stop() {
            break;
        }
        if let Some(full) = run(g.level, StepKind::Full, &mut steps) {
            good = Some(full);
            break;
        }
        // It held for a probe but not for a full step: a failure like any
        // other. Go on below it, in full steps from now on.
        bad = Some(g.level);
        kind = StepKind::Full;
        good = steps
            .iter()
            .filter(|s| s.clean && s.level < g.level)
            .max_by(|a, b| a.level.total_cmp(&b.level))
            .map(|s| Good {
                level: s.level,
                throughput_rps: s.throughput_rps,
                full: !s.probe,
            });
    }
    Breakpoint {
        level: good.map(|g| g.level),
        throughput_rps: good.map_or(0.0, |g| g.throughput_rps),
        failed_at: bad,
        load_seconds: steps.iter().map(|s| s.load_seconds).sum(),
        capped: bad.is_none() && good.is_some_and(|g| g.level >= cfg.max),
        confirmed: good.is_none_or(|g| g.full),
        steps,
    }
}

/// Seed 000's method, for comparison: step up by `step` until an error.
pub fn find_linear(
    cfg: &SearchConfig,
    step_size: f64,
    mut step: impl FnMut(f64, StepKind) -> StepResult,
    stop: impl Fn() -> bool,
) -> Breakpoint {
    let mut steps = Vec::new();
    let mut good: Option<(f64, f64)> = None;
    let mut bad = None;
    let mut level = round(cfg.start, cfg);
    while level <= cfg.max && !stop() {
        let r = judge(step(level, StepKind::Full), cfg);
        let (clean, tp) = (r.clean, r.throughput_rps);
        steps.push(r);
        if !clean {
            bad = Some(level);
            break;
        }
        good = Some((level, tp));
        level = round(level + step_size, cfg);
        if good.is_some_and(|g| g.0 >= level) {
            break;
        }
    }
    Breakpoint {
        level: good.map(|g| g.0),
        throughput_rps: good.map_or(0.0, |g| g.1),
        failed_at: bad,
        load_seconds: steps.iter().map(|s| s.load_seconds).sum(),
        capped: bad.is_none(),
        confirmed: true,
        steps,
    }
}

/// Parses `p99=200ms` (only p99 is supported as a ceiling for now).
pub fn parse_slo(s: &str) -> Result<u64, String> {
    let (key, value) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not a ceiling: write it like p99=200ms"))?;
    if key.trim() != "p99" {
        return Err(format!(
            "'{key}' is not supported: the ceiling is on p99, e.g. p99=200ms"
        ));
    }
    let d = crate::units::duration(value)?;
    Ok(d.as_micros() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model server: clean up to `limit` connections, errors beyond. A
    /// full clean step costs 5 s of load and a probe 1 s; a failing step
    /// ends at its first error (0.1 s), as the real steps do.
    fn model(limit: f64) -> impl FnMut(f64, StepKind) -> StepResult {
        slow_model(limit, limit)
    }

    /// Clean up to `limit` in a probe but only up to `full_limit` in a
    /// full step: a server that fails only under sustained load.
    fn slow_model(limit: f64, full_limit: f64) -> impl FnMut(f64, StepKind) -> StepResult {
        move |level, kind| {
            let (limit, clean_s) = match kind {
                StepKind::Probe => (limit, 1.0),
                StepKind::Full => (full_limit, 5.0),
            };
            StepResult {
                level,
                throughput_rps: level.min(limit) * 10.0,
                errors: if level > limit { 5 } else { 0 },
                p99_us: (level * 100.0) as u64,
                load_seconds: if level > limit { 0.1 } else { clean_s },
                clean: true,
                ..StepResult::default()
            }
        }
    }

    fn cfg() -> SearchConfig {
        SearchConfig {
            start: 100.0,
            max: 5000.0,
            growth: 3.0,
            resolution: 0.05,
            integer: true,
            slo_p99_us: None,
            probe_s: 1.0,
        }
    }

    #[test]
    fn finds_the_same_point_as_a_linear_search_in_far_less_load() {
        // Seed 000's break points were 400, 900 and 1500 connections.
        for probe_s in [1.0, 0.0] {
            let c = SearchConfig { probe_s, ..cfg() };
            let (mut geo_s, mut lin_s) = (0.0, 0.0);
            for limit in [150.0, 400.0, 900.0, 1500.0, 2450.0] {
                let geo = find_breakpoint(&c, model(limit), || false);
                let lin = find_linear(&c, 100.0, model(limit), || false);
                let found = geo.level.unwrap();
                assert!(
                    found <= limit && found >= limit * 0.95,
                    "limit {limit}: found {found}"
                );
                // The linear search is only exact to its step of 100.
                assert!(
                    (found - lin.level.unwrap()).abs() <= 100.0,
                    "limit {limit}: {found} vs {:?}",
                    lin.level
                );
                // The figures reported come from a full step at that level.
                assert!(
                    geo.steps
                        .iter()
                        .any(|s| !s.probe && s.clean && s.level == found),
                    "{:?}",
                    geo.steps
                );
                assert_eq!(geo.throughput_rps, found * 10.0);
                // Probing halves the cost from seed 000's smallest break point
                // up; without it, only the larger ones.
                if limit >= 400.0 && probe_s > 0.0 || limit >= 900.0 {
                    assert!(
                        geo.load_seconds * 2.0 < lin.load_seconds,
                        "probe {probe_s}, limit {limit}: {} vs {}",
                        geo.load_seconds,
                        lin.load_seconds
                    );
                }
                geo_s += geo.load_seconds;
                lin_s += lin.load_seconds;
            }
            assert!(geo_s < 0.5 * lin_s, "{geo_s} vs {lin_s}");
        }
    }

    #[test]
    fn a_level_that_only_passes_its_probe_is_a_failure() {
        // Probes pass up to 900, full steps only up to 600.
        let r = find_breakpoint(&cfg(), slow_model(900.0, 600.0), || false);
        let found = r.level.unwrap();
        assert!((570.0..=600.0).contains(&found), "{found}");
        assert!(
            r.steps
                .iter()
                .any(|s| !s.probe && s.clean && s.level == found),
            "{:?}",
            r.steps
        );
        // Every step after the first failed confirmation is a full one.
        let first_full_fail = r
            .steps
            .iter()
            .position(|s| !s.probe && !s.clean)
            .expect("a confirmation failed");
        assert!(r.steps[first_full_fail..].iter().all(|s| !s.probe));
        // When nothing probed below held for a full step, the search goes
        // on downward in full steps rather than ending with a probed level.
        let r = find_breakpoint(&cfg(), slow_model(900.0, 50.0), || false);
        let found = r.level.unwrap();
        assert!((47.5..=50.0).contains(&found), "{found}: {:?}", r.steps);
        assert!(r.confirmed);
    }

    #[test]
    fn a_first_step_that_fails_searches_downward() {
        // Seed 000's server at 73, from the default start and others.
        for start in [100.0, 1000.0, 74.0, 10.0, 73.0] {
            for limit in [73.0, 5.0, 2.0, 1.0, 150.0] {
                let c = SearchConfig { start, ..cfg() };
                let r = find_breakpoint(&c, model(limit), || false);
                let found = r.level.unwrap_or_else(|| panic!("{start} {limit}: {r:?}"));
                assert!(
                    found <= limit && found >= (limit * 0.95).floor(),
                    "start {start}, limit {limit}: found {found} in {:?}",
                    r.steps.iter().map(|s| s.level).collect::<Vec<_>>()
                );
                assert!(r.confirmed && r.failed_at.is_some_and(|f| f > found));
            }
        }
        // Rates too: not whole numbers, bisected down to the resolution.
        let c = SearchConfig {
            integer: false,
            start: 500.0,
            ..cfg()
        };
        let r = find_breakpoint(&c, model(33.0), || false);
        let found = r.level.unwrap();
        assert!((31.3..=33.0).contains(&found), "{found}");
    }

    #[test]
    fn none_only_when_even_the_lowest_level_fails_and_says_why() {
        let failing = |level, _| StepResult {
            level,
            errors: 3,
            first_failure: Some(FirstFailure {
                kind: "status".into(),
                status: Some(503),
                status_line: Some("HTTP/1.1 503 Busy".into()),
                detail: "the status was not one of those expected".into(),
                at_s: 0.01,
                log_line: None,
                reason: None,
            }),
            ..StepResult::default()
        };
        let r = find_breakpoint(&cfg(), failing, || false);
        assert_eq!((r.level, r.failed_at), (None, Some(FLOOR)));
        let last = r.steps.last().unwrap();
        assert_eq!(last.level, FLOOR);
        assert_eq!(
            last.why.as_deref(),
            Some("3 errors: \"HTTP/1.1 503 Busy\""),
            "the reason travels with the step"
        );
        // Halving from 100 to 1 takes few steps, not a hundred.
        assert!(r.steps.len() <= 9, "{:?}", r.steps);
    }

    #[test]
    fn a_latency_ceiling_stops_the_search_early() {
        let mut c = cfg();
        c.start = 10.0;
        c.slo_p99_us = Some(30_000); // p99 = level * 100 us: clean up to 300
        let r = find_breakpoint(&c, model(10_000.0), || false);
        let found = r.level.unwrap();
        assert!((285.0..=300.0).contains(&found), "{found}");
        assert!(r
            .steps
            .iter()
            .any(|s| s.why.as_deref().is_some_and(|w| w.contains("ceiling"))));
    }

    #[test]
    fn edge_cases() {
        // Fails at the very first step: found below it.
        let r = find_breakpoint(&cfg(), model(5.0), || false);
        assert_eq!((r.level, r.failed_at), (Some(5.0), Some(6.0)));
        // Never fails: stops at the cap, confirmed by a full step there.
        let mut c = cfg();
        c.max = 300.0;
        let r = find_breakpoint(&c, model(1e9), || false);
        assert!(r.capped && r.level == Some(300.0), "{r:?}");
        assert!(!r.steps.last().unwrap().probe);
        // Interrupted before anything ran.
        let r = find_breakpoint(&cfg(), model(100.0), || true);
        assert!(r.steps.is_empty() && r.level.is_none());
        // Interrupted after two probes: a level, said to be unconfirmed.
        let calls = std::cell::Cell::new(0);
        let r = find_breakpoint(
            &cfg(),
            |l, k| {
                calls.set(calls.get() + 1);
                model(1e9)(l, k)
            },
            || calls.get() >= 2,
        );
        assert_eq!(r.level, Some(300.0));
        assert!(!r.confirmed && r.steps.iter().all(|s| s.probe));
    }

    #[test]
    fn slo_parsing() {
        assert_eq!(parse_slo("p99=200ms").unwrap(), 200_000);
        assert!(parse_slo("p50=1ms").is_err());
        assert!(parse_slo("p99").is_err());
    }
}
