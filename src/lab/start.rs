//! A trial's processes, started and answering: the trial's directories and
//! the server's settings ([`prepare`]), the server's copies, nginx in front
//! if asked, each waited on until it answers and checked with the app's
//! answer ([`start_servers`]), and their stop. Also the telemetry the
//! server wrote, read back once it has stopped.
//!
//! Every process started here is held by a `supervisor::Running`, which
//! stops its tree when dropped: an error half-way through start-up stops
//! what had started. Drives no load and samples nothing.

// A failed trial's error carries the log tail and the answer seen; it is
// built once per failure, so its size does not matter.
#![allow(clippy::result_large_err)]

use super::apps::AppSpec;
use super::front::NginxConf;
use super::record::{Topology, TopologyInfo};
use super::restart::RestartCommand;
use super::spec::{TrialError, TrialSpec};
use crate::host::{free_port, rackbench_home};
use crate::load::{self, Endpoint};
use crate::sampler::Scope;
use crate::server::probe::Answer;
use crate::server::supervisor::{self, Launch, Probe, Running};
use crate::server::template::{self, Vars};
use crate::telemetry::Telemetry;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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

/// Where a trial runs and what its server is started with: the trial
/// directory, the app's file, the short run dir for sockets, and the
/// server's settings and environment with the trial's overrides applied.
pub(super) struct Prepared {
    pub(super) dir: PathBuf,
    app_dir: PathBuf,
    /// The app's database, started and seeded; declared before the run
    /// dir (its socket lives there) and stopped after the servers (the
    /// fields of `Servers` and `LabServer` drop first).
    pub(super) database: Option<crate::database::Database>,
    run_dir: RunDir,
    use_socket: bool,
    pub(super) host: String,
    pub(super) workers: u32,
    pub(super) threads: u32,
    pub(super) settings: BTreeMap<String, String>,
    pub(super) env: BTreeMap<String, String>,
    /// The telemetry wrapper around the app, when on: the server is given
    /// its rackup as `{{app}}` (`{{app_dir}}` and the working directory
    /// stay the app's own) and its environment besides `env`.
    pub(super) telemetry: Option<crate::telemetry::Wrapper>,
    /// The runtime the server runs from, and the wrapper through which
    /// its processes say what they run with.
    pub(super) runtime: crate::runtime::Runtime,
    pub(super) inside: crate::runtime::inside::Wrapper,
    /// The budget's control group, made before the server starts and
    /// removed when this is dropped (after the servers, declared after).
    pub(super) group: Option<crate::budget::cgroup::Group>,
}

impl Prepared {
    /// The rackup file the server is given: the runtime wrapper around
    /// the app's, or around the telemetry wrapper around it.
    fn rackup(&self) -> &Path {
        &self.inside.rackup
    }

    /// What the server's processes said they ran with, once stopped.
    pub(super) fn read_runtime(
        &self,
        spec: &TrialSpec,
        main_pid: u32,
    ) -> crate::runtime::RuntimeRecord {
        crate::runtime::inside::read(
            &self.runtime,
            spec.switches,
            &self.inside.data_dir,
            main_pid,
            || self.runtime.server_version(&spec.server),
        )
    }

    /// The server's environment: the trial's, plus telemetry's directory
    /// and the runtime's PATH. Only `env` goes into the record, so a
    /// group's settings read the same with telemetry on or off.
    fn launch_env(&self) -> BTreeMap<String, String> {
        let mut env = self.env.clone();
        if let Some(path) = self.runtime.launching().path_var() {
            env.insert("PATH".into(), path);
        }
        if let Some(w) = &self.telemetry {
            env.extend(w.env.iter().cloned());
        }
        // Its port differs per trial; the record's `database.url` has it.
        if let Some(db) = &self.database {
            env.insert("DATABASE_URL".into(), db.url.clone());
        }
        env
    }
}

