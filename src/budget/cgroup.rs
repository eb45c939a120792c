//! The kernel side of a budget: which cgroup version this machine offers
//! with memory and CPU control ([`choose`], from `/proc/mounts`,
//! `/proc/self/cgroup` and v2's `cgroup.controllers`), and one trial's group
//! ([`Group`]): made under rackbench's own group in each hierarchy, limited,
//! joined by the server between fork and exec (through the files
//! [`Group::join_files`] names), read, and removed when dropped, after its
//! processes are gone (killed if any is left).
//!
//! v2 is used when rackbench's own group passes both the memory and the
//! cpu controller to a child; else v1 with both controllers mounted; else
//! an error naming what is missing and how to get it. Never writes to a
//! group it did not make, except to enable v2 controllers in its own
//! group's `cgroup.subtree_control`. `doctor` reads the machine with the
//! same parsing. A group's name carries its maker's PID
//! ([`group_name`], read back by [`group_owner`]) and [`group_parents`]
//! says where they are made, so `leftovers` can find the groups of a
//! rackbench process killed before its drop ran.

use super::{Budget, BudgetRecord};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The controllers a budget needs.
pub const WANTED: &[&str] = &["memory", "cpu"];

/// The start of every trial group's name: `rackbench-PID-N`.
pub const GROUP_PREFIX: &str = "rackbench-";

/// A trial group's name: `rackbench-PID-N`, N counting the groups process
/// `pid` made.
pub fn group_name(pid: u32, n: u64) -> String {
    format!("{GROUP_PREFIX}{pid}-{n}")
}

/// The PID in a name [`group_name`] makes; None for any other name
/// (doctor's `rackbench-doctor-PID`, the tests' `rackbench-test-v1-PID`,
/// anything not made by rackbench).
pub fn group_owner(name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix(GROUP_PREFIX)?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
        return None;
    }
    n.parse::<u64>().ok()?;
    pid.parse().ok().filter(|&p| p > 0)
}

/// Every directory a trial group may be made in here, with its hierarchy
/// in words ("v2", "memory", "cpu"): this process's own v2 group when
/// cgroup2 is mounted, and its own group in each v1 hierarchy with the
/// memory or the cpu controller. [`choose`] picks one of them; a group
/// made by a process that chose otherwise is still found.
pub fn group_parents(
    mounts: &Mounts,
    own: &(Option<String>, BTreeMap<String, String>),
) -> Vec<(PathBuf, String)> {
    let mut found: Vec<(PathBuf, String)> = Vec::new();
    if let (Some(at), Some(rel)) = (&mounts.v2, &own.0) {
        found.push((join(at, rel), "v2".into()));
    }
    for c in WANTED {
        for (at, ctl) in &mounts.v1 {
            if ctl.iter().any(|x| x == c) {
                let dir = join(at, own.1.get(*c).map_or("/", String::as_str));
                if !found.iter().any(|(d, _)| *d == dir) {
                    found.push((dir, ctl.join(",")));
                }
            }
        }
    }
    found
}

/// [`group_parents`] of this machine, read from /proc.
pub fn group_parents_here() -> Vec<(PathBuf, String)> {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    group_parents(
        &parse_mounts(&read("/proc/mounts")),
        &parse_own(&read("/proc/self/cgroup")),
    )
}

/// The processes in the group at `dir` (its `cgroup.procs`).
pub fn group_processes(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// cgroup v1 controllers, to tell them from mount options.
pub const V1_CONTROLLERS: &[&str] = &[
    "cpu",
    "cpuacct",
    "cpuset",
    "memory",
    "devices",
    "freezer",
    "net_cls",
    "net_prio",
    "blkio",
    "perf_event",
    "hugetlb",
    "pids",
    "rdma",
    "misc",
];

/// The cgroup file systems of `/proc/mounts`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Mounts {
    /// The cgroup2 mount point (the one at /sys/fs/cgroup if several).
    pub v2: Option<PathBuf>,
    /// Each v1 hierarchy: mount point and its controllers.
    pub v1: Vec<(PathBuf, Vec<String>)>,
}

