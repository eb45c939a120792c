//! Memory per process of a server's tree, and what each process is there
//! for: the figures that show what one more worker costs (issue 27: YJIT's
//! memory is paid in every worker, so it must show per worker).
//!
//! A [`ProcessTracker`] keeps, per process (pid and start time, so a
//! reused pid is a new process), its peak and the sum of its RSS, PSS and
//! USS over the samples that saw it: one entry per process, never one per
//! sample, so a soak of hours holds as much as a run of seconds. At most
//! [`PER_PROCESS_CAP`] processes are kept (the first seen); later ones are
//! counted in `per_process_dropped` and left out of the figures.
//!
//! # Roles
//!
//! A *top* is a process the sampler's scope starts a tree from: the
//! server's root, or a process rackbench adopted for it (a daemonized
//! helper, another instance behind nginx). A top with descendants in the
//! window is a `master`, one without is a lone `single`; every descendant
//! is a `worker`. Passenger is told by its titles instead: its app
//! processes (`Passenger RubyApp: ...`) are the workers, its
//! `Passenger AppPreloader` (which forks them) the master, and its agents
//! and the `passenger start` front are `helper`s.
//!
//! It never reads /proc itself beyond `comm` and `cmdline`: the sampler
//! hands it each process's memory.

use super::procfs::{Memory, MemoryTally};
use super::series::{BoundedSeries, SeriesPoint};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// The most processes one report lists.
pub const PER_PROCESS_CAP: usize = 256;

/// The most dropped processes counted one by one; beyond, the count is a
/// floor (it bounds the memory of a soak whose workers keep being
/// replaced).
const DROPPED_KEYS_CAP: usize = 65_536;

/// How much of a command line is kept.
const CMDLINE_BYTES: usize = 120;

/// What a process is in its server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Forks the workers and serves no request (puma cluster, unicorn,
    /// uWSGI's master, Passenger's preloader).
    Master,
    /// Serves requests, forked by a master.
    Worker,
    /// Serves requests alone: a server without workers.
    Single,
    /// Neither serves nor forks the workers (Passenger's agents).
    Helper,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Master => "master",
            Role::Worker => "worker",
            Role::Single => "single",
            Role::Helper => "helper",
        }
    }
}

/// One process over the window: `per_process` in trial-v1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessMemory {
    pub pid: u32,
    /// The kernel's name of it (`/proc/PID/comm`, at most 15 bytes).
    pub comm: String,
    /// Its command line as it shows it (the title puma, unicorn and
    /// Passenger set), at most 120 bytes, NULs as spaces.
    pub cmdline: String,
    pub role: Role,
    /// Samples that saw it.
    pub samples: u64,
    pub rss_peak_bytes: u64,
    /// None when its smaps_rollup was unreadable in any sample.
    pub pss_peak_bytes: Option<u64>,
    pub uss_peak_bytes: Option<u64>,
    pub rss_mean_bytes: u64,
    pub pss_mean_bytes: Option<u64>,
    pub uss_mean_bytes: Option<u64>,
}

/// Memory of the processes of one role: the mean over them of each one's
/// mean in the window, and the largest one's peak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleMemory {
    pub rss_mean_bytes: u64,
    /// None when any of them lacked PSS.
    pub pss_mean_bytes: Option<u64>,
    pub uss_mean_bytes: Option<u64>,
    pub rss_max_bytes: u64,
    pub pss_max_bytes: Option<u64>,
    pub uss_max_bytes: Option<u64>,
}

/// The master(s): one per instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MasterMemory {
    pub masters: u32,
    #[serde(flatten)]
    pub memory: RoleMemory,
}

