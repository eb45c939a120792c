//! A results directory read once: [`Study::open`] makes the one check
//! (`ResultsDir::open`) and reads the manifest, the plan's text, every
//! trial and break-point record and the A/A comparison; every reader
//! (reports, compare, a sweep's analysis, the runner's summary, resume's
//! checks, with the copies of the run's servers files) takes the
//! `&Study`, not the directory.
//!
//! What cannot be read never stops the opening: an unreadable record is a
//! warning, a folder that cannot be listed or a plan that cannot be read
//! is kept as its error for the reader that needs it to say in its own
//! words.
//!
//! A run that is still writing keeps its study in step: the runner
//! writes each record through [`Study::write_trial`] and
//! [`Study::write_breakpoint`], which keep the record as a reader of the
//! file would read it (the written text parsed back), so the summary and
//! the reports at the end of a run read no file again.

use super::read::{json_files, stem, Trials};
use super::records::{Manifest, StoredBreakpoint, StoredTrial};
use super::summary::{summarize_trials, GroupSummary};
use super::{write_text, ResultsDir};
use crate::stats::compare::Comparison;
use serde::de::DeserializeOwned;
use std::io::{Error, ErrorKind};
use std::path::{Path, PathBuf};

/// An error kept for the reader that meets it (`io::Error` is not Clone).
#[derive(Debug, Clone)]
struct Kept(ErrorKind, String);

impl Kept {
    fn of(e: &Error) -> Kept {
        Kept(e.kind(), e.to_string())
    }
    fn error(&self) -> Error {
        Error::new(self.0, self.1.clone())
    }
}

/// Everything a results directory holds, read once.
#[derive(Debug)]
pub struct Study {
    dir: ResultsDir,
    /// Whether `manifest.json` was there (readable or not).
    holds_run: bool,
    manifest: Option<Manifest>,
    /// Why there is no manifest (missing, unreadable).
    manifest_warning: Option<String>,
    seed: Option<u64>,
    plan_text: Result<String, Kept>,
    trials: Result<Trials, Kept>,
    breakpoints: Result<Vec<StoredBreakpoint>, Kept>,
    breakpoint_warnings: Vec<String>,
    comparison: Option<Comparison>,
    /// The copies of the run's `--servers-file`s, in order.
    servers_files: Vec<String>,
}

impl Study {
    /// The one check (`ResultsDir::open`: a directory holding a manifest
    /// or `trials/`), then everything read once.
    pub fn open(path: impl Into<PathBuf>) -> Result<Study, super::read::NotResults> {
        Ok(Study::read(ResultsDir::open(path)?))
    }

    /// Whatever `dir` holds, without the check: the runner's study of the
    /// directory it is about to write (nothing there yet, or the records
    /// a resume keeps).
    pub fn read(dir: ResultsDir) -> Study {
        let (manifest, manifest_warning, seed) = read_manifest(&dir);
        let plan_text = std::fs::read_to_string(dir.plan()).map_err(|e| Kept::of(&e));
        let trials = read_trials(&dir.trials_dir()).map_err(|e| Kept::of(&e));
        let mut breakpoint_warnings = Vec::new();
        let breakpoints = read_breakpoints(&dir.breakpoints_dir(), &mut breakpoint_warnings)
            .map_err(|e| Kept::of(&e));
        let comparison = super::read_json(&dir.compare_json()).ok();
        let servers_files = (1..)
            .map_while(|n| std::fs::read_to_string(dir.servers_file(n)).ok())
            .collect();
        Study {
            holds_run: dir.holds_run(),
            dir,
            manifest,
            manifest_warning,
            seed,
            plan_text,
            trials,
            breakpoints,
            breakpoint_warnings,
            comparison,
            servers_files,
        }
    }

    pub fn dir(&self) -> &ResultsDir {
        &self.dir
    }

    /// The directory as it was given.
    pub fn root(&self) -> &Path {
        &self.dir.root
    }

