//! The /proc sampler: CPU and memory of a server's whole process tree.
//!
//! Every interval it finds the tree afresh (masters fork workers, workers
//! die and are replaced) and reads, per process, CPU ticks from `stat`, RSS
//! from `statm`, and PSS and USS from `smaps_rollup`. PSS is the honest
//! figure for preforking servers: pages shared copy-on-write between the
//! master and its workers are split between them instead of counted once
//! per process as RSS does.
//!
//! It only reads /proc: it never signals, spawns or waits for a process.
//!
//! CPU accounting: the tree's CPU is the sum, over every process ever seen,
//! of the last utime+stime read for it. A process that exits between two
//! samples loses at most one interval of CPU. Reaped children's time also
//! shows up in their parent's cutime/cstime, but adding that would count
//! the same seconds twice for every worker we did see, so it is not used.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One process at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcSample {
    pub pid: u32,
    pub ppid: u32,
    pub utime_ticks: u64,
    pub stime_ticks: u64,
    pub rss_bytes: u64,
    pub pss_bytes: Option<u64>,
    pub uss_bytes: Option<u64>,
}

/// The fields of /proc/PID/stat this module uses. `comm` may hold spaces
/// and parentheses, so fields are counted from the last ')'.
pub fn parse_stat(text: &str) -> Option<(u32, u64, u64)> {
    let close = text.rfind(')')?;
    let fields: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // After comm: state(0) ppid(1) ... utime(11) stime(12).
    let ppid = fields.get(1)?.parse().ok()?;
    let utime = fields.get(11)?.parse().ok()?;
    let stime = fields.get(12)?.parse().ok()?;
    Some((ppid, utime, stime))
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as u64
    } else {
        4096
    }
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 {
        v as f64
    } else {
        100.0
    }
}

/// (PSS, USS) in bytes from smaps_rollup text.
pub fn parse_smaps_rollup(text: &str) -> Option<(u64, u64)> {
    let mut pss = None;
    let mut private = 0u64;
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(key), Some(val)) = (it.next(), it.next()) else {
            continue;
        };
        let kb: u64 = match val.parse() {
            Ok(v) => v,
            Err(_) => continue,
        };
        match key {
            "Pss:" => pss = Some(kb * 1024),
            "Private_Clean:" | "Private_Dirty:" => private += kb * 1024,
            _ => {}
        }
    }
    pss.map(|p| (p, private))
}

/// Reads one process; None if it is gone (normal: processes come and go).
pub fn read_process(pid: u32) -> Option<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (ppid, utime, stime) = parse_stat(&stat)?;
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let rss_pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok();
    let (pss, uss) = rollup
        .as_deref()
        .and_then(parse_smaps_rollup)
        .map_or((None, None), |(p, u)| (Some(p), Some(u)));
    Some(ProcSample {
        pid,
        ppid,
        utime_ticks: utime,
        stime_ticks: stime,
        rss_bytes: rss_pages * page_size(),
        pss_bytes: pss,
        uss_bytes: uss,
    })
}

/// Every live process: pid → ppid.
fn all_parents() -> HashMap<u32, u32> {
    let mut map = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return map;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some((ppid, _, _)) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .as_deref()
            .and_then(parse_stat)
        {
            map.insert(pid, ppid);
        }
    }
    map
}

/// The root and all its descendants, root first.
pub fn tree_pids(root: u32) -> Vec<u32> {
    let parents = all_parents();
    if !parents.contains_key(&root) {
        return Vec::new();
    }
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, &ppid) in &parents {
        children.entry(ppid).or_default().push(pid);
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        if let Some(kids) = children.get(&out[i]) {
            out.extend(kids.iter().copied().filter(|k| *k != root));
        }
        i += 1;
    }
    out
}

/// Which processes belong to a server.
///
/// Some servers daemonize helpers into sessions of their own (Passenger's
/// agents do). When rackbench is a child subreaper those land under
/// rackbench instead of init, and `adopted_by` claims them for this server:
/// every child of that pid other than `root` and the `exclude` roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub root: u32,
    pub adopted_by: Option<u32>,
    pub exclude: Vec<u32>,
}

impl Scope {
    pub fn tree(root: u32) -> Scope {
        Scope {
            root,
            adopted_by: None,
            exclude: Vec::new(),
        }
    }

    /// The pids in scope now, root first.
    pub fn pids(&self) -> Vec<u32> {
        let mut out = tree_pids(self.root);
        if let Some(parent) = self.adopted_by {
            for child in direct_children(parent) {
                if child != self.root && !self.exclude.contains(&child) {
                    for p in tree_pids(child) {
                        if !out.contains(&p) {
                            out.push(p);
                        }
                    }
                }
            }
        }
        out
    }
}

/// The direct children of `pid`.
pub fn direct_children(pid: u32) -> Vec<u32> {
    all_parents()
        .into_iter()
        .filter(|&(_, ppid)| ppid == pid)
        .map(|(p, _)| p)
        .collect()
}

/// One row of the memory timeline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SampleRow {
    /// Milliseconds since the sampler started.
    pub t_ms: u64,
    pub rss_bytes: u64,
    pub pss_bytes: Option<u64>,
    pub processes: u32,
    /// Tree CPU (user + system) since the sampler started.
    pub cpu_s: f64,
}

