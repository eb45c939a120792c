//! CPU accounting for a process tree whose members fork, exit and get
//! reaped between samples.
//!
//! The tree's CPU is the sum, over every process the tracker knows, of its
//! own time (utime + stime) plus the time of the children it has reaped
//! (cutime + cstime), each the largest value read for that process.
//!
//! When a process the tracker has seen disappears, two things can have
//! happened to its CPU:
//!
//! - A parent in the tree waited for it. The kernel then adds its final
//!   utime + stime, and its own cutime + cstime, to that parent's cutime +
//!   cstime. Its entry must be dropped, or those seconds count twice; the
//!   parent's counters now carry them, including the part of its last
//!   interval the sampler never saw.
//! - Nobody in the tree reaped it: its parent ignores SIGCHLD (auto-reap,
//!   which adds nothing to cutime), it had been reparented out of the tree,
//!   or it was the root. Its entry must stay, frozen at its last values.
//!
//! Which one happened is read from the counters: every rise in a tree
//! process's cutime + cstime is kept for a couple of samples as a credit,
//! and a vanished process is dropped (counted as reaped) only when credits
//! of its nearest surviving ancestor cover everything it was counted for.
//! The kernel's values only grow and what the parent receives is the
//! child's final value, so a true reap always covers it. A vanished process
//! no credit covers within [`GRACE_ROUNDS`] samples keeps its last values.
//!
//! Limits: a process that is not reaped inside the tree loses the CPU of
//! its last interval, and one that lives and dies between two samples
//! without a reaping parent in the tree is not seen at all. A process that
//! leaves the tree alive is frozen at its last values. When several
//! processes vanish under one parent in the same interval and only some
//! were waited for, credits are handed out oldest and closest first, which
//! can drop the wrong one: the error is an undercount of at most that
//! process's CPU, never a double count.

use std::collections::{HashMap, HashSet};

use super::procfs::{ProcTable, Stat};

/// Samples a vanished process waits for its parent's counters to show it
/// was reaped (the parent's stat may be read just before the reap).
pub(crate) const GRACE_ROUNDS: u64 = 2;

/// User and system CPU, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Ticks {
    pub user: u64,
    pub sys: u64,
}

impl Ticks {
    fn add(self, o: Ticks) -> Ticks {
        Ticks {
            user: self.user + o.user,
            sys: self.sys + o.sys,
        }
    }

    fn max(self, o: Ticks) -> Ticks {
        Ticks {
            user: self.user.max(o.user),
            sys: self.sys.max(o.sys),
        }
    }

    pub fn sum(self) -> u64 {
        self.user + self.sys
    }

