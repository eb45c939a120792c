//! The database behind an app that needs one (the `blog` app): SQLite, a
//! file in the trial's directory, or PostgreSQL, a real server started for
//! the trial (`postgres.rs`). Either is seeded by the app's own seed script
//! (`seed.rb seed`, run with the server's environment) before the server
//! starts, so every trial (each repeat among them) begins from the same
//! rows; after the load the rows are counted again (`seed.rb count`) and
//! the difference is what the load wrote. The seed runs on the trial's
//! runtime ([`SeedRuby`]: its Ruby, its gems, inside its root), the Ruby
//! the server will run on, and says which Ruby and ActiveRecord it was.
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

pub use setup::{DatabaseError, Kind, SeedRuby, Setup, BIN_ENV};

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
    /// The seed process's `RUBY_DESCRIPTION` and ActiveRecord version.
    pub seed_ruby: Option<String>,
    pub seed_activerecord: Option<String>,
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
    /// The runtime whose Ruby ran the seed (the trial's: `system`,
    /// `debian-13`, a user's name).
    #[serde(default)]
    pub seed_runtime: String,
    /// The seed process's own `RUBY_DESCRIPTION`; None from a seed script
    /// that does not print it.
    #[serde(default)]
    pub seed_ruby: Option<String>,
    /// The ActiveRecord version the seed loaded ("6.1.7.10").
    #[serde(default)]
    pub seed_activerecord: Option<String>,
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
            seed_ruby: parse_line(&out, "ruby "),
            seed_activerecord: parse_line(&out, "activerecord "),
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
            seed_runtime: self.seed.ruby.runtime.clone(),
            seed_ruby: self.seed_ruby.clone(),
            seed_activerecord: self.seed_activerecord.clone(),
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

/// The app's seed script, run with the server's environment and Ruby.
struct Seeder {
    script: PathBuf,
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    log: PathBuf,
    ruby: SeedRuby,
}

impl Seeder {
    fn new(setup: &Setup) -> Seeder {
        Seeder {
            script: setup.app_dir.join("seed.rb"),
            cwd: setup.app_dir.to_path_buf(),
            env: setup.env.clone(),
            log: setup.dir.join("seed.log"),
            ruby: setup.ruby.clone(),
        }
    }

    /// `ruby seed.rb WHAT` with DATABASE_URL, as the runtime runs Ruby
    /// (its root entered when spawned); not started.
    fn command(&self, what: &str, url: &str) -> Result<std::process::Command, DatabaseError> {
        let (program, before) = self
            .ruby
            .command
            .split_first()
            .ok_or_else(|| self.error("the runtime gave no Ruby command".into()))?;
        let mut cmd = std::process::Command::new(program);
        cmd.args(before)
            .arg(&self.script)
            .arg(what)
            .current_dir(&self.cwd)
            .envs(&self.env)
            .env("DATABASE_URL", url)
            .stdin(std::process::Stdio::null());
        if let Some(root) = &self.ruby.root {
            crate::server::rootfs::RootFs::new(root)
                .map_err(|why| self.error(why))?
                .apply(&mut cmd);
        }
        Ok(cmd)
    }

    /// The seed run; its standard output, or the script's own last words
    /// (the database's message) as the error.
    fn run(&self, what: &str, url: &str) -> Result<String, DatabaseError> {
        let out = self.command(what, url)?.output().map_err(|e| {
            let why = match &self.ruby.root {
                Some(root) => crate::server::rootfs::RootFs::new(root)
                    .map(|fs| fs.explain(&e))
                    .unwrap_or_else(|w| w),
                None => e.to_string(),
            };
            self.error(format!(
                "cannot run {} (runtime {}): {why}",
                self.ruby.command.join(" "),
                self.ruby.runtime
            ))
        })?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let _ = std::fs::write(&self.log, format!("{stdout}{stderr}"));
        if out.status.success() {
            return Ok(stdout);
        }
        Err(self.failed(&stderr))
    }

    /// The error for a seed that printed `output`: a gem it could not load
    /// (Ruby's LoadError, or Bundler's), with the runtime's way to add the
    /// gems, else the script's last line (the database's message). Ruby
    /// prints the LoadError first and its backtrace after, so it is
    /// looked for on every line.
    fn failed(&self, output: &str) -> DatabaseError {
        const MISSING: &[&str] = &["cannot load such file", "Could not find gem"];
        let lines = || output.lines().map(str::trim).filter(|l| !l.is_empty());
        if let Some(line) = lines().find(|l| MISSING.iter().any(|m| l.contains(m))) {
            // "<internal:...>:136:in `require': cannot load such file -- x (LoadError)"
            let what = MISSING
                .iter()
                .find_map(|m| line.find(m))
                .map_or(line, |at| &line[at..]);
            return self.error(format!(
                "{what} (the seed ran on runtime {}, which lacks the app's gems: {})",
                self.ruby.runtime, self.ruby.add_gems
            ));
        }
        self.error(lines().next_back().unwrap_or("no output").to_string())
    }

