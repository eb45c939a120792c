//! Soaks end to end (issue 29): a server that keeps nothing (the test
//! server) has an interval containing 0 and rackbench's own memory stays
//! flat in bytes per second; against real puma the leak app's known leak
//! is found by the fitted slope and the same app leaking nothing is far
//! from it; a plan's soak runs through the runner. Each record is valid
//! against its schema. The bounded series, timelines and readings over
//! days are unit tests beside their code (sampler/series.rs,
//! sampler/tests.rs, load/report.rs, telemetry/accept_queue.rs).

mod common;

use common::{have, rackbench_cmd, work_dir};
use serde_json::Value;

/// The soaks share the machine's CPUs: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

const MIB: f64 = 1024.0 * 1024.0;

/// `rackbench trial --json` of `app` on puma, 2 workers of 1 thread, a
/// soak of `seconds` at `rate` after a 3 s warm-up.
fn soak(name: &str, app: &str, rate: u32, seconds: u32, env: &[&str]) -> Value {
    let server = ["--server", "puma", "--workers", "2", "--threads", "1"];
    soak_of(name, &server, app, rate, seconds, env)
}

/// `rackbench trial --json` of `app` on `server` (its flags), a soak of
/// `seconds` at `rate` after a 3 s warm-up.
fn soak_of(name: &str, server: &[&str], app: &str, rate: u32, seconds: u32, env: &[&str]) -> Value {
    let dir = work_dir(name);
    let out = rackbench_cmd()
        .arg("trial")
        .args(server)
        .args(["--app", app, "--json", "--warmup", "3s"])
        .args([
            "--rate",
            &rate.to_string(),
            "--soak",
            &format!("{seconds}s"),
        ])
        .args(["--work-dir", dir.to_str().unwrap()])
        .args(env.iter().flat_map(|e| ["--env", e]))
        .output()
        .expect("run rackbench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    common::schema::assert_valid("trial-v1", &doc, "a soak's record");
    doc
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number, got {v}"))
}

/// 200 requests a second, each leaking 16 KiB, is 11250 MiB an hour over
/// the two workers. Measured on the 2-CPU VM: 11308 (0.5% off; USS grows
/// by the string's bytes plus a little malloc overhead). The tolerance,
/// 15%, leaves room for a busy machine's late requests.
#[test]
fn the_leak_apps_known_leak_is_the_workers_summed_uss_slope() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !have("puma", "apt-get install puma") {
        return;
    }
    let doc = soak(
        "soak-leak",
        "leak",
        200,
        40,
        &["LEAK_BYTES_PER_REQUEST=16K"],
    );
    let s = &doc["soak"];
    let workers = s["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2, "{s}");
    for w in workers {
        assert_eq!(w["metric"], "uss");
        assert!(w["series"].as_array().unwrap().len() >= 30, "{w}");
    }
    // Puma's workers share the requests as they take them, not evenly:
    // one took nearly all of them in one CI run (the other's USS flat),
    // so the leak is held against the sum, and at least one worker must
    // read as growing.
    assert!(
        workers
            .iter()
            .any(|w| w["verdict"].as_str().unwrap().contains("still growing")),
        "{s}"
    );
    let ok = f(&doc["load"]["requests"]["ok"]);
    let rate = ok / f(&doc["load"]["duration_s"]);
    let want = rate * 16384.0 * 3600.0 / MIB;
    let got = f(&s["total_slope_mib_per_hour"]);
    assert!(
        (got - want).abs() < 0.15 * want,
        "summed slope {got:.0} MiB/hour, leak {want:.0}"
    );
    assert!(
        f(&s["total_ci_low_mib_per_hour"]) <= got && got <= f(&s["total_ci_high_mib_per_hour"])
    );
}

/// The most rackbench's own private memory (USS) may gain per second
/// over a short soak: 16 KiB. Until their caps (an hour of rows, 720
/// points a series) what it keeps grows by about 350 bytes a second
/// (each process's series 48 bytes, the load's and the sampler's
/// timelines and the accept queue's rows about 150), and over 30 s the
/// allocator's and the pages' steps come on top: measured 0.7 to 6 KiB/s
/// (one run in four above 4 KiB/s, so a bound there fails by chance).
/// What this bound catches is memory kept per request: at the flat
/// test's 4000 req/s, 8 bytes a request (one latency each) is 31 KiB/s,
/// and a latency histogram per second (188 KiB each) far more. That it
/// stops growing at the caps is the unit tests' (sampler::series,
/// load::report, the watchers' readings), which feed days of samples.
const OWN_BYTES_PER_S: f64 = 16384.0;

/// rackbench's own growth, checked in bytes per second.
fn assert_rackbench_flat(doc: &Value) {
    let own = &doc["soak"]["rackbench"];
    assert_eq!(own["metric"], "uss", "{own}");
    assert!(own["series"].as_array().unwrap().len() >= 20, "{own}");
    let low = f(&own["ci_low_mib_per_hour"]) * MIB / 3600.0;
    assert!(
        low < OWN_BYTES_PER_S,
        "rackbench grew at least {low:.0} bytes/s: {}",
        own["verdict"]
    );
}

/// The ground truth of no leak: the test server (rackbench serve-test,
/// one process answering from fixed buffers) keeps nothing per request,
/// so its fitted interval must contain 0; a slope method that saw growth
/// in a flat series would fail here. Measured on the 2-CPU VM at 1000
/// req/s for 30 s: its USS did not change by a page (slope and interval
/// +0.0), and once -7.1 to +0.0 (one page given back); the test runs at
/// 4000 req/s, where memory kept per request would show in rackbench's
/// own bound, [`OWN_BYTES_PER_S`] (3 runs of 3 held both here).
#[test]
fn a_server_that_keeps_nothing_has_an_interval_containing_zero() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cmd = common::serve_test_command("");
    let server = ["--server", "t", "--command", cmd.as_str()];
    let doc = soak_of("soak-flat", &server, "hello", 4000, 30, &[]);
    let s = &doc["soak"];
    let workers = s["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 1, "{s}");
    let w = &workers[0];
    assert_eq!(w["metric"], "uss");
    let (lo, hi) = (f(&w["ci_low_mib_per_hour"]), f(&w["ci_high_mib_per_hour"]));
    assert!(lo <= 0.0 && 0.0 <= hi, "{}", w["verdict"]);
    assert_rackbench_flat(&doc);
}

/// The leak app leaking nothing (LEAK_BYTES_PER_REQUEST=0: the leak
/// test's code path, holding nothing) is far from a leak. Its interval
/// cannot be asked to contain 0 within a minute: puma's workers gain
/// about 14 bytes a request for far longer than that. Measured on the
/// 2-CPU VM at 1000 req/s, 2 workers: +23 to +28 MiB/hour a worker over
/// 40 s after a 20 s warm-up (hello: +25 and +34; after 3 s: +33). Ruby's
/// object heap is settled by then (heap_allocated_pages flat); old
/// objects gain 15 a second until the next major GC, some 40 minutes
/// away; but forcing a major GC every 2 s
/// (RUBY_GC_HEAP_OLDOBJECT_LIMIT_FACTOR=1.0) leaves the growth as it
/// was: it is in malloc's memory outside Ruby's heap (glibc's arenas of
/// puma's threads, +100 KiB in 35 s by smaps; with --allocator jemalloc
/// it grew as much, +32 and +53 MiB/hour). One step of malloc's memory
/// inside the 40 s (a new arena's megabyte) reads as +90 MiB/hour on
/// its own: a CI run saw +123.6 (95% CI +48.9 to +171.6) where two runs
/// just after saw +3 to +28. What holds honestly: under 400 MiB/hour a
/// worker, where leaking even 1 KiB a request at this rate would be
/// 1758 on each of the two. rackbench's own memory, within
/// [`OWN_BYTES_PER_S`].
#[test]
fn the_leak_app_leaking_nothing_does_not_grow_like_a_leak_and_rackbench_stays_flat() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !have("puma", "apt-get install puma") {
        return;
    }
    let doc = soak(
        "soak-leak0",
        "leak",
        1000,
        40,
        &["LEAK_BYTES_PER_REQUEST=0"],
    );
    let s = &doc["soak"];
    let workers = s["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 2, "{s}");
    for w in workers {
        let slope = f(&w["slope_mib_per_hour"]);
        assert!(slope.abs() < 400.0, "{}", w["verdict"]);
    }
    assert_rackbench_flat(&doc);
}

/// `rackbench run PLAN --out DIR` of the test server (one process) with
/// `extra` flags; the one trial's record.
fn run_plan(name: &str, plan_soak: &str, extra: &[&str]) -> Value {
    let cmd = common::serve_test_command("");
    let plan = common::Plan::write(
        name,
        "plan.toml",
        &format!(
            "name = \"soak\"\nservers = [\"t\"]\napps = [\"hello\"]\n{plan_soak}\n[load]\n\
             rates = [200]\nwarmup = \"1s\"\n[server_defs.t]\ncommand = \"{cmd}\"\n"
        ),
    );
    plan.run_ok(&[&["--no-pin"][..], extra].concat());
    let rec = plan.only_doc("trials");
    let _ = std::fs::remove_dir_all(&plan.dir);
    rec
}

/// A plan's `soak` reaches every trial through the runner, at the plan's
/// rate, and `--soak` on `run` replaces it: the record has its `soak`,
/// the server's one process fitted, and the load ran the soak's window.
#[test]
fn a_plans_soak_runs_its_trials_as_soaks_and_run_soak_replaces_it() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (name, plan_soak, extra, want_s) in [
        ("soak-plan", "soak = \"12s\"", &[][..], 12.0),
        (
            "soak-plan-flag",
            "soak = \"1h\"",
            &["--soak", "11s"][..],
            11.0,
        ),
    ] {
        let rec = run_plan(name, plan_soak, extra);
        let s = &rec["trial"]["soak"];
        assert_eq!(f(&s["duration_s"]), want_s, "{name}: {s}");
        assert_eq!(f(&s["rate_rps"]), 200.0, "{name}");
        let w = s["workers"].as_array().unwrap();
        assert_eq!(w.len(), 1, "{name}: {s}");
        assert_eq!(w[0]["role"], "single", "{name}");
        assert!(
            w[0]["series"].as_array().unwrap().len() >= 10,
            "{name}: {s}"
        );
        assert!(w[0]["slope_mib_per_hour"].is_number(), "{name}: {s}");
        let d = f(&rec["trial"]["load"]["duration_s"]);
        assert!((d - want_s).abs() < 1.0, "{name}: load ran {d} s");
    }
    let out = common::rackbench(&["run", "--soak", "0s", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--soak must be longer than zero"), "{err}");
    let plan = concat!(env!("CARGO_MANIFEST_DIR"), "/plans/laas-2010.toml");
    let out = common::rackbench(&["run", plan, "--soak", "1h", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--soak runs every trial at one fixed rate, and")
            && err.contains("has a [breakpoint]: drop --soak"),
        "{err}"
    );
}
