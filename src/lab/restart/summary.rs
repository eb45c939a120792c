//! The record's `restart`, computed after the load from what a restart
//! did and the timeline the load saw: where it happened, the errors and
//! latency of the seconds from it until recovery (the per-second
//! histograms merged, never their p99s averaged), and the verdict in words.
//!
//! Arithmetic over what it is handed: it signals nothing, waits for
//! nothing and reads no file (mod.rs beside it performs the restart).

use super::Performed;
use crate::lab::record::{RestartErrors, RestartRecord};
use crate::load::report::{LatencySummary, TimelineRow};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The restart's resolution in time: the load's timeline is per second.
pub const RESOLUTION_MS: u64 = 1000;

/// How close to the seconds before the restart throughput and p99 must be
/// to count as recovered.
const WITHIN: f64 = 0.10;

/// The per-second histograms of OK latencies the load hands over, kept
/// (bounded) for the seconds a restart's figures are merged from.
#[derive(Default)]
pub(in crate::lab) struct SecondsKept {
    seconds: BTreeMap<u64, Histogram<u64>>,
}

/// At most this many seconds are kept: a window longer than that keeps
/// its last ones (a restart's figures come from around its instant).
const KEPT_SECONDS: usize = 900;

impl SecondsKept {
    pub(in crate::lab) fn keep(&mut self, row: &TimelineRow, latency: &Histogram<u64>) {
        self.seconds.insert(row.t_s, latency.clone());
        while self.seconds.len() > KEPT_SECONDS {
            self.seconds.pop_first();
        }
    }
}

/// Everything the record's `restart` is computed from, after the load.
pub(in crate::lab) struct Outcome<'a> {
    pub(in crate::lab) kind: &'a str,
    pub(in crate::lab) at: Duration,
    pub(in crate::lab) performed: Performed,
    /// When the counted window started (None: it never did).
    pub(in crate::lab) window_start: Option<Instant>,
    /// The window's start in seconds since the load's start (its t_s).
    pub(in crate::lab) warmup_s: f64,
    pub(in crate::lab) timeline: &'a [TimelineRow],
    pub(in crate::lab) seconds: &'a SecondsKept,
}

