//! A trial made ready to start: its directories, the app's file (inside
//! the telemetry and runtime wrappers), the short run dir for sockets,
//! the server's settings and environment with the trial's overrides, the
//! app's database started and seeded, the budget's control group
//! ([`prepare`], held as [`Prepared`]); and what a restart of the server
//! and a start-up killed for memory make of them. It never starts the
//! server or nginx (start.rs does) and drives no load.

// A failed trial's error carries the log tail and the answer seen; it is
// built once per failure, so its size does not matter.
#![allow(clippy::result_large_err)]

use super::instances::instance_file;
use super::record::Topology;
use super::restart::RestartCommand;
use super::spec::{io_err, template_err, TrialError, TrialSpec};
use crate::host::rackbench_home;
use crate::server::supervisor;
use crate::server::template::{self, Vars};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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

/// Where a trial runs and what its server is started with: the trial
/// directory, the app's file, the short run dir for sockets, and the
/// server's settings and environment with the trial's overrides applied.
pub(super) struct Prepared {
    pub(super) dir: PathBuf,
    pub(super) app_dir: PathBuf,
    /// The app's database, started and seeded; declared before the run
    /// dir (its socket lives there) and stopped after the servers (the
    /// fields of `Servers` and `LabServer` drop first).
    pub(super) database: Option<crate::database::Database>,
    run_dir: RunDir,
    pub(super) use_socket: bool,
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
    pub(super) fn rackup(&self) -> &Path {
        &self.inside.rackup
    }

    /// The short directory for the trial's sockets (`{{run_dir}}`).
    pub(super) fn run_dir(&self) -> &Path {
        &self.run_dir.0
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
    pub(super) fn launch_env(&self) -> BTreeMap<String, String> {
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
    pub(super) fn killed_for_memory(&self, spec: &TrialSpec, e: TrialError) -> TrialError {
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
}

/// Makes the trial's directories and the app's file, and works out what
/// the server is started with; starts nothing.
pub(super) fn prepare(spec: &TrialSpec) -> Result<Prepared, TrialError> {
    let s = &spec.server;
    supervisor::become_subreaper();
    // What a killed rackbench left, removed before this one makes its own.
    if let Some(line) = crate::leftovers::sweep_once() {
        eprintln!("{line}");
    }
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
