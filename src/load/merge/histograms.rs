//! The segments' histograms added bucket by bucket: the headline's kinds
//! (ok, censored, unanswered, failed, unfinished, uncorrected) and the
//! timeline by wall-clock second with its per-second histograms. Never a
//! percentile averaged; it reads documents, never files.

use super::check::{seg_of, MergeError};
use crate::load::recorder::new_histogram;
use crate::load::report::{LoadReport, TimelineRow};
use crate::load::segment::{Histograms, SecondHistogram};
use crate::stats::histogram::{decode, encode};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Every source's histograms of one kind added up.
pub(super) struct MergedHistograms {
    pub(super) ok: Histogram<u64>,
    pub(super) censored: Histogram<u64>,
    pub(super) unanswered: Histogram<u64>,
    pub(super) failed: Histogram<u64>,
    pub(super) unfinished: Histogram<u64>,
    pub(super) uncorrected: Histogram<u64>,
}

impl MergedHistograms {
    pub(super) fn of(sources: &[(String, LoadReport)]) -> Result<Self, MergeError> {
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

    pub(super) fn encoded(&self, seconds: Vec<SecondHistogram>) -> Histograms {
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
pub(super) fn add_encoded(
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
pub(super) fn merge_timeline(
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
}
