//! Runs an expanded plan: one trial after another, each record written to
//! the results directory the moment it ends; break-point searches when the
//! plan asks; a summary with the spread across repeats at the end. The
//! records themselves are `store::records`, the summary `store::summary`.
//!
//! Ctrl-C stops the current server (the trial's own cleanup), keeps every
//! record already written, and the caller prints how to resume.

use super::{Expanded, Plan, PlannedTrial};
use crate::host::utc_now;
use crate::lab::apps::AppSpec;
use crate::lab::environment::Environment;
use crate::lab::trial::{run_trial, TrialSpec};
use crate::load::{LoadConfig, Pacing};
use crate::search::{self, SearchConfig, StepLoad, StepResult};
use crate::store::records::{
    Manifest, Outcome, StoredBreakpoint, StoredTrial, RUN_SCHEMA, STORED_SCHEMA, SUMMARY_SCHEMA,
};
use crate::store::summary::{summarize, GroupSummary};
use crate::store::{self, ResultsDir};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the runner needs besides the plan.
pub struct RunOptions {
    pub out: PathBuf,
    pub resume: bool,
    pub interrupt: Arc<AtomicBool>,
    pub server_cpus: Vec<usize>,
    pub load_cpus: Vec<usize>,
    /// Told of each trial and search as it starts and ends (the CLI prints
    /// it); the runner itself never prints.
    pub progress: Option<fn(&Progress)>,
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
}

/// What starting and stopping a trial's server costs beside its load,
/// seconds, as measured on the 2-core VM: 72 puma trials of 2 s of load
/// took 197 s (0.75 s each beyond it); a plan of 1 s trials without
/// warm-up took about 1 s more than its load for unicorn and thin, 2.5 s
/// for passenger and 13 s for jruby-jetty (the JVM's start). A server not
/// listed (a user's own) is taken for [`START_AND_STOP_OTHER_S`].
const START_AND_STOP_S: &[(&str, f64)] = &[
    ("puma", 0.75),
    ("unicorn", 1.0),
    ("thin", 1.0),
    ("webrick", 1.0),
    ("uwsgi", 1.0),
    ("passenger", 2.5),
    ("jruby-jetty", 13.0),
];
const START_AND_STOP_OTHER_S: f64 = 1.5;

/// The run's own cost beyond its trials (the reports written at its end):
/// a plan of one 1 s puma trial with 2 s of warm-up took 4.5 s.
const RUN_S: f64 = 1.0;

fn start_and_stop(server: &str) -> Duration {
    let s = START_AND_STOP_S
        .iter()
        .find(|(name, _)| *name == server)
        .map_or(START_AND_STOP_OTHER_S, |(_, s)| *s);
    Duration::from_secs_f64(s)
}

