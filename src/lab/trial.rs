//! One trial end to end: start the server (behind nginx if asked), verify
//! the app's answer, apply warm-up and load with no pause between them,
//! sample the server's process tree, stop everything, and return a
//! `rackbench/trial-v1` record.
//!
//! Every process a trial starts is stopped before `run_trial` returns, on
//! success, on failure and on Ctrl-C: servers are held by
//! `supervisor::Running`, which stops its process tree when dropped.

// A failed trial's error carries the log tail and the answer seen; it is
// built once per failure, so its size does not matter.
#![allow(clippy::result_large_err)]

use super::apps::AppSpec;
use super::environment::Environment;
use super::front::{self, HttpVersion, NginxConf};
use crate::host::{free_port, rackbench_home, utc_now};
use crate::load::window::Window;
use crate::load::{self, Endpoint, LoadConfig, LoadReport};
use crate::sampler::{Disturbance, DisturbanceWatch, Sampler, SamplerReport, Scope};
use crate::server::probe::Answer;
use crate::server::spec::{read_version, Missing, ServerSpec};
use crate::server::supervisor::{self, Launch, Probe, Running, StartError};
use crate::server::template::{self, Vars};
use crate::telemetry::{AcceptQueue, Listen, Telemetry};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use thiserror::Error;

pub const SCHEMA: &str = "rackbench/trial-v1";

