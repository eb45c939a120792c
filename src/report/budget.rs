//! Budgets in every report (issue 28): the budget a study's trials ran
//! under, said once in the header when they share one and as a column of
//! the budget table when they do not; per group its memory peak against
//! the limit and its CPU throttling; and a kill for memory as a note
//! beside the row (`Group::notes`), which is then never a clean result.
//!
//! A study without budgets gets nothing from here: no line, no column,
//! its reports byte for byte as before. It never reads a record's JSON:
//! the figures come from `store::figures` (`store::budget`).

use super::table::condition::{Cell, ConditionTable};
use super::table::Align;
use super::{Group, Report, TrialRow};
use crate::lab::trial::TrialRecord;
use crate::store::budget::{GroupBudget, TrialBudget};
use crate::store::figures::TrialFigures;

/// A record's budget, through the store's one reader.
pub(super) fn of_record(r: &TrialRecord) -> Option<TrialBudget> {
    TrialFigures::of(r).budget
}

/// A trial's kill note, if its record has one.
pub(super) fn trial_kill_note(t: &TrialRow) -> Option<String> {
    t.record
        .as_ref()
        .and_then(of_record)
        .and_then(|b| b.kill_note())
}

impl Report {
    /// The budgets the study's records ran under, each label once, in
    /// the order met; empty when none ran with one.
    pub fn budgets(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for b in self
            .trials
            .iter()
            .filter_map(|t| t.record.as_ref().and_then(of_record))
        {
            if !out.contains(&b.label()) {
                out.push(b.label());
            }
        }
        out
    }

    /// Whether rows must say their budget: the records ran under more
    /// than one (a study where some ran without one counts "no limit").
    pub fn budget_varies(&self) -> bool {
        let without = self
            .trials
            .iter()
            .filter_map(|t| t.record.as_ref())
            .any(|r| r.budget.is_none());
        let n = self.budgets().len();
        n > 1 || (n == 1 && without)
    }

    /// "Budget: 512 MiB, 1 CPU per server (every trial)", or the list
    /// when they differ; None without budgets.
    pub fn budget_line(&self) -> Option<String> {
        let b = self.budgets();
        match b.len() {
            0 => None,
            _ if !self.budget_varies() => Some(format!(
                "Budget: {} for each server process tree (every trial)",
                b[0]
            )),
            _ => Some(format!(
                "Budgets: {} (each group's in the budget tables)",
                b.join("; ")
            )),
        }
    }
}

/// The group's budget cell: its label, "no limit" without one.
fn label(g: &Group) -> String {
    g.budget
        .as_ref()
        .map_or_else(|| "no limit".into(), |b| b.label.clone())
}

/// Its kills for memory: "1 (1 of 2 runs)", or "0".
fn kills(b: &GroupBudget) -> String {
    if b.oom_kills == 0 {
        "0".into()
    } else {
        format!("{} ({} of {} runs)", b.oom_kills, b.runs_killed, b.runs)
    }
}

fn peak(b: &GroupBudget) -> String {
    match (b.memory_peak_bytes, b.memory_limit_bytes) {
        (Some(p), Some(l)) => format!(
            "{} of {}, {:.0}%",
            crate::store::budget::size(p),
            crate::store::budget::size(l),
            b.memory_peak_share.unwrap_or(0.0) * 100.0
        ),
        (Some(p), None) => crate::store::budget::size(p),
        (None, _) => "-".into(),
    }
}

fn throttled(b: &GroupBudget) -> String {
    b.cpu_throttled_s_per_s
        .map_or("-".into(), |t| format!("{t:.2} s/s"))
}

/// One line per budgeted group under the terminal table; nothing without
/// budgets.
pub(super) fn terminal(s: &mut String, report: &Report) {
    let varies = report.budget_varies();
    super::table::condition::terminal_lines(s, &report.groups, report.budget_line(), None, |g| {
        let b = g.budget.as_ref()?;
        let label = if varies {
            format!("{}; ", b.label)
        } else {
            String::new()
        };
        let kill = b.kill_note().map_or(String::new(), |n| format!("; {n}"));
        Some(format!("{label}{}{kill}", b.figures()))
    });
}

const HEADS: [(&str, Align); 3] = [
    ("Memory peak of limit", Align::Right),
    ("CPU throttled (s per s)", Align::Right),
    ("Killed for memory", Align::Right),
];

/// Its cells: the peak of the limit, throttling, kills (bad when any).
fn cells(b: &GroupBudget) -> Vec<Cell> {
    vec![
        peak(b).into(),
        throttled(b).into(),
        Cell {
            text: kills(b),
            bad: b.oom_kills > 0,
        },
    ]
}

/// The section's budget table; None when none of its groups ran with
/// one.
fn table<'a>(report: &Report, groups: &[&'a Group]) -> Option<ConditionTable<'a>> {
    if groups.iter().all(|g| g.budget.is_none()) {
        return None;
    }
    Some(ConditionTable {
        heading: "Budget",
        note: None,
        html_titled: false,
        class: "budget",
        label: report.budget_varies().then_some("Budget"),
        heads: &HEADS,
        rows: super::table::condition::rows(groups, label, |g| g.budget.as_ref().map(cells)),
    })
}

/// The section's budget table in Markdown; nothing when none of its
/// groups ran with one.
pub(super) fn markdown(s: &mut String, report: &Report, groups: &[&Group]) {
    super::table::condition::markdown(s, table(report, groups));
}

/// The section's budget table in HTML; nothing without budgets.
pub(super) fn html(s: &mut String, report: &Report, groups: &[&Group]) {
    super::table::condition::html(s, table(report, groups));
}

/// The seconds on a trial's timeline (from its start, warm-up included)
/// at which a worker was killed for memory: `oom_events` are counted from
/// the window's start, which is where the warm-up ends.
pub(super) fn kill_seconds(r: &TrialRecord) -> Vec<f64> {
    let Some(b) = of_record(r) else {
        return Vec::new();
    };
    let tl = &r.load.timeline;
    let window_start = tl
        .iter()
        .find(|row| !row.warmup)
        .map_or(tl.len() as f64, |row| row.t_s as f64);
    b.oom_events
        .iter()
        .map(|t| (window_start + t).max(0.0))
        .collect()
}
