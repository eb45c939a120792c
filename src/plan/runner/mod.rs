//! Runs an expanded plan: one trial after another, each record written to
//! the results directory the moment it ends; break-point searches when the
//! plan asks; a summary with the spread across repeats at the end. The
//! records themselves are `store::records`, the summary `store::summary`;
//! every file goes through the run's `store::study::Study`, which keeps
//! what was written, so the summary and the reports at the end read no
//! record again.
//!
//! Ctrl-C stops the current server (the trial's own cleanup), keeps every
//! record already written, and the caller prints how to resume.

use super::{Expanded, Plan, PlannedTrial};
use crate::host::utc_now;
use crate::lab::environment::Environment;
use crate::lab::trial::{run_trial, TrialError, TrialRecord, TrialSpec};
use crate::search::{self, SearchConfig, StepLoad, StepResult};
use crate::store::records::{
    Manifest, Outcome, StoredBreakpoint, StoredTrial, RUN_SCHEMA, STORED_SCHEMA,
};
use crate::store::study::Study;
use crate::store::summary::GroupSummary;
use crate::store::{self, ResultsDir};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub mod ab;
mod session;
mod spec;
mod trials;

pub use session::Session;
pub use spec::estimate;
pub(super) use spec::trial_spec;

/// What the runner needs besides the plan.
pub struct RunOptions {
    pub out: PathBuf,
    pub resume: bool,
    pub interrupt: Arc<AtomicBool>,
    pub server_cpus: Vec<usize>,
    pub load_cpus: Vec<usize>,
    /// Told of each trial and search as it starts and ends (a sink of
    /// `app` shows it); the runner itself never prints.
    pub progress: Option<ShowProgress>,
    /// The command line to print for resuming.
    pub command: String,
    /// Seed of the shuffle within each round of repeats.
    pub seed: u64,
    /// Telemetry on in every trial, whatever the plan says (`run --telemetry`).
    pub telemetry: bool,
    /// The runtimes the trials name, resolved once before the first
    /// (`Plan::check_runtimes`); a trial whose runtime is missing here
    /// runs on the host, unread.
    pub runtimes: super::runtimes::Resolved,
}

/// Whoever shows the runner's progress.
pub type ShowProgress = Arc<dyn Fn(&Progress) + Send + Sync>;

/// What the runner is doing, for whoever shows progress.
pub enum Progress<'a> {
    /// Trial `n` (from 1) of `total` starts; `eta` is zero until one ended.
    Trial {
        n: usize,
        total: usize,
        trial: &'a PlannedTrial,
        eta: Duration,
    },
    /// A trial ended and its record is about to be written.
    TrialDone(&'a StoredTrial),
    /// A break-point search, item `n` of `total`, starts.
    Breakpoint {
        n: usize,
        total: usize,
        trial: &'a PlannedTrial,
    },
    /// A break-point search ended.
    BreakpointDone(&'a StoredBreakpoint),
    /// A repeat the machine disturbed runs again (`rerun_disturbed`):
    /// its `attempt` (2 for the first rerun) of at most `of`, and why.
    Rerun {
        trial: &'a PlannedTrial,
        attempt: u32,
        of: u32,
        why: &'a str,
    },
}

pub struct RunResult {
    pub done: usize,
    /// Trials that failed, those of an earlier part of a resumed run included.
    pub failed: usize,
    /// Trials that missed at least one of the plan's checks (resumed part included).
    pub checks_missed: usize,
    pub skipped_existing: usize,
    pub interrupted: bool,
    pub summary: Vec<GroupSummary>,
    /// The results directory as the run left it (what a resume kept and
    /// what this run wrote), for the reports.
    pub study: Study,
}

/// One representative trial per server/app/topology: what a break-point
/// search runs over (it chooses the load level itself).
pub fn breakpoint_groups(e: &Expanded) -> Vec<PlannedTrial> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for t in e.trials.iter().filter(|t| t.repeat == 1) {
        let key = (
            t.variant.clone(),
            t.app.clone(),
            t.behind.clone(),
            t.nginx_workers,
            t.nginx_keepalive,
            t.nginx_http,
        );
        if !seen.contains(&key) {
            seen.push(key);
            out.push(t.clone());
        }
    }
    out
}

