//! `rackbench replay FILE URL`: sends recorded requests again, open loop,
//! at their recorded arrival times (scaled by `--speed`), through the
//! load engine; `--nginx-log` takes them from an nginx access log instead.

use super::output::exit_code;
use super::{parse, usage};
use crate::app::os::stop_on_signals;
use crate::app::replay;
use crate::app::sink::Terminal;
use crate::checks::Check;
use crate::load::schedule::{self, Schedule};
use crate::load::target::{Endpoint, Url};
use crate::load::{self, ExpectStatus, LoadConfig};
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The record file (rackbench/record-v1) and the URL to send it to;
    /// with --nginx-log, only the URL. Only the URL's host and port are
    /// used: each request keeps its recorded target.
    #[arg(value_name = "FILE URL", num_args = 1..=2, required = true)]
    pub positional: Vec<String>,
    /// Replay GET and HEAD requests from an nginx access log (combined
    /// format; `$msec` after it is used when present).
    #[arg(long, value_name = "FILE")]
    pub nginx_log: Option<PathBuf>,
    /// Divide every recorded offset by this: 2 sends the same requests in half the time.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Cut every gap between two recorded requests longer than this down
    /// to it (idle hours, a clock that jumped), e.g. 10s. A replay longer
    /// than a day is refused without it or a faster --speed.
    #[arg(long, value_parser = parse::duration, value_name = "DURATION")]
    pub max_gap: Option<Duration>,
    /// Start the schedule again at its end until --duration ends.
    #[arg(long = "loop", requires = "duration")]
    pub repeat: bool,
    /// With --loop: how long to replay, e.g. 60s.
    #[arg(short = 'd', long, value_parser = parse::duration)]
    pub duration: Option<Duration>,
    /// Connections kept open; a request due when all are busy waits, its
    /// latency counted from its due time.
    #[arg(short = 'c', long, default_value_t = 20)]
    pub connections: usize,
    /// Event-loop threads (requests are dealt to them in turn).
    #[arg(short = 't', long, default_value_t = 1)]
    pub threads: usize,
    /// Connect to this unix socket instead of the URL's host and port.
    #[arg(long)]
    pub unix_socket: Option<PathBuf>,
    /// Send `Connection: close` and open a new connection per request.
    #[arg(long)]
    pub no_keepalive: bool,
    /// A request unanswered this long counts as a timeout.
    #[arg(long, value_parser = parse::duration, default_value = "10s")]
    pub timeout: Duration,
    /// Statuses that count as OK, e.g. 2xx,3xx [default: any status: a
    /// replay's answers are whatever the app returns].
    #[arg(long, value_parser = parse::expect_status)]
    pub expect_status: Option<ExpectStatus>,
    /// Pin load threads to these CPUs, e.g. 0 or 0-1.
    #[arg(long, value_parser = parse::cpu_list)]
    pub load_cpus: Option<::std::vec::Vec<usize>>,
    /// Print one JSON document (rackbench/load-v1) instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// A threshold the run must meet, e.g. 'p99<200ms' (repeatable).
    #[arg(long = "check", value_parser = Check::parse)]
    pub checks: Vec<Check>,
    /// --segment I/N takes every N-th request from the I-th (docs/SCALING.md).
    #[command(flatten)]
    pub segment: super::load_options::SegmentOptions,
}

impl ReplayArgs {
    fn to_config(&self) -> Result<LoadConfig> {
        let (file, url, nginx) = match (&self.nginx_log, &self.positional[..]) {
            (Some(log), [url]) => (log.clone(), url.clone(), true),
            (None, [file, url]) => (PathBuf::from(file), url.clone(), false),
            (Some(_), _) => return Err(usage(
                "with --nginx-log give only the URL: rackbench replay --nginx-log access.log URL"
                    .into(),
            )),
            (None, _) => {
                return Err(usage(
                    "give the record file and the URL: rackbench replay FILE URL".into(),
                ))
            }
        };
        if self.connections == 0 || self.threads == 0 {
            return Err(usage(
                "--connections and --threads must be at least 1".into(),
            ));
        }
        if self.duration.is_some() && !self.repeat {
            return Err(usage(
                "--duration applies to --loop only (a replay without it sends the file once): add --loop or drop --duration"
                    .into(),
            ));
        }
        if self.duration.is_some_and(|d| d.is_zero()) || self.timeout.is_zero() {
            return Err(usage(
                "--duration and --timeout must be longer than zero".into(),
            ));
        }
        if let Some(cpus) = &self.load_cpus {
            load::cpus::check(cpus, "--load-cpus").map_err(usage)?;
        }
        let parsed = Url::parse(&url).map_err(|e| usage(e.to_string()))?;
        let schedule = replay::schedule(
            &replay::ScheduleRequest {
                file,
                nginx,
                url: parsed,
                max_gap: self.max_gap,
                speed: self.speed,
                repeat: self.repeat,
                keep_alive: !self.no_keepalive,
            },
            &Terminal::new(),
        )?;
        let mut cfg = LoadConfig::get(&url).map_err(|e| usage(e.to_string()))?;
        if let Some(p) = &self.unix_socket {
            cfg.endpoint = Endpoint::Unix(p.clone());
        }
        cfg.connections = self.connections;
        cfg.threads = self.threads;
        cfg.keep_alive = !self.no_keepalive;
        cfg.timeout = self.timeout;
        cfg.duration = self.duration;
        cfg.cpus = self.load_cpus.clone().unwrap_or_default();
        Arc::new(schedule).drive(&mut cfg);
        if let Some(e) = &self.expect_status {
            cfg.expect_status = e.clone();
        }
        self.segment.apply(&mut cfg)?;
        Ok(cfg)
    }
}

/// What the replay will take, said before it starts (issue 36: a record
/// with a gap of years waited silently until killed).
fn length_line(schedule: &Schedule, args: &ReplayArgs) -> String {
    let span = schedule::fmt_length(schedule.span());
    let speed = if args.speed == 1.0 {
        String::new()
    } else {
        format!(" at --speed {}", args.speed)
    };
    match args.duration.filter(|_| schedule.repeats()) {
        Some(d) => format!(
            "replaying {} requests a pass over {span}{speed}, looped for {}",
            schedule.len(),
            schedule::fmt_length(d)
        ),
        None => format!("replaying {} requests over {span}{speed}", schedule.len()),
    }
}

pub fn run(args: ReplayArgs) -> Result<ExitCode> {
    let config = args.to_config()?;
    eprintln!(
        "{}",
        length_line(config.schedule.as_ref().expect("a replay"), &args)
    );
    super::output::announce_start(&config);
    crate::load::raise_open_files_limit();
    stop_on_signals(&config.interrupt, true);
    let schedule = Arc::clone(config.schedule.as_ref().expect("a replay"));
    let report = load::run(config, |_| {})?;
    super::output::after_segment(&report, &args.segment)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", report.render_text())?;
        if let Some(s) = &report.schedule {
            writeln!(
                out,
                "  replay:      {} requests a pass over {:.3}s{}; {} sent, {:.2}% within 1 ms of their due time",
                schedule.len(),
                schedule.span().as_secs_f64(),
                if schedule.repeats() { " (looped)" } else { "" },
                s.sends.unwrap_or(0),
                s.within_1ms_share.unwrap_or(0.0) * 100.0
            )?;
        }
    }
    drop(out);
    Ok(exit_code(&report, &args.checks, args.json))
}