/// Makes the trial's directories and the app's file, and works out what
/// the server is started with; starts nothing.
pub(super) fn prepare(spec: &TrialSpec) -> Result<Prepared, TrialError> {
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
    // The adapter's, the runtime's, the switches', then the trial's own
    // --env, which wins.
    let runtime = spec.runtime();
    let mut env: BTreeMap<String, String> = s.env.clone();
    env.extend(runtime.launching().env);
    env.extend(spec.switches.env(&runtime)?);
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
    let inner = telemetry.as_ref().map_or(&app_file, |w| &w.rackup);
    let inside = crate::runtime::inside::write_wrapper(inner, &dir).map_err(io_err(&dir))?;
    let database = start_database(
        spec,
        &runtime,
        &Dirs {
            dir: &dir,
            app_dir: &app_dir,
            run_dir: &run_dir.0,
        },
        &mut settings,
        &mut env,
    )?;
    let group = match &spec.budget {
        Some(b) => Some(crate::budget::cgroup::Group::create(b).map_err(TrialError::Budget)?),
        None => None,
    };
    Ok(Prepared {
        dir,
        app_dir,
        database,
        run_dir,
        use_socket,
        host: "127.0.0.1".into(),
        workers: spec.workers.unwrap_or(s.default_workers),
        threads: spec.threads.unwrap_or(s.default_threads),
        settings,
        env,
        telemetry,
        runtime,
        inside,
        group,
    })
}

/// A trial's directories, as the database needs them.
struct Dirs<'a> {
    dir: &'a Path,
    app_dir: &'a Path,
    run_dir: &'a Path,
}

/// The app's settings into its environment (`--set pool=5` is `DB_POOL=5`),
/// then its database started and seeded (its URL reaches the server as
/// `DATABASE_URL` through `launch_env`). The seed runs as the server will:
/// the trial's runtime's Ruby ([`seed_ruby`]) with the server's
/// environment (PATH, --env). None for an app without a database.
fn start_database(
    spec: &TrialSpec,
    runtime: &crate::runtime::Runtime,
    dirs: &Dirs,
    settings: &mut BTreeMap<String, String>,
    env: &mut BTreeMap<String, String>,
) -> Result<Option<crate::database::Database>, TrialError> {
    for a in spec.app.settings() {
        let value = settings
            .entry(a.name.to_string())
            .or_insert_with(|| a.default.to_string());
        if !a.env.is_empty() && !value.is_empty() {
            env.insert(a.env.to_string(), value.clone());
        }
    }
    let Some(kind) = spec.database() else {
        return Ok(None);
    };
    let mut seed_env = env.clone();
    if let Some(path) = runtime.launching().path_var() {
        seed_env.insert("PATH".into(), path);
    }
    let db = crate::database::Database::start(&crate::database::Setup {
        kind,
        dir: dirs.dir,
        run_dir: dirs.run_dir,
        app_dir: dirs.app_dir,
        env: &seed_env,
        ruby: &seed_ruby(runtime),
        port: settings.get("db_port").and_then(|p| p.parse().ok()),
        grace: spec.grace,
        interrupt: &spec.interrupt,
    })?;
    Ok(Some(db))
}

/// The Ruby the app's seed runs with: the runtime's, in its root, and the
/// way to give it the blog's gems (Debian's packages, or gems).
fn seed_ruby(runtime: &crate::runtime::Runtime) -> crate::database::SeedRuby {
    crate::database::SeedRuby {
        runtime: runtime.name.clone(),
        command: runtime.ruby_command(),
        root: runtime.launching().root,
        add_gems: runtime.add_gems(
            &["ruby-rails", "ruby-sqlite3", "ruby-pg"],
            &["rails", "sqlite3", "pg"],
        ),
    }
}

/// Every process of a trial, started and answering: the server's copies,
/// nginx in front if asked, and where the load enters. Dropping it stops
/// them all.
pub(super) struct Servers {
    pub(super) started: Started,
    pub(super) nginx: Option<Running>,
    pub(super) topo: TopologyInfo,
    /// Where the load connects: nginx, or the lone server.
    pub(super) front: Endpoint,
    /// Every command run, for the environment record.
    pub(super) commands: Vec<String>,
    /// The database server's main process: not the server's (left out of
    /// its scope) and not stopped with it.
    pub(super) database_pid: Option<u32>,
}

