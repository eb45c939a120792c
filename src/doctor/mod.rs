//! `rackbench doctor`: checks this machine before a study and says, for
//! each finding, what to do about it (in the spirit of pyperf's `system
//! show`).
//!
//! Each check is a pure function of the text it reads (a sysfs file, a
//! /proc table, a command's output) returning [`Finding`]s, beside a thin
//! reader that fetches that text; the tests give the functions data. A
//! finding is `ok`, a `note` (advice: the study can run, its figures may
//! be noisier or a later feature will want it) or a `problem` (it stands in
//! the way of a study: its figures would be wrong, or it cannot start).
//! Only problems make the command fail.
//!
//! It reads and probes; it never changes a setting of the machine (the
//! fixes are for the user to apply), and the one thing it creates, a test
//! cgroup, it removes before it returns. What killed rackbench processes
//! left it lists, and leaves to the next command that starts servers.

mod cgroups;
mod cpu;
mod finding;
mod kernel;
mod leftovers;
mod software;

pub use finding::{Finding, Status};

use serde::Serialize;
use std::time::Duration;

/// Every check's name, in the order the doctor runs them and prints them.
pub const CHECKS: &[&str] = &[
    "machine",
    "load-average",
    "memory",
    "cpu-governor",
    "cpu-boost",
    "steal",
    "busy-processes",
    "transparent-hugepages",
    "somaxconn",
    "tcp-max-syn-backlog",
    "open-files",
    "io-uring",
    "cgroups",
    "leftovers",
    "perf-counters",
    "ruby",
    "servers",
    "nginx",
];

/// What the doctor found: the `rackbench/doctor-v1` document.
#[derive(Debug, Clone, Serialize)]
pub struct Examination {
    pub schema: &'static str,
    /// True when no finding is a problem.
    pub ok: bool,
    /// How long the steal and busy-process window lasted, in seconds.
    pub window_s: f64,
    pub findings: Vec<Finding>,
}

impl Examination {
    pub fn new(window: Duration, findings: Vec<Finding>) -> Examination {
        Examination {
            schema: "rackbench/doctor-v1",
            ok: findings.iter().all(|f| f.status != Status::Problem),
            window_s: window.as_secs_f64(),
            findings,
        }
    }

    /// How many findings have `status`.
    pub fn count(&self, status: Status) -> usize {
        self.findings.iter().filter(|f| f.status == status).count()
    }

    /// The terminal text: a head line saying what problems and notes
    /// mean, then one line per finding (status word, check, what was
    /// found) with its fix on the next line, indented.
    pub fn render(&self) -> String {
        let (problems, notes) = (self.count(Status::Problem), self.count(Status::Note));
        let mut out = format!(
            "rackbench doctor: {} problem{}, {} note{} \
             (a problem stands in the way of a study; a note is advice)\n\n",
            problems,
            if problems == 1 { "" } else { "s" },
            notes,
            if notes == 1 { "" } else { "s" },
        );
        let width = self
            .findings
            .iter()
            .map(|f| f.check.len())
            .max()
            .unwrap_or(0);
        for f in &self.findings {
            out.push_str(&format!(
                "{:<7}  {:<width$}  {}\n",
                f.status.word(),
                f.check,
                f.found
            ));
            if let Some(fix) = &f.fix {
                out.push_str(&format!("{:<7}  {:<width$}  fix: {fix}\n", "", ""));
            }
        }
        out
    }
}

/// Runs every check, the steal and busy-process window of `window` first
/// (before the doctor starts commands of its own).
pub fn examine(window: Duration) -> Examination {
    let mut findings = cpu::watch(window);
    let env = crate::lab::environment::Environment::capture(Vec::new());
    findings.extend(cpu::machine_findings(&env));
    findings.extend(cpu::frequency_findings());
    findings.extend(kernel::findings());
    findings.push(cgroups::finding());
    findings.push(leftovers::finding());
    findings.push(kernel::perf_finding());
    findings.extend(software::findings(env.ruby_version.as_deref()));
    findings.sort_by_key(|f| CHECKS.iter().position(|c| *c == f.check));
    Examination::new(window, findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_problem_makes_the_examination_fail() {
        let notes = Examination::new(
            Duration::from_secs(1),
            vec![
                Finding::ok("ruby", "ruby 3.1"),
                Finding::note("nginx", "x", "y"),
            ],
        );
        assert!(notes.ok);
        let bad = Examination::new(
            Duration::from_secs(1),
            vec![Finding::problem("ruby", "no ruby", "apt-get install ruby")],
        );
        assert!(!bad.ok);
    }

    #[test]
    fn the_text_puts_the_status_first_and_the_fix_on_its_own_indented_line() {
        let e = Examination::new(
            Duration::from_secs(1),
            vec![
                Finding::ok("ruby", "ruby 3.1"),
                Finding::problem("somaxconn", "128", "sysctl -w net.core.somaxconn=4096"),
            ],
        );
        let text = e.render();
        assert!(
            text.starts_with("rackbench doctor: 1 problem, 0 notes"),
            "{text}"
        );
        assert!(text.contains("\nok       ruby       ruby 3.1\n"), "{text}");
        assert!(text.contains("\nproblem  somaxconn  128\n"), "{text}");
        assert!(
            text.contains("\n                    fix: sysctl -w net.core.somaxconn=4096\n"),
            "{text}"
        );
    }

    #[test]
    fn the_json_names_its_schema_and_writes_a_null_fix_when_nothing_is_to_do() {
        let e = Examination::new(Duration::from_secs(2), vec![Finding::ok("ruby", "3.1")]);
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["schema"], "rackbench/doctor-v1");
        assert_eq!(v["findings"][0]["status"], "ok");
        assert!(v["findings"][0]["fix"].is_null());
        assert_eq!(v["window_s"], 2.0);
    }
}
