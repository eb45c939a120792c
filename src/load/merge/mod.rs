//! The exact merge of segment documents (`rackbench merge`), and the
//! HdrHistogram interval log of one run (`--hist-out`).
//!
//! Counts, errors and costs add; latency figures come from the segments'
//! histograms merged bucket by bucket and read once, so a merged p99 is
//! the p99 of every sample (to the histogram's 3 significant digits).
//! Percentiles are never averaged: the mean of two p99s is the p99 of
//! nothing (a slow segment's tail would be diluted by the fast ones).
//! Throughput is the OK responses of every counted window over the union
//! of those windows on the wall clock; the timeline lines up by wall-clock
//! second. Fairness is computed afresh over every segment's connections,
//! from the per-connection counts each segment document keeps; a segment
//! without them leaves the merge without `fairness`.
//!
//! This module reads documents it is handed; it never opens files.
//!
//! `check.rs` refuses what cannot be merged, `histograms.rs` adds the
//! histograms and the timeline, `endpoints.rs` a mix's endpoints,
//! `fields.rs` the rest of the document; this file puts the document
//! together. `text.rs` renders the segments, `interval_log.rs` writes
//! `--hist-out`.

mod check;
mod endpoints;
mod fields;
mod histograms;
mod interval_log;
mod text;

pub use check::MergeError;
pub use interval_log::write_interval_log;
pub use text::render_segments;

use super::report::{self, ConnectionStats, LatencySummary, LoadReport, RequestCounts};
use crate::stats::histogram::encode;
use check::{check, missing_note, seg_of};
use endpoints::merge_endpoints;
use fields::{
    distribution, first_failure, merge_config, merge_generator, merge_schedule, summaries,
};
use hdrhistogram::Histogram;
use histograms::{merge_timeline, MergedHistograms};
use std::collections::BTreeMap;

/// The merged document and what the merge noticed (missing or late
/// segments), also in its `warnings`.
#[derive(Debug, Clone)]
pub struct Merged {
    pub report: LoadReport,
    pub notes: Vec<String>,
}

/// Merges load-v1 documents (as JSON values) into one load-v1 document;
/// errors name the document by its position.
pub fn merge(docs: &[serde_json::Value]) -> anyhow::Result<serde_json::Value> {
    let sources = docs
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let name = format!("document {}", i + 1);
            let r: LoadReport = serde_json::from_value(v.clone()).map_err(|e| {
                MergeError(format!("{name} is not a rackbench/load-v1 document: {e}"))
            })?;
            Ok((name, r))
        })
        .collect::<Result<Vec<_>, MergeError>>()?;
    Ok(serde_json::to_value(merge_reports(&sources)?.report)?)
}