pub fn parse_mounts(text: &str) -> Mounts {
    let mut m = Mounts::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        let [_, at, kind, options, ..] = f[..] else {
            continue;
        };
        match kind {
            "cgroup2" if m.v2.is_none() || at == "/sys/fs/cgroup" => m.v2 = Some(at.into()),
            "cgroup" => {
                let ctl = options
                    .split(',')
                    .filter(|o| V1_CONTROLLERS.contains(o))
                    .map(str::to_string)
                    .collect();
                m.v1.push((at.into(), ctl));
            }
            _ => {}
        }
    }
    m
}

/// This process's groups from `/proc/self/cgroup`: the v2 path, and each
/// v1 controller's path.
pub fn parse_own(text: &str) -> (Option<String>, BTreeMap<String, String>) {
    let mut v2 = None;
    let mut v1 = BTreeMap::new();
    for line in text.lines() {
        let mut it = line.splitn(3, ':');
        let (Some(_), Some(ctl), Some(path)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if ctl.is_empty() {
            v2 = Some(path.to_string());
        } else {
            for c in ctl.split(',') {
                v1.insert(c.to_string(), path.to_string());
            }
        }
    }
    (v2, v1)
}

/// Where a child group with `controller` would go, and whether the
/// hierarchy is v2; Err says why there is no such place.
pub fn place_for(
    controller: &str,
    mounts: &Mounts,
    v2_controllers: &str,
    own: &(Option<String>, BTreeMap<String, String>),
) -> Result<(PathBuf, bool), String> {
    let join = |at: &Path, rel: &str| match rel.trim_matches('/') {
        "" => at.to_path_buf(),
        rel => at.join(rel),
    };
    if let (Some(at), Some(rel)) = (&mounts.v2, &own.0) {
        if v2_controllers
            .split_ascii_whitespace()
            .any(|c| c == controller)
        {
            return Ok((join(at, rel), true));
        }
    }
    for (at, ctl) in &mounts.v1 {
        if ctl.iter().any(|c| c == controller) {
            let rel = own.1.get(controller).map_or("/", String::as_str);
            return Ok((join(at, rel), false));
        }
    }
    Err(format!("no {controller} controller is mounted"))
}

/// The version in words: "v2 at /sys/fs/cgroup (cpu memory io)".
pub fn describe(mounts: &Mounts, v2_controllers: &str) -> String {
    let v2 = mounts.v2.as_ref().map(|at| {
        let ctl = v2_controllers.trim();
        format!(
            "v2 at {} ({})",
            at.display(),
            if ctl.is_empty() {
                "no controllers"
            } else {
                ctl
            }
        )
    });
    let v1: Vec<String> = mounts
        .v1
        .iter()
        .filter(|(_, c)| !c.is_empty())
        .map(|(_, c)| c.join(","))
        .collect();
    match (v2, v1.is_empty()) {
        (None, true) => "no cgroup file system mounted".into(),
        (Some(v2), true) => v2,
        (None, false) => format!("v1 ({})", v1.join(" ")),
        (Some(v2), false) => format!("v1 ({}) beside {v2}", v1.join(" ")),
    }
}

/// How to get a group with memory and CPU control; the tail of every
/// "cannot make a group" message and of doctor's note.
pub const FIX: &str =
    "run rackbench as root, or in a delegated group: `systemd-run --user --scope -p \
     Delegate=yes rackbench ...`; on v2 the parent must list the controllers in \
     cgroup.subtree_control (`echo +memory +cpu > PARENT/cgroup.subtree_control`); a \
     container needs its cgroup mounted read-write";

/// The cgroup version a group is made in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

impl Version {
    pub fn name(self) -> &'static str {
        match self {
            Version::V1 => "v1",
            Version::V2 => "v2",
        }
    }
}

/// Where a trial's group goes: the parents to make it in, for memory and
/// for cpu (one directory on v2, or when v1 mounts both together).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub version: Version,
    pub memory_parent: PathBuf,
    pub cpu_parent: PathBuf,
}

