//! Did the machine lie during a trial? The `disturbance` record: CPU steal
//! and the CPU of processes that are not ours, on the CPUs the server and
//! the load generator ran on, over the counted window.
//!
//! # Method
//!
//! [`DisturbanceWatch::start`] reads `/proc/stat` per CPU ([`MachineCpu`])
//! and every process's CPU at the window's start; [`DisturbanceWatch::finish`]
//! reads them again at its end. Over the measured CPUs (the server's and the
//! generator's pin sets; every CPU this process may use when either is
//! unpinned):
//!
//! - `steal_share` = steal ticks / all ticks of those CPUs;
//! - `foreign_cpu_share` = (task ticks of those CPUs − the CPU of our own
//!   processes), clamped at 0, / all ticks. Task ticks are user + nice +
//!   system; "ours" is this rackbench process and every descendant (the
//!   server's tree, nginx's, helpers rackbench adopted as subreaper),
//!   counted as utime + stime + cutime + cstime, so workers the server
//!   reaped during the window count too.
//!
//! # Limits, said once
//!
//! - /proc/PID/stat says how much CPU a process used, not on which CPU. When
//!   our processes are not pinned (or rackbench's own sampler threads, which
//!   never are), some of their CPU ran on CPUs outside the measured set, and
//!   subtracting it makes the foreign share too small, never too large; a
//!   result below 0 is clamped and `own_cpu_outside` says so.
//! - `foreign_top` names processes by their CPU on *any* CPU for the same
//!   reason; a process that exited before the window's end is not named
//!   (the end scan no longer sees it), though its CPU still counts in the
//!   shares, through /proc/stat: a busy build's short compiler runs can
//!   leave the named CPU well under `foreign_cpu_s`.
//! - The process scans cost a few milliseconds each: both happen outside
//!   the window's hot middle, at its two ends.
//!
//! It only reads /proc; it never stops, signals or renices anything.

use super::machine::{CpuTimes, MachineCpu};
use super::procfs::{clock_ticks, ProcTable};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::Instant;

/// A trial is `disturbed` from this share of steal on its CPUs. Steal is
/// time the guest wanted the CPU and the host gave it elsewhere: at 5% a
/// throughput figure is already off by about as much as the differences
/// this tool is asked to find (compare calls changes under 1% noise), and
/// a quiet VM shows well under 1%.
pub const STEAL_THRESHOLD: f64 = 0.05;

/// ... and from this share of foreign CPU. A desktop's or a CI runner's
/// background (an editor, an agent, cron) stays under a few percent of
/// two CPUs; 10% means another job (a compiler, a second benchmark) shared
/// the server's or the generator's CPUs for a real part of the window.
/// Higher than the steal threshold because some foreign CPU on an idle
/// share of a CPU costs the server nothing.
pub const FOREIGN_THRESHOLD: f64 = 0.10;

/// How many of the busiest foreign processes the record names.
pub const FOREIGN_TOP: usize = 8;

/// One foreign process and the CPU it used in the window (on any CPU).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ForeignProcess {
    pub pid: u32,
    /// Its `comm` (the kernel's 15-byte name).
    pub name: String,
    pub cpu_s: f64,
}

/// The `disturbance` object of a trial record. `steal_share`,
/// `foreign_cpu_share` and `disturbed` are a contract other tools read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Disturbance {
    /// Steal ticks / all ticks of the measured CPUs, 0..1.
    pub steal_share: f64,
    /// Task ticks not ours / all ticks of the measured CPUs, 0..1.
    pub foreign_cpu_share: f64,
    /// Either share at or above its threshold.
    pub disturbed: bool,
    /// The measured CPUs.
    pub cpus: Vec<usize>,
    /// The window's length as the measured CPUs counted it (all their
    /// ticks / number of CPUs), in seconds.
    pub window_s: f64,
    pub steal_cpu_s: f64,
    pub foreign_cpu_s: f64,
    /// Our processes' CPU over the window, on any CPU.
    pub own_cpu_s: f64,
    /// Our CPU exceeded the measured CPUs' task time: some of it ran
    /// elsewhere, and the foreign share was clamped at 0.
    pub own_cpu_outside: bool,
    pub threshold_steal_share: f64,
    pub threshold_foreign_cpu_share: f64,
    /// The busiest processes not ours, most CPU first (at most
    /// [`FOREIGN_TOP`]).
    pub foreign_top: Vec<ForeignProcess>,
}

