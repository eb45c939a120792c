//! The server flags `trial`, `breakpoint`, `fit` and `mirror
//! --shadow-server` share (`ServerOptions`), turned with the load flags
//! into one trial's `TrialSpec`.

use super::flags::{BudgetFlags, DatabaseFlags, RuntimeFlags};
use super::load_options::LoadOptions;
use super::{parse, usage};
use crate::lab::apps::AppSpec;
use crate::lab::front::{self, HttpVersion};
use crate::lab::trial::{Topology, TrialSpec};
use crate::server::spec::ServerSpec;
use anyhow::Result;
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Server-side options shared by `trial` and the plan runner.
#[derive(Debug, Clone, Args)]
pub struct ServerOptions {
    /// Server adapter (see `rackbench servers`), or a name for --command.
    #[arg(long)]
    pub server: Option<String>,
    /// Built-in app (hello, ip, sleep, sleep-1ms, fib, primes, memory, leak, rails, rails-fib, gc-profiler, blog) or a rackup file path.
    #[arg(long, default_value = "hello")]
    pub app: String,
    /// Body substring a user's app must answer with.
    #[arg(long = "app-expect-body")]
    pub app_expect_body: Option<String>,
    /// The most of the app's answer the check before the load reads, e.g.
    /// 64M (the default) or 1G; a body past it without the expected text
    /// is refused in words.
    #[arg(long = "check-max-body", value_name = "SIZE", value_parser = check_max_body)]
    pub check_max_body: Option<u64>,
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
    // The full path keeps clap from reading `Vec` as "the flag repeated"
    // (it panicked on any use): the value is one list.
    pub server_cpus: Option<::std::vec::Vec<usize>>,
    /// Do not pin the server or the generator to CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// How long the server may take to answer its first request.
    #[arg(long, value_parser = parse::duration)]
    pub start_timeout: Option<Duration>,
    /// Keep server logs and rendered configs here [default: a temporary directory].
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Wrap the app in rackbench's telemetry middleware: app time, queue
    /// time behind nginx, GC runs and time (docs/TELEMETRY.md).
    #[arg(long)]
    pub telemetry: bool,
    #[command(flatten)]
    pub on: RuntimeFlags,
    #[command(flatten)]
    pub budget: BudgetFlags,
    #[command(flatten)]
    pub database: DatabaseFlags,
}

impl ServerOptions {
    pub fn to_spec(
        &self,
        load: &LoadOptions,
        load_threads: usize,
        interrupt: Arc<AtomicBool>,
    ) -> Result<TrialSpec> {
        if let (Some(cpus), false) = (&self.server_cpus, self.no_pin) {
            crate::load::cpus::check(cpus, "--server-cpus").map_err(usage)?;
        }
        let reg = crate::app::servers::registry(&self.servers_file)?;
        let name = self.server.as_deref().ok_or_else(|| {
            usage("name the server: --server puma (see `rackbench servers`)".into())
        })?;
        let server = match &self.command {
            Some(cmd) => {
                let spec = ServerSpec::custom(name, cmd);
                spec.check_listens()
                    .map_err(|e| usage(format!("--command: {e}")))?;
                spec
            }
            None => reg.get(name).map_err(|e| usage(e.to_string()))?.clone(),
        };
        let switches = self.on.switches();
        let runtime = resolve_runtime(self.on.runtime.as_deref(), &switches)?;
        if let Some(rt) = &runtime {
            rt.check_server(&server.name, &server.requires)
                .map_err(|e| usage(e.to_string()))?;
            switches.env(rt).map_err(|e| usage(e.to_string()))?;
        }
        let on_host = runtime.as_ref().is_none_or(|rt| rt.is_system());
        if self.command.is_none() && on_host && !server.installed() {
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
        if let Some(cap) = self.check_max_body {
            app.check_max_body_bytes = cap;
        }
        if let Some(p) = &self.app_path {
            if !p.starts_with('/') {
                return Err(usage(format!("--app-path '{p}' must start with '/'")));
            }
            app.path = p.clone();
        }
        apply_request_flags(&mut app, load, self.app_expect_body.is_some()).map_err(usage)?;
        let (default_server_cpus, default_load_cpus) = if self.no_pin {
            (Vec::new(), Vec::new())
        } else {
            crate::app::os::default_pinning()
        };
        let mut cfg = load.to_config("http://127.0.0.1:1/", load_threads)?;
        super::load_options::slack_needs_open_loop(&cfg.slack, cfg.pacing.is_open(), "--rate R")?;
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
            telemetry: self.telemetry,
            runtime,
            switches,
            budget: self.budget.budget(),
            restart: None,
            soak: None,
            database: self.database.database,
            profile: None,
        })
    }
}

