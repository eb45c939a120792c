//! `rackbench ab`: is B better than A, by how much, and can I stop?
//! Paired rounds until the answer is known (`app::ab`). The sides come
//! from `--vary NAME=A,B` over trial-like flags (or a plan file), or from
//! a plan and `--a`/`--b` selections of its groups; the verdict is printed
//! (or, with --json, the rackbench/ab-v1 document) and kept as ab.json in
//! a results directory that `report` and `compare` read.

use super::parse;
use crate::app::ab::{self, AbRequest, Sides};
use crate::app::run::RunRequest;
use crate::app::sink::Terminal;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct AbArgs {
    /// A plan file: with --a and --b, two of its groups; with --vary, the
    /// base the two values are put in.
    pub plan: Option<PathBuf>,
    /// What differs and its two values, A then B: workers=2,3,
    /// env.RUBY_GC_MALLOC_LIMIT=16000000,64000000, runtime=system,debian-13,
    /// yjit=false,true, a server setting (NAME=...), ...
    #[arg(long, value_name = "NAME=A,B", conflicts_with_all = ["a", "b"])]
    pub vary: Option<String>,
    /// With a plan: side A, a selection of one of its groups
    /// (label=control, server=puma, app=NAME, runtime=NAME, yjit=true|false,
    /// connections=N).
    #[arg(long, value_name = "SELECTION", requires_all = ["plan", "b"])]
    pub a: Option<String>,
    /// With a plan: side B, as --a.
    #[arg(long, value_name = "SELECTION", requires_all = ["plan", "a"])]
    pub b: Option<String>,
    /// The same configuration on both sides, on purpose (an A/A: what this
    /// machine's noise calls a difference).
    #[arg(long)]
    pub aa: bool,
    /// --server or --command, --app, --workers, --threads, --set, --env,
    /// --behind: the plan from flags, without a plan file.
    #[command(flatten)]
    pub made: super::flags::PlanServerFlags,
    /// Closed-loop connections.
    #[arg(short = 'c', long, default_value_t = 10)]
    pub connections: usize,
    /// Each side's counted window in a round.
    #[arg(short = 'd', long, default_value = "3s", value_parser = parse::duration)]
    pub duration: Duration,
    /// Warm-up before each window (a fresh server each window).
    #[arg(long, default_value = "1s", value_parser = parse::duration)]
    pub warmup: Duration,
    /// --metric, --margin, --alpha, --max-load, --rerun-disturbed.
    #[command(flatten)]
    pub judge: super::flags::JudgeFlags,
    /// Start each side's server once and keep both running between their
    /// windows (the idle one waits on the same CPUs), instead of a fresh
    /// server per window: less spread between windows, but each side's
    /// process is one sample (docs/COMPARE.md says what that costs).
    #[arg(long)]
    pub keep_running: bool,
    /// Results directory [default: results/ab-...-DATE-TIME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed of the order drawn per round.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also read these server definitions.
    #[arg(long)]
    pub servers_file: Vec<PathBuf>,
    /// Do not pin the servers and the generator to separate CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// Telemetry in every window (app time, queue time, GC).
    #[arg(long)]
    pub telemetry: bool,
    /// Profile every window with rbspy (docs/PROFILES.md): each side's
    /// flame graph in the report.
    #[arg(long)]
    pub profile: bool,
    /// --runtime, --yjit, --allocator, --malloc-arena-max: on both sides.
    #[command(flatten)]
    pub on: super::flags::RuntimeFlags,
    /// --memory, --cpus: one budget for both sides.
    #[command(flatten)]
    pub budget: super::flags::BudgetFlags,
    /// --database: the blog app's database on both sides.
    #[command(flatten)]
    pub database: super::flags::DatabaseFlags,
    /// Print the rackbench/ab-v1 document on stdout (the rounds on stderr).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub metrics: super::flags::MetricsFlags,
}

/// Runs the A/B; 0 with a verdict (undecided at the budget included), 1
/// when a side failed, 130 when interrupted.
pub fn run(args: AbArgs) -> Result<ExitCode> {
    let live = args.metrics.start("ab")?;
    let mut overrides =
        super::flags::plan_overrides(&args.on, &args.budget, &args.database, &Default::default())?;
    overrides.profile = args.profile;
    let sides = match (&args.plan, &args.a, &args.b) {
        (Some(file), Some(a), Some(b)) => Sides::Select {
            file: file.clone(),
            a: a.clone(),
            b: b.clone(),
        },
        _ => Sides::Vary(Box::new(args.made.sweep_plan(
            args.plan.clone(),
            args.vary.clone(),
            (
                args.connections,
                format!("{}ms", args.duration.as_millis()),
                format!("{}ms", args.warmup.as_millis()),
            ),
            1,
        ))),
    };
    let req = AbRequest {
        sides,
        aa: args.aa,
        judge: args.judge.judge(),
        window: args.duration,
        keep_running: args.keep_running,
        run: RunRequest {
            plan_path: args.plan.clone(),
            out: args.out.clone(),
            resume: false,
            seed: args.seed,
            registry: crate::app::servers::registry(&args.servers_file)?,
            servers_files: args.servers_file.clone(),
            pin: !args.no_pin,
            dry_run: false,
            aa: None,
            telemetry: args.telemetry,
            overrides,
        },
    };
    let sink = Terminal {
        result_on_stderr: args.json,
    };
    let done = ab::run(req, Arc::new(sink))?;
    let doc = &done.doc;
    if args.json {
        println!("{}", serde_json::to_string_pretty(doc)?);
    } else {
        // The reason speaks the verdict ("B is 4.6% slower ...",
        // "undecided: ..."); the word is the JSON's.
        println!("{}", doc.reason);
        println!(
            "{} rounds ({} run again, disturbed), {:.0} s of counted load, {:.0} s in all",
            doc.rounds, doc.rounds_disturbed_rerun, doc.load_s, doc.wall_s
        );
        println!("results: {}", done.out.display());
        let report = crate::store::ResultsDir::new(&done.out).report_html();
        println!("report:  {}", report.display());
    }
    super::flags::finish_live(live);
    Ok(match doc.end.as_str() {
        "interrupted" => ExitCode::from(130),
        "failed" => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}
