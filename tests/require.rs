//! `RACKBENCH_REQUIRE` turns a skip into a failure: a test whose subject
//! is missing fails under it, naming the subject and how to get it, and
//! skips with one line without it.

use std::process::{Command, Output};

/// A subject no machine has.
const NOWHERE: &str = "a-subject-no-machine-has";

#[test]
#[ignore = "run as a child by a_missing_subject_fails_under_require_and_skips_without"]
fn child_needs_a_missing_subject() {
    if !rackbench::require::require(NOWHERE, false, "nothing installs it") {
        return;
    }
    unreachable!("require returned true for a missing subject");
}

/// This test binary, running only the child test, with `require` set.
/// Output is captured as under `cargo test`: the skip line must get out.
fn child(require: Option<&str>) -> Output {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        "child_needs_a_missing_subject",
        "--ignored",
        "--test-threads=1",
    ]);
    match require {
        Some(v) => c.env(rackbench::require::ENV, v),
        None => c.env_remove(rackbench::require::ENV),
    };
    c.output().unwrap()
}

#[test]
fn a_missing_subject_fails_under_require_and_skips_without() {
    for env in ["all", "chromium,a-subject-no-machine-has"] {
        let out = child(Some(env));
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "RACKBENCH_REQUIRE={env} passed:\n{text}"
        );
        assert!(
            text.contains(&format!(
                "needs {NOWHERE}, which is not available; nothing installs it"
            )),
            "{text}"
        );
    }
    for env in [None, Some(""), Some("chromium")] {
        let out = child(env);
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "RACKBENCH_REQUIRE={env:?} failed:\n{text}"
        );
        let skips: Vec<&str> = text.lines().filter(|l| l.starts_with("SKIP: ")).collect();
        assert_eq!(
            skips,
            [format!("SKIP: child_needs_a_missing_subject: {NOWHERE} not available (nothing installs it)")],
            "{text}"
        );
    }
}

#[test]
fn ci_runs_the_suite_with_require_all() {
    // Without it, CI goes green on a machine missing half of what it tests.
    let ci = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/run")).unwrap();
    let lines: Vec<&str> = ci.lines().map(str::trim).collect();
    let set = lines
        .iter()
        .position(|l| *l == "export RACKBENCH_REQUIRE=all")
        .expect(".ci/run must export RACKBENCH_REQUIRE=all");
    let run = lines
        .iter()
        .position(|l| *l == "make test")
        .expect(".ci/run runs make test");
    assert!(
        set < run,
        "RACKBENCH_REQUIRE=all must be set before make test"
    );
}
