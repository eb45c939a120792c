//! Soaks end to end against real puma (issue 29): the leak app's known
//! leak found by the fitted slope, the hello app far from it, rackbench's
//! own memory flat over the soak, and the record valid against its
//! schema. The bounded series and timelines over days are unit tests
//! beside their code (sampler/series.rs, sampler/tests.rs,
//! load/report.rs).

mod common;

use common::{have, rackbench_cmd, work_dir};
use serde_json::Value;

/// The soaks share the machine's CPUs: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

const MIB: f64 = 1024.0 * 1024.0;

/// `rackbench trial --json` of `app` on puma, 2 workers of 1 thread, a
/// soak of `seconds` at `rate` after a 3 s warm-up.
fn soak(name: &str, app: &str, rate: u32, seconds: u32, env: &[&str]) -> Value {
    let dir = work_dir(name);
    let out = rackbench_cmd()
        .args(["trial", "--server", "puma", "--app", app, "--json"])
        .args(["--workers", "2", "--threads", "1", "--warmup", "3s"])
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
        assert!(
            w["verdict"].as_str().unwrap().contains("still growing"),
            "{w}"
        );
        assert!(w["series"].as_array().unwrap().len() >= 30, "{w}");
    }
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

/// The hello app keeps nothing. A 40 s soak still sees Ruby's heap
/// settling after a 3 s warm-up (about +30 MiB/hour a worker on the
/// 2-CPU VM, so its interval does not contain 0 yet; hours do), so the
/// claim that holds honestly is that it is far from a leak: under 100
/// MiB/hour a worker, where 1000 requests a second leaking even 1 KiB
/// would be 3516. And rackbench's own RSS stays flat: below 8 bytes a
/// request (27 MiB/hour at this rate; measured +5), which keeping any
/// figure per request (a latency, a timestamp) would break.
#[test]
fn the_hello_app_does_not_grow_like_a_leak_and_rackbench_itself_stays_flat() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !have("puma", "apt-get install puma") {
        return;
    }
    let doc = soak("soak-hello", "hello", 1000, 40, &[]);
    let s = &doc["soak"];
    for w in s["workers"].as_array().unwrap() {
        let slope = f(&w["slope_mib_per_hour"]);
        assert!(slope.abs() < 100.0, "{}", w["verdict"]);
    }
    let ok = f(&doc["load"]["requests"]["ok"]);
    let rate = ok / f(&doc["load"]["duration_s"]);
    let own = &s["rackbench"];
    assert!(own["series"].as_array().unwrap().len() >= 30, "{own}");
    let bound = rate * 8.0 * 3600.0 / MIB;
    let low = f(&own["ci_low_mib_per_hour"]);
    assert!(
        low < bound,
        "rackbench grew: {} (bound {bound:.0} MiB/hour)",
        own["verdict"]
    );
}

/// `rackbench run PLAN --out DIR` of the test server (one process) with
/// `extra` flags; the one trial's record.
fn run_plan(name: &str, plan_soak: &str, extra: &[&str]) -> Value {
    let dir = work_dir(name);
    let cmd = common::serve_test_command("");
    let plan = format!(
        "name = \"soak\"\nservers = [\"t\"]\napps = [\"hello\"]\n{plan_soak}\n[load]\n\
         rates = [200]\nwarmup = \"1s\"\n[server_defs.t]\ncommand = \"{cmd}\"\n"
    );
    let file = dir.join("plan.toml");
    std::fs::write(&file, plan).unwrap();
    let results = dir.join("results");
    let out = rackbench_cmd()
        .args(["run", file.to_str().unwrap(), "--no-pin", "--out"])
        .arg(&results)
        .args(extra)
        .output()
        .expect("run rackbench");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trials: Vec<_> = std::fs::read_dir(results.join("trials"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(trials.len(), 1, "{trials:?}");
    let rec: Value = serde_json::from_slice(&std::fs::read(&trials[0]).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
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
        ("soak-plan-none", "", &["--soak", "11s"][..], 11.0),
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
}
