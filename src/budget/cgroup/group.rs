//! One trial's control group ([`Group`]): made under rackbench's own group
//! in the place mod.rs chose, limited, joined by the server between fork
//! and exec ([`join_self`]), read (OOM kills, throttling), and removed when
//! dropped, after its processes are gone (killed if any is left).
//!
//! It never chooses where a group goes (mod.rs does) and never writes to a
//! group it did not make, except to enable v2 controllers in its parent.

use super::{group_name, group_processes, place_here, Place, Version, FIX};
use crate::budget::{Budget, BudgetRecord};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One trial's control group. Dropping it removes it, once its processes
/// are gone.
pub struct Group {
    pub version: Version,
    /// The group's directories: one on v2, one per v1 hierarchy.
    dirs: Vec<PathBuf>,
    memory_dir: PathBuf,
    cpu_dir: PathBuf,
    /// When the watcher saw each kill for memory.
    oom_seen: Arc<Mutex<Vec<Instant>>>,
    stop: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

impl Group {
    /// A group for `budget` on this machine, limited and watched.
    pub fn create(budget: &Budget) -> Result<Group, String> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = group_name(std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        Group::create_at(&place_here()?, &name, budget)
    }

    /// A group named `name` at `place`, with `budget`'s limits. Whatever
    /// was made is removed if a limit cannot be set.
    pub fn create_at(place: &Place, name: &str, budget: &Budget) -> Result<Group, String> {
        let memory_dir = place.memory_parent.join(name);
        let cpu_dir = place.cpu_parent.join(name);
        let mut group = Group {
            version: place.version,
            dirs: Vec::new(),
            memory_dir: memory_dir.clone(),
            cpu_dir: cpu_dir.clone(),
            oom_seen: Arc::default(),
            stop: Arc::default(),
            watcher: None,
        };
        if place.version == Version::V2 {
            enable_v2_controllers(&place.memory_parent, budget);
        }
        for dir in [&memory_dir, &cpu_dir] {
            if group.dirs.contains(dir) {
                continue;
            }
            std::fs::create_dir(dir).map_err(|e| {
                format!(
                    "cannot make the control group {}: {e}: {FIX}",
                    dir.display()
                )
            })?;
            group.dirs.push(dir.clone());
        }
        group.limit(budget)?;
        group.watch();
        Ok(group)
    }

    /// Writes the limits; Err names the file the kernel refused or lacks.
    fn limit(&self, budget: &Budget) -> Result<(), String> {
        let put = |dir: &Path, file: &str, value: String| {
            // A file the controller would add is absent without it; writing
            // one is refused (EACCES on cgroupfs, not ENOENT), so look first.
            let written = if dir.join(file).exists() {
                std::fs::write(dir.join(file), &value)
            } else {
                Err(std::io::ErrorKind::NotFound.into())
            };
            written.map_err(|e| {
                let why = if e.kind() == std::io::ErrorKind::NotFound {
                    format!(
                        "{} has no {file}: the {} controller is not enabled there",
                        dir.display(),
                        if file.starts_with("cpu") {
                            "cpu"
                        } else {
                            "memory"
                        }
                    )
                } else {
                    format!("cannot write {value} to {}: {e}", dir.join(file).display())
                };
                format!("{why}: {FIX}")
            })
        };
        const PERIOD_US: u64 = 100_000;
        if let Some(m) = budget.memory_limit_bytes {
            match self.version {
                Version::V2 => {
                    put(&self.memory_dir, "memory.max", m.to_string())?;
                    // Swap would hide the limit: the budget is memory.
                    let _ = std::fs::write(self.memory_dir.join("memory.swap.max"), "0");
                }
                Version::V1 => {
                    put(&self.memory_dir, "memory.limit_in_bytes", m.to_string())?;
                    let memsw = self.memory_dir.join("memory.memsw.limit_in_bytes");
                    if memsw.exists() {
                        put(
                            &self.memory_dir,
                            "memory.memsw.limit_in_bytes",
                            m.to_string(),
                        )?;
                    }
                }
            }
        }
        if let Some(c) = budget.cpus {
            let quota = ((c * PERIOD_US as f64).round() as u64).max(1000);
            match self.version {
                Version::V2 => put(&self.cpu_dir, "cpu.max", format!("{quota} {PERIOD_US}"))?,
                Version::V1 => {
                    put(&self.cpu_dir, "cpu.cfs_period_us", PERIOD_US.to_string())?;
                    put(&self.cpu_dir, "cpu.cfs_quota_us", quota.to_string())?;
                }
            }
        }
        Ok(())
    }

    /// The files a process writes "0" to, to join the group (itself):
    /// each directory's `cgroup.procs`, prepared before the fork.
    pub fn join_files(&self) -> Vec<CString> {
        self.dirs
            .iter()
            .map(|d| CString::new(d.join("cgroup.procs").as_os_str().as_bytes()).expect("no NUL"))
            .collect()
    }

