//! A trial's database as reports show it (issue 30), read from a record's
//! `database` (`database::DatabaseRecord`): [`TrialDatabase`] is one
//! trial's, [`GroupDatabase`] a group's over its runs. PostgreSQL is a
//! server of its own, sampled apart from the app server, so its CPU and
//! memory are its own figures here and never part of the app server's;
//! SQLite lives inside the app's processes and has none.
//!
//! It never reads a file (`read` does) and never starts a database
//! (`database`). A record without a database has none here: no column,
//! no line, the reports as they were.

use crate::database::{DatabaseRecord, Kind};
use crate::stats::spread::Spread;
use serde::Serialize;

/// One trial's database and what it did over the counted window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialDatabase {
    /// "sqlite" or "postgres".
    pub kind: String,
    /// The server's own version line; empty for SQLite.
    pub version: String,
    pub rows_seeded: u64,
    /// Rows the load added; None when they could not be counted.
    pub rows_written: Option<u64>,
    pub seed_s: f64,
    /// The runtime whose Ruby seeded it ("system": the host's).
    pub seed_runtime: String,
    /// The database server's CPU (user + system) over the counted window,
    /// seconds; None for SQLite.
    pub cpu_s: Option<f64>,
    pub rss_peak_bytes: Option<u64>,
    pub pss_peak_bytes: Option<u64>,
    pub processes_peak: Option<u32>,
}

impl TrialDatabase {
    pub fn of(d: &DatabaseRecord) -> TrialDatabase {
        TrialDatabase {
            kind: d.kind.name().to_string(),
            version: d.version.clone(),
            rows_seeded: d.rows_seeded,
            rows_written: d.rows_written,
            seed_s: d.seed_s,
            seed_runtime: d.seed_runtime.clone(),
            cpu_s: match (d.cpu_user_s, d.cpu_sys_s) {
                (Some(u), Some(s)) => Some(u + s),
                (u, s) => u.or(s),
            },
            rss_peak_bytes: d.rss_peak_bytes,
            pss_peak_bytes: d.pss_peak_bytes,
            processes_peak: d.processes_peak,
        }
    }

    /// "PostgreSQL 15.18", "SQLite (in the app's processes)".
    pub fn label(&self) -> String {
        label(&self.kind, &self.version)
    }
}

/// "PostgreSQL 15.18" from the server's version line ("PostgreSQL 15.18
/// (Debian 15.18-0+deb12u1)"); SQLite names where it lives.
fn label(kind: &str, version: &str) -> String {
    if kind == Kind::Sqlite.name() {
        return "SQLite (in the app's processes)".into();
    }
    let short: Vec<&str> = version.split_whitespace().take(2).collect();
    if short.len() == 2 {
        short.join(" ")
    } else {
        "PostgreSQL".into()
    }
}

/// One run's database beside what the load counted: its window and the
/// requests answered in it.
#[derive(Debug, Clone, PartialEq)]
pub struct DatabaseRun {
    pub database: TrialDatabase,
    pub window_s: f64,
    pub requests: f64,
}

/// A group's database over its runs that had one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupDatabase {
    /// [`TrialDatabase::label`]; several joined by " / " when its runs
    /// disagree.
    pub label: String,
    pub kind: String,
    /// The seed's rows (the same every run: the seed is fixed).
    pub rows_seeded: u64,
    /// Rows the load wrote per run; None when no run could count them.
    pub rows_written: Option<Spread>,
    /// The database server's CPU per request answered, milliseconds, and
    /// in cores (CPU seconds per second of window); None for SQLite.
    pub cpu_ms_per_request: Option<Spread>,
    pub cpu_cores: Option<Spread>,
    /// The highest peaks over its runs; None for SQLite.
    pub rss_peak_bytes: Option<u64>,
    pub pss_peak_bytes: Option<u64>,
    pub processes_peak: Option<u32>,
    /// Its runs whose record has a database.
    pub runs: usize,
}

impl GroupDatabase {
    /// Over each run with a database; None when no run had one.
    pub fn of(runs: &[DatabaseRun]) -> Option<GroupDatabase> {
        let first = &runs.first()?.database;
        let mut labels: Vec<String> = Vec::new();
        for r in runs {
            if !labels.contains(&r.database.label()) {
                labels.push(r.database.label());
            }
        }
        let spread = |get: &dyn Fn(&DatabaseRun) -> Option<f64>| {
            Spread::of(&runs.iter().filter_map(get).collect::<Vec<_>>())
        };
        Some(GroupDatabase {
            label: labels.join(" / "),
            kind: first.kind.clone(),
            rows_seeded: runs.iter().map(|r| r.database.rows_seeded).max()?,
            rows_written: spread(&|r| r.database.rows_written.map(|w| w as f64)),
            cpu_ms_per_request: spread(&|r| {
                r.database
                    .cpu_s
                    .filter(|_| r.requests > 0.0)
                    .map(|c| c * 1000.0 / r.requests)
            }),
            cpu_cores: spread(&|r| {
                r.database
                    .cpu_s
                    .filter(|_| r.window_s > 0.0)
                    .map(|c| c / r.window_s)
            }),
            rss_peak_bytes: runs.iter().filter_map(|r| r.database.rss_peak_bytes).max(),
            pss_peak_bytes: runs.iter().filter_map(|r| r.database.pss_peak_bytes).max(),
            processes_peak: runs.iter().filter_map(|r| r.database.processes_peak).max(),
            runs: runs.len(),
        })
    }

