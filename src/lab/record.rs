//! The `rackbench/trial-v1` record: what one trial ran (server, app,
//! front), what it verified, what the load and the samplers saw, and where
//! it ran. Plain serde types; nothing here starts, reads or writes
//! anything.
//!
//! Why here and not beside the other records in `store/records.rs`: the
//! lab makes this record and `store` keeps it. `store` sits above `lab` in
//! the layer order (src/lib.rs's Layout, checked by tests/architecture.rs),
//! so a TrialRecord in `store` would make the lab import upward, and
//! `store` already imports it from here for its run records. Field names
//! are a contract (schema/trial-v1.schema.json); older records read with
//! defaults. `lab::trial` re-exports these types, where the rest of the
//! crate has always found them.

use super::apps::AppSpec;
use super::environment::Environment;
use super::front::HttpVersion;
use crate::load::report::LatencySummary;
use crate::load::LoadReport;
use crate::sampler::{Disturbance, SamplerReport};
use crate::telemetry::{AcceptQueue, Telemetry};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "rackbench/trial-v1";

/// Where the load enters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Topology {
    Direct,
    /// nginx in front, talking to the server over a unix socket (when the
    /// server can) or TCP.
    Nginx {
        workers: u32,
        unix_socket: bool,
        /// Upstream keep-alive pool per nginx worker; 0 is off.
        #[serde(default = "default_keepalive")]
        keepalive: u32,
        /// The HTTP version nginx speaks to the server: "1.0" or "1.1".
        #[serde(default)]
        http_version: HttpVersion,
        /// Copies of the server, each on its own socket or port, that
        /// nginx balances as one upstream (seed 000's four thin).
        #[serde(default = "one_instance")]
        instances: u32,
    },
}

fn default_keepalive() -> u32 {
    super::front::DEFAULT_KEEPALIVE
}
fn one_instance() -> u32 {
    1
}

impl Topology {
    /// nginx in front with rackbench's defaults: a unix socket when the
    /// server has one, a keep-alive pool of 64 over HTTP/1.1, one instance.
    pub fn nginx(workers: u32) -> Topology {
        Topology::Nginx {
            workers,
            unix_socket: true,
            keepalive: default_keepalive(),
            http_version: HttpVersion::default(),
            instances: 1,
        }
    }

    /// How many copies of the server this topology runs.
    pub fn instances(&self) -> u32 {
        match self {
            Topology::Direct => 1,
            Topology::Nginx { instances, .. } => (*instances).max(1),
        }
    }

