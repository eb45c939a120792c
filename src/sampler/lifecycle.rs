//! Which processes left the server's tree while it was sampled, which
//! came in, and which were stopped: what a worker's death, its
//! replacement and a hung worker look like from /proc (issue 36).
//!
//! rackbench is not the parent of a server's workers (the master is), so
//! it can never wait for one. What it can see is the tree changing between
//! two samples: a process (pid and start time, so a reused pid is a new
//! process) present in one sample and absent, or a zombie, in the next has
//! *departed*; one that first appears after the first sample has
//! *arrived*; one whose state reads `T` (SIGSTOP) or `t` (traced) is
//! *stopped*. The times are the samples' (milliseconds since the sampler
//! started), so each is known to within one sample interval: a departure
//! lies between `last_seen_ms` and `missed_ms`.
//!
//! Why a process departed (its signal or exit status) is not in /proc once
//! it is gone: the lab asks the kernel's exit events for that
//! (`sampler::exits`) and says "unknown" when it cannot.
//!
//! It never reads /proc beyond `cmdline` (once per process): the sampler
//! hands it each sample's stat lines. Bounded: at most [`EVENTS_CAP`]
//! departures, arrivals and stops are kept, the first ones.

use super::procfs::{ProcTable, Stat};
use std::collections::HashMap;
use std::time::Instant;

/// The most departures (and, apart, arrivals and stops) one sampler keeps:
/// a server that replaces its workers all the time fills it within a soak;
/// the count past it is kept.
pub const EVENTS_CAP: usize = 1024;

/// A process: its pid and its start time since boot.
type Key = (u32, u64);

/// A process that left the tree (or turned zombie) between two samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Departure {
    pub pid: u32,
    pub ppid: u32,
    /// The top of its tree (the server's root, or an adopted process).
    pub top: u32,
    /// Whether it was itself a top.
    pub was_top: bool,
    /// Its command line when first seen (NULs as spaces), at most 120
    /// bytes.
    pub cmdline: String,
    /// The last sample that saw it alive, and the first that did not.
    pub last_seen_ms: u64,
    pub missed_ms: u64,
    /// When it was first seen.
    pub first_seen_ms: u64,
}

/// A process first seen after the sampler's first sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrival {
    pub pid: u32,
    pub ppid: u32,
    pub cmdline: String,
    pub first_seen_ms: u64,
}

/// A process seen stopped (state `T` or `t`) in one sample or more.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    pub pid: u32,
    pub cmdline: String,
    /// The first sample that saw it stopped.
    pub from_ms: u64,
    /// The first sample that saw it running again (or gone); None when it
    /// was still stopped at the last sample.
    pub until_ms: Option<u64>,
    /// Whether it was a top of the tree.
    pub was_top: bool,
}

/// What the sampler saw come and go (see the module doc).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lifecycle {
    pub departures: Vec<Departure>,
    pub arrivals: Vec<Arrival>,
    pub stops: Vec<Stop>,
    /// The tops alive at the last sample: a departure whose top is among
    /// them left a server that went on.
    pub tops_alive: Vec<u32>,
    /// Departures, arrivals and stops left out past [`EVENTS_CAP`].
    pub dropped: u64,
    /// The instant every `_ms` here counts from (the sampler's start).
    pub origin: Option<Instant>,
    /// Whether the tree is Passenger's (a process titled `Passenger ...`
    /// was seen): its workers are then told by their titles, not by
    /// their place in the tree.
    pub passenger: bool,
}

#[derive(Debug)]
struct Life {
    pid: u32,
    ppid: u32,
    top: u32,
    was_top: bool,
    cmdline: String,
    first_seen_ms: u64,
    last_seen_ms: u64,
    /// Index into `stops` while it is stopped.
    stopped: Option<usize>,
}

/// Follows the tree from sample to sample.
#[derive(Debug, Default)]
pub(crate) struct LifecycleTracker {
    alive: HashMap<Key, Life>,
    seen: Lifecycle,
    sampled: bool,
}

