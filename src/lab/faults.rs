//! Faults the trial's record must count (issue 36): a worker that died
//! while its server went on, and a worker that stopped answering because
//! it was stopped (SIGSTOP). A fault is a finding about the server, not a
//! disturbance of the machine: every report marks a trial with one.
//!
//! Both are read from what the sampler saw of the server's tree from
//! sample to sample (`sampler::Lifecycle`): a worker is a process that is
//! not a top of the tree and is either a direct child of one (puma's,
//! unicorn's and most masters' workers) or, in Passenger's tree, an app
//! process (`Passenger RubyApp: ...`; its agents are not workers). One
//! that left the tree while its top lived on died; the first worker that
//! came in after it under the same parent replaced it. The cause (signal
//! or exit status) comes from the kernel's exit event for its pid
//! (`sampler::ExitWatch`, root only); without one it is "unknown", never
//! guessed. A death's time is the exit event's, or else the first sample
//! that missed it (at most one sample interval late); a replacement's
//! delay runs to the first sample that saw the new pid.
//!
//! Workers a restart under load replaced (`--restart`, its `pids_before`)
//! are the restart's, not faults. A server whose top died is the
//! record's `server_exit`, not a worker death. Starts, stops and signals
//! nothing.

use crate::load::report::TimelineRow;
use crate::sampler::{Departure, Exit, ExitCause, Lifecycle};
use serde::{Deserialize, Serialize};

/// The record's `faults`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Faults {
    /// Workers that died while their server went on.
    pub worker_deaths: Vec<WorkerDeath>,
    /// Workers seen stopped (SIGSTOP, or a debugger): they answered
    /// nothing until continued.
    pub hung_workers: Vec<HungWorker>,
}

/// One worker's death: `faults.worker_deaths[]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkerDeath {
    pub pid: u32,
    /// The signal that killed it; null when it exited, or the cause is
    /// unknown.
    pub signal: Option<i32>,
    /// Its exit status when it exited; null when a signal killed it, or
    /// the cause is unknown.
    pub exit_status: Option<i32>,
    /// Seconds from the counted window's start (negative in the warm-up).
    pub at_s: f64,
    /// The worker that took its place; null when none came.
    pub replaced_by: Option<u32>,
    /// From the death to the first sample that saw the replacement.
    pub replaced_after_ms: Option<u64>,
    /// Connections reset in the second it died in and the next.
    pub connections_reset: u64,
    /// Its command line (its title: "puma: cluster worker 0: ...").
    pub cmdline: String,
}

/// One worker seen stopped: `faults.hung_workers[]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HungWorker {
    pub pid: u32,
    /// The first sample that saw it stopped, seconds from the counted
    /// window's start.
    pub from_s: f64,
    /// Until the first sample that saw it running again (or gone); null
    /// when it was still stopped when the load ended.
    pub for_s: Option<f64>,
    pub cmdline: String,
}

/// What the faults are read from.
pub(super) struct Sources<'a> {
    pub(super) lifecycle: &'a Lifecycle,
    /// The kernel's exit events (empty when it gave none).
    pub(super) exits: &'a [Exit],
    /// The counted window's start on the sampler's clock (ms since it
    /// started); None when the window never opened.
    pub(super) window_ms: Option<u64>,
    pub(super) timeline: &'a [TimelineRow],
    pub(super) warmup_s: f64,
    /// Pids a restart under load replaced on purpose.
    pub(super) deliberate: &'a [u32],
}

const PASSENGER_APP: &str = "Passenger RubyApp";

/// Whether a process that came or went was a worker (see the module
/// doc); in Passenger's tree only its app processes are (not its agents,
/// nor the `tail` its front runs).
fn is_worker(passenger: bool, was_top: bool, ppid: u32, top: Option<u32>, cmdline: &str) -> bool {
    if passenger || cmdline.starts_with("Passenger") {
        return cmdline.starts_with(PASSENGER_APP);
    }
    !was_top && top.is_none_or(|t| t == ppid)
}

