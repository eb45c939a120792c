//! The database behind a study's app in every report (issue 30): which
//! database, said once in the header when the trials share one and as a
//! column when they do not; per group the rows the load wrote and, for
//! PostgreSQL (a server of its own, sampled apart from the app server),
//! its CPU per request, its cores and its memory peak; columns in
//! report.csv and trials.csv; `database` per group in report.json. The
//! time the app spent in SQL and waiting for the pool is telemetry's, in
//! "Where the time goes" (`markdown::md_time_split`, `html_bars::time_split`).
//!
//! A study without a database gets nothing from here: no line, no
//! column, its reports byte for byte as before. It never reads a
//! record's JSON: the figures come from `store::database`.

use super::table::condition::{Cell, ConditionTable};
use super::table::{Align, CsvColumn as Column};
use super::{Group, Report, TrialRow};
use crate::stats::spread::Spread;
use crate::store::budget::size;
use crate::store::database::{GroupDatabase, TrialDatabase};
use crate::store::figures::TrialFigures;

impl Report {
    /// The databases the study's groups ran with, each label once, in
    /// the order met; empty when none ran with one.
    pub fn databases(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for d in self.groups.iter().filter_map(|g| g.database.as_ref()) {
            if !out.contains(&d.label) {
                out.push(d.label.clone());
            }
        }
        out
    }

    /// Whether rows must say their database: the groups ran with more
    /// than one (or some without one).
    pub fn database_varies(&self) -> bool {
        let without = self.groups.iter().any(|g| g.database.is_none());
        let n = self.databases().len();
        n > 1 || (n == 1 && without)
    }

    /// "Database: PostgreSQL 15.18, 6050 rows seeded before each run
    /// (every trial)"; None without one.
    pub fn database_line(&self) -> Option<String> {
        let d = self.databases();
        let seeded = self
            .groups
            .iter()
            .filter_map(|g| g.database.as_ref().map(|d| d.rows_seeded))
            .max()?;
        Some(if self.database_varies() {
            format!(
                "Databases: {} (each group's in the database tables); reseeded before each run",
                d.join("; ")
            )
        } else {
            format!(
                "Database: {}, {seeded} rows seeded before each run (every trial){}",
                d[0],
                if self
                    .groups
                    .iter()
                    .any(|g| g.database.as_ref().is_some_and(|d| d.kind == "postgres"))
                {
                    "; its CPU and memory are its own, apart from the server's"
                } else {
                    ""
                }
            )
        })
    }
}

/// The group's database cell: its label, "none" without one.
fn label(g: &Group) -> String {
    g.database
        .as_ref()
        .map_or_else(|| "none".into(), |d| d.label.clone())
}

/// "119", "119 (100–140)"; "-" when not counted.
fn written(d: &GroupDatabase) -> String {
    match d.rows_written {
        Some(w) if w.min < w.max => format!("{:.0} ({:.0}–{:.0})", w.median, w.min, w.max),
        Some(w) => format!("{:.0}", w.median),
        None => "-".into(),
    }
}

fn median(s: Option<Spread>, digits: usize) -> String {
    s.map_or("-".into(), |s| format!("{:.digits$}", s.median))
}

const HEADS: [(&str, Align); 5] = [
    ("Rows written per run", Align::Right),
    ("DB CPU per request (ms)", Align::Right),
    ("DB CPU (cores)", Align::Right),
    ("DB memory peak (RSS)", Align::Right),
    ("DB processes", Align::Right),
];

fn cells(d: &GroupDatabase) -> Vec<Cell> {
    vec![
        written(d).into(),
        median(d.cpu_ms_per_request, 3).into(),
        median(d.cpu_cores, 2).into(),
        d.rss_peak_bytes.map_or("-".into(), size).into(),
        d.processes_peak
            .map_or("-".into(), |p| p.to_string())
            .into(),
    ]
}

const NOTE: &str = "The database behind the app, reseeded before each run: the rows the load wrote, and for PostgreSQL (a server of its own, its process tree sampled apart from the app server's) its CPU over the counted window per request answered and in cores, and its memory peak. SQLite lives inside the app's processes: its work is the server's.";

