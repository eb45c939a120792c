//! The /proc sampler: CPU and memory of a server's whole process tree.
//!
//! A [`Sampler`] watches one server while load runs against it. On its own
//! thread, every interval (100-250 ms is the useful range, 200 ms the
//! default), it finds the server's process tree afresh, because masters
//! fork workers and workers die and are replaced, and reads for every
//! process in it:
//!
//! - CPU: utime, stime, cutime and cstime from `/proc/PID/stat`;
//! - RSS from `/proc/PID/statm`;
//! - PSS and USS from `/proc/PID/smaps_rollup` (USS = Private_Clean +
//!   Private_Dirty). PSS is the honest figure for preforking servers: pages
//!   shared copy-on-write between a master and its workers are split
//!   between them, where RSS counts them once per process. When
//!   smaps_rollup cannot be read (another user's process) only RSS is
//!   known, and the report says PSS and USS are unavailable (`None`).
//!
//! The caller marks when the measured window starts ([`Sampler::mark`]) and
//! gets a [`SamplerReport`] from [`Sampler::stop`]: CPU used in the window,
//! peak and mean memory over the window's samples, and a timeline of at
//! most one row per second, warm-up included. Per process it also keeps
//! each one's peak and mean RSS, PSS and USS over the window, and its role
//! in the server (master, worker, lone process): `per_process` and the
//! `per_worker` summary (the `per_process` module).
//!
//! From sample to sample it also notes which processes left the tree,
//! came in or were stopped (`lifecycle`): the lab makes a worker's death,
//! its replacement and a hung worker of them. Why a process ended is gone
//! from /proc with it; [`ExitWatch`] (`exits`) reads the kernel's exit
//! events for that, where the kernel allows it.
//!
//! The tree is found by following the ppid links in every `/proc/*/stat`
//! ([`tree_pids`]), which needs nothing from the kernel beyond /proc itself
//! (`/proc/PID/task/*/children` needs CONFIG_PROC_CHILDREN). The supervisor
//! uses the same walk to find every process it must stop.
//!
//! # What it never does
//!
//! It only reads files under /proc (and, in [`ExitWatch`], the kernel's
//! exit events from a netlink socket). It never sends a signal, never spawns,
//! waits for or reaps a process, and never writes anywhere: a process that
//! vanishes mid-read is skipped, not chased.
//!
//! # CPU accounting
//!
//! Summing utime + stime over the live processes loses the CPU of every
//! worker that exits between two samples. Per process, the sampler keeps
//! the largest utime + stime + cutime + cstime it has read, and the tree's
//! CPU is the sum of those; when a process disappears it is dropped only
//! if its parent's cutime + cstime grew enough to cover it (the parent
//! waited for it, and the kernel moved its final CPU, last interval
//! included, into the parent's counters), and kept at its last values
//! otherwise. Short-lived children that no sample ever sees still count
//! through their parent's cutime + cstime. See the `cpu` module for the
//! details and the remaining limits; CPU before the mark is subtracted.

mod cpu;
mod disturbance;
mod exits;
mod lifecycle;
mod machine;
mod per_process;
mod procfs;
mod series;
mod sockets;

pub use disturbance::{
    assess, Disturbance, DisturbanceWatch, ForeignProcess, FOREIGN_THRESHOLD, STEAL_THRESHOLD,
};
pub use exits::{Exit, ExitCause, ExitWatch, EXITS_CAP};
pub use lifecycle::{Arrival, Departure, Lifecycle, Stop, EVENTS_CAP};
pub use machine::{parse_proc_stat, CpuTimes, MachineCpu};
pub use per_process::{
    MasterMemory, PerWorker, ProcessMemory, ProcessSeries, Role, RoleMemory, PER_PROCESS_CAP,
};
pub use procfs::{
    clock_ticks, direct_children, parse_comm, parse_smaps_rollup, parse_stat, read_process,
    tree_pids, ProcSample, Scope, Stat,
};
pub use series::{coarsen_rows, BoundedSeries, SeriesPoint, SERIES_CAP};
pub use sockets::{
    check_port_owner, listeners_on, parse_net_tcp, read_net_tcp, PortError, TcpRow, TcpState,
};

use cpu::{CpuTracker, Ticks};
use lifecycle::LifecycleTracker;
use per_process::{ProcessTracker, Seen};
use procfs::{read_memory, MemoryTally, ProcTable};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The interval to use when there is no reason to pick another.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(200);