    pub fn since(self, base: Ticks) -> Ticks {
        Ticks {
            user: self.user.saturating_sub(base.user),
            sys: self.sys.saturating_sub(base.sys),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    start: u64,
    ppid: u32,
    own: Ticks,
    reaped: Ticks,
    /// Alive but no longer in the tree: frozen.
    left: bool,
}

impl Seen {
    fn new(st: &Stat) -> Seen {
        Seen {
            start: st.starttime,
            ppid: st.ppid,
            own: Ticks {
                user: st.utime,
                sys: st.stime,
            },
            reaped: Ticks {
                user: st.cutime,
                sys: st.cstime,
            },
            left: false,
        }
    }

    /// Takes a newer read of the same process. Values only grow; max
    /// keeps that true even if a read raced with an update.
    fn merge(&mut self, st: &Stat) {
        let fresh = Seen::new(st);
        self.own = self.own.max(fresh.own);
        self.reaped = self.reaped.max(fresh.reaped);
        self.ppid = st.ppid;
    }

    fn total(&self) -> Ticks {
        self.own.add(self.reaped)
    }
}

#[derive(Debug)]
struct Vanished {
    pid: u32,
    seen: Seen,
    since: u64,
}

#[derive(Debug, Clone, Copy)]
struct Credit {
    round: u64,
    ticks: u64,
}

#[derive(Debug, Default)]
pub(crate) struct CpuTracker {
    live: HashMap<u32, Seen>,
    vanished: Vec<Vanished>,
    credits: HashMap<u32, Vec<Credit>>,
    /// Processes gone for good whose CPU stays counted.
    retired: Ticks,
    round: u64,
}

impl CpuTracker {
    /// Takes one sample: `scope` are the pids in the tree per `table`;
    /// `gone` those of them that vanished right after `table` was read.
    pub fn observe(&mut self, table: &ProcTable, scope: &[u32], gone: &HashSet<u32>) {
        self.round += 1;
        let round = self.round;
        let in_scope: HashSet<u32> = scope.iter().copied().collect();

        for &pid in scope {
            let Some(st) = table.stats.get(&pid) else {
                continue;
            };
            match self.live.get_mut(&pid) {
                Some(seen) if seen.start == st.starttime => {
                    let before = seen.reaped.sum();
                    seen.merge(st);
                    let gain = seen.reaped.sum() - before;
                    if gain > 0 && !seen.left {
                        self.credits
                            .entry(pid)
                            .or_default()
                            .push(Credit { round, ticks: gain });
                    }
                    seen.left = false;
                }
                found => {
                    if found.is_some() {
                        // The pid was reused: the old process is gone.
                        let old = self.live.remove(&pid).expect("just found");
                        self.vanish(pid, old, round);
                    }
                    // A process wrongly taken for gone comes back as it was.
                    let back = self
                        .vanished
                        .iter()
                        .position(|v| v.pid == pid && v.seen.start == st.starttime);
                    let seen = match back {
                        Some(i) => {
                            let mut seen = self.vanished.swap_remove(i).seen;
                            seen.merge(st);
                            seen
                        }
                        None => Seen::new(st),
                    };
                    self.live.insert(pid, seen);
                }
            }
        }

        let mut out = Vec::new();
        for (&pid, seen) in &mut self.live {
            if gone.contains(&pid) {
                out.push(pid);
            } else if !in_scope.contains(&pid) {
                match table.stats.get(&pid) {
                    Some(st) if st.starttime == seen.start => seen.left = true,
                    _ => out.push(pid),
                }
            }
        }
        for pid in out {
            let seen = self.live.remove(&pid).expect("listed above");
            if seen.left {
                self.retired = self.retired.add(seen.total());
            } else {
                self.vanish(pid, seen, round);
            }
        }

        self.settle(round);
    }

    fn vanish(&mut self, pid: u32, seen: Seen, since: u64) {
        self.vanished.push(Vanished { pid, seen, since });
    }

    /// The nearest ancestor still in the tree, and how many hops up it is,
    /// following last-seen ppids through processes that vanished too.
    fn reaper(&self, ppid: u32) -> Option<(u32, u32)> {
        let mut p = ppid;
        for hops in 1..=32 {
            if let Some(s) = self.live.get(&p) {
                return (!s.left).then_some((p, hops));
            }
            p = self.vanished.iter().find(|v| v.pid == p)?.seen.ppid;
        }
        None
    }

    fn settle(&mut self, round: u64) {
        let mut order: Vec<(u64, u32, usize, Option<u32>)> = self
            .vanished
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let r = self.reaper(v.seen.ppid);
                (v.since, r.map_or(u32::MAX, |r| r.1), i, r.map(|r| r.0))
            })
            .collect();
        order.sort_unstable();
        let mut done = vec![false; self.vanished.len()];
        for (since, _, i, reaper) in order {
            let v = &self.vanished[i];
            let need = v.seen.total().sum();
            if let Some(credits) = reaper.and_then(|r| self.credits.get_mut(&r)) {
                let usable = |c: &Credit| c.round >= since;
                let have: u64 = credits.iter().filter(|c| usable(c)).map(|c| c.ticks).sum();
                if have >= need {
                    // Reaped: the parent's counters carry this CPU now.
                    let mut left = need;
                    for c in credits.iter_mut().filter(|c| usable(c)) {
                        let take = c.ticks.min(left);
                        c.ticks -= take;
                        left -= take;
                    }
                    done[i] = true;
                    continue;
                }
            }
            if reaper.is_none() || round >= since + GRACE_ROUNDS {
                self.retired = self.retired.add(v.seen.total());
                done[i] = true;
            }
        }
        let mut i = 0;
        self.vanished.retain(|_| {
            i += 1;
            !done[i - 1]
        });
        let live = &self.live;
        self.credits.retain(|pid, credits| {
            credits.retain(|c| c.ticks > 0 && c.round + GRACE_ROUNDS > round);
            !credits.is_empty() && live.contains_key(pid)
        });
    }

    /// The tree's CPU so far, in ticks.
    pub fn total(&self) -> Ticks {
        let live = self.live.values().map(Seen::total);
        let vanished = self.vanished.iter().map(|v| v.seen.total());
        live.chain(vanished).fold(self.retired, Ticks::add)
    }

    /// Processes held (for tests: memory must stay flat). Credits are
    /// held only for live ones, and for a few samples.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.live.len() + self.vanished.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (pid, ppid, start, utime, cutime): system time mirrors user time at
    /// a tenth, so both components are exercised.
    type Row = (u32, u32, u64, u64, u64);

    struct Sim {
        t: CpuTracker,
    }

    impl Sim {
        fn new() -> Sim {
            Sim {
                t: CpuTracker::default(),
            }
        }

        /// One sample. `rows` are every process on the machine; the tree is
        /// rooted at pid 1; `gone` vanished right after the scan.
        fn step(&mut self, rows: &[Row], gone: &[u32]) -> u64 {
            let stats = rows
                .iter()
                .map(|&(pid, ppid, start, u, cu)| {
                    let st = Stat {
                        ppid,
                        state: 'S',
                        utime: u,
                        stime: u / 10,
                        cutime: cu,
                        cstime: cu / 10,
                        starttime: start,
                    };
                    (pid, st)
                })
                .collect();
            let table = ProcTable::from_stats(stats);
            let scope = table.tree(1);
            self.t
                .observe(&table, &scope, &gone.iter().copied().collect());
            self.t.total().user
        }
    }

