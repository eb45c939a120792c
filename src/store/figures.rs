//! The one list of the figures a trial has, computed in one place from
//! its typed record: throughput, each latency percentile, RSS/PSS peak,
//! memory per worker, CPU per request and per core, the error share, the telemetry figures,
//! the disturbance, the runtime it ran on, its budget, its slow clients,
//! its figures per endpoint of a mix and its database. The summary, `compare`, the sweep and the reports
//! all take their numbers from [`TrialFigures::of`], so they cannot
//! disagree about one; the statistics (`stats`) get them as plain numbers.
//!
//! A new figure is added here: a field, its line in `of`, and, when
//! compare and sweep should judge it, a row of `stats::compare::METRICS`
//! and its arm in [`TrialFigures::metric`] (a test checks every row has
//! one). It never reads a file: `store::read` does.

use super::budget::TrialBudget;
use super::database::TrialDatabase;
use super::endpoints::TrialEndpoint;
use super::runtime::RanOn;
use super::slow::TrialSlow;
use crate::lab::trial::TrialRecord;
use crate::sampler::PerWorker;
use crate::stats::compare::METRICS;
use crate::stats::disturbance::RunDisturbance;

/// Every figure of one trial record. Latency figures are None when no
/// request completed (the record's `latency_us` is null); telemetry ones
/// when the trial ran without it (or the Ruby lacks the figure).
#[derive(Debug, Clone, PartialEq)]
pub struct TrialFigures {
    pub throughput_rps: f64,
    pub latency_mean_us: Option<f64>,
    pub latency_stdev_us: Option<f64>,
    pub latency_p50_us: Option<f64>,
    pub latency_p90_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub latency_max_us: Option<f64>,
    pub rss_peak_bytes: f64,
    pub pss_peak_bytes: Option<f64>,
    /// The tree's USS peak; None when smaps_rollup was unreadable.
    pub uss_peak_bytes: Option<f64>,
    /// Memory per worker (of the lone process for a server without
    /// workers) and of the master, over the counted window; None in
    /// records made before the sampler kept it.
    pub per_worker: Option<PerWorker>,
    pub cpu_ms_per_request: Option<f64>,
    /// Server CPU (user + system) over the counted window, seconds.
    pub cpu_s: f64,
    /// The counted window of the load, seconds.
    pub window_s: f64,
    /// Requests counted in the window, OK and failed.
    pub requests: u64,
    /// Failed requests, and their share of all counted requests (None
    /// when none was counted).
    pub errors: u64,
    pub error_share: Option<f64>,
    pub gc_runs_per_1k_requests: Option<f64>,
    pub gc_time_share: Option<f64>,
    pub queue_mean_us: Option<f64>,
    pub app_mean_us: Option<f64>,
    /// Mean time per request in SQL and waiting for a pool connection
    /// (ActiveRecord's instrumentation), µs; None for an app without
    /// ActiveRecord or a trial without telemetry.
    pub db_mean_us: Option<f64>,
    pub pool_wait_mean_us: Option<f64>,
    /// Who got served (`load.fairness`): connections that carried a
    /// request in the window and got no answer, and Jain's index over the
    /// answers per connection; None in records made before it.
    pub connections_starved: Option<f64>,
    pub jain_index: Option<f64>,
    /// Connections answered per client (`load.fairness`); None in
    /// records made before it.
    pub connections_answered: Option<f64>,
    /// The load's connections as configured (one per client), the
    /// sockets it opened (reconnects included) and those of them that
    /// carried a request and never got a byte back
    /// (`load.connections`).
    pub connections_configured: f64,
    pub connections_opened: f64,
    pub never_answered: f64,
    /// Each app process's share of the requests telemetry counted
    /// (`server_metrics.telemetry.per_worker[].share`, from its requests
    /// when the share is absent), busiest first; empty without telemetry.
    pub worker_shares: Vec<f64>,
    /// What the machine did during the run; None in records made before
    /// it was measured.
    pub disturbance: Option<RunDisturbance>,
    /// Which Ruby and switches the server ran with; None in records made
    /// before runtimes (unknown).
    pub runtime: Option<RanOn>,
    /// The budget it ran under and what its control group saw (peak,
    /// kills for memory, throttling); None when it ran without one.
    pub budget: Option<TrialBudget>,
    /// The slow clients beside its load and what they saw (accepted,
    /// closed by the server, held); None when it ran without them.
    pub slow: Option<TrialSlow>,
    /// Its figures per endpoint of a mix, in the mix's order; empty
    /// without a mix.
    pub endpoints: Vec<TrialEndpoint>,
    /// The database behind its app (rows seeded and written, the
    /// database server's CPU and memory); None without one.
    pub database: Option<TrialDatabase>,
}

