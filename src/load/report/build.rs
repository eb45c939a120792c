//! A load-v1 document built from a finished run's parts: the headline
//! latency (a lower bound when few answers came back), the plotted
//! percentile points and the warnings of what the figures cannot be
//! trusted for. The document's types are in mod.rs; this file never runs
//! load or reads a document back.

use super::fairness::Fairness;
use super::generator::GeneratorCost;
use super::timeline::TimelineRow;
use super::{
    ConfigEcho, ConnectionStats, LatencySummary, LoadReport, PercentilePoint, RequestCounts,
    ScheduleStats, SCHEMA,
};
use crate::load::recorder::{ErrorCounts, FirstFailure};
use crate::load::segment::{Histograms, SegmentInfo};
use crate::load::{ExpectStatus, LoadConfig, Pacing};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::Duration;

pub(crate) struct Parts<'a> {
    pub config: &'a LoadConfig,
    pub threads: usize,
    /// OK responses completed inside the counted window.
    pub ok_in_window: u64,
    /// The warm-up as it happened (a steady-state one ends when it ends).
    pub warmup_s: f64,
    pub warmup_steady: Option<bool>,
    pub ok: u64,
    pub errors: ErrorCounts,
    pub status_codes: BTreeMap<u16, u64>,
    pub first_failure: Option<FirstFailure>,
    pub unfinished: u64,
    pub unsent: u64,
    pub duration_s: f64,
    pub latency: LatencySummary,
    pub latency_lower_bound: bool,
    pub latency_failed: Option<LatencySummary>,
    pub latency_unfinished: Option<LatencySummary>,
    pub latency_uncorrected: Option<LatencySummary>,
    pub connections_opened: u64,
    pub connect_failures: u64,
    pub never_answered: u64,
    /// Answers in the window per connection that carried a request in it.
    pub window_answers: Vec<u64>,
    pub late_sends: u64,
    /// Open loop: requests handed to a connection on the schedule.
    pub sends: u64,
    pub max_lag: Duration,
    pub interrupted: bool,
    pub stopped_on_error: bool,
    pub elapsed_s: f64,
    pub timeline: Vec<TimelineRow>,
    pub generator: GeneratorCost,
    pub histogram: &'a Histogram<u64>,
    pub segment: Option<SegmentInfo>,
    pub histograms: Option<Histograms>,
}

/// Fewer OK responses than this make the headline latency come from the
/// unfinished requests' ages.
pub const FEW_RESPONSES: u64 = 10;

/// The headline latency histogram and whether it is a lower bound.
///
/// Normally the OK responses plus the `censored` ages (unfinished requests
/// older than the OK median). When fewer than [`FEW_RESPONSES`] answers
/// came back, or fewer than the requests left unanswered (`unanswered`:
/// still waiting at the end, or timed out, at their age), the OK
/// latencies describe the lucky few: the unanswered requests' ages join
/// them and every figure is a lower bound. A server that answered nothing
/// in its window thus shows "≥ 1.50s", never 0.
///
/// Answers that failed a check (`failed_answers`: a status or body not the
/// expected one) came back too: a server that answers every request 200
/// to `--expect-status 404` is not one that answers too few, and the ages
/// of the few requests in flight at the end say nothing of it (issue 36).
/// With no OK answer among them the headline is empty (their latency is
/// the failed one).
pub fn headline(
    ok: &Histogram<u64>,
    censored: &Histogram<u64>,
    unanswered: &Histogram<u64>,
    failed_answers: u64,
) -> (Histogram<u64>, bool) {
    let mut h = ok.clone();
    let answered = ok.len() + failed_answers;
    let few = answered < FEW_RESPONSES || answered < unanswered.len();
    let lower_bound = few && !unanswered.is_empty();
    if lower_bound {
        h.add(unanswered).expect("same histogram bounds");
    } else if !ok.is_empty() {
        h.add(censored).expect("same histogram bounds");
    }
    (h, lower_bound)
}

/// Percentiles plotted on a log scale of "nines": dense near the tail.
const DISTRIBUTION: &[f64] = &[
    0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999, 100.0,
];

/// The warning for a load thread busy enough (90% of its wall time) that
/// the generator, not the server, may have set the pace.
fn bottleneck_warning(busiest_thread_utilization: f64) -> Option<String> {
    (busiest_thread_utilization >= 0.9).then(|| {
        format!(
            "a load thread was busy {:.0}% of the run: rackbench itself may have been the bottleneck; \
             add --threads or give the generator its own core (--load-cpus)",
            busiest_thread_utilization * 100.0
        )
    })
}