    #[test]
    fn a_reaped_worker_counts_once_with_its_last_interval() {
        let mut s = Sim::new();
        assert_eq!(s.step(&[(1, 0, 1, 10, 0), (2, 1, 5, 50, 0)], &[]), 60);
        // The worker ran to 70 ticks, exited and was reaped by pid 1.
        assert_eq!(s.step(&[(1, 0, 1, 10, 70)], &[]), 80);
        assert_eq!(s.step(&[(1, 0, 1, 10, 70)], &[]), 80);
        assert_eq!(s.t.held(), 1);
    }

    #[test]
    fn a_reap_seen_one_sample_late_is_not_double_counted() {
        let mut s = Sim::new();
        s.step(&[(1, 0, 1, 10, 0), (2, 1, 5, 50, 0)], &[]);
        // The parent was read before the reap, the worker after it.
        assert_eq!(s.step(&[(1, 0, 1, 10, 0)], &[]), 60);
        assert_eq!(s.step(&[(1, 0, 1, 10, 55)], &[]), 65);
        assert_eq!(s.step(&[(1, 0, 1, 10, 55)], &[]), 65);
    }

    #[test]
    fn a_worker_gone_right_after_the_scan_keeps_its_read() {
        let mut s = Sim::new();
        s.step(&[(1, 0, 1, 10, 0), (2, 1, 5, 50, 0)], &[]);
        assert_eq!(s.step(&[(1, 0, 1, 10, 0), (2, 1, 5, 52, 0)], &[2]), 62);
        assert_eq!(s.step(&[(1, 0, 1, 10, 53)], &[]), 63);
    }

    #[test]
    fn a_worker_nobody_reaps_keeps_its_last_sample() {
        let mut s = Sim::new();
        s.step(&[(1, 0, 1, 10, 0), (2, 1, 5, 50, 0)], &[]);
        for _ in 0..GRACE_ROUNDS + 1 {
            assert_eq!(s.step(&[(1, 0, 1, 10, 0)], &[]), 60);
        }
        // A later reap of an unseen child does not undo it.
        assert_eq!(s.step(&[(1, 0, 1, 10, 30)], &[]), 90);
        assert_eq!(s.t.held(), 1);
    }

    #[test]
    fn short_lived_children_count_through_the_parent() {
        let mut s = Sim::new();
        let mut cu = 0;
        for _ in 0..10 {
            cu += 7;
            s.step(&[(1, 0, 1, 10, cu)], &[]);
        }
        assert_eq!(s.t.total().user, 80);
        assert_eq!(s.t.total().sys, 1 + 7);
    }

    #[test]
    fn a_worker_and_its_child_dying_together_count_once() {
        let mut s = Sim::new();
        s.step(&[(1, 0, 1, 10, 0), (2, 1, 5, 20, 0), (3, 2, 6, 30, 0)], &[]);
        // 3 ended at 35 and was reaped by 2, which ended at 25: 1 gets 60.
        assert_eq!(s.step(&[(1, 0, 1, 10, 60)], &[]), 70);
        assert_eq!(s.step(&[(1, 0, 1, 10, 60)], &[]), 70);
        assert_eq!(s.t.held(), 1);
    }

    #[test]
    fn a_process_that_leaves_the_tree_is_frozen() {
        let mut s = Sim::new();
        s.step(&[(1, 0, 1, 10, 0), (2, 1, 5, 20, 0)], &[]);
        // Reparented to pid 99, outside the tree, and still burning.
        assert_eq!(s.step(&[(1, 0, 1, 10, 0), (2, 99, 5, 90, 0)], &[]), 30);
        assert_eq!(s.step(&[(1, 0, 1, 10, 0)], &[]), 30);
        assert_eq!(s.t.held(), 1);
    }

    #[test]
    fn a_reused_pid_is_a_new_process() {
        let mut s = Sim::new();
        s.step(&[(1, 0, 1, 10, 0), (2, 1, 5, 50, 0)], &[]);
        // Worker reaped (60), and its pid reused by a new one at 3 ticks.
        assert_eq!(s.step(&[(1, 0, 1, 10, 60), (2, 1, 9, 3, 0)], &[]), 73);
    }

    #[test]
    fn the_root_dying_keeps_everything() {
        let mut s = Sim::new();
        s.step(&[(1, 0, 1, 10, 40), (2, 1, 5, 50, 0)], &[]);
        assert_eq!(s.step(&[], &[]), 100);
        for _ in 0..3 {
            assert_eq!(s.step(&[], &[]), 100);
        }
        assert_eq!(s.t.held(), 0);
    }

    #[test]
    fn churn_keeps_memory_flat() {
        let mut s = Sim::new();
        let mut cu = 0;
        for i in 0..1000u32 {
            let pid = 100 + i;
            s.step(&[(1, 0, 1, 0, cu), (pid, 1, pid as u64, 5, 0)], &[]);
            cu += 6;
        }
        s.step(&[(1, 0, 1, 0, cu)], &[]);
        assert_eq!(s.t.total().user, cu);
        assert!(s.t.held() <= 2, "{}", s.t.held());
    }
}
