//! A history's runs from disk: each path a results directory or a
//! directory of them (its sub-directories that are results directories,
//! one level down), each opened once (`store::study::Study`), its date
//! (the manifest's `started_at`, else its earliest trial's), commit (the
//! record's `environment.git_commit`), runtimes, and its groups' samples
//! (`store::samples::side`, as compare reads a side).

use super::Run;
use crate::stats::compare::Side;
use crate::store::runtime::{labels, ran_on};
use crate::store::samples::side;
use crate::store::study::Study;
use std::path::{Path, PathBuf};

/// The results directories `paths` name: each one itself, or the
/// results directories inside it, in name order. An error names a path
/// that is neither.
pub fn find(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if Study::open(p).is_ok() {
            out.push(p.clone());
            continue;
        }
        let mut inside: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| format!("{} is not a results directory ({e})", p.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|d| d.is_dir() && Study::open(d).is_ok())
            .collect();
        if inside.is_empty() {
            return Err(format!(
                "{} is not a results directory and holds none (a results directory has \
                 manifest.json or trials/)",
                p.display()
            ));
        }
        inside.sort();
        out.append(&mut inside);
    }
    out.dedup();
    Ok(out)
}

/// One run read, with the warnings of records that could not be read;
/// an error when it holds no finished trial.
pub fn open(dir: &Path, warnings: &mut Vec<String>) -> Result<Run, String> {
    let study = Study::open(dir).map_err(|e| e.to_string())?;
    let samples = side(
        &Side {
            dir: dir.to_path_buf(),
            selector: None,
        },
        &study,
        warnings,
    )?;
    let records: Vec<_> = study
        .trials()
        .map(|t| t.ok().filter_map(|s| s.trial.as_ref()).collect())
        .unwrap_or_default();
    let started = study
        .manifest()
        .map(|m| m.started_at.clone())
        .or_else(|| records.iter().map(|r| r.started_at.clone()).min())
        .unwrap_or_default();
    let commit = study
        .manifest()
        .and_then(|m| m.environment.git_commit.clone())
        .or_else(|| {
            records
                .iter()
                .find_map(|r| r.environment.git_commit.clone())
        });
    Ok(Run {
        dir: dir.to_path_buf(),
        started,
        commit,
        runtime: labels(&ran_on(records.iter().copied())),
        samples,
    })
}

/// `--since`: a date (2026-11-28) or an RFC 3339 time in UTC, checked.
pub fn check_since(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let date = b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    if date {
        Ok(())
    } else {
        Err(format!(
            "--since {s}: write a date (2026-11-28) or a UTC time (2026-11-28T09:00:00Z)"
        ))
    }
}

/// The runs started at or after `since` (RFC 3339 UTC compares as text),
/// all of them without it; then in date order (directory name between
/// equal dates).
pub fn since(mut runs: Vec<Run>, since: Option<&str>) -> Vec<Run> {
    if let Some(s) = since {
        runs.retain(|r| r.started.as_str() >= s);
    }
    runs.sort_by(|a, b| a.started.cmp(&b.started).then(a.dir.cmp(&b.dir)));
    runs
}
