//! `rackbench sweep`: one variable at a time. From flags (`--server puma
//! --vary workers=1,2,4,8 --app fib`) or a plan file (its `[sweep]`, or
//! `--vary` in its place) `app::sweep` makes a plan with a `[sweep]`
//! section and runs it like `rackbench run` (interleaved, shuffled
//! rounds); this prints the sweep's analysis (stats::sweep). `--analyse
//! DIR` rebuilds the analysis of a finished run from disk alone.

use crate::app::run::RunRequest;
use crate::app::sink::Terminal;
use crate::app::sweep;
use crate::report::sweep as show;
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// A plan file; its [sweep] says what to vary unless --vary is given.
    pub plan: Option<PathBuf>,
    /// What to vary and its values, the first being the control:
    /// workers=1,2,4,8, threads=..., connections=..., nginx_workers=...,
    /// app=hello,fib, runtime=system,debian-13, yjit=false,true,
    /// allocator=glibc,jemalloc, malloc_arena_max=1,2,4, slow_clients=0,4,16,
    /// env.NAME=..., or
    /// a server setting (NAME=...).
    #[arg(long, value_name = "NAME=V1,V2,...")]
    pub vary: Option<String>,
    /// Rebuild and print the analysis of a finished sweep's results directory.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["plan", "server", "command"])]
    pub analyse: Option<PathBuf>,
    /// --server or --command, --app, --workers, --threads, --set, --env,
    /// --behind: the plan from flags, without a plan file.
    #[command(flatten)]
    pub made: super::flags::PlanServerFlags,
    /// Closed-loop connections (when not swept).
    #[arg(long, default_value_t = 10)]
    pub connections: usize,
    /// Counted load per trial.
    #[arg(long, default_value = "10s")]
    pub duration: String,
    /// Warm-up per trial.
    #[arg(long, default_value = "2s")]
    pub warmup: String,
    /// Repeats of each value (five or more let a rank test tell values apart).
    #[arg(long, default_value_t = 5)]
    pub repeats: u32,
    /// Results directory [default: results/sweep-VARY-DATE-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed of the shuffle within each round.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also read these server definitions.
    #[arg(long)]
    pub servers_file: Vec<PathBuf>,
    /// Do not pin the servers and the generator to separate CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// Telemetry in every trial (app time, queue time behind nginx, GC), as
    /// a plan's `telemetry = true`.
    #[arg(long)]
    pub telemetry: bool,
    /// Profile every trial with rbspy, as a plan's `profile = true`
    /// (docs/PROFILES.md).
    #[arg(long)]
    pub profile: bool,
    /// Print the trials the sweep expands to and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// --runtime, --yjit, --allocator, --malloc-arena-max: fixed for every
    /// value of the sweep (in place of a plan file's lists).
    #[command(flatten)]
    pub on: super::flags::RuntimeFlags,
    /// --memory, --cpus: one budget for every value of the sweep (in place
    /// of a plan file's `[budget]`).
    #[command(flatten)]
    pub budget: super::flags::BudgetFlags,
    /// --database: the blog app's database for every value (in place of
    /// a plan file's `database`).
    #[command(flatten)]
    pub database: super::flags::DatabaseFlags,
    /// --slow-clients, --slow-mode, --slow-bytes, --slow-every: the same
    /// slow clients beside every value (with `--vary slow_clients=0,4,16`
    /// the pace of each count).
    #[command(flatten)]
    pub slow: super::flags::SlowFlags,
    /// A request mix (docs/MIX_FORMAT.md) for every value of the sweep.
    #[arg(long, value_name = "FILE")]
    pub mix: Option<PathBuf>,
    /// Print the analysis as JSON (rackbench/sweep-v1) on stdout; the
    /// run's own lines go to stderr.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the analysis as Markdown.
    #[arg(long)]
    pub markdown: bool,
}

/// The analysis on stdout: JSON, Markdown or the terminal's text.
fn print(dir: &Path, args: &SweepArgs) -> Result<()> {
    let (s, json) = sweep::analysis(dir)?;
    if args.json {
        println!("{json}");
    } else if args.markdown {
        print!("{}", show::markdown(&s));
    } else {
        print!("\n{}", show::terminal(&s));
    }
    Ok(())
}

/// The sweep's plan (from flags, or a file), run by `app::sweep` with the
/// flags in place of its keys, then its analysis. With --json the run's
/// result lines go to stderr (the terminal sink's choice), so stdout
/// holds the document alone.
pub fn run(args: SweepArgs) -> Result<ExitCode> {
    if let Some(dir) = &args.analyse {
        print(dir, &args)?;
        return Ok(ExitCode::SUCCESS);
    }
    let plan = args.made.sweep_plan(
        args.plan.clone(),
        args.vary.clone(),
        (args.connections, args.duration.clone(), args.warmup.clone()),
        args.repeats,
    );
    let mut overrides =
        super::flags::plan_overrides(&args.on, &args.budget, &args.database, &args.slow)?;
    overrides.mix = args.mix.clone();
    overrides.profile = args.profile;
    let source = sweep::plan(&plan, &overrides)?;
    let request = RunRequest {
        plan_path: None,
        out: args.out.clone(),
        resume: false,
        seed: args.seed,
        registry: crate::app::servers::registry(&args.servers_file)?,
        servers_files: args.servers_file.clone(),
        pin: !args.no_pin,
        dry_run: args.dry_run,
        aa: None,
        telemetry: args.telemetry,
        overrides,
    };
    let sink = Terminal {
        result_on_stderr: args.json,
    };
    let (code, finished) = sweep::run(source, &plan, request, Arc::new(sink))?;
    if let Some(out) = finished {
        print(&out, &args)?;
    }
    Ok(code)
}
