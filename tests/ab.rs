//! `rackbench ab` against servers whose truth is known (issue 38): the
//! built-in test server answering after a fixed delay, 20 ms on one side
//! and 21 ms (5% slower) on the other, is called slower in throughput
//! with an interval that holds the truth; two identical servers are never
//! called faster or slower; a bad request is refused before anything
//! starts, naming the fix. The ab-v1 document is held to its schema.

mod common;

use common::rackbench_cmd as bin;
use serde_json::Value;
use std::process::Output;

/// A plan with the test server at 20 ms ("base"), at 21 ms ("slow") and at
/// 20 ms again ("same"); 8 connections, 1 s windows.
fn write_plan(name: &str) -> common::Plan {
    let exe = common::EXE;
    common::Plan::write(
        name,
        "plan.toml",
        &format!(
            r#"name = "ab"
servers = ["base", "slow", "same"]
apps = ["hello"]
[server_defs.base]
command = "{exe} serve-test --listen {{{{listen}}}} --delay 20ms"
[server_defs.slow]
command = "{exe} serve-test --listen {{{{listen}}}} --delay 21ms"
[server_defs.same]
command = "{exe} serve-test --listen {{{{listen}}}} --delay 20ms"
[load]
connections = [8]
duration = "1s"
warmup = "200ms"
"#
        ),
    )
}

fn ab(plan: &common::Plan, args: &[&str]) -> Output {
    bin()
        .arg("ab")
        .arg(&plan.file)
        .args(["--no-pin", "--seed", "38", "--json", "--out"])
        .arg(&plan.out)
        .args(args)
        .output()
        .expect("run rackbench ab")
}

fn doc_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("ab-v1 on stdout");
    common::schema::assert_valid("ab-v1", &doc, "rackbench ab --json");
    doc
}

#[test]
fn a_five_percent_longer_service_time_is_called_slower() {
    let plan = write_plan("ab-slower");
    let out = ab(
        &plan,
        &[
            "--a",
            "server=base",
            "--b",
            "server=slow",
            "--max-load",
            "80s",
        ],
    );
    let doc = doc_of(&out);
    assert_eq!(doc["verdict"], "slower", "{doc:#}");
    // 8 / 21 ms against 8 / 20 ms: -4.8%, less the server's own overhead
    // per request (the same on both sides).
    let (lo, hi) = (
        doc["ci_low_pct"].as_f64().unwrap(),
        doc["ci_high_pct"].as_f64().unwrap(),
    );
    assert!(lo < -1.0 && hi < 0.0, "{doc:#}");
    assert!(lo <= -4.0, "the interval leaves out the truth: {lo} {hi}");
    // Every counted window's record is in the results directory, which
    // `report` reads like any run's.
    let stored = std::fs::read_dir(plan.out.join("trials")).unwrap().count();
    assert_eq!(stored as u64, 2 * doc["rounds"].as_u64().unwrap());
    assert!(plan.out.join("ab.json").is_file());
    assert!(plan.out.join("report.html").is_file());
    let _ = std::fs::remove_dir_all(&plan.dir);
}

#[test]
fn identical_servers_are_never_called_faster_or_slower() {
    let plan = write_plan("ab-same");
    let out = ab(
        &plan,
        &[
            "--a",
            "server=base",
            "--b",
            "server=same",
            "--max-load",
            "30s",
            "--alpha",
            "0.01",
        ],
    );
    let doc = doc_of(&out);
    let verdict = doc["verdict"].as_str().unwrap();
    assert!(
        verdict == "equivalent" || verdict == "undecided",
        "{verdict}: {}",
        doc["reason"]
    );
    let _ = std::fs::remove_dir_all(&plan.dir);
}