#[derive(Debug, Error)]
pub enum TrialError {
    #[error("{server} cannot run {what}: {fix}")]
    Unsupported {
        server: String,
        what: String,
        fix: String,
    },
    #[error("server '{server}': {source}")]
    Template {
        server: String,
        source: template::TemplateError,
    },
    #[error("{0}")]
    Start(#[from] StartError),
    #[error("{server} answered {path} with status {status} and body \"{body}\", expected status {expect_status} and a body containing \"{expect_body}\"; last lines of its log {log}:\n{tail}")]
    WrongAnswer {
        server: String,
        path: String,
        status: u16,
        body: String,
        expect_status: u16,
        expect_body: String,
        log: String,
        tail: String,
    },
    #[error("cannot prepare the trial directory {dir}: {source}")]
    Io { dir: String, source: std::io::Error },
    #[error("no free port on 127.0.0.1: {0}")]
    Port(std::io::Error),
    #[error("nginx is not installed: apt-get install nginx-light (needed for --behind nginx)")]
    NoNginx,
    #[error("load run failed: {0}")]
    Load(std::io::Error),
    #[error("the trial's request cannot be sent: {0}")]
    Request(crate::load::target::TargetError),
    #[error("{server} did not answer the trial's {method} {path}: {source}")]
    Verify {
        server: String,
        method: String,
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    PortOwner(#[from] crate::sampler::PortError),
}

/// Where the load enters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Topology {
    Direct,
    /// nginx in front, talking to the server over a unix socket (when the
    /// server can) or TCP.
    Nginx {
        workers: u32,
        unix_socket: bool,
        /// Upstream keep-alive pool per nginx worker; 0 is off.
        #[serde(default = "default_keepalive")]
        keepalive: u32,
        /// The HTTP version nginx speaks to the server: "1.0" or "1.1".
        #[serde(default)]
        http_version: HttpVersion,
        /// Copies of the server, each on its own socket or port, that
        /// nginx balances as one upstream (seed 000's four thin).
        #[serde(default = "one_instance")]
        instances: u32,
    },
}

fn default_keepalive() -> u32 {
    super::front::DEFAULT_KEEPALIVE
}
fn one_instance() -> u32 {
    1
}

impl Topology {
    /// nginx in front with rackbench's defaults: a unix socket when the
    /// server has one, a keep-alive pool of 64 over HTTP/1.1, one instance.
    pub fn nginx(workers: u32) -> Topology {
        Topology::Nginx {
            workers,
            unix_socket: true,
            keepalive: default_keepalive(),
            http_version: HttpVersion::default(),
            instances: 1,
        }
    }

    /// How many copies of the server this topology runs.
    pub fn instances(&self) -> u32 {
        match self {
            Topology::Direct => 1,
            Topology::Nginx { instances, .. } => (*instances).max(1),
        }
    }

    /// "direct", or the front's label ("nginx×1 http/1.0 keepalive off").
    pub fn label(&self) -> String {
        match self {
            Topology::Direct => "direct".into(),
            Topology::Nginx {
                workers,
                keepalive,
                http_version,
                ..
            } => super::front::label(*workers, *keepalive, *http_version),
        }
    }
}

/// Everything one trial needs.
#[derive(Debug, Clone)]
pub struct TrialSpec {
    pub server: ServerSpec,
    pub app: AppSpec,
    pub workers: Option<u32>,
    pub threads: Option<u32>,
    /// Overrides of the server's [settings].
    pub settings: BTreeMap<String, String>,
    /// Extra environment for the server (RUBY_GC_* and the like).
    pub env: Vec<(String, String)>,
    pub topology: Topology,
    /// Load options; the URL and endpoint are filled in by the trial.
    pub load: LoadConfig,
    pub server_cpus: Vec<usize>,
    pub start_timeout: Option<Duration>,
    pub grace: Duration,
    /// The trial's scratch directory (created; logs stay there).
    pub dir: PathBuf,
    pub interrupt: Arc<AtomicBool>,
    pub sample_interval: Duration,
    /// End the load at the first second with errors, warm-up included
    /// (break-point steps: a failing level needs no full run to be known
    /// as failing).
    pub stop_on_errors: bool,
    /// Put rackbench's telemetry middleware around the app (app time,
    /// queue time behind nginx, GC): docs/TELEMETRY.md.
    pub telemetry: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerInfo {
    pub name: String,
    pub version: Option<String>,
    pub command: String,
    pub workers: u32,
    pub threads: u32,
    pub env: BTreeMap<String, String>,
    pub settings: BTreeMap<String, String>,
    /// The rendered config file, when the server uses one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_file: Option<String>,
    /// Copies of the server run side by side behind nginx (`command` is
    /// the first one's; all are in `commands`).
    #[serde(default = "one_instance")]
    pub instances: u32,
    /// Every instance's command line, when there is more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerMetrics {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub rss_peak_bytes: u64,
    pub pss_peak_bytes: Option<u64>,
    pub uss_peak_bytes: Option<u64>,
    pub rss_mean_bytes: u64,
    pub pss_mean_bytes: Option<u64>,
    pub processes_peak: u32,
    /// Server CPU (user + system) per OK response, in milliseconds.
    pub cpu_ms_per_request: Option<f64>,
    /// The full sampler output (timeline included).
    pub samples: SamplerReport,
    /// What the telemetry middleware saw inside the server, over the
    /// counted window (`--telemetry`; docs/TELEMETRY.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    /// The server's own listening socket's accept queue over the counted
    /// window, summed over its instances. Sampled on every trial: it needs
    /// nothing from the app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_queue: Option<AcceptQueue>,
    /// The server's own view of its queue, per field its adapter names
    /// (puma: backlog, running, pool_capacity), summed over instances and
    /// workers, over the counted window. Telemetry on, servers with
    /// `stats` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_stats: Option<BTreeMap<String, AcceptQueue>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TopologyInfo {
    #[serde(flatten)]
    pub topology: Topology,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nginx_command: Option<String>,
    /// The first (or only) upstream server; all of them in `upstreams`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// Every upstream server nginx balances over, one per instance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstreams: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nginx_metrics: Option<SamplerReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verified {
    pub path: String,
    pub status: u16,
    pub body: String,
}

/// The `rackbench/trial-v1` record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialRecord {
    pub schema: String,
    /// RFC 3339 UTC, before the server was started.
    pub started_at: String,
    /// RFC 3339 UTC, once everything the trial started had stopped (empty
    /// in records made before this field existed).
    #[serde(default)]
    pub ended_at: String,
    pub server: ServerInfo,
    pub app: AppSpec,
    pub topology: TopologyInfo,
    pub verify: Verified,
    pub load: LoadReport,
    pub server_metrics: ServerMetrics,
    pub environment: Environment,
    /// Set when the server died during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_exit: Option<String>,
    /// CPU steal and the CPU of processes not the trial's on the server's
    /// and the generator's CPUs over the counted window (see
    /// `sampler::disturbance`). Absent in records made before it existed,
    /// null when the window never opened or /proc/stat was unreadable.
    #[serde(default)]
    pub disturbance: Option<Disturbance>,
    /// PIDs that ignored the stop signal and needed SIGKILL.
    pub killed_after_grace: Vec<u32>,
    /// The load was ended early at its first second with errors (a
    /// break-point step that failed).
    #[serde(default)]
    pub stopped_on_errors: bool,
    /// Whether the telemetry middleware was on (false in records made
    /// before it existed).
    #[serde(default)]
    pub telemetry: bool,
    pub interrupted: bool,
    /// Where the server's log and rendered files are.
    pub dir: String,
}

/// A short directory for a trial's unix sockets and runtime files, removed
/// when dropped (after the servers, which are declared after it).
///
/// A unix socket path holds at most 107 bytes, and a results directory can
/// be deep: passenger's agent sockets under a trial directory in
/// `/work/main/results/…` went over and it would not start. So sockets live
/// in `$TMPDIR/rb-PID-N` instead (`{{run_dir}}` in templates).
struct RunDir(PathBuf);

impl RunDir {
    fn new() -> std::io::Result<RunDir> {
        use std::os::unix::fs::PermissionsExt;
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = base.join(format!("rb-{}-{n}", std::process::id()));
            match std::fs::create_dir(&dir) {
                Ok(()) => {
                    // nginx's workers run as nobody and must reach the socket.
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
                    return Ok(RunDir(dir));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn io_err(dir: &Path) -> impl Fn(std::io::Error) -> TrialError + '_ {
    move |e| TrialError::Io {
        dir: dir.display().to_string(),
        source: e,
    }
}

/// Runs one trial. The servers it starts are stopped before it returns.
///
/// Read from the top: refuse what cannot work, prepare the directories,
/// start and verify every process (the server's copies, then nginx), load
/// while watching, stop everything, write the record.
pub fn run_trial(spec: TrialSpec) -> Result<TrialRecord, TrialError> {
    let started_at = utc_now();
    validate(&spec)?;
    // Declared before the servers so it is removed after they stop.
    let prep = prepare(&spec)?;
    let mut servers = start_servers(&spec, &prep)?;
    let cfg = load_config(&spec, &servers, &prep.host)?;
    let outcome = load_while_watching(&spec, cfg, &mut servers, &prep);
    Ok(record(spec, prep, servers, outcome?, started_at))
}

/// Refuses what the server cannot do, before anything starts.
fn validate(spec: &TrialSpec) -> Result<(), TrialError> {
    let s = &spec.server;
    let unsupported = |what: String, fix: String| TrialError::Unsupported {
        server: s.name.clone(),
        what,
        fix,
    };
    let missing = s.missing(spec.workers, spec.threads, spec.settings.keys());
    match missing {
        None => {}
        Some(Missing::Processes(w)) => {
            return Err(unsupported(
                format!("{w} worker processes"),
                "it runs one process; drop --workers".into(),
            ))
        }
        Some(Missing::Threads(t)) => {
            return Err(unsupported(
                format!("{t} threads"),
                "it runs one request at a time per process; use --workers instead".into(),
            ))
        }
        Some(Missing::Setting(key)) => {
            return Err(unsupported(
                format!("--set {key}"),
                if s.settings.is_empty() {
                    "it has no settings".into()
                } else {
                    format!("its settings are {}", s.setting_names())
                },
            ))
        }
    }
    check_front(&spec.topology, s)
}

/// Where a trial runs and what its server is started with: the trial
/// directory, the app's file, the short run dir for sockets, and the
/// server's settings and environment with the trial's overrides applied.
struct Prepared {
    dir: PathBuf,
    app_file: PathBuf,
    app_dir: PathBuf,
    run_dir: RunDir,
    use_socket: bool,
    host: String,
    workers: u32,
    threads: u32,
    settings: BTreeMap<String, String>,
    env: BTreeMap<String, String>,
    /// The telemetry wrapper around the app, when on: the server is given
    /// its rackup as `{{app}}` (`{{app_dir}}` and the working directory
    /// stay the app's own) and its environment besides `env`.
    telemetry: Option<crate::telemetry::Wrapper>,
}

impl Prepared {
    /// The rackup file the server is given: the app's, or the telemetry
    /// wrapper around it.
    fn rackup(&self) -> &Path {
        self.telemetry
            .as_ref()
            .map_or(&self.app_file, |w| &w.rackup)
    }

    /// The server's environment: the trial's, plus telemetry's directory.
    /// Only `env` goes into the record, so a group's settings read the
    /// same with telemetry on or off.
    fn launch_env(&self) -> BTreeMap<String, String> {
        let mut env = self.env.clone();
        if let Some(w) = &self.telemetry {
            env.extend(w.env.iter().cloned());
        }
        env
    }
}

fn prepare(spec: &TrialSpec) -> Result<Prepared, TrialError> {
    let s = &spec.server;
    supervisor::become_subreaper();
    let dir = &spec.dir;
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let dir = dir.canonicalize().map_err(io_err(dir))?;
    let app_file = spec.app.materialize(&dir).map_err(|e| TrialError::Io {
        dir: dir.display().to_string(),
        source: std::io::Error::other(e.to_string()),
    })?;
    let app_dir = app_file.parent().unwrap_or(&dir).to_path_buf();
    let behind_nginx = matches!(spec.topology, Topology::Nginx { .. });
    let use_socket = matches!(
        spec.topology,
        Topology::Nginx {
            unix_socket: true,
            ..
        }
    ) && s.unix_socket;
    if behind_nginx && crate::server::spec::which("nginx").is_none() {
        return Err(TrialError::NoNginx);
    }
    let run_dir = RunDir::new().map_err(io_err(&std::env::temp_dir()))?;
    let mut settings = s.settings.clone();
    settings.extend(spec.settings.clone());
    let mut env: BTreeMap<String, String> = s.env.clone();
    env.extend(spec.env.iter().cloned());
    let telemetry = if spec.telemetry {
        let w = crate::telemetry::write_wrapper(
            &app_file,
            &dir.join("telemetry-wrapper"),
            &dir.join("telemetry"),
        )
        .map_err(|e| TrialError::Io {
            dir: dir.display().to_string(),
            source: std::io::Error::other(format!("{e:#}")),
        })?;
        Some(w)
    } else {
        None
    };
    Ok(Prepared {
        dir,
        app_file,
        app_dir,
        run_dir,
        use_socket,
        host: "127.0.0.1".into(),
        workers: spec.workers.unwrap_or(s.default_workers),
        threads: spec.threads.unwrap_or(s.default_threads),
        settings,
        env,
        telemetry,
    })
}

/// Every process of a trial, started and answering: the server's copies,
/// nginx in front if asked, and where the load enters. Dropping it stops
/// them all.
struct Servers {
    started: Started,
    nginx: Option<Running>,
    topo: TopologyInfo,
    /// Where the load connects: nginx, or the lone server.
    front: Endpoint,
    /// Every command run, for the environment record.
    commands: Vec<String>,
}

/// Starts the server (one copy, or several behind nginx), then nginx in
/// front if asked, each verified with the app's answer before the next.
fn start_servers(spec: &TrialSpec, prep: &Prepared) -> Result<Servers, TrialError> {
    let env = prep.launch_env();
    let started = start_instances(&Instances {
        spec,
        count: spec.topology.instances(),
        workers: prep.workers,
        threads: prep.threads,
        settings: &prep.settings,
        env: &env,
        app_file: prep.rackup(),
        app_dir: &prep.app_dir,
        dir: &prep.dir,
        run_dir: &prep.run_dir.0,
        use_socket: prep.use_socket,
        host: &prep.host,
    })?;
    let mut servers = Servers {
        front: started.endpoints[0].clone(),
        commands: started.commands.clone(),
        started,
        nginx: None,
        topo: TopologyInfo {
            topology: spec.topology.clone(),
            nginx_command: None,
            upstream: None,
            upstreams: Vec::new(),
            nginx_metrics: None,
        },
    };
    if let Topology::Nginx {
        workers: nginx_workers,
        keepalive,
        http_version,
        ..
    } = spec.topology
    {
        let upstreams: Vec<String> = servers
            .started
            .endpoints
            .iter()
            .map(|e| match e {
                Endpoint::Tcp(a) => a.to_string(),
                Endpoint::Unix(p) => format!("unix:{}", p.display()),
            })
            .collect();
        let front_port = free_port().map_err(TrialError::Port)?;
        let conf = NginxConf {
            workers: nginx_workers,
            keepalive,
            http: http_version,
            upstreams: &upstreams,
            dir: &prep.dir.display().to_string(),
            host: &prep.host,
            port: front_port,
            request_start: spec.telemetry,
        };
        let (n, ncmd) = start_nginx(spec, &conf, &prep.dir)?;
        servers.commands.push(ncmd.clone());
        servers.topo.nginx_command = Some(ncmd);
        servers.topo.upstream = upstreams.first().cloned();
        servers.topo.upstreams = upstreams;
        servers.nginx = Some(n);
        servers.front = Endpoint::Tcp(SocketAddr::from(([127, 0, 0, 1], front_port)));
    }
    Ok(servers)
}

/// The trial's load: the app's request sent to the front, warm-up flowing
/// straight into the counted window. Also records the equivalent
/// `rackbench load` command among the servers' commands.
fn load_config(spec: &TrialSpec, servers: &Servers, host: &str) -> Result<LoadConfig, TrialError> {
    let mut cfg = spec.load.clone();
    let front_url = match &servers.front {
        Endpoint::Tcp(a) => format!("http://{a}{}", spec.app.path),
        Endpoint::Unix(p) => format!("unix:{}:{}", p.display(), spec.app.path),
    };
    let parsed = load::Url::parse(&format!("http://{host}{}", spec.app.path))
        .expect("built from a valid path");
    // The client talks to nginx when there is one, and nginx keeps
    // connections alive whatever the server behind it does.
    let keep_alive = cfg.keep_alive && (spec.server.keep_alive || servers.nginx.is_some());
    let request_spec = spec
        .app
        .request_spec(keep_alive)
        .map_err(TrialError::Request)?;
    cfg.request =
        load::target::render_request(&parsed, &request_spec).map_err(TrialError::Request)?;
    cfg.keep_alive = keep_alive;
    cfg.head_request = spec.app.method == "HEAD";
    cfg.url = front_url;
    cfg.endpoint = servers.front.clone();
    cfg.expect_status = load::ExpectStatus::Codes(vec![spec.app.expect_status]);
    cfg.expect_body = spec.app.expect_body.clone().into_bytes();
    cfg.stop_on_error = spec.stop_on_errors;
    if spec.load.schedule.is_some() {
        // A replay sends its own requests: their answers are whatever the
        // app returns, judged as the replay set them.
        cfg.expect_status = spec.load.expect_status.clone();
        cfg.expect_body.clear();
        cfg.head_request = false;
    }
    Ok(cfg)
}

/// What the load and the samplers saw, once every process has stopped.
struct Watched {
    report: LoadReport,
    samples: SamplerReport,
    server_exit: Option<String>,
    killed: Vec<u32>,
    telemetry: Option<Telemetry>,
    accept_queue: Option<AcceptQueue>,
    server_stats: Option<BTreeMap<String, AcceptQueue>>,
    disturbance: Option<Disturbance>,
}

/// Runs the load while the samplers watch the server (and nginx) and a
/// watcher thread marks the counted window, passes Ctrl-C on, and ends the
/// load if a server process dies; then stops every process, so nothing is
/// left running whether the load succeeded or not.
fn load_while_watching(
    spec: &TrialSpec,
    mut cfg: LoadConfig,
    servers: &mut Servers,
    prep: &Prepared,
) -> Result<Watched, TrialError> {
    let dir = &prep.dir;
    // The load has a flag of its own: Ctrl-C (the trial's flag) sets it
    // through the watcher, and so does the server dying or a failing
    // break-point step, without stopping anything beyond this trial.
    let load_flag = Arc::new(AtomicBool::new(false));
    cfg.interrupt = Arc::clone(&load_flag);
    servers.commands.push(load_command(&cfg));

    // Further instances are rackbench's children too: `adopted_by` takes
    // them in, so the sampled "server" is every instance's tree.
    let scope = Scope {
        root: servers.started.running[0].pid,
        adopted_by: Some(std::process::id()),
        exclude: servers.nginx.iter().map(|n| n.pid).collect(),
    };
    let sampler = Arc::new(Sampler::start_scope(scope, spec.sample_interval));
    let queue = QueueWatch::start(&servers.started.endpoints);
    let stats = StatsWatch::start(&servers.started.stats, &spec.server);
    let nginx_sampler = servers
        .nginx
        .as_ref()
        .map(|n| Arc::new(Sampler::start(n.pid, spec.sample_interval)));
    // Mark the start of the counted window for the samplers, and watch for
    // the server dying mid-run (which ends the load early).
    let died = Arc::new(AtomicBool::new(false));
    let load_done = Arc::new(AtomicBool::new(false));
    let window: Arc<OnceLock<Arc<Window>>> = Arc::new(OnceLock::new());
    let disturbance = Arc::new(OnceLock::new());
    let watcher = spawn_watcher(
        WindowMark {
            window: Arc::clone(&window),
            samplers: std::iter::once(Arc::clone(&sampler))
                .chain(nginx_sampler.clone())
                .collect(),
            marked: false,
            disturbance: (measured_cpus(spec, &cfg.cpus), Arc::clone(&disturbance)),
        },
        servers.started.pids(),
        [
            Arc::clone(&died),
            Arc::clone(&load_done),
            Arc::clone(&load_flag),
            Arc::clone(&spec.interrupt),
        ],
    );
    // nginx's error log from here on says why it answered a 5xx itself.
    let nginx_log = dir.join("nginx-error.log");
    let nginx_log_offset = super::failure::log_offset(&nginx_log);
    let report = load::run_observed(
        cfg,
        |w| {
            let _ = window.set(w);
        },
        |_| {},
    );
    load_done.store(true, Ordering::Relaxed);
    let _ = watcher.join();
    let disturbance = Arc::into_inner(disturbance)
        .and_then(OnceLock::into_inner)
        .and_then(DisturbanceWatch::finish);
    let server_died = died.load(Ordering::Relaxed);
    let samples = Arc::try_unwrap(sampler)
        .ok()
        .expect("watcher joined")
        .stop();
    servers.topo.nginx_metrics =
        nginx_sampler.map(|n| Arc::try_unwrap(n).ok().expect("watcher joined").stop());
    let window_start = window.get().and_then(|w| w.start());
    let accept_queue = queue.finish(window_start);
    let server_stats = stats.and_then(|s| s.finish(window_start));
    if prep.telemetry.is_some() {
        // Every process's last second reaches its file before the stop:
        // uWSGI's INT skips at_exit, and a killed worker writes nothing.
        std::thread::sleep(Duration::from_secs_f64(flush_s(&prep.launch_env()) + 0.2));
    }
    let server_exit = server_died.then(|| servers.started.exit_report(&spec.server.name));
    let killed = stop_all(spec, servers);
    let telemetry = prep
        .telemetry
        .as_ref()
        .and_then(|w| read_telemetry(&w.data_dir, window_start));
    let mut report = report.map_err(TrialError::Load)?;
    if let Some(f) = report.first_failure.as_mut() {
        let front = servers.topo.nginx_command.is_some().then(|| {
            (
                "nginx",
                super::failure::first_error_line(&nginx_log, nginx_log_offset),
            )
        });
        super::failure::explain(f, &spec.server.name, front);
    }
    Ok(Watched {
        report,
        samples,
        server_exit,
        killed,
        telemetry,
        accept_queue,
        server_stats,
        disturbance,
    })
}

/// The equivalent `rackbench load` command, for the record.
fn load_command(cfg: &LoadConfig) -> String {
    format!(
        "rackbench load {} -c {} -t {} {}{}--warmup {:?}{}",
        cfg.url,
        cfg.connections,
        cfg.threads,
        cfg.duration.map_or(String::new(), |d| format!("-d {d:?} ")),
        cfg.requests.map_or(String::new(), |n| format!("-n {n} ")),
        cfg.warmup,
        if cfg.keep_alive {
            ""
        } else {
            " --no-keepalive"
        }
    )
}

/// The watcher: every 20 ms marks the counted window for the samplers,
/// passes Ctrl-C (`user_stop`) on to the load, and ends the load when a
/// server process dies, until `load_done`. Flags: [died, load_done,
/// load interrupt, user_stop].
fn spawn_watcher(
    mut mark: WindowMark,
    pids: Vec<u32>,
    flags: [Arc<AtomicBool>; 4],
) -> std::thread::JoinHandle<()> {
    let [died, load_done, interrupt, user_stop] = flags;
    std::thread::spawn(move || {
        while !load_done.load(Ordering::Relaxed) {
            mark.poll(Instant::now());
            if user_stop.load(Ordering::Relaxed) {
                interrupt.store(true, Ordering::Relaxed);
            }
            if !pids.iter().all(|&p| supervisor::is_alive(p)) {
                died.store(true, Ordering::Relaxed);
                interrupt.store(true, Ordering::Relaxed);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

/// Stops nginx, every instance, and the helpers the server daemonized
/// (ours, as subreaper); returns the PIDs that needed SIGKILL.
fn stop_all(spec: &TrialSpec, servers: &mut Servers) -> Vec<u32> {
    let mut killed = Vec::new();
    if let Some(mut n) = servers.nginx.take() {
        killed.extend(n.stop());
    }
    killed.extend(servers.started.stop());
    killed.extend(supervisor::stop_adopted(&[], spec.grace));
    killed
}

/// Reads the server's own stats endpoint(s) four times a second until the
/// load ends (see `server::spec::StatsSource`).
struct StatsWatch {
    fields: Vec<String>,
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Vec<(Instant, Vec<Option<f64>>)>>,
}

impl StatsWatch {
    fn start(endpoints: &[(Endpoint, Vec<u8>)], server: &ServerSpec) -> Option<StatsWatch> {
        let fields = server.stats.as_ref()?.fields.clone();
        if endpoints.is_empty() {
            return None;
        }
        let endpoints = endpoints.to_vec();
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, names) = (Arc::clone(&stop), fields.clone());
        let handle = std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let mut sums: Vec<Option<f64>> = vec![None; names.len()];
                for (endpoint, request) in &endpoints {
                    let Ok(answer) =
                        crate::server::probe::send(endpoint, request, Duration::from_millis(500))
                    else {
                        continue;
                    };
                    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&answer.body) else {
                        continue;
                    };
                    for (sum, name) in sums.iter_mut().zip(&names) {
                        if let Some(v) = sum_field(&doc, name) {
                            *sum = Some(sum.unwrap_or(0.0) + v);
                        }
                    }
                }
                samples.push((Instant::now(), sums));
                std::thread::sleep(Duration::from_millis(250));
            }
            samples
        });
        Some(StatsWatch {
            fields,
            stop,
            handle,
        })
    }

    /// Per field, what was read from `origin` on; None when nothing was.
    fn finish(self, origin: Option<Instant>) -> Option<BTreeMap<String, AcceptQueue>> {
        self.stop.store(true, Ordering::Relaxed);
        let samples = self.handle.join().ok()?;
        let origin = origin.or_else(|| samples.first().map(|s| s.0))?;
        let mut out = BTreeMap::new();
        for (i, name) in self.fields.iter().enumerate() {
            let mut rec = crate::telemetry::AcceptQueueRecorder::new();
            for (at, sums) in &samples {
                if let (true, Some(v)) = (*at >= origin, sums[i]) {
                    rec.record((*at - origin).as_secs_f64(), v.max(0.0).round() as u32);
                }
            }
            let q = rec.summary();
            if q.samples > 0 {
                out.insert(name.clone(), q);
            }
        }
        (!out.is_empty()).then_some(out)
    }
}

/// The sum of every number under key `name` anywhere in `doc`: puma's
/// single mode has `backlog` at the top, cluster mode once per worker
/// under `worker_status[].last_status`.
fn sum_field(doc: &serde_json::Value, name: &str) -> Option<f64> {
    use serde_json::Value;
    match doc {
        Value::Object(map) => {
            let mut total = map.get(name).and_then(Value::as_f64);
            for (k, v) in map {
                if k != name {
                    if let Some(x) = sum_field(v, name) {
                        total = Some(total.unwrap_or(0.0) + x);
                    }
                }
            }
            total
        }
        Value::Array(items) => items
            .iter()
            .filter_map(|v| sum_field(v, name))
            .fold(None, |acc, x| Some(acc.unwrap_or(0.0) + x)),
        _ => None,
    }
}

/// The middleware's flush interval the server runs with
/// (`RACKBENCH_TELEMETRY_FLUSH_S` in its environment or ours, default 1 s,
/// kept to the 0.05..60 the middleware accepts).
fn flush_s(env: &BTreeMap<String, String>) -> f64 {
    let key = crate::telemetry::FLUSH_ENV;
    env.get(key)
        .cloned()
        .or_else(|| std::env::var(key).ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .map_or(1.0, |v| v.clamp(0.05, 60.0))
}

/// The telemetry of the counted window: lines written from its start on,
/// timed from it. A directory that cannot be read is warned about, and the
/// record then says telemetry was on with no figures.
fn read_telemetry(data_dir: &Path, window_start: Option<Instant>) -> Option<Telemetry> {
    let start = window_start.map(unix_time_of);
    let opts = crate::telemetry::ReadOptions {
        origin_unix_s: start,
        since_unix_s: start,
    };
    match crate::telemetry::read(data_dir, opts) {
        Ok(t) => Some(t),
        Err(e) => {
            eprintln!("warning: telemetry in {}: {e:#}", data_dir.display());
            None
        }
    }
}

/// The real-time clock's reading (seconds since the epoch) at `at`.
fn unix_time_of(at: Instant) -> f64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    now - Instant::now().saturating_duration_since(at).as_secs_f64()
}

/// How often the accept queue is read: often enough to see a queue that
/// fills and drains within a second, and cheap (one /proc or netlink read
/// per instance).
const QUEUE_INTERVAL: Duration = Duration::from_millis(100);

/// Samples the accept queue of the server's own listening sockets (not
/// nginx's) from the servers' start until the load ends, summed over the
/// instances: the connections waiting for any copy of the server, which is
/// what the load feels. Timed from the counted window's start once known.
struct QueueWatch {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Vec<(Instant, u32)>>,
}

impl QueueWatch {
    fn start(endpoints: &[Endpoint]) -> QueueWatch {
        let listens: Vec<Listen> = endpoints
            .iter()
            .map(|e| match e {
                Endpoint::Tcp(a) => Listen::Tcp(a.port()),
                Endpoint::Unix(p) => Listen::Unix(p.clone()),
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let mut sum = None;
                for l in &listens {
                    match crate::telemetry::accept_queue_len(l) {
                        Ok(Some(n)) => *sum.get_or_insert(0) += n,
                        Ok(None) => {}
                        // Unreadable here (no /proc, netlink refused): the
                        // record has no accept queue rather than a wrong one.
                        Err(_) => return Vec::new(),
                    }
                }
                if let Some(n) = sum {
                    samples.push((Instant::now(), n));
                }
                std::thread::sleep(QUEUE_INTERVAL);
            }
            samples
        });
        QueueWatch { stop, handle }
    }

    /// Stops sampling; what was seen from `origin` on (from the first
    /// sample when the load never opened its window), or None.
    fn finish(self, origin: Option<Instant>) -> Option<AcceptQueue> {
        self.stop.store(true, Ordering::Relaxed);
        let samples = self.handle.join().ok()?;
        let origin = origin.or_else(|| samples.first().map(|s| s.0))?;
        let mut rec = crate::telemetry::AcceptQueueRecorder::new();
        for (at, n) in samples {
            if at >= origin {
                rec.record((at - origin).as_secs_f64(), n);
            }
        }
        let q = rec.summary();
        (q.samples > 0).then_some(q)
    }
}

/// The CPUs the disturbance record measures: the server's pin set and the
/// generator's, or every CPU this process may use when either runs
/// unpinned (it may then run anywhere).
fn measured_cpus(spec: &TrialSpec, load_cpus: &[usize]) -> Vec<usize> {
    if spec.server_cpus.is_empty() || load_cpus.is_empty() {
        return load::cpus::allowed();
    }
    let mut cpus: Vec<usize> = spec.server_cpus.iter().chain(load_cpus).copied().collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// The `rackbench/trial-v1` record of a finished trial.
fn record(
    spec: TrialSpec,
    prep: Prepared,
    servers: Servers,
    watched: Watched,
    started_at: String,
) -> TrialRecord {
    let s = &spec.server;
    let Watched {
        report,
        samples,
        server_exit,
        killed,
        telemetry,
        accept_queue,
        server_stats,
        disturbance,
    } = watched;
    let started = &servers.started;
    let server_metrics = ServerMetrics {
        cpu_user_s: samples.cpu_user_s,
        cpu_sys_s: samples.cpu_sys_s,
        rss_peak_bytes: samples.rss_peak_bytes,
        pss_peak_bytes: samples.pss_peak_bytes,
        uss_peak_bytes: samples.uss_peak_bytes,
        rss_mean_bytes: samples.rss_mean_bytes,
        pss_mean_bytes: samples.pss_mean_bytes,
        processes_peak: samples.processes_peak,
        cpu_ms_per_request: samples.cpu_ms_per_request(report.requests.ok),
        samples,
        telemetry,
        accept_queue,
        server_stats,
    };
    TrialRecord {
        schema: SCHEMA.to_string(),
        started_at,
        ended_at: utc_now(),
        server: ServerInfo {
            name: s.name.clone(),
            version: read_version(s),
            command: started.commands[0].clone(),
            workers: prep.workers,
            threads: prep.threads,
            env: prep.env.clone(),
            settings: prep.settings.clone(),
            config_file: started.config_file.clone(),
            instances: started.running.len() as u32,
            commands: if started.running.len() > 1 {
                started.commands.clone()
            } else {
                Vec::new()
            },
        },
        app: spec.app.clone(),
        topology: servers.topo.clone(),
        verify: Verified {
            path: spec.app.path.clone(),
            status: started.answer.status,
            body: started.answer.body_snippet(200),
        },
        stopped_on_errors: report.stopped_on_error,
        telemetry: spec.telemetry,
        load: report,
        server_metrics,
        environment: Environment::capture(servers.commands.clone()),
        server_exit,
        disturbance,
        killed_after_grace: killed,
        interrupted: spec.interrupt.load(Ordering::Relaxed),
        dir: prep.dir.display().to_string(),
    }
}

/// Refuses a front-end that cannot work, before anything starts.
fn check_front(topology: &Topology, s: &ServerSpec) -> Result<(), TrialError> {
    let Topology::Nginx {
        keepalive,
        http_version,
        instances,
        ..
    } = *topology
    else {
        return Ok(());
    };
    let unsupported = |what: String, fix: String| TrialError::Unsupported {
        server: s.name.clone(),
        what,
        fix,
    };
    if instances == 0 {
        return Err(unsupported(
            "0 instances".into(),
            "give --instances 1 or more".into(),
        ));
    }
    if let Some(why) = front::conflict(keepalive, http_version) {
        return Err(unsupported(
            format!("nginx HTTP/{http_version} with keep-alive {keepalive}"),
            why,
        ));
    }
    Ok(())
}

/// What `start_instances` needs to start the server under test.
struct Instances<'a> {
    spec: &'a TrialSpec,
    /// Copies of the server, each on its own socket or port.
    count: u32,
    workers: u32,
    threads: u32,
    /// The server's settings with the trial's overrides applied.
    settings: &'a BTreeMap<String, String>,
    env: &'a BTreeMap<String, String>,
    app_file: &'a Path,
    app_dir: &'a Path,
    dir: &'a Path,
    run_dir: &'a Path,
    use_socket: bool,
    host: &'a str,
}

/// The server under test, started and verified: one or several instances.
/// Dropping it stops them all (each `Running` stops its tree).
struct Started {
    running: Vec<Running>,
    endpoints: Vec<Endpoint>,
    commands: Vec<String>,
    /// The first instance's rendered config file.
    config_file: Option<String>,
    /// The first instance's answer to the app's request.
    answer: Answer,
    /// Each instance's own stats endpoint and the request that reads it
    /// (telemetry on, for a server with `stats`).
    stats: Vec<(Endpoint, Vec<u8>)>,
}

impl Started {
    fn pids(&self) -> Vec<u32> {
        self.running.iter().map(|r| r.pid).collect()
    }

    /// Which instance exited, how, and the end of its log.
    fn exit_report(&mut self, name: &str) -> String {
        let n = self.running.len();
        let (i, status) = self
            .running
            .iter_mut()
            .enumerate()
            .find_map(|(i, r)| r.exit_status().map(|st| (i, st)))
            .unwrap_or((0, "unknown status".into()));
        let r = &self.running[i];
        format!(
            "{name}{} exited during the run ({status}); last lines of its log {}:\n{}",
            if n > 1 {
                format!(" (instance {i} of {n})")
            } else {
                String::new()
            },
            r.launch.log.display(),
            r.log_tail(20)
        )
    }

    /// Stops every instance; returns the PIDs that needed SIGKILL.
    fn stop(&mut self) -> Vec<u32> {
        self.running.iter_mut().flat_map(|r| r.stop()).collect()
    }
}

/// `server.sock` for a lone instance, `server.2.sock` for the third of
/// several (seed 000's thin.0.sock … thin.3.sock).
fn instance_file(name: &str, i: u32, count: u32) -> String {
    if count <= 1 {
        return name.to_string();
    }
    match name.rsplit_once('.') {
        Some((stem, ext)) => format!("{stem}.{i}.{ext}"),
        None => format!("{name}.{i}"),
    }
}

/// Starts `count` copies of the server and waits for every one to give
/// the app's answer. All are launched first, then waited on, so slow
/// starters (passenger) start side by side. Any failure stops those
/// already running, since they are dropped.
///
/// rackbench starts the copies itself rather than through a server's own
/// cluster option (`thin --servers N`): those daemonize, leaving no process
/// to supervise, and exist for few servers; this works for any template.
fn start_instances(ctx: &Instances) -> Result<Started, TrialError> {
    let spec = ctx.spec;
    let s = &spec.server;
    let template_err = |e| TrialError::Template {
        server: s.name.clone(),
        source: e,
    };
    let start_timeout = spec
        .start_timeout
        .unwrap_or(Duration::from_secs_f64(s.start_timeout_s));
    let mut started = Started {
        running: Vec::new(),
        endpoints: Vec::new(),
        commands: Vec::new(),
        config_file: None,
        answer: Answer {
            status: 0,
            body: Vec::new(),
        },
        stats: Vec::new(),
    };
    for i in 0..ctx.count {
        let file = |name: &str| instance_file(name, i, ctx.count);
        let socket = ctx.run_dir.join(file("server.sock"));
        let port = if ctx.use_socket {
            None
        } else {
            Some(free_port().map_err(TrialError::Port)?)
        };
        let host = ctx.host;
        let mut vars = Vars::default();
        vars.set("host", host)
            .set("port", port.map_or(String::new(), |p| p.to_string()))
            .set(
                "socket",
                if ctx.use_socket {
                    socket.display().to_string()
                } else {
                    String::new()
                },
            )
            .set("workers", ctx.workers)
            .set("threads", ctx.threads)
            .set("instance", i)
            .set("instances", ctx.count)
            .set("app", ctx.app_file.display())
            .set("app_dir", ctx.app_dir.display())
            .set("dir", ctx.dir.display())
            .set("run_dir", ctx.run_dir.display())
            .set("pidfile", ctx.dir.join(file("server.pid")).display())
            .set("rackbench_home", rackbench_home().display());
        let (listen, listen_url) = match port {
            Some(p) => (format!("{host}:{p}"), format!("tcp://{host}:{p}")),
            None => (
                socket.display().to_string(),
                format!("unix://{}", socket.display()),
            ),
        };
        vars.set("listen", &listen)
            .set("bind", &listen)
            .set("listen_url", &listen_url);
        if let Some(stats) = stats_endpoint(spec, &mut vars)? {
            started.stats.push(stats);
        }
        for (k, v) in ctx.settings {
            vars.set(k, v);
        }
        if let Some(text) = s.config_text(None) {
            let text = text.map_err(io_err(ctx.dir))?;
            let rendered = template::render(&text, &vars).map_err(template_err)?;
            let name = s
                .config_template
                .as_deref()
                .and_then(|t| Path::new(t).file_name())
                .map_or("server.conf".into(), |n| n.to_string_lossy().into_owned());
            let path = ctx.dir.join(file(&name));
            std::fs::write(&path, &rendered).map_err(io_err(ctx.dir))?;
            vars.set("config", path.display());
            started.config_file.get_or_insert(rendered);
        } else {
            vars.set("config", "");
        }
        let command = template::render(&s.command, &vars).map_err(template_err)?;
        started.running.push(supervisor::spawn(Launch {
            name: if ctx.count > 1 {
                format!("{} instance {i}", s.name)
            } else {
                s.name.clone()
            },
            command: command.clone(),
            env: ctx
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            cwd: ctx.app_dir.to_path_buf(),
            log: ctx.dir.join(file("server.log")),
            cpus: spec.server_cpus.clone(),
            stop_signal: s.stop_signal_number().unwrap_or(libc::SIGTERM),
            grace: spec.grace,
        })?);
        started.commands.push(command);
        started.endpoints.push(match port {
            Some(p) => Endpoint::Tcp(SocketAddr::from(([127, 0, 0, 1], p))),
            None => Endpoint::Unix(socket),
        });
    }
    for (i, server) in started.running.iter_mut().enumerate() {
        let endpoint = &started.endpoints[i];
        let answer = verify(server, endpoint, ctx.host, spec, start_timeout)?;
        if let Endpoint::Tcp(a) = &started.endpoints[i] {
            crate::sampler::check_port_owner(a.port(), &server_scope(server), &s.name)?;
        }
        if i == 0 {
            started.answer = answer;
        }
    }
    Ok(started)
}

/// With telemetry on and a server that reports its own queue (`stats` in
/// its adapter): a free port and a token for it (`{{stats_port}}`,
/// `{{stats_token}}`), and the GET that reads it. Without, the
/// placeholders are empty and `{{?telemetry ...}}` leaves the command as
/// it always was.
fn stats_endpoint(
    spec: &TrialSpec,
    vars: &mut Vars,
) -> Result<Option<(Endpoint, Vec<u8>)>, TrialError> {
    vars.set("telemetry", spec.telemetry);
    let source = spec.server.stats.as_ref().filter(|_| spec.telemetry);
    let Some(source) = source else {
        vars.set("stats_port", "").set("stats_token", "");
        return Ok(None);
    };
    let port = free_port().map_err(TrialError::Port)?;
    let token = format!("{:016x}", rand_token());
    vars.set("stats_port", port).set("stats_token", &token);
    let path = template::render(&source.path, vars).map_err(|e| TrialError::Template {
        server: spec.server.name.clone(),
        source: e,
    })?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    Ok(Some((
        Endpoint::Tcp(SocketAddr::from(([127, 0, 0, 1], port))),
        request.into_bytes(),
    )))
}

/// A token no other local user can guess in the trial's lifetime (the
/// stats endpoint listens on 127.0.0.1 only, but it can stop the server).
fn rand_token() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    h.finish()
}

/// Renders nginx.conf into the trial directory, starts nginx and waits
/// for the app's answer through it. Returns nginx and its command line.
fn start_nginx(
    spec: &TrialSpec,
    conf: &NginxConf,
    dir: &Path,
) -> Result<(Running, String), TrialError> {
    let text = conf.render().map_err(|e| TrialError::Template {
        server: "nginx".into(),
        source: e,
    })?;
    let conf_path = dir.join("nginx.conf");
    std::fs::write(&conf_path, text).map_err(io_err(dir))?;
    // nginx workers run as nobody when the master is root.
    let _ = std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755));
    // -e: otherwise nginx opens /var/log/nginx/error.log before
    // reading the config.
    let ncmd = format!(
        "nginx -p {0} -e {0}/nginx-error.log -c {1}",
        dir.display(),
        conf_path.display()
    );
    let mut n = supervisor::spawn(Launch {
        name: "nginx".into(),
        command: ncmd.clone(),
        env: Vec::new(),
        cwd: dir.to_path_buf(),
        log: dir.join("nginx.log"),
        cpus: spec.server_cpus.clone(),
        stop_signal: libc::SIGQUIT,
        grace: spec.grace,
    })?;
    let front = Endpoint::Tcp(SocketAddr::from(([127, 0, 0, 1], conf.port)));
    verify(&mut n, &front, conf.host, spec, Duration::from_secs(20))?;
    Ok((n, ncmd))
}

/// Waits until a started process answers at `endpoint`, then checks its
/// answer to the app's request: the one readiness-and-verify path for the
/// server's copies and for nginx alike.
fn verify(
    process: &mut Running,
    endpoint: &Endpoint,
    host: &str,
    spec: &TrialSpec,
    start_timeout: Duration,
) -> Result<Answer, TrialError> {
    let ready = supervisor::wait_ready(
        process,
        &Probe {
            endpoint: endpoint.clone(),
            host: host.into(),
            path: spec.app.path.clone(),
            timeout: Duration::from_secs(5),
        },
        start_timeout,
        &spec.interrupt,
    )?;
    let answer = app_answer(process, &spec.app, endpoint, host, ready)?;
    check_answer(
        process,
        &spec.app,
        &answer.status,
        &answer.body_snippet(200),
    )?;
    Ok(answer)
}

impl TrialSpec {
    /// This trial as step `n` of a break-point search at `level`: a fresh
    /// server, the step's load (`StepLoad::apply`), ended at its first
    /// error, in its own directory.
    pub fn at_step(
        &self,
        step: &crate::search::StepLoad,
        level: f64,
        kind: crate::search::StepKind,
        dir: PathBuf,
    ) -> TrialSpec {
        let mut s = self.clone();
        step.apply(level, kind, &mut s.load);
        s.stop_on_errors = true;
        s.dir = dir;
        s
    }
}

impl TrialRecord {
    /// This trial as one step of a break-point search. A connection left
    /// unanswered, a server that died, or a load stopped at its first
    /// errors all make the step fail, besides the error counts.
    pub fn as_step(&self, level: f64) -> crate::search::StepResult {
        let mut step = crate::search::StepResult::from_load(level, &self.load);
        if self.server_exit.is_some() || self.stopped_on_errors {
            step.errors = step.errors.max(1);
        }
        step.why = self.server_exit.clone();
        // Each step starts a server of its own: nothing to settle.
        step.settle_s = 0.0;
        let m = &self.server_metrics;
        if let Some(t) = m.telemetry.as_ref().filter(|t| t.requests > 0) {
            step.app_p50_us = Some(t.app_us.p50);
            step.queue_p50_us = t.queue_us.map(|q| q.p50);
            step.gc_runs_per_1k_requests = Some(t.gc_runs_per_1k_requests);
        }
        step.accept_queue_max = m.accept_queue.as_ref().map(|q| q.max);
        step
    }
}

/// Marks the samplers the moment the load's counted window starts, so
/// server CPU per request and memory peaks cover the same interval as the
/// load's figures.
///
/// The start is the load's to decide: the warm-up's end, or, under
/// `--warmup-until-steady`, the moment throughput settled, known only
/// mid-run. A clock of the trial's own (start + warm-up ceiling) measured
/// the server over the wrong interval whenever the warm-up ended early.
/// Polled every 20 ms, it marks well within one sample interval.
struct WindowMark {
    window: Arc<OnceLock<Arc<Window>>>,
    samplers: Vec<Arc<Sampler>>,
    marked: bool,
    /// The CPUs the disturbance record measures, and where its start
    /// readings go, taken right after the samplers' marks.
    disturbance: (Vec<usize>, Arc<OnceLock<DisturbanceWatch>>),
}

impl WindowMark {
    fn poll(&mut self, now: Instant) {
        if self.marked {
            return;
        }
        if self
            .window
            .get()
            .and_then(|w| w.start())
            .is_some_and(|start| now >= start)
        {
            for s in &self.samplers {
                s.mark();
            }
            self.marked = true;
            let (cpus, watch) = &self.disturbance;
            if let Some(w) = DisturbanceWatch::start(cpus.clone(), std::process::id()) {
                let _ = watch.set(w);
            }
        }
    }
}

/// The answer to judge: the readiness probe's own when the app is loaded
/// with a bare GET, else the answer to the trial's request (method,
/// headers, body), sent once.
fn app_answer(
    server: &Running,
    app: &AppSpec,
    endpoint: &Endpoint,
    host: &str,
    ready: crate::server::probe::Answer,
) -> Result<crate::server::probe::Answer, TrialError> {
    if app.is_plain_get() {
        return Ok(ready);
    }
    let url = load::Url::parse(&format!("http://{host}{}", app.path)).expect("a valid path");
    let spec = app.request_spec(false).map_err(TrialError::Request)?;
    let request = load::target::render_request(&url, &spec).map_err(TrialError::Request)?;
    crate::server::probe::send(endpoint, &request, Duration::from_secs(5)).map_err(|e| {
        TrialError::Verify {
            server: server.launch.name.clone(),
            method: app.method.clone(),
            path: app.path.clone(),
            source: e,
        }
    })
}

/// The server's processes: its tree and the helpers it daemonized (ours
/// as subreaper).
fn server_scope(server: &Running) -> Scope {
    Scope {
        root: server.pid,
        adopted_by: Some(std::process::id()),
        exclude: Vec::new(),
    }
}

fn check_answer(
    server: &Running,
    app: &AppSpec,
    status: &u16,
    body: &str,
) -> Result<(), TrialError> {
    if *status == app.expect_status && body.contains(&app.expect_body) {
        return Ok(());
    }
    Err(TrialError::WrongAnswer {
        server: server.launch.name.clone(),
        path: app.path.clone(),
        status: *status,
        body: body.to_string(),
        expect_status: app.expect_status,
        expect_body: app.expect_body.clone(),
        log: server.launch.log.display().to_string(),
        tail: server.log_tail(10),
    })
}

/// A lab server started as a trial starts it (checked, started, verified
/// with the app's answer, its process tree sampled), for a caller that
/// sends it traffic of its own: `rackbench mirror --shadow-server`.
/// Dropping it stops every process it started.
pub struct LabServer {
    // Field order is drop order: the sampler, then the servers, then the
    // run directory their sockets live in.
    sampler: Option<Sampler>,
    servers: Servers,
    prep: Prepared,
    /// Where it answers (the lone server, or nginx in front).
    pub endpoint: Endpoint,
    /// The commands run to start it.
    pub commands: Vec<String>,
}

/// Starts `spec`'s server the way [`run_trial`] does, without the load.
pub fn start_server(spec: &TrialSpec) -> Result<LabServer, TrialError> {
    validate(spec)?;
    let prep = prepare(spec)?;
    let servers = start_servers(spec, &prep)?;
    let scope = Scope {
        root: servers.started.running[0].pid,
        adopted_by: Some(std::process::id()),
        exclude: servers.nginx.iter().map(|n| n.pid).collect(),
    };
    let sampler = Sampler::start_scope(scope, spec.sample_interval);
    sampler.mark();
    Ok(LabServer {
        sampler: Some(sampler),
        endpoint: servers.front.clone(),
        commands: servers.commands.clone(),
        servers,
        prep,
    })
}

impl LabServer {
    /// Stops sampling and every process; returns what the sampler saw
    /// from the start.
    pub fn stop(mut self) -> SamplerReport {
        let report = self.sampler.take().map(Sampler::stop).unwrap_or_default();
        self.servers.started.stop();
        report
    }

