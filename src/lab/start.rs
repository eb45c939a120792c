//! A trial's processes, started and answering ([`start_servers`], held
//! as [`Servers`]): the server's copies (instances.rs), then nginx in
//! front if asked, rendered into the trial directory and verified with
//! the app's answer through it; and their stop. What the trial is
//! started with is made ready before (prepare.rs); the telemetry is read
//! back after the stop (readback.rs).
//!
//! Every process started here is held by a `supervisor::Running`, which
//! stops its tree when dropped: an error half-way through start-up stops
//! what had started. Drives no load and samples nothing.

// A failed trial's error carries the log tail and the answer seen; it is
// built once per failure, so its size does not matter.
#![allow(clippy::result_large_err)]

use super::front::NginxConf;
use super::instances::{start_instances, Instances, Started};
use super::prepare::Prepared;
use super::record::{Topology, TopologyInfo};
use super::spec::{io_err, TrialError, TrialSpec};
use super::verify::verify;
use crate::host::free_port;
use crate::load::Endpoint;
use crate::sampler::Scope;
use crate::server::supervisor::{self, Launch, Running};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

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
        run_dir: prep.run_dir(),
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
