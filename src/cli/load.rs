//! `rackbench load URL`: one load run against a server that is already up.

use super::{parse, UsageError};
use crate::checks::{self, Check, CheckResult};
use crate::load::report::TimelineRow;
use crate::load::target::{self, parse_header, render_request, Endpoint, RequestSpec, Url};
use crate::load::{self, ExpectStatus, IoMode, LoadConfig, Pacing};
use crate::units::fmt_us;
use anyhow::Result;
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Load options, shared by every subcommand that drives load.
#[derive(Debug, Clone, Args)]
pub struct LoadOptions {
    /// Connections kept open (closed loop: each kept busy).
    #[arg(short = 'c', long, default_value_t = 10)]
    pub connections: usize,
    /// Length of the counted window, e.g. 10s, 500ms, 2m [default: 10s].
    #[arg(short = 'd', long, value_parser = parse::duration)]
    pub duration: Option<Duration>,
    /// Stop after this many counted requests.
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// Open loop: requests per second on a fixed schedule; latency is
    /// measured from each request's scheduled start.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Load applied before the counted window, shown only in the timeline.
    #[arg(long, value_parser = parse::duration, default_value = "0s")]
    pub warmup: Duration,
    /// End the warm-up once throughput is steady (3 s within 5%); --warmup is then its ceiling.
    #[arg(long, requires = "warmup")]
    pub warmup_until_steady: bool,
    /// Send `Connection: close` and open a new connection per request.
    #[arg(long)]
    pub no_keepalive: bool,
    /// Requests written back to back on each connection before waiting.
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,
    /// HTTP method.
    #[arg(short = 'm', long, default_value = "GET")]
    pub method: String,
    /// Extra request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Request body.
    #[arg(long, conflicts_with = "body_file")]
    pub body: Option<String>,
    /// Request body read from a file.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// Connect to this unix socket instead of the URL's host and port.
    #[arg(long)]
    pub unix_socket: Option<PathBuf>,
    /// A request unanswered this long counts as a timeout.
    #[arg(long, value_parser = parse::duration, default_value = "10s")]
    pub timeout: Duration,
    /// Statuses that count as OK, e.g. 200 or 2xx,304 [default: 2xx,3xx].
    #[arg(long, value_parser = parse::expect_status)]
    pub expect_status: Option<ExpectStatus>,
    /// The body must contain this text.
    #[arg(long)]
    pub expect_body: Option<String>,
    /// Pin load threads to these CPUs, e.g. 0 or 0-1.
    #[arg(long, value_parser = parse::cpu_list)]
    // The full path keeps clap from reading `Vec` as "the flag repeated"
    // (it panicked on any use): the value is one list.
    pub load_cpus: Option<::std::vec::Vec<usize>>,
    /// What the connection loop waits on: auto = io_uring for a closed
    /// loop where the kernel has it (Linux 6.1+), epoll otherwise.
    #[arg(long, value_enum, default_value_t = IoArg::Auto)]
    pub io: IoArg,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IoArg {
    Auto,
    Epoll,
    #[value(name = "io_uring", alias = "uring")]
    IoUring,
}

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
}