impl Disturbance {
    /// The caveat in a few words, e.g. "disturbed: 18% steal"; None when
    /// not disturbed.
    pub fn note(&self) -> Option<String> {
        self.why().map(|why| format!("disturbed: {why}"))
    }

    /// What disturbed the run, e.g. "18% steal, 40% foreign CPU (rustc)":
    /// each share past its threshold; None when not disturbed.
    pub fn why(&self) -> Option<String> {
        if !self.disturbed {
            return None;
        }
        let mut parts = Vec::new();
        if self.steal_share >= self.threshold_steal_share {
            parts.push(format!("{:.0}% steal", self.steal_share * 100.0));
        }
        if self.foreign_cpu_share >= self.threshold_foreign_cpu_share {
            let who = self
                .foreign_top
                .first()
                .map_or(String::new(), |p| format!(" ({})", p.name));
            parts.push(format!(
                "{:.0}% foreign CPU{who}",
                self.foreign_cpu_share * 100.0
            ));
        }
        Some(parts.join(", "))
    }
}

impl Disturbance {
    /// One line for a terminal: "steal 0.0%, foreign CPU 60.2% of CPUs
    /// 0-1 over 9.9 s, DISTURBED; busiest: rustc 5.25 s, cc1 3.47 s".
    pub fn describe(&self) -> String {
        let top: Vec<String> = self
            .foreign_top
            .iter()
            .take(3)
            .map(|p| format!("{} {:.2} s", p.name, p.cpu_s))
            .collect();
        format!(
            "steal {:.1}%, foreign CPU {:.1}% of CPUs {} over {:.1} s{}{}",
            self.steal_share * 100.0,
            self.foreign_cpu_share * 100.0,
            crate::load::cpus::format_list(&self.cpus),
            self.window_s,
            if self.disturbed {
                format!(
                    ", DISTURBED (thresholds {:.0}% steal, {:.0}% foreign CPU)",
                    self.threshold_steal_share * 100.0,
                    self.threshold_foreign_cpu_share * 100.0
                )
            } else {
                String::new()
            },
            if top.is_empty() {
                String::new()
            } else {
                format!("; busiest: {}", top.join(", "))
            }
        )
    }
}

/// The shares from a window's per-CPU times (`window`, already a
/// difference), the measured `cpus`, and our processes' CPU ticks over the
/// same window. A window with no ticks is not disturbed.
pub fn assess(window: &MachineCpu, cpus: &[usize], own_ticks: u64) -> Disturbance {
    let t: CpuTimes = window.sum(cpus);
    let total = t.total();
    let tck = clock_ticks();
    let share = |x: u64| {
        if total == 0 {
            0.0
        } else {
            x as f64 / total as f64
        }
    };
    let foreign = t.task().saturating_sub(own_ticks);
    let steal_share = share(t.steal);
    let foreign_cpu_share = share(foreign);
    let measured = if cpus.is_empty() {
        window.cpus.keys().copied().collect()
    } else {
        cpus.to_vec()
    };
    let n = measured.len().max(1) as f64;
    Disturbance {
        steal_share,
        foreign_cpu_share,
        disturbed: steal_share >= STEAL_THRESHOLD || foreign_cpu_share >= FOREIGN_THRESHOLD,
        window_s: total as f64 / tck / n,
        steal_cpu_s: t.steal as f64 / tck,
        foreign_cpu_s: foreign as f64 / tck,
        own_cpu_s: own_ticks as f64 / tck,
        own_cpu_outside: own_ticks > t.task(),
        cpus: measured,
        threshold_steal_share: STEAL_THRESHOLD,
        threshold_foreign_cpu_share: FOREIGN_THRESHOLD,
        foreign_top: Vec::new(),
    }
}

/// A process across two scans: pid and start time.
type Key = (u32, u64);

/// Every process's CPU at one moment, split into ours and the rest.
struct Scan {
    /// utime + stime + cutime + cstime of each of our processes.
    ours: HashMap<Key, u64>,
    /// utime + stime of every other process.
    foreign: HashMap<Key, u64>,
}

