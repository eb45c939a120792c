//! The database behind an app that needs one (the `blog` app): SQLite, a
//! file in the trial's directory, or PostgreSQL, a real server started for
//! the trial (`postgres.rs`). Either is seeded by the app's own seed script
//! (`seed.rb seed`, run with the server's environment) before the server
//! starts, so every trial (each repeat among them) begins from the same
//! rows; after the load the rows are counted again (`seed.rb count`) and
//! the difference is what the load wrote.
//!
//! A started [`Database`] stops its server and removes its data directory
//! when dropped, so no error path and no Ctrl-C leaves one behind. This
//! module starts no app server, drives no load and samples nothing: the
//! lab samples the database's process tree ([`Database::pid`]) beside the
//! server's.

mod postgres;
mod setup;
mod sqlite;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

pub use setup::{DatabaseError, Kind, Setup, BIN_ENV};

/// A database started and seeded. Dropping it stops its server and
/// removes its files.
pub struct Database {
    pub kind: Kind,
    /// What the app connects with (`DATABASE_URL`).
    pub url: String,
    pub version: String,
    /// The command the database server runs (None for SQLite).
    pub command: Option<String>,
    pub rows_seeded: u64,
    pub seed_s: f64,
    seed: Seeder,
    server: Option<postgres::Server>,
    sqlite_file: Option<PathBuf>,
}

/// The `database` object of a trial record: which database, its seed and
/// what the load wrote, and its process tree's figures (PostgreSQL).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DatabaseRecord {
    pub kind: Kind,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The app's `DATABASE_URL`.
    pub url: String,
    pub rows_seeded: u64,
    /// Rows after the load (servers stopped) minus the seeded rows; None
    /// when they could not be counted.
    pub rows_written: Option<u64>,
    pub seed_s: f64,
    /// The database server's process tree over the counted window (None
    /// for SQLite, which lives inside the app's processes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_user_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_sys_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_peak_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pss_peak_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes_peak: Option<u32>,
}

impl Database {
    /// Starts (PostgreSQL) or creates (SQLite) the database, then seeds it.
    pub fn start(setup: &Setup) -> Result<Database, DatabaseError> {
        let seed = Seeder::new(setup);
        let (url, version, command, server, sqlite_file) = match setup.kind {
            Kind::Sqlite => {
                let (url, file) = sqlite::prepare(setup.dir)?;
                (url, String::new(), None, None, Some(file))
            }
            Kind::Postgres => {
                let s = postgres::Server::start(setup)?;
                (
                    s.url.clone(),
                    s.version.clone(),
                    Some(s.command.clone()),
                    Some(s),
                    None,
                )
            }
        };
        let t0 = Instant::now();
        let out = seed.run("seed", &url)?;
        let rows_seeded = parse_rows(&out, "seeded ").ok_or_else(|| seed.failed(&out))?;
        let version = if version.is_empty() {
            parse_line(&out, "database ").unwrap_or_default()
        } else {
            version
        };
        Ok(Database {
            kind: setup.kind,
            url,
            version,
            command,
            rows_seeded,
            seed_s: t0.elapsed().as_secs_f64(),
            seed,
            server,
            sqlite_file,
        })
    }

    /// The database server's main process (None for SQLite).
    pub fn pid(&self) -> Option<u32> {
        self.server.as_ref().map(|s| s.pid())
    }

    /// Rows in the app's tables now.
    pub fn rows(&self) -> Result<u64, DatabaseError> {
        let out = self.seed.run("count", &self.url)?;
        parse_rows(&out, "rows ").ok_or_else(|| self.seed.failed(&out))
    }