/// v2 when `own_v2_controllers` (rackbench's own v2 group's
/// `cgroup.controllers`) has memory and cpu; else v1 with both mounted;
/// else why neither, in one line that names the fix.
pub fn choose(
    mounts: &Mounts,
    own: &(Option<String>, BTreeMap<String, String>),
    own_v2_controllers: &str,
) -> Result<Place, String> {
    let has = |c: &str| own_v2_controllers.split_ascii_whitespace().any(|x| x == c);
    if let (Some(at), Some(rel)) = (&mounts.v2, &own.0) {
        if WANTED.iter().all(|c| has(c)) {
            let dir = join(at, rel);
            return Ok(Place {
                version: Version::V2,
                memory_parent: dir.clone(),
                cpu_parent: dir,
            });
        }
    }
    let v1_dir = |controller: &str| {
        mounts
            .v1
            .iter()
            .find(|(_, ctl)| ctl.iter().any(|c| c == controller))
            .map(|(at, _)| join(at, own.1.get(controller).map_or("/", String::as_str)))
    };
    match (v1_dir("memory"), v1_dir("cpu")) {
        (Some(memory_parent), Some(cpu_parent)) => Ok(Place {
            version: Version::V1,
            memory_parent,
            cpu_parent,
        }),
        (m, c) => {
            let missing: Vec<&str> = [("memory", m.is_none()), ("cpu", c.is_none())]
                .iter()
                .filter(|(_, gone)| *gone)
                .map(|(n, _)| *n)
                .collect();
            let v2 = match &mounts.v2 {
                Some(at) => format!(
                    "cgroup v2 at {} gives this process's group {}",
                    at.display(),
                    if own_v2_controllers.trim().is_empty() {
                        "no controllers".to_string()
                    } else {
                        format!("only '{}'", own_v2_controllers.trim())
                    }
                ),
                None => "no cgroup v2 is mounted".to_string(),
            };
            Err(format!(
                "no control group with memory and CPU limits here ({v2}, and cgroup v1 has no {} controller): {FIX}",
                missing.join(" or ")
            ))
        }
    }
}

fn join(at: &Path, rel: &str) -> PathBuf {
    match rel.trim_matches('/') {
        "" => at.to_path_buf(),
        rel => at.join(rel),
    }
}

