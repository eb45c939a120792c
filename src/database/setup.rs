//! What the database's two kinds share with the module that runs them:
//! which one ([`Kind`]), what starting one needs ([`Setup`]) and what can
//! go wrong ([`DatabaseError`]). Starts nothing.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use thiserror::Error;

/// The environment variable that names PostgreSQL's bin directory.
pub const BIN_ENV: &str = "RACKBENCH_PG_BIN";

#[derive(Debug, Error)]
pub enum DatabaseError {
    #[error("PostgreSQL is not installed ({why}): apt-get install postgresql (or set {BIN_ENV} to the directory holding initdb and postgres)")]
    NotInstalled { why: String },
    #[error("PostgreSQL could not listen on 127.0.0.1:{port}: the port is in use; free it, or leave out --set db_port to take a free one")]
    PortInUse { port: u16 },
    #[error("PostgreSQL's {step} failed; last lines of {log}:\n{tail}")]
    Postgres {
        step: String,
        log: String,
        tail: String,
    },
    #[error("the database seed failed: {message} (the app's seed script {script}; log {log})")]
    Seed {
        message: String,
        script: String,
        log: String,
    },
    #[error("interrupted while starting the database")]
    Interrupted,
    #[error("cannot prepare the database in {dir}: {source}")]
    Io { dir: String, source: std::io::Error },
}

/// Which database serves the app (`--database`, a plan's `database`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Embedded, a file in the trial's directory.
    #[default]
    Sqlite,
    /// Debian's PostgreSQL, started and stopped by the trial.
    Postgres,
}

impl Kind {
    pub const NAMES: &'static str = "sqlite, postgres";

    pub fn name(self) -> &'static str {
        match self {
            Kind::Sqlite => "sqlite",
            Kind::Postgres => "postgres",
        }
    }
}

impl std::str::FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        match s {
            "sqlite" | "sqlite3" => Ok(Kind::Sqlite),
            "postgres" | "postgresql" => Ok(Kind::Postgres),
            _ => Err(format!(
                "unknown database '{s}': give one of {}",
                Kind::NAMES
            )),
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What starting a database needs from the trial.
pub struct Setup<'a> {
    pub kind: Kind,
    /// The trial's directory: the SQLite file, PostgreSQL's data directory
    /// and logs go here.
    pub dir: &'a Path,
    /// A short directory for PostgreSQL's unix socket (107 bytes at most).
    pub run_dir: &'a Path,
    /// Where the app's seed script (`seed.rb`) is.
    pub app_dir: &'a Path,
    /// The server's environment (PATH, the trial's --env): the seed runs
    /// with it.
    pub env: &'a BTreeMap<String, String>,
    /// The Ruby the seed runs with: the trial's runtime's.
    pub ruby: &'a SeedRuby,
    /// PostgreSQL's port (`--set db_port`); None for a free one.
    pub port: Option<u16>,
    pub grace: Duration,
    pub interrupt: &'a AtomicBool,
}

/// The Ruby the seed script runs with: the trial's runtime's own, in its
/// root and through its `bundle exec`, so the seed loads the Ruby and gems
/// (ActiveRecord, sqlite3, pg) the server will, never the host's by
/// accident. Plain data: the lab fills it from the runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedRuby {
    /// The runtime's name (`system`, `debian-13`, a user's name).
    pub runtime: String,
    /// The program and the arguments before the script: `ruby`,
    /// `/usr/bin/ruby` (inside a root), `bundle exec /opt/ruby/bin/ruby`.
    pub command: Vec<String>,
    /// A root filesystem the seed enters first (a Debian release root).
    pub root: Option<PathBuf>,
    /// How to give this runtime the app's gems, for the message of a seed
    /// that cannot load them.
    pub add_gems: String,
}

impl SeedRuby {
    /// The host's `ruby` with Debian's packages: the seed as it ran before
    /// runtimes.
    pub fn host() -> SeedRuby {
        SeedRuby {
            runtime: "system".into(),
            command: vec!["ruby".into()],
            root: None,
            add_gems: "apt-get install ruby-rails ruby-sqlite3 ruby-pg".into(),
        }
    }
}
