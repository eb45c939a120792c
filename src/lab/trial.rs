//! One trial end to end: start the server (behind nginx if asked), verify
//! the app's answer, apply warm-up and load with no pause between them,
//! sample the server's process tree, stop everything, and return a
//! `rackbench/trial-v1` record. [`run_trial`] reads as those steps; each
//! lives in a file of its own: what a trial is asked and its checks
//! (`spec.rs`), what the server starts with (`prepare.rs`), start-up and
//! stop (`start.rs`, the copies in `instances.rs`, each answer checked in
//! `verify.rs`), the telemetry read back (`readback.rs`), the watching
//! threads (`watch.rs`), the record's types (`record.rs`).
//!
//! Every process a trial starts is stopped before `run_trial` returns, on
//! success, on failure and on Ctrl-C: servers are held by
//! `supervisor::Running`, which stops its process tree when dropped.

// A failed trial's error carries the log tail and the answer seen; it is
// built once per failure, so its size does not matter.
#![allow(clippy::result_large_err)]

use super::environment::Environment;
use super::prepare::{prepare, Prepared};
use super::profiled::ProfileWatch;
use super::restart::{self, Restarter};
use super::spec::validate;
use super::start::{start_servers, Servers};
use super::watch::{Seen, Watchers};
use crate::host::utc_now;
use crate::load::{self, Endpoint, LoadConfig, LoadReport};
use crate::sampler::{Sampler, SamplerReport};
use crate::server::spec::read_version;
use crate::telemetry::Telemetry;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

// Where the rest of the crate has always found a trial's types.
pub use super::record::{
    ServerInfo, ServerMetrics, Topology, TopologyInfo, TrialRecord, Verified, SCHEMA,
};
pub use super::spec::{TrialError, TrialSpec};

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
    servers.commands.push(load_command(&cfg));
    let outcome = load_while_watching(&spec, cfg, &mut servers, &prep, After::Stop);
    Ok(record(spec, &prep, &servers, outcome?, started_at))
}

/// What a trial does with its servers once the load ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum After {
    /// Stops every process (a trial).
    Stop,
    /// Leaves them running for the next window (a [`KeptServer`]).
    KeepRunning,
}

/// A trial's servers started once and measured window after window
/// (`rackbench ab --keep-running`): each [`KeptServer::window`] is a whole
/// trial record (warm-up, counted load, the tree's CPU and memory and the
/// machine's disturbance over that window) without the start and stop
/// around it. What that leaves out of the truth: every window sees the
/// same process, so a lucky or unlucky start (memory layout, what the
/// warm-up loaded) counts once for the whole A/B instead of once per
/// window, and state the app keeps (caches, a growing heap) carries from
/// window to window. Dropping it stops every process it started.
pub struct KeptServer {
    // Field order is drop order: the servers, then the directory their
    // sockets and logs live in.
    servers: Servers,
    prep: Prepared,
}

/// Starts and verifies `spec`'s servers as [`run_trial`] does, and keeps
/// them. A restart or a soak is a trial's whole life and is refused.
pub fn keep_server(spec: &TrialSpec) -> Result<KeptServer, TrialError> {
    validate(spec)?;
    let refuse = |what: &str| TrialError::Unsupported {
        server: spec.server.name.clone(),
        what: format!("{what} while kept running"),
        fix: "leave out --keep-running (a fresh server per window)".into(),
    };
    if spec.restart.is_some() {
        return Err(refuse("a restart"));
    }
    if spec.soak.is_some() {
        return Err(refuse("a soak"));
    }
    let prep = prepare(spec)?;
    let servers = start_servers(spec, &prep)?;
    Ok(KeptServer { servers, prep })
}

impl KeptServer {
    /// One window of `spec`'s load on the running servers, as a trial's
    /// record; its work directory is the first window's. A server that
    /// died is in the record's `server_exit`, as a trial's.
    pub fn window(&mut self, spec: TrialSpec) -> Result<TrialRecord, TrialError> {
        let started_at = utc_now();
        let cfg = load_config(&spec, &self.servers, &self.prep.host)?;
        let kept = self.servers.commands.len();
        self.servers.commands.push(load_command(&cfg));
        let watched = load_while_watching(
            &spec,
            cfg,
            &mut self.servers,
            &self.prep,
            After::KeepRunning,
        );
        let rec = watched.map(|w| record(spec, &self.prep, &self.servers, w, started_at));
        self.servers.commands.truncate(kept);
        rec
    }
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
    if let Some(mix) = &spec.load.mix {
        // A mix sends its own requests, for the front's host; each is
        // judged by its endpoint. The app's own request is still what
        // verified the server before the load.
        let mix = mix
            .render(&parsed, keep_alive)
            .map_err(TrialError::Request)?;
        cfg.mix = Some(Arc::new(mix));
        cfg.url = match &servers.front {
            Endpoint::Tcp(a) => format!("http://{a}/"),
            Endpoint::Unix(p) => format!("unix:{}:/", p.display()),
        };
    }
    if spec.load.schedule.is_some() {
        // A replay sends its own requests: their answers are whatever the
        // app returns, judged as the replay set them.
        cfg.expect_status = spec.load.expect_status.clone();
        cfg.expect_body.clear();
        cfg.head_request = false;
    }
    Ok(cfg)
}