impl TrialFigures {
    pub fn of(r: &TrialRecord) -> TrialFigures {
        let (load, sm) = (&r.load, &r.server_metrics);
        let l = &load.latency_us;
        // Runs with no latency figure (count 0) have none to give, not 0.
        let lat = |v: f64| l.has_figures().then_some(v);
        let tel = sm.telemetry.as_ref();
        TrialFigures {
            throughput_rps: load.throughput_rps,
            latency_mean_us: lat(l.mean),
            latency_stdev_us: lat(l.stdev),
            latency_p50_us: lat(l.p50 as f64),
            latency_p90_us: lat(l.p90 as f64),
            latency_p99_us: lat(l.p99 as f64),
            latency_max_us: lat(l.max as f64),
            rss_peak_bytes: sm.rss_peak_bytes as f64,
            pss_peak_bytes: sm.pss_peak_bytes.map(|b| b as f64),
            uss_peak_bytes: sm.uss_peak_bytes.map(|b| b as f64),
            per_worker: sm.samples.per_worker.clone(),
            cpu_ms_per_request: sm.cpu_ms_per_request,
            cpu_s: sm.cpu_user_s + sm.cpu_sys_s,
            window_s: load.duration_s,
            requests: load.requests.total,
            errors: load.errors.total(),
            error_share: (load.requests.total > 0)
                .then(|| load.errors.total() as f64 / load.requests.total as f64),
            gc_runs_per_1k_requests: tel.map(|t| t.gc_runs_per_1k_requests),
            gc_time_share: tel.and_then(|t| t.gc_time_share),
            queue_mean_us: tel.and_then(|t| t.queue_us.map(|q| q.mean)),
            app_mean_us: tel.map(|t| t.app_us.mean),
            db_mean_us: tel.and_then(|t| t.db_us.map(|q| q.mean)),
            pool_wait_mean_us: tel.and_then(|t| t.pool_wait_us.map(|q| q.mean)),
            connections_starved: (load.fairness.as_ref()).map(|f| f.connections_starved as f64),
            jain_index: load.fairness.as_ref().and_then(|f| f.jain_index),
            connections_answered: (load.fairness.as_ref()).map(|f| f.connections_answered as f64),
            connections_configured: load.connections.configured as f64,
            connections_opened: load.connections.opened as f64,
            never_answered: load.connections.never_answered as f64,
            worker_shares: tel.map_or_else(Vec::new, |t| worker_shares(&t.per_worker)),
            disturbance: r.disturbance.as_ref().map(|d| RunDisturbance {
                disturbed: d.disturbed,
                steal_share: d.steal_share,
                foreign_cpu_share: d.foreign_cpu_share,
                threshold_steal_share: Some(d.threshold_steal_share),
                threshold_foreign_cpu_share: Some(d.threshold_foreign_cpu_share),
            }),
            runtime: RanOn::of(r),
            budget: r.budget.as_ref().map(TrialBudget::of),
            slow: load.slow_clients.as_ref().map(TrialSlow::of),
            endpoints: load
                .endpoints
                .iter()
                .map(|e| TrialEndpoint::of(e, tel.and_then(|t| t.endpoints.get(&e.name))))
                .collect(),
            database: r.database.as_ref().map(TrialDatabase::of),
        }
    }

    /// The figure of a metric of `stats::compare::METRICS` (by its name
    /// in compare-v1), or "cpu_utilization" on `cores` cores; None when
    /// the record lacks it or it is not a finite number.
    pub fn metric(&self, name: &str, cores: f64) -> Option<f64> {
        let v = match name {
            "throughput" => Some(self.throughput_rps),
            "p50" => self.latency_p50_us,
            "p90" => self.latency_p90_us,
            "p99" => self.latency_p99_us,
            "rss_peak" => Some(self.rss_peak_bytes),
            "pss_peak" => self.pss_peak_bytes,
            "cpu_per_request" => self.cpu_ms_per_request,
            "error_rate" => self.error_share,
            "connections_starved" => self.connections_starved,
            "jain_index" => self.jain_index,
            "gc_runs_per_1k_requests" => self.gc_runs_per_1k_requests,
            "gc_time_share" => self.gc_time_share,
            "queue_us_mean" => self.queue_mean_us,
            "app_us_mean" => self.app_mean_us,
            "db_us_mean" => self.db_mean_us,
            "pool_wait_us_mean" => self.pool_wait_mean_us,
            "cpu_utilization" => self.cpu_utilization(cores),
            _ => None,
        };
        v.filter(|v| v.is_finite())
    }

    /// Every metric of `METRICS` this trial has, in table order.
    pub fn by_metric(&self) -> Vec<(&'static str, f64)> {
        METRICS
            .iter()
            .filter_map(|m| self.metric(m.0, 1.0).map(|v| (m.0, v)))
            .collect()
    }

