//! The `rackbench/load-v1` document (its terminal text is `text.rs`).
//!
//! Field names here are a contract other tools read: add fields freely,
//! rename none. The committed schema is `schema/load-v1.schema.json`.

use super::recorder::{ErrorCounts, FirstFailure, SecondReport};
use super::segment::{Histograms, SegmentInfo, SegmentSummary};
use super::{LoadConfig, Pacing};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

pub const SCHEMA: &str = "rackbench/load-v1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadReport {
    pub schema: String,
    pub rackbench_version: String,
    pub url: String,
    pub config: ConfigEcho,
    pub requests: RequestCounts,
    pub errors: ErrorCounts,
    /// OK responses completed per second over the counted window.
    pub throughput_rps: f64,
    /// Length of the counted window (warm-up excluded).
    pub duration_s: f64,
    /// The headline: latency of OK responses (under `--rate` from each
    /// request's scheduled start), with the ages of requests unfinished at
    /// the end that were older than the OK median. When few or no
    /// requests completed (see [`headline`]) the ages of the unanswered
    /// requests (unfinished, or timed out) join it and
    /// `latency_lower_bound` is set.
    /// Failed requests are never in it: they are in `latency_failed_us`.
    /// With no latency at all (`count` 0: every request refused or
    /// failed) its figures are written as null, never as 0 µs.
    #[serde(with = "no_figure_is_null")]
    pub latency_us: LatencySummary,
    /// Set when `latency_us` rests on the ages of unanswered requests:
    /// every figure is a lower bound ("≥").
    #[serde(default)]
    pub latency_lower_bound: bool,
    /// Latency of failed requests (timeouts at their timeout, error
    /// statuses, resets; refused connections have none). Absent when none
    /// failed that way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_failed_us: Option<LatencySummary>,
    /// Ages of the counted requests still unanswered (or unsent) when the
    /// run ended: lower bounds. Absent when there were none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_unfinished_us: Option<LatencySummary>,
    /// Under `--rate` only: OK responses measured from the actual send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_uncorrected_us: Option<LatencySummary>,
    /// Under `--rate` only: how well the schedule was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleStats>,
    pub connections: ConnectionStats,
    /// Distribution of the headline latency for plots: (percentile,
    /// latency_us) pairs.
    pub latency_distribution: Vec<PercentilePoint>,
    /// The headline latency histogram (µs) as HdrHistogram V2 + deflate,
    /// base64, so `rackbench compare` can merge runs exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<String>,
    pub timeline: Vec<TimelineRow>,
    pub generator: GeneratorCost,
    pub warnings: Vec<String>,
    /// True when Ctrl-C (or the caller) stopped the run early.
    pub interrupted: bool,
    /// True when the run ended at its first error (`stop_on_error`).
    #[serde(default)]
    pub stopped_on_error: bool,
    /// Wall seconds of load applied, warm-up included, from the first
    /// connection to the end (0 in records older than the field).
    #[serde(default)]
    pub elapsed_s: f64,
    /// Counted responses with an unexpected status, by status code (the
    /// codes behind `errors.status`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub status_codes: BTreeMap<u16, u64>,
    /// The first request that failed, warm-up included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<FirstFailure>,
    /// With `--segment` (or `--start-at`): which share of a load this run
    /// was and where it sat on the wall clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<SegmentInfo>,
    /// With `--segment` or `--hist-out`: the histograms an exact merge
    /// needs (`rackbench merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<Histograms>,
    /// A merged document (`rackbench merge`): the segments it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<Vec<SegmentSummary>>,
    /// With `--slow-clients`: what the slow connections beside the load
    /// did (`slow.rs`); they are in no other figure of this document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_clients: Option<super::slow::SlowClientsReport>,
    /// Per endpoint of a mix (`--mix`), in the mix's order; absent
    /// without a mix.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<EndpointReport>,
}