    /// "119 rows written (110–130), 0.031 ms CPU per request, 0.12
    /// cores, 99.6 MiB RSS peak in 7 processes": the terminal's words.
    pub fn figures(&self) -> String {
        let mut parts = vec![format!("{} rows seeded", self.rows_seeded)];
        parts.push(match self.rows_written {
            Some(w) if w.min < w.max => format!(
                "{:.0} rows written per run ({:.0}–{:.0})",
                w.median, w.min, w.max
            ),
            Some(w) => format!("{:.0} rows written", w.median),
            None => "rows written not counted".into(),
        });
        if let Some(c) = self.cpu_ms_per_request {
            parts.push(format!("{:.3} ms CPU per request", c.median));
        }
        if let Some(c) = self.cpu_cores {
            parts.push(format!("{:.2} cores", c.median));
        }
        if let Some(r) = self.rss_peak_bytes {
            parts.push(format!(
                "{} RSS peak{}",
                super::budget::size(r),
                self.processes_peak
                    .map_or(String::new(), |p| format!(" in {p} processes"))
            ));
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: Kind, written: Option<u64>, cpu: Option<(f64, f64)>) -> DatabaseRecord {
        DatabaseRecord {
            kind,
            version: "PostgreSQL 15.18 (Debian 15.18-0+deb12u1)".into(),
            command: None,
            url: "postgres://postgres@127.0.0.1:5432/blog".into(),
            rows_seeded: 6050,
            rows_written: written,
            seed_s: 0.5,
            seed_runtime: "system".into(),
            seed_ruby: None,
            seed_activerecord: None,
            cpu_user_s: cpu.map(|c| c.0),
            cpu_sys_s: cpu.map(|c| c.1),
            rss_peak_bytes: cpu.map(|_| 100 << 20),
            pss_peak_bytes: cpu.map(|_| 40 << 20),
            processes_peak: cpu.map(|_| 7),
        }
    }

    fn run(d: DatabaseRecord, window_s: f64, requests: f64) -> DatabaseRun {
        DatabaseRun {
            database: TrialDatabase::of(&d),
            window_s,
            requests,
        }
    }

    #[test]
    fn postgres_cpu_is_per_request_answered_and_per_second_of_window() {
        let g = GroupDatabase::of(&[
            run(
                record(Kind::Postgres, Some(100), Some((0.8, 0.2))),
                10.0,
                1000.0,
            ),
            run(
                record(Kind::Postgres, Some(120), Some((1.6, 0.4))),
                10.0,
                1000.0,
            ),
            run(
                record(Kind::Postgres, Some(140), Some((2.4, 0.6))),
                10.0,
                1000.0,
            ),
        ])
        .unwrap();
        assert_eq!(g.label, "PostgreSQL 15.18");
        assert_eq!(g.rows_written.unwrap().median, 120.0);
        assert_eq!(g.cpu_ms_per_request.unwrap().median, 2.0);
        assert_eq!(g.cpu_cores.unwrap().median, 0.2);
        assert_eq!(g.processes_peak, Some(7));
        assert_eq!(
            g.figures(),
            "6050 rows seeded, 120 rows written per run (100–140), 2.000 ms CPU per request, 0.20 cores, 100 MiB RSS peak in 7 processes"
        );
    }

    #[test]
    fn sqlite_has_no_figures_of_its_own_and_uncounted_writes_are_said() {
        let g = GroupDatabase::of(&[run(record(Kind::Sqlite, None, None), 10.0, 1000.0)]).unwrap();
        assert_eq!(g.label, "SQLite (in the app's processes)");
        assert_eq!((g.cpu_ms_per_request, g.rss_peak_bytes), (None, None));
        assert_eq!(g.figures(), "6050 rows seeded, rows written not counted");
        assert!(GroupDatabase::of(&[]).is_none(), "no database: nothing");
    }

    #[test]
    fn a_run_without_requests_gives_no_cpu_per_request() {
        let g = GroupDatabase::of(&[run(
            record(Kind::Postgres, Some(0), Some((1.0, 0.0))),
            10.0,
            0.0,
        )])
        .unwrap();
        assert_eq!(g.cpu_ms_per_request, None);
        assert_eq!(g.cpu_cores.unwrap().median, 0.1);
    }
}
