//! A plan written into a work directory, run with `rackbench run PLAN
//! --out DIR`, its documents read back from DIR: the steps every test of
//! the runner takes, one copy. It never judges the results: the test does.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A plan file in a fresh work directory and where its run writes.
pub struct Plan {
    /// The work directory ([`super::work_dir`]): the plan, files beside
    /// it (a mix, a record), the results.
    pub dir: PathBuf,
    /// The plan file, `dir/file_name`.
    pub file: PathBuf,
    /// The results directory given to `--out`: `dir/results`, not created.
    pub out: PathBuf,
}

impl Plan {
    /// `text` written as `file_name` in a fresh [`super::work_dir`]`(name)`.
    pub fn write(name: &str, file_name: &str, text: &str) -> Plan {
        let dir = super::work_dir(name);
        let file = dir.join(file_name);
        std::fs::write(&file, text).unwrap();
        let out = dir.join("results");
        Plan { dir, file, out }
    }

    /// `rackbench run PLAN --out DIR`, to add arguments to or to spawn.
    pub fn command(&self) -> Command {
        let mut c = super::rackbench_cmd();
        c.arg("run").arg(&self.file).arg("--out").arg(&self.out);
        c
    }

    /// `rackbench run PLAN --out DIR EXTRA`, run to its end.
    pub fn run(&self, extra: &[&str]) -> Output {
        self.command().args(extra).output().expect("run rackbench")
    }

    /// [`Plan::run`], asserted to succeed (its stderr the message).
    pub fn run_ok(&self, extra: &[&str]) -> Output {
        let out = self.run(extra);
        super::assert_ran(&out, "rackbench run");
        out
    }

    /// The JSON documents the run wrote in `sub` of the results directory
    /// (`trials`, `breakpoints`), by file name.
    pub fn docs(&self, sub: &str) -> Vec<(PathBuf, Value)> {
        json_docs(&self.out.join(sub))
    }

    /// The one document in `sub` of the results directory; more or none
    /// fails the test.
    pub fn only_doc(&self, sub: &str) -> Value {
        let mut docs = self.docs(sub);
        let paths: Vec<_> = docs.iter().map(|(p, _)| p).collect();
        assert_eq!(docs.len(), 1, "{paths:?}");
        docs.remove(0).1
    }
}

/// Every file of `dir` and its JSON document, by file name (a file that
/// is not JSON fails the test).
pub fn json_docs(dir: &Path) -> Vec<(PathBuf, Value)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read(&p).unwrap();
            let doc = serde_json::from_slice(&text)
                .unwrap_or_else(|e| panic!("{}: not JSON ({e})", p.display()));
            (p, doc)
        })
        .collect()
}
