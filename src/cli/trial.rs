//! `rackbench trial`: one server, one app, one load, end to end.

use super::load::{stop_on_signals, LoadOptions};
use super::{parse, UsageError};
use crate::lab::apps::AppSpec;
use crate::lab::front::{self, HttpVersion};
use crate::lab::trial::{run_trial, Topology, TrialRecord, TrialSpec};
use crate::load::report::{fmt_bytes, fmt_us};
use crate::server::spec::ServerSpec;
use anyhow::Result;
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Server-side options shared by `trial` and the plan runner.
#[derive(Debug, Clone, Args)]
pub struct ServerOptions {
    /// Server adapter (see `rackbench servers`), or a name for --command.
    #[arg(long)]
    pub server: Option<String>,
    /// Built-in app (hello, ip, sleep, fib, primes, rails, rails-fib) or a rackup file path.
    #[arg(long, default_value = "hello")]
    pub app: String,
    /// Body substring a user's app must answer with.
    #[arg(long = "app-expect-body")]
    pub app_expect_body: Option<String>,
    /// Request path (and query) for a user's app.
    #[arg(long = "app-path")]
    pub app_path: Option<String>,
    /// Worker processes.
    #[arg(long)]
    pub workers: Option<u32>,
    /// Threads per worker.
    #[arg(long)]
    pub threads: Option<u32>,
    /// Server setting, name=value (e.g. rb_gc_freq=10 for uwsgi, preload=true).
    #[arg(long = "set", value_parser = parse::key_value)]
    pub settings: Vec<(String, String)>,
    /// Environment for the server, NAME=value (e.g. RUBY_GC_MALLOC_LIMIT=90000000).
    #[arg(long = "env", value_parser = parse::key_value)]
    pub env: Vec<(String, String)>,
    /// A user-defined server: command template with {{port}}, {{app}}, ...
    #[arg(long)]
    pub command: Option<String>,
    /// Extra server definitions (TOML, same shape as ruby/servers/servers.toml).
    #[arg(long)]
    pub servers_file: Vec<PathBuf>,
    /// Put nginx in front: --behind nginx.
    #[arg(long, value_parser = ["nginx"])]
    pub behind: Option<String>,
    /// nginx worker processes when behind nginx.
    #[arg(long, default_value_t = 1)]
    pub nginx_workers: u32,
    /// Behind nginx, connect over TCP even when the server can use a unix socket.
    #[arg(long)]
    pub nginx_tcp: bool,
    /// nginx's upstream keep-alive: off, or the pool size per worker [default: 64].
    #[arg(long, value_name = "off|N", requires = "behind", value_parser = crate::lab::front::parse_keepalive)]
    pub nginx_keepalive: Option<u32>,
    /// HTTP version nginx speaks to the server: 1.0 (no keep-alive) or 1.1 [default: 1.1].
    #[arg(long, value_name = "1.0|1.1", requires = "behind")]
    pub nginx_http: Option<HttpVersion>,
    /// Copies of the server behind nginx, each on its own socket or port,
    /// balanced as one upstream (seed 000: four thin) [default: 1].
    #[arg(long, value_name = "N", requires = "behind")]
    pub instances: Option<u32>,
    /// Pin the server to these CPUs [default: all but the last core on machines with 2+ cores].
    #[arg(long, value_parser = parse::cpu_list)]
    pub server_cpus: Option<Vec<usize>>,
    /// Do not pin the server or the generator to CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// How long the server may take to answer its first request.
    #[arg(long, value_parser = parse::duration)]
    pub start_timeout: Option<Duration>,
    /// Keep server logs and rendered configs here [default: a temporary directory].
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TrialArgs {
    #[command(flatten)]
    pub server: ServerOptions,
    #[command(flatten)]
    pub load: LoadOptions,
    /// Load generator threads.
    #[arg(long, default_value_t = 1)]
    pub load_threads: usize,
    /// Print one JSON document (rackbench/trial-v1).
    #[arg(long)]
    pub json: bool,
}

/// The default CPU split: on 2+ cores the generator gets the last core and
/// the server the others, so they do not steal each other's cycles.
pub fn default_pinning() -> (Vec<usize>, Vec<usize>) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 {
        return (Vec::new(), Vec::new());
    }
    ((0..cores - 1).collect(), vec![cores - 1])
}