    /// The record's `database` object: counts the rows (call once the app
    /// server has stopped) and takes the sampler's figures of its tree.
    pub fn record(&self, samples: Option<&crate::sampler::SamplerReport>) -> DatabaseRecord {
        let rows_written = self.rows().ok().map(|n| n.saturating_sub(self.rows_seeded));
        DatabaseRecord {
            kind: self.kind,
            version: self.version.clone(),
            command: self.command.clone(),
            url: self.url.clone(),
            rows_seeded: self.rows_seeded,
            rows_written,
            seed_s: self.seed_s,
            cpu_user_s: samples.map(|s| s.cpu_user_s),
            cpu_sys_s: samples.map(|s| s.cpu_sys_s),
            rss_peak_bytes: samples.map(|s| s.rss_peak_bytes),
            pss_peak_bytes: samples.and_then(|s| s.pss_peak_bytes),
            processes_peak: samples.map(|s| s.processes_peak),
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        // The server first (postgres::Server's own drop), then SQLite's files.
        self.server.take();
        if let Some(f) = &self.sqlite_file {
            sqlite::remove(f);
        }
    }
}

/// The app's seed script, run with the server's environment.
struct Seeder {
    script: PathBuf,
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    log: PathBuf,
}

impl Seeder {
    fn new(setup: &Setup) -> Seeder {
        Seeder {
            script: setup.app_dir.join("seed.rb"),
            cwd: setup.app_dir.to_path_buf(),
            env: setup.env.clone(),
            log: setup.dir.join("seed.log"),
        }
    }

    /// `ruby seed.rb WHAT` with DATABASE_URL; its standard output, or the
    /// script's own last words (the database's message) as the error.
    fn run(&self, what: &str, url: &str) -> Result<String, DatabaseError> {
        let out = std::process::Command::new("ruby")
            .arg(&self.script)
            .arg(what)
            .current_dir(&self.cwd)
            .envs(&self.env)
            .env("DATABASE_URL", url)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| DatabaseError::Seed {
                message: format!("cannot run ruby: {e}; apt-get install ruby"),
                script: self.script.display().to_string(),
                log: self.log.display().to_string(),
            })?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let _ = std::fs::write(&self.log, format!("{stdout}{stderr}"));
        if out.status.success() {
            return Ok(stdout);
        }
        Err(self.failed(&stderr))
    }

    fn failed(&self, output: &str) -> DatabaseError {
        let last = output
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output")
            .trim()
            .to_string();
        let message = if last.contains("cannot load such file") {
            format!("{last} (apt-get install ruby-rails ruby-sqlite3 ruby-pg)")
        } else {
            last
        };
        DatabaseError::Seed {
            message,
            script: self.script.display().to_string(),
            log: self.log.display().to_string(),
        }
    }
}

/// The number after `prefix` on the first line that starts with it.
fn parse_rows(out: &str, prefix: &str) -> Option<u64> {
    parse_line(out, prefix)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn parse_line(out: &str, prefix: &str) -> Option<String> {
    out.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_parse_and_unknown_ones_name_the_choices() {
        for (text, want) in [
            ("sqlite", Ok(Kind::Sqlite)),
            ("sqlite3", Ok(Kind::Sqlite)),
            ("postgres", Ok(Kind::Postgres)),
            ("postgresql", Ok(Kind::Postgres)),
            ("mysql", Err("sqlite, postgres")),
        ] {
            match (text.parse::<Kind>(), want) {
                (Ok(k), Ok(w)) => assert_eq!(k, w, "{text}"),
                (Err(e), Err(w)) => assert!(e.contains(w) && e.contains(text), "{e}"),
                (got, want) => panic!("{text}: {got:?} vs {want:?}"),
            }
        }
    }

    #[test]
    fn the_seed_scripts_counts_are_read_from_its_own_lines() {
        let out = "seeded 6050 rows\ndatabase SQLite 3.40.1\n";
        assert_eq!(parse_rows(out, "seeded "), Some(6050));
        assert_eq!(
            parse_line(out, "database ").as_deref(),
            Some("SQLite 3.40.1")
        );
        assert_eq!(parse_rows("rows 6061\n", "rows "), Some(6061));
        assert_eq!(parse_rows("nothing\n", "rows "), None);
        assert_eq!(parse_rows("rows many\n", "rows "), None);
    }
}
