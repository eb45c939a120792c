//! Telemetry through the lab (issue 15's checks): `rackbench trial
//! --telemetry --json` against Debian's servers, read from the record.
//! tests/telemetry.rs holds the middleware's known answers with servers
//! started by hand; this file holds what the lab adds: the wrapper given as
//! `{{app}}` to every adapter's template, nginx's X-Request-Start stamp,
//! the flush wait before the stop, the accept queue of the server's own
//! socket, and the record's `telemetry` flag.
//!
//! Its own test target (`cargo test --test telemetry_lab`); a server that
//! is not installed skips with a `SKIP:` line, or fails under
//! `RACKBENCH_REQUIRE=all`. Margins are wide: the machine is shared.

mod common;

use common::have;
use common::schema::assert_valid;
use serde_json::Value;
use std::path::PathBuf;

/// This file's work directory for `tag` (the lab makes it).
fn work_dir(tag: &str) -> PathBuf {
    common::scratch(&format!("tlab-{tag}"))
}

/// Runs `rackbench trial ARGS --json` and returns its record, checked
/// against trial-v1.
fn trial(tag: &str, args: &[&str]) -> Value {
    let dir = work_dir(tag);
    let r = common::trial_json(&dir, args, tag);
    assert_valid("trial-v1", &r, tag);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

/// One single-threaded unicorn worker, an app that sleeps 20 ms, 8
/// connections.
const SLEEP_20: &[&str] = &[
    "--server",
    "unicorn",
    "--workers",
    "1",
    "--app",
    "sleep",
    "--app-path",
    "/?ms=20",
    "--app-expect-body",
    "slept 20 ms",
    "-c",
    "8",
    "-d",
    "3s",
    "--warmup",
    "1s",
];

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn a_20_ms_app_shows_app_p50_near_20_ms_and_7_connections_in_the_accept_queue() {
    if !have("unicorn", "apt-get install unicorn") {
        return;
    }
    let mut args = SLEEP_20.to_vec();
    args.push("--telemetry");
    let r = trial("direct", &args);
    assert_eq!(r["telemetry"], true);
    let t = &r["server_metrics"]["telemetry"];
    let ok = r["load"]["requests"]["ok"].as_u64().unwrap();
    let seen = t["requests"].as_u64().unwrap();
    // The counted window only (lines from its start on): about what the
    // load counted, never the warm-up's on top.
    assert!(
        seen as f64 > 0.7 * ok as f64 && (seen as f64) < 1.3 * ok as f64 + 10.0,
        "telemetry saw {seen} requests, the load {ok}"
    );
    let p50 = f(&t["app_us"]["p50"]);
    assert!((18_000.0..40_000.0).contains(&p50), "app p50 {p50} µs");
    assert!(t.get("queue_us").is_none(), "no nginx, no queue time: {t}");
    // The other 7 connections wait in the kernel's queue for the worker.
    let q = &r["server_metrics"]["accept_queue"];
    let mean = f(&q["mean"]);
    assert!((5.0..=8.0).contains(&mean), "accept queue mean {mean}: {q}");
    assert!(!q["timeline"].as_array().unwrap().is_empty(), "{q}");
}

#[test]
fn behind_nginx_queue_time_is_7_requests_long_while_app_time_stays_20_ms() {
    if !have("unicorn", "apt-get install unicorn") || !have("nginx", "apt-get install nginx-light")
    {
        return;
    }
    let mut args = SLEEP_20.to_vec();
    args.extend(["--telemetry", "--behind", "nginx"]);
    let r = trial("nginx", &args);
    let t = &r["server_metrics"]["telemetry"];
    let app = f(&t["app_us"]["p50"]);
    let queue = f(&t["queue_us"]["p50"]);
    assert!((18_000.0..40_000.0).contains(&app), "app p50 {app} µs");
    // 7 × 20 ms = 140 ms; nginx's stamp has millisecond resolution.
    assert!(
        (90_000.0..250_000.0).contains(&queue),
        "queue p50 {queue} µs, app p50 {app} µs"
    );
    assert!(t["queue_requests"].as_u64().unwrap() > 0);
}

#[test]
fn without_telemetry_the_record_says_off_and_still_has_the_accept_queue() {
    if !have("unicorn", "apt-get install unicorn") {
        return;
    }
    // SLEEP_20 up to its duration: shorter here.
    let mut args = SLEEP_20[..12].to_vec();
    args.extend(["-d", "1s", "--warmup", "300ms"]);
    let r = trial("off", &args);
    assert_eq!(r["telemetry"], false);
    assert!(r["server_metrics"].get("telemetry").is_none());
    assert!(f(&r["server_metrics"]["accept_queue"]["max"]) >= 3.0);
    // The server was given the app itself, not the wrapper.
    let cmd = r["server"]["command"].as_str().unwrap();
    assert!(!cmd.contains("telemetry.ru"), "{cmd}");
}

/// GC runs per 1,000 requests of puma (one thread) on `app` at `path`.
fn gc_per_1k(tag: &str, app: &str, path: &str, body: &str, env: &[&str]) -> f64 {
    let mut args = vec![
        "--server",
        "puma",
        "--workers",
        "0",
        "--threads",
        "1",
        "--app",
        app,
        "--app-path",
        path,
        "--app-expect-body",
        body,
        "-c",
        "2",
        "-d",
        "2s",
        "--warmup",
        "500ms",
        "--telemetry",
    ];
    for e in env {
        args.extend(["--env", e]);
    }
    let r = trial(tag, &args);
    let t = &r["server_metrics"]["telemetry"];
    assert!(t["requests"].as_u64().unwrap() > 20, "{tag}: {t}");
    f(&t["gc_runs_per_1k_requests"])
}

#[test]
fn gc_runs_per_1k_requests_follow_allocation_and_the_malloc_limit() {
    if !have("puma", "apt-get install puma") {
        return;
    }
    let quiet = gc_per_1k("quiet", "sleep", "/?ms=5", "slept 5 ms", &[]);
    let primes = gc_per_1k("primes", "primes", "/?count=20000", "", &[]);
    let tight = gc_per_1k(
        "tight",
        "primes",
        "/?count=20000",
        "",
        &[
            "RUBY_GC_MALLOC_LIMIT=100000",
            "RUBY_GC_MALLOC_LIMIT_MAX=100000",
        ],
    );
    assert!(quiet < 5.0, "an app that barely allocates: {quiet} GC/1k");
    // At least one GC in a window of a few hundred requests; the core
    // test (tests/telemetry.rs) pins the default rate with more of them.
    assert!(primes > 0.0, "primes: {primes} GC/1k");
    assert!(
        tight > 3.0 * primes,
        "RUBY_GC_MALLOC_LIMIT=100000: {tight} GC/1k, default {primes}"
    );
}

#[test]
fn every_server_reports_telemetry_through_its_own_template() {
    let servers = [
        ("puma", "puma", "apt-get install puma"),
        ("unicorn", "unicorn", "apt-get install unicorn"),
        ("thin", "thin", "apt-get install thin"),
        ("passenger", "passenger", "apt-get install passenger"),
        (
            "webrick",
            "rackup",
            "apt-get install ruby-rackup ruby-webrick",
        ),
        (
            "uwsgi",
            "uwsgi",
            "apt-get install uwsgi-core uwsgi-plugin-rack-ruby3.1",
        ),
    ];
    for (name, cmd, how) in servers {
        if !have(cmd, how) {
            continue;
        }
        let r = trial(
            &format!("each-{name}"),
            &[
                "--server",
                name,
                "--app",
                "hello",
                "-c",
                "2",
                "-d",
                "1s",
                "--warmup",
                "300ms",
                "--telemetry",
            ],
        );
        let t = &r["server_metrics"]["telemetry"];
        let ok = r["load"]["requests"]["ok"].as_u64().unwrap();
        let seen = t["requests"].as_u64().unwrap_or(0);
        assert!(
            seen as f64 > 0.5 * ok as f64,
            "{name}: telemetry saw {seen} requests, the load {ok}: {t}"
        );
        // App time is counted in whole microseconds and hello answers in
        // less than one on a quiet machine (puma's p50 was 0 µs once the
        // accept-queue sampler stopped taking the server's CPU): the mean
        // shows that it was measured.
        assert!(f(&t["app_us"]["mean"]) > 0.0, "{name}: {t}");
        if name == "uwsgi" {
            // uWSGI's rb_gc_freq = 1 (rackbench's default, as uWSGI's):
            // a GC after every request.
            let runs = t["gc_runs"].as_u64().unwrap();
            assert!(
                runs as f64 >= 0.9 * seen as f64,
                "uwsgi: {runs} GC runs for {seen} requests"
            );
        }
    }
}

#[test]
fn a_break_point_search_with_telemetry_tells_each_step_where_the_time_went() {
    if !have("puma", "apt-get install puma") {
        return;
    }
    let dir = work_dir("breakpoint");
    let out = common::rackbench_cmd()
        .args([
            "breakpoint",
            "--server",
            "puma",
            "--app",
            // fib, not hello: hello's app call can take under the
            // middleware's 1 µs resolution, and an app p50 of 0 would then
            // be the truth, not a missing figure.
            "fib",
            "--telemetry",
            "--start",
            "2",
            "--max",
            "4",
            "-d",
            "1s",
            "--probe",
            "300ms",
            "--warmup",
            "200ms",
            "--json",
            "--work-dir",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let r = common::stdout_json(&out, "breakpoint --telemetry");
    assert_valid("breakpoint-v1", &r, "breakpoint --telemetry");
    let steps = r["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    for s in steps {
        assert!(
            s["app_p50_us"].as_f64().is_some_and(|v| v > 0.0),
            "a step without the app's own time (its trial is in {}): {s}\nstderr: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(s["gc_runs_per_1k_requests"].is_number(), "{s}");
        assert!(s["accept_queue_max"].is_u64(), "{s}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// puma's own view of its queue, from its control server, summed over a
/// cluster's workers; and no control server without telemetry.
#[test]
fn puma_reports_its_own_threads_through_its_control_server_only_with_telemetry() {
    if !have("puma", "apt-get install puma") {
        return;
    }
    let base = [
        "--server",
        "puma",
        "--workers",
        "2",
        "--threads",
        "1",
        "--app",
        "sleep",
        "--app-path",
        "/?ms=50",
        "--app-expect-body",
        "slept 50 ms",
        "-c",
        "8",
        "-d",
        "2s",
        "--warmup",
        "500ms",
    ];
    let mut args = base.to_vec();
    args.push("--telemetry");
    let r = trial("puma-stats", &args);
    let stats = &r["server_metrics"]["server_stats"];
    // One thread in each of two workers.
    assert_eq!(stats["running"]["max"], 2, "{stats}");
    assert!(stats["backlog"]["samples"].as_u64().unwrap() > 3, "{stats}");
    // A cluster's figures are each worker's last check-in with the master
    // (every 5 s in puma 5), so pool_capacity may still show the idle
    // boot state here; it is read, not judged.
    assert!(
        stats["pool_capacity"]["samples"].as_u64().unwrap() > 3,
        "{stats}"
    );
    assert!(r["server"]["command"]
        .as_str()
        .unwrap()
        .contains("--control-url tcp://127.0.0.1:"));

    let r = trial("puma-no-stats", &base);
    assert!(r["server_metrics"].get("server_stats").is_none());
    let cmd = r["server"]["command"].as_str().unwrap();
    assert!(!cmd.contains("--control-url"), "{cmd}");
}
