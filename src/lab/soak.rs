//! A soak (`--soak 2h`, a plan's `soak = "2h"`): a long counted window at
//! a fixed rate, open loop, with every worker's memory sampled over time
//! ([`Soak`]), and the record's `soak` ([`SoakRecord`]): each worker's
//! growth per hour (a Theil-Sen slope with its 95% interval, fitted over
//! the counted window only, so after the warm-up) and a verdict in words.
//!
//! # Which memory the slope is of
//!
//! USS (the pages only this worker maps) when smaps_rollup is readable,
//! RSS otherwise. USS growth is what the machine pays for the worker:
//! a leaked object's new pages, and also copy-on-write pages of a
//! preloaded app that the worker wrote and so copied (those leave
//! `shared` at the same pace, shown apart as `shared_slope`). RSS misses
//! those copies (the page was resident before), and PSS moves when a
//! sibling dies (its share of the shared pages grows) without this
//! worker doing anything.
//!
//! It fits and words what the sampler collected; it samples nothing.

use crate::load::{LoadConfig, Pacing};
use crate::sampler::{ProcessSeries, Role, SeriesPoint, SoakSamples};
use crate::stats::theil_sen::{theil_sen, SenSlope};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The rate of a soak when `--rate` is not given, in requests per second:
/// enough to show a leak of a few KiB a request within minutes, little
/// enough for any server on one core.
pub const DEFAULT_RATE_RPS: f64 = 100.0;

/// The width of a series point before the series coarsens.
pub const STEP: Duration = Duration::from_secs(1);

/// Fewer points than this after the warm-up give no slope.
pub const MIN_POINTS: usize = 10;

/// An interval within +/- this many MiB/hour reads "flat".
pub const FLAT_MIB_PER_HOUR: f64 = 1.0;

const MIB: f64 = 1024.0 * 1024.0;

/// What a soak asks: its window and its rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Soak {
    /// The counted window (the warm-up comes before it).
    pub duration: Duration,
    /// Open-loop requests per second.
    pub rate_rps: f64,
}

impl Soak {
    /// A soak of `duration` at `rate_rps`, or [`DEFAULT_RATE_RPS`].
    pub fn new(duration: Duration, rate_rps: Option<f64>) -> Soak {
        Soak {
            duration,
            rate_rps: rate_rps.unwrap_or(DEFAULT_RATE_RPS),
        }
    }

    /// The load of a soak: its duration as the window, open loop at its
    /// rate, no request count.
    pub fn apply(&self, cfg: &mut LoadConfig) {
        cfg.duration = Some(self.duration);
        cfg.requests = None;
        cfg.pacing = Pacing::Rate(self.rate_rps);
    }

    /// The line a run prints before it starts.
    pub fn describe(&self) -> String {
        format!(
            "soak: {} at {} req/s, open loop{}, after the warm-up",
            fmt_duration(self.duration),
            self.rate_rps,
            if self.rate_rps == DEFAULT_RATE_RPS {
                " (the default; --rate to change)"
            } else {
                ""
            }
        )
    }
}

/// `2h`, `90m`, `45s`: a duration as it was likely written.
fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        _ => format!("{:.0}s", d.as_secs_f64()),
    }
}

/// A slope with its 95% interval, MiB per hour; all None with too few
/// points.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Growth {
    pub slope_mib_per_hour: Option<f64>,
    pub ci_low_mib_per_hour: Option<f64>,
    pub ci_high_mib_per_hour: Option<f64>,
}

impl Growth {
    /// The growth of `points` (seconds, bytes); None values with fewer than
    /// [`MIN_POINTS`].
    fn of(points: &[(f64, f64)]) -> Growth {
        let fit = (points.len() >= MIN_POINTS)
            .then(|| theil_sen(points))
            .flatten();
        let per_hour = |v: f64| v * 3600.0 / MIB;
        match fit {
            Some(SenSlope {
                slope, low, high, ..
            }) => Growth {
                slope_mib_per_hour: Some(per_hour(slope)),
                ci_low_mib_per_hour: Some(per_hour(low)),
                ci_high_mib_per_hour: Some(per_hour(high)),
            },
            None => Growth::default(),
        }
    }

