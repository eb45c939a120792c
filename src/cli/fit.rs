//! `rackbench fit`: the workers × threads that give the most throughput
//! inside a memory (and CPU) budget, under a latency objective, with no
//! errors and no worker killed for memory. The flags become a trial's spec
//! (or a plan's overrides) and `app::fit` measures and searches. With a
//! plan (`rackbench fit PLAN`, read by `plan::fit`) each of its servers is
//! fitted in turn and the fits end in one table.

use super::load_options::LoadOptions;
use super::server_options::ServerOptions;
use super::usage;
use crate::app::fit;
use crate::app::os::stop_on_signals;
use crate::app::sink::Terminal;
use crate::plan::fit::{parse_share, FitRig, FitSettings};
use crate::plan::Plan;
use crate::report::fit::{self as page, FitDocument, FitsDocument};
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct FitArgs {
    /// A plan file: fits each of its servers with its first app inside
    /// its [budget], under its [fit] (flags given here override it).
    #[arg(conflicts_with_all = ["server", "command"])]
    pub plan: Option<PathBuf>,
    #[command(flatten)]
    pub server: ServerOptions,
    /// Load options; --duration is each trial's counted length [default: 5s].
    #[command(flatten)]
    pub load: LoadOptions,
    /// Load generator threads.
    #[arg(long, default_value_t = 1)]
    pub load_threads: usize,
    /// Memory to keep free under the peak, a share of --memory: 10% or 0.1 [default: 10%].
    #[arg(long, value_parser = parse_share)]
    pub headroom: Option<f64>,
    /// The latency objective, e.g. p99=200ms.
    #[arg(long, value_parser = crate::search::parse_slo)]
    pub slo: Option<u64>,
    /// Trials per configuration (compare's test needs 4 a side to tell
    /// the best from its runner-up) [default: 3].
    #[arg(long)]
    pub repeats: Option<usize>,
    /// The most worker processes tried [default: 8].
    #[arg(long)]
    pub max_workers: Option<u32>,
    /// The most threads per worker tried [default: 16].
    #[arg(long)]
    pub max_threads: Option<u32>,
    /// Print one JSON document (rackbench/fit-v1; with a plan, rackbench/fits-v1).
    #[arg(long)]
    pub json: bool,
    /// Write the page (a heatmap of workers × threads) to this file.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Keep fit.json, each trial's record (trials/wW-tT-rR.json) and the
    /// servers' logs here;
    /// with a plan, DIR/SERVER/fit.json and fit.html, and DIR/fits.md and
    /// fits.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// With a plan: list the fits it makes and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// The ids of the flags given on the command line (filled by
    /// cli::main), so that only those override a plan.
    #[arg(skip)]
    pub given: Vec<String>,
}

/// The ids of the arguments given on the command line (not defaults).
pub fn given(m: &clap::ArgMatches) -> Vec<String> {
    m.ids()
        .filter(|id| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| id.to_string())
        .collect()
}