    fn error(&self, message: String) -> DatabaseError {
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

    fn seeder(ruby: SeedRuby) -> Seeder {
        Seeder {
            script: PathBuf::from("/app/seed.rb"),
            cwd: PathBuf::from("/app"),
            env: BTreeMap::from([("PATH".to_string(), "/opt/ruby/bin:/usr/bin".to_string())]),
            log: PathBuf::from("/trial/seed.log"),
            ruby,
        }
    }

    #[test]
    fn the_seed_runs_the_runtimes_ruby_command_with_the_servers_environment() {
        // A root filesystem as RootFs wants one: its /usr and /etc.
        let root = std::env::temp_dir().join(format!("rackbench-seed-root-{}", std::process::id()));
        for d in ["usr/bin", "etc"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let bundled = SeedRuby {
            runtime: "bundled".into(),
            command: vec![
                "/opt/ruby/bin/bundle".into(),
                "exec".into(),
                "/opt/ruby/bin/ruby".into(),
            ],
            root: None,
            add_gems: "add gem \"rails\" to /app/Gemfile and run bundle install".into(),
        };
        let rooted = SeedRuby {
            runtime: "debian-13".into(),
            command: vec!["/usr/bin/ruby".into()],
            root: Some(root.clone()),
            add_gems: "rackbench runtime add debian-13 --with ruby-rails".into(),
        };
        for (ruby, program, args) in [
            (SeedRuby::host(), "ruby", vec!["/app/seed.rb", "seed"]),
            (
                bundled,
                "/opt/ruby/bin/bundle",
                vec!["exec", "/opt/ruby/bin/ruby", "/app/seed.rb", "seed"],
            ),
            (
                rooted.clone(),
                "/usr/bin/ruby",
                vec!["/app/seed.rb", "seed"],
            ),
        ] {
            let cmd = seeder(ruby.clone())
                .command("seed", "sqlite3:/t/blog.sqlite3")
                .unwrap();
            assert_eq!(cmd.get_program(), program, "{}", ruby.runtime);
            let got: Vec<_> = cmd.get_args().map(|a| a.to_str().unwrap()).collect();
            assert_eq!(got, args, "{}", ruby.runtime);
            let env: BTreeMap<_, _> = cmd
                .get_envs()
                .map(|(k, v)| (k.to_str().unwrap(), v.and_then(|v| v.to_str())))
                .collect();
            assert_eq!(env["DATABASE_URL"], Some("sqlite3:/t/blog.sqlite3"));
            assert_eq!(env["PATH"], Some("/opt/ruby/bin:/usr/bin"));
            assert_eq!(cmd.get_current_dir(), Some(std::path::Path::new("/app")));
        }
        // A root that is no root filesystem is refused before anything
        // runs, with the way to rebuild it.
        let broken = SeedRuby {
            root: Some(root.join("usr/bin")),
            ..rooted
        };
        let e = seeder(broken).command("seed", "x").unwrap_err().to_string();
        assert!(e.contains("rackbench runtime add"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_seed_without_the_apps_gems_names_its_runtime_and_that_runtimes_way_to_add_them() {
        let root = SeedRuby {
            runtime: "debian-13".into(),
            command: vec!["/usr/bin/ruby".into()],
            root: None,
            add_gems: "rebuild the root with them: rackbench runtime remove debian-13 && rackbench runtime add debian-13 --with ruby-rails".into(),
        };
        for (ruby, output, want) in [
            (
                SeedRuby::host(),
                "<internal:kernel_require.rb>:85:in `require': cannot load such file -- active_record (LoadError)\n\tfrom <internal:kernel_require.rb>:85:in `require'\n\tfrom /app/seed.rb:8:in `<main>'\n",
                vec![
                    "seed failed: cannot load such file -- active_record (LoadError) (the seed ran on runtime system",
                    "apt-get install ruby-rails ruby-sqlite3 ruby-pg",
                ],
            ),
            (
                root,
                "/app/seed.rb:8: cannot load such file -- active_record (LoadError)\n\tfrom /app/seed.rb:8:in `<main>'\n",
                vec![
                    "seed failed: cannot load such file -- active_record (LoadError) (the seed ran on runtime debian-13",
                    "rackbench runtime add debian-13 --with ruby-rails",
                ],
            ),
            (
                SeedRuby::host(),
                "blog seed failed: UNIQUE constraint failed\n",
                vec!["blog seed failed: UNIQUE constraint failed"],
            ),
            (
                SeedRuby::host(),
                "Could not find gem 'rails' in locally installed gems.\n",
                vec!["Could not find gem 'rails'", "runtime system"],
            ),
        ] {
            let e = seeder(ruby).failed(output).to_string();
            for w in want {
                assert!(e.contains(w), "{e}");
            }
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        let plain = seeder(SeedRuby::host())
            .failed("blog seed failed: x")
            .to_string();
        assert!(!plain.contains("apt-get"), "{plain}");
    }

    #[test]
    fn the_seed_scripts_counts_are_read_from_its_own_lines() {
        let out = "seeded 6050 rows\ndatabase SQLite 3.40.1\nruby ruby 3.3.8 (2025-04-09 revision b200bad6cd) +PRISM [x86_64-linux-gnu]\nactiverecord 6.1.7.10\n";
        assert_eq!(parse_rows(out, "seeded "), Some(6050));
        assert_eq!(
            parse_line(out, "database ").as_deref(),
            Some("SQLite 3.40.1")
        );
        assert!(parse_line(out, "ruby ").unwrap().starts_with("ruby 3.3.8 "));
        assert_eq!(
            parse_line(out, "activerecord ").as_deref(),
            Some("6.1.7.10")
        );
        assert_eq!(parse_rows("rows 6061\n", "rows "), Some(6061));
        assert_eq!(parse_rows("nothing\n", "rows "), None);
        assert_eq!(parse_rows("rows many\n", "rows "), None);
    }
}