    /// A file a trial's `profile` names (`files[].path`, relative to the
    /// directory), as text; a path that would leave the directory is
    /// refused.
    pub fn profile_file(&self, path: &str) -> std::io::Result<String> {
        let rel = Path::new(path);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| c == std::path::Component::ParentDir)
        {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{path}: not inside the results directory"),
            ));
        }
        std::fs::read_to_string(self.dir.root.join(rel))
    }

    /// Whether a run has begun here: it writes its manifest before any
    /// trial.
    pub fn holds_run(&self) -> bool {
        self.holds_run
    }

    /// The manifest; None when it is missing or unreadable
    /// ([`Study::manifest_warning`] says which).
    pub fn manifest(&self) -> Option<&Manifest> {
        self.manifest.as_ref()
    }

    /// "manifest.json is missing: …" or "manifest.json unreadable: …";
    /// None with a manifest.
    pub fn manifest_warning(&self) -> Option<&str> {
        self.manifest_warning.as_deref()
    }

    /// The seed the run shuffled its rounds with (the manifest's); None
    /// without a manifest or in runs made before the shuffle. Only the
    /// seed is read for it, so a manifest of an older layout still gives
    /// it.
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    /// The plan as the run was given it (`plan.toml`), or why it cannot
    /// be read.
    pub fn plan_text(&self) -> std::io::Result<&str> {
        self.plan_text.as_deref().map_err(Kept::error)
    }

    /// The plan's `primary_metric`, read on its own (an untyped table) so
    /// a plan of an older version still gives it; None without one or
    /// without a readable plan.
    pub fn primary_metric(&self) -> Option<String> {
        let table: toml::Table = self.plan_text.as_ref().ok()?.parse().ok()?;
        table.get("primary_metric")?.as_str().map(str::to_string)
    }

    /// Every trial record, in file-name order, and those that could not be
    /// read; an error when `trials/` could not be listed.
    pub fn trials(&self) -> std::io::Result<&Trials> {
        self.trials.as_ref().map_err(Kept::error)
    }

    /// The summary of the trials (summary-v1's groups; unreadable
    /// records left out: the report lists them).
    pub fn summary(&self) -> std::io::Result<Vec<GroupSummary>> {
        Ok(summarize_trials(&self.trials()?.stored))
    }

    /// A trial's record by its id.
    pub fn trial(&self, id: &str) -> Option<&StoredTrial> {
        self.trials
            .as_ref()
            .ok()?
            .stored
            .iter()
            .find(|t| t.id == id)
    }

    /// Every break-point record, in file-name order; an error when
    /// `breakpoints/` could not be listed.
    pub fn breakpoints(&self) -> std::io::Result<&[StoredBreakpoint]> {
        self.breakpoints.as_deref().map_err(Kept::error)
    }

    /// One warning per unreadable break-point record.
    pub fn breakpoint_warnings(&self) -> &[String] {
        &self.breakpoint_warnings
    }

    /// The A/A comparison `rackbench run --aa` kept (`compare.json`);
    /// None when there is none or it cannot be read.
    pub fn comparison(&self) -> Option<&Comparison> {
        self.comparison.as_ref()
    }

    /// The run's copy of its `n`th `--servers-file` (from 1); None past
    /// the last.
    pub fn servers_file(&self, n: usize) -> Option<&str> {
        self.servers_files
            .get(n.checked_sub(1)?)
            .map(String::as_str)
    }

    /// Reads `compare.json` again, after `rackbench run --aa` wrote it.
    pub fn reread_comparison(&mut self) {
        self.comparison = super::read_json(&self.dir.compare_json()).ok();
    }
}

