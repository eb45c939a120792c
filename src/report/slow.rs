//! Slow clients in every report (issue 29): the slow-client setting a
//! study's trials ran beside, said once in the header when they share one
//! and as a Slow column of the slow-client table when they differ (a
//! study comparing 0 and 4 has "none" in some rows); per group what the
//! slow connections saw: accepted, closed by the server, the held p50 of
//! the closed ones, and those still open at the end (held at least so
//! long: the end cut them off).
//!
//! A study without slow clients gets nothing from here: no line, no
//! column, its reports byte for byte as before. It never reads a record's
//! JSON: the figures come from `store::figures` (`store::slow`).

use super::table::condition::{Cell, ConditionTable};
use super::table::Align;
use super::{Group, Report, TrialRow};
use crate::lab::trial::TrialRecord;
use crate::store::figures::TrialFigures;
use crate::store::slow::{GroupSlow, TrialSlow};

/// A record's slow clients, through the store's one reader.
pub(super) fn of_record(r: &TrialRecord) -> Option<TrialSlow> {
    TrialFigures::of(r).slow
}

/// A trial row's slow clients, if its record had them.
pub(super) fn of_trial(t: &TrialRow) -> Option<TrialSlow> {
    t.record.as_ref().and_then(of_record)
}

impl Report {
    /// The slow-client settings the study's records ran beside, each
    /// once with its pace, in the order met; empty when none had them.
    pub fn slow_settings(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.trials.iter().filter_map(of_trial) {
            if !out.contains(&s.label_with_pace()) {
                out.push(s.label_with_pace());
            }
        }
        out
    }

    /// Whether rows must say their slow clients: the records ran beside
    /// more than one setting (records without any count as "none").
    pub fn slow_varies(&self) -> bool {
        let without = self
            .trials
            .iter()
            .filter_map(|t| t.record.as_ref())
            .any(|r| r.load.slow_clients.is_none());
        let n = self.slow_settings().len();
        n > 1 || (n == 1 && without)
    }

    /// "Slow clients: 4 headers (4 B every 1 s) beside the load of every
    /// trial, in none of its figures", or the list when they differ; None
    /// without slow clients.
    pub fn slow_line(&self) -> Option<String> {
        let mut s = self.slow_settings();
        match s.len() {
            0 => None,
            _ if !self.slow_varies() => Some(format!(
                "Slow clients: {} beside the load of every trial, in none of its figures",
                s[0]
            )),
            _ => {
                if self
                    .trials
                    .iter()
                    .filter_map(|t| t.record.as_ref())
                    .any(|r| r.load.slow_clients.is_none())
                {
                    s.insert(0, "none".into());
                }
                Some(format!(
                    "Slow clients: {} (each group's in the slow-client tables; in none of the load's figures)",
                    s.join("; ")
                ))
            }
        }
    }
}

/// The group's Slow cell: its label, "none" without slow clients.
fn label(g: &Group) -> String {
    g.slow
        .as_ref()
        .map_or_else(|| "none".into(), |s| s.label.clone())
}

/// The figures' cells: accepted, closed by the server, held p50 of the
/// closed ones, open at the end.
fn cells(s: &GroupSlow) -> [String; 4] {
    [
        s.accepted.to_string(),
        s.closed_by_server.to_string(),
        s.held(),
        s.open(),
    ]
}

/// What the table's columns count, said once above it.
const NOTE: &str = "The slow connections beside the load, over each group's runs: those the server accepted, those it closed and how long the closed ones were held, and those still open when the run ended (held at least so long: the end cut them off, so they are no held sample).";

const HEADS: [(&str, Align); 4] = [
    ("Accepted", Align::Right),
    ("Closed by server", Align::Right),
    ("Held p50 (closed ones)", Align::Right),
    ("Open at end", Align::Right),
];

/// One line per group with slow clients under the terminal table;
/// nothing without them.
pub(super) fn terminal(s: &mut String, report: &Report) {
    let varies = report.slow_varies();
    super::table::condition::terminal_lines(s, &report.groups, report.slow_line(), Some(9), |g| {
        let w = g.slow.as_ref()?;
        let label = if varies {
            format!("{}: ", w.label)
        } else {
            String::new()
        };
        Some(format!("{label}{}", w.figures()))
    });
}

/// The section's slow-client table; None when none of its groups ran
/// with them.
fn table<'a>(report: &Report, groups: &[&'a Group]) -> Option<ConditionTable<'a>> {
    if groups.iter().all(|g| g.slow.is_none()) {
        return None;
    }
    Some(ConditionTable {
        heading: "Slow clients",
        note: Some(NOTE),
        html_titled: true,
        class: "slow",
        label: report.slow_varies().then_some("Slow"),
        heads: &HEADS,
        rows: super::table::condition::rows(groups, label, |g| {
            g.slow.as_ref().map(|w| cells(w).map(Cell::from).into())
        }),
    })
}

/// The section's slow-client table in Markdown; nothing when none of its
/// groups ran with them.
pub(super) fn markdown(s: &mut String, report: &Report, groups: &[&Group]) {
    super::table::condition::markdown(s, table(report, groups));
}

/// The section's slow-client table in HTML; nothing without them.
pub(super) fn html(s: &mut String, report: &Report, groups: &[&Group]) {
    super::table::condition::html(s, table(report, groups));
}
