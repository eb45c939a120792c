//! `rackbench/summary-v1`: the figures of each group of repeats, made from
//! the stored trials alone (so any report can rebuild it from disk).

use super::figures::TrialFigures;
use super::read::group_by;
use super::records::{Outcome, PlannedTrial, StoredTrial};
use crate::lab::trial::TrialRecord;
use crate::load::caveats::Caveats;
use crate::sampler::{PerWorker, Role};
use crate::stats::disturbance::DisturbedRuns;
use crate::stats::spread::Spread;
use serde::{Deserialize, Serialize};

/// Figures of one group (a trial and its repeats).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupSummary {
    pub group: String,
    pub server: String,
    pub variant: String,
    pub app: String,
    pub behind: String,
    pub connections: usize,
    pub rate: Option<f64>,
    pub runs: usize,
    pub failed: usize,
    pub throughput_rps: Spread,
    /// The latency figures over the good runs that have any (a run where
    /// every request was refused or failed has none: its `latency_us` is
    /// null); None, written null, when no run has.
    pub latency_mean_us: Option<Spread>,
    pub latency_stdev_us: Option<Spread>,
    pub latency_p50_us: Option<Spread>,
    pub latency_p99_us: Option<Spread>,
    pub latency_max_us: Option<Spread>,
    pub rss_peak_bytes: Spread,
    pub pss_peak_bytes: Option<Spread>,
    pub cpu_ms_per_request: Option<Spread>,
    pub errors: u64,
    /// What the figures cannot be trusted for, over the good runs (the
    /// worst run decides); every report renders its marks and notes.
    #[serde(default)]
    pub caveats: Caveats,
    /// Where the time went inside the server, over the good runs that had
    /// telemetry on; absent when none had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetrySummary>,
    /// The good runs the machine disturbed (steal or foreign CPU over the
    /// thresholds of `sampler::disturbance`): a caveat every report notes.
    #[serde(default)]
    pub disturbance: DisturbedRuns,
    /// Memory per worker over the good runs; None unless every one of
    /// them recorded it (records made before the sampler kept it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_worker: Option<PerWorkerSummary>,
}

/// Memory per worker of a group's good runs (`per_worker` of each run's
/// sampler, read through `TrialFigures`), each figure over runs: the
/// median, min and max of the runs' worker count, of their mean per
/// worker, and of the master's mean; the tree's USS peak beside them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PerWorkerSummary {
    /// `worker`, or `single` for a server without workers.
    pub role: Role,
    pub workers: Spread,
    pub rss_mean_bytes: Spread,
    pub pss_mean_bytes: Option<Spread>,
    pub uss_mean_bytes: Option<Spread>,
    /// The master's (mean over masters); None without one.
    pub master_pss_mean_bytes: Option<Spread>,
    pub master_uss_mean_bytes: Option<Spread>,
    /// The whole tree's USS peak.
    pub uss_peak_bytes: Option<Spread>,
}

impl PerWorkerSummary {
    /// None unless every run has memory per worker.
    pub fn of(figs: &[TrialFigures]) -> Option<PerWorkerSummary> {
        let all: Vec<&PerWorker> = figs
            .iter()
            .map(|f| f.per_worker.as_ref())
            .collect::<Option<_>>()?;
        let spread = |get: &dyn Fn(&PerWorker) -> Option<u64>| {
            let v: Option<Vec<f64>> = all.iter().map(|w| get(w).map(|b| b as f64)).collect();
            v.and_then(|v| Spread::of(&v))
        };
        let tree_uss: Option<Vec<f64>> = figs.iter().map(|f| f.uss_peak_bytes).collect();
        Some(PerWorkerSummary {
            role: all.first()?.role,
            workers: spread(&|w| Some(u64::from(w.workers)))?,
            rss_mean_bytes: spread(&|w| Some(w.memory.rss_mean_bytes))?,
            pss_mean_bytes: spread(&|w| w.memory.pss_mean_bytes),
            uss_mean_bytes: spread(&|w| w.memory.uss_mean_bytes),
            master_pss_mean_bytes: spread(&|w| w.master.as_ref()?.memory.pss_mean_bytes),
            master_uss_mean_bytes: spread(&|w| w.master.as_ref()?.memory.uss_mean_bytes),
            uss_peak_bytes: tree_uss.and_then(|v| Spread::of(&v)),
        })
    }
}

/// A group's telemetry figures, each the median and range over its runs.
/// Means add up where percentiles do not: the client's mean latency is
/// queue + app + the rest, so reports decompose it with `*_mean_us`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TelemetrySummary {
    /// Runs with telemetry figures.
    pub runs: usize,
    pub app_p50_us: Spread,
    pub app_mean_us: Spread,
    /// Only behind nginx (requests stamped with X-Request-Start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_p50_us: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_mean_us: Option<Spread>,
    /// GC time per request, µs (GC time over requests): the GC part of
    /// `app_mean_us`. Absent on a Ruby without `GC.stat(:time)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc_mean_us: Option<Spread>,
    pub gc_runs_per_1k_requests: Spread,
    /// GC time over app time. GC the server triggers outside the app's
    /// call counts too, so on a tiny app it can exceed 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc_time_share: Option<Spread>,
    /// Time in SQL and waiting for a pool connection per request
    /// (ActiveRecord's instrumentation), µs: parts of `app_mean_us`.
    /// Absent for an app without ActiveRecord.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_p50_us: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_mean_us: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_wait_p50_us: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_wait_p99_us: Option<Spread>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_wait_mean_us: Option<Spread>,
}