    /// Like [`LabServer::stop`], and with telemetry on (`--telemetry`) reads
    /// what the middleware saw from `since` on (None without it): waits
    /// one flush first, as a trial does, so every process's last lines
    /// are in.
    pub fn stop_with_telemetry(
        mut self,
        since: Option<Instant>,
    ) -> (SamplerReport, Option<Telemetry>) {
        let report = self.sampler.take().map(Sampler::stop).unwrap_or_default();
        if self.prep.telemetry.is_some() {
            std::thread::sleep(Duration::from_secs_f64(
                flush_s(&self.prep.launch_env()) + 0.2,
            ));
        }
        self.servers.started.stop();
        let telemetry = self
            .prep
            .telemetry
            .as_ref()
            .and_then(|w| read_telemetry(&w.data_dir, since));
        (report, telemetry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Readers accept records made before the disturbance record existed.
    #[test]
    fn a_record_without_a_disturbance_reads_as_none() {
        let text = include_str!("../../tests/contracts/trial-v1.json");
        let mut doc: serde_json::Value = serde_json::from_str(text).unwrap();
        let with: TrialRecord = serde_json::from_value(doc.clone()).unwrap();
        assert!(with.disturbance.is_some_and(|d| d.cpus == vec![0, 1]));
        doc.as_object_mut().unwrap().remove("disturbance");
        let old: TrialRecord = serde_json::from_value(doc).unwrap();
        assert!(old.disturbance.is_none());
    }

    /// puma's stats: single mode at the top, cluster mode per worker.
    #[test]
    fn a_stats_field_is_summed_wherever_it_occurs() {
        let single = serde_json::json!({"backlog": 3, "running": 5});
        let cluster = serde_json::json!({"workers": 2, "worker_status": [
            {"pid": 1, "last_status": {"backlog": 2, "running": 5}},
            {"pid": 2, "last_status": {"backlog": 4, "running": 5}}
        ]});
        assert_eq!(sum_field(&single, "backlog"), Some(3.0));
        assert_eq!(sum_field(&cluster, "backlog"), Some(6.0));
        assert_eq!(sum_field(&cluster, "running"), Some(10.0));
        assert_eq!(sum_field(&cluster, "nope"), None);
        assert_eq!(sum_field(&serde_json::json!([]), "backlog"), None);
    }

    /// Regression: under --warmup-until-steady the sampler was marked at
    /// the warm-up ceiling, not where the counted window began.
    #[test]
    fn the_sampler_window_starts_where_the_load_window_starts() {
        let t0 = Instant::now();
        let w = Arc::new(Window::until_steady(
            t0,
            Duration::from_secs(60),
            Some(Duration::from_secs(5)),
        ));
        let cell = Arc::new(OnceLock::new());
        let sampler = Arc::new(Sampler::start(
            std::process::id(),
            crate::sampler::MIN_INTERVAL,
        ));
        let watch = Arc::new(OnceLock::new());
        let mut mark = WindowMark {
            window: Arc::clone(&cell),
            samplers: vec![Arc::clone(&sampler)],
            marked: false,
            disturbance: (Vec::new(), Arc::clone(&watch)),
        };
        mark.poll(Instant::now());
        assert!(sampler.marked_at().is_none(), "no window yet");
        let _ = cell.set(Arc::clone(&w));
        mark.poll(Instant::now());
        assert!(sampler.marked_at().is_none(), "the window is not decided");
        assert!(
            watch.get().is_none(),
            "no disturbance reading before the window"
        );
        std::thread::sleep(Duration::from_millis(300));
        // Throughput settled 300 ms in, far before the 60 s ceiling.
        w.decide(Instant::now(), true);
        mark.poll(Instant::now());
        let start = w.start().expect("decided");
        let marked = sampler.marked_at().expect("marked at the window's start");
        assert!(
            marked >= start && marked - start < crate::sampler::MIN_INTERVAL,
            "sampler window {:?} after the load window",
            marked - start
        );
        let watched = watch
            .get()
            .expect("the disturbance's start reading")
            .started;
        assert!(
            watched >= marked && watched - marked < crate::sampler::MIN_INTERVAL,
            "disturbance window {:?} after the sampler's",
            watched - marked
        );
        drop(mark);
        let r = Arc::try_unwrap(sampler).ok().expect("one owner").stop();
        let at = r.window_start_ms.expect("window recorded");
        assert!((250..2000).contains(&at), "{at} ms");
    }
}