impl Faults {
    pub(super) fn of(s: &Sources) -> Faults {
        let origin = s.window_ms.unwrap_or(0);
        let pg = s.lifecycle.passenger;
        let secs = |ms: u64| round3((ms as f64 - origin as f64) / 1000.0);
        let mut claimed: Vec<u32> = Vec::new();
        let mut worker_deaths = Vec::new();
        for d in &s.lifecycle.departures {
            let alive = s.lifecycle.tops_alive.contains(&d.top);
            if !alive
                || !is_worker(pg, d.was_top, d.ppid, Some(d.top), &d.cmdline)
                || s.deliberate.contains(&d.pid)
            {
                continue;
            }
            let exit = s.exits.iter().find(|e| e.pid == d.pid && e.ppid == d.ppid);
            // The death on the sampler's clock.
            let died_ms = match (exit, s.lifecycle.origin) {
                (Some(e), Some(o)) => e.at.saturating_duration_since(o).as_millis() as u64,
                _ => d.missed_ms,
            };
            let replacement = replacement(s.lifecycle, d, &claimed);
            claimed.extend(replacement.map(|a| a.0));
            let at_s = secs(died_ms);
            worker_deaths.push(WorkerDeath {
                pid: d.pid,
                signal: exit.and_then(|e| match e.cause {
                    ExitCause::Signal(n) => Some(n),
                    ExitCause::Status(_) => None,
                }),
                exit_status: exit.and_then(|e| match e.cause {
                    ExitCause::Status(n) => Some(n),
                    ExitCause::Signal(_) => None,
                }),
                at_s,
                replaced_by: replacement.map(|a| a.0),
                replaced_after_ms: replacement.map(|a| a.1.saturating_sub(died_ms)),
                connections_reset: resets_around(s.timeline, s.warmup_s + at_s),
                cmdline: d.cmdline.clone(),
            });
        }
        let hung_workers = (s.lifecycle.stops.iter())
            .filter(|h| is_worker(pg, h.was_top, 0, None, &h.cmdline))
            .map(|h| HungWorker {
                pid: h.pid,
                from_s: secs(h.from_ms),
                for_s: h
                    .until_ms
                    .map(|u| round3(u.saturating_sub(h.from_ms) as f64 / 1000.0)),
                cmdline: h.cmdline.clone(),
            })
            .collect();
        Faults {
            worker_deaths,
            hung_workers,
        }
    }

    /// Whether there is any fault.
    pub fn any(&self) -> bool {
        !self.worker_deaths.is_empty() || !self.hung_workers.is_empty()
    }

    /// Each fault in a sentence, for the terminal and a trial's notes:
    /// "worker 4242 died at 2.1 s (signal 9); the master replaced it in
    /// 0.8 s (pid 4250); 5 connections reset".
    pub fn sentences(&self) -> Vec<String> {
        let deaths = self.worker_deaths.iter().map(|d| {
            let replaced = match (d.replaced_by, d.replaced_after_ms) {
                (Some(p), Some(ms)) => {
                    format!("the master replaced it in {} (pid {p})", secs_words(ms))
                }
                _ => "nothing replaced it".into(),
            };
            format!(
                "worker {} died at {:.1} s ({}); {replaced}; {} connection{} reset",
                d.pid,
                d.at_s,
                cause_words(d.signal, d.exit_status),
                d.connections_reset,
                if d.connections_reset == 1 { "" } else { "s" }
            )
        });
        let hung = self.hung_workers.iter().map(|h| {
            format!(
                "worker {} was stopped (SIGSTOP, or a debugger) at {:.1} s {}: it answered nothing meanwhile",
                h.pid,
                h.from_s,
                h.for_s.map_or("until the end of the load".into(), |s| format!(
                    "for {}",
                    secs_words((s * 1000.0) as u64)
                ))
            )
        });
        deaths.chain(hung).collect()
    }