/// What the load and the watchers saw, once every process has stopped.
struct Watched {
    report: LoadReport,
    seen: Seen,
    server_exit: Option<String>,
    killed: Vec<u32>,
    telemetry: Option<Telemetry>,
    restart: Option<super::record::RestartRecord>,
    database: Option<crate::database::DatabaseRecord>,
    faults: super::faults::Faults,
    /// `--profile`'s result: the profile, or why there is none.
    profile: Option<Result<crate::profile::Profile, String>>,
}

/// Runs the load while the watchers sample the server (and nginx), mark
/// the counted window, pass Ctrl-C on and end the load if a server process
/// dies; then stops every process, so nothing is left running whether the
/// load succeeded or not.
fn load_while_watching(
    spec: &TrialSpec,
    mut cfg: LoadConfig,
    servers: &mut Servers,
    prep: &Prepared,
    after: After,
) -> Result<Watched, TrialError> {
    // The load has a flag of its own: Ctrl-C (the trial's flag) sets it
    // through the watcher, and so does the server dying or a failing
    // break-point step, without stopping anything beyond this trial.
    let load_flag = Arc::new(AtomicBool::new(false));
    cfg.interrupt = Arc::clone(&load_flag);
    let restart = restart_kind(spec, prep)?;
    let watchers = Watchers::start(spec, servers, &cfg.cpus, load_flag);
    // nginx's error log from here on says why it answered a 5xx itself.
    let nginx_log = prep.dir.join("nginx-error.log");
    let nginx_log_offset = super::failure::log_offset(&nginx_log);
    let window = watchers.window();
    let live_telemetry = prep.watch_telemetry_live(watchers.window());
    let profiling = (spec.profile.as_ref())
        .map(|ask| ProfileWatch::start(ask, servers.server_scope(), watchers.window()));
    let restarter = restart.map(|(r, kind, pidfile, command)| {
        let plan = restart::Plan {
            kind,
            at: r.at,
            window: watchers.window(),
            scope: servers.server_scope(),
            masters: watchers.masters(),
            pidfile,
            command,
            answers: restart::Answers::new(
                &prep.inside.data_dir,
                &servers.started.endpoints[0],
                &prep.host,
                &spec.app.path,
            ),
        };
        Restarter::start(plan)
    });
    let mut kept = restart::SecondsKept::default();
    let report = load::run_observed_seconds(
        cfg,
        |w| {
            let _ = window.set(w);
        },
        |row, latency| {
            if restarter.is_some() {
                kept.keep(row, latency);
            }
        },
    );
    if let Some(p) = live_telemetry {
        p.finish();
    }
    let profile = profiling.map(ProfileWatch::finish);
    let performed = restarter.map(Restarter::finish);
    let mut seen = watchers.finish();
    servers.topo.nginx_metrics = seen.nginx_samples.take();
    prep.wait_for_telemetry_flush();
    let server_exit = seen
        .server_died
        .then(|| servers.started.exit_report(&spec.server.name));
    let killed = match after {
        After::Stop => servers.stop_all(spec.grace),
        After::KeepRunning => Vec::new(),
    };
    // Counted once the server has stopped, so every write it answered is in.
    let database = prep
        .database
        .as_ref()
        .map(|d| d.record(seen.database_samples.as_ref()));
    let telemetry = prep.read_telemetry(seen.window_start);
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
    let restart = spec.restart.as_ref().zip(performed).map(|(r, performed)| {
        restart::summarize(restart::Outcome {
            kind: &r.kind,
            at: r.at,
            performed,
            window_start: seen.window_start,
            warmup_s: report.config.warmup_s,
            timeline: &report.timeline,
            seconds: &kept,
        })
    });
    let faults = faults(&seen, &report, restart.as_ref());
    faults.explain_unanswered(&mut report.warnings, report.connections.never_answered);
    Ok(Watched {
        report,
        seen,
        server_exit,
        killed,
        telemetry,
        restart,
        database,
        faults,
        profile,
    })
}

