//! The load-v1 document's timeline: one row per second (`TimelineRow`),
//! made from the recorder's second, and kept within [`TIMELINE_CAP`] rows
//! over a soak by merging neighbours in pairs. It never reads a histogram
//! of its own (a row's p50 and p99 are read by the recorder).

use crate::load::recorder::{ErrorCounts, SecondReport};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimelineRow {
    /// Seconds since the start of the run (warm-up included).
    pub t_s: u64,
    pub ok: u64,
    pub errors: u64,
    /// Latency of this second's OK responses (0 when none).
    pub p50_us: u64,
    pub p99_us: u64,
    /// OK responses per second in this row.
    pub rps: f64,
    pub warmup: bool,
    /// Seconds this row covers: 1, or less for the last one.
    #[serde(default = "one_second")]
    pub span_s: f64,
    /// This second's failures by kind; absent when it had none (and in
    /// records made before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kinds: Option<ErrorCounts>,
    /// Of this second's status failures, those answered 500 or above
    /// (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub status_5xx: u64,
}

fn one_second() -> f64 {
    1.0
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The most rows a load's timeline keeps: an hour of seconds. A soak's
/// longer run merges neighbouring rows in pairs when the cap is reached
/// ([`TimelineRow::merged`]), so its rows cover 2, 4, 8... seconds and
/// the report's size stays flat over hours.
pub const TIMELINE_CAP: usize = 3600;

/// Merges neighbouring rows in pairs once `timeline` holds
/// [`TIMELINE_CAP`] rows (an odd last row is kept as it is).
pub(crate) fn coarsen_timeline(timeline: &mut Vec<TimelineRow>) {
    if timeline.len() < TIMELINE_CAP {
        return;
    }
    *timeline = timeline
        .chunks(2)
        .map(|c| match c {
            [a, b] => a.merged(b),
            _ => c[0].clone(),
        })
        .collect();
}

impl TimelineRow {
    /// Two neighbouring rows as one: the first's start, counts and spans
    /// added, p50 the OK-weighted mean of the two (an approximation: the
    /// seconds' histograms are gone), p99 the larger, warm-up if either.
    pub fn merged(&self, b: &TimelineRow) -> TimelineRow {
        let ok = self.ok + b.ok;
        let p50 = (self.p50_us as u128 * self.ok as u128 + b.p50_us as u128 * b.ok as u128)
            / u128::from(ok.max(1));
        let span = self.span_s + b.span_s;
        TimelineRow {
            t_s: self.t_s,
            ok,
            errors: self.errors + b.errors,
            p50_us: p50 as u64,
            p99_us: self.p99_us.max(b.p99_us),
            rps: ok as f64 / span.max(1e-3),
            warmup: self.warmup || b.warmup,
            span_s: span,
            error_kinds: match (self.error_kinds, b.error_kinds) {
                (None, None) => None,
                (a, b) => {
                    let mut sum = a.unwrap_or_default();
                    sum.add(&b.unwrap_or_default());
                    Some(sum)
                }
            },
            status_5xx: self.status_5xx + b.status_5xx,
        }
    }
}

impl TimelineRow {
    pub(crate) fn from_second(r: &SecondReport, warmup: bool) -> Self {
        let span = r.span.as_secs_f64().max(1e-3);
        TimelineRow {
            t_s: r.sec,
            ok: r.ok,
            errors: r.errors,
            p50_us: if r.latency.is_empty() {
                0
            } else {
                r.latency.value_at_quantile(0.5)
            },
            p99_us: if r.latency.is_empty() {
                0
            } else {
                r.latency.value_at_quantile(0.99)
            },
            rps: r.ok as f64 / span,
            warmup,
            span_s: r.span.as_secs_f64(),
            error_kinds: (r.errors > 0).then_some(r.error_kinds),
            status_5xx: r.status_5xx,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two days of one-second rows: the timeline stays within its cap,
    /// and no request is lost from it in the merging.
    #[test]
    fn a_soak_long_timeline_stays_within_its_cap_and_keeps_every_count() {
        let mut timeline = Vec::new();
        let seconds = 2 * 86_400u64;
        for t_s in 0..seconds {
            timeline.push(TimelineRow {
                t_s,
                ok: 10,
                errors: 1,
                p50_us: 100 + t_s % 2,
                p99_us: 900 + t_s % 7,
                rps: 10.0,
                warmup: t_s < 5,
                span_s: 1.0,
                error_kinds: None,
                status_5xx: 0,
            });
            coarsen_timeline(&mut timeline);
        }
        assert!(timeline.len() < TIMELINE_CAP, "{}", timeline.len());
        assert!(timeline.len() >= TIMELINE_CAP / 2, "{}", timeline.len());
        assert_eq!(timeline.iter().map(|r| r.ok).sum::<u64>(), 10 * seconds);
        assert_eq!(timeline.iter().map(|r| r.errors).sum::<u64>(), seconds);
        let span: f64 = timeline.iter().map(|r| r.span_s).sum();
        assert_eq!(span, seconds as f64);
        assert!(timeline[1].rps > 9.99 && timeline[1].rps < 10.01);
        assert!(timeline[0].warmup && !timeline[1].warmup);
        assert!(timeline.iter().all(|r| r.p99_us <= 906));
    }
}
