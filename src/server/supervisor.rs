//! Starts a server in its own process group, waits until it answers, and
//! stops every process it made — also when a trial fails or the user
//! presses Ctrl-C.
//!
//! Readiness is a real HTTP request, repeated until it is answered; never a
//! fixed sleep. A server that exits or does not answer in time ends with
//! the tail of its log. Stopping sends the stop signal to the process group
//! and to any descendant that left it (some servers `setsid` their
//! helpers), waits a grace period, then sends SIGKILL.

use super::probe::{self, Answer};
use crate::load::Endpoint;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StartError {
    #[error("cannot start '{command}': {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("{name} exited during start-up ({status}); last lines of its log {log}:\n{tail}")]
    Exited {
        name: String,
        status: String,
        log: String,
        tail: String,
    },
    #[error("{name} did not answer on {endpoint} within {secs:.0}s (raise --start-timeout if it is just slow); last lines of its log {log}:\n{tail}")]
    NoAnswer {
        name: String,
        endpoint: String,
        secs: f64,
        log: String,
        tail: String,
    },
    #[error("interrupted while waiting for {0} to start")]
    Interrupted(String),
    /// The server cannot be pinned where it was asked to be: it is not
    /// started unpinned, where it would share CPUs with the generator.
    #[error("cannot pin {name}: {why}")]
    Pin { name: String, why: String },
    /// The runtime's root filesystem could not be entered.
    #[error("{0}")]
    Root(String),
}

/// How to start one server process.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Short name for messages ("puma", "nginx").
    pub name: String,
    /// The command line, run as `sh -c 'exec …'` so the shell is replaced.
    pub command: String,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub log: PathBuf,
    /// Pin the server to these CPUs; empty for no pinning.
    pub cpus: Vec<usize>,
    pub stop_signal: i32,
    pub grace: Duration,
    /// Run from another release's root filesystem (a runtime's root).
    pub root: Option<super::rootfs::RootFs>,
    /// Join these control groups (their `cgroup.procs`) before exec: a
    /// budget's group (`budget::cgroup::Group::join_files`); empty for none.
    pub cgroup: Vec<std::ffi::CString>,
}

/// Where and how to ask whether the server is up.
#[derive(Debug, Clone)]
pub struct Probe {
    pub endpoint: Endpoint,
    pub host: String,
    pub path: String,
    pub timeout: Duration,
    /// The most body bytes the probe keeps (past it the answer says it
    /// was cut, [`probe::Cut`]).
    pub max_body_bytes: u64,
}

/// A started server. Dropping it stops it.
pub struct Running {
    pub launch: Launch,
    child: Option<Child>,
    pub pid: u32,
    stopped: bool,
}

