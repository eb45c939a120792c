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
//! second.
//!
//! This module reads documents it is handed; it never opens files.

use super::recorder::new_histogram;
use super::report::{
    self, ConfigEcho, ConnectionStats, EndpointReport, GeneratorCost, LatencySummary, LoadReport,
    PercentilePoint, RequestCounts, ScheduleStats, TimelineRow,
};
use super::segment::{Histograms, SecondHistogram, SegmentSummary};
use crate::stats::histogram::{decode, encode};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// A set of documents that cannot be merged; the message names the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MergeError(pub String);

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
    let (headline, lower_bound) = report::headline(&hist.ok, &hist.censored, &hist.unanswered);
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

/// A mix's endpoints added up by name over the segments, which must all
/// have run the same mix (the same endpoints in the same order): counts
/// summed, histograms added bucket by bucket, each segment's OK answers
/// in its window (throughput × window) over the merged window.
fn merge_endpoints(
    sources: &[(String, LoadReport)],
    duration_s: f64,
) -> Result<Vec<EndpointReport>, MergeError> {
    let (first_name, first) = &sources[0];
    let names = |r: &LoadReport| {
        r.endpoints
            .iter()
            .map(|e| e.name.clone())
            .collect::<Vec<_>>()
    };
    if let Some((name, r)) = sources.iter().find(|(_, r)| names(r) != names(first)) {
        return Err(MergeError(format!(
            "{name} and {first_name} ran different mixes (endpoints {:?} and {:?}): \
             merge the segments of one run, all made with the same --mix",
            names(r),
            names(first)
        )));
    }
    let mut merged = Vec::with_capacity(first.endpoints.len());
    for (i, e0) in first.endpoints.iter().enumerate() {
        let mut hist = new_histogram(3);
        let mut out = EndpointReport {
            requests: 0,
            ok: 0,
            errors: Default::default(),
            ..e0.clone()
        };
        let mut ok_in_window = 0.0;
        for (name, r) in sources {
            let e = &r.endpoints[i];
            out.requests += e.requests;
            out.ok += e.ok;
            out.errors.add(&e.errors);
            ok_in_window += (e.throughput_rps * r.duration_s).round();
            let h = match &e.latency_histogram {
                Some(text) => decode(text),
                None if e.ok == 0 => continue,
                None => None,
            };
            let fits = h.is_some_and(|h| hist.add(&h).is_ok());
            if !fits {
                return Err(MergeError(format!(
                    "{name}: endpoint {}'s latency_histogram is missing or not a base64 \
                     HdrHistogram (V2, compressed): the file was changed or cut; run that \
                     segment again",
                    e.name
                )));
            }
        }
        out.throughput_rps = if duration_s > 0.0 {
            ok_in_window / duration_s
        } else {
            0.0
        };
        out.latency_us = LatencySummary::from_histogram(&hist);
        out.latency_histogram = encode(&hist);
        merged.push(out);
    }
    Ok(merged)
}

/// The `segment` of a checked report.
fn seg_of(r: &LoadReport) -> &super::segment::SegmentInfo {
    r.segment
        .as_ref()
        .expect("checked: every source is a segment")
}

/// Refuses what cannot be merged exactly; returns N.
fn check(sources: &[(String, LoadReport)]) -> Result<u32, MergeError> {
    let bad = |m: String| Err(MergeError(m));
    let Some((first_name, first)) = sources.first() else {
        return bad("no documents to merge: give the segments' JSON files".into());
    };
    let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
    let mut count = None;
    for (name, r) in sources {
        if r.schema != report::SCHEMA {
            return bad(format!(
                "{name} is a '{}' document, not {}: give the JSON of `rackbench load --segment I/N --json`",
                r.schema,
                report::SCHEMA
            ));
        }
        if r.segments.is_some() {
            return bad(format!(
                "{name} is already a merged document: merge the segments' own documents"
            ));
        }
        let (Some(seg), Some(_)) = (&r.segment, &r.histograms) else {
            return bad(format!(
                "{name} has no embedded histograms, so it cannot be merged exactly: run each \
                 segment with --segment I/N (and --json)"
            ));
        };
        let n = *count.get_or_insert(seg.count);
        if seg.count != n {
            return bad(format!(
                "{name} is segment {}/{} but {first_name} is of {n}: merge the segments of one \
                 split (every --segment I/N with the same N)",
                seg.index, seg.count
            ));
        }
        if r.url != first.url {
            return bad(format!(
                "{name} loaded {} but {first_name} loaded {}: merge segments of the same load",
                r.url, first.url
            ));
        }
        if let Some(other) = seen.insert(seg.index, name) {
            return bad(format!(
                "{other} and {name} are both segment {}/{n}: give each segment once",
                seg.index
            ));
        }
    }
    Ok(count.expect("at least one source"))
}