/// Shorter intervals are raised to this. smaps_rollup walks a process's
/// whole address space under its mmap lock; sampling faster perturbs the
/// server and measures nothing more.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// The most rows the timeline keeps: an hour of one-second rows. Beyond,
/// neighbours are merged in pairs (the later row's time and CPU, the
/// pair's peaks), so a row of a soak covers 2, 4, 8... seconds and the
/// timeline of a day holds at most this many rows.
pub const TIMELINE_CAP: usize = 3600;

/// One row of the timeline: the samples of one second (counted from the
/// sampler's start); of 2, 4, 8... seconds once [`TIMELINE_CAP`] rows
/// were reached.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SampleRow {
    /// Milliseconds since the sampler started, at the row's last sample.
    pub t_ms: u64,
    /// Peak over the row's samples.
    pub rss_bytes: u64,
    /// Peak over the row's samples; None if smaps_rollup was unreadable.
    pub pss_bytes: Option<u64>,
    /// Peak over the row's samples.
    pub processes: u32,
    /// Tree CPU (user + system) from the first sample to the row's last.
    pub cpu_s: f64,
}

/// What the sampler saw over the measured window.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct SamplerReport {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub rss_peak_bytes: u64,
    pub rss_mean_bytes: u64,
    /// None when smaps_rollup was unreadable in any sample of the window.
    pub pss_peak_bytes: Option<u64>,
    pub pss_mean_bytes: Option<u64>,
    pub uss_peak_bytes: Option<u64>,
    pub uss_mean_bytes: Option<u64>,
    pub processes_peak: u32,
    pub processes_mean: f64,
    /// Samples in the measured window.
    pub samples: u64,
    /// When the measured window started, in milliseconds since the
    /// sampler started (the timeline's clock); None if never marked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_start_ms: Option<u64>,
    pub interval_ms: u64,
    /// At most one row per second, warm-up included.
    pub timeline: Vec<SampleRow>,
    /// Every process of the tree over the window, with its role (at most
    /// [`PER_PROCESS_CAP`]; empty in records made before it existed).
    #[serde(default)]
    pub per_process: Vec<ProcessMemory>,
    /// Processes seen but left out of `per_process` (the cap).
    #[serde(default)]
    pub per_process_dropped: u64,
    /// Memory per worker (or of the lone process) and of the master; None
    /// when no process was seen, and in records made before it existed.
    #[serde(default)]
    pub per_worker: Option<PerWorker>,
    /// A soak's series (never written: the record's `soak` carries them,
    /// fitted).
    #[serde(skip)]
    pub soak: Option<SoakSamples>,
    /// The processes that left the tree, came in or were stopped, from
    /// the first sample on (never written: the lab makes the record's
    /// `faults` of them).
    #[serde(skip)]
    pub lifecycle: Lifecycle,
}

/// What a soak sampled: every process's series over the window and
/// rackbench's own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SoakSamples {
    /// The width of a point before any coarsening, in milliseconds.
    pub step_ms: u64,
    pub processes: Vec<ProcessSeries>,
    /// rackbench's own memory (its pid's RSS, PSS, USS).
    pub own: Vec<SeriesPoint>,
}

impl SamplerReport {
    /// Server CPU milliseconds per request; None for no requests.
    pub fn cpu_ms_per_request(&self, requests: u64) -> Option<f64> {
        (requests > 0).then(|| (self.cpu_user_s + self.cpu_sys_s) * 1000.0 / requests as f64)
    }
}

/// The tree at one moment.
#[derive(Debug, Clone, Copy)]
struct TreeSample {
    rss: u64,
    pss: Option<u64>,
    uss: Option<u64>,
    processes: u32,
}

/// Peaks and sums over a run of samples.
#[derive(Debug, Default)]
struct Stats {
    memory: MemoryTally,
    procs_peak: u32,
    procs_sum: u64,
}

impl Stats {
    fn add(&mut self, s: &TreeSample) {
        self.memory.add(&procfs::Memory {
            rss: s.rss,
            pss: s.pss,
            uss: s.uss,
        });
        self.procs_peak = self.procs_peak.max(s.processes);
        self.procs_sum += u64::from(s.processes);
    }

