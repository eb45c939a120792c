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
use crate::stats::sequential::{ALPHA, DEFAULT_MARGIN_PCT};
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

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
    /// Judge each value against the first by an A/B (as `rackbench ab`:
    /// paired rounds until the interval decides, or the budget), in
    /// place of --repeats; a verdict per value. With --dry-run, the
    /// sweep's trials are listed as without it.
    #[arg(long, conflicts_with = "analyse")]
    pub until_verdict: bool,
    /// With --until-verdict: the metric judged (throughput, p50, p99,
    /// cpu_per_request, ...).
    #[arg(long, default_value = "throughput", requires = "until_verdict")]
    pub metric: String,
    /// With --until-verdict: an interval inside ±margin percent is
    /// "equivalent".
    #[arg(long, default_value_t = DEFAULT_MARGIN_PCT, requires = "until_verdict")]
    pub margin: f64,
    /// With --until-verdict: the error rate of a verdict (0.05: 95%
    /// intervals).
    #[arg(long, default_value_t = ALPHA, requires = "until_verdict")]
    pub alpha: f64,
    /// With --until-verdict: counted load over both sides at most, per
    /// value; then "undecided".
    #[arg(long, default_value = "2m", value_parser = super::parse::duration, requires = "until_verdict")]
    pub max_load: Duration,
    /// With --until-verdict: a round whose window the machine disturbed
    /// runs again, at most this many times.
    #[arg(long, default_value_t = 3, requires = "until_verdict")]
    pub rerun_disturbed: u32,
    #[command(flatten)]
    pub metrics: super::flags::MetricsFlags,
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

/// The flags in place of the plan's keys.
fn overrides(args: &SweepArgs) -> Result<crate::plan::Overrides> {
    let mut o = super::flags::plan_overrides(&args.on, &args.budget, &args.database, &args.slow)?;
    o.mix = args.mix.clone();
    o.profile = args.profile;
    Ok(o)
}

/// The run's request: the sweep's, or one value's A/B's (into `out`).
fn request(
    args: &SweepArgs,
    out: Option<PathBuf>,
    overrides: crate::plan::Overrides,
) -> Result<RunRequest> {
    Ok(RunRequest {
        plan_path: None,
        out,
        resume: false,
        seed: args.seed,
        registry: crate::app::servers::registry(&args.servers_file)?,
        servers_files: args.servers_file.clone(),
        pin: !args.no_pin,
        dry_run: args.dry_run,
        aa: None,
        telemetry: args.telemetry,
        overrides,
    })
}

/// `--until-verdict`: each value against the first by an A/B
/// (`app::sweep_verdict`), then a verdict per value on stdout (JSON: an
/// array of the values' rackbench/ab-v1 documents). Exit 130 when
/// interrupted, 1 when a value's A/B failed.
fn until_verdict(
    args: &SweepArgs,
    plan: &sweep::SweepPlan,
    overrides: &crate::plan::Overrides,
) -> Result<ExitCode> {
    let judge = crate::app::ab::Judge {
        metric: args.metric.clone(),
        margin_pct: args.margin,
        alpha: args.alpha,
        max_load: args.max_load,
        rerun_disturbed: args.rerun_disturbed,
    };
    let sink = Terminal {
        result_on_stderr: args.json,
    };
    let done = crate::app::sweep_verdict::run(
        plan,
        overrides,
        &judge,
        args.out.clone(),
        |dir| request(args, Some(dir), overrides.clone()),
        Arc::new(sink),
    )?;
    let rows: Vec<(&str, &crate::ab::document::AbDocument)> = (done.values.iter())
        .map(|v| (v.value.as_str(), &v.doc))
        .collect();
    if args.json {
        let docs: Vec<_> = rows.iter().map(|(_, d)| d).collect();
        println!("{}", serde_json::to_string_pretty(&docs)?);
    } else if args.markdown {
        print!(
            "{}",
            crate::report::ab::sweep_markdown(&done.control, &rows)
        );
    } else {
        print!(
            "\n{}",
            crate::report::ab::sweep_terminal(&done.control, &rows)
        );
        println!("results: {}", done.out.display());
    }
    let ends: Vec<&str> = rows.iter().map(|(_, d)| d.end.as_str()).collect();
    Ok(if ends.contains(&"interrupted") {
        ExitCode::from(130)
    } else if ends.contains(&"failed") {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
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
    let overrides = overrides(&args)?;
    // A dry run starts nothing, the endpoint included.
    let live = match args.dry_run {
        true => None,
        false => args.metrics.start("sweep")?,
    };
    if args.until_verdict && !args.dry_run {
        let code = until_verdict(&args, &plan, &overrides)?;
        super::flags::finish_live(live);
        return Ok(code);
    }
    let source = sweep::plan(&plan, &overrides)?;
    let request = request(&args, args.out.clone(), overrides)?;
    let sink = Terminal {
        result_on_stderr: args.json,
    };
    let (code, finished) = sweep::run(source, &plan, request, Arc::new(sink))?;
    if let Some(out) = finished {
        print(&out, &args)?;
    }
    super::flags::finish_live(live);
    Ok(code)
}