/// Shuffles the trials of each round of repeats (their order within the
/// round only; round 2 still starts after round 1 ends), so that a slow
/// drift of the machine — heat, a neighbour's job — cannot line up with
/// one server the way a fixed A B C order would let it.
///
/// The generator is splitmix64, written out here rather than taken from a
/// crate, so a seed replays the same order in every future version.
pub fn shuffle_rounds<T>(trials: &mut [T], repeat_of: impl Fn(&T) -> u32, seed: u64) {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut start = 0;
    while start < trials.len() {
        let round = repeat_of(&trials[start]);
        let len = trials[start..]
            .iter()
            .take_while(|t| repeat_of(t) == round)
            .count();
        let slice = &mut trials[start..start + len];
        // Fisher-Yates.
        for i in (1..slice.len()).rev() {
            let j = (next() % (i as u64 + 1)) as usize;
            slice.swap(i, j);
        }
        start += len;
    }
}

/// A seed for a run that was given none: the clock and the pid.
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // Kept below 2^53 so it survives any JSON reader as an exact number.
    (nanos ^ (u64::from(std::process::id()) << 32)) & ((1 << 53) - 1)
}

/// Runs the plan into `opts.out`: writes the plan and the manifest, runs
/// the fixed-load trials (shuffled within each round), then the
/// break-point searches, each record written the moment it ends, and
/// last the summary. `study` is what `opts.out` held before (`Study::read`,
/// read once by the caller, whose resume checks read it too): a resume
/// keeps its records.
pub fn run_plan(
    plan: &Plan,
    plan_text: &str,
    e: &Expanded,
    opts: &RunOptions,
    mut study: Study,
) -> std::io::Result<RunResult> {
    let dir = ResultsDir::new(&opts.out);
    std::fs::create_dir_all(&dir.root)?;
    if !opts.resume || !dir.plan().exists() {
        study.write_plan(plan_text)?;
    }
    let bp_groups = if plan.breakpoint.is_some() {
        breakpoint_groups(e)
    } else {
        Vec::new()
    };
    let fixed = plan.breakpoint.as_ref().is_none_or(|b| b.and_fixed_loads);
    let mut trials: Vec<&PlannedTrial> = if fixed {
        e.trials.iter().collect()
    } else {
        Vec::new()
    };
    shuffle_rounds(&mut trials, |t| t.repeat, opts.seed);
    if !opts.resume || !dir.manifest().exists() {
        study.write_manifest(&manifest(plan, e, opts, &trials, &bp_groups))?;
    }
    if let Some(board) = crate::live::board() {
        board.plan(Some((trials.len() + bp_groups.len()) as u64));
    }
    let mut run = Run {
        plan,
        e,
        opts,
        study,
        total: trials.len() + bp_groups.len(),
        started: Instant::now(),
        counts: Counts::default(),
    };
    run.trials(&trials)?;
    if let Some(bp) = &plan.breakpoint {
        run.breakpoints(bp, &bp_groups, trials.len())?;
    }
    let summary = run.study.summary()?;
    run.study.write_summary(&summary)?;
    let c = run.counts;
    Ok(RunResult {
        done: c.done,
        failed: c.failed,
        checks_missed: c.checks_missed,
        skipped_existing: c.existing,
        interrupted: opts.interrupt.load(Ordering::Relaxed),
        summary,
        study: run.study,
    })
}

