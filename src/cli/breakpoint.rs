//! `rackbench breakpoint`: the highest concurrency (or rate) a server takes
//! with no errors, on a running server's URL or on one the lab starts.

use super::load::LoadOptions;
use super::trial::ServerOptions;
use super::usage;
use crate::app::os::stop_on_signals;
use crate::lab::trial::run_trial;
use crate::load;
use crate::search::settle::{self, SettleConfig};
use crate::search::{self, Breakpoint, SearchConfig, StepKind, StepLoad, StepResult};
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
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
}

#[derive(Debug, Serialize)]
struct Output<'a> {
    schema: &'static str,
    target: String,
    mode: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    connections: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate: Option<f64>,
    throughput_rps: f64,
    load_seconds: f64,
    /// Seconds spent waiting for the server to drain between steps.
    settle_seconds: f64,
    failed_at: Option<f64>,
    capped: bool,
    confirmed: bool,
    method: String,
    search: &'a SearchConfig,
    steps: &'a [StepResult],
}

/// One line per step on stderr, as the search goes.
fn print_step(r: &StepResult, kind: StepKind) {
    eprintln!(
        "  {:>8.0}{}: {:>9.0} req/s, p99 {:>9}, errors {}{}{}",
        r.level,
        if kind == StepKind::Probe {
            " probe"
        } else {
            "  full"
        },
        r.throughput_rps,
        crate::units::fmt_us(r.p99_us as f64),
        r.errors,
        r.cause().map_or(String::new(), |c| format!(" ({c})")),
        if r.settle_s >= 0.05 {
            format!(", after {:.1}s settling", r.settle_s)
        } else {
            String::new()
        }
    );
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
    super::load::slack_needs_open_loop(&args.load.slack, rate_mode, "--mode rate")?;
    let cfg = SearchConfig::new(
        rate_mode,
        args.start,
        args.max,
        args.growth,
        args.resolution,
        args.slo,
        args.probe,
    );
    let interrupt = Arc::new(AtomicBool::new(false));
    stop_on_signals(&interrupt, false);
    crate::load::raise_open_files_limit();
    let step_load = StepLoad {
        rate_mode,
        step: args.load.duration.unwrap_or(Duration::from_secs(5)),
        probe: args.probe,
        rate_connections: None,
    };
    let (target, mut step) = match &args.url {
        Some(url) => (url.clone(), url_steps(&args, url, step_load, &interrupt)?),
        None => lab_steps(&args, step_load, &interrupt)?,
    };
    let stop = || interrupt.load(Ordering::Relaxed);
    let result: Breakpoint = match args.linear {
        Some(s) if s > 0.0 => search::find_linear(&cfg, s, &mut step, stop),
        Some(_) => {
            return Err(usage(
                "--linear needs a positive step, e.g. --linear 100".into(),
            ))
        }
        None => search::find_breakpoint(&cfg, &mut step, stop),
    };
    let out = Output {
        schema: search::SCHEMA,
        target,
        mode: &args.mode,
        connections: if rate_mode { None } else { result.level },
        rate: if rate_mode { result.level } else { None },
        throughput_rps: result.throughput_rps,
        load_seconds: result.load_seconds,
        settle_seconds: result.settle_seconds(),
        failed_at: result.failed_at,
        capped: result.capped,
        confirmed: result.confirmed,
        method: args.linear.map_or(
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
        ),
        search: &cfg,
        steps: &result.steps,
    };
    print_result(&out, &result, args.json, interrupt.load(Ordering::Relaxed))?;
    Ok(if interrupt.load(Ordering::Relaxed) {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// One step of a search: the level and kind in, its result out.
type Steps = Box<dyn FnMut(f64, StepKind) -> StepResult>;

/// A search step on a running server's URL: settle (wait for the server to
/// drain the last step), then one load run at the level.
fn url_steps(
    args: &BreakpointArgs,
    url: &str,
    step_load: StepLoad,
    interrupt: &Arc<AtomicBool>,
) -> Result<Steps> {
    let quiet = args.json;
    let base = args.load.to_config(url, args.load_threads)?;
    let interrupt = Arc::clone(interrupt);
    let parsed = load::Url::parse(url)?;
    let server = settle::Target::new(
        base.endpoint.clone(),
        parsed.host.clone(),
        parsed.path.clone(),
        base.expect_status.clone(),
    );
    let settle_cfg = SettleConfig {
        ceiling: args.settle_max,
        ..SettleConfig::default()
    };
    // A run just before this one may have left requests the server is
    // still working off (their clients gone): the first step, and the idle
    // request below, wait for them as any later step waits for the last.
    let mut first_wait = 0.0;
    if !settle_cfg.ceiling.is_zero() && server.look(None, &settle_cfg).is_err() {
        first_wait = settle_wait(&server, &settle_cfg, None, &interrupt, quiet);
    }
    // What "as fast as a clean step" means before any step was clean:
    // one request to the idle server.
    // If even that fails, a failing probe says nothing about draining:
    // only the connections are waited for.
    let idle = server.probe(base.timeout);
    let probe_tells = idle.is_ok();
    let mut reference = idle.unwrap_or(Duration::ZERO);
    let mut first = true;
    let slo = args.slo;
    Ok(Box::new(move |level, kind| {
        let mut settle_s = std::mem::take(&mut first_wait);
        if !first && !settle_cfg.ceiling.is_zero() {
            let reference = probe_tells.then_some(reference);
            settle_s = settle_wait(&server, &settle_cfg, reference, &interrupt, quiet);
        }
        first = false;
        let mut c = base.clone();
        step_load.apply(level, kind, &mut c);
        let flag = Arc::new(AtomicBool::new(false));
        c.interrupt = Arc::clone(&flag);
        let user = Arc::clone(&interrupt);
        let report = load::run(c, |_| {
            if user.load(Ordering::Relaxed) {
                flag.store(true, Ordering::Relaxed);
            }
        });
        let mut r = match report {
            Ok(report) => {
                let r = StepResult::from_load(level, &report);
                let within_slo = slo.is_none_or(|ceiling| r.p99_us <= ceiling);
                if r.errors == 0 && within_slo && report.latency_us.count > 0 {
                    reference = Duration::from_micros(report.latency_us.p50);
                }
                r
            }
            Err(e) => StepResult::failed(level, e.to_string()),
        };
        r.settle_s = settle_s;
        if !quiet {
            print_step(&r, kind);
        }
        r
    }))
}

/// Waits until `server` has drained (`settle::Target::look` with
/// `reference`), or the ceiling or Ctrl-C ends the wait, which is then
/// said on stderr; returns the wait in seconds.
fn settle_wait(
    server: &settle::Target,
    cfg: &SettleConfig,
    reference: Option<Duration>,
    interrupt: &AtomicBool,
    quiet: bool,
) -> f64 {
    let settled = settle::wait_until(
        cfg,
        || server.look(reference, cfg),
        || interrupt.load(Ordering::Relaxed),
    );
    let waited = settled.waited.as_secs_f64();
    if let (false, Some(why), false) = (settled.drained, &settled.last_busy, quiet) {
        eprintln!("  (the server had not drained after {waited:.1}s: {why}; stepping on)");
    }
    waited
}

/// A search step in the lab: a fresh server per step (`TrialSpec::at_step`).
fn lab_steps(
    args: &BreakpointArgs,
    step_load: StepLoad,
    interrupt: &Arc<AtomicBool>,
) -> Result<(String, Steps)> {
    let quiet = args.json;
    let spec = args
        .server
        .to_spec(&args.load, args.load_threads, Arc::clone(interrupt))?;
    let target = format!("{} with {}", spec.server.name, spec.app.name);
    let mut n = 0;
    Ok((
        target,
        Box::new(move |level, kind| {
            n += 1;
            let s = spec.at_step(&step_load, level, kind, spec.dir.join(format!("step{n}")));
            let r = match run_trial(s) {
                Ok(rec) => rec.as_step(level),
                Err(e) => StepResult::failed(level, e.to_string()),
            };
            if !quiet {
                print_step(&r, kind);
            }
            r
        }),
    ))
}

/// The search's result on stdout: the JSON document, or one line (two
/// when the first failing level says why).
fn print_result(out: &Output, result: &Breakpoint, json: bool, interrupted: bool) -> Result<()> {
    let rate_mode = out.mode == "rate";
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        match result.level {
            Some(l) => println!(
                "break point: {l:.0} {} at {:.0} req/s{}{}; {:.0} load-seconds over {} steps{}{}",
                if rate_mode {
                    "req/s offered"
                } else {
                    "connections"
                },
                result.throughput_rps,
                if result.capped {
                    " (no failure up to --max)"
                } else {
                    ""
                },
                if result.confirmed {
                    ""
                } else {
                    " (interrupted before its full step: a probe's figures)"
                },
                result.load_seconds,
                result.steps.len(),
                if result.settle_seconds() >= 0.05 {
                    format!(" (and {:.1}s settling)", result.settle_seconds())
                } else {
                    String::new()
                },
                match (result.failed_at, result.why_failed()) {
                    (Some(at), Some(why)) => format!("\nfirst failing level {at:.0}: {why}"),
                    _ => String::new(),
                }
            ),
            None if interrupted => {
                println!("interrupted before any level held")
            }
            None => println!(
                "no break point: even {} failed{}",
                if rate_mode {
                    format!("{} req/s", search::FLOOR)
                } else {
                    format!("{} connection", search::FLOOR)
                },
                result
                    .steps
                    .last()
                    .and_then(|s| s.why.as_ref())
                    .map_or(String::new(), |w| format!(" ({w})"))
            ),
        }
    }
    Ok(())
}