pub fn run(args: FitArgs) -> Result<ExitCode> {
    check(&args)?;
    if let Some(path) = args.plan.clone() {
        return run_plan(&args, &path);
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    stop_on_signals(&interrupt, false);
    crate::load::raise_open_files_limit();
    let mut spec = args
        .server
        .to_spec(&args.load, args.load_threads, Arc::clone(&interrupt))?;
    if args.load.duration.is_none() {
        spec.load.duration = Some(Duration::from_secs(5));
    }
    if let Some(out) = &args.out {
        spec.dir = out.join("trials");
    }
    fit::with_budget(
        &mut spec,
        args.server.budget.memory,
        args.server.budget.cpus,
    );
    let name = spec.server.name.clone();
    let settings = args.settings(FitSettings::default());
    let keep = args.out.is_some();
    let doc = fit::fit_one(
        &name,
        spec,
        &settings,
        (args.json, keep),
        &interrupt,
        &Terminal::new(),
    );
    write_outputs(&doc, &args)?;
    Ok(if interrupt.load(Ordering::Relaxed) {
        ExitCode::from(130)
    } else if doc.recommendation.is_none() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

impl FitArgs {
    /// The search's settings: each flag given over `base` (a plan's
    /// `[fit]`, or the defaults).
    fn settings(&self, base: FitSettings) -> FitSettings {
        FitSettings {
            slo_p99_us: self.slo.or(base.slo_p99_us),
            headroom: self.headroom.unwrap_or(base.headroom),
            repeats: self.repeats.unwrap_or(base.repeats),
            max_workers: self.max_workers.unwrap_or(base.max_workers),
            max_threads: self.max_threads.unwrap_or(base.max_threads),
        }
    }

    /// Whether a flag with a default was given on the command line.
    fn given(&self, id: &str) -> bool {
        self.given.iter().any(|g| g == id)
    }
}

/// Flags that cannot make a search, refused with the fix.
fn check(args: &FitArgs) -> Result<()> {
    if args.server.workers.is_some() || args.server.threads.is_some() {
        return Err(usage(
            "fit searches the workers and threads itself: bound them with --max-workers and --max-threads instead of --workers/--threads".into(),
        ));
    }
    if [
        args.repeats,
        args.max_workers.map(|m| m as usize),
        args.max_threads.map(|m| m as usize),
    ]
    .contains(&Some(0))
    {
        return Err(usage(
            "--repeats, --max-workers and --max-threads need 1 or more".into(),
        ));
    }
    if args.plan.is_some() && args.html.is_some() {
        return Err(usage(
            "with a plan, each server has its own page: give --out DIR (DIR/SERVER/fit.html) instead of --html".into(),
        ));
    }
    if args.plan.is_none() && args.dry_run {
        return Err(usage(
            "--dry-run lists a plan's fits: give the plan, e.g. rackbench fit plans/budget-512.toml --dry-run".into(),
        ));
    }
    Ok(())
}

/// `rackbench fit PLAN`: each server's search in turn, then one table.
fn run_plan(args: &FitArgs, path: &Path) -> Result<ExitCode> {
    let (mut plan, text) = Plan::load(path).map_err(|e| usage(e.to_string()))?;
    let file = path.display().to_string();
    plan.apply(&overrides(args), &file).map_err(usage)?;
    let registry = crate::app::servers::registry(&args.server.servers_file)?;
    let interrupt = Arc::new(AtomicBool::new(false));
    let rig = rig(args, Arc::clone(&interrupt))?;
    let fits = plan
        .fit_plan(&text, &file, &registry, &rig)
        .map_err(|e| usage(e.to_string()))?;
    let settings = args.settings(fits.settings.clone());
    eprintln!("{}", fit::announce(&plan.name, &fits, &settings));
    if args.dry_run {
        for t in &fits.targets {
            println!("{}", t.name);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if fits.targets.is_empty() {
        return Err(usage("the plan has no server to fit here: none of its servers is installed (see `rackbench servers`)".into()));
    }
    stop_on_signals(&interrupt, false);
    crate::load::raise_open_files_limit();
    let docs = fit::fit_targets(
        fits.targets,
        &settings,
        args.out.as_deref(),
        args.json,
        &interrupt,
        &Terminal::new(),
    )?;
    let all = FitsDocument::new(&plan.name, docs);
    write_fits(&all, args)?;
    Ok(if interrupt.load(Ordering::Relaxed) {
        ExitCode::from(130)
    } else if all.fits.iter().any(|d| d.recommendation.is_none()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Each flag given replaces that part of the plan: --app its apps,
/// --env adds to its env, --memory and --cpus its budget, -c, -d,
/// --warmup and --mix its load.
fn overrides(args: &FitArgs) -> crate::plan::Overrides {
    crate::plan::Overrides {
        app: args.given("app").then(|| args.server.app.clone()),
        env: args.server.env.clone(),
        memory: args.server.budget.memory,
        cpus: args.server.budget.cpus,
        connections: args.given("connections").then_some(args.load.connections),
        duration: args.load.duration,
        warmup: args.given("warmup").then_some(args.load.warmup),
        mix: args.load.mix.clone(),
        ..Default::default()
    }
}

/// The CPUs for the servers and the load, as `trial` pins them.
fn rig(args: &FitArgs, interrupt: Arc<AtomicBool>) -> Result<FitRig> {
    if args.server.no_pin {
        return Ok(FitRig {
            interrupt,
            server_cpus: Vec::new(),
            load_cpus: Vec::new(),
        });
    }
    if let Some(cpus) = &args.server.server_cpus {
        crate::load::cpus::check(cpus, "--server-cpus").map_err(usage)?;
    }
    let (server, load) = crate::app::os::default_pinning();
    Ok(FitRig {
        interrupt,
        server_cpus: args.server.server_cpus.clone().unwrap_or(server),
        load_cpus: args.load.load_cpus.clone().unwrap_or(load),
    })
}

/// The table (or the fits-v1 document) on stdout; --out's fits.md and
/// fits.json.
fn write_fits(all: &FitsDocument, args: &FitArgs) -> Result<()> {
    if args.json {
        println!("{}", serde_json::to_string_pretty(all)?);
    } else {
        print!("{}", page::fits_text(all));
    }
    if let Some(out) = &args.out {
        fit::write_fits(out, all)?;
    }
    Ok(())
}

/// The document on stdout (or the text), the page, and --out's fit.json.
fn write_outputs(doc: &FitDocument, args: &FitArgs) -> Result<()> {
    if args.json {
        println!("{}", serde_json::to_string_pretty(doc)?);
    } else {
        print!("{}", page::text(doc));
    }
    fit::write_fit(args.html.as_deref(), args.out.as_deref(), doc)
}
