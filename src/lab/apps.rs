//! The test Rack apps and their known-good answers.
//!
//! The built-in apps are compiled in and written into each trial's
//! directory, so every server runs the very same rackup file. Each has an
//! answer the lab verifies before any load (like TechEmpower's verify
//! step): a wrong answer stops the trial, never a fast benchmark of an
//! error page.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum AppError {
    #[error("unknown app '{name}'; built in: {known}; or give a rackup file path (with --app-expect-body to check its answer)")]
    Unknown { name: String, known: String },
    #[error("rackup file {path}: file not found; give the path of an existing .ru file, or a built-in app ({known})")]
    NotFound { path: String, known: String },
    #[error("{path} is not a rackup file: give a path ending in .ru")]
    NotRackup { path: String },
    #[error("cannot write app {name} into {dir}: {source}")]
    Write {
        name: String,
        dir: String,
        source: std::io::Error,
    },
}

/// One app as a trial uses it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AppSpec {
    pub name: String,
    /// Request path and query the load and the verify step use.
    pub path: String,
    pub expect_status: u16,
    /// Substring the body must contain.
    pub expect_body: String,
    /// A user's rackup file; None for a built-in app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// The request's method, GET unless a trial asked otherwise (`-m`).
    #[serde(default = "get", skip_serializing_if = "is_get")]
    pub method: String,
    /// Extra request headers, "Name: value" (`-H`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// The request body (`--body`, `--body-file`), as text in records.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "lossy_text")]
    pub body: Vec<u8>,
    /// The most body bytes the answer check reads (`--check-max-body`);
    /// a check, not a property of the app, so never in a record.
    #[serde(skip, default = "default_check_max_body")]
    pub check_max_body_bytes: u64,
}

fn default_check_max_body() -> u64 {
    crate::server::probe::DEFAULT_MAX_BODY_BYTES
}

fn get() -> String {
    "GET".into()
}
fn is_get(m: &String) -> bool {
    m == "GET"
}

/// A body stored as text (lossy beyond UTF-8: records are for reading, the
/// bytes sent come from the command line).
mod lossy_text {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&String::from_utf8_lossy(b))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        Ok(String::deserialize(d)?.into_bytes())
    }
}

struct Builtin {
    name: &'static str,
    source: &'static str,
    path: &'static str,
    expect_body: &'static str,
    /// Further files of a multi-file app, by path under its directory.
    files: &'static [(&'static str, &'static str)],
    /// Whether it needs a database (`crate::database`).
    database: bool,
    /// The app's own settings (`--set`): name, default, the environment
    /// variable that carries it to the app.
    settings: &'static [AppSetting],
}

/// A setting of the app rather than of the server (`--set pool=5`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppSetting {
    pub name: &'static str,
    /// The value without `--set`; "" for none (no variable is set).
    pub default: &'static str,
    /// The variable the app reads it from; "" for a setting rackbench
    /// itself reads (`db_port`).
    pub env: &'static str,
}

/// A one-file app: no further files, no database, no settings.
const fn one_file(
    name: &'static str,
    source: &'static str,
    path: &'static str,
    expect_body: &'static str,
) -> Builtin {
    Builtin {
        name,
        source,
        path,
        expect_body,
        files: &[],
        database: false,
        settings: &[],
    }
}

/// The blog's files beside its config.ru.
const BLOG_FILES: &[(&str, &str)] = &[
    ("models.rb", include_str!("../../ruby/apps/blog/models.rb")),
    ("seed.rb", include_str!("../../ruby/apps/blog/seed.rb")),
    ("mix.toml", include_str!("../../ruby/apps/blog/mix.toml")),
    (
        "views/layouts/application.html.erb",
        include_str!("../../ruby/apps/blog/views/layouts/application.html.erb"),
    ),
    (
        "views/posts/index.html.erb",
        include_str!("../../ruby/apps/blog/views/posts/index.html.erb"),
    ),
    (
        "views/posts/_post.html.erb",
        include_str!("../../ruby/apps/blog/views/posts/_post.html.erb"),
    ),
    (
        "views/posts/show.html.erb",
        include_str!("../../ruby/apps/blog/views/posts/show.html.erb"),
    ),
];

