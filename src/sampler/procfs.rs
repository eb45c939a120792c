//! Reading /proc: the stat line of every process (for the tree walk and CPU
//! ticks), and statm and smaps_rollup of the processes in the tree.
//!
//! Processes vanish between any two reads. Every reader here treats that as
//! normal: a process that is gone is skipped, never an error.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Read};
use std::sync::OnceLock;

/// The fields of /proc/PID/stat the sampler uses. Times are in clock ticks
/// (see [`clock_ticks`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    pub ppid: u32,
    /// One letter: R, S, D, Z (zombie), T, ...
    pub state: char,
    pub utime: u64,
    pub stime: u64,
    /// CPU of children this process has waited for (reaped).
    pub cutime: u64,
    pub cstime: u64,
    /// Start time since boot: with the pid, identifies a process across a
    /// pid being reused.
    pub starttime: u64,
}

/// Parses a /proc/PID/stat line.
///
/// `comm` (the second field) may hold spaces, parentheses and bytes that
/// are not UTF-8, so the fields are counted from the last ')'.
pub fn parse_stat(raw: impl AsRef<[u8]>) -> Option<Stat> {
    let raw = raw.as_ref();
    let close = raw.iter().rposition(|&b| b == b')')?;
    let tail = std::str::from_utf8(&raw[close + 1..]).ok()?;
    // After comm, 0-based: state(0) ppid(1) ... utime(11) stime(12)
    // cutime(13) cstime(14) ... starttime(19).
    let mut it = tail.split_ascii_whitespace();
    let mut state = it.next()?.chars();
    let (Some(state), None) = (state.next(), state.next()) else {
        return None;
    };
    let ppid = it.next()?.parse().ok()?;
    let utime = it.nth(9)?.parse().ok()?;
    let stime = it.next()?.parse().ok()?;
    // cutime and cstime are signed in the kernel's format.
    let cutime = it.next()?.parse::<i64>().ok()?.max(0) as u64;
    let cstime = it.next()?.parse::<i64>().ok()?.max(0) as u64;
    let starttime = it.nth(4)?.parse().ok()?;
    Some(Stat {
        ppid,
        state,
        utime,
        stime,
        cutime,
        cstime,
        starttime,
    })
}

/// The command name (`comm`, the second field) of a /proc/PID/stat line:
/// what lies between the first '(' and the last ')', bytes that are not
/// UTF-8 replaced.
pub fn parse_comm(raw: impl AsRef<[u8]>) -> Option<String> {
    let raw = raw.as_ref();
    let open = raw.iter().position(|&b| b == b'(')?;
    let close = raw.iter().rposition(|&b| b == b')')?;
    (open < close).then(|| String::from_utf8_lossy(&raw[open + 1..close]).into_owned())
}

/// (PSS, USS) in bytes from smaps_rollup text; USS is Private_Clean +
/// Private_Dirty. None without a `Pss:` line.
pub fn parse_smaps_rollup(text: &str) -> Option<(u64, u64)> {
    let mut pss = None;
    let mut private = 0u64;
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let (Some(key), Some(val)) = (it.next(), it.next()) else {
            continue;
        };
        let Ok(kb) = val.parse::<u64>() else {
            continue;
        };
        match key {
            "Pss:" => pss = Some(kb * 1024),
            "Private_Clean:" | "Private_Dirty:" => private += kb * 1024,
            _ => {}
        }
    }
    pss.map(|p| (p, private))
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), the unit of [`Stat`]
/// times.
pub fn clock_ticks() -> f64 {
    static TCK: OnceLock<f64> = OnceLock::new();
    *TCK.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if v > 0 {
            v as f64
        } else {
            100.0
        }
    })
}

fn page_size() -> u64 {
    static PAGE: OnceLock<u64> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if v > 0 {
            v as u64
        } else {
            4096
        }
    })
}

fn read_into(path: &str, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    File::open(path)?.read_to_end(buf)?;
    Ok(())
}

/// One process's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Memory {
    pub rss: u64,
    /// None when smaps_rollup cannot be read (another user's process, a
    /// kernel without it).
    pub pss: Option<u64>,
    pub uss: Option<u64>,
}

