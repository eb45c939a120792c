//! `rackbench run [PLAN]`: a whole study from one command.

use super::load::stop_on_signals;
use super::usage;
use crate::plan::runner::{run_plan, RunOptions};
use crate::plan::{Plan, DEFAULT_PLAN};
use crate::store::ResultsDir;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

mod aa;
mod progress;
mod resume;

use aa::{aa_compare, aa_variants};
use progress::{announce, print_progress, print_summary};
use resume::{check_resume, resumable, resumed_seed};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Plan file (TOML); without one, the built-in default plan.
    pub plan: Option<PathBuf>,
    /// Results directory [default: results/PLAN-DATE-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue an interrupted run in --out without redoing finished trials.
    #[arg(long, requires = "out")]
    pub resume: bool,
    /// Resume even though the plan or a servers file changed since the run began.
    #[arg(long, requires = "resume")]
    pub force_resume: bool,
    /// Seed of the shuffle within each round of repeats: replays a run's
    /// order [default: a fresh seed, printed and kept in manifest.json].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also read these server definitions.
    #[arg(long)]
    pub servers_file: Vec<PathBuf>,
    /// Do not pin the servers and the generator to separate CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// Print the trials the plan expands to and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// A/A run: the plan's control twice, as two labelled variants, then
    /// compared; shows the smallest difference this machine can resolve.
    #[arg(long)]
    pub aa: bool,
    /// With --aa: the variant to use as control [default: the plan's first].
    #[arg(long, requires = "aa", value_name = "VARIANT")]
    pub control: Option<String>,
    /// Telemetry in every trial, as the plan's `telemetry = true`: app
    /// time, queue time behind nginx, GC (docs/TELEMETRY.md).
    #[arg(long)]
    pub telemetry: bool,
    /// --runtime, --yjit, --allocator, --malloc-arena-max: each in place
    /// of the plan's list of that key.
    #[command(flatten)]
    pub on: super::trial::RuntimeFlags,
    /// --memory, --cpus: in place of the plan's `[budget]`.
    #[command(flatten)]
    pub budget: super::trial::BudgetFlags,
    /// --database: in place of the plan's `database`.
    #[command(flatten)]
    pub database: super::trial::DatabaseFlags,
    /// --slow-clients, --slow-mode, --slow-bytes, --slow-every: in place
    /// of the plan's `[load]` slow keys.
    #[command(flatten)]
    pub slow: super::load::SlowFlags,
    /// A request mix (docs/MIX_FORMAT.md) for every trial, in place of the
    /// plan's `[load] mix`.
    #[arg(long, value_name = "FILE")]
    pub mix: Option<PathBuf>,
    /// --restart, --restart-at: in place of the plan's `[restart]`.
    #[command(flatten)]
    pub restart: super::trial::RestartFlags,
    /// --soak: every trial a soak this long, in place of the plan's `soak`.
    #[command(flatten)]
    pub soak: super::trial::SoakFlags,
}