/// This machine's place for a group, read from /proc.
pub fn place_here() -> Result<Place, String> {
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let mounts = parse_mounts(&read(Path::new("/proc/mounts")));
    let own = parse_own(&read(Path::new("/proc/self/cgroup")));
    let ctl = match (&mounts.v2, &own.0) {
        (Some(at), Some(rel)) => read(&join(at, rel).join("cgroup.controllers")),
        _ => String::new(),
    };
    choose(&mounts, &own, &ctl)
}

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
    use super::*;

    const HYBRID: &str = "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n\
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0\n\
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
    const SELF_HYBRID: &str = "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n";
    const V2: &str = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n";
    const SELF_V2: &str = "0::/user.slice/u.scope\n";
    const V1_COMOUNTED: &str = "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n\
cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n";

    #[test]
    fn v2_is_chosen_when_it_passes_memory_and_cpu_else_v1_else_an_error_with_the_fix() {
        // (mounts, /proc/self/cgroup, own v2 cgroup.controllers, want)
        /// (version, memory parent, cpu parent), or a part of the error.
        type Want = Result<(&'static str, &'static str, &'static str), &'static str>;
        let rows: &[(&str, &str, &str, Want)] = &[
            (
                HYBRID,
                SELF_HYBRID,
                "",
                Ok((
                    "v1",
                    "/sys/fs/cgroup/memory/process_api/abc",
                    "/sys/fs/cgroup/cpu",
                )),
            ),
            (
                HYBRID,
                SELF_HYBRID,
                "cpu memory",
                Ok(("v2", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified")),
            ),
            (
                V2,
                SELF_V2,
                "cpuset cpu io memory pids",
                Ok((
                    "v2",
                    "/sys/fs/cgroup/user.slice/u.scope",
                    "/sys/fs/cgroup/user.slice/u.scope",
                )),
            ),
            (V2, SELF_V2, "cpu io", Err("only 'cpu io'")),
            (V2, SELF_V2, "", Err("no controllers")),
            ("", "", "", Err("no cgroup v2 is mounted")),
            (
                V1_COMOUNTED,
                "2:cpu,cpuacct:/a\n1:memory:/b\n",
                "",
                Ok((
                    "v1",
                    "/sys/fs/cgroup/memory/b",
                    "/sys/fs/cgroup/cpu,cpuacct/a",
                )),
            ),
            (
                "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n",
                "1:cpu:/\n",
                "",
                Err("no memory controller"),
            ),
        ];
        for (mounts, own, ctl, want) in rows {
            let got = choose(&parse_mounts(mounts), &parse_own(own), ctl);
            match (want, got) {
                (Ok((v, m, c)), Ok(p)) => {
                    assert_eq!(p.version.name(), *v, "{mounts}");
                    assert_eq!(p.memory_parent, Path::new(m));
                    assert_eq!(p.cpu_parent, Path::new(c));
                }
                (Err(part), Err(e)) => {
                    assert!(e.contains(part), "{e}");
                    assert!(e.contains("Delegate=yes"), "{e}");
                }
                (want, got) => panic!("{mounts}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn only_names_rackbench_pid_n_carry_an_owner() {
        // (name, the PID it carries)
        let rows: &[(&str, Option<u32>)] = &[
            ("rackbench-4242-0", Some(4242)),
            ("rackbench-1-17", Some(1)),
            ("rackbench-doctor-4242", None),
            ("rackbench-test-v1-4242", None),
            ("rackbench-4242", None),
            ("rackbench-4242-", None),
            ("rackbench--0", None),
            ("rackbench-0-0", None),
            ("rackbench-+42-0", None),
            ("rackbench-42-0x", None),
            ("rackbench-42-0-1", None),
            ("rackbench-99999999999-0", None),
            ("rb-4242-0", None),
            ("xrackbench-4242-0", None),
        ];
        for (name, want) in rows {
            assert_eq!(group_owner(name), *want, "{name}");
        }
        assert_eq!(group_owner(&group_name(31337, 2)), Some(31337));
    }

    #[test]
    fn groups_are_looked_for_in_the_own_group_of_every_hierarchy_with_memory_or_cpu() {
        /// (mounts, /proc/self/cgroup, want: each (dir, hierarchy))
        type Row<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
        let rows: &[Row] = &[
            (
                HYBRID,
                SELF_HYBRID,
                &[
                    ("/sys/fs/cgroup/unified", "v2"),
                    ("/sys/fs/cgroup/memory/process_api/abc", "memory"),
                    ("/sys/fs/cgroup/cpu", "cpu"),
                ],
            ),
            (V2, SELF_V2, &[("/sys/fs/cgroup/user.slice/u.scope", "v2")]),
            (
                V1_COMOUNTED,
                "2:cpu,cpuacct:/a\n1:memory:/b\n",
                &[
                    ("/sys/fs/cgroup/memory/b", "memory"),
                    ("/sys/fs/cgroup/cpu,cpuacct/a", "cpu,cpuacct"),
                ],
            ),
            (
                "cgroup /sys/fs/cgroup/mc cgroup rw,memory,cpu 0 0\n",
                "1:memory,cpu:/x\n",
                &[("/sys/fs/cgroup/mc/x", "memory,cpu")],
            ),
            ("", "", &[]),
        ];
        for (mounts, own, want) in rows {
            let got = group_parents(&parse_mounts(mounts), &parse_own(own));
            let got: Vec<(String, &str)> = got
                .iter()
                .map(|(d, h)| (d.display().to_string(), h.as_str()))
                .collect();
            let want: Vec<(String, &str)> = want.iter().map(|(d, h)| (d.to_string(), *h)).collect();
            assert_eq!(got, want, "{mounts}");
        }
    }

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
