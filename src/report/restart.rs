//! Restarts in every report (issue 29): per group, how its restarts under
//! load went (zero-downtime in how many runs, the errors by kind and the
//! requests lost, p99 before and during, the recovery), as a table in the
//! terminal, Markdown and HTML; per trial, its verdict above its timeline
//! and a marker at the instant on the chart.
//!
//! A study without restarts gets nothing from here: no line, no table, its
//! reports byte for byte as before. Computes nothing a record does not
//! hold (`lab::restart` judged each restart when it ran).

use super::svg::esc;
use super::table::condition::{Cell, ConditionRow, ConditionTable};
use super::table::Align;
use super::{Group, Report};
use crate::lab::record::{RestartErrors, RestartRecord};
use crate::lab::trial::TrialRecord;
use std::fmt::Write;

/// One group's restarts, summed over its runs.
struct Row {
    kind: String,
    runs: usize,
    failed: usize,
    zero: usize,
    errors: RestartErrors,
    lost: u64,
    p99_before_us: Option<u64>,
    p99_during_us: Option<u64>,
    /// Median over the runs that recovered, and how many did.
    recovered_ms: Option<u64>,
    recovered: usize,
}

fn median(mut v: Vec<u64>) -> Option<u64> {
    v.sort_unstable();
    (!v.is_empty()).then(|| v[v.len() / 2])
}

impl Row {
    fn of(rs: &[&RestartRecord]) -> Option<Row> {
        let first = rs.first()?;
        let mut errors = RestartErrors::default();
        for r in rs {
            let e = &r.errors_during;
            errors.refused += e.refused;
            errors.reset += e.reset;
            errors.status_5xx += e.status_5xx;
            errors.timeout += e.timeout;
            errors.other += e.other;
        }
        let recovered: Vec<u64> = rs.iter().filter_map(|r| r.recovered_after_ms).collect();
        Some(Row {
            kind: first.kind.clone(),
            runs: rs.len(),
            failed: rs.iter().filter(|r| r.outcome != "done").count(),
            zero: rs.iter().filter(|r| r.zero_downtime).count(),
            errors,
            lost: rs.iter().map(|r| r.requests_lost).sum(),
            p99_before_us: median(rs.iter().filter_map(|r| r.p99_before_us).collect()),
            p99_during_us: median(
                rs.iter()
                    .filter_map(|r| r.latency_during_us.as_ref().map(|l| l.p99))
                    .collect(),
            ),
            recovered: recovered.len(),
            recovered_ms: median(recovered),
        })
    }

    /// "3 of 3", "0 of 3 (1 failed)".
    fn zero_cell(&self) -> String {
        let mut c = format!("{} of {}", self.zero, self.runs);
        if self.failed > 0 {
            let _ = write!(c, " ({} failed)", self.failed);
        }
        c
    }

    fn errors_cell(&self) -> String {
        if self.errors.total() == 0 {
            "0".into()
        } else {
            self.errors.words()
        }
    }

    /// "0.4 ms → 1.2 ms" (medians over the runs).
    fn p99_cell(&self) -> String {
        let ms = |us: Option<u64>| us.map_or("-".into(), |u| crate::units::fmt_us(u as f64));
        format!("{} → {}", ms(self.p99_before_us), ms(self.p99_during_us))
    }

    /// "1.0 s", "1.0 s (2 of 3 runs)", "not within the window".
    fn recovered_cell(&self) -> String {
        match self.recovered_ms {
            None => "not within the window".into(),
            Some(ms) if self.recovered == self.runs => format!("{:.1} s", ms as f64 / 1000.0),
            Some(ms) => format!(
                "{:.1} s ({} of {} runs)",
                ms as f64 / 1000.0,
                self.recovered,
                self.runs
            ),
        }
    }

    fn cells(&self) -> [String; 6] {
        [
            self.kind.clone(),
            self.zero_cell(),
            self.errors_cell(),
            self.lost.to_string(),
            self.p99_cell(),
            self.recovered_cell(),
        ]
    }
}

const HEADS: [(&str, Align); 6] = [
    ("Restart", Align::Left),
    ("Zero-downtime", Align::Right),
    ("Errors during", Align::Left),
    ("Requests lost", Align::Right),
    ("p99 before → during", Align::Right),
    ("Recovered after", Align::Right),
];

impl Report {
    /// The restarts of group `g`'s runs, in the order run.
    fn restarts_of(&self, g: &Group) -> Vec<&RestartRecord> {
        self.trials
            .iter()
            .filter(|t| t.planned.group == g.group)
            .filter_map(|t| t.record.as_ref()?.restart.as_ref())
            .collect()
    }

    fn restart_rows<'a>(&'a self, groups: &[&'a Group]) -> Vec<(&'a Group, Row)> {
        groups
            .iter()
            .filter_map(|g| Some((*g, Row::of(&self.restarts_of(g))?)))
            .collect()
    }
}