impl ServerOptions {
    pub fn to_spec(
        &self,
        load: &LoadOptions,
        load_threads: usize,
        interrupt: Arc<AtomicBool>,
    ) -> Result<TrialSpec> {
        let usage = |m: String| anyhow::Error::new(UsageError(m));
        let reg = super::servers::registry(&self.servers_file)?;
        let name = self.server.as_deref().ok_or_else(|| {
            usage("name the server: --server puma (see `rackbench servers`)".into())
        })?;
        let server = match &self.command {
            Some(cmd) => ServerSpec::custom(name, cmd),
            None => reg.get(name).map_err(|e| usage(e.to_string()))?.clone(),
        };
        if self.command.is_none() && !server.installed() {
            return Err(usage(format!(
                "{} is not installed (needs {} on PATH); on Debian: apt-get install {}",
                server.name,
                server.requires.join(", "),
                debian_package(&server.name)
            )));
        }
        let mut app = AppSpec::resolve(&self.app).map_err(|e| usage(e.to_string()))?;
        if let Some(b) = &self.app_expect_body {
            app.expect_body = b.clone();
        }
        if let Some(p) = &self.app_path {
            if !p.starts_with('/') {
                return Err(usage(format!("--app-path '{p}' must start with '/'")));
            }
            app.path = p.clone();
        }
        let (default_server_cpus, default_load_cpus) = if self.no_pin {
            (Vec::new(), Vec::new())
        } else {
            default_pinning()
        };
        let mut cfg = load.to_config("http://127.0.0.1:1/", load_threads)?;
        if load.load_cpus.is_none() {
            cfg.cpus = default_load_cpus;
        }
        if self.no_pin {
            cfg.cpus = Vec::new();
        }
        cfg.interrupt = Arc::clone(&interrupt);
        let dir = match &self.work_dir {
            Some(d) => d.clone(),
            None => std::env::temp_dir().join(format!(
                "rackbench-trial-{}-{}",
                std::process::id(),
                server.name
            )),
        };
        Ok(TrialSpec {
            server,
            app,
            workers: self.workers,
            threads: self.threads,
            settings: self.settings.iter().cloned().collect::<BTreeMap<_, _>>(),
            env: self.env.clone(),
            topology: self.topology()?,
            load: cfg,
            server_cpus: if self.no_pin {
                Vec::new()
            } else {
                self.server_cpus.clone().unwrap_or(default_server_cpus)
            },
            start_timeout: self.start_timeout,
            grace: Duration::from_secs(10),
            dir,
            interrupt,
            sample_interval: Duration::from_millis(200),
            stop_on_errors: false,
        })
    }
}

impl ServerOptions {
    /// Where the load enters, from --behind and the nginx knobs.
    fn topology(&self) -> Result<Topology> {
        if self.behind.as_deref() != Some("nginx") {
            return Ok(Topology::Direct);
        }
        let keepalive = self.nginx_keepalive.unwrap_or(front::DEFAULT_KEEPALIVE);
        let http_version = self.nginx_http.unwrap_or_default();
        if let Some(why) = front::conflict(keepalive, http_version) {
            let fix = if self.nginx_keepalive.is_some() {
                "add --nginx-keepalive off or use --nginx-http 1.1"
            } else {
                "add --nginx-keepalive off"
            };
            return Err(UsageError(format!("--nginx-http {http_version}: {why} ({fix})")).into());
        }
        if self.instances == Some(0) {
            return Err(UsageError("--instances 0: give 1 or more".into()).into());
        }
        Ok(Topology::Nginx {
            workers: self.nginx_workers.max(1),
            unix_socket: !self.nginx_tcp,
            keepalive,
            http_version,
            instances: self.instances.unwrap_or(1),
        })
    }
}

fn debian_package(server: &str) -> &'static str {
    match server {
        "puma" => "puma",
        "unicorn" => "unicorn",
        "thin" => "thin",
        "passenger" => "passenger",
        "webrick" => "ruby-webrick ruby-rack",
        "uwsgi" => "uwsgi-core uwsgi-plugin-rack-ruby3.1",
        _ => "the server's package",
    }
}

pub fn render_trial(r: &TrialRecord) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let m = &r.server_metrics;
    let _ = writeln!(
        s,
        "{} {} ({} workers, {} threads) · app {} · {}",
        r.server.name,
        r.server.version.as_deref().unwrap_or(""),
        r.server.workers,
        r.server.threads,
        r.app.name,
        match &r.topology.topology {
            Topology::Direct => "direct".to_string(),
            t @ Topology::Nginx { instances, .. } => format!(
                "behind {}{}",
                t.label(),
                if *instances > 1 {
                    format!(" · {instances} instances")
                } else {
                    String::new()
                }
            ),
        }
    );
    s.push_str(&r.load.render_text());
    let _ = writeln!(
        s,
        "  server:      cpu {:.2}s user + {:.2}s sys ({} per request), RSS peak {}, PSS peak {}, USS peak {}, {} processes",
        m.cpu_user_s,
        m.cpu_sys_s,
        m.cpu_ms_per_request.map_or("-".into(), |v| fmt_us(v * 1000.0)),
        fmt_bytes(m.rss_peak_bytes),
        m.pss_peak_bytes.map_or("-".into(), fmt_bytes),
        m.uss_peak_bytes.map_or("-".into(), fmt_bytes),
        m.processes_peak
    );
    if let Some(e) = &r.server_exit {
        let _ = writeln!(s, "  SERVER DIED: {e}");
    }
    let _ = writeln!(s, "  logs:        {}", r.dir);
    s
}

pub fn run(args: TrialArgs) -> Result<ExitCode> {
    let interrupt = Arc::new(AtomicBool::new(false));
    stop_on_signals(&interrupt, false);
    super::raise_fd_limit();
    let spec = args
        .server
        .to_spec(&args.load, args.load_threads, Arc::clone(&interrupt))?;
    if !args.json {
        eprintln!("starting {} with {} ...", spec.server.name, spec.app.name);
    }
    let record = run_trial(spec)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&record)?);
    } else {
        print!("{}", render_trial(&record));
    }
    Ok(if record.server_exit.is_some() {
        ExitCode::from(1)
    } else if record.interrupted {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}