/// `--keep-running`: each side's server is started once and measured
/// window after window; the verdict is the same as with a fresh server
/// per window, and every window of a side was served by one process.
#[test]
fn kept_running_servers_serve_every_window_of_their_side() {
    let plan = write_plan("ab-kept");
    let out = ab(
        &plan,
        &[
            "--a",
            "server=base",
            "--b",
            "server=slow",
            "--max-load",
            "80s",
            "--keep-running",
        ],
    );
    let doc = doc_of(&out);
    assert_eq!(doc["servers"], "kept", "{doc:#}");
    assert_ne!(doc["verdict"], "faster", "{doc:#}");
    assert_ne!(doc["verdict"], "equivalent", "{doc:#}");
    let mut pids: std::collections::BTreeMap<char, std::collections::BTreeSet<u64>> =
        Default::default();
    for entry in std::fs::read_dir(plan.out.join("trials")).unwrap() {
        let path = entry.unwrap().path();
        let stored: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let side = path
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .chars()
            .next()
            .unwrap();
        let pid = stored["trial"]["server_metrics"]["samples"]["per_process"][0]["pid"]
            .as_u64()
            .unwrap_or_else(|| panic!("{}: no server pid", path.display()));
        pids.entry(side).or_default().insert(pid);
    }
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert!(
        pids.values().all(|p| p.len() == 1),
        "a side restarted: {pids:?}"
    );
    assert_ne!(pids[&'A'], pids[&'B'], "{pids:?}");
    let _ = std::fs::remove_dir_all(&plan.dir);
}

/// Refused in one line naming the fix, before any server starts.
#[test]
fn bad_requests_are_refused_with_their_fix() {
    let plan = write_plan("ab-bad");
    let refused = |args: &[&str], says: &str| {
        let out = bin().arg("ab").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    };
    let p = plan.file.to_str().unwrap();
    refused(
        &["--server", "puma", "--vary", "workers=1,2,3"],
        "exactly two values",
    );
    refused(&["--server", "puma", "--vary", "workers=2,2"], "--aa");
    refused(&[p, "--a", "server=base", "--b", "server=base"], "--aa");
    refused(
        &[p, "--a", "server=nope", "--b", "server=base"],
        "selects none",
    );
    refused(
        &[
            p,
            "--a",
            "server=base",
            "--b",
            "server=slow",
            "--metric",
            "speed",
        ],
        "--metric",
    );
    refused(
        &[
            p,
            "--a",
            "server=base",
            "--b",
            "server=slow",
            "--max-load",
            "3s",
        ],
        "--max-load",
    );
    refused(
        &[
            p,
            "--a",
            "server=base",
            "--b",
            "server=slow",
            "--metric",
            "error_rate",
        ],
        "compare",
    );
    assert!(!plan.out.exists(), "nothing was run");
    let _ = std::fs::remove_dir_all(&plan.dir);
}

/// `sweep --until-verdict`: each value judged against the first by the
/// A/B's paired rounds. The test server at 21 ms against 20 ms (5%
/// slower) is never called faster; 20000us, the same 20 ms spelled
/// otherwise, is never called faster or slower. Each value's A/B keeps
/// its own results directory, and --json prints their ab-v1 documents.
#[test]
fn sweep_until_verdict_judges_each_value_against_the_first() {
    let out = common::work_dir("ab-sweep-until").join("results");
    let command = format!(
        "{} serve-test --listen {{{{listen}}}} --delay {{{{delay}}}}",
        common::EXE
    );
    let run = bin()
        .args(["sweep", "--command", &command])
        .args(["--vary", "delay=20ms,21ms,20000us", "--until-verdict"])
        .args([
            "--connections",
            "8",
            "--duration",
            "1s",
            "--warmup",
            "200ms",
        ])
        .args(["--max-load", "20s", "--rerun-disturbed", "1"])
        .args(["--no-pin", "--seed", "38", "--json", "--out"])
        .arg(&out)
        .output()
        .expect("run rackbench sweep");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let docs: Vec<Value> = serde_json::from_slice(&run.stdout).expect("a JSON array");
    assert_eq!(docs.len(), 2, "a verdict per value after the first");
    for d in &docs {
        common::schema::assert_valid("ab-v1", d, "sweep --until-verdict --json");
        assert_eq!(d["a"]["label"], "delay=20ms", "{d:#}");
    }
    assert_eq!(docs[0]["b"]["label"], "delay=21ms");
    assert_ne!(docs[0]["verdict"], "faster", "{:#}", docs[0]);
    assert_eq!(docs[1]["b"]["label"], "delay=20000us");
    let same = docs[1]["verdict"].as_str().unwrap();
    assert!(
        same == "equivalent" || same == "undecided",
        "{same}: {}",
        docs[1]["reason"]
    );
    for value in ["21ms", "20000us"] {
        assert!(out.join(value).join("ab.json").is_file(), "{value}");
        // The report written at the end of each A/B draws its rounds.
        let html = std::fs::read_to_string(out.join(value).join("report.html")).unwrap();
        assert!(
            html.contains("<section class=\"chart\" id=\"ab\">"),
            "{value}"
        );
    }
    let _ = std::fs::remove_dir_all(out.parent().unwrap());
}