    /// (peak, mean) of PSS and of USS, if known for every sample.
    fn pss_uss(&self) -> Option<((u64, u64), (u64, u64))> {
        let m = &self.memory;
        (m.samples > 0 && !m.pss_missing).then(|| {
            (
                (m.pss_peak, m.mean(m.pss_sum)),
                (m.uss_peak, m.mean(m.uss_sum)),
            )
        })
    }
}

struct State {
    scope: Scope,
    started: Instant,
    cpu: CpuTracker,
    /// Tree CPU at the first sample that found the tree.
    cpu_first: Option<Ticks>,
    /// Tree CPU when the window started.
    cpu_mark: Option<Ticks>,
    marked: bool,
    /// When `mark` was called.
    marked_at: Option<Instant>,
    all: Stats,
    window: Stats,
    /// Per process, over the window once marked (everything before).
    processes: ProcessTracker,
    /// Processes come and gone, from the first sample (never cleared).
    lifecycle: LifecycleTracker,
    timeline: Vec<SampleRow>,
    /// How long a timeline row covers (doubles past [`TIMELINE_CAP`]).
    row_ms: u64,
    /// rackbench's own memory, in a soak.
    own: Option<BoundedSeries>,
    soak_step_ms: Option<u64>,
    buf: Vec<u8>,
    /// Each sample goes to the live endpoint's board too (the server's
    /// sampler, not nginx's or the database's).
    live: bool,
}

impl State {
    fn new(scope: Scope, soak_step_ms: Option<u64>) -> State {
        State {
            scope,
            started: Instant::now(),
            cpu: CpuTracker::default(),
            cpu_first: None,
            cpu_mark: None,
            marked: false,
            marked_at: None,
            all: Stats::default(),
            window: Stats::default(),
            processes: ProcessTracker::soaking(soak_step_ms),
            lifecycle: LifecycleTracker::default(),
            timeline: Vec::new(),
            row_ms: 1000,
            own: None,
            soak_step_ms,
            buf: Vec::with_capacity(4096),
            live: false,
        }
    }

    fn sample(&mut self) {
        let table = ProcTable::scan();
        // The moment of the stat pass, before the slower memory reads.
        let scanned_ms = self.started.elapsed().as_millis() as u64;
        let trees = self.scope.trees_in(&table);
        let pids: Vec<u32> = trees.concat();
        // Memory is read after the whole stat pass: a process reaped while
        // the pass ran fails here and counts as gone in this sample, so its
        // CPU is never read both from it and from its parent's cutime.
        let mut gone = HashSet::new();
        let mut tree = TreeSample {
            rss: 0,
            pss: Some(0),
            uss: Some(0),
            processes: 0,
        };
        let at_ms = self.marked_at.map(|t| t.elapsed().as_millis() as u64);
        let start = |pid| {
            table
                .stats
                .get(&pid)
                .map_or(0, |s: &procfs::Stat| s.starttime)
        };
        for members in &trees {
            let top = (members[0], start(members[0]));
            for &pid in members {
                let Some(m) = read_memory(pid, &mut self.buf) else {
                    gone.insert(pid);
                    continue;
                };
                tree.rss += m.rss;
                tree.pss = tree.pss.zip(m.pss).map(|(a, b)| a + b);
                tree.uss = tree.uss.zip(m.uss).map(|(a, b)| a + b);
                tree.processes += 1;
                let seen = Seen {
                    pid,
                    start_ticks: start(pid),
                    top,
                    memory: &m,
                    at_ms,
                };
                self.processes.observe(&seen, &mut self.buf);
            }
        }
        self.cpu.observe(&table, &pids, &gone);
        let buf = &mut self.buf;
        (self.lifecycle).observe(scanned_ms, &table, &trees, |pid| {
            per_process::read_cmdline(pid, buf).unwrap_or_default()
        });
        self.sample_self(at_ms);
        if tree.processes == 0 {
            return;
        }
        let cpu = self.cpu.total();
        let first = *self.cpu_first.get_or_insert(cpu);
        self.all.add(&tree);
        if self.marked {
            self.window.add(&tree);
        }
        let t_ms = self.started.elapsed().as_millis() as u64;
        let cpu_s = cpu.since(first).sum() as f64 / clock_ticks();
        if self.live {
            if let Some(board) = crate::live::board() {
                board.server_sample(cpu_s, tree.rss, tree.pss);
            }
        }
        self.push_row(t_ms, &tree, cpu_s);
    }