impl LoadOptions {
    /// Checks the options and renders the request: every mistake a user
    /// can make here is a [`UsageError`] naming the fix.
    pub fn to_config(&self, url: &str, threads: usize) -> Result<LoadConfig> {
        let usage = |m: String| anyhow::Error::new(UsageError(m));
        if self.connections == 0 {
            return Err(usage("--connections must be at least 1".into()));
        }
        if threads == 0 {
            return Err(usage("--threads must be at least 1".into()));
        }
        let io = match self.io {
            IoArg::Auto => IoMode::Auto,
            IoArg::Epoll => IoMode::Epoll,
            IoArg::IoUring => IoMode::Uring,
        };
        let pacing = self.rate.map_or(Pacing::Closed, Pacing::Rate);
        if let Some(why) = io.conflict(pacing) {
            return Err(usage(why.into()));
        }
        if self.pipeline == 0 {
            return Err(usage(
                "--pipeline must be at least 1 (1 means no pipelining)".into(),
            ));
        }
        if self.pipeline > 1 && self.no_keepalive {
            return Err(usage(
                "--pipeline needs keep-alive: drop --no-keepalive or --pipeline".into(),
            ));
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return Err(usage(format!(
                    "--rate {r} must be a positive number of requests per second"
                )));
            }
        }
        if self.requests == Some(0) {
            return Err(usage("--requests must be at least 1".into()));
        }
        if self.duration.is_some_and(|d| d.is_zero()) {
            return Err(usage(
                "--duration must be longer than zero, e.g. 10s".into(),
            ));
        }
        if self.timeout.is_zero() {
            return Err(usage("--timeout must be longer than zero, e.g. 10s".into()));
        }
        if let Some(cpus) = &self.load_cpus {
            crate::load::cpus::check(cpus, "--load-cpus").map_err(usage)?;
        }
        let parsed = Url::parse(url).map_err(|e| usage(e.to_string()))?;
        let endpoint = match &self.unix_socket {
            Some(p) => Endpoint::Unix(p.clone()),
            None => Endpoint::Tcp(parsed.resolve().map_err(|e| usage(e.to_string()))?),
        };
        let headers = self
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<Vec<_>, target::TargetError>>()
            .map_err(|e| usage(e.to_string()))?;
        let body = match (&self.body, &self.body_file) {
            (Some(b), _) => b.clone().into_bytes(),
            (None, Some(path)) => std::fs::read(path)
                .map_err(|e| usage(format!("cannot read --body-file {}: {e}", path.display())))?,
            (None, None) => Vec::new(),
        };
        let method = self.method.to_ascii_uppercase();
        let spec = RequestSpec {
            method: method.clone(),
            headers,
            body,
            keep_alive: !self.no_keepalive,
        };
        let request = render_request(&parsed, &spec).map_err(|e| usage(e.to_string()))?;
        Ok(LoadConfig {
            url: url.to_string(),
            endpoint,
            request,
            head_request: method == "HEAD",
            stop_on_error: false,
            connections: self.connections,
            threads,
            pacing,
            duration: match (self.duration, self.requests) {
                (None, None) => Some(Duration::from_secs(10)),
                (d, _) => d,
            },
            requests: self.requests,
            warmup: self.warmup,
            warmup_until_steady: self.warmup_until_steady,
            pipeline: self.pipeline,
            keep_alive: !self.no_keepalive,
            timeout: self.timeout,
            expect_status: self.expect_status.clone().unwrap_or(ExpectStatus::Success),
            expect_body: self.expect_body.clone().unwrap_or_default().into_bytes(),
            cpus: self.load_cpus.clone().unwrap_or_default(),
            interrupt: Arc::new(AtomicBool::new(false)),
            io,
            schedule: None,
        })
    }
}

/// Sets `flag` on Ctrl-C or SIGTERM. With `hard_second`, a second signal
/// exits at once (safe only when no child process depends on a clean stop).
pub(crate) fn stop_on_signals(flag: &Arc<AtomicBool>, hard_second: bool) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM] {
        if hard_second {
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(flag));
        }
        let _ = signal_hook::flag::register(sig, Arc::clone(flag));
    }
}

pub fn run(args: LoadArgs) -> Result<ExitCode> {
    let config = args.options.to_config(&args.url, args.threads)?;
    // Before any load: a run that cannot open its connections is a usage
    // error (exit 2) that names the fix.
    load::ensure_open_files(&config).map_err(|why| anyhow::Error::new(UsageError(why)))?;
    stop_on_signals(&config.interrupt, true);
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
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", report.render_text())?;
    }
    drop(out);
    Ok(exit_code(&report, &args.checks, args.json))
}

/// The exit status of a load run, after printing its checks: 130 when
/// interrupted, 1 when no request succeeded or a check was missed.
/// `rackbench load` and `rackbench replay` share it.
pub(crate) fn exit_code(
    report: &crate::load::LoadReport,
    checks: &[Check],
    json: bool,
) -> ExitCode {
    let checks_met = print_checks(&checks::evaluate_all(checks, report), json);
    if report.interrupted {
        ExitCode::from(130)
    } else if report.requests.ok == 0 {
        eprintln!(
            "error: no request succeeded ({} counted); see the errors above",
            report.requests.total
        );
        ExitCode::from(1)
    } else if !checks_met {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Prints one line per check (on stderr beside a JSON document, so stdout
/// stays one document) and says whether all were met.
pub(crate) fn print_checks(results: &[CheckResult], json: bool) -> bool {
    for r in results {
        if json {
            eprintln!("{r}");
        } else {
            println!("{r}");
        }
    }
    let failed = results.iter().filter(|r| !r.met).count();
    if failed > 0 {
        eprintln!("{failed} of {} check(s) not met", results.len());
    }
    failed == 0
}