impl Scan {
    fn take(root: u32) -> Scan {
        let table = ProcTable::scan();
        let ours: std::collections::HashSet<u32> = table.tree(root).into_iter().collect();
        let mut scan = Scan {
            ours: HashMap::new(),
            foreign: HashMap::new(),
        };
        for (&pid, st) in &table.stats {
            let key = (pid, st.starttime);
            if ours.contains(&pid) {
                scan.ours
                    .insert(key, st.utime + st.stime + st.cutime + st.cstime);
            } else {
                scan.foreign.insert(key, st.utime + st.stime);
            }
        }
        scan
    }
}

/// Ticks each process of `end` used since `start` (a process new in `end`
/// counts from zero: it started in the window).
fn grown(end: &HashMap<Key, u64>, start: &HashMap<Key, u64>) -> Vec<(Key, u64)> {
    end.iter()
        .map(|(k, &v)| (*k, v.saturating_sub(start.get(k).copied().unwrap_or(0))))
        .filter(|&(_, d)| d > 0)
        .collect()
}

/// The busiest `n` of `(process, ticks)`, named.
fn top(mut used: Vec<(Key, u64)>, n: usize) -> Vec<ForeignProcess> {
    used.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    used.into_iter()
        .take(n)
        .map(|((pid, _), ticks)| ForeignProcess {
            pid,
            name: std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .map_or_else(|_| "?".into(), |s| s.trim_end().to_string()),
            cpu_s: ticks as f64 / clock_ticks(),
        })
        .collect()
}

/// The readings at the window's start, to be finished at its end.
pub struct DisturbanceWatch {
    cpus: Vec<usize>,
    root: u32,
    machine: MachineCpu,
    scan: Scan,
    pub started: Instant,
}

impl DisturbanceWatch {
    /// Reads the machine and every process now. `cpus` are the measured
    /// CPUs (empty: all); our processes are `root` and its descendants.
    /// None where /proc/stat cannot be read.
    pub fn start(cpus: Vec<usize>, root: u32) -> Option<DisturbanceWatch> {
        let machine = MachineCpu::read()?;
        Some(DisturbanceWatch {
            cpus,
            root,
            scan: Scan::take(root),
            machine,
            started: Instant::now(),
        })
    }