/// What the sampler saw over the measured window.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct SamplerReport {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub rss_peak_bytes: u64,
    pub rss_mean_bytes: u64,
    pub pss_peak_bytes: Option<u64>,
    pub pss_mean_bytes: Option<u64>,
    pub uss_peak_bytes: Option<u64>,
    pub uss_mean_bytes: Option<u64>,
    pub processes_peak: u32,
    pub processes_mean: f64,
    /// Samples in the measured window.
    pub samples: u64,
    pub interval_ms: u64,
    /// At most one row per second, warm-up included.
    pub timeline: Vec<SampleRow>,
}

impl SamplerReport {
    /// Server CPU milliseconds per request.
    pub fn cpu_ms_per_request(&self, requests: u64) -> Option<f64> {
        (requests > 0).then(|| (self.cpu_user_s + self.cpu_sys_s) * 1000.0 / requests as f64)
    }
}

#[derive(Default)]
struct State {
    /// Last (utime, stime) ticks seen per pid.
    cpu: HashMap<u32, (u64, u64)>,
    /// Tree CPU ticks at the start of the measured window.
    cpu_at_mark: Option<(u64, u64)>,
    marked: bool,
    rss_peak: u64,
    rss_sum: u128,
    pss_peak: Option<u64>,
    pss_sum: u128,
    uss_peak: Option<u64>,
    uss_sum: u128,
    pss_missing: bool,
    procs_peak: u32,
    procs_sum: u64,
    samples: u64,
    timeline: Vec<SampleRow>,
    last_row_s: Option<u64>,
}

impl State {
    fn cpu_total(&self) -> (u64, u64) {
        self.cpu
            .values()
            .fold((0, 0), |(u, s), (pu, ps)| (u + pu, s + ps))
    }

    fn take(&mut self, scope: &Scope, started: Instant, ticks: f64) {
        let pids = scope.pids();
        let procs: Vec<ProcSample> = pids.iter().filter_map(|&p| read_process(p)).collect();
        if procs.is_empty() {
            return;
        }
        let mut rss = 0;
        let mut pss = Some(0u64);
        let mut uss = Some(0u64);
        for p in &procs {
            let e = self.cpu.entry(p.pid).or_insert((0, 0));
            *e = (e.0.max(p.utime_ticks), e.1.max(p.stime_ticks));
            rss += p.rss_bytes;
            pss = pss.zip(p.pss_bytes).map(|(a, b)| a + b);
            uss = uss.zip(p.uss_bytes).map(|(a, b)| a + b);
        }
        let n = procs.len() as u32;
        let t_ms = started.elapsed().as_millis() as u64;
        let (u, s) = self.cpu_total();
        let sec = t_ms / 1000;
        if self.last_row_s != Some(sec) {
            self.last_row_s = Some(sec);
            self.timeline.push(SampleRow {
                t_ms,
                rss_bytes: rss,
                pss_bytes: pss,
                processes: n,
                cpu_s: (u + s) as f64 / ticks,
            });
        }
        if !self.marked {
            return;
        }
        self.samples += 1;
        self.rss_peak = self.rss_peak.max(rss);
        self.rss_sum += rss as u128;
        self.procs_peak = self.procs_peak.max(n);
        self.procs_sum += n as u64;
        match (pss, uss) {
            (Some(p), Some(us)) => {
                self.pss_peak = Some(self.pss_peak.unwrap_or(0).max(p));
                self.uss_peak = Some(self.uss_peak.unwrap_or(0).max(us));
                self.pss_sum += p as u128;
                self.uss_sum += us as u128;
            }
            _ => self.pss_missing = true,
        }
    }
}

/// Samples a process tree on its own thread until stopped.
pub struct Sampler {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    mark: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    interval: Duration,
}

impl Sampler {
    /// Starts sampling `root` and its descendants every `interval`
    /// (100-250 ms is the useful range).
    pub fn start(root: u32, interval: Duration) -> Sampler {
        Sampler::start_scope(Scope::tree(root), interval)
    }

    /// Starts sampling every process in `scope`.
    pub fn start_scope(scope: Scope, interval: Duration) -> Sampler {
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let mark = Arc::new(AtomicBool::new(false));
        let handle = {
            let (state, stop, mark) = (Arc::clone(&state), Arc::clone(&stop), Arc::clone(&mark));
            std::thread::Builder::new()
                .name("rackbench-sampler".into())
                .spawn(move || {
                    let started = Instant::now();
                    let ticks = clock_ticks();
                    loop {
                        {
                            let mut st = state.lock().expect("sampler state");
                            if mark.load(Ordering::Relaxed) && !st.marked {
                                st.marked = true;
                                st.cpu_at_mark = Some(st.cpu_total());
                            }
                            st.take(&scope, started, ticks);
                        }
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        std::thread::sleep(interval);
                    }
                })
                .expect("spawn sampler thread")
        };
        Sampler {
            state,
            stop,
            mark,
            handle: Some(handle),
            interval,
        }
    }

