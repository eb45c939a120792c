//! The one check of a results directory: [`ResultsDir::open`] holds the
//! "is this a results directory" check (with the error that names the
//! fix); `study` reads what it holds. Older or damaged records never stop
//! a reader: what cannot be read becomes a warning string, collected for
//! the caller to show.
//!
//! Trials are grouped and paired one way: by a key of their planned
//! trial (`pair_key` for compare, the swept value for a sweep, the
//! `group` for the summary), in [`group_by`].

use super::records::{Outcome, PlannedTrial, StoredTrial};
use super::ResultsDir;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a path is not a results directory; each message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum NotResults {
    #[error(
        "{0} is not a directory: give the results directory of `rackbench run` (the --out directory)"
    )]
    NotADirectory(PathBuf),
    #[error(
        "{0} holds no manifest.json and no trials/: not a rackbench results directory; give the results directory of `rackbench run` (the --out directory)"
    )]
    Empty(PathBuf),
}

/// The trial records of a directory, in file-name order, and those that
/// could not be read (id, why).
#[derive(Debug, Default, Clone)]
pub struct Trials {
    pub stored: Vec<StoredTrial>,
    pub unreadable: Vec<(String, String)>,
}

impl Trials {
    /// One warning per unreadable record ("trials/ID.json unreadable: …").
    pub fn warnings(&self) -> Vec<String> {
        self.unreadable
            .iter()
            .map(|(id, e)| format!("trials/{id}.json unreadable: {e}"))
            .collect()
    }

    /// The trials that ended well, with their record.
    pub fn ok(&self) -> impl Iterator<Item = &StoredTrial> {
        self.stored.iter().filter(|t| t.outcome == Outcome::Ok)
    }
}

impl ResultsDir {
    /// The one check: `path` is a directory holding a manifest or a
    /// `trials/` folder (a run writes its manifest first; an older or
    /// copied directory may hold the trials alone).
    pub fn open(path: impl Into<PathBuf>) -> Result<ResultsDir, NotResults> {
        let dir = ResultsDir::new(path);
        if !dir.root.is_dir() {
            return Err(NotResults::NotADirectory(dir.root));
        }
        if !dir.holds_run() && !dir.trials_dir().is_dir() {
            return Err(NotResults::Empty(dir.root));
        }
        Ok(dir)
    }

    /// Whether a run has begun here: its manifest is written before any
    /// trial.
    pub fn holds_run(&self) -> bool {
        self.manifest().exists()
    }
}

/// The `.json` files of `dir` in name order (none when it is absent).
pub(super) fn json_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot list {}: {e}", dir.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    Ok(v)
}

pub(super) fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Trials grouped by `key` of their planned trial (those without one
/// left out), each group in the trials' order.
pub fn group_by<'a>(
    trials: impl IntoIterator<Item = &'a StoredTrial>,
    key: impl Fn(&PlannedTrial) -> Option<String>,
) -> BTreeMap<String, Vec<&'a StoredTrial>> {
    let mut out: BTreeMap<String, Vec<&StoredTrial>> = BTreeMap::new();
    for t in trials {
        if let Some(k) = key(&t.planned) {
            out.entry(k).or_default().push(t);
        }
    }
    out
}

/// The key that pairs A's trials with B's in a comparison, as compare-v1
/// shows it: app, front and load shape ("hello direct connections=4",
/// "hello nginx workers=1 keepalive=64 http=1.1 connections=16"). A key,
/// not the front's label (`Topology::label`): it names every nginx knob,
/// so two runs pair only when all of them match.
pub fn pair_key(p: &PlannedTrial) -> String {
    let topo = p.topology();
    let front = if p.behind == "nginx" {
        format!(
            "{} workers={} keepalive={} http={}",
            p.behind,
            p.nginx_workers,
            p.nginx_keepalive,
            p.nginx_http.as_str()
        )
    } else {
        topo.label()
    };
    // As JSON writes a number, so keys stay those of earlier versions.
    let mut shape = format!("connections={}", p.shape.connections);
    if let Some(r) = p.shape.rate {
        shape.push_str(&format!(" rate={}", serde_json::Value::from(r)));
    }
    format!("{} {front} {shape}", p.app).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(edit: impl FnOnce(&mut serde_json::Value)) -> PlannedTrial {
        let mut v = crate::store::figures::tests::stored(|_| {})["planned"].clone();
        edit(&mut v);
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_pair_key_reads_as_compare_v1_always_wrote_it() {
        type Row = (fn(&mut serde_json::Value), &'static str);
        let rows: Vec<Row> = vec![
            (|_| {}, "hello direct connections=2"),
            (
                |v| {
                    v["behind"] = "nginx".into();
                    v["nginx_workers"] = 2.into();
                    v["nginx_http"] = "1.0".into();
                    v["nginx_keepalive"] = 0.into();
                },
                "hello nginx workers=2 keepalive=0 http=1.0 connections=2",
            ),
            (
                |v| v["shape"] = serde_json::json!({"connections": 2, "rate": 500.0}),
                "hello direct connections=2 rate=500.0",
            ),
        ];
        for (edit, want) in rows {
            assert_eq!(pair_key(&planned(edit)), want);
        }
    }

    #[test]
    fn open_refuses_what_is_not_a_results_directory_and_names_the_fix() {
        let dir = std::env::temp_dir().join(format!("rackbench-open-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let err = ResultsDir::open(&dir).unwrap_err().to_string();
        assert!(err.ends_with("is not a directory: give the results directory of `rackbench run` (the --out directory)"), "{err}");
        std::fs::create_dir_all(&dir).unwrap();
        let err = ResultsDir::open(&dir).unwrap_err().to_string();
        assert!(
            err.contains(
                "holds no manifest.json and no trials/: not a rackbench results directory; give"
            ),
            "{err}"
        );
        std::fs::create_dir_all(dir.join("trials")).unwrap();
        std::fs::write(dir.join("trials/bad.json"), "{").unwrap();
        let study = crate::store::study::Study::open(&dir).unwrap();
        assert!(!study.holds_run());
        let t = study.trials().unwrap();
        assert!(t.stored.is_empty());
        assert_eq!(t.warnings().len(), 1);
        assert!(
            t.warnings()[0].starts_with("trials/bad.json unreadable: "),
            "{:?}",
            t.warnings()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
