//! `rackbench mirror` and `rackbench record`: the traffic-duplicating proxy
//! in the foreground, a live summary once a second on stderr, the
//! mirror-v1 document (and `mirror.html`) at the end.

use super::{parse, UsageError};
use crate::mirror::{html, Mirror, MirrorConfig, Upstream};
use anyhow::{Context, Result};
use clap::Args;
use hyper::Method;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct MirrorArgs {
    /// Address the proxy listens on, e.g. 127.0.0.1:8080.
    #[arg(long)]
    pub listen: SocketAddr,
    /// The server whose answers the clients get, http://host:port.
    #[arg(long)]
    pub primary: String,
    /// A server that gets a copy of each request: NAME=http://host:port
    /// (repeat for more).
    #[arg(long = "shadow", value_parser = parse::key_value)]
    pub shadows: Vec<(String, String)>,
    /// Methods copied to the shadows, e.g. GET,HEAD,POST (writes are not
    /// safe to duplicate unless the shadow's side effects are harmless).
    #[arg(long, value_delimiter = ',', default_value = "GET,HEAD")]
    pub mirror_methods: Vec<String>,
    /// Copies waiting per shadow; more are dropped and counted.
    #[arg(long, default_value_t = 1024)]
    pub queue: usize,
    /// Requests in flight per shadow.
    #[arg(long, default_value_t = 64)]
    pub shadow_concurrency: usize,
    /// A shadow request unanswered this long is abandoned and counted.
    #[arg(long, value_parser = parse::duration, default_value = "2s")]
    pub shadow_timeout: Duration,
    /// The client gets 504 if the primary's answer has not begun by then.
    #[arg(long, value_parser = parse::duration, default_value = "60s")]
    pub primary_timeout: Duration,
    /// Longest request body copied to shadows and the record (and answer
    /// body compared), bytes; longer bodies still reach the primary whole.
    #[arg(long, default_value_t = 1 << 20)]
    pub body_limit: usize,
    /// Compare each shadow's answer body with the primary's.
    #[arg(long)]
    pub diff_bodies: bool,
    /// A second copy of the primary: body lines where the two primaries
    /// differ (timestamps, ids) are noise and not reported.
    #[arg(long, requires = "diff_bodies")]
    pub primary_b: Option<String>,
    /// Write each request to FILE (docs/RECORD_FORMAT.md).
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Sensitive headers to keep in the record (Authorization, Cookie and
    /// Proxy-Authorization are left out otherwise).
    #[arg(long, value_delimiter = ',')]
    pub keep_headers: Vec<String>,
    /// Stop after this long (default: until Ctrl-C).
    #[arg(short = 'd', long, value_parser = parse::duration)]
    pub duration: Option<Duration>,
    /// Print the mirror-v1 document on stdout at the end.
    #[arg(long)]
    pub json: bool,
    /// Write mirror.json and mirror.html into DIR at the end.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn usage(msg: String) -> anyhow::Error {
    UsageError(msg).into()
}

impl MirrorArgs {
    fn config(&self) -> Result<MirrorConfig> {
        let primary =
            Upstream::parse(&self.primary).map_err(|e| usage(format!("--primary: {e}")))?;
        let mut cfg = MirrorConfig::new(self.listen, primary);
        for (name, url) in &self.shadows {
            let u = Upstream::parse(url).map_err(|e| usage(format!("--shadow {name}: {e}")))?;
            if cfg.shadows.iter().any(|(n, _)| n == name) {
                return Err(usage(format!(
                    "--shadow {name} is given twice; give each shadow its own name"
                )));
            }
            cfg.shadows.push((name.clone(), u));
        }
        cfg.primary_b = match &self.primary_b {
            Some(u) => Some(Upstream::parse(u).map_err(|e| usage(format!("--primary-b: {e}")))?),
            None => None,
        };
        if cfg.primary_b.is_some() && cfg.shadows.is_empty() {
            return Err(usage(
                "--primary-b filters shadows' body diffs; give a --shadow NAME=URL too".into(),
            ));
        }
        cfg.mirror_methods = self
            .mirror_methods
            .iter()
            .map(|m| {
                Method::from_bytes(m.trim().to_ascii_uppercase().as_bytes()).map_err(|_| {
                    usage(format!(
                        "--mirror-methods: '{m}' is not a method; write e.g. GET,HEAD,POST"
                    ))
                })
            })
            .collect::<Result<_>>()?;
        if self.queue == 0 || self.shadow_concurrency == 0 {
            return Err(usage(
                "--queue and --shadow-concurrency must be at least 1".into(),
            ));
        }
        if self.shadow_timeout.is_zero() || self.primary_timeout.is_zero() {
            return Err(usage("timeouts must be longer than zero, e.g. 2s".into()));
        }
        cfg.queue = self.queue;
        cfg.shadow_concurrency = self.shadow_concurrency;
        cfg.shadow_timeout = self.shadow_timeout;
        cfg.primary_timeout = self.primary_timeout;
        cfg.body_limit = self.body_limit;
        cfg.diff_bodies = self.diff_bodies;
        cfg.record = self.record.clone();
        cfg.keep_headers = self.keep_headers.clone();
        Ok(cfg)
    }
}

/// `rackbench mirror`.
pub fn run(args: MirrorArgs) -> Result<ExitCode> {
    if args.shadows.is_empty() && args.record.is_none() {
        return Err(usage(
            "nothing to do: give --shadow NAME=URL (or --record FILE, or use `rackbench record`)"
                .into(),
        ));
    }
    serve(args)
}

/// `rackbench record`: the proxy with no shadows, writing a record.
pub fn run_record(args: MirrorArgs) -> Result<ExitCode> {
    if !args.shadows.is_empty() {
        return Err(usage(
            "`rackbench record` takes no --shadow; use `rackbench mirror ... --record FILE`".into(),
        ));
    }
    if args.record.is_none() {
        return Err(usage("`rackbench record` needs --record FILE".into()));
    }
    serve(args)
}

fn serve(args: MirrorArgs) -> Result<ExitCode> {
    let cfg = args.config()?;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create {}; pick a writable --out", dir.display()))?;
    }
    super::raise_fd_limit();
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGINT, libc::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let mirror = Mirror::start(cfg)?;
    eprintln!("mirror listening on http://{}/", mirror.addr);
    let t0 = Instant::now();
    let mut next = Duration::from_secs(1);
    loop {
        std::thread::sleep(Duration::from_millis(50));
        if stop.load(Ordering::Relaxed) || args.duration.is_some_and(|d| t0.elapsed() >= d) {
            break;
        }
        if t0.elapsed() >= next {
            eprintln!("{}", mirror.snapshot().summary_line());
            next += Duration::from_secs(1);
        }
    }
    let doc = mirror.stop();
    eprintln!("{}", doc.summary_line());
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    if let Some(dir) = &args.out {
        let json = dir.join("mirror.json");
        std::fs::write(&json, serde_json::to_string_pretty(&doc)? + "\n")
            .with_context(|| format!("cannot write {}", json.display()))?;
        let page = dir.join("mirror.html");
        std::fs::write(&page, html::page(&doc))
            .with_context(|| format!("cannot write {}", page.display()))?;
        eprintln!("wrote {} and {}", json.display(), page.display());
    }
    Ok(ExitCode::SUCCESS)
}
