//! The `rackbench/mirror-v1` document (schema/mirror-v1.schema.json) and
//! the one-line live summary. Field names are a contract.

use super::stats::{median_ci95, ShadowStats};
use super::Shared;
use crate::load::report::LatencySummary;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;

pub const SCHEMA: &str = "rackbench/mirror-v1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MirrorDoc {
    pub schema: String,
    pub rackbench_version: String,
    pub listen: String,
    pub started_unix_ms: u64,
    pub elapsed_s: f64,
    /// Requests the proxy received.
    pub requests: u64,
    /// Of those, requests whose method is mirrored.
    pub mirrored: u64,
    pub config: ConfigEcho,
    pub primary: PrimaryDoc,
    pub shadows: Vec<ShadowDoc>,
    /// The second primary (`--primary-b`), counted like a shadow.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub primary_b: Option<ShadowDoc>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub record: Option<RecordDoc>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConfigEcho {
    pub mirror_methods: Vec<String>,
    pub queue: usize,
    pub shadow_concurrency: usize,
    pub shadow_timeout_ms: u64,
    pub primary_timeout_ms: u64,
    pub body_limit_bytes: usize,
    pub diff_bodies: bool,
    /// When copies go to the shadows: "answered" or "arrival" (added
    /// field; documents without it were written by the arrival-only
    /// mirror).
    #[serde(default = "arrival")]
    pub shadow_send: String,
}

