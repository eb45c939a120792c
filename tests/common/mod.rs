//! Helpers shared by the integration tests: the binary under test, what a
//! test needs from the machine, work directories, the test server. One
//! copy here instead of one per test file (issue 26); a test file keeps
//! only what is its own.
#![allow(dead_code)]

pub mod plan;
pub mod schema;

#[allow(unused_imports)] // not every test file runs a plan
pub use plan::Plan;

use rackbench::testserver::{TestServer, TestServerConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The rackbench binary Cargo built for these tests.
pub const EXE: &str = env!("CARGO_BIN_EXE_rackbench");

/// A `rackbench` command, to add arguments to.
pub fn rackbench_cmd() -> Command {
    Command::new(EXE)
}

/// `rackbench ARGS`, run to its end.
pub fn rackbench(args: &[&str]) -> Output {
    rackbench_cmd().args(args).output().expect("run rackbench")
}

/// Asserts `out` is a success; otherwise fails with `what` and its
/// stderr.
pub fn assert_ran(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The JSON document `out` printed, after [`assert_ran`]`(out, what)`.
pub fn stdout_json(out: &Output, what: &str) -> Value {
    assert_ran(out, what);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// `rackbench trial ARGS --work-dir WORK --json`: its record, after
/// [`stdout_json`] (`what` names the trial in a failure).
pub fn trial_json(work: &Path, args: &[&str], what: &str) -> Value {
    let out = rackbench_cmd()
        .arg("trial")
        .args(args)
        .arg("--work-dir")
        .arg(work)
        .arg("--json")
        .output()
        .expect("run rackbench");
    stdout_json(&out, &format!("{what}: trial {args:?}"))
}

/// `cmd` is on PATH; under RACKBENCH_REQUIRE a missing one fails the test
/// (`how` says how to install it).
pub fn have(cmd: &str, how: &str) -> bool {
    let there = Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success());
    rackbench::require::require(cmd, there, how)
}

/// mmdebstrap is there and Debian `release`'s root is built (or builds
/// now, `rackbench runtime add`); under RACKBENCH_REQUIRE either missing
/// fails the test, with what `runtime add` said.
pub fn have_debian_runtime(release: &str) -> bool {
    if !have("mmdebstrap", "apt-get install mmdebstrap") {
        return false;
    }
    let built = rackbench(&["runtime", "add", release]);
    rackbench::require::require(
        &format!("the {release} runtime"),
        built.status.success(),
        &format!(
            "`rackbench runtime add {release}` failed: {}",
            String::from_utf8_lossy(&built.stderr)
        ),
    )
}

/// The errors of a load-v1 `errors` object (or an endpoint's), every
/// kind added up.
pub fn error_count(errors: &serde_json::Value) -> u64 {
    errors
        .as_object()
        .expect("an errors object")
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum()
}

/// nginx is there; under RACKBENCH_REQUIRE a missing one fails the test.
pub fn have_nginx() -> bool {
    let there = Command::new("nginx").arg("-v").output().is_ok();
    rackbench::require::require("nginx", there, "apt-get install nginx-light")
}

/// Where the tests look for Chromium (Debian's package).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Chromium is there; under RACKBENCH_REQUIRE a missing one fails the test.
pub fn have_chromium() -> bool {
    rackbench::require::require(
        "chromium",
        Path::new(CHROMIUM).exists(),
        "apt-get install chromium",
    )
}

/// Headless Chromium, quiet (no network of its own, no GPU, logs on
/// stderr where a script error shows as "Uncaught"), with its profile in
/// `profile`: add what to do (`--dump-dom`, `--screenshot=`) and the page.
pub fn headless_chromium(profile: &Path) -> Command {
    let mut c = Command::new(CHROMIUM);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// `rackbench-NAME-PID` in the temp directory, not created: for a path a
/// command makes itself (`--out`, `--work-dir`).
pub fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rackbench-{name}-{}", std::process::id()))
}

/// [`scratch`]`(name)`, emptied of an earlier run's files and created.
pub fn work_dir(name: &str) -> PathBuf {
    let dir = scratch(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The test server (rackbench::testserver) on a free loopback port.
pub fn test_server(cfg: TestServerConfig) -> TestServer {
    TestServer::start(cfg).expect("test server starts")
}

/// The test server with its default knobs: answers at once.
pub fn plain_test_server() -> TestServer {
    test_server(TestServerConfig::default())
}

/// The command line of a lab server that is the test server: `rackbench
/// serve-test --listen {{listen}} ARGS`, for `--command` and plans'
/// `command =`.
pub fn serve_test_command(args: &str) -> String {
    format!("{EXE} serve-test --listen {{{{listen}}}} {args}")
        .trim_end()
        .to_string()
}
