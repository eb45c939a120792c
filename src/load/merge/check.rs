//! What a merge refuses, and the note for segments missing: every source
//! a segment of the same split of the same load, each given once, with
//! its histograms. `MergeError` names the fix. It never adds a figure up.

use crate::load::report::{self, LoadReport};
use crate::load::segment::SegmentInfo;
use std::collections::BTreeMap;

/// A set of documents that cannot be merged; the message names the fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MergeError(pub String);

/// The `segment` of a checked report.
pub(super) fn seg_of(r: &LoadReport) -> &SegmentInfo {
    r.segment
        .as_ref()
        .expect("checked: every source is a segment")
}

/// Refuses what cannot be merged exactly; returns N.
pub(super) fn check(sources: &[(String, LoadReport)]) -> Result<u32, MergeError> {
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
pub(super) fn missing_note(sources: &[(String, LoadReport)], count: u32) -> Option<String> {
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
