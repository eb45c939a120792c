//! The merged document's other parts: the configuration (shares add up),
//! the schedule's lateness, the generator's cost, the plotted percentile
//! points, the first failure on the wall clock and each segment's
//! summary. Each a plain function of the segments; no histogram is added
//! here (histograms.rs) and no file is read.

use super::check::seg_of;
use crate::load::report::{ConfigEcho, GeneratorCost, LoadReport, PercentilePoint, ScheduleStats};
use crate::load::segment::SegmentSummary;
use crate::load::FirstFailure;
use hdrhistogram::Histogram;

/// The whole load's configuration: shares add up; the rest is the first's.
pub(super) fn merge_config(reports: &[&LoadReport]) -> ConfigEcho {
    let first = &reports[0].config;
    let all = |f: fn(&ConfigEcho) -> Option<f64>| -> Option<f64> {
        reports.iter().map(|r| f(&r.config)).sum()
    };
    ConfigEcho {
        endpoint: first.endpoint.clone(),
        connections: reports.iter().map(|r| r.config.connections).sum(),
        threads: reports.iter().map(|r| r.config.threads).sum(),
        rate_rps: all(|c| c.rate_rps),
        duration_s: first.duration_s,
        requests: reports.iter().map(|r| r.config.requests).sum(),
        warmup_s: reports
            .iter()
            .map(|r| r.config.warmup_s)
            .fold(0.0, f64::max),
        warmup_until_steady: first.warmup_until_steady,
        pipeline: first.pipeline,
        keep_alive: first.keep_alive,
        timeout_s: first.timeout_s,
    }
}

pub(super) fn merge_schedule(reports: &[&LoadReport]) -> Option<ScheduleStats> {
    let scheds: Vec<&ScheduleStats> = reports.iter().filter_map(|r| r.schedule.as_ref()).collect();
    if scheds.is_empty() {
        return None;
    }
    let late_sends = scheds.iter().map(|s| s.late_sends).sum();
    let sends: Option<u64> = scheds.iter().map(|s| s.sends).sum();
    Some(ScheduleStats {
        late_sends,
        max_lag_us: scheds.iter().map(|s| s.max_lag_us).max().unwrap_or(0),
        sends,
        within_1ms_share: sends
            .filter(|&n| n > 0)
            .map(|n| n.saturating_sub(late_sends) as f64 / n as f64),
        slack_us: scheds.iter().filter_map(|s| s.slack_us).max(),
    })
}

pub(super) fn merge_generator(reports: &[&LoadReport]) -> GeneratorCost {
    let mut ios: Vec<&str> = reports.iter().map(|r| r.generator.io.as_str()).collect();
    ios.dedup();
    GeneratorCost {
        cpu_user_s: reports.iter().map(|r| r.generator.cpu_user_s).sum(),
        cpu_sys_s: reports.iter().map(|r| r.generator.cpu_sys_s).sum(),
        // Each segment is its own process, usually on its own machine.
        peak_rss_bytes: reports
            .iter()
            .map(|r| r.generator.peak_rss_bytes)
            .max()
            .unwrap_or(0),
        busiest_thread_utilization: reports
            .iter()
            .map(|r| r.generator.busiest_thread_utilization)
            .fold(0.0, f64::max),
        io: if ios.len() == 1 {
            ios[0].to_string()
        } else {
            "mixed".into()
        },
        wakeups: reports.iter().map(|r| r.generator.wakeups).sum(),
    }
}

/// The plotted percentiles of the merged headline, at the same points.
pub(super) fn distribution(points: &[PercentilePoint], h: &Histogram<u64>) -> Vec<PercentilePoint> {
    if h.is_empty() {
        return Vec::new();
    }
    points
        .iter()
        .map(|p| PercentilePoint {
            percentile: p.percentile,
            latency_us: h.value_at_percentile(p.percentile),
        })
        .collect()
}

/// The first failure of any segment on the wall clock, its time from the
/// merged start.
pub(super) fn first_failure(reports: &[&LoadReport], t0_ms: f64) -> Option<FirstFailure> {
    reports
        .iter()
        .filter_map(|r| {
            let f = r.first_failure.as_ref()?;
            let at_ms = seg_of(r).run_start_unix_ms + f.at_s * 1000.0;
            Some((at_ms, f))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(at_ms, f)| FirstFailure {
            at_s: (at_ms - t0_ms) / 1000.0,
            ..f.clone()
        })
}

pub(super) fn summaries(sources: &[(String, LoadReport)]) -> Vec<SegmentSummary> {
    let mut v: Vec<SegmentSummary> = sources
        .iter()
        .map(|(name, r)| {
            let seg = seg_of(r);
            SegmentSummary {
                index: seg.index,
                source: Some(name.clone()),
                requests: r.requests.total,
                ok: r.requests.ok,
                errors: r.errors.total(),
                throughput_rps: r.throughput_rps,
                p99_us: r.latency_us.p99,
                connections: r.config.connections,
                rate_rps: r.config.rate_rps,
                late_ms: seg.late_ms,
                window_start_unix_ms: seg.window_start_unix_ms,
            }
        })
        .collect();
    v.sort_by_key(|s| s.index);
    v
}
