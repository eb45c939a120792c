//! A trial's endpoints as reports and `compare` see them (a mix's, from
//! its load's `endpoints`, `load::report::EndpointReport`):
//! [`TrialEndpoint`] is one endpoint of one trial, [`GroupEndpoint`] one
//! endpoint of a group over its runs (median and range across repeats,
//! like every other figure), and [`metrics`] the per-endpoint figures
//! `compare` judges (`stats::compare::ENDPOINT_METRICS`), named
//! `endpoint:NAME:METRIC`.
//!
//! It never reads a file (`read` does). A record without a mix has no
//! endpoints here: no table, no row, the reports as they were.

use crate::load::report::EndpointReport;
use crate::stats::compare::{endpoint_metric, ENDPOINT_METRICS};
use crate::stats::spread::Spread;
use crate::telemetry::EndpointTelemetry;
use serde::Serialize;
use std::collections::BTreeMap;

/// One endpoint of one trial.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialEndpoint {
    pub name: String,
    pub method: String,
    pub path: String,
    pub requests: u64,
    pub ok: u64,
    pub throughput_rps: f64,
    /// None when none of its requests completed OK (no figure, not 0).
    pub latency_p50_us: Option<f64>,
    pub latency_p90_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub errors: u64,
    /// Failed requests by kind (load-v1's `errors` names: "status",
    /// "timeout"...), the kinds with any.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Inside the app (telemetry's per-endpoint figures; None without
    /// telemetry): its app time, and its SQL and pool-wait time with
    /// ActiveRecord, µs.
    pub app_p50_us: Option<f64>,
    pub app_mean_us: Option<f64>,
    pub db_p50_us: Option<f64>,
    pub db_mean_us: Option<f64>,
    pub pool_wait_p50_us: Option<f64>,
    pub pool_wait_p99_us: Option<f64>,
}

impl TrialEndpoint {
    /// From the load's figures for it and, with telemetry, the app's.
    pub fn of(e: &EndpointReport, inside: Option<&EndpointTelemetry>) -> TrialEndpoint {
        let l = &e.latency_us;
        let lat = |v: u64| l.has_figures().then_some(v as f64);
        TrialEndpoint {
            name: e.name.clone(),
            method: e.method.clone(),
            path: e.path.clone(),
            requests: e.requests,
            ok: e.ok,
            throughput_rps: e.throughput_rps,
            latency_p50_us: lat(l.p50),
            latency_p90_us: lat(l.p90),
            latency_p99_us: lat(l.p99),
            errors: e.errors.total(),
            errors_by_kind: e.errors.by_kind().into_iter().collect(),
            app_p50_us: inside.filter(|t| t.requests > 0).map(|t| t.app_us.p50),
            app_mean_us: inside.filter(|t| t.requests > 0).map(|t| t.app_us.mean),
            db_p50_us: inside.and_then(|t| t.db_us.map(|q| q.p50)),
            db_mean_us: inside.and_then(|t| t.db_us.map(|q| q.mean)),
            pool_wait_p50_us: inside.and_then(|t| t.pool_wait_us.map(|q| q.p50)),
            pool_wait_p99_us: inside.and_then(|t| t.pool_wait_us.map(|q| q.p99)),
        }
    }

    /// A metric of `stats::compare::ENDPOINT_METRICS` by its short name; None when the
    /// endpoint lacks it.
    pub fn metric(&self, name: &str) -> Option<f64> {
        match name {
            "throughput" => Some(self.throughput_rps),
            "p50" => self.latency_p50_us,
            "p90" => self.latency_p90_us,
            "p99" => self.latency_p99_us,
            _ => None,
        }
        .filter(|v| v.is_finite())
    }
}

/// Every per-endpoint metric of a trial, in the mix's order, then
/// `ENDPOINT_METRICS`'s.
pub fn metrics(endpoints: &[TrialEndpoint]) -> Vec<(String, f64)> {
    endpoints
        .iter()
        .flat_map(|e| {
            ENDPOINT_METRICS
                .iter()
                .filter_map(|m| e.metric(m.0).map(|v| (endpoint_metric(&e.name, m.0), v)))
        })
        .collect()
}