/// One line per group with restarts under the terminal table; nothing
/// without restarts.
pub(super) fn terminal(s: &mut String, report: &Report) {
    let groups: Vec<&Group> = report.groups.iter().collect();
    let rows = report.restart_rows(&groups);
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nRestarts under load (zero-downtime runs; errors; p99 before → during; recovered after):"
    );
    for (g, r) in rows {
        let _ = writeln!(
            s,
            "{}{}: {}; {}; {}; {}",
            super::table::condition::line_start(g, Some(8)),
            r.kind,
            r.zero_cell(),
            r.errors_cell(),
            r.p99_cell(),
            r.recovered_cell()
        );
    }
}

/// What the table's figures are, said once below it.
const NOTE: &str = "Errors and requests lost are summed over the runs, p99 and recovery are medians; recovery is to throughput and p99 within 10% of the seconds before, to the second.";

/// The section's restart table, zero-downtime and errors bad in a group
/// where not every run was zero-downtime; None when none of its groups
/// restarted.
fn table<'a>(report: &'a Report, groups: &[&'a Group]) -> Option<ConditionTable<'a>> {
    let rows = report.restart_rows(groups);
    if rows.is_empty() {
        return None;
    }
    Some(ConditionTable {
        heading: "Restarts under load",
        note: None,
        html_titled: false,
        class: "restart",
        label: None,
        heads: &HEADS,
        rows: rows
            .into_iter()
            .map(|(g, r)| {
                let bad = r.zero < r.runs;
                let cells = r.cells().into_iter().enumerate();
                ConditionRow {
                    group: g,
                    label: String::new(),
                    cells: Some(
                        cells
                            .map(|(i, text)| Cell {
                                text,
                                bad: bad && (i == 1 || i == 2),
                            })
                            .collect(),
                    ),
                }
            })
            .collect(),
    })
}

/// The section's restart table in Markdown, its note below; nothing when
/// none of its groups restarted.
pub(super) fn markdown(s: &mut String, report: &Report, groups: &[&Group]) {
    if let Some(t) = table(report, groups) {
        super::table::condition::markdown(s, Some(t));
        let _ = write!(s, "{NOTE}\n\n");
    }
}

/// The section's restart table in HTML, its note below; nothing without
/// restarts.
pub(super) fn html(s: &mut String, report: &Report, groups: &[&Group]) {
    if let Some(t) = table(report, groups) {
        super::table::condition::html(s, Some(t));
        let _ = write!(s, "<p class=\"note\">{}</p>", esc(NOTE));
    }
}

/// Where a trial's restart sits on its timeline (seconds from the load's
/// start, warm-up included) and the marker's label; None without one.
pub(super) fn instant(r: &TrialRecord) -> Option<(f64, String)> {
    let x = r.restart.as_ref()?;
    Some((
        r.load.config.warmup_s + x.at_s,
        format!("{} restart at {:.1}s", x.kind, x.at_s),
    ))
}

/// A trial's restart in one line, for the note above its timeline.
pub(super) fn note(r: &TrialRecord) -> Option<(String, bool)> {
    let x = r.restart.as_ref()?;
    Some((
        format!("{} restart at {:.1} s: {}", x.kind, x.at_s, x.verdict),
        x.zero_downtime,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(zero: bool, refused: u64, recovered: Option<u64>) -> RestartRecord {
        RestartRecord {
            kind: "reexec".into(),
            at_s: 3.0,
            outcome: if refused == u64::MAX {
                "failed"
            } else {
                "done"
            }
            .into(),
            why: None,
            took_ms: Some(300),
            errors_during: RestartErrors {
                refused: refused.min(100),
                ..Default::default()
            },
            requests_lost: 0,
            latency_during_us: None,
            p99_before_us: Some(400),
            rps_before: Some(1000.0),
            rps_min_during: Some(900.0),
            during_s: Some([3.0, 4.0]),
            recovered_after_ms: recovered,
            resolution_ms: 1000,
            pids_before: vec![1, 2],
            pids_after: vec![3, 4],
            old_workers: vec![2],
            new_workers: vec![4],
            new_workers_answered: true,
            zero_downtime: zero,
            verdict: String::new(),
        }
    }

    #[test]
    fn a_groups_row_sums_errors_and_takes_medians_over_its_runs() {
        let a = record(true, 0, Some(1000));
        let b = record(false, 37, Some(3000));
        let c = record(false, u64::MAX, None);
        let row = Row::of(&[&a, &b, &c]).unwrap();
        assert_eq!(
            row.cells(),
            [
                "reexec",
                "1 of 3 (1 failed)",
                "137 connections refused",
                "0",
                "400us → -",
                "3.0 s (2 of 3 runs)",
            ]
            .map(String::from)
        );
        assert!(Row::of(&[]).is_none());
        let one = Row::of(&[&a]).unwrap();
        assert_eq!(one.recovered_cell(), "1.0 s");
        assert_eq!(one.errors_cell(), "0");
    }
}