/// Memory per worker: `per_worker` in trial-v1. A server without workers
/// is described by its lone process (`role` single), so every server has
/// a per-worker figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerWorker {
    /// Worker processes in the window, less those another replaced (a
    /// worker killed and replaced counts once: 2 for a 2-worker server).
    /// Records made before issue 36 counted every pid seen.
    pub workers: u32,
    /// Every worker pid seen in the window, replaced ones included
    /// (absent in older records).
    #[serde(default)]
    pub workers_seen: u32,
    /// The workers that left the tree in the window while their server
    /// went on and that another took the place of: their memory is in
    /// the figures below, their count is not in `workers`.
    #[serde(default)]
    pub replaced_pids: Vec<u32>,
    /// `worker`, or `single` for a server without workers.
    pub role: Role,
    #[serde(flatten)]
    pub memory: RoleMemory,
    /// None for a server without a master.
    pub master: Option<MasterMemory>,
}

impl PerWorker {
    /// The summary of `procs`; None when none of them serves requests.
    pub fn of(procs: &[ProcessMemory]) -> Option<PerWorker> {
        let of_role = |role| procs.iter().filter(move |p| p.role == role);
        let role = [Role::Worker, Role::Single]
            .into_iter()
            .find(|&r| of_role(r).next().is_some())?;
        let workers: Vec<&ProcessMemory> = of_role(role).collect();
        let masters: Vec<&ProcessMemory> = of_role(Role::Master).collect();
        Some(PerWorker {
            workers: workers.len() as u32,
            workers_seen: workers.len() as u32,
            replaced_pids: Vec::new(),
            role,
            memory: RoleMemory::of(&workers),
            master: (!masters.is_empty()).then(|| MasterMemory {
                masters: masters.len() as u32,
                memory: RoleMemory::of(&masters),
            }),
        })
    }
}

impl PerWorker {
    /// This summary with the workers of `procs` among `replaced` named
    /// and counted once with their replacements.
    pub fn less(mut self, procs: &[ProcessMemory], replaced: &[u32]) -> PerWorker {
        let mut gone: Vec<u32> = procs
            .iter()
            .filter(|p| p.role == self.role && replaced.contains(&p.pid))
            .map(|p| p.pid)
            .collect();
        gone.sort_unstable();
        gone.dedup();
        // A lone process that left is the server itself: never less.
        if self.role == Role::Worker {
            self.workers = self.workers_seen.saturating_sub(gone.len() as u32).max(1);
            self.replaced_pids = gone;
        }
        self
    }
}

impl RoleMemory {
    fn of(procs: &[&ProcessMemory]) -> RoleMemory {
        let n = procs.len().max(1) as u64;
        let mean = |f: fn(&ProcessMemory) -> u64| procs.iter().map(|p| f(p)).sum::<u64>() / n;
        let all = |f: fn(&ProcessMemory) -> Option<u64>| {
            procs.iter().map(|p| f(p)).collect::<Option<Vec<u64>>>()
        };
        let opt_mean = |f| all(f).map(|v| v.iter().sum::<u64>() / n);
        let opt_max = |f| all(f).map(|v| v.into_iter().max().unwrap_or(0));
        RoleMemory {
            rss_mean_bytes: mean(|p| p.rss_mean_bytes),
            pss_mean_bytes: opt_mean(|p| p.pss_mean_bytes),
            uss_mean_bytes: opt_mean(|p| p.uss_mean_bytes),
            rss_max_bytes: procs.iter().map(|p| p.rss_peak_bytes).max().unwrap_or(0),
            pss_max_bytes: opt_max(|p| p.pss_peak_bytes),
            uss_max_bytes: opt_max(|p| p.uss_peak_bytes),
        }
    }
}

/// A process: its pid and its start time since boot.
type Key = (u32, u64);

/// One process's running figures.
#[derive(Debug)]
struct Tracked {
    pid: u32,
    comm: String,
    cmdline: String,
    /// Whether it starts a tree of the scope.
    top: bool,
    /// A top with descendants seen.
    has_kids: bool,
    memory: MemoryTally,
    /// Its memory over time, in a soak.
    series: Option<BoundedSeries>,
}