    /// Every per-endpoint metric `compare` judges
    /// (`store::endpoints::ENDPOINT_METRICS`), named
    /// `endpoint:NAME:METRIC`; empty without a mix.
    pub fn endpoint_metrics(&self) -> Vec<(String, f64)> {
        super::endpoints::metrics(&self.endpoints)
    }

    /// The figures of memory per worker a sweep shows per value, by name:
    /// the worker count and the mean over workers of each one's mean RSS,
    /// PSS and USS, in bytes; the ones the record lacks are left out.
    pub fn per_worker_figures(&self) -> Vec<(&'static str, f64)> {
        let Some(w) = &self.per_worker else {
            return Vec::new();
        };
        let m = &w.memory;
        [
            ("workers", Some(u64::from(w.workers))),
            ("worker_rss_mean_bytes", Some(m.rss_mean_bytes)),
            ("worker_pss_mean_bytes", m.pss_mean_bytes),
            ("worker_uss_mean_bytes", m.uss_mean_bytes),
        ]
        .into_iter()
        .filter_map(|(name, v)| v.map(|v| (name, v as f64)))
        .collect()
    }

    /// Requests counted in the window ÷ the server's workers (its one
    /// process for a server without workers); None when the record does
    /// not say how many workers (made before memory per worker).
    pub fn requests_per_worker(&self) -> Option<f64> {
        let workers = self.per_worker.as_ref()?.workers;
        (workers > 0).then(|| self.requests as f64 / f64::from(workers))
    }

    /// Server CPU seconds over the counted window ÷ (window × `cores`):
    /// 1.0 is every core the server was given busy all the time.
    pub fn cpu_utilization(&self, cores: f64) -> Option<f64> {
        (self.window_s > 0.0)
            .then(|| self.cpu_s / (self.window_s * cores))
            .filter(|u| u.is_finite())
    }
}

/// Each process's share of `workers`' requests, busiest first; empty
/// when they answered none.
fn worker_shares(workers: &[crate::telemetry::WorkerTelemetry]) -> Vec<f64> {
    let total: u64 = workers.iter().map(|w| w.requests).sum();
    if total == 0 {
        return Vec::new();
    }
    let mut v: Vec<f64> = (workers.iter())
        .map(|w| w.share.unwrap_or(w.requests as f64 / total as f64))
        .collect();
    v.sort_by(|a, b| b.total_cmp(a));
    v
}

