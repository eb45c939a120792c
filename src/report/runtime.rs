//! Which Ruby, which switches, in every report (issue 27): the runtimes a
//! study's records ran on (`store::runtime`), listed once each in the
//! environment; when there is more than one, every row is labelled with
//! its own (a "Runtime" column), and when there is one, no column is
//! added. A record whose server ran otherwise than asked (a mismatch) is
//! a note beside its row, never silent.
//!
//! It never reads a record's JSON: the store's reader hands it typed
//! records, and `store::runtime` the labels.

use super::table::{Align, Cell, Column, Kind, Row, Table, Value};
use super::{Group, Report, TrialRow};
use crate::lab::trial::TrialRecord;
use crate::store::runtime::{labels, notes, ran_on, study_runtimes, RanOn, StudyRuntime};
use std::fmt::Write;

impl Report {
    /// The runtimes the study's records ran on, each once.
    pub fn runtimes(&self) -> Vec<StudyRuntime> {
        study_runtimes(self.trials.iter().filter_map(|t| t.record.as_ref()))
    }

    /// Whether rows must say which runtime they ran on: the records ran
    /// on more than one runtime or switch combination.
    pub fn runtime_varies(&self) -> bool {
        ran_on(self.trials.iter().filter_map(|t| t.record.as_ref())).len() > 1
    }
}

impl Group {
    /// The label of the runtime its runs ran on ("debian-13 ruby 3.3.8
    /// +yjit"), several joined by " / " when its runs disagree; "unknown"
    /// when no record says.
    pub fn runtime_label(&self) -> String {
        labels(&self.runtimes).unwrap_or_else(|| "unknown".into())
    }
}

/// A trial's runtime label; None for a record made before runtimes, or
/// no record.
pub(super) fn trial_label(t: &TrialRow) -> Option<String> {
    t.record.as_ref().and_then(RanOn::of).map(|r| r.label())
}

/// A record's notes: its load's caveats, then its runtime's mismatches
/// (`store::runtime::notes`), then its kill for memory (`report::budget`),
/// then its server's faults (`lab::faults`).
pub(super) fn record_notes(r: &TrialRecord) -> Vec<String> {
    let mut v = crate::load::caveats::Caveats::of(&r.load).notes();
    v.extend(notes([r]));
    v.extend(super::budget::of_record(r).and_then(|b| b.kill_note()));
    v.extend(r.faults.note());
    v
}

/// "YJIT on", "YJIT off" or "YJIT unknown".
fn yjit_words(y: Option<bool>) -> &'static str {
    match y {
        Some(true) => "YJIT on",
        Some(false) => "YJIT off",
        None => "YJIT unknown",
    }
}

/// One line per runtime for the Markdown header; nothing when no record
/// says (older records).
pub(super) fn markdown(s: &mut String, runtimes: &[StudyRuntime]) {
    for r in runtimes {
        let _ = writeln!(
            s,
            "- Runtime `{}`: {}, {}, {}, {}{}",
            r.label,
            r.ruby_description.as_deref().unwrap_or("Ruby unknown"),
            yjit_words(r.yjit),
            r.allocator.as_deref().unwrap_or("allocator unknown"),
            if r.server_versions.is_empty() {
                "server version unknown".to_string()
            } else {
                r.server_versions.join(", ")
            },
            r.root
                .as_ref()
                .map_or(String::new(), |d| format!(", root {d}"))
        );
    }
}

/// The environment's table of runtimes, each once; nothing when no
/// record says (older records).
pub(super) fn html(s: &mut String, runtimes: &[StudyRuntime]) {
    if runtimes.is_empty() {
        return;
    }
    s.push_str("<h3 id=\"runtimes\">Runtimes (as the server processes reported them)</h3>");
    s.push_str(&table(runtimes).html());
}

/// The runtimes as a table (shown in HTML).
fn table(runtimes: &[StudyRuntime]) -> Table {
    let text = |head: &str| Column::new(Kind::Text, Align::Left).html(head);
    let or = |v: &Option<String>| Cell::text(v.as_deref().unwrap_or("unknown"));
    let rows = (runtimes.iter())
        .map(|r| {
            Row::new(vec![
                Cell::text(&r.label),
                or(&r.ruby_description),
                or(&r.engine),
                Cell::text(match r.yjit {
                    Some(true) => "on",
                    Some(false) => "off",
                    None => "unknown",
                }),
                or(&r.allocator),
                Cell::text(r.server_versions.join(", ")),
                Cell::new(r.root.clone().map_or(Value::None, Value::Text)),
                Cell::num(Some(r.trials as f64)),
                Cell::text(r.mismatches.join("; ")).bad(!r.mismatches.is_empty()),
            ])
        })
        .collect();
    Table {
        columns: vec![
            text("Runtime"),
            text("Ruby").class("wrap"),
            text("Engine"),
            text("YJIT"),
            text("Allocator"),
            text("Server"),
            text("Root"),
            Column::new(Kind::Count, Align::Right).html("Trials"),
            text("Mismatches").class("notes"),
        ],
        rows,
        ..Table::default()
    }
}