/// One process's memory over a soak: it ends when the process does, and a
/// replacement (a new pid, or the same pid started again) has its own.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessSeries {
    pub pid: u32,
    pub comm: String,
    pub role: Role,
    pub points: Vec<SeriesPoint>,
}

/// Per-process figures over a run of samples (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct ProcessTracker {
    procs: Vec<Tracked>,
    index: HashMap<Key, usize>,
    dropped: HashSet<Key>,
    dropped_count: u64,
    /// In a soak, each process's series starts with buckets this wide.
    soak_step_ms: Option<u64>,
}

/// What a sample saw of one process.
pub(crate) struct Seen<'a> {
    pub pid: u32,
    pub start_ticks: u64,
    /// The top of its tree, with its start time.
    pub top: Key,
    pub memory: &'a Memory,
    /// Milliseconds since the window started; None before it.
    pub at_ms: Option<u64>,
}

impl ProcessTracker {
    /// Adds one sample of one process. A process without an address space
    /// (a zombie) is not counted: its zero is no figure of its memory.
    pub fn observe(&mut self, seen: &Seen, buf: &mut Vec<u8>) {
        let m = seen.memory;
        if m.rss == 0 {
            return;
        }
        let key = (seen.pid, seen.start_ticks);
        let top = key == seen.top;
        if !top {
            if let Some(&t) = self.index.get(&seen.top) {
                self.procs[t].has_kids = true;
            }
        }
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None if self.procs.len() >= PER_PROCESS_CAP => {
                if self.dropped.len() < DROPPED_KEYS_CAP {
                    if self.dropped.insert(key) {
                        self.dropped_count += 1;
                    }
                } else if !self.dropped.contains(&key) {
                    self.dropped_count += 1;
                }
                return;
            }
            None => {
                self.procs.push(Tracked::new(seen.pid, top, buf));
                self.index.insert(key, self.procs.len() - 1);
                self.procs.len() - 1
            }
        };
        let step = self.soak_step_ms;
        let t = &mut self.procs[i];
        if let (Some(step), Some(at)) = (step, seen.at_ms) {
            t.series
                .get_or_insert_with(|| BoundedSeries::new(step))
                .push(at, m);
        }
        // Titles change after a fork (a Passenger app process starts as a
        // copy of its preloader): the latest one is kept.
        if let Some(title) = read_cmdline(seen.pid, buf) {
            if title != t.cmdline {
                t.cmdline = title;
            }
        }
        t.add(m);
    }

    /// Forgets everything: the window starts.
    pub fn clear(&mut self) {
        *self = ProcessTracker::soaking(self.soak_step_ms);
    }

    /// A tracker that, given `Some(step)`, keeps a series per process.
    pub fn soaking(soak_step_ms: Option<u64>) -> ProcessTracker {
        ProcessTracker {
            soak_step_ms,
            ..ProcessTracker::default()
        }
    }

    /// Every kept process's series (those seen in the window), with its
    /// role; empty outside a soak.
    pub fn series(&self) -> Vec<ProcessSeries> {
        let passenger = self.passenger();
        self.procs
            .iter()
            .filter_map(|t| {
                Some(ProcessSeries {
                    pid: t.pid,
                    comm: t.comm.clone(),
                    role: t.role(passenger),
                    points: t.series.as_ref()?.points(),
                })
            })
            .collect()
    }

    fn passenger(&self) -> bool {
        self.procs
            .iter()
            .any(|p| p.cmdline.starts_with(PASSENGER_APP))
    }

    /// Every kept process with its role, and how many were dropped.
    pub fn report(&self) -> (Vec<ProcessMemory>, u64) {
        let passenger = self.passenger();
        let procs = self
            .procs
            .iter()
            .map(|t| t.figures(t.role(passenger)))
            .collect();
        (procs, self.dropped_count)
    }
}

const PASSENGER_APP: &str = "Passenger RubyApp";
const PASSENGER_PRELOADER: &str = "Passenger AppPreloader";