/// Puma's "% deviation" of `shares` (of n workers): the largest
/// |share − 1/n| over 1/n, 0 when all answered as many; None without a
/// share.
pub fn worker_deviation(shares: &[f64]) -> Option<f64> {
    let even = 1.0 / shares.len() as f64;
    (shares.iter())
        .map(|s| (s - even).abs() / even)
        .max_by(f64::total_cmp)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::records::StoredTrial;

    /// The committed sample of a stored trial (tests/contracts), changed
    /// by `edit`: the one fixture of a whole, readable record.
    pub(crate) fn stored(edit: impl FnOnce(&mut serde_json::Value)) -> serde_json::Value {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/contracts/run-trial-v1.json")).unwrap();
        edit(&mut v);
        v
    }

    fn figures(edit: impl FnOnce(&mut serde_json::Value)) -> TrialFigures {
        let t: StoredTrial = serde_json::from_value(stored(edit)).unwrap();
        TrialFigures::of(t.trial.as_ref().unwrap())
    }

    #[test]
    fn every_metric_compare_knows_is_a_figure_of_a_trial() {
        let f = figures(|v| {
            let mut t: serde_json::Value =
                serde_json::from_str(include_str!("../../tests/contracts/telemetry-v1.json"))
                    .unwrap();
            t["app_us"]["mean"] = 2.0.into();
            // An app with ActiveRecord: its SQL and pool-wait figures.
            let q = serde_json::json!({"p50": 1.0, "p90": 2.0, "p99": 3.0, "mean": 1.5});
            t["db_us"] = q.clone();
            t["pool_wait_us"] = q;
            v["trial"]["server_metrics"]["telemetry"] = t;
            v["trial"]["load"]["fairness"] = serde_json::json!({
                "connections_answered": 3, "connections_starved": 1,
                "top10_share": 0.5, "jain_index": 0.75
            });
        });
        let names: Vec<&str> = f.by_metric().iter().map(|m| m.0).collect();
        let all: Vec<&str> = METRICS.iter().map(|m| m.0).collect();
        assert_eq!(
            names, all,
            "a METRICS row without its arm in TrialFigures::metric"
        );
        assert_eq!(f.metric("app_us_mean", 1.0), Some(2.0));
        assert_eq!(f.metric("connections_starved", 1.0), Some(1.0));
        assert_eq!(f.metric("jain_index", 1.0), Some(0.75));
        assert_eq!(f.metric("no such metric", 1.0), None);
    }

    #[test]
    fn worker_shares_and_pumas_deviation() {
        use crate::telemetry::WorkerTelemetry;
        let w = |requests, share| WorkerTelemetry {
            requests,
            share,
            ..Default::default()
        };
        let shares = worker_shares(&[w(30, None), w(50, None), w(10, None), w(10, None)]);
        assert_eq!(shares, [0.5, 0.3, 0.1, 0.1]);
        // 0.5 against an even 0.25: 100% over.
        assert_eq!(worker_deviation(&shares), Some(1.0));
        assert_eq!(worker_deviation(&[0.5, 0.5]), Some(0.0));
        assert_eq!(worker_deviation(&[]), None);
        assert_eq!(worker_shares(&[w(0, None)]), Vec::<f64>::new());
        assert_eq!(
            worker_shares(&[w(3, Some(0.75)), w(1, Some(0.25))]),
            [0.75, 0.25]
        );
    }

    #[test]
    fn memory_per_worker_is_read_from_the_sampler_and_absent_in_older_records() {
        let f = figures(|_| {});
        let names: Vec<&str> = f.per_worker_figures().iter().map(|m| m.0).collect();
        assert_eq!(
            names,
            [
                "workers",
                "worker_rss_mean_bytes",
                "worker_pss_mean_bytes",
                "worker_uss_mean_bytes"
            ]
        );
        assert_eq!(f.per_worker_figures()[0].1, 1.0, "puma --workers 0: one");
        let no_pss = figures(|v| {
            v["trial"]["server_metrics"]["samples"]["per_worker"]["pss_mean_bytes"] =
                serde_json::Value::Null;
        });
        assert_eq!(no_pss.per_worker_figures().len(), 3, "PSS left out");
        let old = figures(|v| {
            let s = v["trial"]["server_metrics"]["samples"]
                .as_object_mut()
                .unwrap();
            s.remove("per_worker");
        });
        assert!(old.per_worker.is_none() && old.per_worker_figures().is_empty());
    }

    #[test]
    fn requests_per_worker_needs_the_worker_count() {
        let f = figures(|v| {
            v["trial"]["load"]["requests"]["total"] = 900.into();
            v["trial"]["server_metrics"]["samples"]["per_worker"]["workers"] = 3.into();
        });
        assert_eq!((f.requests, f.requests_per_worker()), (900, Some(300.0)));
        let none = figures(|v| {
            v["trial"]["server_metrics"]["samples"]["per_worker"]["workers"] = 0.into();
        });
        assert_eq!(none.requests_per_worker(), None, "no worker counted");
        let old = figures(|v| {
            let s = v["trial"]["server_metrics"]["samples"]
                .as_object_mut()
                .unwrap();
            s.remove("per_worker");
        });
        assert_eq!(old.requests_per_worker(), None, "made before per_worker");
    }

    #[test]
    fn the_budget_is_read_from_the_record_and_absent_without_one() {
        assert!(figures(|_| {}).budget.is_none(), "no budget: none");
        let t: StoredTrial = serde_json::from_str(include_str!(
            "../../tests/contracts/run-trial-v1-budget.json"
        ))
        .unwrap();
        let b = TrialFigures::of(t.trial.as_ref().unwrap()).budget.unwrap();
        assert_eq!(b.memory_limit_bytes, Some(256 << 20));
        assert_eq!((b.oom_kills, b.kill_note()), (0, None));
        assert!(b.memory_peak_bytes.is_some());
    }

    /// (case, edit, p50, error share, cpu utilization on 2 cores)
    #[test]
    fn figures_follow_the_record() {
        type Row = (
            &'static str,
            fn(&mut serde_json::Value),
            bool,
            Option<f64>,
            bool,
        );
        let rows: Vec<Row> = vec![
            ("the sample", |_| {}, true, Some(0.0), true),
            (
                "nothing completed: no latency, not 0",
                |v| {
                    v["trial"]["load"]["latency_us"] = serde_json::json!({"count": 0, "min": null,
                        "mean": null, "stdev": null, "p50": null, "p90": null, "p99": null,
                        "p999": null, "max": null});
                },
                false,
                Some(0.0),
                true,
            ),
            (
                "no request counted: no error share",
                |v| v["trial"]["load"]["requests"]["total"] = 0.into(),
                true,
                None,
                true,
            ),
            (
                "no window: no utilization",
                |v| v["trial"]["load"]["duration_s"] = 0.0.into(),
                true,
                Some(0.0),
                false,
            ),
        ];
        for (case, edit, p50, share, cpu) in rows {
            let f = figures(edit);
            assert_eq!(f.latency_p50_us.is_some(), p50, "{case}");
            assert_eq!(f.error_share, share, "{case}");
            assert_eq!(f.cpu_utilization(2.0).is_some(), cpu, "{case}");
        }
    }
}