    /// The group's directories.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Processes killed for memory in the group so far.
    pub fn oom_kills(&self) -> u64 {
        read_oom_kills(self.version, &self.memory_dir)
    }

    /// A thread that notes the time of each kill for memory (every 100 ms),
    /// for the timeline.
    fn watch(&mut self) {
        let (seen, stop) = (Arc::clone(&self.oom_seen), Arc::clone(&self.stop));
        let (version, dir) = (self.version, self.memory_dir.clone());
        self.watcher = Some(std::thread::spawn(move || {
            let mut last = read_oom_kills(version, &dir);
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let now = read_oom_kills(version, &dir);
                if now > last {
                    let at = Instant::now();
                    seen.lock()
                        .expect("not poisoned")
                        .extend((last..now).map(|_| at));
                    last = now;
                }
            }
        }));
    }

    /// What the group saw, with kill times from `window_start`.
    pub fn record(&self, budget: &Budget, window_start: Option<Instant>) -> BudgetRecord {
        let read = |dir: &Path, f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let cpu_stat = read(&self.cpu_dir, "cpu.stat");
        let (peak, throttled_s) = match self.version {
            Version::V1 => (
                read(&self.memory_dir, "memory.max_usage_in_bytes")
                    .trim()
                    .parse()
                    .ok(),
                field(&cpu_stat, "throttled_time").unwrap_or(0) as f64 / 1e9,
            ),
            Version::V2 => (
                read(&self.memory_dir, "memory.peak").trim().parse().ok(),
                field(&cpu_stat, "throttled_usec").unwrap_or(0) as f64 / 1e6,
            ),
        };
        let origin = window_start.unwrap_or_else(Instant::now);
        let oom_events = self
            .oom_seen
            .lock()
            .expect("not poisoned")
            .iter()
            .map(|&t| signed_secs(t, origin))
            .collect();
        BudgetRecord {
            memory_limit_bytes: budget.memory_limit_bytes,
            cpus: budget.cpus,
            memory_peak_bytes: peak,
            oom_kills: self.oom_kills(),
            cpu_throttled_s: throttled_s,
            cpu_throttled_periods: field(&cpu_stat, "nr_throttled").unwrap_or(0),
            cgroup: self.version.name().into(),
            oom_events,
        }
    }
}

/// `t - origin` in seconds, negative when `t` came first.
fn signed_secs(t: Instant, origin: Instant) -> f64 {
    if t >= origin {
        (t - origin).as_secs_f64()
    } else {
        -(origin - t).as_secs_f64()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
        for dir in &self.dirs {
            remove_group(dir);
        }
    }
}

