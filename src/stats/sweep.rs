//! A sweep's analysis (rackbench/sweep-v1): the stored trials of one
//! results directory grouped by the swept value; per value the medians and
//! ranges of throughput, p50, p99, the server's CPU utilization and, with
//! telemetry, GC runs, GC time share, queue and app time; each value
//! against the first (the control) with the comparison's own rows and
//! judgement (`compare::judge`: bootstrap interval and Holm-adjusted rank
//! test, each metric its own family); for an ordered variable (a resource:
//! workers, connections...) the knee and the USL fit (`usl`); for any, the
//! value that beats every other significantly, if one does; and verdicts
//! in words.
//!
//! It is arithmetic over samples: `store::samples::sweep` reads the
//! results directory and hands it each value's figures per repeat (the
//! caller knows the plan's `[sweep]` and so how to read a trial's value).
//! It never reads a file and runs nothing.

use super::bootstrap::median;
use super::compare::{judge, pct, Row, ALPHA, METRICS};
use super::disturbance::DisturbedRuns;
use super::spread::Spread;
use super::usl;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = "rackbench/sweep-v1";

/// CPU utilization at or above this share of the server's cores is
/// "saturated": the rest is the sampler's rounding and the kernel's share.
pub const SATURATED: f64 = 0.9;

/// One swept value.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ValueRow {
    /// The value as the plan wrote it.
    pub value: String,
    /// Finished trials (repeats) at this value.
    pub n: usize,
    /// Requests per second: median, min, max over repeats.
    pub throughput_rps: Option<Spread>,
    pub p50_us: Option<Spread>,
    pub p99_us: Option<Spread>,
    /// Server CPU seconds over the counted window ÷ (window × cores given):
    /// 1.0 is every core the server was given busy all the time.
    pub cpu_utilization: Option<Spread>,
    /// Telemetry (`server_metrics.telemetry`; null without it): GC runs
    /// per 1,000 requests, GC time ÷ app time, mean queue time behind
    /// nginx and mean app time per request (µs), each over repeats.
    #[serde(default)]
    pub gc_runs_per_1k_requests: Option<Spread>,
    #[serde(default)]
    pub gc_time_share: Option<Spread>,
    #[serde(default)]
    pub queue_us_mean: Option<Spread>,
    #[serde(default)]
    pub app_us_mean: Option<Spread>,
    /// Mean SQL time and pool wait per request (µs), each over repeats;
    /// null for an app without ActiveRecord or without telemetry.
    #[serde(default)]
    pub db_us_mean: Option<Spread>,
    #[serde(default)]
    pub pool_wait_us_mean: Option<Spread>,
    /// Memory per worker (`per_worker` of the sampler; of the lone process
    /// for a server without workers), each over repeats: the worker count,
    /// and the mean over workers of each one's mean RSS, PSS and USS in
    /// the counted window, bytes. Null in records made before it existed,
    /// PSS and USS also where smaps_rollup was unreadable.
    #[serde(default)]
    pub workers: Option<Spread>,
    #[serde(default)]
    pub worker_rss_mean_bytes: Option<Spread>,
    #[serde(default)]
    pub worker_pss_mean_bytes: Option<Spread>,
    #[serde(default)]
    pub worker_uss_mean_bytes: Option<Spread>,
    /// The comparison with the control (none for the control itself):
    /// rows for throughput and p99 (and the primary metric, if another),
    /// as compare-v1 writes them.
    pub vs_control: Vec<Row>,
}

/// The fitted Universal Scalability Law, in sweep-v1's words.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UslSummary {
    pub sigma: f64,
    pub kappa: f64,
    /// Throughput of one unit without contention (requests per second).
    pub lambda: f64,
    /// Where the curve peaks; null when it only flattens (κ = 0).
    pub peak_value: Option<f64>,
    pub peak_throughput_rps: Option<f64>,
    pub r2: f64,
}