    /// "direct", or the front's label ("nginx×1 http/1.0 keepalive off").
    pub fn label(&self) -> String {
        match self {
            Topology::Direct => "direct".into(),
            Topology::Nginx {
                workers,
                keepalive,
                http_version,
                ..
            } => super::front::label(*workers, *keepalive, *http_version),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerInfo {
    pub name: String,
    pub version: Option<String>,
    pub command: String,
    pub workers: u32,
    pub threads: u32,
    pub env: BTreeMap<String, String>,
    pub settings: BTreeMap<String, String>,
    /// The rendered config file, when the server uses one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_file: Option<String>,
    /// Copies of the server run side by side behind nginx (`command` is
    /// the first one's; all are in `commands`).
    #[serde(default = "one_instance")]
    pub instances: u32,
    /// Every instance's command line, when there is more than one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerMetrics {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub rss_peak_bytes: u64,
    pub pss_peak_bytes: Option<u64>,
    pub uss_peak_bytes: Option<u64>,
    pub rss_mean_bytes: u64,
    pub pss_mean_bytes: Option<u64>,
    pub processes_peak: u32,
    /// Server CPU (user + system) per OK response, in milliseconds.
    pub cpu_ms_per_request: Option<f64>,
    /// The full sampler output (timeline included).
    pub samples: SamplerReport,
    /// What the telemetry middleware saw inside the server, over the
    /// counted window (`--telemetry`; docs/TELEMETRY.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    /// The server's own listening socket's accept queue over the counted
    /// window, summed over its instances. Sampled on every trial: it needs
    /// nothing from the app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept_queue: Option<AcceptQueue>,
    /// The server's own view of its queue, per field its adapter names
    /// (puma: backlog, running, pool_capacity), summed over instances and
    /// workers, over the counted window. Telemetry on, servers with
    /// `stats` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_stats: Option<BTreeMap<String, AcceptQueue>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TopologyInfo {
    #[serde(flatten)]
    pub topology: Topology,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nginx_command: Option<String>,
    /// The first (or only) upstream server; all of them in `upstreams`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<String>,
    /// Every upstream server nginx balances over, one per instance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upstreams: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nginx_metrics: Option<SamplerReport>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verified {
    pub path: String,
    pub status: u16,
    pub body: String,
}

/// The `rackbench/trial-v1` record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialRecord {
    pub schema: String,
    /// RFC 3339 UTC, before the server was started.
    pub started_at: String,
    /// RFC 3339 UTC, once everything the trial started had stopped (empty
    /// in records made before this field existed).
    #[serde(default)]
    pub ended_at: String,
    pub server: ServerInfo,
    pub app: AppSpec,
    pub topology: TopologyInfo,
    pub verify: Verified,
    pub load: LoadReport,
    pub server_metrics: ServerMetrics,
    pub environment: Environment,
    /// Set when the server died during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_exit: Option<String>,
    /// CPU steal and the CPU of processes not the trial's on the server's
    /// and the generator's CPUs over the counted window (see
    /// `sampler::disturbance`). Absent in records made before it existed,
    /// null when the window never opened or /proc/stat was unreadable.
    #[serde(default)]
    pub disturbance: Option<Disturbance>,
    /// What the server ran with, read from inside its own process: the
    /// runtime's name, its Ruby, YJIT, allocator and server version
    /// (`runtime::inside`). Absent in records made before runtimes.
    #[serde(default)]
    pub runtime: Option<crate::runtime::RuntimeRecord>,
    /// The budget the server ran under and what its control group saw
    /// (`budget::BudgetRecord`); absent without a budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<crate::budget::BudgetRecord>,
    /// The restart under load (`--restart`): when, what the load saw
    /// around it, and the verdict; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<RestartRecord>,
    /// A soak's memory over time per worker, fitted (`lab::soak`); absent
    /// without `--soak`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<super::soak::SoakRecord>,
    /// The app's database (the `blog` app): which, its seed, the rows the
    /// load wrote and its server's process tree; absent for an app without
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<crate::database::DatabaseRecord>,
    /// Faults of the server the trial counted: workers that died while
    /// it went on, workers seen stopped (`lab::faults`). Empty lists when
    /// none; absent in records made before issue 36.
    #[serde(default)]
    pub faults: super::faults::Faults,
    /// `--profile`: where the server's CPU and time went over the counted
    /// window (`profile::Profile`, docs/PROFILES.md); absent when not
    /// profiled or when it could not be made (then `profile_error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::Profile>,
    /// Why `--profile` made no profile, in words (the load's figures are
    /// kept); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_error: Option<String>,
    /// PIDs that ignored the stop signal and needed SIGKILL.
    pub killed_after_grace: Vec<u32>,
    /// The load was ended early at its first second with errors (a
    /// break-point step that failed).
    #[serde(default)]
    pub stopped_on_errors: bool,
    /// Whether the telemetry middleware was on (false in records made
    /// before it existed).
    #[serde(default)]
    pub telemetry: bool,
    pub interrupted: bool,
    /// Where the server's log and rendered files are.
    pub dir: String,
}

impl TrialRecord {
    /// This trial as one step of a break-point search. A connection left
    /// unanswered, a server that died, or a load stopped at its first
    /// errors all make the step fail, besides the error counts.
    pub fn as_step(&self, level: f64) -> crate::search::StepResult {
        let mut step = crate::search::StepResult::from_load(level, &self.load);
        if self.server_exit.is_some() || self.stopped_on_errors {
            step.errors = step.errors.max(1);
        }
        step.why = self.server_exit.clone();
        // Each step starts a server of its own: nothing to settle.
        step.settle_s = 0.0;
        let m = &self.server_metrics;
        if let Some(t) = m.telemetry.as_ref().filter(|t| t.requests > 0) {
            step.app_p50_us = Some(t.app_us.p50);
            step.queue_p50_us = t.queue_us.map(|q| q.p50);
            step.gc_runs_per_1k_requests = Some(t.gc_runs_per_1k_requests);
        }
        step.accept_queue_max = m.accept_queue.as_ref().map(|q| q.max);
        step
    }
}

/// The record's `restart` (`lab::restart` computes it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RestartRecord {
    /// The kind performed: "phased", "reexec", "kill-worker", ...
    pub kind: String,
    /// When it was performed, seconds from the counted window's start.
    pub at_s: f64,
    /// "done", or "failed" (`why` says why): a failed restart is never
    /// zero-downtime.
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// From the signal (or the command's start) until it was done: every
    /// old worker exited and as many new ones answering; absent when it
    /// failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub took_ms: Option<u64>,
    /// Failed requests in the seconds from the restart until recovery
    /// (`during_s`), by kind.
    pub errors_during: RestartErrors,
    /// Requests sent and never answered in those seconds: connections
    /// reset after the request went out, and timeouts.
    pub requests_lost: u64,
    /// Latency of the OK responses in those seconds, their per-second
    /// histograms merged; null when none was answered.
    pub latency_during_us: Option<LatencySummary>,
    /// The baseline: median p99 and mean throughput of up to five full
    /// seconds before the one the restart began in.
    pub p99_before_us: Option<u64>,
    pub rps_before: Option<f64>,
    /// The lowest throughput of a full second among those judged.
    pub rps_min_during: Option<f64>,
    /// The seconds judged as "during", from the counted window's start:
    /// [start of the second the restart began in, end of the last second
    /// before recovery].
    pub during_s: Option<[f64; 2]>,
    /// From the restart until the first second that starts once it was
    /// done, with no errors, throughput within 10% of the baseline's and
    /// p99 within 10% of it; null when that never came within the window
    /// or the restart failed.
    pub recovered_after_ms: Option<u64>,
    /// The resolution of `recovered_after_ms`: the timeline's second.
    pub resolution_ms: u64,
    /// The server's processes just before and once done (sorted): for a
    /// phased restart only the master is in both.
    pub pids_before: Vec<u32>,
    pub pids_after: Vec<u32>,
    /// The workers the restart replaces, as they were when it began: the
    /// master's children (a signal), the one killed (kill-worker), the old
    /// master's (reexec), the processes that had answered (a command);
    /// sorted. Absent in records made before.
    #[serde(default)]
    pub old_workers: Vec<u32>,
    /// The processes that replaced them: the restart is done only once
    /// every old worker has exited and as many of these have answered a
    /// request (sorted; empty when it failed).
    #[serde(default)]
    pub new_workers: Vec<u32>,
    /// Each new worker was seen answering (the runtime wrapper marks a
    /// process's first answer); false when the server marks none (its
    /// command ignores `{{app}}`), so a new one counted once alive.
    #[serde(default)]
    pub new_workers_answered: bool,
    /// Done with no error in the seconds judged.
    pub zero_downtime: bool,
    /// In words: "zero-downtime: 0 errors, p99 rose from 4 ms to 310 ms
    /// for 1.7 s", "not zero-downtime: 37 connections refused; ...",
    /// "restart failed: ...".
    pub verdict: String,
}

/// A restart's failed requests by kind.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct RestartErrors {
    /// Connections refused (or otherwise not made).
    pub refused: u64,
    /// Connections closed or reset mid-exchange.
    pub reset: u64,
    /// Answered with a status of 500 or above (502 and 503 from nginx).
    #[serde(rename = "5xx")]
    pub status_5xx: u64,
    /// No complete answer within the load's timeout.
    pub timeout: u64,
    /// Any other failure: another unexpected status, a malformed answer,
    /// a body without the expected text.
    pub other: u64,
}

