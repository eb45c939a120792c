//! A mix's endpoints merged by name: the segments must all have run the
//! same mix; counts add, histograms add bucket by bucket. It never merges
//! the headline or the timeline.

use super::check::MergeError;
use crate::load::recorder::new_histogram;
use crate::load::report::{EndpointReport, LatencySummary, LoadReport};
use crate::stats::histogram::{decode, encode};

/// A mix's endpoints added up by name over the segments, which must all
/// have run the same mix (the same endpoints in the same order): counts
/// summed, histograms added bucket by bucket, each segment's OK answers
/// in its window (throughput × window) over the merged window.
pub(super) fn merge_endpoints(
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