    /// The measured window starts now: CPU is counted from here, and peaks
    /// and means cover only later samples.
    pub fn mark(&self) {
        self.mark.store(true, Ordering::Relaxed);
    }

    /// Takes a last sample and returns the report. A sampler never marked
    /// reports over everything it saw.
    pub fn stop(mut self) -> SamplerReport {
        self.mark.store(true, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        let st = self.state.lock().expect("sampler state");
        let ticks = clock_ticks();
        let (u, s) = st.cpu_total();
        let (mu, ms) = st.cpu_at_mark.unwrap_or((0, 0));
        let n = st.samples.max(1) as u128;
        let mem = |peak: Option<u64>, sum: u128| {
            if st.pss_missing {
                None
            } else {
                peak.map(|p| (p, (sum / n) as u64))
            }
        };
        let pss = mem(st.pss_peak, st.pss_sum);
        let uss = mem(st.uss_peak, st.uss_sum);
        SamplerReport {
            cpu_user_s: u.saturating_sub(mu) as f64 / ticks,
            cpu_sys_s: s.saturating_sub(ms) as f64 / ticks,
            rss_peak_bytes: st.rss_peak,
            rss_mean_bytes: (st.rss_sum / n) as u64,
            pss_peak_bytes: pss.map(|p| p.0),
            pss_mean_bytes: pss.map(|p| p.1),
            uss_peak_bytes: uss.map(|p| p.0),
            uss_mean_bytes: uss.map(|p| p.1),
            processes_peak: st.procs_peak,
            processes_mean: st.procs_sum as f64 / n as f64,
            samples: st.samples,
            interval_ms: self.interval.as_millis() as u64,
            timeline: st.timeline.clone(),
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
#[allow(clippy::type_complexity)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};

    /// Kills the child's whole process group even when an assertion fails.
    struct Group(Child);
    impl Drop for Group {
        fn drop(&mut self) {
            // SAFETY: signalling our own child's process group.
            unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
            let _ = self.0.wait();
        }
    }

    fn spawn(script: &str) -> Group {
        Group(
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .process_group(0)
                .spawn()
                .expect("sh"),
        )
    }

    #[test]
    fn parses_stat_with_awkward_comm() {
        let cases: &[(&str, Option<(u32, u64, u64)>)] = &[
            (
                "12 (ruby) S 1 12 12 0 -1 4194560 100 0 0 0 250 30 0 0 20 0 1 0 5 1000 50",
                Some((1, 250, 30)),
            ),
            (
                "13 (a b) c) R 7 13 13 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 5 1 1",
                Some((7, 5, 6)),
            ),
            ("garbage", None),
        ];
        for &(text, want) in cases {
            assert_eq!(parse_stat(text), want, "{text}");
        }
    }

    #[test]
    fn parses_smaps_rollup() {
        let text = "00400000-7ffd [rollup]\nRss: 100 kB\nPss: 60 kB\nPrivate_Clean: 10 kB\nPrivate_Dirty: 20 kB\n";
        assert_eq!(parse_smaps_rollup(text), Some((60 * 1024, 30 * 1024)));
        assert_eq!(parse_smaps_rollup("Rss: 1 kB\n"), None);
    }

    #[test]
    fn finds_the_whole_tree_and_its_memory() {
        let g = spawn("sleep 5 & sleep 5 & wait");
        let root = g.0.id();
        let deadline = Instant::now() + Duration::from_secs(3);
        while tree_pids(root).len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(tree_pids(root).len(), 3, "sh and its two sleeps");
        let s = Sampler::start(root, Duration::from_millis(50));
        s.mark();
        std::thread::sleep(Duration::from_millis(200));
        let r = s.stop();
        assert_eq!(r.processes_peak, 3);
        assert!(r.rss_peak_bytes > 0 && r.samples >= 2);
        if let Some(pss) = r.pss_peak_bytes {
            assert!(
                pss <= r.rss_peak_bytes,
                "PSS {pss} > RSS {}",
                r.rss_peak_bytes
            );
        }
    }

    #[test]
    fn counts_cpu_of_the_tree_including_a_worker_that_exits() {
        // The parent idles; a forked worker burns CPU for a while and exits.
        let g = spawn("(i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done); sleep 5");
        let root = g.0.id();
        let s = Sampler::start(root, Duration::from_millis(50));
        s.mark();
        // Wait for the worker to finish: sh starts its sleep after that.
        let deadline = Instant::now() + Duration::from_secs(20);
        let sleeping = || {
            tree_pids(root).iter().any(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .is_ok_and(|c| c.trim() == "sleep")
            })
        };
        while !sleeping() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(100));
        let r = s.stop();
        let cpu = r.cpu_user_s + r.cpu_sys_s;
        assert!(cpu > 0.3, "the exited worker's CPU was lost: {cpu}");
        assert!(r.cpu_ms_per_request(100).unwrap() > 3.0);
    }

    #[test]
    fn a_vanished_root_is_no_error() {
        assert!(tree_pids(u32::MAX - 1).is_empty());
        let s = Sampler::start(u32::MAX - 1, Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(s.stop().samples, 0);
    }
}
