//! `rackbench breakpoint`: the highest concurrency (or rate) a server takes
//! with no errors, on a running server's URL or on one the lab starts.

use super::load_options::LoadOptions;
use super::server_options::{ProfileFlags, ServerOptions};
use super::usage;
use crate::app::breakpoint::{self, OnUrl, SearchRequest, Target};
use crate::app::os::stop_on_signals;
use crate::app::sink::{Sink, Terminal};
use crate::profile::Profile;
use crate::search::{self, SearchConfig, StepLoad};
use anyhow::Result;
use clap::Args;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct BreakpointArgs {
    /// A running server's URL; or use --server and --app to let the lab start one per step.
    pub url: Option<String>,
    #[command(flatten)]
    pub server: ServerOptions,
    /// Load options; --duration is each step's counted length [default: 5s].
    #[command(flatten)]
    pub load: LoadOptions,
    /// Load generator threads.
    #[arg(long, default_value_t = 1)]
    pub load_threads: usize,
    /// Search over "connections" (closed loop) or "rate" (open loop).
    #[arg(long, default_value = "connections", value_parser = ["connections", "rate"])]
    pub mode: String,
    /// First level tried.
    #[arg(long, default_value_t = 100.0)]
    pub start: f64,
    /// Highest level tried.
    #[arg(long, default_value_t = 5000.0)]
    pub max: f64,
    /// Factor between levels while growing.
    #[arg(long, default_value_t = 3.0)]
    pub growth: f64,
    /// Bisect until the bracket is this narrow (0.05 = 5%).
    #[arg(long, default_value_t = 0.05)]
    pub resolution: f64,
    /// While searching, try each level for this long (no warm-up) and
    /// confirm only the level found with a full step; 0 runs every step in
    /// full.
    #[arg(long, default_value = "500ms", value_parser = crate::units::duration)]
    pub probe: Duration,
    /// Also require p99 under a ceiling, e.g. p99=200ms.
    #[arg(long, value_parser = search::parse_slo)]
    pub slo: Option<u64>,
    /// Search linearly in steps of this size instead (seed 000's method, for comparison).
    #[arg(long)]
    pub linear: Option<f64>,
    /// Before each step on a URL, wait at most this long for the server to
    /// drain what the step before left it (its connections closed, one
    /// request answered as fast as in a clean step); 0 does not wait.
    #[arg(long, default_value = "10s", value_parser = crate::units::duration)]
    pub settle_max: Duration,
    /// Print one JSON document (rackbench/breakpoint-v1).
    #[arg(long)]
    pub json: bool,
    /// With --server: once the break point is found, run its level again
    /// with --profile (the last clean level, where the server is at its
    /// limit).
    #[command(flatten)]
    pub profile: ProfileFlags,
}

pub fn run(args: BreakpointArgs) -> Result<ExitCode> {
    if args.url.is_some() == args.server.server.is_some() {
        return Err(usage(
            "give either a URL or --server (and --app), not both".into(),
        ));
    }
    if !search::knobs_are_sane(args.start, args.max, args.growth, args.resolution) {
        return Err(usage(
            "the search needs --start > 0, --max >= --start, --growth > 1 and --resolution > 0"
                .into(),
        ));
    }
    let rate_mode = args.mode == "rate";
    super::load_options::slack_needs_open_loop(&args.load.slack, rate_mode, "--mode rate")?;
    let cfg = SearchConfig::new(
        rate_mode,
        args.start,
        args.max,
        args.growth,
        args.resolution,
        args.slo,
        args.probe,
    );
    if args.profile.profile && args.url.is_some() {
        return Err(usage(
            "--profile needs --server: rackbench profiles the server it starts (for a running \
             server, run rbspy on its pid yourself)"
                .into(),
        ));
    }
    if args.linear.is_some_and(|s| s <= 0.0) {
        return Err(usage(
            "--linear needs a positive step, e.g. --linear 100".into(),
        ));
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    stop_on_signals(&interrupt, false);
    crate::load::raise_open_files_limit();
    let step_load = StepLoad {
        rate_mode,
        step: args.load.duration.unwrap_or(Duration::from_secs(5)),
        probe: args.probe,
        rate_connections: None,
    };
    let target = match &args.url {
        Some(url) => Target::Url(OnUrl {
            url,
            base: args.load.to_config(url, args.load_threads)?,
            settle_max: args.settle_max,
            slo: args.slo,
        }),
        None => {
            let spec =
                args.server
                    .to_spec(&args.load, args.load_threads, Arc::clone(&interrupt))?;
            let profile = args.profile.ask(&spec.dir);
            Target::Lab { spec, profile }
        }
    };
    let sink: Arc<dyn Sink> = Arc::new(Terminal::new());
    let found = breakpoint::search(
        SearchRequest {
            target,
            step_load,
            cfg: cfg.clone(),
            linear: args.linear,
            quiet: args.json,
            interrupt,
        },
        &sink,
    )?;
    let result = &found.result;
    let profile = &found.profile;
    let out = breakpoint::Output {
        schema: search::SCHEMA,
        target: found.target.clone(),
        mode: &args.mode,
        connections: if rate_mode { None } else { result.level },
        rate: if rate_mode { result.level } else { None },
        throughput_rps: result.throughput_rps,
        load_seconds: result.load_seconds,
        settle_seconds: result.settle_seconds(),
        failed_at: result.failed_at,
        capped: result.capped,
        confirmed: result.confirmed,
        method: method(&args, &cfg),
        search: &cfg,
        steps: &result.steps,
        profile: profile
            .as_ref()
            .and_then(|p| p.as_ref().ok())
            .map(|p| p.0.clone()),
        profile_error: profile.as_ref().and_then(|p| p.as_ref().err()).cloned(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "{}",
            breakpoint::result_text(&out, result, found.interrupted)
        );
        if let Some(p) = profile {
            print!("{}", profile_lines(p));
        }
    }
    Ok(if found.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// The profile's lines under the result, or why there is none.
fn profile_lines(p: &Result<(Profile, String), String>) -> String {
    match p {
        Ok((p, dir)) => crate::report::profile::trial_lines(p, dir),
        Err(why) => format!("  profile:     none: {why}\n"),
    }
}

/// How the search went, in words: the record's `method`.
fn method(args: &BreakpointArgs, cfg: &SearchConfig) -> String {
    args.linear.map_or(
        format!(
            "grow x{} then bisect to {}%{}",
            args.growth,
            args.resolution * 100.0,
            if cfg.probe_s > 0.0 {
                format!(
                    ", probing {}s per level and confirming in full",
                    cfg.probe_s
                )
            } else {
                String::new()
            }
        ),
        |s| format!("linear steps of {s}"),
    )
}