fn arrival() -> String {
    "arrival".into()
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrimaryDoc {
    pub url: String,
    /// Requests the client got a 502/504 for (the primary failed or timed
    /// out); the primary's own error statuses are passed through, not
    /// counted here.
    pub errors: u64,
    pub timeouts: u64,
    /// From the request head's arrival to the primary's response head.
    /// With no answer (`count` 0) its figures are null, never 0 µs.
    #[serde(with = "crate::load::report::no_figure_is_null")]
    pub latency_us: LatencySummary,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShadowDoc {
    pub name: String,
    pub url: String,
    pub sent: u64,
    pub answered: u64,
    /// Copies never sent: the queue was full, the body did not fit the
    /// body limit, or the run ended first.
    pub dropped: u64,
    /// Of `dropped`: the request body was over the body limit.
    pub dropped_body: u64,
    /// Of `dropped`: skipped while the shadow was backed off after
    /// failures in a row (added field).
    #[serde(default)]
    pub backed_off: u64,
    /// Back-off periods begun (added field).
    #[serde(default)]
    pub backoffs: u64,
    /// Time left in the back-off the shadow is in when the figures were
    /// taken, ms; absent when it is not backed off (added field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backed_off_for_ms: Option<u64>,
    pub timeouts: u64,
    pub errors: u64,
    /// Sent but unfinished when the figures were taken.
    pub in_flight: u64,
    pub status_mismatches: u64,
    pub body_mismatches: u64,
    pub body_noise: u64,
    pub body_unchecked: u64,
    /// From sending the copy to the shadow's response head. With no
    /// answer (`count` 0) its figures are null, never 0 µs.
    #[serde(with = "crate::load::report::no_figure_is_null")]
    pub latency_us: LatencySummary,
    pub paired: PairedDoc,
    pub mismatches_by_path: Vec<PathMismatches>,
    /// A lab server rackbench started as this shadow (`--shadow-server`):
    /// how it was started and what its process tree used (added field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ShadowServerDoc>,
}

/// A shadow rackbench started and sampled (`mirror --shadow-server`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShadowServerDoc {
    pub commands: Vec<String>,
    /// The tree's CPU over the mirror's run, seconds.
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub rss_peak_bytes: u64,
    pub rss_mean_bytes: u64,
    pub processes_peak: u32,
    pub samples: u64,
    /// With `--telemetry`: what rackbench's middleware saw inside the
    /// shadow's app over the mirror's run (added field; docs/TELEMETRY.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<crate::telemetry::Telemetry>,
}

/// The primary's latency on the live line: "p50 812µs p99 2104µs", or in
/// words when there is none (issue 36: a record with no request proxied
/// printed "p50 0µs p99 0µs", which reads as a measurement).
fn primary_latency(requests: u64, l: &LatencySummary) -> String {
    if l.has_figures() {
        format!("p50 {}µs p99 {}µs", l.p50, l.p99)
    } else if requests == 0 {
        "no requests".into()
    } else {
        "p50 - p99 - (no answer)".into()
    }
}

/// Shadow − primary latency per request both answered.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairedDoc {
    pub count: u64,
    /// Differences the figures are computed from (all of them up to the
    /// reservoir size, a uniform sample after).
    pub sampled: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub median_us: Option<f64>,
    /// Distribution-free 95% interval for the median (order statistics).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ci95_low_us: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ci95_high_us: Option<i64>,
    /// The distribution: (percentile, difference µs) at 1, 5, 10, …, 99.
    pub distribution: Vec<PairedPoint>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairedPoint {
    pub percentile: f64,
    pub diff_us: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PathMismatches {
    pub path: String,
    pub status: u64,
    pub body: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordDoc {
    pub path: String,
    pub written: u64,
    pub dropped: u64,
    pub write_errors: u64,
}

const PERCENTILES: &[f64] = &[1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

fn shadow_doc(name: &str, url: &str, st: &ShadowStats, now_us: u64) -> ShadowDoc {
    let (latency_us, mut values, count, mut by_path) = {
        let slow = st.slow.lock().expect("shadow stats");
        (
            LatencySummary::from_histogram(&slow.latency_us),
            slow.paired.values.clone(),
            slow.paired.seen,
            slow.by_path
                .iter()
                .map(|(p, (s, b))| PathMismatches {
                    path: p.clone(),
                    status: *s,
                    body: *b,
                })
                .collect::<Vec<_>>(),
        )
    };
    by_path.sort_by(|a, b| {
        (b.status + b.body)
            .cmp(&(a.status + a.body))
            .then(a.path.cmp(&b.path))
    });
    let ci = median_ci95(&mut values);
    let distribution = if values.is_empty() {
        Vec::new()
    } else {
        PERCENTILES
            .iter()
            .map(|p| {
                let i = ((p / 100.0) * (values.len() - 1) as f64).round() as usize;
                PairedPoint {
                    percentile: *p,
                    diff_us: values[i],
                }
            })
            .collect()
    };
    let sent = st.sent.load(Ordering::Relaxed);
    let answered = st.answered.load(Ordering::Relaxed);
    let timeouts = st.timeouts.load(Ordering::Relaxed);
    let errors = st.errors.load(Ordering::Relaxed);
    ShadowDoc {
        name: name.into(),
        url: url.into(),
        sent,
        answered,
        dropped: st.dropped.load(Ordering::Relaxed),
        dropped_body: st.dropped_body.load(Ordering::Relaxed),
        backed_off: st.backed_off.load(Ordering::Relaxed),
        backoffs: st.breaker.periods.load(Ordering::Relaxed),
        backed_off_for_ms: st.breaker.remaining_us(now_us).map(|u| u.div_ceil(1000)),
        timeouts,
        errors,
        in_flight: sent.saturating_sub(answered + timeouts + errors),
        status_mismatches: st.status_mismatches.load(Ordering::Relaxed),
        body_mismatches: st.body_mismatches.load(Ordering::Relaxed),
        body_noise: st.body_noise.load(Ordering::Relaxed),
        body_unchecked: st.body_unchecked.load(Ordering::Relaxed),
        latency_us,
        server: None,
        paired: PairedDoc {
            count,
            sampled: values.len() as u64,
            median_us: ci.map(|c| c.0).or_else(|| {
                // Fewer than 6: the median alone, no interval.
                (!values.is_empty()).then(|| {
                    let n = values.len();
                    if n % 2 == 1 {
                        values[n / 2] as f64
                    } else {
                        (values[n / 2 - 1] + values[n / 2]) as f64 / 2.0
                    }
                })
            }),
            ci95_low_us: ci.map(|c| c.1),
            ci95_high_us: ci.map(|c| c.2),
            distribution,
        },
        mismatches_by_path: by_path,
    }
}

impl MirrorDoc {
    pub fn build(sh: &Shared, addr: SocketAddr) -> MirrorDoc {
        let cfg = &sh.cfg;
        let n = cfg.shadows.len();
        let now_us = sh.started.elapsed().as_micros() as u64;
        let shadows = cfg
            .shadows
            .iter()
            .enumerate()
            .map(|(i, (name, u))| shadow_doc(name, &u.url, &sh.judge.shadows[i], now_us))
            .collect();
        let primary_b = cfg
            .primary_b
            .as_ref()
            .map(|u| shadow_doc("primary-b", &u.url, &sh.judge.shadows[n], now_us));
        MirrorDoc {
            schema: SCHEMA.into(),
            rackbench_version: env!("CARGO_PKG_VERSION").into(),
            listen: addr.to_string(),
            started_unix_ms: sh.started_unix_ms as u64,
            elapsed_s: sh.started.elapsed().as_secs_f64(),
            requests: sh.primary.requests.load(Ordering::Relaxed),
            mirrored: sh.primary.mirrored.load(Ordering::Relaxed),
            config: ConfigEcho {
                mirror_methods: cfg.mirror_methods.iter().map(|m| m.to_string()).collect(),
                queue: cfg.queue,
                shadow_concurrency: cfg.shadow_concurrency,
                shadow_timeout_ms: cfg.shadow_timeout.as_millis() as u64,
                primary_timeout_ms: cfg.primary_timeout.as_millis() as u64,
                body_limit_bytes: cfg.body_limit,
                diff_bodies: cfg.diff_bodies,
                shadow_send: cfg.shadow_send.name().into(),
            },
            primary: PrimaryDoc {
                url: cfg.primary.url.clone(),
                errors: sh.primary.errors.load(Ordering::Relaxed),
                timeouts: sh.primary.timeouts.load(Ordering::Relaxed),
                latency_us: LatencySummary::from_histogram(
                    &sh.primary.latency_us.lock().expect("primary histogram"),
                ),
            },
            shadows,
            primary_b,
            record: sh.recorder.as_ref().map(|r| RecordDoc {
                path: r.path.display().to_string(),
                written: r.stats.written.load(Ordering::Relaxed),
                dropped: r.stats.dropped.load(Ordering::Relaxed),
                write_errors: r.stats.write_errors.load(Ordering::Relaxed),
            }),
        }
    }

    /// The proxy's and each shadow's figures so far onto the live
    /// endpoint's board, when there is one (`--metrics-listen`): the
    /// requests received, failed and recorded, the primary's latency; each
    /// shadow's requests that ended, those answered with the primary's
    /// status, its latency and the median of its paired differences.
    pub fn publish_live(&self) {
        let Some(board) = crate::live::board() else {
            return;
        };
        let ms = |us: u64| us as f64 / 1e3;
        let answered = self.primary.latency_us.count > 0;
        board.proxy(crate::live::Proxy {
            requests: self.requests,
            errors: self.primary.errors,
            recorded: self.record.as_ref().map_or(0, |r| r.written),
            p50_ms: answered.then(|| ms(self.primary.latency_us.p50)),
            p99_ms: answered.then(|| ms(self.primary.latency_us.p99)),
        });
        for sh in self.shadows.iter().chain(&self.primary_b) {
            let requests = sh.answered + sh.timeouts + sh.errors;
            let ok = sh.answered.saturating_sub(sh.status_mismatches);
            let answered = sh.latency_us.count > 0;
            board.shadow(crate::live::Shadow {
                name: sh.name.clone(),
                requests,
                ok,
                errors: requests - ok,
                p50_ms: answered.then(|| ms(sh.latency_us.p50)),
                p99_ms: answered.then(|| ms(sh.latency_us.p99)),
                paired_median_ms: sh.paired.median_us.map(|us| us / 1e3),
            });
        }
    }

    /// One line for the live summary.
    pub fn summary_line(&self) -> String {
        let mut s = format!(
            "{:>6.0}s  requests {}  primary {} errors {}",
            self.elapsed_s,
            self.requests,
            primary_latency(self.requests, &self.primary.latency_us),
            self.primary.errors
        );
        for sh in &self.shadows {
            s.push_str(&format!(
                "  | {}: sent {} answered {} dropped {} timeouts {} errors {}",
                sh.name, sh.sent, sh.answered, sh.dropped, sh.timeouts, sh.errors
            ));
            if sh.backed_off > 0 || sh.backed_off_for_ms.is_some() {
                s.push_str(&format!(" (backed off {}", sh.backed_off));
                if let Some(ms) = sh.backed_off_for_ms {
                    s.push_str(&format!(", now for {ms}ms"));
                }
                s.push(')');
            }
            if let Some(m) = sh.paired.median_us {
                s.push_str(&format!(" Δp50 {m:+.0}µs"));
            }
        }
        if let Some(r) = &self.record {
            s.push_str(&format!("  | recorded {} dropped {}", r.written, r.dropped));
        }
        s
    }
}