impl LifecycleTracker {
    /// One sample at `t_ms`: `trees` as the scope found them (each top
    /// first), their stat lines in `table`. `cmdline` reads a new
    /// process's command line.
    pub fn observe(
        &mut self,
        t_ms: u64,
        table: &ProcTable,
        trees: &[Vec<u32>],
        mut cmdline: impl FnMut(u32) -> String,
    ) {
        let mut now: HashMap<Key, (u32, &Stat, u32)> = HashMap::new();
        for members in trees {
            for &pid in members {
                let Some(st) = table.stats.get(&pid) else {
                    continue;
                };
                // A zombie has exited: only its parent's wait is left.
                if st.state != 'Z' {
                    now.insert((pid, st.starttime), (pid, st, members[0]));
                }
            }
        }
        let gone: Vec<Key> = (self.alive.keys())
            .filter(|k| !now.contains_key(k))
            .copied()
            .collect();
        for key in gone {
            let life = self.alive.remove(&key).expect("listed");
            if let Some(i) = life.stopped {
                self.seen.stops[i].until_ms = Some(t_ms);
            }
            let d = Departure {
                pid: life.pid,
                ppid: life.ppid,
                top: life.top,
                was_top: life.was_top,
                cmdline: life.cmdline,
                last_seen_ms: life.last_seen_ms,
                missed_ms: t_ms,
                first_seen_ms: life.first_seen_ms,
            };
            push_capped(&mut self.seen.departures, d, &mut self.seen.dropped);
        }
        for (key, (pid, st, top)) in now {
            let life = self.alive.entry(key).or_insert_with(|| {
                let cmdline = cmdline(pid);
                if self.sampled {
                    let a = Arrival {
                        pid,
                        ppid: st.ppid,
                        cmdline: cmdline.clone(),
                        first_seen_ms: t_ms,
                    };
                    push_capped(&mut self.seen.arrivals, a, &mut self.seen.dropped);
                }
                Life {
                    pid,
                    ppid: st.ppid,
                    top,
                    was_top: pid == top,
                    cmdline,
                    first_seen_ms: t_ms,
                    last_seen_ms: t_ms,
                    stopped: None,
                }
            });
            life.last_seen_ms = t_ms;
            let stopped = matches!(st.state, 'T' | 't');
            match (stopped, life.stopped) {
                (true, None) => {
                    let s = Stop {
                        pid,
                        cmdline: life.cmdline.clone(),
                        from_ms: t_ms,
                        until_ms: None,
                        was_top: life.was_top,
                    };
                    if push_capped(&mut self.seen.stops, s, &mut self.seen.dropped) {
                        life.stopped = Some(self.seen.stops.len() - 1);
                    }
                }
                (false, Some(i)) => {
                    self.seen.stops[i].until_ms = Some(t_ms);
                    life.stopped = None;
                }
                _ => {}
            }
        }
        self.sampled = true;
    }

    /// What was seen, with the tops alive now.
    pub fn report(&self) -> Lifecycle {
        let mut tops: Vec<u32> = (self.alive.values())
            .filter(|l| l.was_top)
            .map(|l| l.pid)
            .collect();
        tops.sort_unstable();
        let mut seen = self.seen.clone();
        seen.tops_alive = tops;
        let passenger = |c: &str| c.starts_with("Passenger");
        seen.passenger = self.alive.values().any(|l| passenger(&l.cmdline))
            || seen.departures.iter().any(|d| passenger(&d.cmdline));
        seen.departures.sort_by_key(|d| (d.missed_ms, d.pid));
        seen.arrivals.sort_by_key(|a| (a.first_seen_ms, a.pid));
        seen
    }
}