/// Waits for `dir`'s processes to go (their trial has stopped them),
/// kills any left after a second, and removes the group.
fn remove_group(dir: &Path) {
    let procs = || group_processes(dir);
    let deadline = Instant::now() + Duration::from_secs(3);
    let kill_at = Instant::now() + Duration::from_secs(1);
    loop {
        let left = procs();
        if left.is_empty() && std::fs::remove_dir(dir).is_ok() {
            return;
        }
        if Instant::now() >= kill_at {
            for pid in left {
                // SAFETY: kill(2) on a PID the group still holds.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        if Instant::now() >= deadline {
            if let Err(e) = std::fs::remove_dir(dir) {
                eprintln!(
                    "warning: cannot remove the control group {}: {e}",
                    dir.display()
                );
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// On v2, asks rackbench's own group to pass the controllers the budget
/// needs to its children (a no-op when it already does; a refusal shows
/// as the missing limit file).
fn enable_v2_controllers(parent: &Path, budget: &Budget) {
    let mut want = Vec::new();
    if budget.memory_limit_bytes.is_some() {
        want.push("+memory");
    }
    if budget.cpus.is_some() {
        want.push("+cpu");
    }
    if !want.is_empty() {
        let _ = std::fs::write(parent.join("cgroup.subtree_control"), want.join(" "));
    }
}

fn read_oom_kills(version: Version, memory_dir: &Path) -> u64 {
    let file = match version {
        Version::V1 => "memory.oom_control",
        Version::V2 => "memory.events",
    };
    let text = std::fs::read_to_string(memory_dir.join(file)).unwrap_or_default();
    field(&text, "oom_kill").unwrap_or(0)
}

/// Moves the calling process into each group of `files` (their
/// `cgroup.procs`, "0" meaning the writer). Runs between fork and exec:
/// open, write and close only.
///
/// # Safety
/// Call only in a freshly forked child (`Command::pre_exec`).
pub unsafe fn join_self(files: &[CString]) -> std::io::Result<()> {
    for f in files {
        let fd = libc::open(f.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = libc::write(fd, b"0".as_ptr().cast(), 1);
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if n != 1 {
            return Err(err);
        }
    }
    Ok(())
}

/// The number after `key` in a "key value" per line file.
pub fn field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::super::{join, parse_mounts, parse_own};
    use super::*;

    #[test]
    fn counters_are_read_from_key_value_files() {
        let v1 = "nr_periods 10\nnr_throttled 4\nthrottled_time 2500000000\n";
        assert_eq!(field(v1, "nr_throttled"), Some(4));
        assert_eq!(field(v1, "throttled_time"), Some(2_500_000_000));
        let events = "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n";
        assert_eq!(field(events, "oom_kill"), Some(1));
        assert_eq!(field(events, "missing"), None);
    }

    /// Whether this machine's own place is v1 and writable (as here).
    fn v1_here() -> Option<Place> {
        let p = place_here().ok()?;
        (p.version == Version::V1
            && std::fs::metadata(p.memory_parent.join("cgroup.procs")).is_ok())
        .then_some(p)
    }

    #[test]
    fn a_v1_group_gets_its_limits_and_is_gone_after_drop() {
        let place = v1_here();
        if !crate::require::require("cgroup-v1", place.is_some(), FIX) {
            return;
        }
        let place = place.expect("required");
        let budget = Budget {
            memory_limit_bytes: Some(64 << 20),
            cpus: Some(0.5),
        };
        let name = format!("rackbench-test-v1-{}", std::process::id());
        let g = Group::create_at(&place, &name, &budget).unwrap();
        let mem = place.memory_parent.join(&name);
        let cpu = place.cpu_parent.join(&name);
        let read = |p: PathBuf| std::fs::read_to_string(p).unwrap().trim().to_string();
        assert_eq!(
            read(mem.join("memory.limit_in_bytes")),
            (64u64 << 20).to_string()
        );
        assert_eq!(read(cpu.join("cpu.cfs_quota_us")), "50000");
        assert_eq!(read(cpu.join("cpu.cfs_period_us")), "100000");
        assert_eq!(g.join_files().len(), 2);
        let rec = g.record(&budget, None);
        assert_eq!(rec.cgroup, "v1");
        assert_eq!(rec.oom_kills, 0);
        drop(g);
        assert!(!mem.exists() && !cpu.exists());
    }

    /// The unified hierarchy as this machine has it: mounted, writable,
    /// no controllers.
    fn unified_without_controllers() -> Option<PathBuf> {
        let m = parse_mounts(&std::fs::read_to_string("/proc/mounts").ok()?);
        let at = m.v2?;
        let own = parse_own(&std::fs::read_to_string("/proc/self/cgroup").ok()?);
        let dir = join(&at, own.0.as_deref()?);
        // Without the two a budget needs; others (hugetlb, which no v1
        // hierarchy binds here) may be offered.
        std::fs::read_to_string(dir.join("cgroup.controllers"))
            .ok()
            .filter(|c| {
                let offered: Vec<&str> = c.split_whitespace().collect();
                !(offered.contains(&"memory") && offered.contains(&"cpu"))
            })
            .map(|_| dir)
    }

    #[test]
    fn a_v2_group_without_controllers_is_joined_and_removed_but_refuses_limits() {
        let parent = unified_without_controllers();
        if !crate::require::require(
            "cgroup-v2-no-controllers",
            parent.is_some(),
            "mount cgroup2 (a hybrid machine like the CI's)",
        ) {
            return;
        }
        let parent = parent.expect("required");
        let place = Place {
            version: Version::V2,
            memory_parent: parent.clone(),
            cpu_parent: parent.clone(),
        };
        let e = Group::create_at(
            &place,
            "rackbench-test-v2-limit",
            &Budget {
                memory_limit_bytes: Some(64 << 20),
                cpus: None,
            },
        )
        .err()
        .expect("no memory controller: refused");
        assert!(e.contains("has no memory.max"), "{e}");
        assert!(
            !parent.join("rackbench-test-v2-limit").exists(),
            "removed on refusal"
        );
        let name = format!("rackbench-test-v2-{}", std::process::id());
        let g = Group::create_at(&place, &name, &Budget::default()).unwrap();
        let dir = parent.join(&name);
        // A child joins itself between fork and exec, as a server does.
        let files = g.join_files();
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("0.3");
        // SAFETY: open/write/close only.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || join_self(&files));
        }
        let mut child = cmd.spawn().unwrap();
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap();
        assert!(
            procs.lines().any(|l| l.trim() == child.id().to_string()),
            "{procs}"
        );
        child.wait().unwrap();
        assert_eq!(g.record(&Budget::default(), None).cgroup, "v2");
        drop(g);
        assert!(!dir.exists());
    }
}
