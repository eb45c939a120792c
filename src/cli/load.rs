//! `rackbench load URL`: one load run against a server that is already up.

use super::flags::{finish_live, MetricsFlags, SlowFlags};
use super::load_options::{slack_needs_open_loop, LoadOptions, SegmentOptions};
use super::output::{after_segment, announce_start, exit_code};
use super::usage;
use crate::checks::Check;
use crate::load::report::TimelineRow;
use crate::load::{self};
use crate::units::fmt_us;
use anyhow::Result;
use clap::Args;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Target, e.g. http://127.0.0.1:8080/ (with --unix-socket, only the path is used).
    pub url: String,
    #[command(flatten)]
    pub options: LoadOptions,
    /// Event-loop threads; the generator shares the machine with the server.
    #[arg(short = 't', long, default_value_t = 1)]
    pub threads: usize,
    /// Print one JSON document (rackbench/load-v1) instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// A threshold the run must meet, e.g. 'p99<200ms', 'errors<1%',
    /// 'rps>5000' (repeatable); exit status 1 when any is not met.
    #[arg(long = "check", value_parser = Check::parse)]
    pub checks: Vec<Check>,
    #[command(flatten)]
    pub segment: SegmentOptions,
    #[command(flatten)]
    pub slow: SlowFlags,
    #[command(flatten)]
    pub metrics: MetricsFlags,
}

pub fn run(args: LoadArgs) -> Result<ExitCode> {
    let live_endpoint = args.metrics.start("load")?;
    let mut config = args.options.to_config(&args.url, args.threads)?;
    slack_needs_open_loop(&config.slack, config.pacing.is_open(), "--rate R")?;
    args.segment.apply(&mut config)?;
    config.slow = args.slow.slow()?;
    // Before any load: a run that cannot open its connections is a usage
    // error (exit 2) that names the fix.
    load::ensure_open_files(&config).map_err(usage)?;
    announce_start(&config);
    crate::app::os::stop_on_signals(&config.interrupt, true);
    let live = !args.json && std::io::stdout().is_terminal();
    let total_s = config.duration.map(|d| (d + config.warmup).as_secs());
    let report = load::run(config, |row: &TimelineRow| {
        if live {
            let of = total_s.map_or(String::new(), |t| format!("/{t}s"));
            eprint!(
                "\r\x1b[2K  {:>3}s{of}  {:>9.0} req/s  p50 {:>8}  p99 {:>8}  errors {}{}",
                row.t_s + 1,
                row.rps,
                fmt_us(row.p50_us as f64),
                fmt_us(row.p99_us as f64),
                row.errors,
                if row.warmup { "  (warm-up)" } else { "" }
            );
            let _ = std::io::stderr().flush();
        }
    })?;
    if live {
        eprint!("\r\x1b[2K");
    }
    after_segment(&report, &args.segment)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", report.render_text())?;
    }
    drop(out);
    finish_live(live_endpoint);
    Ok(exit_code(&report, &args.checks, args.json))
}
