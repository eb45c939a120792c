//! `merge`: segment documents (`rackbench load --segment I/N --json`)
//! read and merged into one load-v1 document, exactly (see
//! `load::merge`), and the document written where asked.

use super::sink::Sink;
use super::usage::usage;
use crate::load::merge::merge_reports;
use crate::load::LoadReport;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Reads each of `files`, merges them (a note to `sink` for each thing the
/// merge had to say), writes the merged document to `out` when given, and
/// returns it. An unreadable file or one that holds no load-v1 document is
/// a usage error naming it.
pub fn merge(files: &[PathBuf], out: Option<&Path>, sink: &dyn Sink) -> Result<LoadReport> {
    let mut sources = Vec::with_capacity(files.len());
    for path in files {
        let name = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|e| usage(format!("cannot read {name}: {e}")))?;
        let report = parse_document(&text).map_err(|e| {
            usage(format!(
                "{name} is not a rackbench/load-v1 document ({e}): give the output of \
                 `rackbench load --segment I/N --json`"
            ))
        })?;
        sources.push((name, report));
    }
    let merged = merge_reports(&sources).map_err(|e| usage(e.0))?;
    for note in &merged.notes {
        sink.note(&format!("warning: {note}"));
    }
    if let Some(path) = out {
        let mut text = serde_json::to_string_pretty(&merged.report)?;
        text.push('\n');
        std::fs::write(path, text)
            .with_context(|| format!("cannot write --out {}", path.display()))?;
    }
    Ok(merged.report)
}

/// The load-v1 document in `text`: the whole text, or else the first JSON
/// object that starts a line, so a pod's log (`kubectl logs`, where the
/// segment's stderr lines such as "waiting 3.0s for --start-at" come
/// before its JSON on stdout) can be merged as it is.
fn parse_document(text: &str) -> serde_json::Result<LoadReport> {
    let whole = serde_json::from_str(text);
    if whole.is_ok() {
        return whole;
    }
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with('{') {
            let mut stream =
                serde_json::Deserializer::from_str(&text[offset..]).into_iter::<LoadReport>();
            if let Some(Ok(report)) = stream.next() {
                return Ok(report);
            }
        }
        offset += line.len();
    }
    whole
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_after_log_lines_is_found() {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/contracts/load-v1.json"
        ))
        .unwrap();
        assert!(parse_document(&doc).is_ok());
        let log = format!("waiting 3.0s for --start-at 2026-11-23T21:00:00.000Z\n{doc}");
        let r = parse_document(&log).unwrap();
        assert_eq!(r.schema, "rackbench/load-v1");
        assert!(parse_document("waiting\n{\"not\": 1}\n").is_err());
    }
}