impl TelemetrySummary {
    /// Over the runs whose record has telemetry figures (with requests);
    /// None when there are none.
    pub fn of(runs: &[&TrialRecord]) -> Option<TelemetrySummary> {
        let tel: Vec<&crate::telemetry::Telemetry> = runs
            .iter()
            .filter_map(|r| r.server_metrics.telemetry.as_ref())
            .filter(|t| t.requests > 0)
            .collect();
        let spread = |get: &dyn Fn(&crate::telemetry::Telemetry) -> Option<f64>| {
            let v: Vec<f64> = tel.iter().filter_map(|t| get(t)).collect();
            // A figure some runs lack is left out rather than half-told.
            if v.len() == tel.len() {
                Spread::of(&v)
            } else {
                None
            }
        };
        Some(TelemetrySummary {
            runs: tel.len(),
            app_p50_us: spread(&|t| Some(t.app_us.p50))?,
            app_mean_us: spread(&|t| Some(t.app_us.mean))?,
            queue_p50_us: spread(&|t| t.queue_us.map(|q| q.p50)),
            queue_mean_us: spread(&|t| t.queue_us.map(|q| q.mean)),
            gc_mean_us: spread(&|t| t.gc_time_ms.map(|ms| ms * 1000.0 / t.requests as f64)),
            gc_runs_per_1k_requests: spread(&|t| Some(t.gc_runs_per_1k_requests))?,
            gc_time_share: spread(&|t| t.gc_time_share),
            db_p50_us: spread(&|t| t.db_us.map(|q| q.p50)),
            db_mean_us: spread(&|t| t.db_us.map(|q| q.mean)),
            pool_wait_p50_us: spread(&|t| t.pool_wait_us.map(|q| q.p50)),
            pool_wait_p99_us: spread(&|t| t.pool_wait_us.map(|q| q.p99)),
            pool_wait_mean_us: spread(&|t| t.pool_wait_us.map(|q| q.mean)),
        })
    }
}

/// The summary of `trials`, grouped by their `group`: median and range,
/// the groups in natural order of their names (`Study::summary` gives a
/// study's).
pub fn summarize_trials(trials: &[StoredTrial]) -> Vec<GroupSummary> {
    let groups = group_by(trials, |p| Some(p.group.clone()));
    let mut out: Vec<GroupSummary> = groups
        .into_iter()
        .map(|(group, trials)| GroupSummary::of(group, &trials[0].planned, &trials))
        .collect();
    // "puma__hello__direct__c2" before "…__c16", as every report orders.
    out.sort_by(|a, b| crate::units::natural_cmp(&a.group, &b.group));
    out
}

impl GroupSummary {
    /// A group no trial of which has a record (a run interrupted before
    /// it): no run, every figure absent or zero; reports show "-" and "not
    /// run", never 0 req/s.
    pub fn not_run(p: &PlannedTrial) -> GroupSummary {
        GroupSummary::of(p.group.clone(), p, &[])
    }

    /// The summary of one group's `trials` (planned as `p`).
    fn of(group: String, p: &PlannedTrial, trials: &[&StoredTrial]) -> GroupSummary {
        let ok: Vec<&TrialRecord> = trials
            .iter()
            .filter(|t| t.outcome == Outcome::Ok)
            .filter_map(|t| t.trial.as_ref())
            .collect();
        let figs: Vec<TrialFigures> = ok.iter().map(|r| TrialFigures::of(r)).collect();
        let f = |get: &dyn Fn(&TrialFigures) -> Option<f64>| {
            Spread::of(&figs.iter().filter_map(get).collect::<Vec<_>>())
        };
        let zero = Spread {
            median: 0.0,
            min: 0.0,
            max: 0.0,
            n: 0,
        };
        let mut disturbance = DisturbedRuns::default();
        for fig in &figs {
            disturbance.add(fig.disturbance.as_ref());
        }
        GroupSummary {
            group,
            server: p.server.clone(),
            variant: p.variant.clone(),
            app: p.app.clone(),
            behind: p.behind.clone(),
            connections: p.shape.connections,
            rate: p.shape.rate,
            runs: ok.len(),
            failed: trials
                .iter()
                .filter(|t| t.outcome == Outcome::Failed)
                .count(),
            throughput_rps: f(&|r| Some(r.throughput_rps)).unwrap_or(zero),
            latency_mean_us: f(&|r| r.latency_mean_us),
            latency_stdev_us: f(&|r| r.latency_stdev_us),
            latency_p50_us: f(&|r| r.latency_p50_us),
            latency_p99_us: f(&|r| r.latency_p99_us),
            latency_max_us: f(&|r| r.latency_max_us),
            rss_peak_bytes: f(&|r| Some(r.rss_peak_bytes)).unwrap_or(zero),
            // A peak some runs lack is left out rather than half-told.
            pss_peak_bytes: if figs.iter().all(|r| r.pss_peak_bytes.is_some()) {
                f(&|r| r.pss_peak_bytes)
            } else {
                None
            },
            cpu_ms_per_request: f(&|r| r.cpu_ms_per_request),
            errors: figs.iter().map(|r| r.errors).sum(),
            caveats: Caveats::merge(ok.iter().map(|r| &r.load)).unwrap_or_default(),
            telemetry: TelemetrySummary::of(&ok),
            disturbance,
            per_worker: PerWorkerSummary::of(&figs),
        }
    }
}