impl Running {
    /// Whether the main process has exited, and how.
    pub fn exit_status(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }

    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.launch.log, lines)
    }

    /// Stops the whole process tree: the stop signal, a grace period, then
    /// SIGKILL for whatever is left. Returns the PIDs that needed SIGKILL.
    pub fn stop(&mut self) -> Vec<u32> {
        if self.stopped {
            return Vec::new();
        }
        self.stopped = true;
        let pgid = self.pid as i32;
        let mut tree = crate::sampler::tree_pids(self.pid);
        signal_all(pgid, &tree, self.launch.stop_signal);
        let deadline = Instant::now() + self.launch.grace;
        loop {
            if let Some(child) = self.child.as_mut() {
                let _ = child.try_wait();
            }
            reap_daemons();
            // Descendants may fork while shutting down: keep the list fresh.
            for pid in crate::sampler::tree_pids(self.pid) {
                if !tree.contains(&pid) {
                    tree.push(pid);
                }
            }
            let alive: Vec<u32> = tree.iter().copied().filter(|&p| is_alive(p)).collect();
            if alive.is_empty() && !group_alive(pgid) {
                break;
            }
            if Instant::now() >= deadline {
                signal_all(pgid, &alive, libc::SIGKILL);
                if let Some(child) = self.child.as_mut() {
                    let _ = child.wait();
                }
                return alive;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(child) = self.child.as_mut() {
            let _ = child.wait();
        }
        Vec::new()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

fn signal_all(pgid: i32, pids: &[u32], sig: i32) {
    // SAFETY: kill() with a negative pid signals a process group; with a
    // positive pid one process. Errors (already gone) are fine. pgid 0
    // means "no group" here (kill(0) would signal our own group).
    unsafe {
        if pgid > 0 {
            libc::kill(-pgid, sig);
        }
        for &p in pids {
            libc::kill(p as i32, sig);
        }
    }
}

/// Makes this process the reaper of orphaned descendants, so helpers a
/// server daemonizes stay in view (sampled, stopped) instead of escaping to
/// init.
pub fn become_subreaper() {
    // SAFETY: plain prctl on this process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
}

/// Stops every remaining child of this process other than `keep` (and
/// their trees): the stop signal, a grace period, SIGKILL; then reaps them.
/// Returns the PIDs that needed SIGKILL. For orphans a stopped server left
/// behind; call only when no other server of ours should be running.
pub fn stop_adopted(keep: &[u32], grace: Duration) -> Vec<u32> {
    let me = std::process::id();
    let find = || -> Vec<u32> {
        crate::sampler::direct_children(me)
            .into_iter()
            .filter(|p| !keep.contains(p))
            .flat_map(crate::sampler::tree_pids)
            .collect()
    };
    let reap = |pids: &[u32]| {
        for &p in pids {
            // SAFETY: reaping a specific child without blocking.
            unsafe { libc::waitpid(p as i32, std::ptr::null_mut(), libc::WNOHANG) };
        }
    };
    let first = find();
    if first.is_empty() {
        return Vec::new();
    }
    signal_all(0, &first, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    loop {
        let left: Vec<u32> = find().into_iter().filter(|&p| is_alive(p)).collect();
        reap(
            &crate::sampler::direct_children(me)
                .into_iter()
                .filter(|p| !keep.contains(p))
                .collect::<Vec<_>>(),
        );
        if left.is_empty() {
            return Vec::new();
        }
        if Instant::now() >= deadline {
            signal_all(0, &left, libc::SIGKILL);
            std::thread::sleep(Duration::from_millis(50));
            reap(&left);
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reaps the daemons that died after being adopted by this process (a
/// child subreaper): zombie children in a session other than ours. A
/// server's front process may wait for its daemon to be gone: `passenger
/// start` polls its watchdog with kill(pid, 0), which a zombie answers, so
/// an unreaped watchdog kept every passenger trial waiting out its whole
/// grace period (10 s) and then killed. Children we spawned ourselves
/// (servers, `Command::output`) share our session and are left to their
/// own waits, which reaping them here would break.
fn reap_daemons() {
    let me = std::process::id();
    let ours = session_of(me);
    for pid in crate::sampler::direct_children(me) {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let mut fields = stat
            .rfind(')')
            .map(|i| stat[i + 1..].split_whitespace())
            .into_iter()
            .flatten();
        let state = fields.next();
        // After state: ppid, pgrp, session.
        let session = fields.nth(2).and_then(|f| f.parse::<u32>().ok());
        if state == Some("Z") && session.is_some() && session != ours {
            // SAFETY: reaping one specific, already dead child, not blocking.
            unsafe { libc::waitpid(pid as i32, std::ptr::null_mut(), libc::WNOHANG) };
        }
    }
}

fn session_of(pid: u32) -> Option<u32> {
    // SAFETY: getsid has no preconditions; -1 is an error.
    let sid = unsafe { libc::getsid(pid as i32) };
    (sid >= 0).then_some(sid as u32)
}

/// True while `pid` exists and is not a zombie.
pub fn is_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(-pgid, 0) };
    if rc != 0 {
        return false;
    }
    // Zombies still count for kill(0); look for a live member.
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .any(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .is_some_and(|stat| {
                    let Some(i) = stat.rfind(')') else {
                        return false;
                    };
                    let fields: Vec<&str> = stat[i + 1..].split_whitespace().collect();
                    fields.len() > 3 && fields[0] != "Z" && fields[3] == pgid.to_string()
                })
        })
}

/// The last `lines` lines of a log file, for error messages.
pub fn log_tail(path: &Path, lines: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return "  (no log)".to_string();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
    let mut s = String::new();
    let _ = f.read_to_string(&mut s);
    let all: Vec<&str> = s.lines().collect();
    let tail = &all[all.len().saturating_sub(lines)..];
    if tail.is_empty() {
        return "  (log is empty)".to_string();
    }
    tail.iter()
        .map(|l| format!("  | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a child that could not pin itself reports in place of the
/// kernel's errno (EINVAL), which exec can return too: ENOTRECOVERABLE
/// comes from neither exec nor `sh`, so a pin failure is known as one.
const PIN_FAILED_ERRNO: i32 = libc::ENOTRECOVERABLE;

/// Spawns the server in a new process group with its output in `launch.log`.
pub fn spawn(launch: Launch) -> Result<Running, StartError> {
    let pin_err = |why: String| StartError::Pin {
        name: launch.name.clone(),
        why,
    };
    crate::load::cpus::check(&launch.cpus, "--server-cpus").map_err(pin_err)?;
    let spawn_err = |e| StartError::Spawn {
        command: launch.command.clone(),
        source: e,
    };
    let log = File::create(&launch.log).map_err(spawn_err)?;
    let log2 = log.try_clone().map_err(spawn_err)?;
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!("exec {}", launch.command))
        .current_dir(&launch.cwd)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .process_group(0);
    for (k, v) in &launch.env {
        cmd.env(k, v);
    }
    if let Some(root) = &launch.root {
        root.apply(&mut cmd);
    }
    let cpus = launch.cpus.clone();
    let groups = launch.cgroup.clone();
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // Before anything else, so every process the server makes is
            // inside its budget.
            crate::budget::cgroup::join_self(&groups)?;
            // If rackbench dies hard, the server's main process is told.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            if !cpus.is_empty() {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                for &c in &cpus {
                    libc::CPU_SET(c, &mut set);
                }
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    // The child ends here and spawn() returns this errno.
                    return Err(std::io::Error::from_raw_os_error(PIN_FAILED_ERRNO));
                }
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| {
        // Checked above, so only a cpuset changed meanwhile gets here.
        if e.raw_os_error() == Some(PIN_FAILED_ERRNO) && !launch.cpus.is_empty() {
            return pin_err(format!(
                "the kernel refused CPUs {}: use --server-cpus with CPUs from {}, or --no-pin",
                crate::load::cpus::format_list(&launch.cpus),
                crate::load::cpus::format_list(&crate::load::cpus::allowed())
            ));
        }
        if let Some(root) = &launch.root {
            return StartError::Root(root.explain(&e));
        }
        spawn_err(e)
    })?;
    Ok(Running {
        pid: child.id(),
        child: Some(child),
        launch,
        stopped: false,
    })
}

/// Waits until the server answers the probe with any HTTP response, or
/// fails. The caller judges the answer.
pub fn wait_ready(
    server: &mut Running,
    probe: &Probe,
    start_timeout: Duration,
    interrupt: &AtomicBool,
) -> Result<Answer, StartError> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(20);
    loop {
        if interrupt.load(Ordering::Relaxed) {
            return Err(StartError::Interrupted(server.launch.name.clone()));
        }
        if let Some(status) = server.exit_status() {
            return Err(StartError::Exited {
                name: server.launch.name.clone(),
                status,
                log: server.launch.log.display().to_string(),
                tail: server.log_tail(20),
            });
        }
        if let Ok(answer) = probe::get_capped(
            &probe.endpoint,
            &probe.host,
            &probe.path,
            probe.timeout,
            probe.max_body_bytes,
        ) {
            return Ok(answer);
        }
        if started.elapsed() >= start_timeout {
            return Err(StartError::NoAnswer {
                name: server.launch.name.clone(),
                endpoint: probe.endpoint.to_string(),
                secs: start_timeout.as_secs_f64(),
                log: server.launch.log.display().to_string(),
                tail: server.log_tail(20),
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(250));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_asked_onto_a_cpu_the_machine_lacks_is_not_started_unpinned() {
        let dir = std::env::temp_dir();
        let marker = dir.join(format!("rackbench-pin-test-{}", std::process::id()));
        let launch = Launch {
            name: "touch".into(),
            command: format!("touch {}", marker.display()),
            env: Vec::new(),
            cwd: dir.clone(),
            log: dir.join(format!("rackbench-pin-test-{}.log", std::process::id())),
            // No machine this runs on has 1023 CPUs.
            cpus: vec![1023],
            stop_signal: libc::SIGTERM,
            grace: Duration::from_secs(1),
            root: None,
            cgroup: Vec::new(),
        };
        let err = match spawn(launch) {
            Ok(_) => panic!("started on a CPU that does not exist"),
            Err(e) => e.to_string(),
        };
        assert!(
            err.starts_with("cannot pin touch: --server-cpus: CPU 1023 does not exist here"),
            "{err}"
        );
        assert!(err.contains("e.g. --server-cpus"), "{err}");
        std::thread::sleep(Duration::from_millis(100));
        assert!(!marker.exists(), "the command ran");
    }

    /// Regression: `passenger start` waits on stop until its daemonized
    /// watchdog is gone, polling with kill(pid, 0). Adopted by rackbench
    /// (a subreaper) and never reaped, the dead watchdog stayed a zombie that
    /// kill(0) still finds, so every passenger trial waited its whole grace
    /// period and was then killed. This server does the same with a helper
    /// in a session of its own.
    #[test]
    fn a_server_waiting_for_its_daemon_to_go_stops_within_its_grace() {
        become_subreaper();
        let dir =
            std::env::temp_dir().join(format!("rackbench-daemon-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pidfile = dir.join("helper.pid");
        let script = dir.join("server.sh");
        std::fs::write(
            &script,
            format!(
                "setsid sh -c 'sleep 30 & echo $! > {p}'\n\
                 while [ ! -s {p} ]; do sleep 0.01; done\n\
                 trap 'kill $(cat {p}); while kill -0 $(cat {p}) 2>/dev/null; do sleep 0.05; done; exit 0' TERM\n\
                 while :; do sleep 0.05; done\n",
                p = pidfile.display()
            ),
        )
        .unwrap();
        let mut server = spawn(Launch {
            name: "daemonizing".into(),
            command: format!("sh {}", script.display()),
            env: Vec::new(),
            cwd: dir.clone(),
            log: dir.join("server.log"),
            cpus: Vec::new(),
            stop_signal: libc::SIGTERM,
            grace: Duration::from_secs(5),
            root: None,
            cgroup: Vec::new(),
        })
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !pidfile.exists() || std::fs::read_to_string(&pidfile).unwrap().trim().is_empty() {
            assert!(Instant::now() < deadline, "the helper never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        let killed = server.stop();
        let took = started.elapsed();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            killed.is_empty(),
            "killed after the grace period: {killed:?}"
        );
        assert!(took < Duration::from_secs(3), "stop took {took:?}");
    }
}