/// The note for segments of 0..N that are not among the sources.
fn missing_note(sources: &[(String, LoadReport)], count: u32) -> Option<String> {
    let have: Vec<u32> = sources.iter().map(|(_, r)| seg_of(r).index).collect();
    let missing: Vec<String> = (0..count)
        .filter(|i| !have.contains(i))
        .map(|i| i.to_string())
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "segment(s) {} of {count} missing: the figures cover {} of {count} segments, not \
             the whole load",
            missing.join(", "),
            have.len()
        )
    })
}

/// Every source's histograms of one kind added up.
struct MergedHistograms {
    ok: Histogram<u64>,
    censored: Histogram<u64>,
    unanswered: Histogram<u64>,
    failed: Histogram<u64>,
    unfinished: Histogram<u64>,
    uncorrected: Histogram<u64>,
}

impl MergedHistograms {
    fn of(sources: &[(String, LoadReport)]) -> Result<Self, MergeError> {
        let mut m = MergedHistograms {
            ok: new_histogram(3),
            censored: new_histogram(3),
            unanswered: new_histogram(3),
            failed: new_histogram(3),
            unfinished: new_histogram(3),
            uncorrected: new_histogram(3),
        };
        for (name, r) in sources {
            let h = r.histograms.as_ref().expect("checked");
            for (acc, text, what) in [
                (&mut m.ok, &h.ok, "ok"),
                (&mut m.censored, &h.censored, "censored"),
                (&mut m.unanswered, &h.unanswered, "unanswered"),
                (&mut m.failed, &h.failed, "failed"),
                (&mut m.unfinished, &h.unfinished, "unfinished"),
                (&mut m.uncorrected, &h.uncorrected, "uncorrected"),
            ] {
                if let Some(text) = text {
                    add_encoded(acc, text, name, what)?;
                }
            }
        }
        Ok(m)
    }

    fn encoded(&self, seconds: Vec<SecondHistogram>) -> Histograms {
        Histograms {
            ok: encode(&self.ok),
            censored: encode(&self.censored),
            unanswered: encode(&self.unanswered),
            failed: encode(&self.failed),
            unfinished: encode(&self.unfinished),
            uncorrected: encode(&self.uncorrected),
            seconds,
        }
    }
}

/// Adds the encoded histogram `text` into `acc`, bucket by bucket.
fn add_encoded(
    acc: &mut Histogram<u64>,
    text: &str,
    name: &str,
    what: &str,
) -> Result<(), MergeError> {
    let h = decode(text).ok_or_else(|| {
        MergeError(format!(
            "{name}: histograms.{what} is not a base64 HdrHistogram (V2, compressed): the file \
             was changed or cut; run that segment again"
        ))
    })?;
    acc.add(&h).map_err(|e| {
        MergeError(format!(
            "{name}: histograms.{what} does not fit the merge's bounds ({e:?})"
        ))
    })
}