/// The run's manifest (`run-v1`): the plan, the trials in their order,
/// the searches, the machine, the command and the seed.
fn manifest(
    plan: &Plan,
    e: &Expanded,
    opts: &RunOptions,
    trials: &[&PlannedTrial],
    bp_groups: &[PlannedTrial],
) -> Manifest {
    Manifest {
        schema: RUN_SCHEMA.into(),
        layout: store::LAYOUT.into(),
        plan: plan.name.clone(),
        follows: plan.follows.clone(),
        started_at: utc_now(),
        repeats: plan.repeats,
        trials: trials.iter().map(|t| (*t).clone()).collect(),
        skipped: e.skipped.clone(),
        breakpoints: bp_groups.iter().map(|t| t.group.clone()).collect(),
        environment: Environment::capture(vec![opts.command.clone()]),
        command: opts.command.clone(),
        seed: Some(opts.seed),
    }
}

/// What a run has counted so far (a resumed run's earlier part included).
#[derive(Default, Clone, Copy)]
struct Counts {
    done: usize,
    failed: usize,
    /// Records already in the directory that a resume kept.
    existing: usize,
    checks_missed: usize,
}

/// One run in progress: what each trial and search needs, and the counts.
struct Run<'a> {
    plan: &'a Plan,
    e: &'a Expanded,
    opts: &'a RunOptions,
    /// The results directory: what it held and what the run wrote.
    study: Study,
    /// Trials and searches in this run, for `Progress`.
    total: usize,
    started: Instant,
    counts: Counts,
}

impl Run<'_> {
    fn interrupted(&self) -> bool {
        self.opts.interrupt.load(Ordering::Relaxed)
    }

    fn show(&self, p: &Progress) {
        if let Some(show) = &self.opts.progress {
            show(p);
        }
    }

    /// One trial through the lab, as the record the run keeps: its outcome
    /// (a server that died is a failure), the plan's checks, or the error
    /// that kept it from running.
    fn run_trial(&self, t: &PlannedTrial) -> StoredTrial {
        self.run_trial_by(t, run_trial)
    }

    /// [`Run::run_trial`] with the lab's part given: `lab` runs the
    /// trial's spec (a fresh server, or a window on a kept one).
    fn run_trial_by(
        &self,
        t: &PlannedTrial,
        lab: impl FnOnce(TrialSpec) -> Result<TrialRecord, TrialError>,
    ) -> StoredTrial {
        let (plan, opts) = (self.plan, self.opts);
        let spec = trial_spec(t, self.e, plan, opts, self.study.dir().work(&t.id), None);
        let live = crate::live::board();
        if let Some(board) = live {
            board.trial_started(live_labels(&plan.name, t));
        }
        let ran = lab(spec);
        if let Some(board) = live {
            board.trial_ended();
        }
        let (outcome, error, checks, trial) = match ran {
            Ok(rec) => {
                let outcome = if rec.interrupted {
                    Outcome::Interrupted
                } else if rec.server_exit.is_some() {
                    Outcome::Failed
                } else {
                    Outcome::Ok
                };
                let checks = crate::checks::evaluate_all(&plan.checks, &rec.load);
                (outcome, rec.server_exit.clone(), checks, Some(rec))
            }
            Err(err) => {
                let outcome = if self.interrupted() {
                    Outcome::Interrupted
                } else {
                    Outcome::Failed
                };
                (outcome, Some(err.to_string()), Vec::new(), None)
            }
        };
        StoredTrial {
            schema: STORED_SCHEMA.into(),
            id: t.id.clone(),
            group: t.group.clone(),
            repeat: t.repeat,
            outcome,
            error,
            planned: t.clone(),
            checks,
            trial,
        }
    }

    /// The break-point searches, numbered on from the `before` trials; a
    /// search cut short by Ctrl-C writes no record (a resume redoes it).
    fn breakpoints(
        &mut self,
        bp: &super::BreakpointSection,
        groups: &[PlannedTrial],
        before: usize,
    ) -> std::io::Result<()> {
        for (i, t) in groups.iter().enumerate() {
            if self.interrupted() {
                break;
            }
            if self.opts.resume && self.study.dir().breakpoint(&t.group).exists() {
                self.counts.existing += 1;
                continue;
            }
            self.show(&Progress::Breakpoint {
                n: before + i + 1,
                total: self.total,
                trial: t,
            });
            let live = crate::live::board();
            if let Some(board) = live {
                board.trial_started(live_labels(&self.plan.name, t));
            }
            let record = run_breakpoint(t, self.e, self.plan, bp, self.opts, self.study.dir());
            if let Some(board) = live {
                board.trial_ended();
            }
            let record = record?;
            self.show(&Progress::BreakpointDone(&record));
            if !self.interrupted() {
                self.study.write_breakpoint(&record)?;
                self.counts.done += 1;
            }
        }
        Ok(())
    }
}