/// Merges named segment reports (a name is a file name, for errors and
/// the `segments` list).
pub fn merge_reports(sources: &[(String, LoadReport)]) -> Result<Merged, MergeError> {
    let count = check(sources)?;
    let mut notes = missing_note(sources, count).into_iter().collect::<Vec<_>>();
    for (_, r) in sources {
        if let Some(seg) = r.segment.as_ref().filter(|s| s.late_ms > 0.0) {
            notes.push(report::late_warning(seg));
        }
    }
    let hist = MergedHistograms::of(sources)?;
    let failed_answers = sources
        .iter()
        .map(|(_, r)| r.errors.status + r.errors.body)
        .sum();
    let (headline, lower_bound) =
        report::headline(&hist.ok, &hist.censored, &hist.unanswered, failed_answers);
    let t0_ms = sources
        .iter()
        .map(|(_, r)| seg_of(r).run_start_unix_ms)
        .fold(f64::INFINITY, f64::min);
    let (timeline, seconds) = merge_timeline(sources, t0_ms)?;
    let (duration_s, ok_in_window) = union_window(sources);
    let reports: Vec<&LoadReport> = sources.iter().map(|(_, r)| r).collect();
    let first = reports[0];
    let mut warnings = notes.clone();
    for (_, r) in sources {
        let i = seg_of(r).index;
        warnings.extend(
            r.warnings
                .iter()
                .filter(|w| !w.starts_with("segment "))
                .map(|w| format!("segment {i}: {w}")),
        );
    }
    let summary = |h: &Histogram<u64>| (!h.is_empty()).then(|| LatencySummary::from_histogram(h));
    let endpoints = merge_endpoints(sources, duration_s)?;
    let report = LoadReport {
        schema: report::SCHEMA.to_string(),
        rackbench_version: env!("CARGO_PKG_VERSION").to_string(),
        url: first.url.clone(),
        config: merge_config(&reports),
        requests: RequestCounts {
            total: reports.iter().map(|r| r.requests.total).sum(),
            ok: reports.iter().map(|r| r.requests.ok).sum(),
            unfinished: reports.iter().map(|r| r.requests.unfinished).sum(),
            unsent: reports.iter().map(|r| r.requests.unsent).sum(),
        },
        errors: reports.iter().fold(Default::default(), |mut e, r| {
            e.add(&r.errors);
            e
        }),
        throughput_rps: if duration_s > 0.0 {
            ok_in_window as f64 / duration_s
        } else {
            0.0
        },
        duration_s,
        latency_us: LatencySummary::from_histogram(&headline),
        latency_lower_bound: lower_bound,
        latency_failed_us: summary(&hist.failed),
        latency_unfinished_us: summary(&hist.unfinished),
        latency_uncorrected_us: reports
            .iter()
            .any(|r| r.latency_uncorrected_us.is_some())
            .then(|| LatencySummary::from_histogram(&hist.uncorrected)),
        schedule: merge_schedule(&reports),
        connections: ConnectionStats {
            configured: reports.iter().map(|r| r.connections.configured).sum(),
            opened: reports.iter().map(|r| r.connections.opened).sum(),
            connect_failures: reports.iter().map(|r| r.connections.connect_failures).sum(),
            never_answered: reports.iter().map(|r| r.connections.never_answered).sum(),
        },
        fairness: report::Fairness::merge(reports.iter().map(|r| r.fairness.as_ref())),
        latency_distribution: distribution(&first.latency_distribution, &headline),
        latency_histogram: encode(&headline),
        timeline,
        generator: merge_generator(&reports),
        warnings,
        interrupted: reports.iter().any(|r| r.interrupted),
        stopped_on_error: reports.iter().any(|r| r.stopped_on_error),
        elapsed_s: reports
            .iter()
            .map(|r| seg_of(r).run_start_unix_ms + r.elapsed_s * 1000.0 - t0_ms)
            .fold(0.0, f64::max)
            / 1000.0,
        status_codes: reports.iter().fold(BTreeMap::new(), |mut m, r| {
            for (code, n) in &r.status_codes {
                *m.entry(*code).or_default() += n;
            }
            m
        }),
        first_failure: first_failure(&reports, t0_ms),
        segment: None,
        histograms: Some(hist.encoded(seconds)),
        segments: Some(summaries(sources)),
        // Each segment's slow clients were its own; a merge keeps none.
        slow_clients: None,
        endpoints,
    };
    Ok(Merged { report, notes })
}

/// The union of the counted windows on the wall clock (seconds), and the
/// OK responses completed in them (each segment's throughput × its
/// window).
fn union_window(sources: &[(String, LoadReport)]) -> (f64, u64) {
    let (mut start, mut end, mut ok) = (f64::INFINITY, f64::NEG_INFINITY, 0u64);
    for (_, r) in sources {
        let s = seg_of(r).window_start_unix_ms;
        start = start.min(s);
        end = end.max(s + r.duration_s * 1000.0);
        ok += r.ok_in_window();
    }
    (((end - start) / 1000.0).max(0.0), ok)
}

#[cfg(test)]
mod tests {
    use super::super::recorder::new_histogram;
    use super::super::report::{EndpointReport, TimelineRow};
    use super::super::segment::{Histograms, SecondHistogram};
    use super::*;

