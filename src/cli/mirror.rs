//! `rackbench mirror` and `rackbench record`: the traffic-duplicating proxy
//! in the foreground, a live summary once a second on stderr, the
//! mirror-v1 document (and `mirror.html`) at the end.

use super::{parse, usage};
use crate::app::sink::Terminal;
use crate::lab::trial::LabServer;
use crate::mirror::{MirrorConfig, ShadowSend, Upstream};
use anyhow::Result;
use clap::Args;
use hyper::Method;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

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
    /// When copies go to the shadows: `answered` (once the client has the
    /// primary's answer, so shadow work never competes with the request
    /// the client waits for) or `arrival` (as soon as the request is in).
    #[arg(long, value_parser = ShadowSend::parse, default_value = "answered")]
    pub shadow_send: ShadowSend,
    /// Threads relaying the primary path. One keeps a request's hand-overs
    /// on one thread (lowest added latency); more for rates one core
    /// cannot relay.
    #[arg(long, default_value_t = 1)]
    pub proxy_threads: usize,
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
    /// Start a lab server as one more shadow, as a trial starts it
    /// (verified, its process tree sampled, stopped on exit), e.g.
    /// --shadow-server puma --workers 4 --app PATH; the server options
    /// below shape it.
    #[arg(long, value_name = "NAME")]
    pub shadow_server: Option<String>,
    #[command(flatten, next_help_heading = "Shadow server (with --shadow-server)")]
    pub server: super::server_options::ServerOptions,
    #[command(flatten)]
    pub metrics: super::flags::MetricsFlags,
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
        if self.proxy_threads == 0 {
            return Err(usage("--proxy-threads must be at least 1".into()));
        }
        cfg.threads = self.proxy_threads;
        if self.shadow_timeout.is_zero() || self.primary_timeout.is_zero() {
            return Err(usage("timeouts must be longer than zero, e.g. 2s".into()));
        }
        cfg.queue = self.queue;
        cfg.shadow_concurrency = self.shadow_concurrency;
        cfg.shadow_timeout = self.shadow_timeout;
        cfg.shadow_send = self.shadow_send;
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
    if args.shadows.is_empty() && args.record.is_none() && args.shadow_server.is_none() {
        return Err(usage(
            "nothing to do: give --shadow NAME=URL (or --record FILE, or use `rackbench record`)"
                .into(),
        ));
    }
    serve(args, "mirror")
}

/// `rackbench record`: the proxy with no shadows, writing a record.
pub fn run_record(args: MirrorArgs) -> Result<ExitCode> {
    if !args.shadows.is_empty() || args.shadow_server.is_some() {
        return Err(usage(
            "`rackbench record` takes no --shadow or --shadow-server; use `rackbench mirror ... --record FILE`".into(),
        ));
    }
    if args.record.is_none() {
        return Err(usage("`rackbench record` needs --record FILE".into()));
    }
    serve(args, "record")
}

/// Starts `--shadow-server`'s lab server; None without the flag.
fn start_shadow_server(
    args: &MirrorArgs,
    stop: &Arc<AtomicBool>,
) -> Result<Option<(String, LabServer)>> {
    let Some(name) = &args.shadow_server else {
        if args.server.server.is_some() {
            return Err(usage(
                "--server names the shadow server here: write --shadow-server NAME".into(),
            ));
        }
        return Ok(None);
    };
    if args.server.server.is_some() {
        return Err(usage(
            "give the shadow server once, as --shadow-server NAME (not --server)".into(),
        ));
    }
    if args.shadows.iter().any(|(n, _)| n == name) {
        return Err(usage(format!(
            "--shadow {name} and --shadow-server {name} share a name; rename the --shadow"
        )));
    }
    let mut opts = args.server.clone();
    opts.server = Some(name.clone());
    // The lab's request checks use the load options; a mirror has none of
    // its own, so they are the defaults of `rackbench load`.
    let load = <LoadDefaults as clap::Parser>::parse_from(["rackbench"]).options;
    let spec = opts.to_spec(&load, 1, Arc::clone(stop))?;
    eprintln!("starting shadow server {name} ...");
    let server = crate::lab::trial::start_server(&spec)?;
    Ok(Some((name.clone(), server)))
}

#[derive(clap::Parser)]
struct LoadDefaults {
    #[command(flatten)]
    options: super::load_options::LoadOptions,
}

fn serve(args: MirrorArgs, command: &str) -> Result<ExitCode> {
    let cfg = args.config()?;
    let live = args.metrics.start(command)?;
    if let Some(dir) = &args.out {
        crate::app::mirror::create_out(dir)?;
    }
    crate::load::raise_open_files_limit();
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGINT, libc::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    // Dropped (stopped) on every way out of this function.
    let shadow_server = start_shadow_server(&args, &stop)?;
    let doc =
        crate::app::mirror::serve(cfg, shadow_server, args.duration, &stop, &Terminal::new())?;
    eprintln!("{}", doc.summary_line());
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    if let Some(dir) = &args.out {
        let (json, page) = crate::app::mirror::write_out(dir, &doc)?;
        eprintln!("wrote {} and {}", json.display(), page.display());
    }
    super::flags::finish_live(live);
    Ok(ExitCode::SUCCESS)
}