/// Writing, for the runner: each file written atomically and its record
/// kept as read back from the written text.
impl Study {
    /// Writes `plan.toml`.
    pub fn write_plan(&mut self, text: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir.root)?;
        std::fs::write(self.dir.plan(), text)?;
        self.plan_text = Ok(text.to_string());
        Ok(())
    }

    /// Writes `manifest.json`.
    pub fn write_manifest(&mut self, m: &Manifest) -> std::io::Result<()> {
        let text = write_text(&self.dir.manifest(), m)?;
        self.manifest = Some(parse_back(&text)?);
        self.holds_run = true;
        self.seed = m.seed;
        self.manifest_warning = None;
        Ok(())
    }

    /// Writes `trials/ID.json`, in place of any record of that id.
    pub fn write_trial(&mut self, t: &StoredTrial) -> std::io::Result<()> {
        let path = self.dir.trial(&t.id);
        let text = write_text(&path, t)?;
        let kept: StoredTrial = parse_back(&text)?;
        let trials = listed(&mut self.trials);
        trials.unreadable.retain(|(id, _)| *id != t.id);
        trials.stored.retain(|s| s.id != t.id);
        let name = file_name(&path);
        // File-name order, as a reader of the folder lists it.
        let at = trials
            .stored
            .iter()
            .position(|s| file_name(&self.dir.trial(&s.id)) > name)
            .unwrap_or(trials.stored.len());
        trials.stored.insert(at, kept);
        Ok(())
    }

    /// Moves `trials/ID.json` to `set-aside/ID.json` (a disturbed A/B
    /// round run again): kept on disk, out of the trials every reader
    /// counts.
    pub fn set_aside(&mut self, id: &str) -> std::io::Result<()> {
        self.set_aside_as(id, id)
    }

    /// [`Study::set_aside`] under another name (`set-aside/NAME.json`: a
    /// repeat's attempt, `ID.1`).
    pub fn set_aside_as(&mut self, id: &str, name: &str) -> std::io::Result<()> {
        let to = self.dir.set_aside(name);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::rename(self.dir.trial(id), to)?;
        let trials = listed(&mut self.trials);
        trials.stored.retain(|s| s.id != id);
        Ok(())
    }

    /// Writes `breakpoints/GROUP.json`, in place of any record of that
    /// group.
    pub fn write_breakpoint(&mut self, b: &StoredBreakpoint) -> std::io::Result<()> {
        let path = self.dir.breakpoint(&b.group);
        let text = write_text(&path, b)?;
        let kept: StoredBreakpoint = parse_back(&text)?;
        let all = listed(&mut self.breakpoints);
        all.retain(|s| s.group != b.group);
        let name = file_name(&path);
        let at = all
            .iter()
            .position(|s| file_name(&self.dir.breakpoint(&s.group)) > name)
            .unwrap_or(all.len());
        all.insert(at, kept);
        Ok(())
    }

    /// The text of `ab.json` (rackbench/ab-v1), None when the directory
    /// holds no A/B; `report` reads it into the A/B's own type.
    pub fn ab_text(&self) -> Option<std::io::Result<String>> {
        let path = self.dir.ab_json();
        path.is_file().then(|| std::fs::read_to_string(path))
    }

    /// Writes `ab.json` (rackbench/ab-v1: the A/B's verdict and rounds).
    pub fn write_ab(&self, doc: &impl serde::Serialize) -> std::io::Result<()> {
        write_text(&self.dir.ab_json(), doc).map(|_| ())
    }

    /// Writes `summary.json` (summary-v1) of the groups given.
    pub fn write_summary(&self, groups: &[GroupSummary]) -> std::io::Result<()> {
        let doc = serde_json::json!({ "schema": super::records::SUMMARY_SCHEMA, "groups": groups });
        write_text(&self.dir.summary_json(), &doc).map(|_| ())
    }
}

/// The records of a folder, to add to: a folder that could not be
/// listed stays an error for readers until the runner writes into it,
/// then it holds what was written.
fn listed<T: Default>(records: &mut Result<T, Kept>) -> &mut T {
    if records.is_err() {
        *records = Ok(T::default());
    }
    records.as_mut().expect("set above")
}

fn file_name(path: &Path) -> std::ffi::OsString {
    path.file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default()
}

fn parse_back<T: DeserializeOwned>(text: &str) -> std::io::Result<T> {
    serde_json::from_str(text).map_err(|e| Error::new(ErrorKind::InvalidData, e))
}