    /// A segment document: `rows` (t_s, ok, latency of each) over a
    /// counted window of `rows.len()` seconds from `start_ms`.
    fn segment(index: u32, count: u32, start_ms: f64, rows: &[(u64, u64, u64)]) -> LoadReport {
        let mut r = super::super::report::empty_report();
        let mut all = new_histogram(3);
        let mut seconds = Vec::new();
        for &(t_s, ok, us) in rows {
            let mut h = new_histogram(2);
            h.record_n(us, ok).unwrap();
            all.record_n(us, ok).unwrap();
            seconds.push(SecondHistogram {
                t_s,
                ok_us: encode(&h).unwrap(),
            });
            r.timeline.push(TimelineRow {
                t_s,
                ok,
                errors: 0,
                p50_us: us,
                p99_us: us,
                rps: ok as f64,
                warmup: false,
                span_s: 1.0,
                error_kinds: None,
                status_5xx: 0,
            });
        }
        r.requests.ok = all.len();
        r.requests.total = all.len();
        r.duration_s = rows.len() as f64;
        r.throughput_rps = all.len() as f64 / r.duration_s;
        r.segment = Some(super::super::segment::SegmentInfo {
            index,
            count,
            start_at: None,
            late_ms: 0.0,
            run_start_unix_ms: start_ms,
            window_start_unix_ms: start_ms,
        });
        r.histograms = Some(Histograms {
            ok: encode(&all),
            seconds,
            ..Default::default()
        });
        r
    }

    /// Endpoint `name` of a mix with `ok` answers of `us` µs each.
    fn mix_endpoint(name: &str, ok: u64, us: u64) -> EndpointReport {
        let mut h = new_histogram(3);
        h.record_n(us, ok).unwrap();
        EndpointReport {
            name: name.into(),
            method: "GET".into(),
            path: format!("/{name}"),
            weight: 1.0,
            requests: ok + 1,
            ok,
            throughput_rps: ok as f64 / 2.0,
            latency_us: LatencySummary::from_histogram(&h),
            errors: crate::load::ErrorCounts {
                timeout: 1,
                ..Default::default()
            },
            latency_histogram: encode(&h),
        }
    }

    #[test]
    fn a_mix_s_endpoints_merge_by_name_and_different_mixes_are_refused() {
        let mut a = segment(0, 2, 1000.0, &[(0, 100, 500), (1, 100, 500)]);
        let mut b = segment(1, 2, 1000.0, &[(0, 100, 500), (1, 100, 500)]);
        a.endpoints = vec![
            mix_endpoint("fast", 90, 100),
            mix_endpoint("slow", 10, 9000),
        ];
        b.endpoints = vec![
            mix_endpoint("fast", 30, 300),
            mix_endpoint("slow", 70, 9000),
        ];
        let m = merge_reports(&[("a.json".into(), a.clone()), ("b.json".into(), b.clone())])
            .unwrap()
            .report;
        let fast = &m.endpoints[0];
        assert_eq!(
            (fast.name.as_str(), fast.ok, fast.requests),
            ("fast", 120, 122)
        );
        assert_eq!(fast.errors.timeout, 2);
        // 90 at 100 µs and 30 at 300 µs: the merged p90 is 300, which no
        // average of the two segments' p90s (100 and 300) would say.
        assert_eq!(fast.latency_us.count, 120);
        assert_eq!(fast.latency_us.p50, 100);
        assert_eq!(fast.latency_us.p90, 300);
        assert!(
            (fast.throughput_rps - 60.0).abs() < 1e-9,
            "{}",
            fast.throughput_rps
        );
        assert_eq!(m.endpoints[1].ok, 80);
        b.endpoints.swap(0, 1);
        let err = merge_reports(&[("a.json".into(), a), ("b.json".into(), b)]).unwrap_err();
        assert!(
            err.0.contains("b.json and a.json ran different mixes"),
            "{}",
            err.0
        );
    }