/// A planned trial's labels on the live endpoint: `trial` is its group
/// (its name without the repeat, which is a label of its own).
fn live_labels(study: &str, t: &PlannedTrial) -> crate::live::TrialLabels {
    crate::live::TrialLabels {
        study: study.to_string(),
        trial: t.group.clone(),
        server: t.server.clone(),
        app: t.app.clone(),
        variant: t.variant.clone(),
        runtime: (t.runtime.clone()).unwrap_or_else(|| crate::runtime::SYSTEM.to_string()),
        repeat: t.repeat,
    }
}

/// The trial every step of a plan's break-point search starts from
/// (`TrialSpec::at_step` makes each step of it). A full step warms up as
/// the plan's [load] says (trial_spec takes it from there), like every
/// other trial of the plan; the loop is closed unless the step sets a
/// rate, whatever shape the representative trial had.
fn breakpoint_base(t: &PlannedTrial, e: &Expanded, plan: &Plan, opts: &RunOptions) -> TrialSpec {
    let mut spec = trial_spec(
        t,
        e,
        plan,
        opts,
        PathBuf::new(),
        Some((t.shape.connections, None)),
    );
    // A search's steps are not profiled (`profile = true` profiles the
    // plan's fixed-load trials only).
    spec.profile = None;
    spec
}