    /// The faults in a few words, for a report's row: "1 worker died
    /// (signal 9)", "1 worker hung"; None without one.
    pub fn note(&self) -> Option<String> {
        let mut parts = Vec::new();
        let n = self.worker_deaths.len();
        if n > 0 {
            let mut causes: Vec<String> = (self.worker_deaths.iter())
                .map(|d| cause_words(d.signal, d.exit_status))
                .collect();
            causes.sort();
            causes.dedup();
            parts.push(format!(
                "{n} worker{} died ({})",
                if n == 1 { "" } else { "s" },
                causes.join(", ")
            ));
        }
        let h = self.hung_workers.len();
        if h > 0 {
            parts.push(format!("{h} worker{} hung", if h == 1 { "" } else { "s" }));
        }
        (!parts.is_empty()).then(|| format!("fault: {}", parts.join(", ")))
    }

    /// The load's warning that connections never got an answer blames too
    /// few workers or a full backlog; after a worker death it was the
    /// death: the warning says so instead.
    pub(super) fn explain_unanswered(&self, warnings: &mut [String], never_answered: u64) {
        let Some(d) = self.worker_deaths.first() else {
            return;
        };
        for w in warnings.iter_mut() {
            if w.contains("never got a single answer") {
                *w = format!(
                    "{never_answered} connection(s) carried requests but never got a single answer: \
                     worker {} died at {:.1} s ({}) holding them",
                    d.pid,
                    d.at_s,
                    cause_words(d.signal, d.exit_status)
                );
            }
        }
    }
}

/// The first worker that came in under the dead one's parent after it
/// was last seen, not already another's replacement: its pid and first
/// sample.
fn replacement(seen: &Lifecycle, d: &Departure, claimed: &[u32]) -> Option<(u32, u64)> {
    seen.arrivals
        .iter()
        .find(|a| {
            a.ppid == d.ppid
                && a.first_seen_ms > d.last_seen_ms
                && !claimed.contains(&a.pid)
                && is_worker(seen.passenger, false, a.ppid, None, &a.cmdline)
        })
        .map(|a| (a.pid, a.first_seen_ms))
}

/// Connections reset in the timeline's second `at` (seconds since the
/// load's start) falls in, and the next.
fn resets_around(timeline: &[TimelineRow], at: f64) -> u64 {
    let from = at.floor().max(0.0) as u64;
    timeline
        .iter()
        .filter(|r| r.t_s == from || r.t_s == from + 1)
        .filter_map(|r| r.error_kinds.as_ref())
        .map(|k| k.reset)
        .sum()
}

/// "signal 9", "exit status 1", "cause unknown".
fn cause_words(signal: Option<i32>, exit_status: Option<i32>) -> String {
    match (signal, exit_status) {
        (Some(s), _) => format!("signal {s}"),
        (None, Some(c)) => format!("exit status {c}"),
        (None, None) => "cause unknown".into(),
    }
}