/// The run's warnings: what the figures cannot be trusted for, and why.
fn warnings(p: &Parts<'_>, total: u64) -> Vec<String> {
    let c = p.config;
    let mut warnings = Vec::new();
    warnings.extend(bottleneck_warning(p.generator.busiest_thread_utilization));
    if p.never_answered > 0 {
        warnings.push(format!(
            "{} connection(s) carried requests but never got a single answer: the server may not be \
             accepting them (too few workers for the connections, or a full backlog)",
            p.never_answered
        ));
    }
    if p.unsent > 0 || (total > 0 && p.late_sends * 100 > total) {
        let (what, of) = if c.pacing == Pacing::Schedule {
            ("the replay's schedule", "the recorded traffic")
        } else {
            ("the --rate schedule", "the rate")
        };
        warnings.push(format!(
            "{what} was not kept ({} sends more than 1 ms late{}, {} never sent): \
             the server was slower than {of}, or --connections is too low for it",
            p.late_sends,
            if c.slack.is_zero() {
                ""
            } else {
                " past the slack"
            },
            p.unsent
        ));
    }
    if let Some(seg) = p.segment.as_ref().filter(|s| s.late_ms > 0.0) {
        warnings.push(late_warning(seg));
    }
    if p.unfinished > 0 && p.unfinished * 100 > total.max(1) {
        warnings.push(unfinished_warning(p.unfinished));
    }
    if p.ok == 0 && p.ok_in_window == 0 && p.errors.status > 0 {
        warnings.push(status_warning(p));
    }
    warnings
}

/// The warning of requests still unanswered at the end (the terminal
/// leaves it out where it already said "no answer in the window").
pub(crate) fn unfinished_warning(unfinished: u64) -> String {
    format!(
        "{unfinished} request(s) were still unanswered when the run ended; their age so far is in the latency figures"
    )
}

/// What happened when every answer failed the status check, in words
/// (issue 36: 110,536 answers of 200 to `--expect-status 404` read as "≥
/// 110us, too few responses came back").
fn status_warning(p: &Parts<'_>) -> String {
    let got = match p.status_codes.len() {
        0 => "other statuses".to_string(),
        1 => p.status_codes.keys().map(u16::to_string).collect(),
        _ => p
            .status_codes
            .iter()
            .map(|(code, n)| format!("{code} ({n})"))
            .collect::<Vec<_>>()
            .join(", "),
    };
    let expected = if p.config.mix.is_some() {
        "each endpoint's own".to_string()
    } else {
        expected_words(&p.config.expect_status)
    };
    format!(
        "{} answers, none with the expected status: got {got}, expected {expected}; their latency is the failed one",
        p.errors.status
    )
}

