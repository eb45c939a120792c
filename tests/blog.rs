//! The blog app (issue 30) on Debian's servers and both databases: each
//! endpoint's answer on puma, unicorn, thin and passenger over SQLite and
//! PostgreSQL (a lab server started as a trial starts it, then a plain
//! HTTP client); PostgreSQL started and stopped with nothing left, after a
//! trial and after Ctrl-C; bad input (PostgreSQL missing, its port in use,
//! a failing seed); the rows a POST-only load wrote; the pool wait with
//! more threads than connections, and without; a plan's `database` and
//! pool through `rackbench run`; the seed on the trial's runtime (a
//! user's Ruby behind a wrapper that writes down its calls, a Gemfile's
//! `bundle exec` with Rails and without, the Debian 13 root, whose Ruby
//! has no Rails, and one built with Debian's Rails 7.2 in
//! `runtimes-rails` beside the default runtimes directory, built once).
//!
//! Its own test target (`cargo test --test blog`). Rails, PostgreSQL and
//! each server are asked for with `rackbench::require`: a missing one
//! skips with a `SKIP:` line, or fails under `RACKBENCH_REQUIRE=all`.

mod common;

use common::schema::assert_valid;
use rackbench::database::Kind;
use rackbench::lab::apps::AppSpec;
use rackbench::lab::trial::{start_server, Topology, TrialSpec};
use rackbench::load::{Endpoint, LoadConfig};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SERVERS: &[&str] = &["puma", "unicorn", "thin", "passenger"];