/// The record's `restart`: where it happened in the timeline, the errors
/// and latency of the seconds from it until recovery, and the verdict.
pub(in crate::lab) fn summarize(o: Outcome) -> RestartRecord {
    let p = &o.performed;
    let started_s = match (p.started, o.window_start) {
        (Some(s), Some(w)) => s.saturating_duration_since(w).as_secs_f64(),
        _ => o.at.as_secs_f64(),
    };
    let took_s = match (p.started, p.done) {
        (Some(s), Some(d)) => Some(d.saturating_duration_since(s).as_secs_f64()),
        _ => None,
    };
    let mut rec = RestartRecord {
        kind: o.kind.to_string(),
        at_s: round3(started_s),
        outcome: if p.why_failed.is_some() {
            "failed"
        } else {
            "done"
        }
        .into(),
        why: p.why_failed.clone(),
        took_ms: took_s.map(|t| (t * 1000.0).round() as u64),
        errors_during: RestartErrors::default(),
        requests_lost: 0,
        latency_during_us: None,
        p99_before_us: None,
        rps_before: None,
        rps_min_during: None,
        during_s: None,
        recovered_after_ms: None,
        resolution_ms: RESOLUTION_MS,
        pids_before: p.pids_before.clone(),
        pids_after: p.pids_after.clone(),
        old_workers: p.workers.old.clone(),
        new_workers: p.workers.new.clone(),
        new_workers_answered: p.workers.answered && !p.workers.new.is_empty(),
        zero_downtime: false,
        verdict: String::new(),
    };
    if p.started.is_some() {
        let at = o.warmup_s + started_s;
        let s = around(o.timeline, at, took_s.map(|t| at + t));
        rec.p99_before_us = s.p99_before_us;
        rec.rps_before = s.rps_before.map(|r| (r * 10.0).round() / 10.0);
        rec.recovered_after_ms = s.recovered_after_ms;
        let rows = || {
            o.timeline
                .iter()
                .filter(|r| (s.from..=s.to).contains(&r.t_s))
        };
        for r in rows() {
            rec.errors_during.add(r);
        }
        rec.rps_min_during = rows()
            .filter(|r| r.span_s >= 0.999)
            .map(|r| r.rps)
            .min_by(f64::total_cmp);
        rec.requests_lost = rec.errors_during.reset + rec.errors_during.timeout;
        let mut merged: Option<Histogram<u64>> = None;
        for h in (s.from..=s.to).filter_map(|t| o.seconds.seconds.get(&t)) {
            match merged.as_mut() {
                Some(m) => m.add(h).expect("same bounds"),
                None => merged = Some(h.clone()),
            }
        }
        rec.latency_during_us = merged
            .filter(|h| !h.is_empty())
            .map(|h| LatencySummary::from_histogram(&h));
        let w = o.warmup_s;
        rec.during_s = Some([round3(s.from as f64 - w), round3(s.to as f64 + 1.0 - w)]);
    }
    rec.zero_downtime = rec.outcome == "done" && rec.errors_during.total() == 0;
    rec.verdict = verdict(&rec);
    rec
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The seconds a restart is judged by, in the timeline's own seconds.
#[derive(Debug, PartialEq)]
struct Around {
    /// The second the restart began in, and the last before recovery (or
    /// the timeline's last: a restart never done never recovered).
    from: u64,
    to: u64,
    rps_before: Option<f64>,
    p99_before_us: Option<u64>,
    recovered_after_ms: Option<u64>,
}

/// How many full seconds before the restart make its baseline.
const BEFORE: usize = 5;

/// The seconds around a restart that began `at` and was done `until`
/// (seconds since the load's start; None: never): the baseline is the
/// mean throughput and median p99 of up to five full counted seconds
/// before the one it began in (warm-up seconds ramp up, so they are left
/// out); recovery is the first full second that starts once it was done
/// (a second with old workers still serving in it is not one), with no
/// errors, throughput at least 90% of the baseline's and p99 at most 110%
/// of it. Recovery time is from the restart to that second's start
/// (resolution: one second).
fn around(timeline: &[TimelineRow], at: f64, until: Option<f64>) -> Around {
    let from = at.floor().max(0.0) as u64;
    let before: Vec<&TimelineRow> = timeline
        .iter()
        .filter(|r| r.t_s < from && r.span_s >= 0.999 && !r.warmup)
        .collect();
    let before = &before[before.len().saturating_sub(BEFORE)..];
    let rps_before = (!before.is_empty())
        .then(|| before.iter().map(|r| r.rps).sum::<f64>() / before.len() as f64);
    let p99_before_us = (!before.is_empty()).then(|| {
        let mut p: Vec<u64> = before.iter().map(|r| r.p99_us).collect();
        p.sort_unstable();
        p[p.len() / 2]
    });
    let last = timeline.last().map_or(from, |r| r.t_s.max(from));
    let recovered = match (rps_before, p99_before_us, until) {
        (Some(rps), Some(p99), Some(done)) => timeline.iter().find(|r| {
            r.t_s > from
                && r.t_s as f64 >= done
                && r.span_s >= 0.999
                && r.errors == 0
                && r.rps >= rps * (1.0 - WITHIN)
                && r.p99_us as f64 <= p99 as f64 * (1.0 + WITHIN)
        }),
        _ => None,
    };
    Around {
        from,
        to: recovered.map_or(last, |r| (r.t_s - 1).max(from)),
        rps_before,
        p99_before_us,
        recovered_after_ms: recovered
            .map(|r| ((r.t_s as f64 - at).max(0.0) * 1000.0).round() as u64),
    }
}

/// The verdict in words: "zero-downtime: 0 errors, p99 rose from 4 ms to
/// 310 ms for 2 s", "not zero-downtime: 37 connections refused", or
/// "restart failed: why".
pub fn verdict(r: &RestartRecord) -> String {
    if r.outcome != "done" {
        return format!(
            "restart failed: {}",
            r.why.as_deref().unwrap_or("no reason given")
        );
    }
    let latency = latency_words(r);
    if r.errors_during.total() == 0 {
        return format!("zero-downtime: 0 errors, {latency}");
    }
    format!("not zero-downtime: {}; {latency}", r.errors_during.words())
}

/// What latency and throughput did: "p99 rose from 4 ms to 310 ms for
/// 1.7 s", "p99 stayed near 4 ms, throughput fell 26% for 1.0 s".
fn latency_words(r: &RestartRecord) -> String {
    let Some(during) = r.latency_during_us.as_ref().map(|l| l.p99) else {
        return "no request answered around it".into();
    };
    let Some(before) = r.p99_before_us else {
        return format!(
            "p99 {} around it (no counted second before it to compare)",
            fmt_us(during)
        );
    };
    let rose = during as f64 > before as f64 * (1.0 + WITHIN);
    let mut words = if rose {
        format!("p99 rose from {} to {}", fmt_us(before), fmt_us(during))
    } else {
        format!("p99 stayed near {}", fmt_us(before))
    };
    let fell = match (r.rps_before, r.rps_min_during) {
        (Some(b), Some(m)) if b > 0.0 && m < b * (1.0 - WITHIN) => Some((1.0 - m / b) * 100.0),
        _ => None,
    };
    if let Some(pct) = fell {
        words += &format!(", throughput fell {pct:.0}%");
    }
    match r.recovered_after_ms {
        Some(ms) if rose || fell.is_some() => words += &format!(" for {}", fmt_secs(ms)),
        Some(_) => {}
        None => words += ", not back within 10% of before by the window's end",
    }
    words
}

fn fmt_secs(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// A latency as the verdict says it: "0.35 ms", "4 ms", "4.5 ms", "310 ms",
/// "1.2 s".
fn fmt_us(us: u64) -> String {
    let ms = us as f64 / 1000.0;
    let trim = |t: String| {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t
        }
    };
    if ms >= 1000.0 {
        format!("{} s", trim(format!("{:.1}", ms / 1000.0)))
    } else if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{} ms", trim(format!("{ms:.1}")))
    } else {
        format!("{} ms", trim(format!("{ms:.2}")))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Workers;
    use super::*;

    fn row(t_s: u64, rps: f64, p99_us: u64, errors: u64) -> TimelineRow {
        TimelineRow {
            t_s,
            ok: rps as u64,
            errors,
            p50_us: p99_us / 4,
            p99_us,
            rps,
            warmup: t_s < 1,
            span_s: 1.0,
            error_kinds: (errors > 0).then(|| crate::load::recorder::ErrorCounts {
                connect: errors,
                ..Default::default()
            }),
            status_5xx: 0,
        }
    }

    /// The seconds from 4 on that are not like the others: (p99, errors).
    type Bad = &'static [(u64, u64)];

    /// 1 s of warm-up, then 1000 rps at p99 4 ms; `bad` seconds from 4 on
    /// at the given p99 and errors.
    fn timeline(bad: &[(u64, u64)]) -> Vec<TimelineRow> {
        (0..10u64)
            .map(
                |t| match t.checked_sub(4).and_then(|i| bad.get(i as usize)) {
                    Some(&(p99, errors)) => row(t, 900.0, p99, errors),
                    None => row(t, 1000.0, 4000, 0),
                },
            )
            .collect()
    }

    /// Table: the restart at 4.3 s (since the load's start), done `took`
    /// later (None: never), over a timeline whose seconds from 4 on are
    /// `bad`.
    #[test]
    fn recovery_is_the_first_clean_second_within_ten_percent_after_the_restart() {
        // (bad seconds (p99, errors) from 4, took s, from, to, recovered ms)
        type Row = (Bad, Option<f64>, u64, u64, Option<u64>);
        let rows: &[Row] = &[
            // Untouched: back at once, in the next second.
            (&[], Some(0.1), 4, 4, Some(700)),
            // p99 310 ms for two seconds: back at 6.
            (&[(310_000, 0), (310_000, 0)], Some(0.2), 4, 5, Some(1700)),
            // Within 10% (4.4 ms) counts as back; 4.5 ms does not.
            (&[(4_400, 0)], Some(0.1), 4, 4, Some(700)),
            (&[(4_500, 0), (4_500, 0)], Some(0.1), 4, 5, Some(1700)),
            // Errors keep a second out even with a good p99.
            (&[(4_000, 3), (4_000, 1)], Some(0.1), 4, 5, Some(1700)),
            // Done at 7.3 s: second 7 still had old workers in it, so
            // recovery is second 8, the first that starts once done.
            (&[], Some(3.0), 4, 7, Some(3700)),
            // Done exactly as second 6 starts: second 6 counts.
            (&[], Some(1.7), 4, 5, Some(1700)),
            // Never back: to the timeline's end.
            (&[(9_000, 0); 6], Some(0.1), 4, 9, None),
            // Never done (a phased restart whose old workers kept serving
            // to the end): clean seconds are no recovery.
            (&[], None, 4, 9, None),
        ];
        for (i, (bad, took, from, to, rec)) in rows.iter().enumerate() {
            let tl: Vec<TimelineRow> = timeline(bad);
            let a = around(&tl, 4.3, took.map(|t| 4.3 + t));
            assert_eq!(
                (a.from, a.to, a.recovered_after_ms),
                (*from, *to, *rec),
                "row {i}"
            );
            assert_eq!(a.rps_before, Some(1000.0), "row {i}");
            assert_eq!(a.p99_before_us, Some(4000), "row {i}");
        }
        // A restart in the first second has no baseline: no recovery.
        let a = around(&timeline(&[]), 0.2, Some(0.3));
        assert_eq!((a.rps_before, a.recovered_after_ms), (None, None));
    }

    #[test]
    fn verdict_latencies_read_as_people_say_them() {
        let rows = [
            (350, "0.35 ms"),
            (4_000, "4 ms"),
            (4_460, "4.5 ms"),
            (310_400, "310 ms"),
            (1_240_000, "1.2 s"),
            (2_000_000, "2 s"),
        ];
        for (us, want) in rows {
            assert_eq!(fmt_us(us), want, "{us}");
        }
    }

    /// Each second's histogram: its OK responses all at its p99.
    fn kept_of(tl: &[TimelineRow]) -> SecondsKept {
        let mut kept = SecondsKept::default();
        for r in tl {
            let mut h = crate::load::recorder::new_histogram(2);
            h.record_n(r.p99_us, 100).unwrap();
            kept.keep(r, &h);
        }
        kept
    }

    fn performed(ok: bool) -> Performed {
        let t = Instant::now();
        Performed {
            started: Some(t),
            done: ok.then(|| t + Duration::from_millis(200)),
            why_failed: (!ok)
                .then(|| "timed out waiting for workers 7, 8 to be replaced after SIGUSR1".into()),
            pids_before: vec![1, 7, 8],
            pids_after: if ok { vec![1, 9, 10] } else { vec![1, 7, 8] },
            workers: Workers {
                old: vec![7, 8],
                new: if ok { vec![9, 10] } else { Vec::new() },
                answered: true,
            },
        }
    }

    #[test]
    fn the_verdict_says_zero_downtime_only_for_a_restart_done_without_errors() {
        // (bad seconds, done, the verdict)
        let rows: &[(Bad, bool, &str)] = &[
            // The seconds' histograms hold 310 ms; 2 significant digits
            // read it back as 311 ms.
            (
                &[(310_000, 0), (310_000, 0)],
                true,
                "zero-downtime: 0 errors, p99 rose from 4 ms to 311 ms for 1.7 s",
            ),
            (&[], true, "zero-downtime: 0 errors, p99 stayed near 4 ms"),
            // The seconds' histograms merged, not their p99s averaged.
            (
                &[(4_000, 0), (9_000, 0)],
                true,
                "zero-downtime: 0 errors, p99 rose from 4 ms to 9 ms for 1.7 s",
            ),
            (
                &[(310_000, 37)],
                true,
                "not zero-downtime: 37 connections refused; p99 rose from 4 ms to 311 ms for 0.7 s",
            ),
            (
                &[],
                false,
                "restart failed: timed out waiting for workers 7, 8 to be replaced after SIGUSR1",
            ),
        ];
        let seconds = SecondsKept::default();
        for (bad, ok, want) in rows {
            let tl = timeline(bad);
            let kept = kept_of(&tl);
            let p = performed(*ok);
            let w = p.started.unwrap() - Duration::from_millis(3300);
            let rec = summarize(Outcome {
                kind: "phased",
                at: Duration::from_secs(3),
                performed: p,
                window_start: Some(w),
                warmup_s: 1.0,
                timeline: &tl,
                seconds: if *ok { &kept } else { &seconds },
            });
            assert_eq!(rec.verdict, *want);
            assert_eq!(rec.zero_downtime, want.starts_with("zero-downtime"));
            assert_eq!(rec.at_s, 3.3);
            if *ok {
                assert_eq!(rec.during_s.unwrap()[0], 3.0);
                assert_eq!(rec.errors_during.refused, bad.first().map_or(0, |b| b.1));
                assert_eq!(
                    (rec.old_workers, rec.new_workers),
                    (vec![7, 8], vec![9, 10])
                );
            }
        }
    }

    /// The phased restart whose record listed the same pids before and
    /// after with "recovered after 998 ms": its old workers still served
    /// when the load ended, so it has no time taken, no recovery, and its
    /// seconds run to the window's end, whatever those seconds looked like.
    #[test]
    fn a_restart_never_done_has_no_recovery_and_is_judged_to_the_end() {
        let tl = timeline(&[]);
        let kept = kept_of(&tl);
        let p = performed(false);
        let w = p.started.unwrap() - Duration::from_millis(3300);
        let rec = summarize(Outcome {
            kind: "phased",
            at: Duration::from_secs(3),
            performed: p,
            window_start: Some(w),
            warmup_s: 1.0,
            timeline: &tl,
            seconds: &kept,
        });
        assert_eq!(rec.outcome, "failed");
        assert_eq!((rec.took_ms, rec.recovered_after_ms), (None, None));
        assert_eq!(rec.during_s, Some([3.0, 9.0]));
        assert_eq!(rec.pids_before, rec.pids_after);
        assert!(rec.new_workers.is_empty() && !rec.new_workers_answered);
        assert!(!rec.zero_downtime);
    }

    #[test]
    fn throughput_that_fell_with_p99_unmoved_is_said_with_its_length() {
        // Throughput halved for a second, p99 unmoved.
        let mut tl = timeline(&[]);
        tl[4].rps = 500.0;
        let kept = kept_of(&tl);
        let p = performed(true);
        let w = p.started.unwrap() - Duration::from_millis(3300);
        let rec = summarize(Outcome {
            kind: "kill-worker",
            at: Duration::from_secs(3),
            performed: p,
            window_start: Some(w),
            warmup_s: 1.0,
            timeline: &tl,
            seconds: &kept,
        });
        assert_eq!(rec.recovered_after_ms, Some(700));
        assert_eq!(rec.rps_min_during, Some(500.0));
        assert_eq!(
            rec.verdict,
            "zero-downtime: 0 errors, p99 stayed near 4 ms, throughput fell 50% for 0.7 s"
        );
    }
}