/// In steps: read and expand the plan (an A/A run narrows it to the
/// control twice), settle the results directory and the seed, say what
/// will run (or list it and stop, with --dry-run), run it, then print the
/// summary and report and choose the exit code.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let (mut plan, text, file) = read_plan(args.plan.as_ref())?;
    if plan.fit.is_some() {
        return Err(usage(format!(
            "{file}: this plan is a fit: run `rackbench fit {file}`"
        )));
    }
    let registry = super::servers::registry(&args.servers_file)?;
    override_plan(&args, &mut plan, &file)?;
    let mut expanded = plan
        .expand(&text, &file, &registry)
        .map_err(|e| usage(e.to_string()))?;
    let runtimes = plan
        .runtime_registry(&text, &file)
        .map_err(|e| usage(e.to_string()))?;
    if let Some(name) = args.on.runtime.as_deref().filter(|n| !runtimes.knows(n)) {
        return Err(usage(format!(
            "--runtime {name}: {}",
            crate::runtime::RuntimeError::Unknown {
                name: name.into(),
                known: runtimes.known()
            }
        )));
    }
    plan.check_runtime_names(&text, &file, &expanded, &runtimes)
        .map_err(|e| usage(e.to_string()))?;
    let aa = if args.aa {
        Some(aa_variants(&mut plan, &mut expanded, args.control.as_deref()).map_err(usage)?)
    } else {
        None
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&plan.name, &crate::host::utc_now()));
    if args.resume {
        resumable(&out).map_err(usage)?;
    }
    if !args.resume && ResultsDir::new(&out).holds_run() {
        return Err(usage(format!(
            "{} already holds a run: add --resume to continue it, or choose another --out",
            out.display()
        )));
    }
    let results = ResultsDir::new(&out);
    // Read once: resume's checks and the runner take it.
    let study = crate::store::study::Study::read(results.clone());
    let seed = if args.resume {
        check_resume(&study, &text, &args.servers_file, args.force_resume)?;
        resumed_seed(&study, args.seed)?
    } else {
        args.seed
    };
    let seed = seed.unwrap_or_else(crate::plan::runner::fresh_seed);
    announce(&plan, &expanded);
    if args.dry_run {
        // The order the run would take with this seed.
        let mut order: Vec<&crate::plan::PlannedTrial> = expanded.trials.iter().collect();
        crate::plan::runner::shuffle_rounds(&mut order, |t| t.repeat, seed);
        eprintln!("seed {seed}");
        for t in order {
            println!("{}", t.id);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if expanded.trials.is_empty() {
        return Err(usage("the plan has no trial to run here: none of its servers is installed (see `rackbench servers`)".into()));
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    stop_on_signals(&interrupt, false);
    crate::load::raise_open_files_limit();
    let resolved = resolve_runtimes(&plan, &text, &file, &mut expanded, &runtimes)?;
    let (server_cpus, load_cpus) = if args.no_pin {
        (Vec::new(), Vec::new())
    } else {
        super::trial::default_pinning()
    };
    let command = replay_command(&args, &out, seed);
    eprintln!("seed {seed} (the order of trials within each round; --seed {seed} replays it)");
    copy_servers_files(&results, &args.servers_file)?;
    let opts = RunOptions {
        out: out.clone(),
        resume: args.resume,
        interrupt,
        server_cpus,
        load_cpus,
        progress: Some(print_progress),
        command: command.clone(),
        seed,
        telemetry: args.telemetry,
        runtimes: resolved,
    };
    let mut result = run_plan(&plan, &text, &expanded, &opts, study)?;
    if !result.summary.is_empty() {
        print_summary(&result.study, &result.summary);
    }
    println!("results: {}", out.display());
    if let Some((first, second)) = &aa {
        aa_compare(&out, first, second, plan.primary_metric.as_deref());
        result.study.reread_comparison();
    }
    // The report is rebuilt from the records as written; a failure here
    // loses no result.
    match crate::report::write_study(&result.study, None) {
        Ok(w) => println!("report:  {}", w.html.display()),
        Err(e) => eprintln!(
            "warning: could not write the report ({e}); try `rackbench report {}`",
            out.display()
        ),
    }
    Ok(exit_code(&result, &out, &command))
}

/// `--mix FILE` in place of a plan's `[load] mix`: checked here, and
/// made absolute, since the plan reads a relative mix beside the plan
/// file while the flag is relative to the working directory. (`run`'s
/// and `fit`'s.)
pub(super) fn mix_over_plan(m: &std::path::Path) -> Result<String> {
    let m = std::path::absolute(m).map_err(|e| usage(format!("--mix {}: {e}", m.display())))?;
    // Its mistakes at the mix file's own line, not at a plan line that
    // does not hold it.
    crate::load::mix::Mix::load(&m).map_err(|e| usage(e.to_string()))?;
    Ok(m.display().to_string())
}

/// The flags that stand in for the plan's keys: --runtime, --yjit,
/// --allocator, --malloc-arena-max, --memory, --cpus and --soak (refused
/// beside a [breakpoint]: a soak is one fixed rate).
fn override_plan(args: &RunArgs, plan: &mut Plan, file: &str) -> Result<()> {
    crate::plan::runtimes::override_lists(
        plan,
        args.on.runtime.as_deref(),
        args.on.yjit.then_some(true),
        args.on.allocator,
        args.on.malloc_arena_max,
    );
    args.budget.override_plan(&mut plan.budget);
    args.database.override_plan(&mut plan.database);
    args.slow.override_plan(&mut plan.load)?;
    if let Some(m) = &args.mix {
        plan.load.mix = Some(mix_over_plan(m)?);
    }
    args.restart.override_plan(&mut plan.restart);
    if args.soak.soak.is_some() && plan.breakpoint.is_some() {
        return Err(usage(format!(
            "--soak runs every trial at one fixed rate, and {file} has a [breakpoint]: drop --soak, or use a plan without one"
        )));
    }
    args.soak.override_plan(&mut plan.soak)
}

/// The plan file (its text and name for messages), or the built-in plan.
fn read_plan(path: Option<&PathBuf>) -> Result<(Plan, String, String)> {
    Ok(match path {
        Some(p) => {
            let (plan, text) = Plan::load(p).map_err(|e| usage(e.to_string()))?;
            (plan, text, p.display().to_string())
        }
        None => (
            Plan::parse(DEFAULT_PLAN, "default plan").expect("the default plan parses"),
            DEFAULT_PLAN.to_string(),
            "default plan".to_string(),
        ),
    })
}

/// `results/PLAN-YYYYMMDD-HHMMSS` from the plan's name and a UTC stamp
/// such as `2026-11-23T18:16:03Z`.
fn default_out(plan_name: &str, utc_stamp: &str) -> PathBuf {
    let stamp = utc_stamp
        .replace([':', '-'], "")
        .replace('T', "-")
        .trim_end_matches('Z')
        .to_string();
    PathBuf::from("results").join(format!("{plan_name}-{stamp}"))
}

/// Every runtime the plan names, once, before the first trial (a Debian
/// root is built on first use); what one cannot do is refused at the
/// plan's line, and a server one lacks is skipped and listed.
fn resolve_runtimes(
    plan: &crate::plan::Plan,
    text: &str,
    file: &str,
    expanded: &mut crate::plan::Expanded,
    runtimes: &crate::runtime::Registry,
) -> Result<crate::plan::runtimes::Resolved> {
    let skipped_before = expanded.skipped.len();
    let resolved = plan
        .check_runtimes(text, file, expanded, &mut |name| {
            runtimes.resolve(name, &mut |m| eprintln!("{m}"))
        })
        .map_err(|e| usage(e.to_string()))?;
    for s in &expanded.skipped[skipped_before..] {
        eprintln!("  skipped: {s}");
    }
    Ok(resolved)
}

/// The command that replays this run (kept in the manifest, and printed
/// with `--resume` added when the run is interrupted).
fn replay_command(args: &RunArgs, out: &std::path::Path, seed: u64) -> String {
    let mut command = format!(
        "rackbench run {} --out {}",
        args.plan
            .as_ref()
            .map_or(String::new(), |p| p.display().to_string()),
        out.display()
    );
    for f in &args.servers_file {
        let abs = std::path::absolute(f).unwrap_or_else(|_| f.clone());
        command.push_str(&format!(" --servers-file {}", abs.display()));
    }
    if let Some(m) = &args.mix {
        let abs = std::path::absolute(m).unwrap_or_else(|_| m.clone());
        command.push_str(&format!(" --mix {}", abs.display()));
    }
    if args.no_pin {
        command.push_str(" --no-pin");
    }
    if args.telemetry {
        command.push_str(" --telemetry");
    }
    if let Some(r) = &args.on.runtime {
        command.push_str(&format!(" --runtime {r}"));
    }
    if args.on.yjit {
        command.push_str(" --yjit");
    }
    if let Some(a) = args.on.allocator {
        command.push_str(&format!(" --allocator {a}"));
    }
    if let Some(n) = args.on.malloc_arena_max {
        command.push_str(&format!(" --malloc-arena-max {n}"));
    }
    command.push_str(&format!(" --seed {seed}"));
    command
}

/// 130 when interrupted (with the command that resumes), 1 when a trial
/// failed or missed a check (saying where the records are), else 0.
fn exit_code(
    result: &crate::plan::runner::RunResult,
    out: &std::path::Path,
    command: &str,
) -> ExitCode {
    if result.interrupted {
        eprintln!(
            "interrupted: {} trials are saved; resume with:\n  {} --resume",
            result.done,
            command.replace("  ", " ")
        );
        return ExitCode::from(130);
    }
    if result.failed > 0 {
        eprintln!(
            "{} trial(s) failed; their records in {}/trials say why",
            result.failed,
            out.display()
        );
    }
    if result.checks_missed > 0 {
        eprintln!(
            "{} trial(s) missed a check of the plan; their records in {}/trials list each check",
            result.checks_missed,
            out.display()
        );
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