    #[test]
    fn the_timeline_lines_up_by_wall_clock_second_and_throughput_spans_the_union() {
        // Segment 1 began a second after segment 0: its row 0 is the
        // merged row 1.
        let t = 1_795_467_600_000.0;
        let a = segment(0, 2, t, &[(0, 10, 1000), (1, 10, 1000)]);
        let b = segment(1, 2, t + 1000.0, &[(0, 30, 5000), (1, 5, 5000)]);
        let m = merge_reports(&[("a".into(), a), ("b".into(), b)])
            .unwrap()
            .report;
        let rows: Vec<(u64, u64)> = m.timeline.iter().map(|r| (r.t_s, r.ok)).collect();
        assert_eq!(rows, [(0, 10), (1, 40), (2, 5)]);
        // Merged second 1 holds 10 at 1 ms and 30 at 5 ms: its p50 is 5 ms.
        assert!(
            (4950..=5050).contains(&m.timeline[1].p50_us),
            "{:?}",
            m.timeline[1]
        );
        assert!((990..=1010).contains(&m.timeline[0].p50_us));
        // 55 OK responses over the union of [t, t+2 s) and [t+1 s, t+3 s).
        assert_eq!(m.duration_s, 3.0);
        assert!((m.throughput_rps - 55.0 / 3.0).abs() < 1e-9);
        assert_eq!(m.requests.ok, 55);
        assert_eq!(m.config.connections, 4);
        assert_eq!(m.latency_us.count, 55);
        let segs = m.segments.unwrap();
        assert_eq!(segs.iter().map(|s| s.index).collect::<Vec<_>>(), [0, 1]);
    }

    /// Fairness merges from the segments' per-connection counts, and a
    /// segment without them leaves the merge without fairness: no guess.
    #[test]
    fn fairness_merges_over_every_segment_s_connections_or_is_left_out() {
        use super::super::report::Fairness;
        let mut a = segment(0, 2, 1000.0, &[(0, 10, 100)]);
        let mut b = segment(1, 2, 1000.0, &[(0, 10, 100)]);
        a.fairness = Some(Fairness::of(vec![5, 5], true));
        b.fairness = Some(Fairness::of(vec![10, 0], true));
        let both = vec![("a".to_string(), a.clone()), ("b".to_string(), b)];
        let f = merge_reports(&both).unwrap().report.fairness.unwrap();
        assert_eq!((f.connections_answered, f.connections_starved), (3, 1));
        assert_eq!(f.answers_per_connection, Some(vec![10, 5, 5, 0]));
        // (20)² / (4 · 150) = 2/3.
        assert!((f.jain_index.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        let old = vec![
            ("a".to_string(), a),
            ("c".to_string(), segment(1, 2, 1000.0, &[(0, 10, 100)])),
        ];
        assert_eq!(merge_reports(&old).unwrap().report.fairness, None);
    }

    #[test]
    fn the_json_entry_point_merges_and_names_a_bad_document_by_position() {
        let t = 1_795_467_600_000.0;
        let docs: Vec<serde_json::Value> = [
            segment(1, 2, t, &[(0, 4, 2000)]),
            segment(0, 2, t, &[(0, 6, 1000)]),
        ]
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect();
        let m: LoadReport = serde_json::from_value(merge(&docs).unwrap()).unwrap();
        assert_eq!(m.requests.ok, 10);
        assert_eq!(m.segments.unwrap().len(), 2);
        let mut plain = docs[0].clone();
        plain.as_object_mut().unwrap().remove("histograms");
        let err = merge(&[docs[1].clone(), plain]).unwrap_err().to_string();
        assert!(
            err.starts_with("document 2 has no embedded histograms"),
            "{err}"
        );
    }

    #[test]
    fn averaged_percentiles_would_be_wrong_here() {
        // Why the merge reads percentiles off the merged histogram: one
        // slow segment, three fast ones; the mean of their p99s is far
        // from the p99 of all requests.
        let mut parts: Vec<Histogram<u64>> = (0..4).map(|_| new_histogram(3)).collect();
        for (i, p) in parts.iter_mut().enumerate() {
            let base = if i == 0 { 100_000 } else { 1_000 };
            for v in 0..1000 {
                p.record(base + v).unwrap();
            }
        }
        let mean_p99 = parts
            .iter()
            .map(|p| p.value_at_quantile(0.99) as f64)
            .sum::<f64>()
            / 4.0;
        let mut merged = new_histogram(3);
        for p in &parts {
            merged.add(p).unwrap();
        }
        let p99 = merged.value_at_quantile(0.99) as f64;
        assert!(p99 > 100_000.0 && mean_p99 < 30_000.0, "{p99} {mean_p99}");
    }
}