/// The body of sweep-v1.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sweep {
    pub schema: String,
    pub dir: PathBuf,
    pub variable: String,
    /// The first value, which every other is compared against.
    pub control: String,
    /// Cores the server was given (for the CPU utilization).
    pub server_cores: f64,
    pub alpha: f64,
    pub values: Vec<ValueRow>,
    /// Whether the variable is an ordered resource (workers, threads,
    /// connections, nginx_workers, instances); knee and USL only then.
    #[serde(default)]
    pub ordered: bool,
    /// The metric named before the run (the plan's `primary_metric`);
    /// null when none, and the best value is judged by throughput.
    #[serde(default)]
    pub primary_metric: Option<String>,
    /// Whether some trial carried telemetry (the tables' GC, queue and
    /// app time columns).
    #[serde(default)]
    pub telemetry: bool,
    /// Smallest value whose throughput is not significantly below the
    /// best's; null for values that are not numbers or not ordered.
    pub knee: Option<String>,
    /// The value with the highest median throughput.
    pub best: Option<String>,
    /// The value significantly better than every other value in the
    /// primary metric (throughput when none); null when none stands out.
    #[serde(default)]
    pub best_significant: Option<String>,
    pub usl: Option<UslSummary>,
    pub verdicts: Vec<String>,
    /// Per value (in `values` order), the runs the machine disturbed
    /// (absent in analyses made before it existed).
    #[serde(default)]
    pub disturbance: Vec<DisturbedRuns>,
}

/// What was swept: the variable's name and values, whether the values
/// are ordered (a knee means something) and whether a USL fit makes sense
/// (`plan::sweep::Variable` decides both), and the primary metric, if the
/// plan names one.
#[derive(Clone, Copy)]
pub struct Spec<'a> {
    pub variable: &'a str,
    pub values: &'a [String],
    pub ordered: bool,
    pub scales: bool,
    pub primary: Option<&'a str>,
}

/// Per value: each metric's figure per repeat (compare's metrics, and
/// "cpu_utilization").
pub type Figures = BTreeMap<&'static str, Vec<f64>>;

/// A sweep's samples, read by `store::samples::sweep`: the cores the
/// server was given (`server_cores`), and per value (in `Spec::values`
/// order) its figures and its runs the machine disturbed.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub cores: f64,
    pub values: Vec<Figures>,
    pub disturbance: Vec<DisturbedRuns>,
}

fn of<'a>(f: &'a Figures, metric: &str) -> &'a [f64] {
    f.get(metric).map_or(&[], Vec::as_slice)
}

/// Cores the server was given in a run: `--server-cpus LIST` in the
/// manifest's command, all of them with `--no-pin`, else rackbench's
/// default pinning (every allowed core but the last, which the generator
/// gets; all of them on a one-core machine).
/// `cores` is the machine's (the manifest's environment), `command` the
/// run's command line.
pub fn server_cores(cores: f64, command: &str) -> f64 {
    let words: Vec<&str> = command.split_whitespace().collect();
    if let Some(i) = words.iter().position(|w| *w == "--server-cpus") {
        if let Some(list) = words.get(i + 1) {
            let n: usize = list
                .split(',')
                .map(|part| match part.split_once('-') {
                    Some((a, b)) => match (a.parse::<usize>(), b.parse::<usize>()) {
                        (Ok(a), Ok(b)) if b >= a => b - a + 1,
                        _ => 1,
                    },
                    None => 1,
                })
                .sum();
            return n.max(1) as f64;
        }
    }
    if words.contains(&"--no-pin") || cores < 2.0 {
        cores.max(1.0)
    } else {
        cores - 1.0
    }
}

/// The row of `metric` comparing the control's repeats with a value's.
fn row_vs(metric: &str, value: &str, a: &[f64], b: &[f64], seed: u64) -> Option<Row> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    Some(Row::unjudged(value, metric, a, b, seed))
}