/// The runtime `name` names, built on first use and probed; None when
/// neither a runtime nor a switch is asked (the host, unprobed).
pub fn resolve_runtime(
    name: Option<&str>,
    switches: &crate::runtime::Switches,
) -> Result<Option<crate::runtime::Runtime>> {
    if name.is_none() && switches.is_empty() {
        return Ok(None);
    }
    let reg =
        crate::runtime::Registry::load(&Default::default()).map_err(|e| usage(e.to_string()))?;
    let rt = reg
        .resolve(name.unwrap_or(crate::runtime::SYSTEM), &mut |m| {
            eprintln!("{m}")
        })
        .map_err(|e| usage(e.to_string()))?;
    Ok(Some(rt))
}

/// `--check-max-body SIZE`: bytes, or with K, M, G (64M, 1G).
fn check_max_body(text: &str) -> Result<u64, String> {
    crate::budget::parse_size(text).map_err(|_| {
        format!("--check-max-body '{text}': write bytes or a number with K, M or G, like 64M or 1G")
    })
}

/// The load flags that shape the request and its expected answer, applied
/// to the app the lab verifies and loads: -m, -H, --body/--body-file,
/// --expect-status, --expect-body. A flag the lab cannot honour is
/// refused, naming what to use instead.
fn apply_request_flags(
    app: &mut AppSpec,
    load: &LoadOptions,
    app_body: bool,
) -> Result<(), String> {
    if let Some(p) = &load.unix_socket {
        return Err(format!(
            "--unix-socket {} does not apply to a trial: the lab chooses where the server listens; for a unix socket between nginx and the server use --behind nginx",
            p.display()
        ));
    }
    app.method = load.method.to_ascii_uppercase();
    app.headers = load.headers.clone();
    app.body = match (&load.body, &load.body_file) {
        (Some(b), _) => b.clone().into_bytes(),
        (None, Some(path)) => crate::app::load::read_body(path).map_err(|e| e.to_string())?,
        (None, None) => Vec::new(),
    };
    if let Some(crate::load::ExpectStatus::Codes(codes)) = &load.expect_status {
        match codes.as_slice() {
            [one] => app.expect_status = *one,
            _ => {
                return Err(
                    "a trial verifies its app against one status: give one code, e.g. --expect-status 201"
                        .into(),
                )
            }
        }
    }
    if app.method == "HEAD" && !app_body {
        // The answer to a HEAD has no body to hold the app's text.
        app.expect_body.clear();
    }
    if let Some(b) = &load.expect_body {
        if app_body {
            return Err(
                "--expect-body and --app-expect-body both set the body the app must answer: keep one"
                    .into(),
            );
        }
        app.expect_body = b.clone();
    }
    Ok(())
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
            return Err(usage(format!("--nginx-http {http_version}: {why} ({fix})")));
        }
        if self.instances == Some(0) {
            return Err(usage("--instances 0: give 1 or more".into()));
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

/// `--profile` and its rate (issue 40, docs/PROFILES.md): on `trial`,
/// apart from `ServerOptions` so the commands that share those but do
/// not profile never show it.
#[derive(Debug, Clone, Args)]
pub struct ProfileFlags {
    /// Sample every Ruby process of the server's tree with rbspy over the
    /// counted window (never the warm-up): collapsed stacks, speedscope
    /// JSON and the top frames, in the work dir's profile/ (docs/PROFILES.md).
    #[arg(long)]
    pub profile: bool,
    /// Samples a second per process with --profile.
    #[arg(long, value_name = "HZ", requires = "profile",
          default_value_t = crate::profile::DEFAULT_RATE_HZ,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub profile_rate: u32,
}

impl ProfileFlags {
    /// What the trial is asked: its files into `dir`'s `profile/`.
    pub fn ask(&self, dir: &std::path::Path) -> Option<crate::lab::spec::ProfileAsk> {
        self.profile.then(|| crate::lab::spec::ProfileAsk {
            rate_hz: self.profile_rate,
            results_dir: dir.to_path_buf(),
            subdir: PathBuf::from("profile"),
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