    /// Reads again and assesses the window between the two readings.
    pub fn finish(self) -> Option<Disturbance> {
        let machine = MachineCpu::read()?;
        let scan = Scan::take(self.root);
        let own: u64 = grown(&scan.ours, &self.scan.ours)
            .iter()
            .map(|(_, d)| d)
            .sum();
        let mut d = assess(&machine.since(&self.machine), &self.cpus, own);
        d.foreign_top = top(grown(&scan.foreign, &self.scan.foreign), FOREIGN_TOP);
        Some(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(user: u64, system: u64, idle: u64, steal: u64) -> CpuTimes {
        CpuTimes {
            user,
            system,
            idle,
            steal,
            ..Default::default()
        }
    }

    fn machine(cpus: &[(usize, CpuTimes)]) -> MachineCpu {
        MachineCpu {
            cpus: cpus.iter().copied().collect(),
        }
    }

    #[test]
    fn shares_follow_steal_foreign_and_own_cpu() {
        // (case, window, measured cpus, own ticks, steal, foreign, disturbed, clamped)
        let quiet = cpu(50, 10, 40, 0);
        type Row = (
            &'static str,
            MachineCpu,
            &'static [usize],
            u64,
            f64,
            f64,
            bool,
            bool,
        );
        let rows: &[Row] = &[
            (
                "all ours, nothing else",
                machine(&[(0, quiet)]),
                &[0],
                60,
                0.0,
                0.0,
                false,
                false,
            ),
            (
                "steal only: 20 of 100 ticks",
                machine(&[(0, cpu(50, 10, 20, 20))]),
                &[0],
                60,
                0.2,
                0.0,
                true,
                false,
            ),
            (
                "steal under the threshold",
                machine(&[(0, cpu(50, 10, 36, 4))]),
                &[0],
                60,
                0.04,
                0.0,
                false,
                false,
            ),
            (
                "foreign only: 30 task ticks not ours",
                machine(&[(0, cpu(80, 10, 10, 0))]),
                &[0],
                60,
                0.0,
                0.3,
                true,
                false,
            ),
            (
                "own CPU larger than busy: clamped at 0",
                machine(&[(0, quiet)]),
                &[0],
                90,
                0.0,
                0.0,
                false,
                true,
            ),
            (
                "zero window",
                machine(&[(0, CpuTimes::default())]),
                &[0],
                0,
                0.0,
                0.0,
                false,
                false,
            ),
            (
                "only the measured CPUs count",
                machine(&[(0, quiet), (1, cpu(100, 0, 0, 0))]),
                &[0],
                60,
                0.0,
                0.0,
                false,
                false,
            ),
            (
                "no pin set: every CPU",
                machine(&[(0, quiet), (1, cpu(100, 0, 0, 0))]),
                &[],
                60,
                0.0,
                0.5,
                true,
                false,
            ),
        ];
        for (case, window, cpus, own, steal, foreign, disturbed, clamped) in rows {
            let d = assess(window, cpus, *own);
            assert!((d.steal_share - steal).abs() < 1e-9, "{case}: {d:?}");
            assert!(
                (d.foreign_cpu_share - foreign).abs() < 1e-9,
                "{case}: {d:?}"
            );
            assert_eq!(d.disturbed, *disturbed, "{case}: {d:?}");
            assert_eq!(d.own_cpu_outside, *clamped, "{case}: {d:?}");
            assert!(d.steal_share.is_finite() && d.foreign_cpu_share.is_finite());
        }
    }

    #[test]
    fn the_window_length_is_per_measured_cpu() {
        let w = machine(&[(0, cpu(0, 0, 200, 0)), (1, cpu(0, 0, 200, 0))]);
        let d = assess(&w, &[], 0);
        assert_eq!(d.cpus, vec![0, 1]);
        assert!((d.window_s - 200.0 / clock_ticks()).abs() < 1e-9, "{d:?}");
    }

    #[test]
    fn the_note_names_what_passed_its_threshold() {
        let mut d = assess(&machine(&[(0, cpu(50, 10, 22, 18))]), &[0], 60);
        assert_eq!(d.note().as_deref(), Some("disturbed: 18% steal"));
        d = assess(&machine(&[(0, cpu(80, 10, 10, 0))]), &[0], 60);
        d.foreign_top = vec![ForeignProcess {
            pid: 7,
            name: "cc1plus".into(),
            cpu_s: 0.3,
        }];
        assert_eq!(
            d.note().as_deref(),
            Some("disturbed: 30% foreign CPU (cc1plus)")
        );
        d = assess(&machine(&[(0, cpu(50, 10, 40, 0))]), &[0], 60);
        assert_eq!(d.note(), None);
    }

    #[test]
    fn processes_new_in_the_window_count_whole_and_the_busiest_come_first() {
        let start = HashMap::from([((1, 5), 100), ((2, 5), 10)]);
        let end = HashMap::from([((1, 5), 130), ((2, 5), 10), ((3, 9), 50), ((1, 6), 4)]);
        let mut g = grown(&end, &start);
        g.sort();
        // pid 1 reused with another start time is another process.
        assert_eq!(g, vec![((1, 5), 30), ((1, 6), 4), ((3, 9), 50)]);
        let t = top(g, 2);
        assert_eq!(t.iter().map(|p| p.pid).collect::<Vec<_>>(), vec![3, 1]);
    }

    #[test]
    fn a_watch_over_this_process_sees_its_own_cpu_as_ours() {
        let w = DisturbanceWatch::start(Vec::new(), std::process::id()).expect("/proc/stat");
        // Busy until this thread has had 200 ms of CPU (not of wall time:
        // the machine may be shared), 10 s at most.
        let thread_cpu_s = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: ts is a valid timespec to fill.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
        };
        let (from, deadline) = (
            thread_cpu_s(),
            Instant::now() + std::time::Duration::from_secs(10),
        );
        while thread_cpu_s() - from < 0.2 && Instant::now() < deadline {
            std::hint::black_box(0u64);
        }
        let d = w.finish().expect("/proc/stat");
        assert!(d.own_cpu_s >= 0.15, "200 ms of busy loop: {d:?}");
        assert!(
            !d.foreign_top.iter().any(|p| p.pid == std::process::id()),
            "{d:?}"
        );
    }
}
