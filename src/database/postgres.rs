//! PostgreSQL started for one trial: Debian's binaries
//! (`/usr/lib/postgresql/VERSION/bin`, or `RACKBENCH_PG_BIN`), a data
//! directory of its own under the trial's directory (initdb, trust auth on
//! loopback only), listening on 127.0.0.1 at a free port (or `--set
//! db_port`) and on a unix socket in the trial's short run dir, waited on
//! with `pg_isready`, the `blog` database created. PostgreSQL refuses to
//! run as root, so under root every step runs as the `postgres` user
//! (`setpriv`, which execs in place: the supervisor's process group and
//! pid are postgres's own), the directories chowned to it.
//!
//! [`Server`] is held by a `supervisor::Running` with SIGINT as its stop
//! signal (PostgreSQL's fast shutdown: clients cut, a clean checkpoint),
//! then SIGKILL of the group after the grace; dropping it stops the tree
//! and removes the data directory. The data directory is claimed
//! (`leftovers::Claim`) before it is made, so when rackbench is killed
//! before its drop runs, the next command finds it and removes it.

use super::setup::{DatabaseError, Setup, BIN_ENV};
use crate::server::supervisor::{self, Launch, Running};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The database the app uses.
const DB_NAME: &str = "blog";
/// How long PostgreSQL may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);

pub(super) struct Server {
    running: Running,
    data_dir: PathBuf,
    socket_dir: PathBuf,
    pub(super) url: String,
    pub(super) version: String,
    pub(super) command: String,
    /// The data directory's claim, dropped after `drop` removed it.
    _claim: crate::leftovers::Claim,
}

impl Server {
    pub(super) fn pid(&self) -> u32 {
        self.running.pid
    }

    /// initdb, start, wait until it accepts connections, create the app's
    /// database. A failure stops what started and names the log.
    pub(super) fn start(setup: &Setup) -> Result<Server, DatabaseError> {
        let bin = bin_dir()?;
        let user = RunAs::for_postgres()?;
        // Under root the postgres user must reach its data directory: a
        // trial directory under /root (mode 700) is out of its reach, so
        // there the data goes to the short run dir in $TMPDIR instead.
        let data_dir = if user.0.is_none() || reachable_by_others(setup.dir) {
            setup.dir.join("postgres-data")
        } else {
            setup.run_dir.join("postgres-data")
        };
        let socket_dir = setup.run_dir.join("pg");
        let io = |e| DatabaseError::Io {
            dir: setup.dir.display().to_string(),
            source: e,
        };
        let claim = crate::leftovers::Claim::new(&data_dir);
        let _ = std::fs::remove_dir_all(&data_dir);
        for d in [&data_dir, &socket_dir] {
            std::fs::create_dir_all(d).map_err(io)?;
            user.own(d).map_err(io)?;
        }
        let initdb_log = setup.dir.join("postgres-initdb.log");
        let initdb = format!(
            "{} {} -D {} -U postgres --auth=trust --encoding=UTF8 --no-sync",
            user.prefix(),
            bin.join("initdb").display(),
            data_dir.display()
        );
        // Until `Server` holds them, a failure removes the directories here.
        let remove = || {
            let _ = std::fs::remove_dir_all(&data_dir);
            let _ = std::fs::remove_dir_all(&socket_dir);
        };
        run_logged(&initdb, &initdb_log, setup.dir).map_err(|_| {
            remove();
            postgres_failed("initdb", &initdb_log)
        })?;
        let port = match setup.port {
            Some(p) => p,
            None => crate::host::free_port().map_err(|e| {
                remove();
                io(e)
            })?,
        };
        let command = format!(
            "{}{} -D {} -p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={} -c max_connections=200",
            user.prefix(),
            bin.join("postgres").display(),
            data_dir.display(),
            socket_dir.display()
        );
        let log = setup.dir.join("postgres.log");
        let running = supervisor::spawn(Launch {
            name: "postgres".into(),
            command: command.clone(),
            env: Vec::new(),
            cwd: setup.dir.to_path_buf(),
            log: log.clone(),
            cpus: Vec::new(),
            stop_signal: libc::SIGINT,
            grace: setup.grace,
            root: None,
            cgroup: Vec::new(),
        })
        .map_err(|e| {
            remove();
            DatabaseError::Postgres {
                step: "start".into(),
                log: log.display().to_string(),
                tail: format!("  | {e}"),
            }
        })?;
        let mut server = Server {
            running,
            data_dir,
            socket_dir,
            url: format!("postgres://postgres@127.0.0.1:{port}/{DB_NAME}"),
            version: version(&bin),
            command,
            _claim: claim,
        };
        server.wait_ready(&bin, port, &log, setup)?;
        let createdb = format!(
            "{} -h 127.0.0.1 -p {port} -U postgres {DB_NAME}",
            bin.join("createdb").display()
        );
        let createdb_log = setup.dir.join("postgres-createdb.log");
        run_logged(&createdb, &createdb_log, setup.dir)
            .map_err(|_| postgres_failed("createdb", &createdb_log))?;
        Ok(server)
    }