/// The manifest, why there is none, and the run's seed (read on its own,
/// so a manifest of an older layout still gives it).
fn read_manifest(dir: &ResultsDir) -> (Option<Manifest>, Option<String>, Option<u64>) {
    if !dir.holds_run() {
        let why =
            "manifest.json is missing: only the trials on disk are shown, not what was planned";
        return (None, Some(why.into()), None);
    }
    let path = dir.manifest();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return (None, Some(format!("manifest.json unreadable: {e}")), None),
    };
    #[derive(serde::Deserialize)]
    struct Seed {
        #[serde(default)]
        seed: Option<u64>,
    }
    let seed = serde_json::from_str::<Seed>(&text)
        .ok()
        .and_then(|s| s.seed);
    match serde_json::from_str::<Manifest>(&text) {
        Ok(m) => (Some(m), None, seed),
        Err(e) => (
            None,
            Some(format!("manifest.json unreadable: {}: {e}", path.display())),
            seed,
        ),
    }
}

/// Every trial record of `dir`; an unreadable one is set aside with why.
fn read_trials(dir: &Path) -> std::io::Result<Trials> {
    let mut out = Trials::default();
    for path in json_files(dir)? {
        match super::read_json::<StoredTrial>(&path) {
            Ok(t) => out.stored.push(t),
            Err(e) => out.unreadable.push((stem(&path), e.to_string())),
        }
    }
    Ok(out)
}

