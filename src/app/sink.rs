//! Where a use case's words go. A use case never prints: it tells a
//! [`Sink`] of each trial and search (the runner's `Progress`), of lines
//! for whoever watches, and of the text that is the command's result. The
//! terminal is one sink, JSON lines another, a collecting one serves
//! tests; so `sweep --json` keeps standard output for its document by
//! choosing a sink, not by moving a file descriptor.

use crate::plan::runner::Progress;
use std::io::Write;
use std::sync::Mutex;

/// What a use case says while it works, and its result.
pub trait Sink: Send + Sync {
    /// A trial or a break-point search began or ended.
    fn progress(&self, p: &Progress);
    /// A line for whoever watches (a warning, the seed, a skip).
    fn note(&self, line: &str);
    /// Text that is the command's result, as written, newlines included.
    fn out(&self, text: &str);
}

/// The terminal: progress and notes on standard error, one line each;
/// the result on standard output, or on standard error too when standard
/// output is kept for one document (`sweep --json`).
pub struct Terminal {
    pub result_on_stderr: bool,
}

impl Terminal {
    /// Progress and notes on stderr, the result on stdout.
    pub fn new() -> Terminal {
        Terminal {
            result_on_stderr: false,
        }
    }
}

impl Default for Terminal {
    fn default() -> Self {
        Terminal::new()
    }
}

impl Sink for Terminal {
    fn progress(&self, p: &Progress) {
        for line in super::run::progress::lines(p) {
            eprintln!("{line}");
        }
    }

    fn note(&self, line: &str) {
        eprintln!("{line}");
    }

    fn out(&self, text: &str) {
        if self.result_on_stderr {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    }
}

/// One JSON object a line: `{"event":"trial","n":1,"total":4,"id":...}`
/// as each trial and search begins and ends, `{"note":...}` for each
/// line, `{"out":...}` for the result; for a program watching a run.
pub struct JsonLines<W: Write + Send> {
    to: Mutex<W>,
}

impl<W: Write + Send> JsonLines<W> {
    pub fn new(to: W) -> JsonLines<W> {
        JsonLines { to: Mutex::new(to) }
    }

    fn line(&self, v: serde_json::Value) {
        let mut to = self.to.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(to, "{v}");
    }

    /// What was written (for a writer that is a buffer).
    pub fn into_inner(self) -> W {
        self.to.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

/// A progress event as one JSON object.
fn event(p: &Progress) -> serde_json::Value {
    use serde_json::json;
    match p {
        Progress::Trial {
            n,
            total,
            trial,
            eta,
        } => json!({"event": "trial", "n": n, "total": total, "id": trial.id,
                    "eta_s": eta.as_secs()}),
        Progress::TrialDone(t) => json!({"event": "trial_done", "id": t.id,
                    "outcome": t.outcome, "error": t.error,
                    "checks_missed": t.checks_missed()}),
        Progress::Breakpoint { n, total, trial } => json!({"event": "breakpoint", "n": n,
                    "total": total, "group": trial.group}),
        Progress::BreakpointDone(b) => json!({"event": "breakpoint_done", "group": b.group,
                    "level": b.result.level}),
        Progress::Rerun {
            trial,
            attempt,
            of,
            why,
        } => json!({"event": "rerun", "id": trial.id, "attempt": attempt, "of": of,
                    "why": why}),
    }
}

impl<W: Write + Send> Sink for JsonLines<W> {
    fn progress(&self, p: &Progress) {
        self.line(event(p));
    }

    fn note(&self, line: &str) {
        self.line(serde_json::json!({ "note": line }));
    }

    fn out(&self, text: &str) {
        self.line(serde_json::json!({ "out": text }));
    }
}

/// Keeps everything it is told, for tests: each progress line as the
/// terminal shows it, each note, and the result's text apart.
#[derive(Default)]
pub struct Collect {
    pub lines: Mutex<Vec<String>>,
    pub out: Mutex<String>,
}

impl Collect {
    /// The lines so far (progress and notes, in order).
    pub fn said(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The result's text so far.
    pub fn result(&self) -> String {
        self.out.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Sink for Collect {
    fn progress(&self, p: &Progress) {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines.extend(super::run::progress::lines(p));
    }

    fn note(&self, line: &str) {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines.push(line.to_string());
    }

    fn out(&self, text: &str) {
        self.out
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_str(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlannedTrial;
    use std::time::Duration;

    fn planned() -> PlannedTrial {
        let stored: crate::store::records::StoredTrial =
            serde_json::from_str(include_str!("../../tests/contracts/run-trial-v1.json")).unwrap();
        stored.planned
    }

    #[test]
    fn each_sink_hears_a_trial_begin() {
        let t = planned();
        let p = Progress::Trial {
            n: 1,
            total: 4,
            trial: &t,
            eta: Duration::ZERO,
        };
        let c = Collect::default();
        c.progress(&p);
        c.note("seed 3");
        c.out("results: x\n");
        let lines = c.said();
        assert!(lines[0].starts_with("[1/4] "), "{lines:?}");
        assert_eq!(lines[1], "seed 3");
        assert_eq!(c.result(), "results: x\n");

        let j = JsonLines::new(Vec::new());
        j.progress(&p);
        j.note("seed 3");
        let text = String::from_utf8(j.into_inner()).unwrap();
        let rows: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows[0]["event"], "trial");
        assert_eq!(rows[0]["id"], t.id.as_str());
        assert_eq!(rows[0]["total"], 4);
        assert_eq!(rows[1]["note"], "seed 3");
    }
}