/// Pushes `item` unless `v` is full (then counts it); whether it was kept.
fn push_capped<T>(v: &mut Vec<T>, item: T, dropped: &mut u64) -> bool {
    if v.len() < EVENTS_CAP {
        v.push(item);
        true
    } else {
        *dropped += 1;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(ppid: u32, state: char, starttime: u64) -> Stat {
        Stat {
            ppid,
            state,
            starttime,
            ..Stat::default()
        }
    }

    /// One sample of a master (pid 10) and its workers, each `(pid,
    /// state, start time)`.
    fn sample(t: &mut LifecycleTracker, t_ms: u64, workers: &[(u32, char, u64)]) {
        let mut stats = HashMap::from([(10, stat(1, 'S', 5))]);
        for &(pid, state, start) in workers {
            stats.insert(pid, stat(10, state, start));
        }
        let table = ProcTable::from_stats(stats);
        let tree = table.tree(10);
        t.observe(t_ms, &table, &[tree], |pid| format!("worker {pid}"));
    }

    /// A worker killed and replaced: one departure between the samples
    /// around it, one arrival after (none for the first sample's
    /// processes), the master still alive.
    #[test]
    fn a_worker_that_leaves_is_a_departure_and_its_successor_an_arrival() {
        let mut t = LifecycleTracker::default();
        sample(&mut t, 0, &[(11, 'S', 6), (12, 'S', 6)]);
        sample(&mut t, 200, &[(11, 'S', 6), (12, 'S', 6)]);
        sample(&mut t, 400, &[(12, 'S', 6)]);
        sample(&mut t, 600, &[(12, 'R', 6), (13, 'S', 70)]);
        let seen = t.report();
        assert_eq!(seen.departures.len(), 1, "{seen:?}");
        let d = &seen.departures[0];
        assert_eq!((d.pid, d.ppid, d.top, d.was_top), (11, 10, 10, false));
        assert_eq!(
            (d.last_seen_ms, d.missed_ms, d.first_seen_ms),
            (200, 400, 0)
        );
        assert_eq!(d.cmdline, "worker 11");
        let a: Vec<(u32, u64)> = seen
            .arrivals
            .iter()
            .map(|a| (a.pid, a.first_seen_ms))
            .collect();
        assert_eq!(a, vec![(13, 600)]);
        assert_eq!(seen.tops_alive, vec![10]);
        assert!(seen.stops.is_empty());
    }

    /// (case, samples of worker 11 as state or gone, departures, stops as
    /// (from, until))
    #[test]
    fn zombies_have_departed_reused_pids_are_new_and_stops_have_a_span() {
        type Row = (
            &'static str,
            Vec<Option<(char, u64)>>,
            usize,
            Vec<(u64, Option<u64>)>,
        );
        let rows: Vec<Row> = vec![
            ("alive throughout", vec![Some(('S', 6)); 3], 0, vec![]),
            (
                "a zombie is gone",
                vec![Some(('S', 6)), Some(('Z', 6))],
                1,
                vec![],
            ),
            (
                "a pid reused by a new process",
                vec![Some(('S', 6)), Some(('S', 90))],
                1,
                vec![],
            ),
            (
                "stopped, then continued",
                vec![
                    Some(('S', 6)),
                    Some(('T', 6)),
                    Some(('T', 6)),
                    Some(('S', 6)),
                ],
                0,
                vec![(200, Some(600))],
            ),
            (
                "stopped at the end",
                vec![Some(('S', 6)), Some(('t', 6))],
                0,
                vec![(200, None)],
            ),
            (
                "stopped, then killed",
                vec![Some(('T', 6)), None],
                1,
                vec![(0, Some(200))],
            ),
        ];
        for (case, states, departures, stops) in rows {
            let mut t = LifecycleTracker::default();
            for (i, s) in states.iter().enumerate() {
                let w: Vec<(u32, char, u64)> =
                    s.iter().map(|&(st, start)| (11, st, start)).collect();
                sample(&mut t, i as u64 * 200, &w);
            }
            let seen = t.report();
            assert_eq!(seen.departures.len(), departures, "{case}: {seen:?}");
            let got: Vec<(u64, Option<u64>)> =
                seen.stops.iter().map(|s| (s.from_ms, s.until_ms)).collect();
            assert_eq!(got, stops, "{case}");
        }
    }

    #[test]
    fn departures_past_the_cap_are_counted_not_kept() {
        let mut t = LifecycleTracker::default();
        for i in 0..(EVENTS_CAP as u64 + 5) {
            sample(&mut t, i * 2, &[(11, 'S', 1000 + i)]);
            sample(&mut t, i * 2 + 1, &[]);
        }
        let seen = t.report();
        assert_eq!(seen.departures.len(), EVENTS_CAP);
        assert!(seen.dropped >= 5, "{}", seen.dropped);
    }
}