/// Peaks and sums of memory over a run of samples: a process tree's (the
/// sampler) or one process's (`per_process`). PSS and USS count only when
/// every sample had them.
#[derive(Debug, Default, Clone)]
pub(crate) struct MemoryTally {
    pub samples: u64,
    pub rss_peak: u64,
    pub rss_sum: u128,
    pub pss_peak: u64,
    pub pss_sum: u128,
    pub uss_peak: u64,
    pub uss_sum: u128,
    /// Some sample had no PSS or USS.
    pub pss_missing: bool,
}

impl MemoryTally {
    pub fn add(&mut self, m: &Memory) {
        self.samples += 1;
        self.rss_peak = self.rss_peak.max(m.rss);
        self.rss_sum += u128::from(m.rss);
        match (m.pss, m.uss) {
            (Some(p), Some(u)) => {
                self.pss_peak = self.pss_peak.max(p);
                self.uss_peak = self.uss_peak.max(u);
                self.pss_sum += u128::from(p);
                self.uss_sum += u128::from(u);
            }
            _ => self.pss_missing = true,
        }
    }

    /// The mean of `sum` over the samples (0 with none).
    pub fn mean(&self, sum: u128) -> u64 {
        (sum / u128::from(self.samples.max(1))) as u64
    }
}

/// Reads statm and smaps_rollup. None if the process is gone.
pub(crate) fn read_memory(pid: u32, buf: &mut Vec<u8>) -> Option<Memory> {
    read_into(&format!("/proc/{pid}/statm"), buf).ok()?;
    let rss_pages: u64 = std::str::from_utf8(buf)
        .ok()?
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let rss = rss_pages * page_size();
    let (pss, uss) = match read_into(&format!("/proc/{pid}/smaps_rollup"), buf) {
        Ok(()) => match std::str::from_utf8(buf).ok().and_then(parse_smaps_rollup) {
            Some((p, u)) => (Some(p), Some(u)),
            None if rss == 0 => (Some(0), Some(0)),
            None => (None, None),
        },
        // A zombie, or a process between exit and reaping: no address
        // space left, so nothing to count.
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
            return Some(Memory {
                rss: 0,
                pss: Some(0),
                uss: Some(0),
            })
        }
        // Gone, unless only smaps_rollup is missing (kernels before 4.14).
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if std::fs::metadata(format!("/proc/{pid}")).is_err() {
                return None;
            }
            (None, None)
        }
        // Typically EACCES: another user's process.
        Err(_) => (None, None),
    };
    Some(Memory { rss, pss, uss })
}

/// One process at one moment: [`read_process`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcSample {
    pub pid: u32,
    pub ppid: u32,
    pub state: char,
    pub utime_ticks: u64,
    pub stime_ticks: u64,
    /// CPU of the children this process has reaped.
    pub cutime_ticks: u64,
    pub cstime_ticks: u64,
    pub start_ticks: u64,
    pub rss_bytes: u64,
    /// None when smaps_rollup is unreadable (then only RSS is known).
    pub pss_bytes: Option<u64>,
    /// Private_Clean + Private_Dirty; None like `pss_bytes`.
    pub uss_bytes: Option<u64>,
}

impl ProcSample {
    /// The process's own CPU (user + system), in seconds.
    pub fn cpu_s(&self) -> f64 {
        (self.utime_ticks + self.stime_ticks) as f64 / clock_ticks()
    }
}

/// Reads one process; None if it is gone (normal: processes come and go).
pub fn read_process(pid: u32) -> Option<ProcSample> {
    let mut buf = Vec::with_capacity(1024);
    read_into(&format!("/proc/{pid}/stat"), &mut buf).ok()?;
    let st = parse_stat(&buf)?;
    let mem = read_memory(pid, &mut buf)?;
    Some(ProcSample {
        pid,
        ppid: st.ppid,
        state: st.state,
        utime_ticks: st.utime,
        stime_ticks: st.stime,
        cutime_ticks: st.cutime,
        cstime_ticks: st.cstime,
        start_ticks: st.starttime,
        rss_bytes: mem.rss,
        pss_bytes: mem.pss,
        uss_bytes: mem.uss,
    })
}

/// Every process on the machine at one moment (one pass over /proc/*/stat),
/// indexed by parent.
#[derive(Debug, Default)]
pub(crate) struct ProcTable {
    pub stats: HashMap<u32, Stat>,
    children: HashMap<u32, Vec<u32>>,
}

