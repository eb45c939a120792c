//! The server under test started as one or several copies, each on its
//! own port or socket: its template variables, its config file, its
//! command (through the runtime's prefix and root), its stats endpoint
//! when telemetry is on; all launched first, then each waited on and
//! verified, its port's owner checked ([`start_instances`], held as
//! [`Started`]). It never starts nginx or the database, and never decides
//! where the trial's files live (prepare.rs does).

// A failed trial's error carries the log tail and the answer seen; it is
// built once per failure, so its size does not matter.
#![allow(clippy::result_large_err)]

use super::spec::{io_err, template_err, TrialError, TrialSpec};
use super::verify::verify;
use crate::host::{free_port, rackbench_home};
use crate::load::Endpoint;
use crate::sampler::Scope;
use crate::server::probe::Answer;
use crate::server::supervisor::{self, Launch, Running};
use crate::server::template::{self, Vars};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// What `start_instances` needs to start the server under test.
pub(super) struct Instances<'a> {
    pub(super) spec: &'a TrialSpec,
    /// Copies of the server, each on its own socket or port.
    pub(super) count: u32,
    pub(super) workers: u32,
    pub(super) threads: u32,
    /// The server's settings with the trial's overrides applied.
    pub(super) settings: &'a BTreeMap<String, String>,
    pub(super) env: &'a BTreeMap<String, String>,
    pub(super) app_file: &'a Path,
    pub(super) app_dir: &'a Path,
    pub(super) dir: &'a Path,
    pub(super) run_dir: &'a Path,
    pub(super) use_socket: bool,
    pub(super) host: &'a str,
    pub(super) runtime: &'a crate::runtime::Runtime,
    /// The budget's group every instance joins (empty without a budget).
    pub(super) cgroup: Vec<std::ffi::CString>,
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
pub(super) fn instance_file(name: &str, i: u32, count: u32) -> String {
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
pub(super) fn start_instances(ctx: &Instances) -> Result<Started, TrialError> {
    let mut started = Started {
        running: Vec::new(),
        endpoints: Vec::new(),
        commands: Vec::new(),
        config_file: None,
        answer: Answer::whole(0, Vec::new()),
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

/// The server's processes: its tree and the helpers it daemonized (ours
/// as subreaper).
fn server_scope(server: &Running) -> Scope {
    Scope {
        root: server.pid,
        adopted_by: Some(std::process::id()),
        exclude: Vec::new(),
    }
}
