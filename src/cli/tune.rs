//! `rackbench tune gc`: the GC settings the server's own GC statistics
//! call for, each proven (or not) by an A/B against the control
//! (`app::tune`). Takes what `ab` takes from flags: the server, app,
//! workers, threads, env, runtime, budget and load.

use super::parse;
use crate::app::sink::Terminal;
use crate::app::tune::{self, TuneRequest};
use anyhow::Result;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct TuneArgs {
    #[command(subcommand)]
    pub what: TuneWhat,
}

#[derive(Debug, Subcommand)]
pub enum TuneWhat {
    /// The GC: a control with telemetry, proposals from its GC statistics
    /// (docs/TUNING.md), each A/B'd against the control, the kept ones
    /// together; ends with the line to paste or "nothing to gain".
    Gc(Box<GcArgs>),
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// A plan file with one [[server]] entry, in place of --server/--app.
    pub plan: Option<PathBuf>,
    /// --server or --command, --app, --workers, --threads, --set, --env,
    /// --behind.
    #[command(flatten)]
    pub made: super::flags::PlanServerFlags,
    /// Closed-loop connections.
    #[arg(short = 'c', long, default_value_t = 10)]
    pub connections: usize,
    /// The control trial's counted load (telemetry on).
    #[arg(long, default_value = "20s", value_parser = parse::duration)]
    pub control: Duration,
    /// Each A/B side's counted window in a round.
    #[arg(short = 'd', long, default_value = "3s", value_parser = parse::duration)]
    pub duration: Duration,
    /// Warm-up before each window and the control.
    #[arg(long, default_value = "2s", value_parser = parse::duration)]
    pub warmup: Duration,
    /// --metric (the A/Bs' primary: throughput or p99), --margin (a GC
    /// figure worse by more drops a proposal), --alpha, --max-load (of
    /// each A/B; "undecided" is never kept), --rerun-disturbed.
    #[command(flatten)]
    pub judge: super::flags::JudgeFlags,
    /// Results directory [default: results/tune-gc-DATE-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long)]
    pub servers_file: Vec<PathBuf>,
    #[arg(long)]
    pub no_pin: bool,
    /// --runtime, --yjit, --allocator, --malloc-arena-max.
    #[command(flatten)]
    pub on: super::flags::RuntimeFlags,
    #[command(flatten)]
    pub budget: super::flags::BudgetFlags,
    #[command(flatten)]
    pub database: super::flags::DatabaseFlags,
    /// Print the rackbench/tune-v1 document on stdout.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the Markdown form on stdout.
    #[arg(long)]
    pub markdown: bool,
}

pub fn run(args: TuneArgs) -> Result<ExitCode> {
    match args.what {
        TuneWhat::Gc(a) => gc(*a),
    }
}

fn gc(args: GcArgs) -> Result<ExitCode> {
    let overrides =
        super::flags::plan_overrides(&args.on, &args.budget, &args.database, &Default::default())?;
    let plan = args.made.sweep_plan(
        args.plan.clone(),
        None,
        (
            args.connections,
            format!("{}ms", args.duration.as_millis()),
            format!("{}ms", args.warmup.as_millis()),
        ),
        1,
    );
    let req = TuneRequest {
        plan,
        control: args.control,
        judge: args.judge.judge(),
        window: args.duration,
        out: args.out.clone(),
        seed: args.seed,
        registry: crate::app::servers::registry(&args.servers_file)?,
        servers_files: args.servers_file.clone(),
        pin: !args.no_pin,
        overrides,
    };
    let sink = Terminal {
        result_on_stderr: args.json || args.markdown,
    };
    let done = tune::run(req, Arc::new(sink))?;
    let d = &done.doc;
    if args.json {
        println!("{}", serde_json::to_string_pretty(d)?);
    } else if args.markdown {
        print!("{}", crate::tune::document::render_markdown(d));
    } else {
        print!("{}", crate::tune::document::render_text(d));
        println!("results: {}", done.out.display());
    }
    Ok(ExitCode::SUCCESS)
}