/// Every break-point record of `dir`, each unreadable one a warning.
fn read_breakpoints(
    dir: &Path,
    warnings: &mut Vec<String>,
) -> std::io::Result<Vec<StoredBreakpoint>> {
    let mut out = Vec::new();
    for path in json_files(dir)? {
        match super::read_json::<StoredBreakpoint>(&path) {
            Ok(b) => out.push(b),
            Err(e) => warnings.push(format!("breakpoints/{}.json unreadable: {e}", stem(&path))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("rackbench-study-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                copy_dir(&p, &to.join(e.file_name()));
            } else {
                std::fs::copy(&p, to.join(e.file_name())).unwrap();
            }
        }
    }

    /// A committed run read once: everything it holds is in the study,
    /// and nothing is read again (the directory is gone before it is
    /// asked).
    #[test]
    fn a_results_directory_is_read_once_whole() {
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/runs/2026-11-26-aa-spread/run1");
        let dir = temp("once");
        copy_dir(&fixture, &dir);
        let files = std::fs::read_dir(dir.join("trials")).unwrap().count();
        let study = Study::open(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(study.holds_run());
        let m = study.manifest().expect("a manifest");
        assert_eq!(study.manifest_warning(), None);
        assert_eq!(study.seed(), m.seed);
        let trials = study.trials().unwrap();
        assert_eq!(trials.stored.len(), files);
        assert!(trials.unreadable.is_empty());
        // Every planned trial has its record, found by id.
        for p in &m.trials {
            assert_eq!(study.trial(&p.id).map(|t| &t.group), Some(&p.group));
        }
        let ids: Vec<&str> = trials.stored.iter().map(|t| t.id.as_str()).collect();
        let mut sorted = ids.clone();
        sorted.sort_by_key(|id| format!("{id}.json"));
        assert_eq!(ids, sorted, "file-name order");
        let plan = std::fs::read_to_string(fixture.join("plan.toml")).unwrap();
        assert_eq!(study.plan_text().unwrap(), plan);
        assert!(study.breakpoints().unwrap().is_empty());
        assert!(study.comparison().is_none());
    }

    #[test]
    fn what_is_not_a_results_directory_is_refused_with_the_fix() {
        let dir = temp("refused");
        let err = Study::open(&dir).unwrap_err().to_string();
        assert!(err.ends_with("is not a directory: give the results directory of `rackbench run` (the --out directory)"), "{err}");
        std::fs::create_dir_all(dir.join("work")).unwrap();
        std::fs::write(dir.join("plan.toml"), "name = \"x\"\n").unwrap();
        let err = Study::open(&dir).unwrap_err().to_string();
        assert!(
            err.contains("holds no manifest.json and no trials/: not a rackbench results directory; give the results directory of `rackbench run` (the --out directory)"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A corrupt record, a corrupt manifest and a corrupt search are
    /// warnings, each naming its file; the readable record is kept, and
    /// the copies of the servers files are read in order.
    #[test]
    fn corrupt_records_are_warnings_naming_their_file() {
        let dir = temp("corrupt");
        let rd = ResultsDir::new(&dir);
        let good: StoredTrial =
            serde_json::from_value(crate::store::figures::tests::stored(|_| {})).unwrap();
        crate::store::write_json(&rd.trial(&good.id), &good).unwrap();
        std::fs::write(rd.trial("bad"), "{").unwrap();
        std::fs::write(rd.manifest(), "{\"seed\": 7}").unwrap();
        std::fs::create_dir_all(rd.breakpoints_dir()).unwrap();
        std::fs::write(rd.breakpoint("g"), "[]").unwrap();
        std::fs::write(rd.servers_file(1), "one").unwrap();
        std::fs::write(rd.servers_file(2), "two").unwrap();
        let study = Study::open(&dir).unwrap();
        let copies: Vec<_> = (0..4).map(|n| study.servers_file(n)).collect();
        assert_eq!(copies, [None, Some("one"), Some("two"), None]);
        let t = study.trials().unwrap();
        assert_eq!(t.stored.len(), 1);
        assert_eq!(t.warnings().len(), 1);
        assert!(
            t.warnings()[0].starts_with("trials/bad.json unreadable: "),
            "{:?}",
            t.warnings()
        );
        assert!(study.manifest().is_none());
        let w = study.manifest_warning().unwrap();
        assert!(
            w.starts_with("manifest.json unreadable: ")
                && w.contains("manifest.json: missing field"),
            "{w}"
        );
        // The seed is read on its own, so an older manifest still gives it.
        assert_eq!(study.seed(), Some(7));
        assert!(study.breakpoints().unwrap().is_empty());
        assert_eq!(study.breakpoint_warnings().len(), 1);
        assert!(study.breakpoint_warnings()[0].starts_with("breakpoints/g.json unreadable: "));
        assert_eq!(study.primary_metric(), None);
        assert_eq!(study.plan_text().unwrap_err().kind(), ErrorKind::NotFound);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// What the runner writes through the study is what a reader of the
    /// directory reads: the same records in the same order, a rewritten
    /// record in place of the old, an unreadable one replaced.
    #[test]
    fn records_written_through_the_study_are_those_a_reader_reads() {
        let dir = temp("written");
        let rd = ResultsDir::new(&dir);
        std::fs::create_dir_all(rd.trials_dir()).unwrap();
        std::fs::write(rd.trial("a"), "{").unwrap();
        let mut study = Study::read(rd.clone());
        assert_eq!(study.trials().unwrap().unreadable.len(), 1);
        study
            .write_plan("name = \"p\"\nprimary_metric = \"p99\"\n")
            .unwrap();
        assert_eq!(study.primary_metric().as_deref(), Some("p99"));
        let record = |id: &str, rps: f64| -> StoredTrial {
            serde_json::from_value(crate::store::figures::tests::stored(|v| {
                v["id"] = id.into();
                v["trial"]["load"]["throughput_rps"] = rps.into();
            }))
            .unwrap()
        };
        for (id, rps) in [("b", 1.0), ("a-b", 2.0), ("a", 3.0), ("b", 4.0)] {
            study.write_trial(&record(id, rps)).unwrap();
        }
        let again = Study::read(rd);
        let seen = |s: &Study| -> Vec<String> {
            s.trials()
                .unwrap()
                .stored
                .iter()
                .map(|t| serde_json::to_string(t).unwrap())
                .collect()
        };
        assert_eq!(seen(&study), seen(&again));
        assert_eq!(study.trials().unwrap().stored.len(), 3);
        assert!(study.trials().unwrap().unreadable.is_empty());
        let b = study.trial("b").unwrap().trial.as_ref().unwrap();
        assert_eq!(b.load.throughput_rps, 4.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
