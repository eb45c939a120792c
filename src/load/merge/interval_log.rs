//! The HdrHistogram interval log of one run (`--hist-out`): its
//! per-second OK latencies for HdrHistogram's own tools. It writes to the
//! writer it is handed; it never opens a file and never merges.

use crate::load::report::LoadReport;
use crate::stats::histogram::decode;
use std::collections::BTreeMap;

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