    /// rackbench's own memory, into its series (in a soak's window).
    fn sample_self(&mut self, at_ms: Option<u64>) {
        let (Some(step), Some(at)) = (self.soak_step_ms, at_ms) else {
            return;
        };
        if let Some(m) = read_memory(std::process::id(), &mut self.buf) {
            self.own
                .get_or_insert_with(|| BoundedSeries::new(step))
                .push(at, &m);
        }
    }

    /// Adds a sample to the timeline, merging samples of the same row
    /// (one second, or more once the timeline was coarsened).
    fn push_row(&mut self, t_ms: u64, tree: &TreeSample, cpu_s: f64) {
        if let Some(row) = self.timeline.last_mut() {
            if row.t_ms / self.row_ms == t_ms / self.row_ms {
                row.t_ms = t_ms;
                row.rss_bytes = row.rss_bytes.max(tree.rss);
                row.pss_bytes = row.pss_bytes.zip(tree.pss).map(|(a, b)| a.max(b));
                row.processes = row.processes.max(tree.processes);
                row.cpu_s = cpu_s;
                return;
            }
        }
        self.timeline.push(SampleRow {
            t_ms,
            rss_bytes: tree.rss,
            pss_bytes: tree.pss,
            processes: tree.processes,
            cpu_s,
        });
        self.row_ms *= coarsen_rows(&mut self.timeline, TIMELINE_CAP, merge_rows);
    }

    fn mark(&mut self) {
        if self.marked {
            return;
        }
        // This sample is the window's first; CPU counts from its reading.
        self.marked = true;
        self.marked_at = Some(Instant::now());
        self.processes.clear();
        self.sample();
        self.cpu_mark = Some(self.cpu.total());
    }

    fn report(&self, interval: Duration) -> SamplerReport {
        let (stats, base) = if self.marked {
            (&self.window, self.cpu_mark)
        } else {
            (&self.all, self.cpu_first)
        };
        let cpu = self.cpu.total().since(base.unwrap_or_default());
        let tck = clock_ticks();
        let mem = stats.pss_uss();
        let (per_process, per_process_dropped) = self.processes.report();
        let mut lifecycle = self.lifecycle.report();
        lifecycle.origin = Some(self.started);
        let window_start_ms = self
            .marked_at
            .map(|t| t.saturating_duration_since(self.started).as_millis() as u64);
        let replaced = replaced_workers(&lifecycle, window_start_ms.unwrap_or(0));
        SamplerReport {
            cpu_user_s: cpu.user as f64 / tck,
            cpu_sys_s: cpu.sys as f64 / tck,
            rss_peak_bytes: stats.memory.rss_peak,
            rss_mean_bytes: stats.memory.mean(stats.memory.rss_sum),
            pss_peak_bytes: mem.map(|m| m.0 .0),
            pss_mean_bytes: mem.map(|m| m.0 .1),
            uss_peak_bytes: mem.map(|m| m.1 .0),
            uss_mean_bytes: mem.map(|m| m.1 .1),
            processes_peak: stats.procs_peak,
            processes_mean: stats.procs_sum as f64 / stats.memory.samples.max(1) as f64,
            samples: stats.memory.samples,
            window_start_ms,
            interval_ms: interval.as_millis() as u64,
            timeline: self.timeline.clone(),
            per_worker: PerWorker::of(&per_process).map(|w| w.less(&per_process, &replaced)),
            soak: self.soak_step_ms.map(|step_ms| SoakSamples {
                step_ms,
                processes: self.processes.series(),
                own: self
                    .own
                    .as_ref()
                    .map(BoundedSeries::points)
                    .unwrap_or_default(),
            }),
            per_process,
            per_process_dropped,
            lifecycle,
        }
    }
}

/// The pids that left the tree from `since_ms` on while the top of their
/// tree lived on, and that a process which came in later under the same
/// parent replaced (each newcomer replaces one): workers replaced, not a
/// server that stopped, nor a worker nothing took the place of.
fn replaced_workers(seen: &Lifecycle, since_ms: u64) -> Vec<u32> {
    let mut taken: Vec<u32> = Vec::new();
    let mut replaced = Vec::new();
    for d in &seen.departures {
        if d.was_top || d.missed_ms < since_ms || !seen.tops_alive.contains(&d.top) {
            continue;
        }
        let newcomer = seen.arrivals.iter().find(|a| {
            a.ppid == d.ppid && a.first_seen_ms > d.last_seen_ms && !taken.contains(&a.pid)
        });
        if let Some(a) = newcomer {
            taken.push(a.pid);
            replaced.push(d.pid);
        }
    }
    replaced
}