impl ProcTable {
    pub fn scan() -> ProcTable {
        let mut stats = HashMap::new();
        if let Ok(dir) = std::fs::read_dir("/proc") {
            let mut buf = Vec::with_capacity(1024);
            for entry in dir.flatten() {
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<u32>().ok())
                else {
                    continue;
                };
                if read_into(&format!("/proc/{pid}/stat"), &mut buf).is_err() {
                    continue;
                }
                if let Some(st) = parse_stat(&buf) {
                    stats.insert(pid, st);
                }
            }
        }
        ProcTable::from_stats(stats)
    }

    pub fn from_stats(stats: HashMap<u32, Stat>) -> ProcTable {
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for (&pid, st) in &stats {
            children.entry(st.ppid).or_default().push(pid);
        }
        for kids in children.values_mut() {
            kids.sort_unstable();
        }
        ProcTable { stats, children }
    }

    pub fn children(&self, pid: u32) -> &[u32] {
        self.children.get(&pid).map_or(&[], Vec::as_slice)
    }

    /// `root` and its descendants, root first (breadth first); empty if
    /// `root` is not running.
    pub fn tree(&self, root: u32) -> Vec<u32> {
        if !self.stats.contains_key(&root) {
            return Vec::new();
        }
        let mut seen = HashSet::from([root]);
        let mut out = vec![root];
        let mut i = 0;
        while i < out.len() {
            for &kid in self.children(out[i]) {
                if seen.insert(kid) {
                    out.push(kid);
                }
            }
            i += 1;
        }
        out
    }
}

/// Whether `pid`, a child of rackbench, is its own: an rbspy that
/// `--profile` started, or a child still between fork and exec (its
/// program rackbench's own, as an rbspy is for a moment), never the
/// server's.
fn is_profiler(pid: u32) -> bool {
    let exe = |p: &str| std::fs::read_link(format!("/proc/{p}/exe")).ok();
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "rbspy")
        || exe(&pid.to_string()).is_some_and(|e| Some(e) == exe("self"))
}

/// The root and all its descendants, root first; empty if `root` is not
/// running. Found afresh on every call from the ppid links in
/// /proc/*/stat, so it sees workers forked a moment ago.
pub fn tree_pids(root: u32) -> Vec<u32> {
    ProcTable::scan().tree(root)
}

/// The direct children of `pid`.
pub fn direct_children(pid: u32) -> Vec<u32> {
    ProcTable::scan().children(pid).to_vec()
}

/// Which processes belong to a server.
///
/// Some servers daemonize helpers into sessions of their own (Passenger's
/// agents do). When rackbench is a child subreaper those land under
/// rackbench instead of init, and `adopted_by` claims them for this server:
/// every child of that pid other than `root`, the `exclude` roots and
/// rackbench's own profiler (rbspy, `--profile`), with their trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub root: u32,
    pub adopted_by: Option<u32>,
    pub exclude: Vec<u32>,
}

impl Scope {
    /// `root` and its descendants.
    pub fn tree(root: u32) -> Scope {
        Scope {
            root,
            adopted_by: None,
            exclude: Vec::new(),
        }
    }

    /// The pids in scope now, root first.
    pub fn pids(&self) -> Vec<u32> {
        self.pids_in(&ProcTable::scan())
    }

    pub(crate) fn pids_in(&self, table: &ProcTable) -> Vec<u32> {
        self.trees_in(table).concat()
    }

    /// The pids in scope, one list per tree, each top first: the root's
    /// tree, then one per adopted child (a daemonized helper, another
    /// instance). Each pid is in one list only.
    pub(crate) fn trees_in(&self, table: &ProcTable) -> Vec<Vec<u32>> {
        let root = table.tree(self.root);
        let mut seen: HashSet<u32> = root.iter().copied().collect();
        let mut out = vec![root];
        if let Some(parent) = self.adopted_by {
            for &child in table.children(parent) {
                if child == self.root || self.exclude.contains(&child) || is_profiler(child) {
                    continue;
                }
                let tree: Vec<u32> = table
                    .tree(child)
                    .into_iter()
                    .filter(|&p| seen.insert(p))
                    .collect();
                if !tree.is_empty() {
                    out.push(tree);
                }
            }
        }
        out.retain(|t| !t.is_empty());
        out
    }
}