    /// The verdict in words (without the worker's name).
    pub fn verdict(&self, points: usize) -> String {
        let (Some(s), Some(lo), Some(hi)) = (
            self.slope_mib_per_hour,
            self.ci_low_mib_per_hour,
            self.ci_high_mib_per_hour,
        ) else {
            return format!(
                "too few points ({points}, {MIN_POINTS} needed) for a slope: run longer"
            );
        };
        let ci = format!("95% CI {lo:+.1} to {hi:+.1}");
        if lo >= -FLAT_MIB_PER_HOUR && hi <= FLAT_MIB_PER_HOUR {
            format!("flat: within +/-{FLAT_MIB_PER_HOUR:.0} MiB/hour ({s:+.1}, {ci})")
        } else if lo > 0.0 {
            format!("{s:+.1} MiB/hour ({ci}), still growing")
        } else if hi < 0.0 {
            format!("{s:+.1} MiB/hour ({ci}), shrinking")
        } else {
            format!("no clear trend ({ci}): run longer")
        }
    }
}

/// One worker over the soak: `soak.workers[]` in trial-v1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakWorker {
    pub pid: u32,
    /// `worker`, or `single` for a server without workers.
    pub role: Role,
    /// What the slope is of: `uss`, or `rss` when smaps_rollup was
    /// unreadable (module doc).
    pub metric: String,
    #[serde(flatten)]
    pub growth: Growth,
    /// "worker 2: +14.0 MiB/hour (95% CI +11.0 to +17.0), still growing".
    pub verdict: String,
    /// How fast pages shared with the master and siblings become private
    /// or go (copy-on-write decay shows as a negative slope); None
    /// without smaps_rollup or with too few points.
    pub shared_slope_mib_per_hour: Option<f64>,
    pub shared_ci_low_mib_per_hour: Option<f64>,
    pub shared_ci_high_mib_per_hour: Option<f64>,
    /// Its memory over the window: at most 720 points, each the mean of
    /// the samples of its interval.
    pub series: Vec<SeriesPoint>,
}

/// rackbench's own memory over the soak: what it keeps must not grow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakSelf {
    /// What the slope is of: `uss` (its private pages, what it allocates)
    /// when smaps_rollup is readable, `rss` otherwise (and in records made
    /// before this field). RSS also grows by the executable's own pages
    /// as code first runs or is shared with a server that is the same
    /// binary (the test server): +15 MiB/hour over a 30 s soak of it at
    /// 1000 req/s, with USS flat.
    #[serde(default = "rss")]
    pub metric: String,
    #[serde(flatten)]
    pub growth: Growth,
    pub verdict: String,
    pub series: Vec<SeriesPoint>,
}

/// The record's `soak`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakRecord {
    /// The counted window asked.
    pub duration_s: f64,
    pub rate_rps: f64,
    /// The width of a series point before any coarsening; a long soak's
    /// points cover 2, 4, 8... times as long (720 at most).
    pub interval_s: f64,
    /// Every worker (a replaced one and its replacement each have one).
    pub workers: Vec<SoakWorker>,
    /// The slopes of the workers that have one, added up, and their
    /// intervals' bounds added up (wider than the sum's own interval: a
    /// conservative bound); None when no worker has a slope.
    pub total_slope_mib_per_hour: Option<f64>,
    pub total_ci_low_mib_per_hour: Option<f64>,
    pub total_ci_high_mib_per_hour: Option<f64>,
    pub rackbench: SoakSelf,
}