/// One endpoint of a mix: its share of the load and its own figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EndpointReport {
    pub name: String,
    pub method: String,
    /// The mix's path template, placeholders unexpanded.
    pub path: String,
    pub weight: f64,
    /// Counted requests issued to it (answered, failed or unfinished).
    pub requests: u64,
    pub ok: u64,
    /// OK responses per second over the counted window.
    pub throughput_rps: f64,
    #[serde(with = "no_figure_is_null")]
    pub latency_us: LatencySummary,
    pub errors: ErrorCounts,
    /// Its OK latency histogram (µs), HdrHistogram V2 + deflate, base64,
    /// as `LoadReport::latency_histogram`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<String>,
}

impl EndpointReport {
    /// An endpoint's entry from its tally added over every thread, over
    /// a counted window of `duration_s`.
    pub(crate) fn of(
        e: &super::mix::MixEndpoint,
        t: &super::recorder::EndpointTally,
        duration_s: f64,
    ) -> EndpointReport {
        EndpointReport {
            name: e.name.clone(),
            method: e.method.clone(),
            path: e.path.clone(),
            weight: e.weight,
            requests: t.ok + t.errors.total() + t.unfinished,
            ok: t.ok,
            throughput_rps: if duration_s > 0.0 {
                t.ok_in_window as f64 / duration_s
            } else {
                0.0
            },
            latency_us: LatencySummary::from_histogram(&t.latency),
            errors: t.errors,
            latency_histogram: crate::stats::histogram::encode(&t.latency),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConfigEcho {
    pub endpoint: String,
    pub connections: usize,
    pub threads: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_rps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// The warm-up as it happened.
    pub warmup_s: f64,
    /// With a steady-state warm-up: whether throughput settled (true) or
    /// the ceiling ended it (false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_until_steady: Option<bool>,
    pub pipeline: usize,
    pub keep_alive: bool,
    pub timeout_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestCounts {
    /// Counted requests: ok + errors + unfinished + unsent.
    pub total: u64,
    pub ok: u64,
    /// Sent but still unanswered when the run ended.
    pub unfinished: u64,
    /// Due under `--rate` but never sent: no connection was free.
    pub unsent: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

/// The headline [`LatencySummary`] on the wire: with `count` 0 its
/// figures are null (no figure), so a script never reads "0 ms" for a run
/// where nothing completed; read back, null is 0 with `count` 0, which
/// every reader takes as no figure (`LatencySummary::has_figures`).
mod no_figure_is_null {
    use super::LatencySummary;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Wire {
        count: u64,
        min: Option<u64>,
        mean: Option<f64>,
        stdev: Option<f64>,
        p50: Option<u64>,
        p90: Option<u64>,
        p99: Option<u64>,
        p999: Option<u64>,
        max: Option<u64>,
    }

    pub fn serialize<S: Serializer>(l: &LatencySummary, s: S) -> Result<S::Ok, S::Error> {
        let some = l.count > 0;
        let f = |v: u64| some.then_some(v);
        let g = |v: f64| some.then_some(v);
        Wire {
            count: l.count,
            min: f(l.min),
            mean: g(l.mean),
            stdev: g(l.stdev),
            p50: f(l.p50),
            p90: f(l.p90),
            p99: f(l.p99),
            p999: f(l.p999),
            max: f(l.max),
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LatencySummary, D::Error> {
        let w = Wire::deserialize(d)?;
        Ok(LatencySummary {
            count: w.count,
            min: w.min.unwrap_or(0),
            mean: w.mean.unwrap_or(0.0),
            stdev: w.stdev.unwrap_or(0.0),
            p50: w.p50.unwrap_or(0),
            p90: w.p90.unwrap_or(0),
            p99: w.p99.unwrap_or(0),
            p999: w.p999.unwrap_or(0),
            max: w.max.unwrap_or(0),
        })
    }
}

impl LatencySummary {
    /// Whether there is any figure: `count` 0 means none (every figure
    /// would be 0 µs, which is not a latency).
    pub fn has_figures(&self) -> bool {
        self.count > 0
    }

    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            min: h.min(),
            mean: h.mean(),
            stdev: h.stdev(),
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PercentilePoint {
    pub percentile: f64,
    pub latency_us: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScheduleStats {
    /// Requests sent more than 1 ms after they fell due (after their due
    /// time plus the slack, with `--slack`).
    pub late_sends: u64,
    pub max_lag_us: u64,
    /// Requests handed to a connection on the schedule (added field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sends: Option<u64>,
    /// Share of those sent within 1 ms of their due time (added field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_1ms_share: Option<f64>,
    /// `--slack`: how late a send was allowed to be, so that requests due
    /// together went out together; absent when each went at its due time
    /// (added field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slack_us: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConnectionStats {
    pub configured: usize,
    /// Sockets opened over the run (reconnects included).
    pub opened: u64,
    pub connect_failures: u64,
    /// Connections that carried a request but never got a byte of answer.
    pub never_answered: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimelineRow {
    /// Seconds since the start of the run (warm-up included).
    pub t_s: u64,
    pub ok: u64,
    pub errors: u64,
    /// Latency of this second's OK responses (0 when none).
    pub p50_us: u64,
    pub p99_us: u64,
    /// OK responses per second in this row.
    pub rps: f64,
    pub warmup: bool,
    /// Seconds this row covers: 1, or less for the last one.
    #[serde(default = "one_second")]
    pub span_s: f64,
    /// This second's failures by kind; absent when it had none (and in
    /// records made before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kinds: Option<ErrorCounts>,
    /// Of this second's status failures, those answered 500 or above
    /// (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub status_5xx: u64,
}

fn one_second() -> f64 {
    1.0
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The most rows a load's timeline keeps: an hour of seconds. A soak's
/// longer run merges neighbouring rows in pairs when the cap is reached
/// ([`TimelineRow::merged`]), so its rows cover 2, 4, 8... seconds and
/// the report's size stays flat over hours.
pub const TIMELINE_CAP: usize = 3600;

/// Merges neighbouring rows in pairs once `timeline` holds
/// [`TIMELINE_CAP`] rows (an odd last row is kept as it is).
pub(crate) fn coarsen_timeline(timeline: &mut Vec<TimelineRow>) {
    if timeline.len() < TIMELINE_CAP {
        return;
    }
    *timeline = timeline
        .chunks(2)
        .map(|c| match c {
            [a, b] => a.merged(b),
            _ => c[0].clone(),
        })
        .collect();
}

impl TimelineRow {
    /// Two neighbouring rows as one: the first's start, counts and spans
    /// added, p50 the OK-weighted mean of the two (an approximation: the
    /// seconds' histograms are gone), p99 the larger, warm-up if either.
    pub fn merged(&self, b: &TimelineRow) -> TimelineRow {
        let ok = self.ok + b.ok;
        let p50 = (self.p50_us as u128 * self.ok as u128 + b.p50_us as u128 * b.ok as u128)
            / u128::from(ok.max(1));
        let span = self.span_s + b.span_s;
        TimelineRow {
            t_s: self.t_s,
            ok,
            errors: self.errors + b.errors,
            p50_us: p50 as u64,
            p99_us: self.p99_us.max(b.p99_us),
            rps: ok as f64 / span.max(1e-3),
            warmup: self.warmup || b.warmup,
            span_s: span,
            error_kinds: match (self.error_kinds, b.error_kinds) {
                (None, None) => None,
                (a, b) => {
                    let mut sum = a.unwrap_or_default();
                    sum.add(&b.unwrap_or_default());
                    Some(sum)
                }
            },
            status_5xx: self.status_5xx + b.status_5xx,
        }
    }
}

impl TimelineRow {
    pub(crate) fn from_second(r: &SecondReport, warmup: bool) -> Self {
        let span = r.span.as_secs_f64().max(1e-3);
        TimelineRow {
            t_s: r.sec,
            ok: r.ok,
            errors: r.errors,
            p50_us: if r.latency.is_empty() {
                0
            } else {
                r.latency.value_at_quantile(0.5)
            },
            p99_us: if r.latency.is_empty() {
                0
            } else {
                r.latency.value_at_quantile(0.99)
            },
            rps: r.ok as f64 / span,
            warmup,
            span_s: r.span.as_secs_f64(),
            error_kinds: (r.errors > 0).then_some(r.error_kinds),
            status_5xx: r.status_5xx,
        }
    }
}

/// What the generator itself cost.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GeneratorCost {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub peak_rss_bytes: u64,
    /// CPU time of the busiest load thread over its wall time (1.0 = saturated).
    pub busiest_thread_utilization: f64,
    /// What the connection loop waited on: "io_uring" or "epoll" (empty
    /// in records made before this field existed).
    #[serde(default)]
    pub io: String,
    /// Times the load threads came back from waiting for sockets or
    /// timers, all threads together: a loop with nothing it can do sleeps,
    /// so this stays near the responses' count plus a few per second, and
    /// a figure far above that means the generator spins (0 in records
    /// made before this field existed).
    #[serde(default)]
    pub wakeups: u64,
}

pub(crate) struct Usage {
    user: Duration,
    sys: Duration,
    max_rss_bytes: u64,
}

pub(crate) fn process_usage() -> Usage {
    // SAFETY: getrusage fills the zeroed struct.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    Usage {
        user: tv(ru.ru_utime),
        sys: tv(ru.ru_stime),
        max_rss_bytes: ru.ru_maxrss as u64 * 1024,
    }
}

impl GeneratorCost {
    pub(crate) fn between(a: &Usage, b: &Usage, busiest: f64, io: &str) -> Self {
        GeneratorCost {
            cpu_user_s: b.user.saturating_sub(a.user).as_secs_f64(),
            cpu_sys_s: b.sys.saturating_sub(a.sys).as_secs_f64(),
            peak_rss_bytes: b.max_rss_bytes,
            busiest_thread_utilization: busiest,
            io: io.to_string(),
            wakeups: 0,
        }
    }
}

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
/// older than the OK median). When fewer than [`FEW_RESPONSES`] OK
/// responses came back, or fewer than the requests left unanswered
/// (`unanswered`: still waiting at the end, or timed out, at their age),
/// the OK latencies describe the lucky few: the unanswered requests' ages
/// join them and every figure is a lower bound. A server that answered
/// nothing in its window thus shows "≥ 1.50s", never 0.
pub fn headline(
    ok: &Histogram<u64>,
    censored: &Histogram<u64>,
    unanswered: &Histogram<u64>,
) -> (Histogram<u64>, bool) {
    let mut h = ok.clone();
    let few = ok.len() < FEW_RESPONSES || ok.len() < unanswered.len();
    let lower_bound = few && !unanswered.is_empty();
    let extra = if lower_bound { unanswered } else { censored };
    h.add(extra).expect("same histogram bounds");
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
        warnings.push(format!(
            "{} request(s) were still unanswered when the run ended; their age so far is in the latency figures",
            p.unfinished
        ));
    }
    warnings
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

impl LoadReport {
    /// The OK responses completed in the counted window, whenever sent:
    /// what the throughput counts (the report keeps the rate, not the
    /// count). Not `requests.ok`, the requests sent in the window that came
    /// back OK: behind a queue longer than the window none of those comes
    /// back, while the window still saw answers (a run of 1.5 s against a
    /// 1.6 s queue: 30 answers, 0 of them to requests sent in the window).
    pub fn ok_in_window(&self) -> u64 {
        (self.throughput_rps * self.duration_s).round() as u64
    }

    /// Seconds of load this run applied, warm-up included.
    pub fn load_seconds(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.elapsed_s
        } else {
            self.duration_s + self.config.warmup_s
        }
    }
}

/// A report of nothing (2 connections, a 1 s window, no requests), for
/// tests to fill in.
#[cfg(test)]
pub(crate) fn empty_report() -> LoadReport {
    serde_json::from_value(serde_json::json!({
        "schema": "rackbench/load-v1", "rackbench_version": "0", "url": "http://127.0.0.1:1/",
        "config": {"endpoint": "127.0.0.1:1", "connections": 2, "threads": 1, "warmup_s": 0.0,
                   "pipeline": 1, "keep_alive": true, "timeout_s": 10.0},
        "requests": {"total": 0, "ok": 0, "unfinished": 0, "unsent": 0},
        "errors": {"connect": 0, "timeout": 0, "reset": 0, "parse": 0, "status": 0, "body": 0},
        "throughput_rps": 0.0, "duration_s": 1.0,
        "latency_us": {"count": 0, "min": 0, "mean": 0.0, "stdev": 0.0, "p50": 0, "p90": 0,
                       "p99": 0, "p999": 0, "max": 0},
        "connections": {"configured": 2, "opened": 2, "connect_failures": 0, "never_answered": 0},
        "latency_distribution": [], "timeline": [],
        "generator": {"cpu_user_s": 0.0, "cpu_sys_s": 0.0, "peak_rss_bytes": 0,
                      "busiest_thread_utilization": 0.0},
        "warnings": [], "interrupted": false
    }))
    .expect("the empty report is a load-v1 document")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saturated_load_thread_is_warned_about_with_the_fix() {
        let w = bottleneck_warning(0.96).expect("96% busy warns");
        assert!(w.contains("96%") && w.contains("--threads"), "{w}");
        assert!(bottleneck_warning(0.89).is_none());
        assert!(bottleneck_warning(0.2).is_none());
    }

    /// Issue 25: a run where nothing completed wrote "p99": 0, which a
    /// script read as 0 ms. The figures are null; they read back as no
    /// figure, and a record written before (zeros) still reads.
    #[test]
    fn a_headline_with_no_latency_is_written_null_and_reads_back() {
        let mut r = empty_report();
        let doc = serde_json::to_value(&r).unwrap();
        let l = &doc["latency_us"];
        assert_eq!(l["count"], 0);
        for f in ["min", "mean", "stdev", "p50", "p90", "p99", "p999", "max"] {
            assert!(l[f].is_null(), "{f}: {l}");
        }
        let back: LoadReport = serde_json::from_value(doc).unwrap();
        assert!(!back.latency_us.has_figures());
        assert_eq!(back.latency_us, LatencySummary::default());
        // With figures, they are numbers as before.
        r.latency_us = LatencySummary {
            count: 3,
            min: 1,
            mean: 2.0,
            stdev: 0.5,
            p50: 2,
            p90: 3,
            p99: 3,
            p999: 3,
            max: 3,
        };
        let doc = serde_json::to_value(&r).unwrap();
        assert_eq!(doc["latency_us"]["p99"], 3);
        assert_eq!(doc["latency_us"]["mean"], 2.0);
        let back: LoadReport = serde_json::from_value(doc).unwrap();
        assert_eq!(back.latency_us, r.latency_us);
    }

    /// Two days of one-second rows: the timeline stays within its cap,
    /// and no request is lost from it in the merging.
    #[test]
    fn a_soak_long_timeline_stays_within_its_cap_and_keeps_every_count() {
        let mut timeline = Vec::new();
        let seconds = 2 * 86_400u64;
        for t_s in 0..seconds {
            timeline.push(TimelineRow {
                t_s,
                ok: 10,
                errors: 1,
                p50_us: 100 + t_s % 2,
                p99_us: 900 + t_s % 7,
                rps: 10.0,
                warmup: t_s < 5,
                span_s: 1.0,
                error_kinds: None,
                status_5xx: 0,
            });
            coarsen_timeline(&mut timeline);
        }
        assert!(timeline.len() < TIMELINE_CAP, "{}", timeline.len());
        assert!(timeline.len() >= TIMELINE_CAP / 2, "{}", timeline.len());
        assert_eq!(timeline.iter().map(|r| r.ok).sum::<u64>(), 10 * seconds);
        assert_eq!(timeline.iter().map(|r| r.errors).sum::<u64>(), seconds);
        let span: f64 = timeline.iter().map(|r| r.span_s).sum();
        assert_eq!(span, seconds as f64);
        assert!(timeline[1].rps > 9.99 && timeline[1].rps < 10.01);
        assert!(timeline[0].warmup && !timeline[1].warmup);
        assert!(timeline.iter().all(|r| r.p99_us <= 906));
    }
}
