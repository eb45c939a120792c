//! The `rackbench/load-v1` document (its terminal text is `load/text.rs`).
//!
//! Field names here are a contract other tools read: add fields freely,
//! rename none. The committed schema is `schema/load-v1.schema.json`.
//!
//! This file holds the document's types; `timeline.rs` its per-second
//! rows, `generator.rs` the generator's own cost, `build.rs` the document
//! made from a finished run (headline, percentile points, warnings),
//! `fairness.rs` the answers per connection summed into `fairness`.

mod build;
mod fairness;
mod generator;
mod timeline;

pub(crate) use build::{build, unfinished_warning, Parts};
pub use build::{headline, late_warning, FEW_RESPONSES};
pub use fairness::{jain_index, top10_count, top10_share, Fairness};
pub(crate) use generator::process_usage;
pub use generator::GeneratorCost;
pub(crate) use timeline::coarsen_timeline;
pub use timeline::{TimelineRow, TIMELINE_CAP};

use super::recorder::{ErrorCounts, FirstFailure};
use super::segment::{Histograms, SegmentInfo, SegmentSummary};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "rackbench/load-v1";

/// What every terminal line says of a run where no response came back
/// ([`LoadReport::answered_nothing`]), in these words only.
pub const NO_ANSWER: &str = "no answer in the window";

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
    /// Who got served: the answers per connection in the counted window
    /// (issue 39). Absent in documents older than the field, and in a
    /// merge of segments that did not keep their per-connection counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fairness: Option<Fairness>,
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
pub(crate) mod no_figure_is_null {
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

    /// No response came back at all: no OK answer (in the window or to a
    /// request sent in it), none with a wrong status or body, none
    /// unreadable, while requests waited (unanswered at the end, or given
    /// up at the timeout). Said as [`NO_ANSWER`], once (issue 36: stdout
    /// said "errors: none" and stderr "see the errors above").
    pub fn answered_nothing(&self) -> bool {
        let e = &self.errors;
        let waited = self.requests.unfinished + self.requests.unsent + e.timeout;
        self.requests.ok == 0
            && self.ok_in_window() == 0
            && e.status + e.body + e.parse == 0
            && waited > 0
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
}