/// One endpoint of a group over its runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupEndpoint {
    pub name: String,
    pub method: String,
    pub path: String,
    /// Its runs (those of the group's runs that had it).
    pub runs: usize,
    /// Requests issued to it over those runs.
    pub requests: u64,
    /// Its requests ÷ all endpoints' requests, over the group's runs.
    pub share: f64,
    pub throughput_rps: Spread,
    /// Over the runs with a latency figure; None when no run has one.
    pub latency_p50_us: Option<Spread>,
    pub latency_p90_us: Option<Spread>,
    pub latency_p99_us: Option<Spread>,
    /// Failed requests over its runs, and by kind.
    pub errors: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Inside the app over the runs with telemetry (None without): app
    /// time, SQL and pool wait (with ActiveRecord), µs.
    pub app_p50_us: Option<Spread>,
    pub app_mean_us: Option<Spread>,
    pub db_p50_us: Option<Spread>,
    pub db_mean_us: Option<Spread>,
    pub pool_wait_p50_us: Option<Spread>,
    pub pool_wait_p99_us: Option<Spread>,
}

impl GroupEndpoint {
    /// Whether telemetry timed it inside the app.
    pub fn has_inside(&self) -> bool {
        self.app_p50_us.is_some()
    }

    /// Whether its SQL was timed (an app with ActiveRecord).
    pub fn has_database(&self) -> bool {
        self.db_p50_us.is_some()
    }
}

/// The kinds' counts summed over runs.
fn sum_kinds<'a>(runs: impl Iterator<Item = &'a TrialEndpoint>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (k, n) in runs.flat_map(|e| &e.errors_by_kind) {
        *out.entry(k.clone()).or_insert(0) += n;
    }
    out
}

