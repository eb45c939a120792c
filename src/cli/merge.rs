//! `rackbench merge FILES...`: segment documents (`rackbench load
//! --segment I/N --json`) into one load-v1 document, exactly (see
//! `load::merge`).

use super::usage;
use crate::load::merge::{merge_reports, render_segments};
use crate::load::LoadReport;
use anyhow::{Context, Result};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The segments' load-v1 JSON documents (one per segment).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print the merged JSON document (rackbench/load-v1 with `segments`)
    /// instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Also write the merged JSON document to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: MergeArgs) -> Result<ExitCode> {
    let mut sources = Vec::with_capacity(args.files.len());
    for path in &args.files {
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
        eprintln!("warning: {note}");
    }
    let report = merged.report;
    if let Some(path) = &args.out {
        let mut text = serde_json::to_string_pretty(&report)?;
        text.push('\n');
        std::fs::write(path, text)
            .with_context(|| format!("cannot write --out {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", report.render_text())?;
        write!(out, "{}", render_segments(&report))?;
    }
    Ok(ExitCode::SUCCESS)
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