    /// Polls `pg_isready` until it accepts connections; the log's own
    /// words when postgres exits first (a port in use is named).
    fn wait_ready(
        &mut self,
        bin: &Path,
        port: u16,
        log: &Path,
        setup: &Setup,
    ) -> Result<(), DatabaseError> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let ready = Command::new(bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
                .stdin(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return Ok(());
            }
            if self.running.exit_status().is_some() {
                let text = std::fs::read_to_string(log).unwrap_or_default();
                if text.contains("Address already in use") {
                    return Err(DatabaseError::PortInUse { port });
                }
                return Err(postgres_failed("start", log));
            }
            if setup.interrupt.load(Ordering::Relaxed) {
                return Err(DatabaseError::Interrupted);
            }
            if Instant::now() >= deadline {
                return Err(postgres_failed("start (no answer in 60 s)", log));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.running.stop();
        let _ = std::fs::remove_dir_all(&self.data_dir);
        let _ = std::fs::remove_dir_all(&self.socket_dir);
    }
}

fn postgres_failed(step: &str, log: &Path) -> DatabaseError {
    DatabaseError::Postgres {
        step: step.into(),
        log: log.display().to_string(),
        tail: supervisor::log_tail(log, 8),
    }
}

/// Runs a short command through `sh -c`, its output in `log`.
fn run_logged(command: &str, log: &Path, cwd: &Path) -> Result<(), ()> {
    let out = std::fs::File::create(log).map_err(|_| ())?;
    let err = out.try_clone().map_err(|_| ())?;
    let ok = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Ok(())
    } else {
        Err(())
    }
}

/// PostgreSQL's bin directory: `RACKBENCH_PG_BIN`, or Debian's newest
/// `/usr/lib/postgresql/N/bin` holding `postgres`.
fn bin_dir() -> Result<PathBuf, DatabaseError> {
    if let Some(d) = std::env::var_os(BIN_ENV) {
        let d = PathBuf::from(d);
        return if d.join("postgres").is_file() && d.join("initdb").is_file() {
            Ok(d)
        } else {
            Err(DatabaseError::NotInstalled {
                why: format!("no postgres and initdb in {BIN_ENV}={}", d.display()),
            })
        };
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((v, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, b)| b)
        .ok_or_else(|| DatabaseError::NotInstalled {
            why: "no /usr/lib/postgresql/*/bin/postgres".into(),
        })
}

/// Whether another user can reach `dir`: it and every folder above it
/// let others pass (their execute bit).
fn reachable_by_others(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(dir) = dir.canonicalize() else {
        return false;
    };
    dir.ancestors()
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// "PostgreSQL 15.8", from `postgres --version`.
fn version(bin: &Path) -> String {
    Command::new(bin.join("postgres"))
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .and_then(|s| s.split_once(") ").map(|(_, v)| format!("PostgreSQL {v}")))
        .unwrap_or_else(|| "PostgreSQL".into())
}

/// Who PostgreSQL runs as: ourselves, or under root the `postgres` user.
struct RunAs(Option<(u32, u32)>);

impl RunAs {
    fn for_postgres() -> Result<RunAs, DatabaseError> {
        // SAFETY: getuid has no preconditions.
        if unsafe { libc::getuid() } != 0 {
            return Ok(RunAs(None));
        }
        let name = std::ffi::CString::new("postgres").expect("no NUL");
        // SAFETY: getpwnam returns a pointer into static storage or null;
        // read at once, on this thread.
        let pw = unsafe { libc::getpwnam(name.as_ptr()) };
        if pw.is_null() {
            return Err(DatabaseError::NotInstalled {
                why: "rackbench runs as root and there is no postgres user to run it as".into(),
            });
        }
        // SAFETY: non-null, just returned by getpwnam.
        let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
        Ok(RunAs(Some((uid, gid))))
    }

    /// The command's prefix: `setpriv` to the postgres user (it execs in
    /// place, and passes the parent-death signal on), or nothing.
    fn prefix(&self) -> String {
        match self.0 {
            Some((uid, gid)) => {
                format!("setpriv --reuid={uid} --regid={gid} --clear-groups --pdeathsig INT ")
            }
            None => String::new(),
        }
    }

    fn own(&self, dir: &Path) -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        if let Some((uid, gid)) = self.0 {
            std::os::unix::fs::chown(dir, Some(uid), Some(gid))?;
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_folder_closed_to_others_anywhere_above_makes_a_directory_unreachable() {
        let base = std::env::temp_dir().join(format!("rb-pg-reach-{}", std::process::id()));
        let inner = base.join("a/b");
        std::fs::create_dir_all(&inner).unwrap();
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        for (a_mode, reachable) in [(0o755, true), (0o711, true), (0o700, false), (0o750, false)] {
            mode(&base.join("a"), a_mode);
            assert_eq!(reachable_by_others(&inner), reachable, "a at {a_mode:o}");
        }
        assert!(!reachable_by_others(&base.join("missing")));
        mode(&base.join("a"), 0o755);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