impl GroupEndpoint {
    /// Each endpoint over `runs` (each run's endpoints), in the order
    /// first met; empty when no run had a mix.
    pub fn of(runs: &[Vec<TrialEndpoint>]) -> Vec<GroupEndpoint> {
        let mut names: Vec<&str> = Vec::new();
        for e in runs.iter().flatten() {
            if !names.contains(&e.name.as_str()) {
                names.push(&e.name);
            }
        }
        let all: u64 = runs.iter().flatten().map(|e| e.requests).sum();
        names
            .into_iter()
            .map(|name| {
                let its: Vec<&TrialEndpoint> =
                    runs.iter().flatten().filter(|e| e.name == name).collect();
                let spread = |get: fn(&TrialEndpoint) -> Option<f64>| {
                    let v: Vec<f64> = its.iter().filter_map(|e| get(e)).collect();
                    Spread::of(&v)
                };
                let requests = its.iter().map(|e| e.requests).sum();
                GroupEndpoint {
                    name: name.to_string(),
                    method: its[0].method.clone(),
                    path: its[0].path.clone(),
                    runs: its.len(),
                    requests,
                    share: if all > 0 {
                        requests as f64 / all as f64
                    } else {
                        0.0
                    },
                    throughput_rps: spread(|e| Some(e.throughput_rps))
                        .expect("an endpoint has a run"),
                    latency_p50_us: spread(|e| e.latency_p50_us),
                    latency_p90_us: spread(|e| e.latency_p90_us),
                    latency_p99_us: spread(|e| e.latency_p99_us),
                    errors: its.iter().map(|e| e.errors).sum(),
                    errors_by_kind: sum_kinds(its.iter().copied()),
                    app_p50_us: spread(|e| e.app_p50_us),
                    app_mean_us: spread(|e| e.app_mean_us),
                    db_p50_us: spread(|e| e.db_p50_us),
                    db_mean_us: spread(|e| e.db_mean_us),
                    pool_wait_p50_us: spread(|e| e.pool_wait_p50_us),
                    pool_wait_p99_us: spread(|e| e.pool_wait_p99_us),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(name: &str, requests: u64, rps: f64, p99: Option<f64>) -> TrialEndpoint {
        TrialEndpoint {
            name: name.into(),
            method: "GET".into(),
            path: format!("/{name}"),
            requests,
            ok: requests,
            throughput_rps: rps,
            latency_p50_us: p99.map(|p| p / 2.0),
            latency_p90_us: p99,
            latency_p99_us: p99,
            errors: 1,
            errors_by_kind: [("status".to_string(), 1)].into(),
            app_p50_us: None,
            app_mean_us: None,
            db_p50_us: None,
            db_mean_us: None,
            pool_wait_p50_us: None,
            pool_wait_p99_us: None,
        }
    }

    #[test]
    fn a_group_endpoint_is_the_median_and_range_over_the_runs_that_had_it() {
        let runs = vec![
            vec![
                ep("index", 300, 30.0, Some(900.0)),
                ep("show", 100, 10.0, None),
            ],
            vec![
                ep("index", 300, 32.0, Some(1100.0)),
                ep("show", 100, 12.0, Some(50.0)),
            ],
            vec![ep("index", 200, 20.0, Some(1000.0))],
        ];
        let g = GroupEndpoint::of(&runs);
        assert_eq!(g.len(), 2);
        let (index, show) = (&g[0], &g[1]);
        assert_eq!(
            (index.name.as_str(), index.runs, index.requests),
            ("index", 3, 800)
        );
        assert_eq!(index.share, 0.8);
        assert_eq!(index.throughput_rps.median, 30.0);
        assert_eq!(index.latency_p99_us.unwrap().median, 1000.0);
        assert_eq!((index.errors, show.errors), (3, 2));
        assert_eq!(
            show.latency_p99_us.unwrap().n,
            1,
            "the run without a figure is left out"
        );
        assert!(
            GroupEndpoint::of(&[vec![], vec![]]).is_empty(),
            "no mix: nothing"
        );
    }

    /// The committed load-v1 sample's endpoint `name`, with `edit`.
    fn reported(name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> EndpointReport {
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/contracts/load-v1-mix.json")).unwrap();
        let mut e = doc["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == name)
            .unwrap()
            .clone();
        edit(&mut e);
        serde_json::from_value(e).unwrap()
    }

    #[test]
    fn an_endpoint_carries_its_errors_by_kind_and_what_telemetry_saw_inside() {
        let e = reported("home", |e| {
            e["errors"]["status"] = 3.into();
            e["errors"]["timeout"] = 1.into();
        });
        let q = |p50: f64| crate::telemetry::Quantiles {
            p50,
            p90: p50 * 2.0,
            p99: p50 * 4.0,
            mean: p50 * 1.5,
        };
        let inside = EndpointTelemetry {
            requests: 10,
            app_us: q(4000.0),
            db_us: Some(q(1000.0)),
            pool_wait_us: Some(q(200.0)),
        };
        let t = TrialEndpoint::of(&e, Some(&inside));
        assert_eq!(
            t.errors_by_kind,
            BTreeMap::from([("status".to_string(), 3), ("timeout".to_string(), 1)])
        );
        assert_eq!((t.app_p50_us, t.db_p50_us), (Some(4000.0), Some(1000.0)));
        assert_eq!(t.pool_wait_p99_us, Some(800.0));
        let g = GroupEndpoint::of(&[vec![t.clone()], vec![t]]);
        assert_eq!(g[0].errors_by_kind["status"], 6, "summed over runs");
        assert!(g[0].has_inside() && g[0].has_database());

        let bare = TrialEndpoint::of(&e, None);
        assert_eq!((bare.app_p50_us, bare.db_p50_us), (None, None));
        let no_ar = EndpointTelemetry {
            db_us: None,
            pool_wait_us: None,
            ..inside
        };
        let t = TrialEndpoint::of(&e, Some(&no_ar));
        assert_eq!(
            (t.app_p50_us, t.db_p50_us),
            (Some(4000.0), None),
            "no ActiveRecord: app time only"
        );
    }

    #[test]
    fn a_trial_without_a_latency_figure_gives_only_its_throughput() {
        let m = metrics(&[ep("show-1", 10, 5.0, None)]);
        assert_eq!(m, vec![("endpoint:show-1:throughput".to_string(), 5.0)]);
        let m = metrics(&[ep("a", 10, 5.0, Some(8.0))]);
        let names: Vec<&str> = m.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(
            names,
            ["endpoint:a:throughput", "endpoint:a:p50", "endpoint:a:p99"]
        );
    }
}