/// Starts the server (one copy, or several behind nginx), then nginx in
/// front if asked, each verified with the app's answer before the next.
pub(super) fn start_servers(spec: &TrialSpec, prep: &Prepared) -> Result<Servers, TrialError> {
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
        runtime: &prep.runtime,
        cgroup: prep.group.as_ref().map_or(Vec::new(), |g| g.join_files()),
    })
    .map_err(|e| prep.killed_for_memory(spec, e))?;
    let mut servers = Servers {
        front: started.endpoints[0].clone(),
        commands: started.commands.clone(),
        started,
        nginx: None,
        database_pid: prep.database.as_ref().and_then(|d| d.pid()),
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

impl Servers {
    /// The sampler's scope for the server: the first instance's tree and
    /// every process adopted by rackbench (further instances are its
    /// children too, and the helpers they daemonized), nginx excluded.
    pub(super) fn server_scope(&self) -> Scope {
        Scope {
            root: self.started.running[0].pid,
            adopted_by: Some(std::process::id()),
            exclude: self
                .nginx
                .iter()
                .map(|n| n.pid)
                .chain(self.database_pid)
                .collect(),
        }
    }

    /// Stops nginx, every instance, and the helpers the server daemonized
    /// (ours, as subreaper); returns the PIDs that needed SIGKILL.
    pub(super) fn stop_all(&mut self, grace: Duration) -> Vec<u32> {
        let mut killed = Vec::new();
        if let Some(mut n) = self.nginx.take() {
            killed.extend(n.stop());
        }
        killed.extend(self.started.stop());
        // The database outlives the server: its rows are counted after.
        let keep: Vec<u32> = self.database_pid.into_iter().collect();
        killed.extend(supervisor::stop_adopted(&keep, grace));
        killed
    }
}

impl Prepared {
    /// What a restart of the first instance needs: its pid file, and a
    /// restart command rendered with the server's placeholders, run with
    /// the server's environment from the app's directory, logging to
    /// `restart.log` in the trial directory.
    pub(super) fn restart_parts(
        &self,
        spec: &TrialSpec,
        command: Option<&str>,
    ) -> Result<(PathBuf, Option<RestartCommand>), TrialError> {
        let count = spec.topology.instances();
        let pidfile = self.dir.join(instance_file("server.pid", 0, count));
        let Some(command) = command else {
            return Ok((pidfile, None));
        };
        let mut vars = Vars::default();
        vars.set("app", self.rackup().display())
            .set("app_dir", self.app_dir.display())
            .set("dir", self.dir.display())
            .set("run_dir", self.run_dir.0.display())
            .set("pidfile", pidfile.display())
            .set("workers", self.workers)
            .set("threads", self.threads)
            .set("rackbench_home", rackbench_home().display());
        for (k, v) in &self.settings {
            vars.set(k, v);
        }
        let rendered = template::render(command, &vars).map_err(template_err(spec))?;
        let env = self.launch_env().into_iter().collect();
        Ok((
            pidfile,
            Some((
                rendered,
                env,
                self.app_dir.clone(),
                self.dir.join("restart.log"),
            )),
        ))
    }

    /// A start-up failure with a kill for memory in the budget's group
    /// becomes that reason, in one line; any other error stays as it is.
    fn killed_for_memory(&self, spec: &TrialSpec, e: TrialError) -> TrialError {
        let Some(g) = &self.group else {
            return e;
        };
        let kills = g.oom_kills();
        if kills == 0 || matches!(e, TrialError::Budget(_)) {
            return e;
        }
        let memory = spec
            .budget
            .and_then(|b| b.memory_limit_bytes)
            .map_or("its budget".to_string(), |m| {
                format!("--memory {}", crate::budget::format_size(m))
            });
        TrialError::Budget(format!(
            "{} was killed for memory while starting inside {memory} ({kills} kill{}): raise --memory or run fewer workers",
            spec.server.name,
            if kills == 1 { "" } else { "s" }
        ))
    }

    /// With telemetry on, waits until every process's last second has
    /// reached its file, so it can be stopped: uWSGI's INT skips at_exit,
    /// and a killed worker writes nothing.
    pub(super) fn wait_for_telemetry_flush(&self) {
        if self.telemetry.is_some() {
            std::thread::sleep(Duration::from_secs_f64(flush_s(&self.launch_env()) + 0.2));
        }
    }

    /// What the telemetry middleware wrote from `since` on, timed from it
    /// (None with telemetry off).
    pub(super) fn read_telemetry(&self, since: Option<Instant>) -> Option<Telemetry> {
        let w = self.telemetry.as_ref()?;
        read_telemetry(&w.data_dir, since)
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
    runtime: &'a crate::runtime::Runtime,
    /// The budget's group every instance joins (empty without a budget).
    cgroup: Vec<std::ffi::CString>,
}

/// The server under test, started and verified: one or several instances.
/// Dropping it stops them all (each `Running` stops its tree).
pub(super) struct Started {
    pub(super) running: Vec<Running>,
    pub(super) endpoints: Vec<Endpoint>,
    pub(super) commands: Vec<String>,
    /// The first instance's rendered config file.
    pub(super) config_file: Option<String>,
    /// The first instance's answer to the app's request.
    pub(super) answer: Answer,
    /// Each instance's own stats endpoint and the request that reads it
    /// (telemetry on, for a server with `stats`).
    pub(super) stats: Vec<(Endpoint, Vec<u8>)>,
}

impl Started {
    pub(super) fn pids(&self) -> Vec<u32> {
        self.running.iter().map(|r| r.pid).collect()
    }

    /// Which instance exited, how, and the end of its log.
    pub(super) fn exit_report(&mut self, name: &str) -> String {
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
    pub(super) fn stop(&mut self) -> Vec<u32> {
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
        launch_instance(ctx, i, &mut started)?;
    }
    verify_instances(ctx, &mut started)?;
    Ok(started)
}

/// Renders instance `i`'s config and command and spawns it, adding it to
/// `started`; does not wait for it.
fn launch_instance(ctx: &Instances, i: u32, started: &mut Started) -> Result<(), TrialError> {
    let (spec, s) = (ctx.spec, &ctx.spec.server);
    let file = |name: &str| instance_file(name, i, ctx.count);
    let socket = ctx.run_dir.join(file("server.sock"));
    let port = if ctx.use_socket {
        None
    } else {
        Some(free_port().map_err(TrialError::Port)?)
    };
    let mut vars = instance_vars(ctx, i, port, &socket);
    if let Some(stats) = stats_endpoint(spec, &mut vars)? {
        started.stats.push(stats);
    }
    for (k, v) in ctx.settings {
        vars.set(k, v);
    }
    if let Some(rendered) = write_config(ctx, i, &mut vars)? {
        started.config_file.get_or_insert(rendered);
    }
    let command = template::render(&s.command, &vars).map_err(template_err(spec))?;
    let launching = ctx.runtime.launching();
    let command = format!("{}{command}", launching.prefix);
    let root = match &launching.root {
        Some(dir) => {
            Some(crate::server::rootfs::RootFs::new(dir).map_err(supervisor::StartError::Root)?)
        }
        None => None,
    };
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
        root,
        cgroup: ctx.cgroup.clone(),
    })?);
    started.commands.push(command);
    started.endpoints.push(match port {
        Some(p) => Endpoint::Tcp(SocketAddr::from(([127, 0, 0, 1], p))),
        None => Endpoint::Unix(socket),
    });
    Ok(())
}