/// About how long the plan will take: each trial's load (a soak's window
/// in a soak) with the start and stop of its server, each break-point
/// search's steps, and the run's reports. It was "about 1 min" for a 1 s
/// trial that took 3.6 s: a flat 3 s per start, rounded up to minutes.
pub fn estimate(e: &Expanded, plan: &Plan) -> Duration {
    let load = e.warmup + e.soak.unwrap_or(e.duration);
    let fixed = plan.breakpoint.as_ref().is_none_or(|b| b.and_fixed_loads);
    let mut total = Duration::from_secs_f64(RUN_S);
    if fixed {
        total += e
            .trials
            .iter()
            .map(|t| load + start_and_stop(&t.server))
            .sum::<Duration>();
    }
    if let Some(bp) = &plan.breakpoint {
        let step = crate::units::duration(&bp.step_duration).unwrap_or(Duration::from_secs(5))
            + Duration::from_secs(3);
        total += step * 8 * breakpoint_groups(e).len() as u32;
    }
    total
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

pub(super) fn trial_spec(
    t: &PlannedTrial,
    e: &Expanded,
    plan: &Plan,
    opts: &RunOptions,
    dir: PathBuf,
    shape_override: Option<(usize, Option<f64>)>,
) -> TrialSpec {
    let mut load = LoadConfig::get("http://127.0.0.1:1/").expect("static URL");
    let (connections, rate) = shape_override.unwrap_or((t.shape.connections, t.shape.rate));
    load.connections = connections;
    load.pacing = rate.map_or(Pacing::Closed, Pacing::Rate);
    load.duration = Some(e.duration);
    load.warmup = e.warmup;
    load.warmup_until_steady = plan.load.warmup_until_steady;
    load.timeout = e.timeout;
    load.keep_alive = plan.load.keep_alive;
    load.threads = plan.load.threads;
    load.cpus = opts.load_cpus.clone();
    if let Some(schedule) = &e.replay {
        // Every trial replays the same record (once, or looped for the
        // trial's duration).
        Arc::clone(schedule).drive(&mut load);
    }
    // Rendered for each trial's front by the lab; the run's seed draws
    // unless the mix file has its own.
    load.mix = e
        .mix
        .as_ref()
        .map(|m| Arc::new(m.as_ref().clone().with_run_seed(opts.seed)));
    // Only an open loop uses it (a closed loop has no schedule to be late
    // against); set whatever the shape, as a rate search's steps open the
    // loop later, in `at_step`.
    load.slack = e.slack;
    load.slow = t.slow_clients.map(|n| plan.load.slow_of(n));
    let soak = e.soak.map(|d| crate::lab::soak::Soak::new(d, rate));
    if let Some(s) = &soak {
        s.apply(&mut load);
    }
    let server = t.spec.clone().expect("expanded trials carry their spec");
    let app = AppSpec::resolve(&t.app).expect("checked at expansion");
    // A plan of several apps may set one app's setting (the blog's pool)
    // and name its database: each goes only to the trials of that app.
    let settings = t
        .settings
        .iter()
        .filter(|(k, _)| {
            server.settings.contains_key(*k) || app.settings().iter().any(|a| a.name == k.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let database = plan
        .database
        .as_deref()
        .and_then(|d| d.parse().ok())
        .filter(|_| app.needs_database());
    TrialSpec {
        server,
        app,
        workers: t.workers,
        threads: t.threads,
        settings,
        env: t.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        topology: t.topology(),
        load,
        server_cpus: opts.server_cpus.clone(),
        start_timeout: None,
        grace: Duration::from_secs(10),
        dir,
        interrupt: Arc::clone(&opts.interrupt),
        sample_interval: Duration::from_millis(200),
        stop_on_errors: false,
        telemetry: plan.telemetry || opts.telemetry,
        runtime: super::runtimes::runtime_of(t).and_then(|n| opts.runtimes.get(n).cloned()),
        switches: t.switches,
        budget: t.budget,
        restart: t.restart.as_ref().map(|r| r.spec()),
        soak,
        database,
    }
}

fn already_done(path: &std::path::Path) -> Option<StoredTrial> {
    store::read_json::<StoredTrial>(path)
        .ok()
        .filter(|t| t.outcome != Outcome::Interrupted)
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
/// last the summary.
pub fn run_plan(
    plan: &Plan,
    plan_text: &str,
    e: &Expanded,
    opts: &RunOptions,
) -> std::io::Result<RunResult> {
    let dir = ResultsDir::new(&opts.out);
    std::fs::create_dir_all(&dir.root)?;
    if !opts.resume || !dir.plan().exists() {
        std::fs::write(dir.plan(), plan_text)?;
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
        store::write_json(
            &dir.manifest(),
            &manifest(plan, e, opts, &trials, &bp_groups),
        )?;
    }
    let mut run = Run {
        plan,
        e,
        opts,
        dir,
        total: trials.len() + bp_groups.len(),
        started: Instant::now(),
        counts: Counts::default(),
    };
    run.trials(&trials)?;
    if let Some(bp) = &plan.breakpoint {
        run.breakpoints(bp, &bp_groups, trials.len())?;
    }
    let summary = summarize(&run.dir)?;
    store::write_json(
        &run.dir.root.join("summary.json"),
        &serde_json::json!({ "schema": SUMMARY_SCHEMA, "groups": summary }),
    )?;
    let c = run.counts;
    Ok(RunResult {
        done: c.done,
        failed: c.failed,
        checks_missed: c.checks_missed,
        skipped_existing: c.existing,
        interrupted: opts.interrupt.load(Ordering::Relaxed),
        summary,
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
    dir: ResultsDir,
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
        if let Some(show) = self.opts.progress {
            show(p);
        }
    }

    /// The fixed-load trials in order; each record is written the moment
    /// its trial ends. A resume keeps every record that did not end
    /// interrupted.
    fn trials(&mut self, trials: &[&PlannedTrial]) -> std::io::Result<()> {
        for (n, t) in trials.iter().enumerate() {
            if self.interrupted() {
                break;
            }
            let path = self.dir.trial(&t.id);
            if let Some(old) = self.opts.resume.then(|| already_done(&path)).flatten() {
                self.counts.existing += 1;
                self.counts.failed += usize::from(old.outcome == Outcome::Failed);
                self.counts.checks_missed += usize::from(old.checks_missed() > 0);
                continue;
            }
            let done = self.counts.done;
            let eta = if done > 0 {
                self.started.elapsed() / done as u32 * (self.total - n) as u32
            } else {
                Duration::ZERO
            };
            self.show(&Progress::Trial {
                n: n + 1,
                total: self.total,
                trial: t,
                eta,
            });
            let stored = self.run_trial(t);
            self.show(&Progress::TrialDone(&stored));
            self.counts.checks_missed += usize::from(stored.checks_missed() > 0);
            // Written now, whole or not at all: a later crash cannot lose it.
            store::write_json(&path, &stored)?;
            match stored.outcome {
                Outcome::Ok => self.counts.done += 1,
                Outcome::Failed => {
                    self.counts.done += 1;
                    self.counts.failed += 1
                }
                Outcome::Interrupted => {}
            }
        }
        Ok(())
    }

    /// One trial through the lab, as the record the run keeps: its outcome
    /// (a server that died is a failure), the plan's checks, or the error
    /// that kept it from running.
    fn run_trial(&self, t: &PlannedTrial) -> StoredTrial {
        let (plan, opts) = (self.plan, self.opts);
        let spec = trial_spec(t, self.e, plan, opts, self.dir.work(&t.id), None);
        let (outcome, error, checks, trial) = match run_trial(spec) {
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
            let path = self.dir.breakpoint(&t.group);
            if self.opts.resume && path.exists() {
                self.counts.existing += 1;
                continue;
            }
            self.show(&Progress::Breakpoint {
                n: before + i + 1,
                total: self.total,
                trial: t,
            });
            let record = run_breakpoint(t, self.e, self.plan, bp, self.opts, &self.dir)?;
            self.show(&Progress::BreakpointDone(&record));
            if !self.interrupted() {
                store::write_json(&path, &record)?;
                self.counts.done += 1;
            }
        }
        Ok(())
    }
}

/// The trial every step of a plan's break-point search starts from
/// (`TrialSpec::at_step` makes each step of it). A full step warms up as
/// the plan's [load] says (trial_spec takes it from there), like every
/// other trial of the plan; the loop is closed unless the step sets a
/// rate, whatever shape the representative trial had.
fn breakpoint_base(t: &PlannedTrial, e: &Expanded, plan: &Plan, opts: &RunOptions) -> TrialSpec {
    trial_spec(
        t,
        e,
        plan,
        opts,
        PathBuf::new(),
        Some((t.shape.connections, None)),
    )
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
    use crate::lab::trial::Topology;
    use crate::search::StepKind;

    /// A run's options that start nothing: no pinning, no output written.
    fn options() -> RunOptions {
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

    /// A plan of the blog and another app: the database and the pool go
    /// to the blog's trials only (the other app would refuse both).
    #[test]
    fn a_plans_database_and_pool_reach_only_the_app_that_has_them() {
        let reg = super::super::tests::all_installed();
        let text = "name = \"t\"\napps = [\"hello\", \"blog\"]\ndatabase = \"postgres\"\n[[server]]\nname = \"puma\"\nsettings = { pool = \"2\" }\n[load]\nconnections = [4]\n";
        let plan = Plan::parse(text, "t.toml").unwrap();
        let e = plan.expand(text, "t.toml", &reg).unwrap();
        let specs: Vec<TrialSpec> = e
            .trials
            .iter()
            .map(|t| trial_spec(t, &e, &plan, &options(), PathBuf::from("/x"), None))
            .collect();
        let of = |app: &str| specs.iter().find(|s| s.app.name == app).unwrap();
        assert_eq!(of("blog").database, Some(crate::database::Kind::Postgres));
        assert_eq!(
            of("blog").settings.get("pool").map(String::as_str),
            Some("2")
        );
        assert_eq!(of("hello").database, None);
        assert!(!of("hello").settings.contains_key("pool"));
    }

    /// A plan's soak makes each trial's load the soak's window at the
    /// shape's rate (100 req/s for a closed-loop shape), and the run's
    /// estimate counts it.
    #[test]
    fn a_plans_soak_is_every_trials_window_and_its_estimate() {
        let reg = super::super::tests::all_installed();
        for (shape, rate) in [("rates = [250]", 250.0), ("connections = [4]", 100.0)] {
            let text = format!(
                "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\nsoak = \"2h\"\n[load]\n{shape}\nwarmup = \"5s\"\n"
            );
            let plan = Plan::parse(&text, "t.toml").unwrap();
            let e = plan.expand(&text, "t.toml", &reg).unwrap();
            let spec = trial_spec(
                &e.trials[0],
                &e,
                &plan,
                &options(),
                PathBuf::from("/x"),
                None,
            );
            let soak = spec.soak.expect("a soak");
            assert_eq!(soak.duration, Duration::from_secs(7200), "{shape}");
            assert_eq!(soak.rate_rps, rate, "{shape}");
            assert_eq!(spec.load.duration, Some(Duration::from_secs(7200)));
            assert_eq!(spec.load.requests, None);
            assert_eq!(spec.load.pacing, Pacing::Rate(rate), "{shape}");
            assert_eq!(
                estimate(&e, &plan),
                Duration::from_secs_f64(RUN_S)
                    + Duration::from_secs_f64(7205.0 + 0.75) * e.trials.len() as u32
            );
        }
    }

    /// Regression: a plan of one 1 s puma trial (2 s of warm-up) that took
    /// 3.6 s was announced as "about 1 min". Its estimate is its load, the
    /// server's start and stop and the run's reports; a server that starts
    /// a JVM costs more than its load.
    #[test]
    fn the_estimate_counts_each_servers_start_and_stop() {
        let reg = super::super::tests::all_installed();
        // (servers, the estimate in seconds)
        let rows: &[(&str, f64)] = &[
            ("\"puma\"", 1.0 + 3.0 + 0.75),
            ("\"puma\", \"jruby-jetty\"", 1.0 + 2.0 * 3.0 + 0.75 + 13.0),
        ];
        for (servers, want) in rows {
            let text = format!(
                "name = \"t\"\napps = [\"hello\"]\nservers = [{servers}]\n[load]\nconnections = [2]\nduration = \"1s\"\n"
            );
            let plan = Plan::parse(&text, "t.toml").unwrap();
            let e = plan.expand(&text, "t.toml", &reg).unwrap();
            let got = estimate(&e, &plan).as_secs_f64();
            assert!(
                (got - want).abs() < 1e-6,
                "{servers}: {got} s, not {want} s"
            );
        }
    }

    #[test]
    fn a_planned_trial_starts_behind_the_nginx_it_names() {
        let text = "name = \"t\"\napps = [\"ip\"]\nbehind = [\"nginx\"]\nnginx_workers = [2]\nnginx_keepalive = [\"off\"]\nnginx_http = [\"1.0\"]\n[[server]]\nname = \"thin\"\ninstances = [4]\n[load]\nconnections = [10]\n";
        let reg = super::super::tests::all_installed();
        let plan = Plan::parse(text, "t.toml").unwrap();
        let e = plan.expand(text, "t.toml", &reg).unwrap();
        let opts = options();
        let spec = trial_spec(&e.trials[0], &e, &plan, &opts, PathBuf::from("/x"), None);
        assert_eq!(
            spec.topology,
            Topology::Nginx {
                workers: 2,
                unix_socket: true,
                keepalive: 0,
                http_version: crate::lab::front::HttpVersion::V1_0,
                instances: 4,
            }
        );
    }

    #[test]
    fn the_plans_slack_reaches_its_rate_trials_and_rate_search_steps() {
        let reg = super::super::tests::all_installed();
        let text = "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nrates = [100]\nslack = \"2ms\"\n[breakpoint]\nmode = \"rate\"\nstart = 50\n";
        let plan = Plan::parse(text, "t.toml").unwrap();
        let e = plan.expand(text, "t.toml", &reg).unwrap();
        let opts = options();
        let two = Duration::from_millis(2);
        let spec = trial_spec(&e.trials[0], &e, &plan, &opts, PathBuf::from("/x"), None);
        assert_eq!(spec.load.pacing, Pacing::Rate(100.0));
        assert_eq!(spec.load.slack, two);
        let step = StepLoad {
            rate_mode: true,
            step: Duration::from_secs(5),
            probe: Duration::from_millis(500),
            rate_connections: Some(plan.load.rate_connections),
        };
        let base = breakpoint_base(&e.trials[0], &e, &plan, &opts);
        let full = base.at_step(&step, 400.0, StepKind::Full, "d".into());
        assert_eq!(full.load.pacing, Pacing::Rate(400.0));
        assert_eq!(full.load.slack, two);
    }

    /// `telemetry = true` in a plan, or `run --telemetry`, turns it on in
    /// every trial; neither leaves it off.
    #[test]
    fn telemetry_comes_from_the_plan_or_the_command_line() {
        let reg = super::super::tests::all_installed();
        let base =
            "name = \"t\"\napps = [\"hello\"]\nservers = [\"puma\"]\n[load]\nconnections = [2]\n";
        for (text, flag, want) in [
            (format!("telemetry = true\n{base}"), false, true),
            (base.to_string(), true, true),
            (base.to_string(), false, false),
        ] {
            let plan = Plan::parse(&text, "t.toml").unwrap();
            let e = plan.expand(&text, "t.toml", &reg).unwrap();
            let opts = RunOptions {
                telemetry: flag,
                ..options()
            };
            let spec = trial_spec(&e.trials[0], &e, &plan, &opts, PathBuf::from("/x"), None);
            assert_eq!(spec.telemetry, want, "{text} --telemetry {flag}");
        }
    }
}