/// "0.8 s", "12 ms".
fn secs_words(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::{Arrival, Stop};
    use std::time::{Duration, Instant};

    fn departure(
        pid: u32,
        ppid: u32,
        top: u32,
        cmdline: &str,
        last: u64,
        missed: u64,
    ) -> Departure {
        Departure {
            pid,
            ppid,
            top,
            was_top: pid == top,
            cmdline: cmdline.into(),
            last_seen_ms: last,
            missed_ms: missed,
            first_seen_ms: 0,
        }
    }

    fn arrival(pid: u32, ppid: u32, cmdline: &str, at: u64) -> Arrival {
        Arrival {
            pid,
            ppid,
            cmdline: cmdline.into(),
            first_seen_ms: at,
        }
    }

    fn row(t_s: u64, reset: u64) -> TimelineRow {
        TimelineRow {
            t_s,
            ok: 10,
            errors: reset,
            p50_us: 1,
            p99_us: 2,
            rps: 10.0,
            warmup: false,
            span_s: 1.0,
            error_kinds: (reset > 0).then(|| crate::load::ErrorCounts {
                reset,
                ..Default::default()
            }),
            status_5xx: 0,
        }
    }

    /// puma's worker killed 2.1 s into the window (1 s warm-up; window at
    /// 1000 ms on the sampler's clock), replaced 0.8 s later; its exit
    /// event says signal 9.
    #[test]
    fn a_killed_worker_is_a_death_with_its_signal_replacement_and_resets() {
        let lifecycle = Lifecycle {
            departures: vec![departure(
                11,
                10,
                10,
                "puma: cluster worker 0: 10",
                3000,
                3200,
            )],
            arrivals: vec![
                arrival(99, 1, "sh -c true", 3300),
                arrival(13, 10, "puma: cluster worker 0: 10", 3900),
            ],
            tops_alive: vec![10],
            origin: Some(Instant::now()),
            ..Default::default()
        };
        let w = lifecycle.origin.unwrap();
        let exits = [Exit {
            pid: 11,
            ppid: 10,
            at: w + Duration::from_millis(3100),
            cause: ExitCause::Signal(9),
        }];
        let timeline = [row(2, 0), row(3, 4), row(4, 1), row(5, 7)];
        let s = Sources {
            lifecycle: &lifecycle,
            exits: &exits,
            window_ms: Some(1000),
            timeline: &timeline,
            warmup_s: 1.0,
            deliberate: &[],
        };
        let f = Faults::of(&s);
        let want = WorkerDeath {
            pid: 11,
            signal: Some(9),
            exit_status: None,
            at_s: 2.1,
            replaced_by: Some(13),
            replaced_after_ms: Some(800),
            connections_reset: 5,
            cmdline: "puma: cluster worker 0: 10".into(),
        };
        assert_eq!(f.worker_deaths, vec![want]);
        assert_eq!(
            f.sentences(),
            vec![
                "worker 11 died at 2.1 s (signal 9); the master replaced it in 800 ms (pid 13); 5 connections reset"
            ]
        );
        assert_eq!(f.note().as_deref(), Some("fault: 1 worker died (signal 9)"));
        let mut warnings = vec![
            "a load thread was busy".to_string(),
            "2 connection(s) carried requests but never got a single answer: the server may not be accepting them (too few workers for the connections, or a full backlog)".to_string(),
        ];
        f.explain_unanswered(&mut warnings, 2);
        assert!(
            warnings[1].contains("worker 11 died at 2.1 s (signal 9)"),
            "{warnings:?}"
        );
        assert!(!warnings[1].contains("too few workers"), "{warnings:?}");
        assert_eq!(warnings[0], "a load thread was busy");
    }

    /// (case, departures, tops alive, deliberate pids, exits, deaths as
    /// (pid, signal, exit status, at_s))
    #[test]
    fn only_workers_of_a_server_that_lived_on_count_with_their_cause_or_unknown() {
        type Death = (u32, Option<i32>, Option<i32>, f64);
        type Row = (
            &'static str,
            Vec<Departure>,
            Vec<u32>,
            Vec<u32>,
            Vec<(u32, ExitCause)>,
            Vec<Death>,
        );
        let w = |pid| departure(pid, 10, 10, "unicorn worker[0]", 1800, 2000);
        let rows: Vec<Row> = vec![
            (
                "no exit event: cause unknown, time of the first sample without it",
                vec![w(11)],
                vec![10],
                vec![],
                vec![],
                vec![(11, None, None, 1.0)],
            ),
            (
                "an exit status",
                vec![w(11)],
                vec![10],
                vec![],
                vec![(11, ExitCause::Status(1))],
                vec![(11, None, Some(1), 1.0)],
            ),
            (
                "the master died too: the server's exit, not a worker's",
                vec![w(11)],
                vec![],
                vec![],
                vec![],
                vec![],
            ),
            (
                "a restart replaced it",
                vec![w(11)],
                vec![10],
                vec![11],
                vec![],
                vec![],
            ),
            (
                "a grandchild is no worker",
                vec![departure(12, 11, 10, "sh -c x", 1800, 2000)],
                vec![10],
                vec![],
                vec![],
                vec![],
            ),
            (
                "the top itself",
                vec![departure(10, 1, 10, "thin", 1800, 2000)],
                vec![10],
                vec![],
                vec![],
                vec![],
            ),
            (
                "a passenger app process under its preloader",
                vec![departure(21, 20, 5, "Passenger RubyApp: /app", 1800, 2000)],
                vec![5],
                vec![],
                vec![],
                vec![(21, None, None, 1.0)],
            ),
            (
                "a passenger agent is no worker",
                vec![departure(6, 5, 5, "Passenger core", 1800, 2000)],
                vec![5],
                vec![],
                vec![],
                vec![],
            ),
            (
                "nor, in passenger's tree, the tail its front runs",
                vec![
                    departure(7, 5, 5, "tail -f -n 0 passenger.log", 1800, 2000),
                    departure(8, 7, 5, "Passenger RubyApp: /app", 1800, 2000),
                ],
                vec![5],
                vec![],
                vec![],
                vec![(8, None, None, 1.0)],
            ),
        ];
        for (case, departures, tops_alive, deliberate, exits, want) in rows {
            let got = deaths(departures, tops_alive, &deliberate, exits);
            assert_eq!(got, want, "{case}");
        }
    }

    /// The deaths `Faults::of` finds, as (pid, signal, exit status, at_s),
    /// in a window opened 1000 ms into the sampling.
    fn deaths(
        departures: Vec<Departure>,
        tops_alive: Vec<u32>,
        deliberate: &[u32],
        exits: Vec<(u32, ExitCause)>,
    ) -> Vec<(u32, Option<i32>, Option<i32>, f64)> {
        let lifecycle = Lifecycle {
            passenger: departures
                .iter()
                .any(|d| d.cmdline.starts_with("Passenger")),
            departures,
            tops_alive,
            ..Default::default()
        };
        let now = Instant::now();
        let exits: Vec<Exit> = exits
            .into_iter()
            .map(|(pid, cause)| Exit {
                pid,
                ppid: 10,
                at: now,
                cause,
            })
            .collect();
        let s = Sources {
            lifecycle: &lifecycle,
            exits: &exits,
            window_ms: Some(1000),
            timeline: &[],
            warmup_s: 1.0,
            deliberate,
        };
        Faults::of(&s)
            .worker_deaths
            .iter()
            .map(|d| (d.pid, d.signal, d.exit_status, d.at_s))
            .collect()
    }

    /// A worker stopped for two seconds is named, with how long; one still
    /// stopped at the end says so.
    #[test]
    fn a_stopped_worker_is_named_with_how_long_it_hung() {
        let stop = |pid, until| Stop {
            pid,
            cmdline: "puma: cluster worker 1: 10".into(),
            from_ms: 3200,
            until_ms: until,
            was_top: false,
        };
        let lifecycle = Lifecycle {
            stops: vec![stop(12, Some(5200)), stop(13, None)],
            tops_alive: vec![10],
            ..Default::default()
        };
        let s = Sources {
            lifecycle: &lifecycle,
            exits: &[],
            window_ms: Some(1000),
            timeline: &[],
            warmup_s: 1.0,
            deliberate: &[],
        };
        let f = Faults::of(&s);
        assert_eq!(
            f.sentences(),
            vec![
                "worker 12 was stopped (SIGSTOP, or a debugger) at 2.2 s for 2.0 s: it answered nothing meanwhile",
                "worker 13 was stopped (SIGSTOP, or a debugger) at 2.2 s until the end of the load: it answered nothing meanwhile",
            ]
        );
        assert_eq!(f.note().as_deref(), Some("fault: 2 workers hung"));
        assert!(Faults::default().note().is_none() && !Faults::default().any());
    }
}
