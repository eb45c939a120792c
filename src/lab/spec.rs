//! What a trial is asked to do ([`TrialSpec`]), the checks that refuse what
//! cannot work before anything starts ([`validate`]), and everything that
//! can go wrong on the way ([`TrialError`], with `io_err` and
//! `template_err` that build its I/O and template kinds). Starts nothing.

// A failed trial's error carries the log tail and the answer seen; it is
// built once per failure, so its size does not matter.
#![allow(clippy::result_large_err)]

use super::apps::AppSpec;
use super::front;
use super::record::Topology;
use crate::load::LoadConfig;
use crate::server::spec::{Missing, ServerSpec};
use crate::server::supervisor::StartError;
use crate::server::template;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

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
    /// The answer's body is over what the check reads and the expected
    /// text was not in the part read.
    #[error("{server} answered {path} with status {status} and a body of {size}, over the {cap} the check reads, and \"{expect_body}\" is not in them: check the status only (leave out --app-expect-body), look for text from the answer's start, or raise --check-max-body")]
    AnswerTooBig {
        server: String,
        path: String,
        status: u16,
        /// "300 MiB", or "more than 64 MiB" when the answer did not say.
        size: String,
        cap: String,
        expect_body: String,
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
    #[error("{0}")]
    Runtime(#[from] crate::runtime::RuntimeError),
    /// The budget cannot be enforced here, or the server did not fit it.
    #[error("{0}")]
    Budget(String),
    /// The restart asked cannot be done by this server or in this window.
    #[error("{0}")]
    Restart(String),
    /// The database could not be started or seeded (transparent: the
    /// message once, not again as its own cause).
    #[error(transparent)]
    Database(#[from] crate::database::DatabaseError),
    /// A database asked of an app that has none, or a bad app setting.
    #[error("{0}")]
    App(String),
    /// `--profile` cannot be done here (no rbspy, a JVM server).
    #[error("{0}")]
    Profile(String),
}

/// An I/O error in `dir`, as a trial's error naming the directory.
pub(super) fn io_err(dir: &Path) -> impl Fn(std::io::Error) -> TrialError + '_ {
    move |e| TrialError::Io {
        dir: dir.display().to_string(),
        source: e,
    }
}

/// A template that would not render, as a trial's error naming the server.
pub(super) fn template_err(
    spec: &TrialSpec,
) -> impl Fn(template::TemplateError) -> TrialError + '_ {
    |e| TrialError::Template {
        server: spec.server.name.clone(),
        source: e,
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
    /// Where the server runs from; None is the host, its Ruby unread
    /// (`Runtime::unprobed_system`).
    pub runtime: Option<crate::runtime::Runtime>,
    /// YJIT, allocator, MALLOC_ARENA_MAX: what the trial asks of the
    /// runtime's Ruby.
    pub switches: crate::runtime::Switches,
    /// A memory and CPU limit for the server's whole process tree (its
    /// own control group); None: no group is made.
    pub budget: Option<crate::budget::Budget>,
    /// Restart the server under load (`--restart KIND --restart-at T`);
    /// None: it runs undisturbed.
    pub restart: Option<super::restart::RestartSpec>,
    /// A soak: a long window at a fixed rate with every worker's memory
    /// sampled over time (`load` already carries its window and rate).
    pub soak: Option<super::soak::Soak>,
    /// The app's database (`--database`): None is the app's default
    /// (SQLite for an app that needs one, none otherwise).
    pub database: Option<crate::database::Kind>,
    /// `--profile`: every Ruby process of the server's trees sampled by
    /// rbspy over the counted window (`lab::profiled`); None: not profiled.
    pub profile: Option<ProfileAsk>,
}

/// What `--profile` asks of a trial: the rate, and where the files go.
#[derive(Debug, Clone)]
pub struct ProfileAsk {
    /// Samples a second per process (`profile::DEFAULT_RATE_HZ`).
    pub rate_hz: u32,
    /// The results directory the record's file paths are relative to.
    pub results_dir: PathBuf,
    /// The trial's folder of profile files inside it.
    pub subdir: PathBuf,
}

impl TrialSpec {
    /// The database this trial starts: the one asked, or SQLite for an app
    /// that needs one; None for an app without a database.
    pub fn database(&self) -> Option<crate::database::Kind> {
        self.app
            .needs_database()
            .then(|| self.database.unwrap_or_default())
    }

    /// The runtime the server runs from. A trial with switches and no
    /// runtime named reads the host's Ruby (to know whether it has YJIT).
    pub fn runtime(&self) -> crate::runtime::Runtime {
        match &self.runtime {
            Some(rt) => rt.clone(),
            None if !self.switches.is_empty() => crate::runtime::system()
                .unwrap_or_else(|_| crate::runtime::Runtime::unprobed_system()),
            None => crate::runtime::Runtime::unprobed_system(),
        }
    }

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

/// Refuses what the server cannot do, before anything starts.
pub fn validate(spec: &TrialSpec) -> Result<(), TrialError> {
    let s = &spec.server;
    let unsupported = |what: String, fix: String| TrialError::Unsupported {
        server: s.name.clone(),
        what,
        fix,
    };
    check_app(spec).map_err(TrialError::App)?;
    let app_settings = spec.app.settings();
    let missing = s.missing(
        spec.workers,
        spec.threads,
        spec.settings
            .keys()
            .filter(|k| !app_settings.iter().any(|a| a.name == k.as_str())),
    );
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
    check_front(&spec.topology, s)?;
    let rt = spec.runtime();
    rt.check_server(&s.name, &s.requires)?;
    if spec.profile.is_some() {
        check_profile(&s.name, &rt.facts.engine).map_err(TrialError::Profile)?;
    }
    if rt.facts.engine == "jruby" && spec.workers.is_some_and(|w| w > 0) {
        return Err(unsupported(
            "worker processes on JRuby".into(),
            "JRuby cannot fork: drop --workers and scale with --threads".into(),
        ));
    }
    spec.switches.env(&rt)?;
    if let Some(b) = &spec.budget {
        b.check_machine().map_err(TrialError::Budget)?;
    }
    if let Some(r) = &spec.restart {
        check_restart(spec, r).map_err(TrialError::Restart)?;
    }
    Ok(())
}

/// A database only for an app that has one; its settings' values.
fn check_app(spec: &TrialSpec) -> Result<(), String> {
    if let (Some(kind), false) = (spec.database, spec.app.needs_database()) {
        return Err(format!(
            "--database {kind}: the app '{}' uses no database; drop --database or use --app blog",
            spec.app.name
        ));
    }
    for a in spec.app.settings() {
        let Some(v) = spec.settings.get(a.name) else {
            continue;
        };
        if !v.parse::<u32>().is_ok_and(|n| (1..=65535).contains(&n)) {
            return Err(format!(
                "--set {}={v}: give a whole number from 1 to 65535 (e.g. --set {}={})",
                a.name,
                a.name,
                if a.default.is_empty() {
                    "5432"
                } else {
                    a.default
                }
            ));
        }
    }
    Ok(())
}

/// A restart the server has, at a time inside the counted window.
pub(crate) fn check_restart(
    spec: &TrialSpec,
    r: &super::restart::RestartSpec,
) -> Result<(), String> {
    spec.server.restart_kind(&r.kind, spec.workers)?;
    match spec.load.duration {
        None => Err(format!(
            "--restart {} needs a timed window: give -d (e.g. -d 8s --restart-at 3s)",
            r.kind
        )),
        Some(d) if r.at >= d => Err(format!(
            "--restart-at {:?} is outside the counted window (0s to {d:?}): give a time below -d",
            r.at
        )),
        Some(_) => Ok(()),
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

/// `--profile` before anything starts: rbspy installed, and a server
/// whose Ruby it can read (MRI; a JRuby server runs in a JVM).
fn check_profile(server: &str, engine: &str) -> Result<(), String> {
    if engine == "jruby" || server.starts_with("jruby") {
        return Err(format!(
            "--profile cannot profile {server}: it runs on JRuby, whose stacks are the JVM's and \
             rbspy reads only MRI; profile it with a JVM profiler such as async-profiler \
             (asprof -d SECONDS -f flame.html PID), or drop --profile"
        ));
    }
    if crate::profile::rbspy::find().is_none() {
        return Err(crate::profile::ProfileError::Missing.to_string());
    }
    Ok(())
}