impl SoakRecord {
    /// The record of what a soak sampled.
    pub fn of(soak: &Soak, samples: &SoakSamples) -> SoakRecord {
        let serving: Vec<&ProcessSeries> = [Role::Worker, Role::Single]
            .into_iter()
            .map(|r| {
                samples
                    .processes
                    .iter()
                    .filter(|p| p.role == r)
                    .collect::<Vec<_>>()
            })
            .find(|v| !v.is_empty())
            .unwrap_or_default();
        let workers: Vec<SoakWorker> = serving
            .iter()
            .enumerate()
            .map(|(i, p)| worker(i + 1, p))
            .collect();
        let fitted: Vec<Growth> = workers
            .iter()
            .map(|w| w.growth)
            .filter(|g| g.slope_mib_per_hour.is_some())
            .collect();
        let total = |f: fn(&Growth) -> Option<f64>| {
            (!fitted.is_empty()).then(|| fitted.iter().filter_map(f).sum::<f64>())
        };
        let own_uss = !samples.own.is_empty() && samples.own.iter().all(|p| p.uss_bytes.is_some());
        let (own_metric, own) = if own_uss {
            ("uss", Growth::of(&xy(&samples.own, |p| p.uss_bytes)))
        } else {
            ("rss", Growth::of(&xy(&samples.own, |p| Some(p.rss_bytes))))
        };
        SoakRecord {
            duration_s: soak.duration.as_secs_f64(),
            rate_rps: soak.rate_rps,
            interval_s: samples.step_ms as f64 / 1000.0,
            total_slope_mib_per_hour: total(|g| g.slope_mib_per_hour),
            total_ci_low_mib_per_hour: total(|g| g.ci_low_mib_per_hour),
            total_ci_high_mib_per_hour: total(|g| g.ci_high_mib_per_hour),
            workers,
            rackbench: SoakSelf {
                metric: own_metric.into(),
                verdict: format!(
                    "rackbench ({}): {}",
                    own_metric.to_uppercase(),
                    own.verdict(samples.own.len())
                ),
                growth: own,
                series: samples.own.clone(),
            },
        }
    }
}

fn rss() -> String {
    "rss".into()
}

/// Worker `n`'s fit and verdict.
fn worker(n: usize, p: &ProcessSeries) -> SoakWorker {
    let has_uss = !p.points.is_empty() && p.points.iter().all(|q| q.uss_bytes.is_some());
    let (metric, growth) = if has_uss {
        ("uss", Growth::of(&xy(&p.points, |q| q.uss_bytes)))
    } else {
        ("rss", Growth::of(&xy(&p.points, |q| Some(q.rss_bytes))))
    };
    let shared = if has_uss {
        Growth::of(&xy(&p.points, |q| q.shared_bytes))
    } else {
        Growth::default()
    };
    let name = match p.role {
        Role::Single => format!("process {}", p.pid),
        _ => format!("worker {n} (pid {})", p.pid),
    };
    SoakWorker {
        pid: p.pid,
        role: p.role,
        metric: metric.into(),
        verdict: format!("{name}: {}", growth.verdict(p.points.len())),
        growth,
        shared_slope_mib_per_hour: shared.slope_mib_per_hour,
        shared_ci_low_mib_per_hour: shared.ci_low_mib_per_hour,
        shared_ci_high_mib_per_hour: shared.ci_high_mib_per_hour,
        series: p.points.clone(),
    }
}

