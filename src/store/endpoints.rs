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
use serde::Serialize;

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
}

impl TrialEndpoint {
    pub fn of(e: &EndpointReport) -> TrialEndpoint {
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
    /// Failed requests over its runs.
    pub errors: u64,
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
