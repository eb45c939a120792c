//! What a test needs from the machine, and what it does when that is
//! missing: a server, nginx, Chromium, io_uring.
//!
//! Locally a test whose subject is missing skips with one line on stderr
//! saying what went untested. CI sets `RACKBENCH_REQUIRE=all` (`.ci/run`),
//! and there the same test fails instead: a suite that passes because it
//! tested nothing is worse than one that fails. The variable may also list
//! subjects (`RACKBENCH_REQUIRE=chromium,io_uring`) to insist on just those.
//!
//! Used only by tests (the integration tests and the unit tests in `src/`);
//! nothing in the tool itself reads `RACKBENCH_REQUIRE`.

/// The variable that turns a skip into a failure.
pub const ENV: &str = "RACKBENCH_REQUIRE";

/// What a test does when its subject is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnMissing {
    Skip,
    Fail,
}

/// The decision for subject `what` under `RACKBENCH_REQUIRE=require`:
/// `all` (or `1`) fails for every subject, a comma-separated list fails for
/// the subjects it names; unset or empty skips.
pub fn on_missing(require: Option<&str>, what: &str) -> OnMissing {
    let Some(list) = require else {
        return OnMissing::Skip;
    };
    let named = list
        .split(',')
        .map(str::trim)
        .any(|w| w == "all" || w == "1" || w.eq_ignore_ascii_case(what));
    if named {
        OnMissing::Fail
    } else {
        OnMissing::Skip
    }
}

/// Whether the test may go on: true when `available`. When not, panics
/// under `RACKBENCH_REQUIRE` naming `what` and `how` to get it; otherwise
/// prints `SKIP: <test>: <what> not available (<how>)` and returns false,
/// and the caller returns.
pub fn require(what: &str, available: bool, how: &str) -> bool {
    if available {
        return true;
    }
    // libtest runs each test on a thread named after it.
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    let env = std::env::var(ENV).ok();
    match on_missing(env.as_deref(), what) {
        OnMissing::Fail => panic!(
            "{ENV}={}: {test} needs {what}, which is not available; {how}",
            env.unwrap_or_default()
        ),
        OnMissing::Skip => {
            // Straight to the stream: libtest captures `eprintln!` of a
            // passing test, and this line is for the person running it.
            use std::io::Write;
            let line = format!("SKIP: {test}: {what} not available ({how})\n");
            let _ = std::io::stderr().write_all(line.as_bytes());
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_subject_fails_when_required_and_skips_otherwise() {
        use OnMissing::{Fail, Skip};
        let cases: &[(Option<&str>, &str, OnMissing)] = &[
            (None, "chromium", Skip),
            (Some(""), "chromium", Skip),
            (Some("all"), "chromium", Fail),
            (Some("all"), "io_uring", Fail),
            (Some("1"), "puma", Fail),
            (Some("chromium,io_uring"), "io_uring", Fail),
            (Some("chromium, io_uring"), "io_uring", Fail),
            (Some("chromium"), "io_uring", Skip),
            (Some("PUMA"), "puma", Fail),
            // A name is matched whole, not as a prefix.
            (Some("pum"), "puma", Skip),
            (Some("none"), "puma", Skip),
        ];
        for &(env, what, want) in cases {
            assert_eq!(on_missing(env, what), want, "{ENV}={env:?}, {what}");
        }
    }

    #[test]
    fn an_available_subject_always_runs() {
        assert!(require("something that is here", true, "nothing to do"));
    }
}
