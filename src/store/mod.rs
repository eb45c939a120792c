//! Results on disk: a results directory holds the resolved plan, a
//! manifest, and one JSON record per trial, each written the moment the
//! trial ends, atomically (a temporary file renamed into place), so an
//! interrupted run loses nothing already measured and `--resume` can skip
//! what is done. Reports read only from here, and only here reads a
//! results directory or names its files: `read` (the one check),
//! `study` (the directory read once, for every reader), `figures`
//! (the one list of a trial's figures), `runtime` (which Ruby and switches
//! a trial ran on), `budget` (the budget it ran under and its kills for
//! memory), `slow` (its slow clients and what they saw), `endpoints`
//! (its figures per endpoint of a mix), `samples` (what `stats`
//! compares).
//!
//! Layout (`rackbench/results-v1`):
//!
//! ```text
//! DIR/plan.toml              the plan as given
//! DIR/manifest.json          rackbench/run-v1: every planned trial, in run order
//! DIR/trials/ID.json         rackbench/trial-v1 records (with outcome)
//! DIR/breakpoints/ID.json    rackbench/breakpoint-v1 records
//! DIR/work/ID/               each trial's server log and rendered configs
//! DIR/servers-N.toml         copies of the run's --servers-file, in order
//! DIR/summary.json           rackbench/summary-v1, written at the end of a run
//! DIR/compare.json           the A/A comparison of `run --aa`
//! DIR/sweep.json             a sweep's analysis (`sweep --analyse`)
//! DIR/report.*, trials.csv   the reports, rebuilt from the records
//! ```

pub mod budget;
pub mod database;
pub mod endpoints;
pub mod figures;
pub mod profiles;
pub mod read;
pub mod records;
pub mod runtime;
pub mod samples;
pub mod slow;
pub mod study;
pub mod summary;

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::{Path, PathBuf};

pub const LAYOUT: &str = "rackbench/results-v1";

/// Writes `value` as pretty JSON to `path` atomically.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    write_text(path, value).map(|_| ())
}

/// `write_json`, returning the text written (`study` reads its records
/// back from it).
fn write_text<T: Serialize>(path: &Path, value: &T) -> std::io::Result<String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("json.tmp{}", std::process::id()));
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)? + "\n";
    std::fs::write(&tmp, &text)?;
    // The rename is what makes the record appear whole or not at all.
    std::fs::rename(&tmp, path)?;
    Ok(text)
}

pub fn read_json<T: DeserializeOwned>(path: &Path) -> std::io::Result<T> {
    let text = std::fs::read_to_string(path)?;
    serde_json::from_str(&text).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })
}

/// Paths inside one results directory: its files are named here only.
#[derive(Debug, Clone)]
pub struct ResultsDir {
    pub root: PathBuf,
}

/// A trial's folder of profile files, relative to its results
/// directory (a trial-v1 `profile`'s file paths start with it).
pub fn profile_subdir(id: &str) -> PathBuf {
    Path::new("profiles").join(id)
}

impl ResultsDir {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ResultsDir { root: root.into() }
    }
    pub fn plan(&self) -> PathBuf {
        self.root.join("plan.toml")
    }
    pub fn manifest(&self) -> PathBuf {
        self.root.join("manifest.json")
    }
    pub fn trials_dir(&self) -> PathBuf {
        self.root.join("trials")
    }
    pub fn trial(&self, id: &str) -> PathBuf {
        self.trials_dir().join(format!("{id}.json"))
    }
    pub fn breakpoints_dir(&self) -> PathBuf {
        self.root.join("breakpoints")
    }
    /// A trial run and set aside (a disturbed A/B round run again): kept,
    /// out of every figure.
    pub fn set_aside(&self, id: &str) -> PathBuf {
        self.root.join("set-aside").join(format!("{id}.json"))
    }
    pub fn breakpoint(&self, id: &str) -> PathBuf {
        self.breakpoints_dir().join(format!("{id}.json"))
    }
    pub fn summary_json(&self) -> PathBuf {
        self.root.join("summary.json")
    }
    /// The A/A comparison of `run --aa`.
    pub fn compare_json(&self) -> PathBuf {
        self.root.join("compare.json")
    }
    /// A sweep's analysis (sweep-v1).
    /// The A/B's verdict and rounds (rackbench/ab-v1).
    pub fn ab_json(&self) -> PathBuf {
        self.root.join("ab.json")
    }
    pub fn sweep_json(&self) -> PathBuf {
        self.root.join("sweep.json")
    }
    pub fn report_md(&self) -> PathBuf {
        self.root.join("report.md")
    }
    pub fn report_csv(&self) -> PathBuf {
        self.root.join("report.csv")
    }
    pub fn trials_csv(&self) -> PathBuf {
        self.root.join("trials.csv")
    }
    pub fn report_json(&self) -> PathBuf {
        self.root.join("report.json")
    }
    pub fn report_html(&self) -> PathBuf {
        self.root.join("report.html")
    }
    pub fn work(&self, id: &str) -> PathBuf {
        self.root.join("work").join(id)
    }
    /// The copy of the run's `n`th `--servers-file` (from 1).
    pub fn servers_file(&self, n: usize) -> PathBuf {
        self.root.join(format!("servers-{n}.toml"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_leaves_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!("rackbench-store-{}", std::process::id()));
        let p = dir.join("trials").join("a.json");
        write_json(&p, &serde_json::json!({"x": 1})).unwrap();
        write_json(&p, &serde_json::json!({"x": 2})).unwrap();
        let v: serde_json::Value = read_json(&p).unwrap();
        assert_eq!(v["x"], 2);
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
