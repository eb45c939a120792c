//! The board's data: each label set's counters and the latency buckets
//! they fill, a snapshot of the whole board, and `/live.json`, the
//! `rackbench/live-v1` document made from it (a contract: fields are
//! added, never renamed).

use crate::load::ErrorCounts;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The latency histogram's upper bounds, in seconds (and +Inf after the
/// last): fixed, so a series means the same in every run.
pub const BUCKETS_S: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// One label set's counters: they only ever grow.
#[derive(Debug, Clone, Default)]
pub(crate) struct Series {
    pub(crate) ok: u64,
    pub(crate) errors: ErrorCounts,
    /// OK latencies per bucket of [`BUCKETS_S`], then the +Inf bucket.
    pub(crate) buckets: [u64; BUCKETS_S.len() + 1],
    pub(crate) latency_sum_s: f64,
    /// The server tree's CPU seconds, over every trial with these labels.
    pub(crate) cpu_s: f64,
}

impl Series {
    pub(crate) fn requests(&self) -> u64 {
        self.ok + self.errors.total()
    }
}

/// The bucket of [`BUCKETS_S`] a latency of `us` microseconds falls in
/// (the last index is +Inf).
pub(crate) fn bucket_of(us: u64) -> usize {
    let s = us as f64 / 1e6;
    BUCKETS_S
        .iter()
        .position(|&b| s <= b)
        .unwrap_or(BUCKETS_S.len())
}

/// The current trial's labels: every series carries them.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct TrialLabels {
    pub study: String,
    pub trial: String,
    pub server: String,
    pub app: String,
    pub variant: String,
    pub runtime: String,
    pub repeat: u32,
}

impl TrialLabels {
    /// The labels as (name, value) pairs, in the order they are listed;
    /// an empty one is left out (Prometheus reads it as absent anyway).
    pub fn pairs(&self) -> Vec<(String, String)> {
        [
            ("study", self.study.clone()),
            ("trial", self.trial.clone()),
            ("server", self.server.clone()),
            ("app", self.app.clone()),
            ("variant", self.variant.clone()),
            ("runtime", self.runtime.clone()),
            ("repeat", self.repeat.to_string()),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// Where the work is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Load before the counted window.
    Warmup,
    /// Load in the counted window.
    Counted,
    /// No load right now: before the first, between runs or trials.
    Between,
    /// The work has ended.
    Done,
}

/// A trial's (or the process's) request counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
}

/// One second of load as the page draws it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Second {
    /// Seconds since rackbench started, when the second was complete.
    pub t_s: f64,
    pub rps: f64,
    pub ok: u64,
    pub errors: u64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// The current trial's OK latency (HDR), warm-up left out.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyNow {
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

/// The server tree now (the lab's samplers).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerNow {
    /// CPU seconds of the tree since the trial's sampler began.
    pub cpu_seconds: f64,
    /// CPU between the last two samples, in % of one core.
    pub cpu_pct: Option<f64>,
    pub rss_bytes: Option<u64>,
    pub pss_bytes: Option<u64>,
    pub accept_queue: Option<u32>,
}

/// The telemetry's mean time per request, by where it went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct TelemetryNow {
    pub queue_ms: Option<f64>,
    pub app_ms: Option<f64>,
    pub gc_ms: Option<f64>,
    pub db_ms: Option<f64>,
}

/// A mirror's shadow: its requests so far and its paired latency.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Shadow {
    pub name: String,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// The median of shadow − primary latency over the requests both
    /// answered.
    pub paired_median_ms: Option<f64>,
}

/// The proxy of `mirror` and `record`: the traffic it relayed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Proxy {
    /// Requests the proxy received.
    pub requests: u64,
    /// Of those, answered 502 or 504 by the proxy: the primary failed or
    /// timed out.
    pub errors: u64,
    /// Requests written to the record file (`--record`).
    pub recorded: u64,
    /// The primary's latency, from the request's arrival to its answer.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// Everything on the board at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub seq: u64,
    pub elapsed_s: f64,
    pub command: String,
    pub done: bool,
    pub labels: Option<TrialLabels>,
    pub phase: Phase,
    pub trials_done: u64,
    pub trials_total: Option<u64>,
    /// Every label set's counters seen so far (None: no trial's labels).
    pub(super) series: BTreeMap<Option<TrialLabels>, Series>,
    pub trial: Counts,
    pub seconds: Vec<Second>,
    pub latency: Option<LatencyNow>,
    pub server: Option<ServerNow>,
    pub telemetry: Option<TelemetryNow>,
    pub shadows: Vec<Shadow>,
    pub proxy: Option<Proxy>,
}

impl Snapshot {
    /// Every label set's errors by kind, added up.
    pub fn errors_by_kind(&self) -> ErrorCounts {
        let mut e = ErrorCounts::default();
        for s in self.series.values() {
            e.add(&s.errors);
        }
        e
    }

    /// The process's counts, every label set's added up: what the
    /// counters of `/metrics` add up to.
    pub fn totals(&self) -> Counts {
        let ok = self.series.values().map(|s| s.ok).sum();
        let errors = self.errors_by_kind().total();
        Counts {
            requests: ok + errors,
            ok,
            errors,
        }
    }

    /// The `rackbench/live-v1` document.
    pub fn to_json(&self) -> Value {
        let totals = self.totals();
        let kinds: BTreeMap<&str, u64> = error_kinds(&self.errors_by_kind()).into_iter().collect();
        json!({
            "schema": "rackbench/live-v1",
            "seq": self.seq,
            "elapsed_s": self.elapsed_s,
            "command": self.command,
            "done": self.done,
            "trial": self.labels,
            "phase": self.phase,
            "plan": {"trials_done": self.trials_done, "trials_total": self.trials_total},
            "totals": {
                "requests": totals.requests,
                "ok": totals.ok,
                "errors": totals.errors,
                "errors_by_kind": kinds,
            },
            "trial_totals": self.trial,
            "last_second": self.seconds.last(),
            "seconds": self.seconds,
            "latency": self.latency,
            "server": self.server,
            "telemetry": self.telemetry,
            "shadows": self.shadows,
            "proxy": self.proxy,
        })
    }
}

/// Every error kind, by the `ErrorCounts` field it is counted under, in
/// field order (the kinds with none included).
pub fn error_kinds(e: &ErrorCounts) -> [(&'static str, u64); 6] {
    [
        ("connect", e.connect),
        ("timeout", e.timeout),
        ("reset", e.reset),
        ("parse", e.parse),
        ("status", e.status),
        ("body", e.body),
    ]
}