/// Rails 6.1 with both database drivers, from Debian.
fn have_rails() -> bool {
    let there = Command::new("ruby")
        .args([
            "-e",
            "require 'rails'; require 'active_record'; require 'sqlite3'; require 'pg'",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    rackbench::require::require(
        "rails",
        there,
        "apt-get install ruby-rails ruby-sqlite3 ruby-pg",
    )
}

fn have_postgres() -> bool {
    let there = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("bin/postgres").is_file());
    rackbench::require::require("postgresql", there, "apt-get install postgresql")
}

fn have_server(name: &str) -> bool {
    let reg = rackbench::server::spec::Registry::builtin();
    let there = reg.get(name).is_ok_and(|s| s.installed());
    rackbench::require::require(name, there, &format!("apt-get install {name}"))
}

/// A blog trial's spec as `rackbench trial --app blog` builds it.
fn spec(server: &str, database: Kind, dir: PathBuf) -> TrialSpec {
    let reg = rackbench::server::spec::Registry::builtin();
    TrialSpec {
        server: reg.get(server).unwrap().clone(),
        app: AppSpec::resolve("blog").unwrap(),
        workers: None,
        threads: None,
        settings: Default::default(),
        env: Vec::new(),
        topology: Topology::Direct,
        load: LoadConfig::get("http://127.0.0.1:1/").unwrap(),
        server_cpus: Vec::new(),
        start_timeout: Some(Duration::from_secs(120)),
        grace: Duration::from_secs(10),
        dir,
        interrupt: Arc::new(AtomicBool::new(false)),
        sample_interval: Duration::from_millis(200),
        stop_on_errors: false,
        telemetry: false,
        runtime: None,
        switches: Default::default(),
        budget: None,
        restart: None,
        soak: None,
        database: Some(database),
        profile: None,
    }
}

/// One HTTP/1.1 request on a fresh connection: (status, body).
fn request(at: &Endpoint, method: &str, path: &str, body: &str) -> (u16, String) {
    let Endpoint::Tcp(addr) = at else {
        panic!("a direct server listens on TCP")
    };
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

/// No postgres process of this trial directory, and no data directory.
fn assert_nothing_left(dir: &Path, what: &str) {
    let data = dir.join("postgres-data");
    let needle = data.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_mentioning(&needle).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        processes_mentioning(&needle).is_empty(),
        "{what}: a postgres process of {needle} is still running"
    );
    assert!(!data.exists(), "{what}: {needle} was left behind");
}

/// Every endpoint of the blog: (method, path, body, status, body substring).
const ENDPOINTS: &[(&str, &str, &str, u16, &str)] = &[
    ("GET", "/posts", "", 200, "rendered 25 posts"),
    (
        "GET",
        "/posts?page=40",
        "",
        200,
        "page 40: rendered 25 posts",
    ),
    ("GET", "/posts/7", "", 200, "<h1>Post 7:"),
    ("GET", "/api/posts/7.json", "", 200, "\"id\":7"),
    (
        "GET",
        "/search?q=latency",
        "",
        200,
        "comments matching latency",
    ),
    (
        "POST",
        "/posts/7/comments",
        "comment%5Bbody%5D=hello",
        201,
        "created comment 5001 on post 7",
    ),
    ("GET", "/posts/7", "", 200, "hello"),
    (
        "GET",
        "/external",
        "",
        200,
        "external service answered in 20 ms",
    ),
    ("GET", "/posts/99999", "", 404, ""),
];

#[test]
fn every_endpoint_answers_on_each_server_over_sqlite_and_postgres() {
    if !have_rails() {
        return;
    }
    let pg = have_postgres();
    for server in SERVERS {
        if !have_server(server) {
            continue;
        }
        for db in [Kind::Sqlite, Kind::Postgres] {
            if db == Kind::Postgres && !pg {
                continue;
            }
            let tag = format!("{server}-{db}");
            let dir = common::work_dir(&format!("blog-ep-{tag}"));
            let lab = start_server(&spec(server, db, dir.clone()))
                .unwrap_or_else(|e| panic!("{tag}: {e}"));
            for (method, path, body, status, want) in ENDPOINTS {
                let (got, text) = request(&lab.endpoint, method, path, body);
                assert_eq!(got, *status, "{tag}: {method} {path}: {text}");
                assert!(text.contains(want), "{tag}: {method} {path}: {text}");
            }
            lab.stop();
            // Passenger's temp-dir toucher daemonizes out of the server's
            // tree: a trial's stop takes it (rackbench is its subreaper),
            // a LabServer's stop does not, and this test process must not
            // stop every orphan it holds (other tests' servers). It names
            // the trial directory in its arguments: end it by pid.
            for pid in processes_mentioning(&dir.display().to_string()) {
                // SAFETY: a process this test started, by its pid.
                unsafe { libc::kill(pid as i32, libc::SIGTERM) };
            }
            assert_nothing_left(&dir, &tag);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// `rackbench trial --app blog ARGS --json` in `dir`: its output.
fn trial(dir: &Path, args: &[&str]) -> std::process::Output {
    common::rackbench_cmd()
        .args(["trial", "--app", "blog", "--no-pin", "--json", "--work-dir"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap()
}

/// [`trial`]'s record, checked against trial-v1.
fn record(dir: &Path, args: &[&str], tag: &str) -> Value {
    let r = common::stdout_json(&trial(dir, args), &format!("{tag}: {args:?}"));
    assert_valid("trial-v1", &r, tag);
    r
}

#[test]
fn a_postgres_trial_records_its_database_and_leaves_nothing_running() {
    if !have_rails() || !have_postgres() || !have_server("puma") {
        return;
    }
    let dir = common::scratch("blog-pg-trial");
    let r = record(
        &dir,
        &[
            "--server",
            "puma",
            "--database",
            "postgres",
            "-c",
            "4",
            "-d",
            "2s",
            "--warmup",
            "1s",
        ],
        "postgres trial",
    );
    let db = &r["database"];
    assert_eq!(db["kind"], "postgres", "{db}");
    assert_eq!(db["rows_seeded"], 6050, "{db}");
    assert_eq!(db["rows_written"], 0, "GETs write nothing: {db}");
    assert!(
        db["version"].as_str().unwrap().starts_with("PostgreSQL "),
        "{db}"
    );
    assert!(
        db["cpu_user_s"].as_f64().unwrap() > 0.0,
        "postgres served queries: {db}"
    );
    assert!(db["processes_peak"].as_u64().unwrap() >= 2, "{db}");
    assert!(r["load"]["requests"]["ok"].as_u64().unwrap() > 0);
    assert_nothing_left(&dir, "after the trial");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_during_a_postgres_trial_stops_postgres_and_removes_its_data() {
    if !have_rails() || !have_postgres() || !have_server("puma") {
        return;
    }
    let dir = common::scratch("blog-pg-ctrlc");
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = common::rackbench_cmd()
        .args([
            "trial",
            "--app",
            "blog",
            "--no-pin",
            "--server",
            "puma",
            "--database",
            "postgres",
        ])
        .args(["-c", "2", "-d", "60s", "--work-dir"])
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the server to be up (its log exists once postgres is
    // seeded and the server started), then a moment of load.
    let deadline = Instant::now() + Duration::from_secs(120);
    let server_log = |d: &Path| {
        std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with("server") && n.ends_with(".log")
            })
    };
    while !server_log(&dir) {
        assert!(
            Instant::now() < deadline,
            "the trial never started its server"
        );
        assert!(child.try_wait().unwrap().is_none(), "the trial ended early");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        !processes_mentioning(&dir.join("postgres-data").display().to_string()).is_empty(),
        "postgres should be running mid-trial"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(
        status.code().is_some(),
        "rackbench ended by itself: {status}"
    );
    assert_nothing_left(&dir, "after Ctrl-C");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_database_input_stops_the_trial_in_one_line_that_names_the_fix() {
    if !have_rails() || !have_server("puma") {
        return;
    }
    let base = ["--server", "puma", "-c", "1", "-d", "1s", "--warmup", "0s"];
    let dir = common::scratch("blog-bad");
    // PostgreSQL missing: its bin directory pointed at nothing.
    let out = common::rackbench_cmd()
        .args([
            "trial",
            "--app",
            "blog",
            "--no-pin",
            "--database",
            "postgres",
            "--work-dir",
        ])
        .arg(&dir)
        .args(base)
        .env(rackbench::database::BIN_ENV, "/nonexistent/postgresql/bin")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("PostgreSQL is not installed") && err.contains("apt-get install postgresql"),
        "{err}"
    );
    // A database for an app without one.
    let out = common::rackbench(&[
        "trial",
        "--server",
        "puma",
        "--app",
        "hello",
        "--database",
        "postgres",
        "-d",
        "1s",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("uses no database") && err.contains("--app blog"),
        "{err}"
    );
    // A pool that is no number.
    let out = trial(&dir, &[&base[..], &["--set", "pool=many"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--set pool=many") && err.contains("whole number"),
        "{err}"
    );
    // A seed that fails: SQLite's own message.
    let out = trial(
        &dir,
        &[
            &base[..],
            &["--env", "BLOG_SEED_EXTRA_SQL=SELECT * FROM no_such_table"],
        ]
        .concat(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("seed failed") && err.contains("no such table: no_such_table"),
        "{err}"
    );
    if have_postgres() {
        // The same on PostgreSQL, in its words.
        let out = trial(
            &dir,
            &[
                &base[..],
                &[
                    "--database",
                    "postgres",
                    "--env",
                    "BLOG_SEED_EXTRA_SQL=SELECT * FROM no_such_table",
                ],
            ]
            .concat(),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("relation \"no_such_table\" does not exist"),
            "{err}"
        );
        assert_nothing_left(&dir, "after a failed seed");
        // Its port held by someone else.
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = held.local_addr().unwrap().port().to_string();
        let set = format!("db_port={port}");
        let out = trial(
            &dir,
            &[&base[..], &["--database", "postgres", "--set", &set]].concat(),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("127.0.0.1:{port}: the port is in use")),
            "{err}"
        );
        assert_nothing_left(&dir, "after a port in use");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_post_only_load_writes_as_many_rows_as_it_got_answers() {
    if !have_rails() || !have_server("puma") {
        return;
    }
    let dir = common::scratch("blog-writes");
    // One connection: two writers on SQLite wait on each other's lock
    // (the driver's busy timeout), and a CI run once got only 10 answers
    // in 2 s that way; the claim here is rows against answers.
    let r = record(
        &dir,
        &[
            "--server",
            "puma",
            "-c",
            "1",
            "-d",
            "2s",
            "--warmup",
            "0s",
            "-m",
            "POST",
            "--app-path",
            "/posts/3/comments",
            "--body",
            "comment%5Bbody%5D=load",
            "-H",
            "Content-Type: application/x-www-form-urlencoded",
            "--expect-status",
            "201",
            "--expect-body",
            "created comment",
        ],
        "writes",
    );
    let ok = r["load"]["requests"]["ok"].as_u64().unwrap();
    let written = r["database"]["rows_written"].as_u64().unwrap();
    assert!(ok > 10, "{}", r["load"]["requests"]);
    // Every answered POST wrote one row; the verify step's and the
    // warm-up's and any unanswered at the end may add a few.
    assert!(
        written >= ok && written <= ok + 20,
        "{written} rows for {ok} answers"
    );
    assert_eq!(r["database"]["kind"], "sqlite");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Pool wait p90 (µs) of a telemetry trial of the slow search with 10
/// puma threads, 10 connections and `pool` connections in the pool.
fn pool_wait_p90(pool: &str) -> f64 {
    let dir = common::scratch(&format!("blog-pool-{pool}"));
    let set = format!("pool={pool}");
    let r = record(
        &dir,
        &[
            "--server",
            "puma",
            "--threads",
            "10",
            "--set",
            &set,
            "--telemetry",
            "--app-path",
            "/search?q=latency",
            "--app-expect-body",
            "comments matching",
            "-c",
            "10",
            "-d",
            "3s",
            "--warmup",
            "1s",
        ],
        &format!("pool {pool}"),
    );
    assert_eq!(
        r["server"]["env"]["DB_POOL"], pool,
        "the setting reaches the app"
    );
    let t = &r["server_metrics"]["telemetry"];
    assert!(t["db_requests"].as_u64().unwrap() > 0, "{t}");
    assert!(t["db_us"]["p50"].as_f64().unwrap() > 0.0, "{t}");
    let _ = std::fs::remove_dir_all(&dir);
    t["pool_wait_us"]["p90"].as_f64().unwrap()
}

#[test]
fn ten_threads_wait_for_a_pool_of_two_and_not_for_a_pool_of_ten() {
    if !have_rails() || !have_server("puma") {
        return;
    }
    let two = pool_wait_p90("2");
    let ten = pool_wait_p90("10");
    eprintln!("pool wait p90: {two} us with a pool of 2, {ten} us with 10");
    assert!(two > 1000.0, "pool 2: p90 wait {two} us");
    assert!(
        ten < 300.0 && ten * 10.0 < two,
        "pool 10: p90 wait {ten} us vs {two}"
    );
}

#[test]
fn a_plan_names_its_database_and_pool_and_the_runner_starts_them() {
    if !have_rails() || !have_postgres() || !have_server("puma") {
        return;
    }
    let plan = common::Plan::write(
        "blog-plan",
        "plan.toml",
        "name = \"blog-pg\"\napps = [\"blog\"]\ndatabase = \"postgres\"\n[[server]]\nname = \"puma\"\nthreads = [4]\nsettings = { pool = \"2\" }\n[load]\nconnections = [4]\nduration = \"2s\"\nwarmup = \"1s\"\n",
    );
    plan.run_ok(&["--no-pin"]);
    let (_, stored) = plan.docs("trials").into_iter().next().expect("one trial");
    assert_valid("run-trial-v1", &stored, "plan's trial");
    let r = &stored["trial"];
    assert_eq!(r["database"]["kind"], "postgres");
    assert_eq!(r["server"]["env"]["DB_POOL"], "2");
    assert_eq!(r["server"]["settings"]["pool"], "2");
    let work = std::fs::read_dir(plan.out.join("work"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    assert_nothing_left(&work, "after the plan's trial");
    let _ = std::fs::remove_dir_all(&plan.dir);
}

/// A blog trial on `runtime`, with `env` (RACKBENCH_RUNTIMES): its output.
fn trial_on(runtime: &str, dir: &Path, env: &[(&str, &Path)]) -> std::process::Output {
    let mut c = common::rackbench_cmd();
    c.args(["trial", "--app", "blog", "--no-pin", "--json", "--work-dir"])
        .arg(dir)
        .args(["--server", "puma", "--runtime", runtime])
        .args(["-c", "1", "-d", "1s", "--warmup", "0s"]);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// A user's Ruby that is the host's behind a wrapper writing down every
/// call: the seed must run through it (before, it ran the host's `ruby`
/// whatever the runtime), and the record names the runtime and the Ruby
/// the seed process itself reported, the server's Ruby.
#[test]
fn the_seed_runs_on_the_trials_runtime_and_the_record_says_which_ruby_seeded() {
    if !have_rails() || !have_server("puma") {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let home = common::work_dir("blog-seed-runtime");
    let bin = home.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let calls = home.join("calls.log");
    let ruby = bin.join("ruby");
    std::fs::write(
        &ruby,
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec /usr/bin/ruby \"$@\"\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&ruby, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = [("RACKBENCH_RUNTIMES", home.as_path())];
    let add = common::rackbench_cmd()
        .args(["runtime", "add", "wrapped", "--ruby"])
        .arg(&ruby)
        .env("RACKBENCH_RUNTIMES", &home)
        .output()
        .unwrap();
    common::assert_ran(&add, "add");

    let out = trial_on("wrapped", &home.join("trial"), &env);
    common::assert_ran(&out, "out");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid("trial-v1", &r, "blog on a user's Ruby");
    let db = &r["database"];
    assert_eq!(db["seed_runtime"], "wrapped", "{db}");
    assert_eq!(r["runtime"]["name"], "wrapped");
    // What the seed process and the server process each said of their Ruby.
    assert_eq!(db["seed_ruby"], r["runtime"]["ruby_description"], "{r}");
    assert!(db["seed_activerecord"]
        .as_str()
        .is_some_and(|v| v.starts_with("6.")));
    assert_eq!(db["rows_seeded"], 6050);
    let called = std::fs::read_to_string(&calls).unwrap();
    for what in ["seed.rb seed", "seed.rb count"] {
        assert!(
            called.lines().any(|l| l.ends_with(what)),
            "the wrapper never ran `{what}`:\n{called}"
        );
    }
    let _ = std::fs::remove_dir_all(&home);
}

/// Whether a root has Debian's ActiveRecord.
/// Rails on the host, mmdebstrap and root (a Debian root's mount
/// namespace): what building and entering a Debian root needs.
fn can_build_roots() -> bool {
    have_rails()
        && common::have("mmdebstrap", "apt-get install mmdebstrap")
        && rackbench::require::require(
            "root (a Debian root's mount namespace)",
            unsafe { libc::geteuid() } == 0,
            "run the tests as root",
        )
}

fn root_has_activerecord(root: &Path) -> bool {
    std::fs::read_dir(root.join("usr/share/rubygems-integration/all/gems"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("activerecord-"))
}

/// The Debian 13 root (Ruby 3.3) against the host (Ruby 3.1 with Rails):
/// the seed runs inside the root. A root built without ActiveRecord (as
/// `rackbench runtime add debian-13` builds it) stops the trial at the
/// seed in one line naming the rebuild with Debian's packages, though the
/// host has them; one built with them seeds on its own Ruby 3.3.
#[test]
fn the_seed_on_a_debian_root_runs_the_roots_ruby_and_a_root_without_rails_names_the_rebuild() {
    if !can_build_roots() || !common::have_debian_runtime("debian-13") {
        return;
    }
    let root = rackbench::runtime::runtimes_dir().join("debian-13");
    let dir = common::work_dir("blog-seed-root");
    let out = trial_on("debian-13", &dir.join("trial"), &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    if root_has_activerecord(&root) {
        assert!(out.status.success(), "{err}");
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["database"]["seed_runtime"], "debian-13");
        assert!(
            r["database"]["seed_ruby"]
                .as_str()
                .is_some_and(|v| v.starts_with("ruby 3.3")),
            "{r}"
        );
    } else {
        assert!(!out.status.success(), "the seed ran on the host's Rails");
        let line = err
            .lines()
            .find(|l| l.contains("seed failed"))
            .unwrap_or_else(|| panic!("no seed failure in:\n{err}"));
        for want in [
            "cannot load such file -- active_record",
            "runtime debian-13",
            "rackbench runtime remove debian-13 && rackbench runtime add debian-13 --with ruby-rails --with ruby-sqlite3 --with ruby-pg",
        ] {
            assert!(line.contains(want), "{want:?} not in {line}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Bundler runtime: the seed runs through `bundle exec`, so it loads
/// the Gemfile's gems and no others. With Rails in the Gemfile it seeds;
/// without, it stops at the seed naming the Gemfile, though the host
/// has Rails (the seed used to run the host's `ruby` and succeed).
#[test]
fn a_bundler_runtimes_seed_loads_only_its_gemfiles_gems_and_names_the_gemfile_when_rails_is_missing(
) {
    if !have_rails()
        || !have_server("puma")
        || !common::have("bundle", "apt-get install ruby-bundler")
    {
        return;
    }
    let home = common::work_dir("blog-seed-bundler");
    let env = [("RACKBENCH_RUNTIMES", home.as_path())];
    for (name, gems, seeds) in [
        (
            "with-rails",
            "gem \"rails\"\ngem \"sqlite3\"\ngem \"pg\"\n",
            true,
        ),
        ("without-rails", "", false),
    ] {
        let app = home.join(name);
        std::fs::create_dir_all(&app).unwrap();
        let gemfile = app.join("Gemfile");
        std::fs::write(
            &gemfile,
            format!("source \"https://rubygems.org\"\ngem \"puma\"\ngem \"rack\"\n{gems}"),
        )
        .unwrap();
        // Debian's gems are installed: Bundler resolves them with no network.
        let lock = Command::new("bundle")
            .args(["lock", "--local"])
            .current_dir(&app)
            .output()
            .unwrap();
        assert!(lock.status.success(), "{name}: {lock:?}");
        let add = common::rackbench_cmd()
            .args([
                "runtime",
                "add",
                name,
                "--ruby",
                "/usr/bin/ruby",
                "--gemfile",
            ])
            .arg(&gemfile)
            .env("RACKBENCH_RUNTIMES", &home)
            .output()
            .unwrap();
        assert!(add.status.success(), "{name}: {add:?}");
        let out = trial_on(name, &app.join("trial"), &env);
        let err = String::from_utf8_lossy(&out.stderr);
        if seeds {
            assert!(out.status.success(), "{name}: {err}");
            let r: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(r["database"]["seed_runtime"], name);
            assert_eq!(r["database"]["seed_ruby"], r["runtime"]["ruby_description"]);
            assert!(r["runtime"]["bundler"]
                .as_str()
                .is_some_and(|v| !v.is_empty()));
        } else {
            assert!(
                !out.status.success(),
                "{name}: the seed loaded the host's Rails"
            );
            let want = format!(
                "add gem \"rails\", gem \"sqlite3\", gem \"pg\" to {}",
                gemfile.display()
            );
            assert!(
                err.contains("cannot load such file -- active_record") && err.contains(&want),
                "{name}: {err}"
            );
            assert_eq!(err.matches("cannot load such file").count(), 1, "{err}");
        }
    }
    let _ = std::fs::remove_dir_all(&home);
}

/// The rebuild the seed's message names, done: Debian 13 with Debian's
/// Rails (7.2) and drivers, in a runtimes directory of its own beside the
/// default one (built once per machine, reused), seeds on the root's Ruby
/// 3.3 and ActiveRecord 7.2, not the host's 3.1 and 6.1, and the blog
/// answers on it.
#[test]
fn a_debian_13_root_built_with_rails_seeds_on_its_own_ruby_and_activerecord() {
    if !can_build_roots() {
        return;
    }
    let home = rackbench::runtime::runtimes_dir().with_file_name("runtimes-rails");
    let env = [("RACKBENCH_RUNTIMES", home.as_path())];
    let add = common::rackbench_cmd()
        .args(["runtime", "add", "debian-13"])
        .args([
            "--with",
            "ruby-rails",
            "--with",
            "ruby-sqlite3",
            "--with",
            "ruby-pg",
        ])
        .env("RACKBENCH_RUNTIMES", &home)
        .output()
        .unwrap();
    let built =
        add.status.success() || String::from_utf8_lossy(&add.stderr).contains("is built already");
    if !rackbench::require::require(
        "debian-13 with Rails",
        built,
        &format!(
            "building it failed: {}",
            String::from_utf8_lossy(&add.stderr)
        ),
    ) {
        return;
    }
    assert!(root_has_activerecord(&home.join("debian-13")));
    let dir = common::work_dir("blog-seed-root-rails");
    let out = trial_on("debian-13", &dir.join("trial"), &env);
    common::assert_ran(&out, "out");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid("trial-v1", &r, "blog on debian-13 with Rails");
    let db = &r["database"];
    assert_eq!(db["seed_runtime"], "debian-13");
    assert!(
        db["seed_ruby"]
            .as_str()
            .is_some_and(|v| v.starts_with("ruby 3.3")),
        "{db}"
    );
    assert_eq!(db["seed_ruby"], r["runtime"]["ruby_description"]);
    assert!(
        db["seed_activerecord"]
            .as_str()
            .is_some_and(|v| v.starts_with("7.")),
        "{db}"
    );
    assert_eq!(db["rows_seeded"], 6050);
    let errors: u64 = common::error_count(&r["load"]["errors"]);
    assert_eq!(errors, 0, "{}", r["load"]);

    // PostgreSQL runs on the host; the seed inside the root reaches it
    // (the root shares the network and /tmp), and nothing is left.
    if have_postgres() {
        let pg = dir.join("trial-pg");
        let out = common::rackbench_cmd()
            .args(["trial", "--app", "blog", "--no-pin", "--json", "--work-dir"])
            .arg(&pg)
            .args(["--server", "puma", "--runtime", "debian-13"])
            .args([
                "--database",
                "postgres",
                "-c",
                "1",
                "-d",
                "1s",
                "--warmup",
                "0s",
            ])
            .env("RACKBENCH_RUNTIMES", &home)
            .output()
            .unwrap();
        common::assert_ran(&out, "out");
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        let db = &r["database"];
        assert_eq!(
            (&db["kind"], &db["seed_runtime"]),
            (&json!("postgres"), &json!("debian-13"))
        );
        assert!(
            db["seed_activerecord"]
                .as_str()
                .is_some_and(|v| v.starts_with("7.")),
            "{db}"
        );
        assert_eq!(db["rows_seeded"], 6050);
        assert_nothing_left(&pg, "a postgres trial on debian-13");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