fn template_err(spec: &TrialSpec) -> impl Fn(template::TemplateError) -> TrialError + '_ {
    |e| TrialError::Template {
        server: spec.server.name.clone(),
        source: e,
    }
}

/// The template variables of instance `i`, listening on `port` (TCP) or
/// else on `socket`.
fn instance_vars(ctx: &Instances, i: u32, port: Option<u16>, socket: &Path) -> Vars {
    let file = |name: &str| instance_file(name, i, ctx.count);
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
    vars
}

/// Renders the server's config file, when it has one, into the trial
/// directory and sets `{{config}}` to its path (empty without one);
/// returns the rendered text.
fn write_config(ctx: &Instances, i: u32, vars: &mut Vars) -> Result<Option<String>, TrialError> {
    let s = &ctx.spec.server;
    let Some(text) = s.config_text(None) else {
        vars.set("config", "");
        return Ok(None);
    };
    let text = text.map_err(io_err(ctx.dir))?;
    let rendered = template::render(&text, vars).map_err(template_err(ctx.spec))?;
    let name = s
        .config_template
        .as_deref()
        .and_then(|t| Path::new(t).file_name())
        .map_or("server.conf".into(), |n| n.to_string_lossy().into_owned());
    let path = ctx.dir.join(instance_file(&name, i, ctx.count));
    std::fs::write(&path, &rendered).map_err(io_err(ctx.dir))?;
    vars.set("config", path.display());
    Ok(Some(rendered))
}

/// Waits for every launched instance to give the app's answer, and checks
/// that each TCP port's listener belongs to that instance's tree.
fn verify_instances(ctx: &Instances, started: &mut Started) -> Result<(), TrialError> {
    let (spec, s) = (ctx.spec, &ctx.spec.server);
    let start_timeout = spec
        .start_timeout
        .unwrap_or(Duration::from_secs_f64(s.start_timeout_s));
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
    Ok(())
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
    let path = template::render(&source.path, vars).map_err(template_err(spec))?;
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
        root: None,
        cgroup: Vec::new(),
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