/// The section's database table; None when none of its groups ran with
/// one.
fn table<'a>(report: &Report, groups: &[&'a Group]) -> Option<ConditionTable<'a>> {
    if groups.iter().all(|g| g.database.is_none()) {
        return None;
    }
    Some(ConditionTable {
        heading: "Database",
        note: Some(NOTE),
        html_titled: true,
        class: "database",
        label: report.database_varies().then_some("Database"),
        heads: &HEADS,
        rows: super::table::condition::rows(groups, label, |g| g.database.as_ref().map(cells)),
    })
}

/// One line per group with a database under the terminal table;
/// nothing without one.
pub(super) fn terminal(s: &mut String, report: &Report) {
    let varies = report.database_varies();
    super::table::condition::terminal_lines(s, &report.groups, report.database_line(), None, |g| {
        let d = g.database.as_ref()?;
        let label = if varies {
            format!("{}; ", d.label)
        } else {
            String::new()
        };
        Some(format!("{label}{}", d.figures()))
    });
}

/// The section's database table in Markdown; nothing without one.
pub(super) fn markdown(s: &mut String, report: &Report, groups: &[&Group]) {
    super::table::condition::markdown(s, table(report, groups));
}

/// The section's database table in HTML; nothing without one.
pub(super) fn html(s: &mut String, report: &Report, groups: &[&Group]) {
    super::table::condition::html(s, table(report, groups));
}

/// A group's database figure; empty for a group without one.
fn of_group(g: &Group, figure: impl Fn(&GroupDatabase) -> String) -> String {
    g.database.as_ref().map_or(String::new(), figure)
}

/// A trial's database figure; empty without one.
fn of_trial(t: &TrialRow, figure: impl Fn(&TrialDatabase) -> String) -> String {
    t.record
        .as_ref()
        .and_then(|r| TrialFigures::of(r).database)
        .map_or(String::new(), |d| figure(&d))
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// A group's database, last in report.csv, only when a study ran with
/// one.
pub(super) const GROUP_COLUMNS: &[Column<Group>] = &[
    ("database", |g| of_group(g, |d| d.label.clone())),
    ("db_rows_seeded", |g| {
        of_group(g, |d| d.rows_seeded.to_string())
    }),
    ("db_rows_written", |g| {
        of_group(g, |d| {
            opt(d.rows_written.map(|w| format!("{:.0}", w.median)))
        })
    }),
    ("db_cpu_ms_per_request", |g| {
        of_group(g, |d| {
            opt(d.cpu_ms_per_request.map(|c| format!("{:.4}", c.median)))
        })
    }),
    ("db_cpu_cores", |g| {
        of_group(g, |d| opt(d.cpu_cores.map(|c| format!("{:.4}", c.median))))
    }),
    ("db_rss_peak_bytes", |g| {
        of_group(g, |d| opt(d.rss_peak_bytes))
    }),
    ("db_pss_peak_bytes", |g| {
        of_group(g, |d| opt(d.pss_peak_bytes))
    }),
];

/// A trial's database, last in trials.csv, only when a study ran with
/// one.
pub(super) const TRIAL_COLUMNS: &[Column<TrialRow>] = &[
    ("database", |t| of_trial(t, |d| d.label())),
    ("db_rows_seeded", |t| {
        of_trial(t, |d| d.rows_seeded.to_string())
    }),
    ("db_rows_written", |t| of_trial(t, |d| opt(d.rows_written))),
    ("db_seed_s", |t| of_trial(t, |d| format!("{:.3}", d.seed_s))),
    ("db_seed_runtime", |t| {
        of_trial(t, |d| d.seed_runtime.clone())
    }),
    ("db_cpu_s", |t| {
        of_trial(t, |d| opt(d.cpu_s.map(|c| format!("{c:.3}"))))
    }),
    ("db_rss_peak_bytes", |t| {
        of_trial(t, |d| opt(d.rss_peak_bytes))
    }),
    ("db_pss_peak_bytes", |t| {
        of_trial(t, |d| opt(d.pss_peak_bytes))
    }),
];