/// The metrics each value is compared with the control on: throughput,
/// p99, and the primary metric when it is another.
fn compared(primary: Option<&str>) -> Vec<&'static str> {
    let mut out = vec!["throughput", "p99"];
    if let Some(m) = METRICS.iter().map(|m| m.0).find(|m| Some(*m) == primary) {
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// Analyse a sweep's samples; `dir` is only written into the result.
pub fn analyse(dir: &Path, spec: &Spec, samples: &Samples, seed: u64) -> Result<Sweep, String> {
    let cores = samples.cores;
    let figs = &samples.values;
    if figs.iter().all(|f| of(f, "throughput").is_empty()) {
        return Err(format!(
            "{} holds no finished trial of the sweep of {}",
            dir.display(),
            spec.variable
        ));
    }
    // Each metric is its own family for Holm: the sweep asks "which values
    // differ in throughput" and "in p99" as two questions.
    let mut by_metric: Vec<Vec<Row>> = Vec::new();
    for (k, metric) in compared(spec.primary).into_iter().enumerate() {
        let mut rows: Vec<Row> = (1..figs.len())
            .filter_map(|i| {
                let stream = seed
                    .wrapping_add((i as u64 * 2 + k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let mut row = row_vs(
                    metric,
                    &spec.values[i],
                    of(&figs[0], metric),
                    of(&figs[i], metric),
                    stream,
                )?;
                row.primary = spec.primary == Some(metric);
                Some(row)
            })
            .collect();
        judge(&mut rows);
        by_metric.push(rows);
    }
    let spread = |f: &Figures, m: &str| Spread::of(of(f, m));
    let values: Vec<ValueRow> = figs
        .iter()
        .zip(spec.values)
        .map(|(f, v)| ValueRow {
            value: v.clone(),
            n: of(f, "throughput").len(),
            throughput_rps: spread(f, "throughput"),
            p50_us: spread(f, "p50"),
            p99_us: spread(f, "p99"),
            cpu_utilization: spread(f, "cpu_utilization"),
            gc_runs_per_1k_requests: spread(f, "gc_runs_per_1k_requests"),
            gc_time_share: spread(f, "gc_time_share"),
            queue_us_mean: spread(f, "queue_us_mean"),
            app_us_mean: spread(f, "app_us_mean"),
            db_us_mean: spread(f, "db_us_mean"),
            pool_wait_us_mean: spread(f, "pool_wait_us_mean"),
            workers: spread(f, "workers"),
            worker_rss_mean_bytes: spread(f, "worker_rss_mean_bytes"),
            worker_pss_mean_bytes: spread(f, "worker_pss_mean_bytes"),
            worker_uss_mean_bytes: spread(f, "worker_uss_mean_bytes"),
            vs_control: by_metric
                .iter()
                .flatten()
                .filter(|r| r.group == *v)
                .cloned()
                .collect(),
        })
        .collect();
    let best = values
        .iter()
        .filter_map(|r| r.throughput_rps.map(|t| (r, t.median)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(r, _)| r.value.clone());
    let numeric: Option<Vec<f64>> = spec
        .values
        .iter()
        .map(|v| v.parse().ok())
        .collect::<Option<Vec<f64>>>()
        .filter(|_| spec.ordered);
    let telemetry = values
        .iter()
        .any(|r| r.gc_runs_per_1k_requests.is_some() || r.app_us_mean.is_some());
    let mut sweep = Sweep {
        schema: SCHEMA.into(),
        dir: dir.to_path_buf(),
        variable: spec.variable.to_string(),
        control: spec.values[0].clone(),
        server_cores: cores,
        alpha: ALPHA,
        values,
        ordered: spec.ordered,
        primary_metric: spec.primary.map(str::to_string),
        telemetry,
        knee: numeric.as_ref().and_then(|ns| knee(ns, spec, figs)),
        best,
        best_significant: None,
        usl: numeric
            .as_ref()
            .filter(|_| spec.scales)
            .and_then(|ns| fit(ns, figs)),
        verdicts: Vec::new(),
        disturbance: samples.disturbance.clone(),
    };
    let standout = stands_out(figs, spec, seed);
    sweep.best_significant = standout.as_ref().ok().map(|b| b.0.clone());
    sweep.verdicts = verdicts(&sweep);
    if !spec.ordered {
        // An unordered sweep has no knee: the question is which value wins.
        sweep.verdicts.push(match standout {
            Ok((_, line)) => line,
            Err(line) => line,
        });
    }
    sweep.verdicts.extend(disturbed_lines(&sweep));
    Ok(sweep)
}

/// The knee of an ordered sweep with numeric values (`usl::knee`).
fn knee(ns: &[f64], spec: &Spec, figs: &[Figures]) -> Option<String> {
    let pts: Vec<(f64, Vec<f64>)> = ns
        .iter()
        .zip(figs)
        .map(|(n, f)| (*n, of(f, "throughput").to_vec()))
        .collect();
    let k = usl::knee(&pts, ALPHA)?;
    ns.iter()
        .position(|n| *n == k)
        .map(|i| spec.values[i].clone())
}

/// The USL fitted to the values' median throughputs.
fn fit(ns: &[f64], figs: &[Figures]) -> Option<UslSummary> {
    // One point per value, its median: the fit bounds λ below by the
    // best X/N of its points, so a single lucky repeat at N = 1 would
    // force the whole curve under it (seen on a noisy machine: σ > 1,
    // R² < 0). Repeats that served nothing are left out.
    let pts: Vec<(f64, f64)> = ns
        .iter()
        .zip(figs)
        .filter_map(|(n, f)| {
            let served: Vec<f64> = of(f, "throughput")
                .iter()
                .copied()
                .filter(|x| *x > 0.0)
                .collect();
            (!served.is_empty()).then(|| (*n, median(&served)))
        })
        .collect();
    let f = usl::fit(&pts)?;
    Some(UslSummary {
        sigma: f.sigma,
        kappa: f.kappa,
        lambda: f.lambda,
        peak_value: f.peak_n(),
        peak_throughput_rps: f.peak_n().map(|n| f.throughput(n)),
        r2: f.r_squared,
    })
}

/// The value whose primary metric (throughput when none is named) is
/// significantly better than every other value's: the best median,
/// compared with each other value as `compare` would (bootstrap interval,
/// Mann-Whitney U Holm-adjusted over those comparisons). `Err` holds the
/// words for "none stands out".
fn stands_out(figs: &[Figures], spec: &Spec, seed: u64) -> Result<(String, String), String> {
    let metric = spec.primary.unwrap_or("throughput");
    let higher_better = METRICS.iter().any(|m| m.0 == metric && m.2);
    let medians: Vec<Option<f64>> = figs
        .iter()
        .map(|f| Spread::of(of(f, metric)).map(|s| s.median))
        .collect();
    let key = |m: f64| if higher_better { m } else { -m };
    let top = (0..figs.len())
        .filter_map(|i| medians[i].map(|m| (i, key(m))))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
        .ok_or_else(|| format!("no value has a {metric} figure"))?;
    let mut rows: Vec<Row> = (0..figs.len())
        .filter(|&i| i != top && medians[i].is_some())
        .map(|i| {
            let stream = seed.wrapping_add((i as u64 + 101).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            Row::unjudged(
                &spec.values[i],
                metric,
                of(&figs[i], metric),
                of(&figs[top], metric),
                stream,
            )
        })
        .collect();
    judge(&mut rows);
    let name = |v: &str| format!("{}={v}", spec.variable);
    let words = METRICS
        .iter()
        .find(|m| m.0 == metric)
        .map_or(metric, |m| m.1);
    if !rows.is_empty() && rows.iter().all(|r| r.direction == "better") {
        // The runner-up: the smallest change of the best against another.
        let next = rows
            .iter()
            .min_by(|a, b| {
                let c = |r: &Row| r.change_pct.map_or(f64::INFINITY, f64::abs);
                c(a).total_cmp(&c(b))
            })
            .expect("not empty");
        let line = format!(
            "best: {} ({words} significantly better than every other value; {} against the next best, {}, 95% CI {} to {})",
            name(&spec.values[top]),
            next.change_pct.map(pct).unwrap_or_else(|| "–".into()),
            name(&next.group),
            next.ci_low_pct.map(pct).unwrap_or_else(|| "–".into()),
            next.ci_high_pct.map(pct).unwrap_or_else(|| "–".into()),
        );
        return Ok((spec.values[top].clone(), line));
    }
    // The closest rival: the value the best is not significantly ahead of.
    let rival = rows
        .iter()
        .find(|r| r.direction != "better")
        .map(|r| {
            let change = r.change_pct.map(pct).unwrap_or_else(|| "–".into());
            format!(
                "{} is not significantly ahead of {} ({change}; {})",
                name(&spec.values[top]),
                name(&r.group),
                if r.judged {
                    "no significant difference"
                } else {
                    "too few repeats to tell"
                }
            )
        })
        .unwrap_or_default();
    Err(format!("no value stands out in {words}: {rival}"))
}

/// A line per value whose runs the machine disturbed.
fn disturbed_lines(s: &Sweep) -> Vec<String> {
    let named: Vec<(String, DisturbedRuns)> = s
        .values
        .iter()
        .zip(&s.disturbance)
        .map(|(r, d)| (format!("{}={}", s.variable, r.value), *d))
        .collect();
    super::disturbance::sweep_lines(&named)
}

/// The sweep in sentences: each value against the control, the knee, the
/// CPU, the fit.
fn verdicts(s: &Sweep) -> Vec<String> {
    let name = |v: &str| format!("{}={v}", s.variable);
    let mut out = Vec::new();
    for r in &s.values[1..] {
        for row in &r.vs_control {
            out.push(format!(
                "{} vs {}: {}",
                name(&r.value),
                name(&s.control),
                // compare speaks of "B"; here B is the value
                row.verdict.replacen("B is ", "", 1).replacen("B's ", "", 1)
            ));
        }
    }
    if let (Some(k), Some(b)) = (&s.knee, &s.best) {
        out.push(if k == b {
            format!("knee: {} (the best throughput; no smaller value comes within significance of it)", name(k))
        } else {
            format!(
                "knee: {} (the smallest value whose throughput is not significantly below the best, {})",
                name(k),
                name(b)
            )
        });
    }
    let cpu = |r: &ValueRow| r.cpu_utilization.map(|c| c.median);
    let knee_at = s
        .knee
        .as_ref()
        .and_then(|k| s.values.iter().position(|r| r.value == *k));
    for (i, r) in s.values.iter().enumerate() {
        let Some(c) = cpu(r).filter(|c| *c >= SATURATED) else {
            continue;
        };
        let mut line = format!(
            "{}: CPU saturated ({:.0}% of {} core{})",
            name(&r.value),
            c * 100.0,
            s.server_cores,
            if s.server_cores == 1.0 { "" } else { "s" }
        );
        if let (Some(k), Some(p), Some(pk)) = (
            knee_at,
            r.p99_us.map(|p| p.median),
            knee_at.and_then(|k| s.values[k].p99_us.map(|p| p.median)),
        ) {
            if i > k && p > pk {
                line.push_str(&format!(
                    "; more only adds latency (p99 {:.1} ms against {:.1} ms at the knee, throughput not higher)",
                    p / 1000.0,
                    pk / 1000.0
                ));
            }
        }
        out.push(line);
    }
    if let Some(u) = &s.usl {
        out.push(usl_verdict(u, &s.variable));
    }
    out
}

/// The fit in words, and how far to trust it.
fn usl_verdict(u: &UslSummary, variable: &str) -> String {
    let mut line = format!(
        "USL fit: contention σ = {:.4}, coherency κ = {:.5}, R² = {:.3}; ",
        u.sigma, u.kappa, u.r2
    );
    line.push_str(&match (u.peak_value, u.peak_throughput_rps) {
        (Some(n), Some(x)) => format!("predicted peak at {variable} ≈ {n:.1} ({x:.0} rps)"),
        // σ ≥ 1: each unit added costs more than it brings.
        _ if u.sigma >= 1.0 => "throughput falls from the first value on (σ ≥ 1)".into(),
        _ => "no predicted peak (throughput only flattens)".into(),
    });
    if u.r2 < 0.5 {
        line.push_str(
            "; the points do not follow the curve (R² under 0.5): read the medians, not the fit",
        );
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fit_that_explains_little_says_so() {
        let u = |sigma, kappa, peak: Option<f64>, r2| UslSummary {
            sigma,
            kappa,
            lambda: 50.0,
            peak_value: peak,
            peak_throughput_rps: peak.map(|_| 100.0),
            r2,
        };
        let rows = [
            (
                u(0.05, 0.002, Some(21.8), 0.99),
                "predicted peak at workers ≈ 21.8",
                false,
            ),
            (u(0.2, 0.0, None, 0.95), "only flattens", false),
            (
                u(1.7, 0.0, None, -0.4),
                "falls from the first value on",
                true,
            ),
        ];
        for (fit, says, poor) in rows {
            let v = usl_verdict(&fit, "workers");
            assert!(v.contains(says), "{v}");
            assert_eq!(v.contains("read the medians, not the fit"), poor, "{v}");
        }
    }

    #[test]
    fn server_cores_follow_the_run_command() {
        assert_eq!(server_cores(4.0, "rackbench run p --out x"), 3.0);
        assert_eq!(server_cores(4.0, "rackbench run p --no-pin"), 4.0);
        assert_eq!(
            server_cores(4.0, "rackbench sweep --server-cpus 0-1,3 --out x"),
            3.0
        );
        assert_eq!(server_cores(1.0, "x"), 1.0);
    }

    /// Samples of `values.len()` values, each given as its repeats'
    /// figures by metric.
    fn samples(cores: f64, values: Vec<Vec<Vec<(&'static str, f64)>>>) -> Samples {
        let n = values.len();
        Samples {
            cores,
            values: values
                .into_iter()
                .map(|repeats| {
                    let mut f = Figures::new();
                    for repeat in repeats {
                        for (metric, v) in repeat {
                            f.entry(metric).or_default().push(v);
                        }
                    }
                    f
                })
                .collect(),
            disturbance: vec![DisturbedRuns::default(); n],
        }
    }

    /// Seed 002's GC sweep, made up: the control (80M) and 30M serve
    /// alike, 8M runs GC four times as often and is 20% slower; `x30` is
    /// 30M's throughput.
    fn gc_samples(x30: f64, tie: bool) -> Samples {
        let points = [
            (1000.0, 2.0, 900.0),
            (x30, 3.0, 905.0),
            (800.0, 8.0, 1150.0),
        ];
        let values = points
            .iter()
            .enumerate()
            .map(|(i, &(x, gc, app))| {
                (0..6)
                    .map(|r| {
                        let j = 1.0 + (r as f64 - 2.5) * 0.004;
                        // Without the tie, 30M's GC figures do not jitter.
                        let g = if !tie && i == 1 { 1.0 } else { j };
                        vec![
                            ("throughput", x * j),
                            ("p50", 4000.0),
                            ("p99", 9000.0),
                            ("cpu_utilization", 5.0 / (10.0 * 2.0)),
                            ("gc_runs_per_1k_requests", gc * g),
                            ("gc_time_share", gc * g / 100.0),
                            ("app_us_mean", app * g),
                            ("queue_us_mean", 310.0),
                        ]
                    })
                    .collect()
            })
            .collect();
        samples(2.0, values)
    }

    /// The values are numbers, yet the variable is an env value: no knee,
    /// no USL; the verdicts name 8M as the one that differs, say no value
    /// stands out (80M and 30M tie), and the GC figures are there per value.
    #[test]
    fn an_env_sweep_with_numeric_values_names_the_value_that_differs_and_no_knee() {
        let dir = Path::new("results");
        let values: Vec<String> = ["80000000", "30000000", "8000000"]
            .map(String::from)
            .to_vec();
        let spec = Spec {
            variable: "env.RUBY_GC_MALLOC_LIMIT",
            values: &values,
            ordered: false,
            scales: false,
            primary: None,
        };
        let s = analyse(dir, &spec, &gc_samples(1004.0, true), 1).unwrap();
        assert!(!s.ordered && s.knee.is_none() && s.usl.is_none(), "{s:#?}");
        assert_eq!(s.best.as_deref(), Some("30000000"));
        assert_eq!(s.best_significant, None);
        let text = s.verdicts.join("\n");
        assert!(!text.contains("knee") && !text.contains("USL"), "{text}");
        assert!(
            text.contains("env.RUBY_GC_MALLOC_LIMIT=8000000 vs env.RUBY_GC_MALLOC_LIMIT=80000000: 20% slower in throughput (95% CI"),
            "{text}"
        );
        assert!(
            text.contains("env.RUBY_GC_MALLOC_LIMIT=30000000 vs env.RUBY_GC_MALLOC_LIMIT=80000000: throughput unchanged"),
            "{text}"
        );
        assert!(
            text.contains("no value stands out in throughput: env.RUBY_GC_MALLOC_LIMIT=30000000 is not significantly ahead of env.RUBY_GC_MALLOC_LIMIT=80000000"),
            "{text}"
        );
        assert!(s.telemetry);
        let gc = |i: usize| s.values[i].gc_runs_per_1k_requests.unwrap().median;
        assert!((gc(0) - 2.0).abs() < 0.01 && (gc(2) - 8.0).abs() < 0.05);
        assert!((s.values[2].app_us_mean.unwrap().median - 1150.0).abs() < 5.0);
        assert!((s.values[0].queue_us_mean.unwrap().median - 310.0).abs() < 1e-9);
        assert!(s.values[1].gc_time_share.is_some());
        // The same figures as an ordered resource would have a knee.
        let as_resource = Spec {
            ordered: true,
            ..spec
        };
        let r = analyse(dir, &as_resource, &gc_samples(1004.0, true), 1).unwrap();
        assert_eq!(r.knee.as_deref(), Some("30000000"));
        // Without the tie, one value beats every other: it is named.
        let s = analyse(dir, &spec, &gc_samples(1100.0, false), 1).unwrap();
        assert_eq!(s.best_significant.as_deref(), Some("30000000"));
        let text = s.verdicts.join("\n");
        assert!(
            text.contains("best: env.RUBY_GC_MALLOC_LIMIT=30000000 (throughput significantly better than every other value; +10.0% against the next best, env.RUBY_GC_MALLOC_LIMIT=80000000"),
            "{text}"
        );
    }

    /// Throughput rises to 4 workers, then flattens while the one core is
    /// saturated and p99 grows: the knee is 4, the verdicts say "CPU
    /// saturated; more only adds latency" for 8.
    #[test]
    fn knee_saturation_and_fit_from_the_samples() {
        let curve = [
            (100.0, 4.0, 10_000.0),
            (190.0, 7.5, 10_000.0),
            (300.0, 9.7, 10_000.0),
            (298.0, 9.9, 40_000.0),
        ];
        let values = curve
            .iter()
            .map(|&(x, cpu_s, p99)| {
                (0..6)
                    .map(|r| {
                        let j = 1.0 + (r as f64 - 2.5) * 0.004;
                        // 10 s windows on the one core of two the server got.
                        vec![
                            ("throughput", x * j),
                            ("p50", p99 * j / 2.0),
                            ("p99", p99 * j),
                            ("cpu_utilization", cpu_s * j / 10.0),
                        ]
                    })
                    .collect()
            })
            .collect();
        let names: Vec<String> = ["1", "2", "4", "8"].map(String::from).to_vec();
        let spec = Spec {
            variable: "workers",
            values: &names,
            ordered: true,
            scales: true,
            primary: None,
        };
        let s = analyse(Path::new("r"), &spec, &samples(1.0, values), 1).unwrap();
        assert_eq!(s.knee.as_deref(), Some("4"), "{:#?}", s.verdicts);
        assert_eq!(s.best.as_deref(), Some("4"));
        assert_eq!(s.server_cores, 1.0);
        let u = s.usl.as_ref().expect("fitted");
        assert!(u.r2 > 0.9 && u.sigma >= 0.0, "{u:?}");
        let c = s.values[3].cpu_utilization.unwrap().median;
        assert!((c - 0.99).abs() < 0.01, "{c}");
        let text = s.verdicts.join("\n");
        assert!(
            text.contains("workers=8: CPU saturated (99% of 1 core); more only adds latency"),
            "{text}"
        );
        assert!(!text.contains("workers=2: CPU saturated"), "{text}");
        assert!(text.contains("knee: workers=4"), "{text}");
        let t2 = &s.values[1].vs_control[0];
        assert!(t2.significant && t2.direction == "better", "{t2:?}");
    }
}