fn run_breakpoint(
    t: &PlannedTrial,
    e: &Expanded,
    plan: &Plan,
    bp: &super::BreakpointSection,
    opts: &RunOptions,
    dir: &ResultsDir,
) -> std::io::Result<StoredBreakpoint> {
    let rate_mode = bp.mode == "rate";
    let probe = crate::units::duration(&bp.probe).unwrap_or(Duration::from_secs(1));
    let cfg = SearchConfig::new(
        rate_mode,
        bp.start,
        bp.max,
        bp.growth,
        bp.resolution,
        bp.slo.as_deref().and_then(|s| search::parse_slo(s).ok()),
        probe,
    );
    let step_load = StepLoad {
        rate_mode,
        step: crate::units::duration(&bp.step_duration).unwrap_or(Duration::from_secs(5)),
        probe,
        rate_connections: Some(plan.load.rate_connections),
    };
    let base = breakpoint_base(t, e, plan, opts);
    let mut n = 0;
    let result = search::find_breakpoint(
        &cfg,
        |level, kind| {
            n += 1;
            let dir = dir.work(&format!("{}__bp{n}", t.group));
            match run_trial(base.at_step(&step_load, level, kind, dir)) {
                Ok(rec) => rec.as_step(level),
                Err(err) => StepResult::failed(level, err.to_string()),
            }
        },
        || opts.interrupt.load(Ordering::Relaxed),
    );
    Ok(StoredBreakpoint {
        schema: search::SCHEMA.into(),
        group: t.group.clone(),
        server: t.server.clone(),
        variant: t.variant.clone(),
        app: t.app.clone(),
        behind: t.behind.clone(),
        mode: bp.mode.clone(),
        connections: if rate_mode { None } else { result.level },
        rate: if rate_mode { result.level } else { None },
        throughput_rps: result.throughput_rps,
        load_seconds: result.load_seconds,
        search: cfg,
        result,
        planned: Some(t.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::StepKind;

    /// A run's options that start nothing: no pinning, no output written.
    pub(super) fn options() -> RunOptions {
        RunOptions {
            out: PathBuf::from("/nonexistent"),
            resume: false,
            interrupt: Arc::new(AtomicBool::new(false)),
            server_cpus: Vec::new(),
            load_cpus: Vec::new(),
            progress: None,
            command: String::new(),
            seed: 0,
            telemetry: false,
            runtimes: Default::default(),
        }
    }

    #[test]
    fn shuffling_keeps_rounds_apart_and_a_seed_replays_its_order() {
        // (repeat, name): three rounds of eight.
        let trials: Vec<(u32, u32)> = (1..=3).flat_map(|r| (0..8).map(move |n| (r, n))).collect();
        let shuffled = |seed| {
            let mut t = trials.clone();
            shuffle_rounds(&mut t, |t| t.0, seed);
            t
        };
        let a = shuffled(42);
        assert_eq!(a, shuffled(42), "the same seed, the same order");
        assert_ne!(a, shuffled(43), "another seed, another order");
        assert_ne!(a, trials, "the order changed");
        for (i, chunk) in a.chunks(8).enumerate() {
            assert!(
                chunk.iter().all(|t| t.0 == i as u32 + 1),
                "round {i}: {chunk:?}"
            );
            let mut names: Vec<u32> = chunk.iter().map(|t| t.1).collect();
            names.sort_unstable();
            assert_eq!(names, (0..8).collect::<Vec<_>>(), "each trial once");
        }
        let orders: Vec<&[(u32, u32)]> = a.chunks(8).collect();
        assert!(
            orders[0]
                .iter()
                .map(|t| t.1)
                .ne(orders[1].iter().map(|t| t.1)),
            "each round has its own order"
        );
        // Pinned: a seed must replay the same order in later versions too.
        let names: Vec<u32> = shuffled(7)[..8].iter().map(|t| t.1).collect();
        assert_eq!(names, [1, 4, 5, 2, 6, 0, 3, 7], "the generator changed");
    }

    #[test]
    fn full_break_point_steps_warm_up_as_the_plans_load_says() {
        let text = "name = \"b\"\nservers = [\"puma\"]\napps = [\"hello\"]\n[load]\nwarmup = \"3s\"\n[breakpoint]\nstart = 50\n";
        let plan = Plan::parse(text, "b.toml").unwrap();
        let e = plan
            .expand(text, "b.toml", &crate::server::spec::Registry::builtin())
            .unwrap();
        let groups = breakpoint_groups(&e);
        if !crate::require::require(
            "puma",
            !groups.is_empty(),
            "apt-get install puma, or scripts/deps.sh test",
        ) {
            return;
        }
        let t = groups.into_iter().next().expect("checked above");
        let opts = RunOptions {
            out: std::env::temp_dir(),
            ..options()
        };
        let step = StepLoad {
            rate_mode: false,
            step: Duration::from_secs(5),
            probe: Duration::from_millis(500),
            rate_connections: Some(plan.load.rate_connections),
        };
        let base = breakpoint_base(&t, &e, &plan, &opts);
        let full = base.at_step(&step, 40.0, StepKind::Full, "d".into());
        assert_eq!(full.load.warmup, Duration::from_secs(3));
        assert_eq!(full.load.duration, Some(Duration::from_secs(5)));
        assert_eq!(full.load.connections, 40);
        assert!(full.stop_on_errors);
        let probe = base.at_step(&step, 40.0, StepKind::Probe, "d".into());
        assert_eq!(probe.load.warmup, Duration::ZERO);
        assert_eq!(probe.load.duration, Some(Duration::from_millis(500)));
    }
}