/// The statuses a check expects, in words: "2xx or 3xx", "404",
/// "200 or 204", "100-599".
fn expected_words(e: &ExpectStatus) -> String {
    let ExpectStatus::Codes(codes) = e else {
        return "2xx or 3xx".into();
    };
    let mut codes = codes.clone();
    codes.sort_unstable();
    codes.dedup();
    let mut runs: Vec<(u16, u16)> = Vec::new();
    for c in codes {
        match runs.last_mut() {
            Some((_, hi)) if *hi + 1 == c => *hi = c,
            _ => runs.push((c, c)),
        }
    }
    runs.iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

pub(crate) fn build(p: Parts<'_>) -> LoadReport {
    let c = p.config;
    let rate = match c.pacing {
        Pacing::Rate(r) => Some(r),
        Pacing::Closed | Pacing::Schedule => None,
    };
    let total = p.ok + p.errors.total() + p.unfinished + p.unsent;
    let warnings = warnings(&p, total);
    let distribution = if p.histogram.is_empty() {
        Vec::new()
    } else {
        DISTRIBUTION
            .iter()
            .map(|&pct| PercentilePoint {
                percentile: pct,
                latency_us: p.histogram.value_at_percentile(pct),
            })
            .collect()
    };
    LoadReport {
        schema: SCHEMA.to_string(),
        rackbench_version: env!("CARGO_PKG_VERSION").to_string(),
        url: c.url.clone(),
        config: ConfigEcho {
            endpoint: c.endpoint.to_string(),
            connections: c.connections,
            threads: p.threads,
            rate_rps: rate,
            duration_s: c.duration.map(|d| d.as_secs_f64()),
            requests: c.requests,
            warmup_s: p.warmup_s,
            warmup_until_steady: p.warmup_steady,
            pipeline: c.pipeline,
            keep_alive: c.keep_alive,
            timeout_s: c.timeout.as_secs_f64(),
        },
        requests: RequestCounts {
            total,
            ok: p.ok,
            unfinished: p.unfinished,
            unsent: p.unsent,
        },
        errors: p.errors,
        // Responses completed in the window, whenever sent: a slow server's
        // answers to requests sent just before the window still count, as
        // a stopwatch on the server would see them.
        throughput_rps: if p.duration_s > 0.0 {
            p.ok_in_window as f64 / p.duration_s
        } else {
            0.0
        },
        duration_s: p.duration_s,
        latency_us: p.latency,
        latency_lower_bound: p.latency_lower_bound,
        latency_failed_us: p.latency_failed,
        latency_unfinished_us: p.latency_unfinished,
        latency_uncorrected_us: p.latency_uncorrected,
        schedule: c.pacing.is_open().then(|| ScheduleStats {
            late_sends: p.late_sends,
            max_lag_us: p.max_lag.as_micros() as u64,
            sends: Some(p.sends),
            within_1ms_share: (p.sends > 0)
                .then(|| p.sends.saturating_sub(p.late_sends) as f64 / p.sends as f64),
            slack_us: (!c.slack.is_zero()).then_some(c.slack.as_micros() as u64),
        }),
        connections: ConnectionStats {
            configured: c.connections,
            opened: p.connections_opened,
            connect_failures: p.connect_failures,
            never_answered: p.never_answered,
        },
        // Segment documents keep the counts a merge needs.
        fairness: Some(Fairness::of(p.window_answers, p.histograms.is_some())),
        latency_distribution: distribution,
        latency_histogram: crate::stats::histogram::encode(p.histogram),
        timeline: p.timeline,
        generator: p.generator,
        warnings,
        interrupted: p.interrupted,
        stopped_on_error: p.stopped_on_error,
        elapsed_s: p.elapsed_s,
        status_codes: p.status_codes,
        first_failure: p.first_failure,
        segment: p.segment,
        histograms: p.histograms,
        segments: None,
        slow_clients: None,
        endpoints: Vec::new(),
    }
}

/// The warning of a segment that began after its `--start-at`.
pub fn late_warning(seg: &SegmentInfo) -> String {
    format!(
        "segment {}/{} began {:.0} ms after --start-at {}: give every segment a start further ahead (its schedule is shifted by that much)",
        seg.index,
        seg.count,
        seg.late_ms,
        seg.start_at.as_deref().unwrap_or("?")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 36: 110,536 answers of 200 to `--expect-status 404` made a
    /// headline of "≥ 110us" from the few requests in flight at the end,
    /// "too few responses came back". Answers that failed a check came
    /// back: they are no reason for a lower bound.
    #[test]
    fn answers_that_failed_a_check_are_no_reason_for_a_lower_bound() {
        let hist = |values: &[u64]| {
            let mut h = Histogram::<u64>::new(3).unwrap();
            for v in values {
                h.record(*v).unwrap();
            }
            h
        };
        let in_flight = hist(&[110, 111, 112]);
        // (OK latencies, failed answers, headline count, lower bound)
        let cases: &[(&[u64], u64, u64, bool)] = &[
            // Nothing came back: the ages, a lower bound (as before).
            (&[], 0, 3, true),
            // Every answer failed the status check: no headline at all.
            (&[], 110_536, 0, false),
            // Fewer failed answers than requests in flight: still too few.
            (&[], 2, 3, true),
            // A few OK among many failed answers: the OK ones, and the
            // in-flight ages above their median.
            (&[100, 100, 100], 50_000, 6, false),
            // Few OK answers and nothing else: a lower bound (as before).
            (&[100, 100, 100], 0, 6, true),
        ];
        for (ok, failed, count, bound) in cases {
            let (h, lower) = headline(&hist(ok), &in_flight, &in_flight, *failed);
            assert_eq!((h.len(), lower), (*count, *bound), "{ok:?} {failed}");
        }
    }

    #[test]
    fn the_expected_statuses_are_said_in_words() {
        let cases: &[(ExpectStatus, &str)] = &[
            (ExpectStatus::Success, "2xx or 3xx"),
            (ExpectStatus::Codes(vec![404]), "404"),
            (ExpectStatus::Codes(vec![204, 200]), "200 or 204"),
            (ExpectStatus::Codes((100..600).collect()), "100-599"),
            (
                ExpectStatus::Codes(vec![200, 201, 202, 404]),
                "200-202 or 404",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(expected_words(e), *want, "{e:?}");
        }
    }

    #[test]
    fn a_saturated_load_thread_is_warned_about_with_the_fix() {
        let w = bottleneck_warning(0.96).expect("96% busy warns");
        assert!(w.contains("96%") && w.contains("--threads"), "{w}");
        assert!(bottleneck_warning(0.89).is_none());
        assert!(bottleneck_warning(0.2).is_none());
    }
}