impl RestartErrors {
    pub fn total(&self) -> u64 {
        self.refused + self.reset + self.status_5xx + self.timeout + self.other
    }

    /// Adds one timeline second's failures.
    pub fn add(&mut self, row: &crate::load::report::TimelineRow) {
        let Some(k) = &row.error_kinds else {
            return;
        };
        self.refused += k.connect;
        self.reset += k.reset;
        self.timeout += k.timeout;
        let status_5xx = row.status_5xx.min(k.status);
        self.status_5xx += status_5xx;
        self.other += k.status - status_5xx + k.parse + k.body;
    }

    /// "37 connections refused, 2 reset, 5 answered 5xx".
    pub fn words(&self) -> String {
        let parts = [
            (self.refused, "connections refused", "connection refused"),
            (self.reset, "reset", "reset"),
            (self.status_5xx, "answered 5xx", "answered 5xx"),
            (self.timeout, "timed out", "timed out"),
            (self.other, "other errors", "other error"),
        ];
        parts
            .iter()
            .filter(|(n, ..)| *n > 0)
            .map(|(n, many, one)| format!("{n} {}", if *n == 1 { one } else { many }))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Readers accept records made before the disturbance record existed.
    #[test]
    fn a_record_without_a_disturbance_reads_as_none() {
        let text = include_str!("../../tests/contracts/trial-v1.json");
        let mut doc: serde_json::Value = serde_json::from_str(text).unwrap();
        let with: TrialRecord = serde_json::from_value(doc.clone()).unwrap();
        assert!(with.disturbance.is_some_and(|d| d.cpus == vec![0, 1]));
        doc.as_object_mut().unwrap().remove("disturbance");
        let old: TrialRecord = serde_json::from_value(doc).unwrap();
        assert!(old.disturbance.is_none());
    }

    /// A record's faults read back; records made before issue 36 read as
    /// none.
    #[test]
    fn a_records_faults_read_back_and_an_older_record_has_none() {
        let text = include_str!("../../tests/contracts/trial-v1-fault.json");
        let mut doc: serde_json::Value = serde_json::from_str(text).unwrap();
        let with: TrialRecord = serde_json::from_value(doc.clone()).unwrap();
        let d = &with.faults.worker_deaths;
        assert_eq!((d.len(), d[0].signal), (1, Some(9)));
        assert!(d[0].replaced_by.is_some());
        doc.as_object_mut().unwrap().remove("faults");
        let old: TrialRecord = serde_json::from_value(doc).unwrap();
        assert!(!old.faults.any());
    }

    /// Readers accept records made before memory per process existed.
    #[test]
    fn a_record_without_memory_per_process_reads_with_none() {
        let text = include_str!("../../tests/contracts/trial-v1.json");
        let mut doc: serde_json::Value = serde_json::from_str(text).unwrap();
        let with: TrialRecord = serde_json::from_value(doc.clone()).unwrap();
        let w = with.server_metrics.samples.per_worker.unwrap();
        assert_eq!((w.workers, w.role.as_str()), (1, "single"));
        let samples = doc["server_metrics"]["samples"].as_object_mut().unwrap();
        for key in ["per_process", "per_process_dropped", "per_worker"] {
            samples.remove(key);
        }
        let old: TrialRecord = serde_json::from_value(doc).unwrap();
        let s = &old.server_metrics.samples;
        assert!(s.per_process.is_empty() && s.per_worker.is_none());
    }

    /// A status failure counts as 5xx only for the answers of 500 or above;
    /// the rest of the statuses, parse and body failures are `other`.
    #[test]
    fn a_restarts_errors_are_sorted_by_kind_from_each_seconds_counts() {
        use crate::load::report::TimelineRow;
        let second = |kinds: Option<crate::load::ErrorCounts>, status_5xx| TimelineRow {
            t_s: 3,
            ok: 10,
            errors: kinds.map_or(0, |k| k.total()),
            p50_us: 1,
            p99_us: 2,
            rps: 10.0,
            warmup: false,
            span_s: 1.0,
            error_kinds: kinds,
            status_5xx,
        };
        let kinds = crate::load::ErrorCounts {
            connect: 3,
            timeout: 1,
            reset: 2,
            parse: 1,
            status: 5,
            body: 1,
        };
        let mut e = RestartErrors::default();
        e.add(&second(Some(kinds), 4));
        e.add(&second(None, 0));
        assert_eq!(
            e,
            RestartErrors {
                refused: 3,
                reset: 2,
                status_5xx: 4,
                timeout: 1,
                other: 3,
            }
        );
        assert_eq!(e.total(), kinds.total());
        assert_eq!(
            e.words(),
            "3 connections refused, 2 reset, 4 answered 5xx, 1 timed out, 3 other errors"
        );
        let one = RestartErrors {
            refused: 1,
            ..Default::default()
        };
        assert_eq!(one.words(), "1 connection refused");
        let json = serde_json::to_value(one).unwrap();
        assert_eq!(json["5xx"], 0, "the contract's name: {json}");
    }

    #[test]
    fn a_record_from_before_the_knobs_reads_as_the_front_it_ran_behind() {
        let old: Topology =
            serde_json::from_str(r#"{"kind":"nginx","workers":2,"unix_socket":true}"#).unwrap();
        assert_eq!(old, Topology::nginx(2));
        assert_eq!(old.label(), "nginx×2");
        let seed = Topology::Nginx {
            workers: 1,
            unix_socket: true,
            keepalive: 0,
            http_version: HttpVersion::V1_0,
            instances: 4,
        };
        let json = serde_json::to_value(&seed).unwrap();
        assert_eq!(json["http_version"], "1.0");
        assert_eq!(json["keepalive"], 0);
        assert_eq!(json["instances"], 4);
        assert_eq!(serde_json::from_value::<Topology>(json).unwrap(), seed);
    }
}