impl Tracked {
    fn new(pid: u32, top: bool, buf: &mut Vec<u8>) -> Tracked {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|c| c.trim_end().to_string())
            .unwrap_or_default();
        Tracked {
            pid,
            comm,
            cmdline: read_cmdline(pid, buf).unwrap_or_default(),
            top,
            has_kids: false,
            memory: MemoryTally::default(),
            series: None,
        }
    }

    fn add(&mut self, m: &Memory) {
        self.memory.add(m);
    }

    fn role(&self, passenger: bool) -> Role {
        if passenger {
            return if self.cmdline.starts_with(PASSENGER_APP) {
                Role::Worker
            } else if self.cmdline.starts_with(PASSENGER_PRELOADER) {
                Role::Master
            } else {
                Role::Helper
            };
        }
        match (self.top, self.has_kids) {
            (false, _) => Role::Worker,
            (true, true) => Role::Master,
            (true, false) => Role::Single,
        }
    }

    fn figures(&self, role: Role) -> ProcessMemory {
        let m = &self.memory;
        let mean = |sum: u128| m.mean(sum);
        let known = !m.pss_missing;
        ProcessMemory {
            pid: self.pid,
            comm: self.comm.clone(),
            cmdline: self.cmdline.clone(),
            role,
            samples: m.samples,
            rss_peak_bytes: m.rss_peak,
            pss_peak_bytes: known.then_some(m.pss_peak),
            uss_peak_bytes: known.then_some(m.uss_peak),
            rss_mean_bytes: mean(m.rss_sum),
            pss_mean_bytes: known.then(|| mean(m.pss_sum)),
            uss_mean_bytes: known.then(|| mean(m.uss_sum)),
        }
    }
}

/// `/proc/PID/cmdline`, NULs as spaces, trimmed, at most [`CMDLINE_BYTES`]
/// (cut at a character boundary); None if unreadable.
pub(super) fn read_cmdline(pid: u32, buf: &mut Vec<u8>) -> Option<String> {
    use std::io::Read;
    buf.clear();
    std::fs::File::open(format!("/proc/{pid}/cmdline"))
        .ok()?
        .take(CMDLINE_BYTES as u64 * 2)
        .read_to_end(buf)
        .ok()?;
    Some(title(buf))
}