/// The blog's settings: ActiveRecord's pool per process, and PostgreSQL's
/// port (a free one by default).
const BLOG_SETTINGS: &[AppSetting] = &[
    AppSetting {
        name: "pool",
        default: "5",
        env: "DB_POOL",
    },
    AppSetting {
        name: "db_port",
        default: "",
        env: "",
    },
];

/// The blog's own request mix (docs/MIX_FORMAT.md), as shipped in its
/// directory: `ruby/apps/blog/mix.toml`.
pub const BLOG_MIX: &str = include_str!("../../ruby/apps/blog/mix.toml");

const BUILTIN: &[Builtin] = &[
    one_file(
        "hello",
        include_str!("../../ruby/apps/hello.ru"),
        "/",
        "hello world",
    ),
    one_file(
        "ip",
        include_str!("../../ruby/apps/ip.ru"),
        "/",
        "127.0.0.1",
    ),
    one_file(
        "sleep",
        include_str!("../../ruby/apps/sleep.ru"),
        "/?ms=100",
        "slept 100 ms",
    ),
    // The sleep app waiting 1 ms, like a fast database query: short
    // enough that a one-request-at-a-time server answers the thousand
    // responses a p99 needs within a second, long enough that servers
    // which overlap waits (threads) pull ahead of those that cannot.
    one_file(
        "sleep-1ms",
        include_str!("../../ruby/apps/sleep.ru"),
        "/?ms=1",
        "slept 1 ms",
    ),
    // Puma's long-tail shape (benchmarks/local/long_tail_hey): each
    // request holds its thread 200 ms, so 4 workers x 5 threads serve at
    // most 100 a second and N connections wait N / 100 s on average.
    one_file(
        "sleep-200ms",
        include_str!("../../ruby/apps/sleep.ru"),
        "/?ms=200",
        "slept 200 ms",
    ),
    one_file(
        "fib",
        include_str!("../../ruby/apps/fib.ru"),
        "/",
        "fib(25) = 75025",
    ),
    one_file(
        "rails",
        include_str!("../../ruby/apps/rails/config.ru"),
        "/",
        "hello world",
    ),
    // The Rails app's second route, not a file of its own.
    one_file(
        "rails-fib",
        include_str!("../../ruby/apps/rails/config.ru"),
        "/fib",
        "fib(25) = 75025",
    ),
    one_file(
        "primes",
        include_str!("../../ruby/apps/primes.ru"),
        "/",
        "sum of the first 1000 primes = 3682913",
    ),
    // Budgets' ground truth: MEMORY_PER_WORKER held per process,
    // CPU_PER_REQUEST_MS of CPU per request (env).
    one_file(
        "memory",
        include_str!("../../ruby/apps/memory.ru"),
        "/",
        "memory app: holds",
    ),
    // Soaks' ground truth: LEAK_BYTES_PER_REQUEST held forever per
    // request (env).
    one_file(
        "leak",
        include_str!("../../ruby/apps/leak.ru"),
        "/",
        "leak app:",
    ),
    one_file(
        "gc-profiler",
        include_str!("../../ruby/apps/gc-profiler.ru"),
        "/",
        "rendered 200 rows",
    ),
    // A database-backed Rails app (issue 30): its files, its database
    // seeded before the server starts, its pool a setting.
    Builtin {
        name: "blog",
        source: include_str!("../../ruby/apps/blog/config.ru"),
        path: "/posts",
        expect_body: "rendered 25 posts",
        files: BLOG_FILES,
        database: true,
        settings: BLOG_SETTINGS,
    },
];

pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|b| b.name).collect()
}