/// The timeline by wall-clock second from the earliest start `t0_ms`:
/// row t of a segment that began d seconds later lands on t + d (d
/// rounded to a whole second; segments that share a `--start-at` share
/// their seconds exactly). Per-second latency from the merged per-second
/// histograms.
fn merge_timeline(
    sources: &[(String, LoadReport)],
    t0_ms: f64,
) -> Result<(Vec<TimelineRow>, Vec<SecondHistogram>), MergeError> {
    #[derive(Default)]
    struct Row {
        ok: u64,
        errors: u64,
        span_s: f64,
        warmup: bool,
        rows: usize,
        latency: Option<Histogram<u64>>,
    }
    let mut rows: BTreeMap<u64, Row> = BTreeMap::new();
    for (name, r) in sources {
        let offset = ((seg_of(r).run_start_unix_ms - t0_ms) / 1000.0)
            .round()
            .max(0.0) as u64;
        for tr in &r.timeline {
            let row = rows.entry(tr.t_s + offset).or_default();
            row.ok += tr.ok;
            row.errors += tr.errors;
            row.span_s = row.span_s.max(tr.span_s);
            // A second is warm-up only while every segment warms up.
            row.warmup = if row.rows == 0 {
                tr.warmup
            } else {
                row.warmup && tr.warmup
            };
            row.rows += 1;
        }
        for s in &r.histograms.as_ref().expect("checked").seconds {
            let row = rows.entry(s.t_s + offset).or_default();
            let acc = row.latency.get_or_insert_with(|| new_histogram(2));
            add_encoded(acc, &s.ok_us, name, &format!("seconds[t_s={}]", s.t_s))?;
        }
    }
    let mut timeline = Vec::with_capacity(rows.len());
    let mut seconds = Vec::new();
    for (t_s, row) in rows {
        if row.rows == 0 {
            continue;
        }
        let q = |h: &Option<Histogram<u64>>, q: f64| {
            h.as_ref()
                .filter(|h| !h.is_empty())
                .map_or(0, |h| h.value_at_quantile(q))
        };
        timeline.push(TimelineRow {
            t_s,
            ok: row.ok,
            errors: row.errors,
            p50_us: q(&row.latency, 0.5),
            p99_us: q(&row.latency, 0.99),
            rps: row.ok as f64 / row.span_s.max(1e-3),
            warmup: row.warmup,
            span_s: row.span_s,
            // Segments carry per-second totals, not their kinds.
            error_kinds: None,
            status_5xx: 0,
        });
        if let Some(ok_us) = row.latency.as_ref().and_then(encode) {
            seconds.push(SecondHistogram { t_s, ok_us });
        }
    }
    Ok((timeline, seconds))
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

/// The whole load's configuration: shares add up; the rest is the first's.
fn merge_config(reports: &[&LoadReport]) -> ConfigEcho {
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

fn merge_schedule(reports: &[&LoadReport]) -> Option<ScheduleStats> {
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

fn merge_generator(reports: &[&LoadReport]) -> GeneratorCost {
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
fn distribution(points: &[PercentilePoint], h: &Histogram<u64>) -> Vec<PercentilePoint> {
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
fn first_failure(reports: &[&LoadReport], t0_ms: f64) -> Option<super::FirstFailure> {
    reports
        .iter()
        .filter_map(|r| {
            let f = r.first_failure.as_ref()?;
            let at_ms = seg_of(r).run_start_unix_ms + f.at_s * 1000.0;
            Some((at_ms, f))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(at_ms, f)| super::FirstFailure {
            at_s: (at_ms - t0_ms) / 1000.0,
            ..f.clone()
        })
}

fn summaries(sources: &[(String, LoadReport)]) -> Vec<SegmentSummary> {
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

/// The segments of a merged document as terminal lines.
pub fn render_segments(r: &LoadReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let Some(segs) = &r.segments else {
        return s;
    };
    let _ = writeln!(
        s,
        "  segments:    {} merged (latency from their histograms, never averaged)",
        segs.len()
    );
    for g in segs {
        let _ = writeln!(
            s,
            "    {:>3}  {:>9} ok  {:>6} errors  {:>9.1} req/s  p99 {:>8}  late {:.0} ms{}",
            g.index,
            g.ok,
            g.errors,
            g.throughput_rps,
            crate::units::fmt_us(g.p99_us as f64),
            g.late_ms,
            g.source
                .as_deref()
                .map_or(String::new(), |n| format!("  {n}"))
        );
    }
    s
}

/// Writes a run's per-second OK latencies as an HdrHistogram interval log
/// (compressed V2, values in µs), with its wall-clock start as StartTime
/// and BaseTime, for HdrHistogram's own tools (HistogramLogProcessor).
pub fn write_interval_log(r: &LoadReport, out: &mut impl std::io::Write) -> std::io::Result<()> {
    use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
    use hdrhistogram::serialization::V2DeflateSerializer;
    use std::time::{Duration, UNIX_EPOCH};
    let invalid = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, m.to_string());
    let (Some(seg), Some(h)) = (&r.segment, &r.histograms) else {
        return Err(invalid("the run kept no histograms"));
    };
    let start = UNIX_EPOCH + Duration::from_secs_f64(seg.run_start_unix_ms.max(0.0) / 1000.0);
    let mut serializer = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "rackbench {} load {} segment {}/{}: OK latency per second, microseconds",
            r.rackbench_version, r.url, seg.index, seg.count
        ))
        .with_start_time(start)
        .with_base_time(start)
        .begin_log_with(out, &mut serializer)?;
    let spans: BTreeMap<u64, f64> = r.timeline.iter().map(|t| (t.t_s, t.span_s)).collect();
    for s in &h.seconds {
        let hist = decode(&s.ok_us).ok_or_else(|| invalid("a per-second histogram is corrupt"))?;
        let span = spans.get(&s.t_s).copied().unwrap_or(1.0).max(1e-3);
        log.write_histogram(
            &hist,
            Duration::from_secs(s.t_s),
            Duration::from_secs_f64(span),
            None,
        )
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn split_samples_merged_equal_one_histogram_of_every_sample() {
        // Random latencies dealt to k histograms at random, each encoded
        // and decoded as a document carries it, merged: the same buckets
        // as one histogram that saw every sample.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(18);
        for k in [1usize, 2, 3, 7] {
            let mut parts: Vec<Histogram<u64>> = (0..k).map(|_| new_histogram(3)).collect();
            let mut whole = new_histogram(3);
            for _ in 0..50_000 {
                // A long tail: most fast, some very slow.
                let v = if rng.gen_bool(0.02) {
                    rng.gen_range(50_000..5_000_000)
                } else {
                    rng.gen_range(80..3_000)
                };
                whole.record(v).unwrap();
                parts[rng.gen_range(0..k)].record(v).unwrap();
            }
            let mut merged = new_histogram(3);
            for p in &parts {
                add_encoded(&mut merged, &encode(p).unwrap(), "t", "ok").unwrap();
            }
            assert_eq!(merged, whole, "k = {k}");
            for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
                assert_eq!(merged.value_at_quantile(q), whole.value_at_quantile(q));
            }
        }
    }

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