/// (seconds, bytes) of the points that have the figure.
fn xy(points: &[SeriesPoint], f: impl Fn(&SeriesPoint) -> Option<u64>) -> Vec<(f64, f64)> {
    points
        .iter()
        .filter_map(|p| f(p).map(|v| (p.t_s, v as f64)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(n: usize, bytes_per_s: f64, shared_per_s: f64) -> Vec<SeriesPoint> {
        (0..n)
            .map(|i| {
                let t = i as f64;
                let uss = 50e6 + bytes_per_s * t;
                let shared = 30e6 + shared_per_s * t;
                SeriesPoint {
                    t_s: t,
                    rss_bytes: (uss + shared) as u64,
                    pss_bytes: Some(uss as u64),
                    uss_bytes: Some(uss as u64),
                    shared_bytes: Some(shared as u64),
                }
            })
            .collect()
    }

    fn growth(s: f64, lo: f64, hi: f64) -> Growth {
        Growth {
            slope_mib_per_hour: Some(s),
            ci_low_mib_per_hour: Some(lo),
            ci_high_mib_per_hour: Some(hi),
        }
    }

    /// (case, growth, verdict)
    #[test]
    fn the_verdict_says_growing_flat_or_run_longer() {
        let rows = [
            (
                "growing",
                growth(14.0, 11.0, 17.0),
                "+14.0 MiB/hour (95% CI +11.0 to +17.0), still growing",
            ),
            (
                "flat",
                growth(0.2, -0.5, 0.9),
                "flat: within +/-1 MiB/hour (+0.2, 95% CI -0.5 to +0.9)",
            ),
            (
                "wide",
                growth(1.0, -3.0, 5.0),
                "no clear trend (95% CI -3.0 to +5.0): run longer",
            ),
            (
                "shrinking",
                growth(-4.0, -6.0, -2.0),
                "-4.0 MiB/hour (95% CI -6.0 to -2.0), shrinking",
            ),
            (
                "nothing",
                Growth::default(),
                "too few points (3, 10 needed) for a slope: run longer",
            ),
        ];
        for (case, g, want) in rows {
            assert_eq!(g.verdict(3), want, "{case}");
        }
    }

    #[test]
    fn each_worker_gets_its_uss_slope_and_its_shared_decay_per_hour() {
        // 1 KiB/s of leak is 3.515625 MiB/hour; 256 B/s of COW decay.
        let samples = SoakSamples {
            step_ms: 1000,
            processes: vec![
                ProcessSeries {
                    pid: 10,
                    comm: "ruby".into(),
                    role: Role::Master,
                    points: series(60, 0.0, 0.0),
                },
                ProcessSeries {
                    pid: 11,
                    comm: "ruby".into(),
                    role: Role::Worker,
                    points: series(60, 1024.0, -256.0),
                },
                ProcessSeries {
                    pid: 12,
                    comm: "ruby".into(),
                    role: Role::Worker,
                    points: series(5, 0.0, 0.0),
                },
            ],
            own: series(60, 0.0, 0.0),
        };
        let soak = Soak::new(Duration::from_secs(60), None);
        let r = SoakRecord::of(&soak, &samples);
        assert_eq!(r.workers.len(), 2, "the master is no worker");
        let w = &r.workers[0];
        assert_eq!((w.pid, w.metric.as_str()), (11, "uss"));
        let slope = w.growth.slope_mib_per_hour.unwrap();
        assert!((slope - 3.515625).abs() < 1e-3, "{slope}");
        assert!(
            w.verdict.starts_with("worker 1 (pid 11): +3.5 MiB/hour"),
            "{}",
            w.verdict
        );
        let shared = w.shared_slope_mib_per_hour.unwrap();
        assert!((shared + 0.87890625).abs() < 1e-3, "{shared}");
        assert!(
            r.workers[1].verdict.contains("too few points (5"),
            "{}",
            r.workers[1].verdict
        );
        assert_eq!(r.total_slope_mib_per_hour, w.growth.slope_mib_per_hour);
        assert!(
            r.rackbench.verdict.starts_with("rackbench (USS): flat"),
            "{}",
            r.rackbench.verdict
        );
        assert_eq!(r.rate_rps, DEFAULT_RATE_RPS);
    }

    #[test]
    fn a_soak_sets_the_window_and_an_open_loop_rate() {
        let mut cfg = LoadConfig::get("http://127.0.0.1:9/").unwrap();
        cfg.requests = Some(5);
        Soak::new(Duration::from_secs(7200), Some(250.0)).apply(&mut cfg);
        assert_eq!(cfg.duration, Some(Duration::from_secs(7200)));
        assert_eq!(cfg.requests, None);
        assert_eq!(cfg.pacing, Pacing::Rate(250.0));
    }
}