impl AppSpec {
    /// A built-in app by name, or a user's rackup file by path (`*.ru`).
    pub fn resolve(name_or_path: &str) -> Result<AppSpec, AppError> {
        if let Some(b) = BUILTIN.iter().find(|b| b.name == name_or_path) {
            return Ok(AppSpec {
                name: b.name.to_string(),
                path: b.path.to_string(),
                expect_status: 200,
                expect_body: b.expect_body.to_string(),
                file: None,
                method: get(),
                headers: Vec::new(),
                body: Vec::new(),
                check_max_body_bytes: default_check_max_body(),
            });
        }
        let p = Path::new(name_or_path);
        let looks_like_path = name_or_path.ends_with(".ru") || name_or_path.contains('/');
        if looks_like_path && !p.is_file() {
            return Err(AppError::NotFound {
                path: name_or_path.to_string(),
                known: builtin_names().join(", "),
            });
        }
        if looks_like_path && !name_or_path.ends_with(".ru") {
            return Err(AppError::NotRackup {
                path: name_or_path.to_string(),
            });
        }
        if looks_like_path {
            let name = p
                .file_stem()
                .map_or("app".into(), |s| s.to_string_lossy().into_owned());
            return Ok(AppSpec {
                name,
                path: "/".into(),
                expect_status: 200,
                expect_body: String::new(),
                file: Some(p.canonicalize().unwrap_or_else(|_| p.to_path_buf())),
                method: get(),
                headers: Vec::new(),
                body: Vec::new(),
                check_max_body_bytes: default_check_max_body(),
            });
        }
        Err(AppError::Unknown {
            name: name_or_path.to_string(),
            known: builtin_names().join(", "),
        })
    }

    /// The request the lab verifies the app with and loads it with.
    pub fn request_spec(
        &self,
        keep_alive: bool,
    ) -> Result<crate::load::RequestSpec, crate::load::target::TargetError> {
        Ok(crate::load::RequestSpec {
            method: self.method.clone(),
            headers: self
                .headers
                .iter()
                .map(|h| crate::load::target::parse_header(h))
                .collect::<Result<_, _>>()?,
            body: self.body.clone(),
            keep_alive,
        })
    }

    /// Whether the request is a bare GET of the path (the readiness probe's own).
    pub fn is_plain_get(&self) -> bool {
        self.method == "GET" && self.headers.is_empty() && self.body.is_empty()
    }