/// A command line's bytes as one line of at most [`CMDLINE_BYTES`].
fn title(raw: &[u8]) -> String {
    let text: String = String::from_utf8_lossy(raw)
        .replace('\0', " ")
        .trim()
        .to_string();
    let mut end = text.len().min(CMDLINE_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proc(role: Role, rss: u64, pss: Option<u64>) -> ProcessMemory {
        ProcessMemory {
            pid: 1,
            comm: "ruby".into(),
            cmdline: String::new(),
            role,
            samples: 3,
            rss_peak_bytes: rss + 10,
            pss_peak_bytes: pss.map(|p| p + 10),
            uss_peak_bytes: pss.map(|p| p + 5),
            rss_mean_bytes: rss,
            pss_mean_bytes: pss,
            uss_mean_bytes: pss.map(|p| p / 2),
        }
    }

    /// (case, processes, workers, role, PSS mean, PSS max, masters)
    #[test]
    fn per_worker_summarises_the_workers_or_the_lone_process() {
        use Role::*;
        type Row = (
            &'static str,
            Vec<ProcessMemory>,
            Option<(u32, Role, Option<u64>, Option<u64>, Option<u32>)>,
        );
        let rows: Vec<Row> = vec![
            ("nothing seen", vec![], None),
            ("only helpers", vec![proc(Helper, 5, Some(5))], None),
            (
                "a lone process",
                vec![proc(Single, 100, Some(80))],
                Some((1, Single, Some(80), Some(90), None)),
            ),
            (
                "a master and two workers",
                vec![
                    proc(Master, 100, Some(60)),
                    proc(Worker, 100, Some(40)),
                    proc(Worker, 100, Some(20)),
                ],
                Some((2, Worker, Some(30), Some(50), Some(1))),
            ),
            (
                "a worker without PSS: no PSS figure",
                vec![proc(Worker, 100, Some(40)), proc(Worker, 100, None)],
                Some((2, Worker, None, None, None)),
            ),
            (
                "workers outrank singles (instances beside a cluster)",
                vec![proc(Single, 1, Some(1)), proc(Worker, 100, Some(40))],
                Some((1, Worker, Some(40), Some(50), None)),
            ),
        ];
        for (case, procs, want) in rows {
            let got = PerWorker::of(&procs).map(|w| {
                (
                    w.workers,
                    w.role,
                    w.memory.pss_mean_bytes,
                    w.memory.pss_max_bytes,
                    w.master.map(|m| m.masters),
                )
            });
            assert_eq!(got, want, "{case}");
        }
    }

    /// Regression (issue 36): a 2-worker server with one worker killed
    /// and replaced said `workers: 3`. The pid that left is named and the
    /// count is of the workers the server ran; a lone process never drops.
    #[test]
    fn a_replaced_worker_is_named_and_not_counted_twice() {
        let w = |pid, role| ProcessMemory {
            pid,
            ..proc(role, 100, Some(40))
        };
        let procs = [
            w(1, Role::Master),
            w(2, Role::Worker),
            w(3, Role::Worker),
            w(4, Role::Worker),
        ];
        let s = PerWorker::of(&procs).unwrap().less(&procs, &[3, 1, 99]);
        assert_eq!(
            (s.workers, s.workers_seen, s.replaced_pids),
            (2, 3, vec![3])
        );
        let lone = [w(7, Role::Single)];
        let s = PerWorker::of(&lone).unwrap().less(&lone, &[7]);
        assert_eq!((s.workers, s.replaced_pids.len()), (1, 0));
    }

    #[test]
    fn per_worker_keeps_its_contract_names() {
        let w = PerWorker::of(&[proc(Role::Master, 9, None), proc(Role::Worker, 7, Some(4))]);
        let json = serde_json::to_value(w.unwrap()).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for k in [
            "workers",
            "role",
            "rss_mean_bytes",
            "pss_mean_bytes",
            "uss_mean_bytes",
            "rss_max_bytes",
            "pss_max_bytes",
            "uss_max_bytes",
            "master",
        ] {
            assert!(keys.contains(&k), "{k} missing from {json}");
        }
        assert_eq!(json["role"], "worker");
        assert_eq!(json["master"]["masters"], 1);
        assert!(json["master"]["pss_mean_bytes"].is_null());
    }

    /// (case, top, has kids, cmdline, passenger tree, role)
    #[test]
    fn roles_follow_the_tree_or_passengers_titles() {
        use Role::*;
        let rows: &[(&str, bool, bool, &str, bool, Role)] = &[
            ("a root with workers", true, true, "puma 6", false, Master),
            ("a root alone", true, false, "thin server", false, Single),
            (
                "a child",
                false,
                false,
                "puma: cluster worker 0",
                false,
                Worker,
            ),
            ("a grandchild", false, true, "x", false, Worker),
            (
                "passenger app",
                false,
                false,
                "Passenger RubyApp: /app (production)",
                true,
                Worker,
            ),
            (
                "passenger preloader",
                false,
                true,
                "Passenger AppPreloader: /app",
                true,
                Master,
            ),
            (
                "passenger agent",
                true,
                true,
                "Passenger watchdog",
                true,
                Helper,
            ),
            (
                "passenger front",
                true,
                true,
                "ruby /usr/bin/passenger start",
                true,
                Helper,
            ),
        ];
        for &(case, top, has_kids, cmdline, passenger, want) in rows {
            let mut t = Tracked::new(u32::MAX - 1, top, &mut Vec::new());
            t.has_kids = has_kids;
            t.cmdline = cmdline.into();
            assert_eq!(t.role(passenger), want, "{case}");
        }
    }

    #[test]
    fn titles_are_one_line_cut_at_a_character() {
        let rows: &[(&[u8], &str)] = &[
            (
                b"puma: cluster worker 0: 12 [app]\0\0\0",
                "puma: cluster worker 0: 12 [app]",
            ),
            (b"ruby\0-e\0sleep 1\0", "ruby -e sleep 1"),
            (b"", ""),
        ];
        for (raw, want) in rows {
            assert_eq!(title(raw), *want);
        }
        let long = "é".repeat(100);
        let cut = title(long.as_bytes());
        assert_eq!(cut.len(), CMDLINE_BYTES, "60 two-byte characters");
        let odd = format!("a{long}");
        assert_eq!(title(odd.as_bytes()).len(), CMDLINE_BYTES - 1);
    }

    fn mem(rss: u64) -> Memory {
        Memory {
            rss,
            pss: Some(rss / 2),
            uss: Some(rss / 4),
        }
    }

    #[test]
    fn the_list_stops_at_its_cap_and_counts_the_rest_once() {
        let mut t = ProcessTracker::default();
        let top = (1, 0);
        for _sample in 0..2 {
            for pid in 1..=(PER_PROCESS_CAP as u32 + 10) {
                let m = mem(4096 * u64::from(pid));
                let seen = Seen {
                    pid,
                    start_ticks: 0,
                    top,
                    memory: &m,
                    at_ms: None,
                };
                t.observe(&seen, &mut Vec::new());
            }
        }
        let (procs, dropped) = t.report();
        assert_eq!((procs.len(), dropped), (PER_PROCESS_CAP, 10));
        assert_eq!(procs[0].role, Role::Master);
        assert_eq!(procs[1].role, Role::Worker);
        assert_eq!(procs[1].samples, 2);
        assert_eq!(procs[1].rss_mean_bytes, 8192);
        let zombie = Memory {
            rss: 0,
            pss: Some(0),
            uss: Some(0),
        };
        let before = t.procs[0].memory.samples;
        t.observe(
            &Seen {
                pid: 1,
                start_ticks: 0,
                top,
                memory: &zombie,
                at_ms: None,
            },
            &mut Vec::new(),
        );
        assert_eq!(
            t.procs[0].memory.samples, before,
            "a zombie's zero is no sample"
        );
    }

    /// A worker replaced under the same pid (a new start time) and one
    /// with a new pid each start a series; the old ones end where they
    /// stopped, never bent by the newcomer.
    #[test]
    fn a_soak_keeps_one_series_per_process_and_a_replacement_starts_its_own() {
        let mut t = ProcessTracker::soaking(Some(1000));
        let master = (1, 0);
        let mut see = |pid, start_ticks, at_ms: u64, rss| {
            let m = mem(rss);
            let seen = Seen {
                pid,
                start_ticks,
                top: master,
                memory: &m,
                at_ms: Some(at_ms),
            };
            t.observe(&seen, &mut Vec::new());
        };
        for s in 0..5u64 {
            see(1, 0, s * 1000, 4096);
            see(2, 10, s * 1000, 8192 * (s + 1));
        }
        for s in 5..8u64 {
            see(1, 0, s * 1000, 4096);
            see(2, 99, s * 1000, 4096);
            see(3, 100, s * 1000, 4096);
        }
        let series = t.series();
        let shape: Vec<(u32, Role, usize)> = series
            .iter()
            .map(|s| (s.pid, s.role, s.points.len()))
            .collect();
        assert_eq!(
            shape,
            vec![
                (1, Role::Master, 8),
                (2, Role::Worker, 5),
                (2, Role::Worker, 3),
                (3, Role::Worker, 3)
            ]
        );
        assert_eq!(series[1].points[4].rss_bytes, 8192 * 5);
        assert_eq!(series[2].points[0].t_s, 5.0);
        assert!(ProcessTracker::default().series().is_empty());
    }
}
