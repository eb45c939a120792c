//! Where runtimes live, and what goes wrong with them.

use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum RuntimeError {
    #[error("unknown runtime '{name}'; known runtimes: {known} (a Debian release with `rackbench runtime add debian-13`, your own Ruby with `rackbench runtime add NAME --ruby PATH` or a plan's [runtime_defs.NAME])")]
    Unknown { name: String, known: String },
    #[error("runtime '{runtime}' has no {server}: {fix}")]
    NoServer {
        runtime: String,
        server: String,
        fix: String,
    },
    #[error("runtime '{runtime}': {why}")]
    Refused { runtime: String, why: String },
    #[error("cannot build runtime '{name}': {why}")]
    Build { name: String, why: String },
    #[error("runtime '{name}': {why}")]
    Probe { name: String, why: String },
    #[error("{0}")]
    Io(String),
}

/// Where runtimes live: `RACKBENCH_RUNTIMES`, or
/// `${XDG_DATA_HOME:-~/.local/share}/rackbench/runtimes`.
pub fn runtimes_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("RACKBENCH_RUNTIMES") {
        return PathBuf::from(d);
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(std::env::temp_dir);
    data.join("rackbench/runtimes")
}
