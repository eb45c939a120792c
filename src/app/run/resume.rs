//! `rackbench run --resume`: whether a directory holds a run to resume
//! (and which one nearby was probably meant), and whether the plan and
//! servers files are still the ones the run began with.
//!
//! It only reads: it never writes into the results, never runs a trial.

use super::Prepared;
use crate::app::usage::usage;
use crate::store::study::Study;
use crate::store::ResultsDir;
use anyhow::Result;
use std::path::{Path, PathBuf};

/// Refuses `--resume` into a directory that holds no run (issue 36: one
/// that did not exist silently began a new run), naming it and the fix:
/// drop `--resume`, or the run directory nearby it probably meant.
fn resumable(out: &Path) -> std::result::Result<(), String> {
    if ResultsDir::new(out).holds_run() {
        return Ok(());
    }
    let what = if out.exists() {
        format!("{} holds no run (no manifest.json)", out.display())
    } else {
        format!("{} does not exist", out.display())
    };
    let fix = match nearby_run(out) {
        Some(near) => format!(
            "did you mean --out {}? Or drop --resume to start a new run in {}",
            near.display(),
            out.display()
        ),
        None => format!("drop --resume to start a new run in {}", out.display()),
    };
    Err(format!("cannot resume: {what}; {fix}"))
}

/// The run directory whose name is nearest `out`'s, among its siblings
/// and under `results/` (where runs go by default), if one is near
/// enough to be a slip of the keyboard or a path given without its
/// folder.
fn nearby_run(out: &Path) -> Option<PathBuf> {
    let name = out.file_name()?.to_string_lossy().to_string();
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    let mut folders = vec![parent.map_or(PathBuf::from("."), PathBuf::from)];
    if !out.starts_with("results") && out.is_relative() {
        folders.push(parent.map_or(PathBuf::from("results"), |p| Path::new("results").join(p)));
    }
    let near_enough = (name.chars().count() / 3).max(2);
    folders
        .iter()
        .filter_map(|f| std::fs::read_dir(f).ok())
        .flat_map(|d| d.flatten())
        .map(|e| e.path())
        .filter(|p| p != out && ResultsDir::new(p).holds_run())
        .filter_map(|p| {
            let d = edit_distance(&name, &p.file_name()?.to_string_lossy());
            (d <= near_enough).then_some((d, p))
        })
        .min()
        .map(|(_, p)| p.strip_prefix("./").map(PathBuf::from).unwrap_or(p))
}

/// Levenshtein's distance between two names, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// `--resume` of a prepared run: refused when its directory holds no run,
/// or when the plan or a servers file changed since it began (its records
/// would mix two experiments), naming the first difference. With `force`
/// (`--force-resume`) a change goes through, and the warning is returned.
pub fn check(prepared: &Prepared, force: bool) -> Result<Option<String>> {
    resumable(&prepared.out).map_err(usage)?;
    let study = Study::read(ResultsDir::new(&prepared.out));
    check_resume(
        &study,
        &prepared.source.text,
        &prepared.req.servers_files,
        force,
    )
}

fn check_resume(
    study: &Study,
    plan_text: &str,
    servers_files: &[PathBuf],
    force: bool,
) -> Result<Option<String>> {
    let results = study.dir();
    let mut differences = Vec::new();
    if let Ok(old) = study.plan_text() {
        if let Some(d) = first_difference(old, plan_text) {
            differences.push(format!(
                "the plan differs from {}: {d}",
                results.plan().display()
            ));
        }
    }
    let mut n = 1;
    loop {
        let copy = results.servers_file(n);
        let old = study.servers_file(n);
        let new = servers_files.get(n - 1);
        match (old, new) {
            (None, None) => break,
            (Some(_), None) => differences.push(format!(
                "the run used a servers file (copied to {}), this resume gives none: add --servers-file",
                copy.display()
            )),
            (None, Some(f)) => differences.push(format!(
                "--servers-file {} is new: the run began without it",
                f.display()
            )),
            (Some(old), Some(f)) => {
                let new = std::fs::read_to_string(f).map_err(|e| {
                    usage(format!("cannot read --servers-file {}: {e}", f.display()))
                })?;
                if let Some(d) = first_difference(old, &new) {
                    differences.push(format!(
                        "--servers-file {} differs from the run's copy {}: {d}",
                        f.display(),
                        copy.display()
                    ));
                }
            }
        }
        n += 1;
    }
    match differences.first() {
        None => Ok(None),
        Some(d) if force => Ok(Some(format!("resuming anyway (--force-resume): {d}"))),
        Some(d) => Err(usage(format!(
            "cannot resume {}: {d}; resume with what the run began with, or add --force-resume",
            results.root.display()
        ))),
    }
}

/// "line 7 was `a`, now `b`", or None when the texts agree line by line.
fn first_difference(old: &str, new: &str) -> Option<String> {
    let (mut a, mut b) = (old.lines(), new.lines());
    for line in 1.. {
        match (a.next(), b.next()) {
            (None, None) => return None,
            (x, y) if x.map(str::trim_end) == y.map(str::trim_end) => continue,
            (x, y) => {
                let show =
                    |l: Option<&str>| l.map_or("(nothing)".into(), |l| format!("`{}`", l.trim()));
                return Some(format!("line {line} was {}, now {}", show(x), show(y)));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{first_difference, resumable};

    #[test]
    fn issue_36_resume_into_a_directory_that_holds_no_run_is_refused_with_the_fix() {
        let root = std::env::temp_dir().join(format!("rb-resume-{}", std::process::id()));
        let run = root.join("hello-20261128-101500");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(crate::store::ResultsDir::new(&run).manifest(), "{}").unwrap();
        std::fs::create_dir_all(root.join("empty")).unwrap();
        let at = |name: &str| root.join(name);
        let cases: &[(&str, Option<&str>)] = &[
            ("hello-20261128-101500", None),
            (
                "hello-20261128-101550",
                Some("does not exist; did you mean --out ROOT/hello-20261128-101500? Or drop --resume to start a new run in ROOT/hello-20261128-101550"),
            ),
            (
                "elsewhere",
                Some("cannot resume: ROOT/elsewhere does not exist; drop --resume to start a new run in ROOT/elsewhere"),
            ),
            (
                "empty",
                Some("cannot resume: ROOT/empty holds no run (no manifest.json); drop --resume"),
            ),
        ];
        for &(name, want) in cases {
            let got = resumable(&at(name)).err();
            let want = want.map(|w| w.replace("ROOT", &root.display().to_string()));
            match (got, want) {
                (None, None) => {}
                (Some(got), Some(want)) => {
                    assert!(got.contains(&want), "{name}: want {want:?} in {got:?}")
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_first_differing_line_is_named() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("a\nb\n", "a\nb\n", None),
            ("a\nb  \n", "a\nb", None),
            ("a\nb\n", "a\nc\n", Some("line 2 was `b`, now `c`")),
            ("a\n", "a\nb\n", Some("line 2 was (nothing), now `b`")),
            ("a\nb\n", "a\n", Some("line 2 was `b`, now (nothing)")),
        ];
        for (old, new, want) in cases {
            assert_eq!(
                first_difference(old, new).as_deref(),
                *want,
                "{old:?} {new:?}"
            );
        }
    }
}
