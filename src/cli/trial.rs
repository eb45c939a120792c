//! `rackbench trial`: one server, one app, one load, end to end.

use super::flags::{finish_live, MetricsFlags, RestartFlags, SlowFlags, SoakFlags};
use super::load_options::LoadOptions;
use super::server_options::{ProfileFlags, ServerOptions};
use super::usage;
use crate::app::os::stop_on_signals;
use crate::lab::trial::{run_trial, TrialSpec};
use anyhow::Result;
use clap::Args;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The soak asked, applied to `spec`'s load; refuses -d and -n beside
/// it (the soak's duration is the window).
fn apply_soak(soak: &SoakFlags, load: &LoadOptions, spec: &mut TrialSpec) -> Result<()> {
    let Some(d) = soak.soak else {
        return Ok(());
    };
    if d.is_zero() {
        return Err(usage(
            "--soak must be longer than zero, e.g. --soak 2h".into(),
        ));
    }
    if load.duration.is_some() || load.requests.is_some() {
        return Err(usage(
            "--soak sets the counted window itself: drop -d/--duration and -n/--requests".into(),
        ));
    }
    let soak = crate::lab::soak::Soak::new(d, load.rate);
    soak.apply(&mut spec.load);
    spec.soak = Some(soak);
    Ok(())
}

#[derive(Debug, Args)]
pub struct TrialArgs {
    #[command(flatten)]
    pub server: ServerOptions,
    #[command(flatten)]
    pub load: LoadOptions,
    #[command(flatten)]
    pub slow: SlowFlags,
    #[command(flatten)]
    pub soak: SoakFlags,
    /// Load generator threads.
    #[arg(long, default_value_t = 1)]
    pub load_threads: usize,
    /// Print one JSON document (rackbench/trial-v1).
    #[arg(long)]
    pub json: bool,
    /// A threshold the load must meet, e.g. 'p99<200ms', 'errors<1%',
    /// 'rps>5000' (repeatable); exit status 1 when any is not met.
    #[arg(long = "check", value_parser = crate::checks::Check::parse)]
    pub checks: Vec<crate::checks::Check>,
    #[command(flatten)]
    pub restart: RestartFlags,
    #[command(flatten)]
    pub profile: ProfileFlags,
    #[command(flatten)]
    pub metrics: MetricsFlags,
}

pub fn run(args: TrialArgs) -> Result<ExitCode> {
    let live = args.metrics.start("trial")?;
    let interrupt = Arc::new(AtomicBool::new(false));
    stop_on_signals(&interrupt, false);
    crate::load::raise_open_files_limit();
    let mut spec = args
        .server
        .to_spec(&args.load, args.load_threads, Arc::clone(&interrupt))?;
    spec.load.slow = args.slow.slow()?;
    spec.restart = args.restart.restart();
    if let Some(r) = &spec.restart {
        crate::lab::spec::check_restart(&spec, r).map_err(usage)?;
    }
    apply_soak(&args.soak, &args.load, &mut spec)?;
    spec.profile = args.profile.ask(&spec.dir);
    // Refused (no rbspy, a JRuby server, ...) before "starting" is said.
    crate::lab::spec::validate(&spec)?;
    if !args.json {
        eprintln!("starting {} with {} ...", spec.server.name, spec.app.name);
        if let Some(s) = &spec.soak {
            eprintln!("{}", s.describe());
        }
    }
    if let Some(l) = &live {
        l.board().trial_started(crate::live::TrialLabels {
            server: spec.server.name.clone(),
            app: spec.app.name.clone(),
            runtime: (spec.runtime.as_ref().map(|r| r.name.clone()))
                .unwrap_or_else(|| crate::runtime::SYSTEM.to_string()),
            repeat: 1,
            ..Default::default()
        });
    }
    let record = run_trial(spec)?;
    if let Some(l) = &live {
        l.board().trial_ended();
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&record)?);
    } else {
        print!("{}", crate::app::text::trial::render_trial(&record));
    }
    let checks_met = super::output::print_checks(
        &crate::checks::evaluate_all(&args.checks, &record.load),
        args.json,
    );
    finish_live(live);
    Ok(if record.server_exit.is_some() {
        ExitCode::from(1)
    } else if record.interrupted {
        ExitCode::from(130)
    } else if record.load.requests.ok == 0 {
        eprintln!("{}", super::output::nothing_succeeded(&record.load));
        ExitCode::from(1)
    } else if !checks_met {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
