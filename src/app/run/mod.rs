//! Running a plan (`rackbench run`, and `sweep` through it): read and
//! expand it, settle the results directory and the seed, say what will
//! run (or list it and stop), run it, then say the summary, write the
//! report and choose the exit code. An A/A run narrows the plan to its
//! control twice (`aa`); what it says is made in `progress`.
//!
//! In two steps, [`prepare`] and [`execute`], so the command line can
//! check a resumed directory between them.

pub mod aa;
pub mod progress;
pub mod resume;

use super::sink::Sink;
use super::usage::usage;
use crate::plan::runner::{run_plan, RunOptions};
use crate::plan::{Plan, DEFAULT_PLAN};
use crate::server::spec::Registry;
use crate::store::ResultsDir;
use aa::{aa_compare, aa_variants, Aa};
use anyhow::Result;
use progress::{announce, summary_text};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A plan as read: the typed plan, its text (for messages at a line, and
/// kept as plan.toml) and its name for messages.
pub struct PlanSource {
    pub plan: Plan,
    pub text: String,
    pub file: String,
}

/// The plan file, or the built-in plan; a fit's plan is refused (it is
/// `rackbench fit`'s).
pub fn read_plan(path: Option<&Path>) -> Result<PlanSource> {
    let source = match path {
        Some(p) => {
            let (plan, text) = Plan::load(p).map_err(|e| usage(e.to_string()))?;
            PlanSource {
                plan,
                text,
                file: p.display().to_string(),
            }
        }
        None => PlanSource {
            plan: Plan::parse(DEFAULT_PLAN, "default plan").expect("the default plan parses"),
            text: DEFAULT_PLAN.to_string(),
            file: "default plan".to_string(),
        },
    };
    if source.plan.fit.is_some() {
        return Err(usage(format!(
            "{0}: this plan is a fit: run `rackbench fit {0}`",
            source.file
        )));
    }
    Ok(source)
}

/// What a run is asked besides its plan.
pub struct RunRequest {
    /// The plan file named on the command line (for the replay command).
    pub plan_path: Option<PathBuf>,
    /// The results directory [default: results/PLAN-DATE-TIME].
    pub out: Option<PathBuf>,
    pub resume: bool,
    pub seed: Option<u64>,
    /// The servers: the built-in ones and those of `servers_files`.
    pub registry: Registry,
    pub servers_files: Vec<PathBuf>,
    /// Pin the servers and the generator to separate CPUs.
    pub pin: bool,
    pub dry_run: bool,
    /// An A/A run: the control variant (None: the plan's first) and the
    /// seed of the comparison after it.
    pub aa: Option<(Option<String>, u64)>,
    pub telemetry: bool,
    /// The flags in place of the plan's keys (`Plan::apply`).
    pub overrides: crate::plan::Overrides,
}

/// A plan expanded and checked, with its results directory settled.
pub struct Prepared {
    pub source: PlanSource,
    pub expanded: crate::plan::Expanded,
    runtimes: crate::runtime::Registry,
    aa: Option<Aa>,
    /// Where the results go.
    pub out: PathBuf,
    req: RunRequest,
}

/// Expand and check the plan (an A/A run narrows it to the control
/// twice) and settle the results directory: one that holds a run is
/// refused unless resumed.
pub fn prepare(mut source: PlanSource, req: RunRequest) -> Result<Prepared> {
    let (plan, text, file) = (&mut source.plan, &source.text, &source.file);
    plan.apply(&req.overrides, file).map_err(usage)?;
    let mut expanded = plan
        .expand(text, file, &req.registry)
        .map_err(|e| usage(e.to_string()))?;
    let runtimes = plan
        .runtime_registry(text, file)
        .map_err(|e| usage(e.to_string()))?;
    if let Some(name) = req
        .overrides
        .runtime
        .as_deref()
        .filter(|n| !runtimes.knows(n))
    {
        return Err(usage(format!(
            "--runtime {name}: {}",
            crate::runtime::RuntimeError::Unknown {
                name: name.into(),
                known: runtimes.known()
            }
        )));
    }
    plan.check_runtime_names(text, file, &expanded, &runtimes)
        .map_err(|e| usage(e.to_string()))?;
    let aa = match &req.aa {
        Some((control, seed)) => {
            let (first, second) =
                aa_variants(plan, &mut expanded, control.as_deref()).map_err(usage)?;
            Some(Aa {
                first,
                second,
                seed: *seed,
            })
        }
        None => None,
    };
    let out = req
        .out
        .clone()
        .unwrap_or_else(|| default_out(&plan.name, &crate::host::utc_now()));
    if !req.resume && ResultsDir::new(&out).holds_run() {
        return Err(usage(format!(
            "{} already holds a run: add --resume to continue it, or choose another --out",
            out.display()
        )));
    }
    Ok(Prepared {
        source,
        expanded,
        runtimes,
        aa,
        out,
        req,
    })
}

/// Settle the seed, say what will run (or list it and stop, on a dry
/// run), run it, then say the summary, write the report and choose the
/// exit code.
pub fn execute(p: Prepared, sink: Arc<dyn Sink>) -> Result<ExitCode> {
    let Prepared {
        source,
        mut expanded,
        runtimes,
        aa,
        out,
        req,
    } = p;
    let (plan, text, file) = (&source.plan, &source.text, &source.file);
    let results = ResultsDir::new(&out);
    // Read once: the seed of a resumed run, and the runner's records.
    let study = crate::store::study::Study::read(results.clone());
    let seed = if req.resume {
        resumed_seed(&study, req.seed)?
    } else {
        req.seed
    };
    let seed = seed.unwrap_or_else(crate::plan::runner::fresh_seed);
    for line in announce(plan, &expanded) {
        sink.note(&line);
    }
    if req.dry_run {
        // The order the run would take with this seed.
        let mut order: Vec<&crate::plan::PlannedTrial> = expanded.trials.iter().collect();
        crate::plan::runner::shuffle_rounds(&mut order, |t| t.repeat, seed);
        sink.note(&format!("seed {seed}"));
        for t in order {
            sink.out(&format!("{}\n", t.id));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if expanded.trials.is_empty() {
        return Err(usage("the plan has no trial to run here: none of its servers is installed (see `rackbench servers`)".into()));
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    super::os::stop_on_signals(&interrupt, false);
    crate::load::raise_open_files_limit();
    let resolved = resolve_runtimes(plan, text, file, &mut expanded, &runtimes, &*sink)?;
    let (server_cpus, load_cpus) = if req.pin {
        super::os::default_pinning()
    } else {
        (Vec::new(), Vec::new())
    };
    let command = replay_command(&req, &out, seed);
    sink.note(&format!(
        "seed {seed} (the order of trials within each round; --seed {seed} replays it)"
    ));
    copy_servers_files(&results, &req.servers_files)?;
    let shown = Arc::clone(&sink);
    let opts = RunOptions {
        out: out.clone(),
        resume: req.resume,
        interrupt,
        server_cpus,
        load_cpus,
        progress: Some(Arc::new(move |p: &crate::plan::runner::Progress| {
            shown.progress(p)
        })),
        command: command.clone(),
        seed,
        telemetry: req.telemetry,
        runtimes: resolved,
    };
    let mut result = run_plan(plan, text, &expanded, &opts, study)?;
    if !result.summary.is_empty() {
        sink.out(&summary_text(&result.study, &result.summary));
    }
    sink.out(&format!("results: {}\n", out.display()));
    if let Some(aa) = &aa {
        aa_compare(&out, aa, plan.primary_metric.as_deref(), &*sink);
        result.study.reread_comparison();
    }
    // The report is rebuilt from the records as written; a failure here
    // loses no result.
    match crate::report::write_study(&result.study, None) {
        Ok(w) => sink.out(&format!("report:  {}\n", w.html.display())),
        Err(e) => sink.note(&format!(
            "warning: could not write the report ({e}); try `rackbench report {}`",
            out.display()
        )),
    }
    Ok(exit_code(&result, &out, &command, &*sink))
}

/// What a use case that runs its own trials from a prepared plan (the
/// A/B) starts from, as `execute` starts a run: the runtimes resolved,
/// Ctrl-C caught, the CPUs pinned, the seed settled and the progress on
/// the sink. A resume is not one of them.
pub fn options(p: &mut Prepared, sink: &Arc<dyn Sink>, command: &str) -> Result<RunOptions> {
    let seed = p.req.seed.unwrap_or_else(crate::plan::runner::fresh_seed);
    let interrupt = Arc::new(AtomicBool::new(false));
    super::os::stop_on_signals(&interrupt, false);
    crate::load::raise_open_files_limit();
    let (plan, text, file) = (&p.source.plan, &p.source.text, &p.source.file);
    let resolved = resolve_runtimes(plan, text, file, &mut p.expanded, &p.runtimes, &**sink)?;
    let (server_cpus, load_cpus) = if p.req.pin {
        super::os::default_pinning()
    } else {
        (Vec::new(), Vec::new())
    };
    copy_servers_files(&ResultsDir::new(&p.out), &p.req.servers_files)?;
    let shown = Arc::clone(sink);
    Ok(RunOptions {
        out: p.out.clone(),
        resume: false,
        interrupt,
        server_cpus,
        load_cpus,
        progress: Some(Arc::new(move |p: &crate::plan::runner::Progress| {
            shown.progress(p)
        })),
        command: command.to_string(),
        seed,
        telemetry: p.req.telemetry,
        runtimes: resolved,
    })
}

/// Keep a plan's text in the results directory as `name` (the sweep's
/// plan, which its replay command runs).
pub fn keep_plan(out: &Path, name: &str, text: &str) -> Result<()> {
    use anyhow::Context;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let file = out.join(name);
    std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))
}

/// `results/PLAN-YYYYMMDD-HHMMSS` from the plan's name and a UTC stamp
/// such as `2026-11-23T18:16:03Z`.
pub fn default_out(plan_name: &str, utc_stamp: &str) -> PathBuf {
    let stamp = utc_stamp
        .replace([':', '-'], "")
        .replace('T', "-")
        .trim_end_matches('Z')
        .to_string();
    PathBuf::from("results").join(format!("{plan_name}-{stamp}"))
}

/// The seed a resumed run keeps: the run's own (so the remaining trials
/// keep its order); a different `--seed` is a usage error.
fn resumed_seed(study: &crate::store::study::Study, given: Option<u64>) -> Result<Option<u64>> {
    let stored = study.seed();
    if let (Some(given), Some(stored)) = (given, stored) {
        if given != stored {
            return Err(usage(format!(
                "--seed {given} differs from the run's seed {stored} in {}: drop --seed to resume it",
                study.dir().manifest().display()
            )));
        }
    }
    Ok(given.or(stored))
}

/// Every runtime the plan names, once, before the first trial (a Debian
/// root is built on first use); what one cannot do is refused at the
/// plan's line, and a server one lacks is skipped and listed.
fn resolve_runtimes(
    plan: &Plan,
    text: &str,
    file: &str,
    expanded: &mut crate::plan::Expanded,
    runtimes: &crate::runtime::Registry,
    sink: &dyn Sink,
) -> Result<crate::plan::runtimes::Resolved> {
    let skipped_before = expanded.skipped.len();
    let resolved = plan
        .check_runtimes(text, file, expanded, &mut |name| {
            runtimes.resolve(name, &mut |m| sink.note(m))
        })
        .map_err(|e| usage(e.to_string()))?;
    for s in &expanded.skipped[skipped_before..] {
        sink.note(&format!("  skipped: {s}"));
    }
    Ok(resolved)
}

/// The command that replays this run (kept in the manifest, and printed
/// with `--resume` added when the run is interrupted).
fn replay_command(req: &RunRequest, out: &Path, seed: u64) -> String {
    let mut command = format!(
        "rackbench run {} --out {}",
        req.plan_path
            .as_ref()
            .map_or(String::new(), |p| p.display().to_string()),
        out.display()
    );
    for f in &req.servers_files {
        let abs = std::path::absolute(f).unwrap_or_else(|_| f.clone());
        command.push_str(&format!(" --servers-file {}", abs.display()));
    }
    if let Some(m) = &req.overrides.mix {
        let abs = std::path::absolute(m).unwrap_or_else(|_| m.clone());
        command.push_str(&format!(" --mix {}", abs.display()));
    }
    if !req.pin {
        command.push_str(" --no-pin");
    }
    if req.telemetry {
        command.push_str(" --telemetry");
    }
    if req.overrides.profile {
        command.push_str(" --profile");
    }
    if let Some(r) = &req.overrides.runtime {
        command.push_str(&format!(" --runtime {r}"));
    }
    if req.overrides.switches.yjit == Some(true) {
        command.push_str(" --yjit");
    }
    if let Some(a) = req.overrides.switches.allocator {
        command.push_str(&format!(" --allocator {a}"));
    }
    if let Some(n) = req.overrides.switches.malloc_arena_max {
        command.push_str(&format!(" --malloc-arena-max {n}"));
    }
    command.push_str(&format!(" --seed {seed}"));
    command
}

/// 130 when interrupted (with the command that resumes), 1 when a trial
/// failed or missed a check (saying where the records are), else 0.
fn exit_code(
    result: &crate::plan::runner::RunResult,
    out: &Path,
    command: &str,
    sink: &dyn Sink,
) -> ExitCode {
    if result.interrupted {
        sink.note(&format!(
            "interrupted: {} trials are saved; resume with:\n  {} --resume",
            result.done,
            command.replace("  ", " ")
        ));
        return ExitCode::from(130);
    }
    if result.failed > 0 {
        sink.note(&format!(
            "{} trial(s) failed; their records in {}/trials say why",
            result.failed,
            out.display()
        ));
    }
    if result.checks_missed > 0 {
        sink.note(&format!(
            "{} trial(s) missed a check of the plan; their records in {}/trials list each check",
            result.checks_missed,
            out.display()
        ));
    }
    if result.failed > 0 || result.checks_missed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Keeps a copy of each servers file beside the results (what the run
/// used, and what a resume is compared with). A file is rewritten only
/// when it differs, so naming the copy itself is harmless.
fn copy_servers_files(results: &ResultsDir, files: &[PathBuf]) -> Result<()> {
    std::fs::create_dir_all(&results.root)?;
    for (i, f) in files.iter().enumerate() {
        let text = std::fs::read_to_string(f)
            .map_err(|e| usage(format!("cannot read --servers-file {}: {e}", f.display())))?;
        let copy = results.servers_file(i + 1);
        if std::fs::read_to_string(&copy).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&copy, text)?;
        }
    }
    Ok(())
}