/// The faults the watchers saw (`lab::faults`): the workers a restart
/// replaced are the restart's.
fn faults(
    seen: &Seen,
    report: &LoadReport,
    restart: Option<&super::record::RestartRecord>,
) -> super::faults::Faults {
    let samples = &seen.samples;
    super::faults::Faults::of(&super::faults::Sources {
        lifecycle: &samples.lifecycle,
        exits: &seen.exits,
        window_ms: samples.window_start_ms,
        timeline: &report.timeline,
        warmup_s: report.config.warmup_s,
        deliberate: restart.map_or(&[], |r| &r.pids_before),
    })
}

/// The trial's restart, resolved: what it asks, the adapter's kind, the
/// first instance's pid file and the command rendered (a command kind).
type ResolvedRestart = (
    restart::RestartSpec,
    crate::server::spec::RestartKind,
    std::path::PathBuf,
    Option<restart::RestartCommand>,
);

fn restart_kind(spec: &TrialSpec, prep: &Prepared) -> Result<Option<ResolvedRestart>, TrialError> {
    let Some(r) = &spec.restart else {
        return Ok(None);
    };
    let kind = spec
        .server
        .restart_kind(&r.kind, spec.workers)
        .map_err(TrialError::Restart)?;
    let (pidfile, command) = prep.restart_parts(spec, kind.command.as_deref())?;
    Ok(Some((r.clone(), kind, pidfile, command)))
}

/// The equivalent `rackbench load` command, for the record.
fn load_command(cfg: &LoadConfig) -> String {
    format!(
        "rackbench load {} -c {} -t {} {}{}--warmup {:?}{}{}{}",
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
        },
        cfg.slow.as_ref().map_or(String::new(), |s| format!(
            " --slow-clients {} --slow-mode {} --slow-bytes {} --slow-every {}ms",
            s.count,
            s.mode,
            s.bytes_per_step,
            s.every.as_millis()
        )),
        cfg.mix
            .as_ref()
            .map_or(String::new(), |m| format!(" --mix {}", m.file))
    )
}

/// The server's figures over the counted window: CPU, memory and
/// processes from the sampler, per OK response, and what telemetry, the
/// accept queue and the server's own stats saw.
fn server_metrics(seen: Seen, telemetry: Option<Telemetry>, ok_responses: u64) -> ServerMetrics {
    let samples = seen.samples;
    ServerMetrics {
        cpu_user_s: samples.cpu_user_s,
        cpu_sys_s: samples.cpu_sys_s,
        rss_peak_bytes: samples.rss_peak_bytes,
        pss_peak_bytes: samples.pss_peak_bytes,
        uss_peak_bytes: samples.uss_peak_bytes,
        rss_mean_bytes: samples.rss_mean_bytes,
        pss_mean_bytes: samples.pss_mean_bytes,
        processes_peak: samples.processes_peak,
        cpu_ms_per_request: samples.cpu_ms_per_request(ok_responses),
        samples,
        telemetry,
        accept_queue: seen.accept_queue,
        server_stats: seen.server_stats,
    }
}

/// The `rackbench/trial-v1` record of a finished trial.
fn record(
    spec: TrialSpec,
    prep: &Prepared,
    servers: &Servers,
    watched: Watched,
    started_at: String,
) -> TrialRecord {
    let s = &spec.server;
    let Watched {
        report,
        mut seen,
        server_exit,
        killed,
        telemetry,
        restart,
        database,
        faults,
        profile,
    } = watched;
    let (profile, profile_error) = match profile {
        Some(Ok(p)) => (Some(p), None),
        Some(Err(why)) => (None, Some(why)),
        None => (None, None),
    };
    let disturbance = seen.disturbance.take();
    let budget = match (&prep.group, &spec.budget) {
        (Some(g), Some(b)) => Some(g.record(b, seen.window_start)),
        _ => None,
    };
    let runtime = prep.read_runtime(&spec, servers.started.running[0].pid);
    let soak = spec
        .soak
        .as_ref()
        .zip(seen.samples.soak.as_ref())
        .map(|(soak, samples)| super::soak::SoakRecord::of(soak, samples));
    let server_metrics = server_metrics(seen, telemetry, report.requests.ok);
    let started = &servers.started;
    TrialRecord {
        schema: SCHEMA.to_string(),
        started_at,
        ended_at: utc_now(),
        server: ServerInfo {
            name: s.name.clone(),
            // The runtime's own server, not the host's.
            version: if runtime.kind == "system" {
                read_version(s)
            } else {
                runtime.server_version.clone()
            },
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
        runtime: Some(runtime),
        budget,
        restart,
        soak,
        database,
        faults,
        profile,
        profile_error,
        killed_after_grace: killed,
        interrupted: spec.interrupt.load(Ordering::Relaxed),
        dir: prep.dir.display().to_string(),
    }
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
    let sampler = Sampler::start_scope(servers.server_scope(), spec.sample_interval);
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
        self.prep.wait_for_telemetry_flush();
        self.servers.started.stop();
        (report, self.prep.read_telemetry(since))
    }
}
