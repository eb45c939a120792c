//! The files of the load-driving commands (`load`, `replay`, `trial`): a
//! request body read from `--body-file`, and after a run, a late
//! segment's warning and its `--hist-out` written.

use super::sink::Sink;
use super::usage::usage;
use crate::load::{self, LoadReport};
use anyhow::Result;
use std::path::Path;

/// The bytes of a `--body-file`; an unreadable one is a usage error.
pub fn read_body(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| usage(format!("cannot read --body-file {}: {e}", path.display())))
}

/// After a run: tells `sink` how late a segment began, and writes the
/// interval log to `hist_out` when given.
pub fn after_segment(report: &LoadReport, hist_out: Option<&Path>, sink: &dyn Sink) -> Result<()> {
    if let Some(seg) = report.segment.as_ref().filter(|s| s.late_ms > 0.0) {
        sink.note(&format!("warning: {}", load::report::late_warning(seg)));
    }
    if let Some(path) = hist_out {
        write_hist_out(report, path)
            .map_err(|e| anyhow::anyhow!("cannot write --hist-out {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Writes the run's interval log to `path` whole (a temporary file renamed).
fn write_hist_out(report: &LoadReport, path: &Path) -> std::io::Result<()> {
    let tmp = path.with_extension("hlog.tmp");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
    load::merge::write_interval_log(report, &mut f)?;
    f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(&tmp, path)
}