/// Two neighbouring timeline rows as one: the later one's time and CPU,
/// the pair's peaks.
fn merge_rows(a: &SampleRow, b: &SampleRow) -> SampleRow {
    SampleRow {
        t_ms: b.t_ms,
        rss_bytes: a.rss_bytes.max(b.rss_bytes),
        pss_bytes: a.pss_bytes.zip(b.pss_bytes).map(|(x, y)| x.max(y)),
        processes: a.processes.max(b.processes),
        cpu_s: b.cpu_s,
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Samples a process tree on its own thread until stopped.
///
/// `mark` may be called from another thread (the sampler is `Sync`).
pub struct Sampler {
    state: Arc<Mutex<State>>,
    halt: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<JoinHandle<()>>,
    interval: Duration,
}

impl Sampler {
    /// Starts sampling `root_pid` and its descendants every `interval`
    /// (at least [`MIN_INTERVAL`]; [`DEFAULT_INTERVAL`] is a good choice).
    pub fn start(root_pid: u32, interval: Duration) -> Sampler {
        Sampler::start_scope(Scope::tree(root_pid), interval)
    }

    /// Starts sampling every process in `scope`.
    pub fn start_scope(scope: Scope, interval: Duration) -> Sampler {
        Sampler::start_soak(scope, interval, None)
    }

    /// Like [`Sampler::start_scope`], and with `Some(step)` keeps, over
    /// the window, a bounded series of each process's memory (and of
    /// rackbench's own) whose points start `step` wide: a soak.
    pub fn start_soak(scope: Scope, interval: Duration, soak_step: Option<Duration>) -> Sampler {
        let interval = interval.max(MIN_INTERVAL);
        let step_ms = soak_step.map(|s| (s.as_millis() as u64).max(interval.as_millis() as u64));
        let state = Arc::new(Mutex::new(State::new(scope, step_ms)));
        let halt = Arc::new((Mutex::new(false), Condvar::new()));
        let (st, h) = (Arc::clone(&state), Arc::clone(&halt));
        // Without a thread, mark and stop still take their samples.
        let handle = std::thread::Builder::new()
            .name("rackbench-sampler".into())
            .spawn(move || run(&st, &h, interval))
            .ok();
        Sampler {
            state,
            halt,
            handle,
            interval,
        }
    }

    /// Sends every sample to the live endpoint's board, when there is
    /// one (`--metrics-listen`): the server tree's CPU and memory.
    pub fn live(self) -> Sampler {
        lock(&self.state).live = true;
        self
    }

    /// The measured window starts now: takes a sample at once, CPU counts
    /// from it, and peaks and means cover only it and later samples. Later
    /// calls do nothing.
    pub fn mark(&self) {
        lock(&self.state).mark();
    }

    /// When the measured window started, if [`Sampler::mark`] was called.
    pub fn marked_at(&self) -> Option<Instant> {
        lock(&self.state).marked_at
    }

    /// Takes a last sample and returns the report. A sampler never marked
    /// reports over everything it saw.
    pub fn stop(mut self) -> SamplerReport {
        self.halt_thread();
        let mut st = lock(&self.state);
        st.sample();
        st.report(self.interval)
    }

    fn halt_thread(&mut self) {
        let (flag, cv) = &*self.halt;
        *lock(flag) = true;
        cv.notify_all();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.halt_thread();
    }
}

/// The sampling thread: a sample every `interval` on a fixed schedule
/// (a slow sample delays the next, never shifts the rest), until halted.
fn run(state: &Mutex<State>, halt: &(Mutex<bool>, Condvar), interval: Duration) {
    let (flag, cv) = halt;
    let mut next = Instant::now();
    loop {
        lock(state).sample();
        next += interval;
        let now = Instant::now();
        if next < now {
            next = now;
        }
        let mut halted = lock(flag);
        loop {
            if *halted {
                return;
            }
            let now = Instant::now();
            if now >= next {
                break;
            }
            halted = cv
                .wait_timeout(halted, next - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

#[cfg(test)]
mod tests;