    fn builtin(&self) -> Option<&'static Builtin> {
        if self.file.is_some() {
            return None;
        }
        BUILTIN.iter().find(|b| b.name == self.name)
    }

    /// Whether the app needs a database (`--database`).
    pub fn needs_database(&self) -> bool {
        self.builtin().is_some_and(|b| b.database)
    }

    /// The app's own settings (`--set` names the server does not have).
    pub fn settings(&self) -> &'static [AppSetting] {
        match self.builtin() {
            Some(b) => b.settings,
            None => &[],
        }
    }

    /// Puts the rackup file where the server will load it and returns its
    /// absolute path. A user's file is used in place.
    pub fn materialize(&self, dir: &Path) -> Result<PathBuf, AppError> {
        if let Some(f) = &self.file {
            return Ok(f.clone());
        }
        let b = BUILTIN
            .iter()
            .find(|b| b.name == self.name)
            .expect("resolved built-in");
        let app_dir = dir.join("app");
        let err = |e| AppError::Write {
            name: self.name.clone(),
            dir: app_dir.display().to_string(),
            source: e,
        };
        std::fs::create_dir_all(&app_dir).map_err(err)?;
        let file = app_dir.join(format!("{}.ru", b.name));
        std::fs::write(&file, b.source).map_err(err)?;
        for (path, text) in b.files {
            let f = app_dir.join(path);
            if let Some(parent) = f.parent() {
                std::fs::create_dir_all(parent).map_err(err)?;
            }
            std::fs::write(&f, text).map_err(err)?;
        }
        // Passenger looks for config.ru in the app root; give it one too.
        std::fs::write(app_dir.join("config.ru"), b.source).map_err(err)?;
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blog's own mix is one the engine reads: its six endpoints,
    /// each judged by its own answer.
    #[test]
    fn the_blogs_mix_is_read_by_the_engine() {
        let mix = crate::load::mix::Mix::parse(BLOG_MIX, "ruby/apps/blog/mix.toml")
            .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = mix.endpoints.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            ["index", "show", "api", "search", "comment", "external"]
        );
        assert!(mix.endpoints.iter().all(|e| !e.expect_body.is_empty()));
    }

    #[test]
    fn builtin_apps_state_their_answer_in_their_own_header() {
        // The rackup file's comment and the verifier must agree.
        for b in BUILTIN {
            assert!(
                b.source.contains(b.expect_body) || b.name == "sleep" || b.name == "ip",
                "{}",
                b.name
            );
            // rails-fib is another route of rails/config.ru, sleep-1ms
            // another query of sleep.ru.
            let base = b.name.split_once('-').map_or(b.name, |(d, _)| d);
            let (own, of_base, in_dir) = (
                format!("# {}.ru", b.name),
                format!("# {base}.ru"),
                format!("# {base}/config.ru"),
            );
            assert!(
                b.source.starts_with(&own)
                    || b.source.starts_with(&of_base)
                    || b.source.starts_with(&in_dir),
                "{} must open with its name",
                b.name
            );
        }
    }

    #[test]
    fn builtin_apps_are_ascii() {
        // uwsgi runs Ruby with a US-ASCII default encoding: one em dash in a
        // comment made Rack::Builder fail to parse the file.
        for b in BUILTIN {
            assert!(b.source.is_ascii(), "{}.ru must be plain ASCII", b.name);
            for (path, text) in b.files {
                assert!(text.is_ascii(), "{}'s {path} must be plain ASCII", b.name);
            }
        }
    }

    #[test]
    fn the_blog_is_written_out_whole_and_declares_its_database_and_pool() {
        let dir = std::env::temp_dir().join(format!("rackbench-blog-{}", std::process::id()));
        let app = AppSpec::resolve("blog").unwrap();
        let f = app.materialize(&dir).unwrap();
        let app_dir = f.parent().unwrap();
        for (path, _) in BLOG_FILES {
            assert!(app_dir.join(path).is_file(), "{path} not written");
        }
        assert!(app_dir.join("config.ru").is_file());
        assert!(app.needs_database());
        let pool = app.settings().iter().find(|s| s.name == "pool").unwrap();
        assert_eq!((pool.default, pool.env), ("5", "DB_POOL"));
        // The seed script and the app count the same data set.
        assert!(BLOG_FILES[0].1.contains("COMMENTS = 5000"));
        // A user's file and the other built-ins have neither.
        let hello = AppSpec::resolve("hello").unwrap();
        assert!(!hello.needs_database() && hello.settings().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unknown_app_names_the_choices() {
        let err = AppSpec::resolve("helo").unwrap_err().to_string();
        assert!(
            err.contains("hello") && err.contains("rackup file"),
            "{err}"
        );
    }

    #[test]
    fn unknown_app_points_to_the_flag_that_exists() {
        let err = AppSpec::resolve("helo").unwrap_err().to_string();
        assert!(err.contains("--app-expect-body"), "{err}");
    }

    #[test]
    fn a_missing_rackup_file_is_not_found_not_an_unknown_app() {
        for missing in ["/nonexistent/app.ru", "missing.ru", "./nope/config.ru"] {
            let err = AppSpec::resolve(missing).unwrap_err().to_string();
            assert!(
                err.contains("file not found")
                    && err.contains(missing)
                    && !err.contains("unknown app"),
                "{err}"
            );
        }
        let err = AppSpec::resolve("/etc/hostname").unwrap_err().to_string();
        assert!(err.contains("ending in .ru"), "{err}");
    }

    #[test]
    fn materialize_writes_the_rackup_file() {
        let dir = std::env::temp_dir().join(format!("rackbench-apps-{}", std::process::id()));
        let app = AppSpec::resolve("primes").unwrap();
        let f = app.materialize(&dir).unwrap();
        assert!(std::fs::read_to_string(&f).unwrap().contains("Prime"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
