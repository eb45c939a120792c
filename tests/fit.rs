//! `rackbench fit` end to end through the binary, on the host without
//! budgets: against the test server, whose capacity is known, and against
//! a real puma.

mod common;

use common::schema::assert_valid;
use common::serve_test_command;
use serde_json::Value;

/// Runs `rackbench fit ... --json` with short trials and returns its
/// document, checked against schema/fit-v1.schema.json.
fn fit(name: &str, args: &[&str]) -> Value {
    let work = common::scratch(&format!("fit-{name}"));
    let out = common::rackbench_cmd()
        .args(["fit", "--no-pin", "--json", "-d", "1s", "--out"])
        .arg(&work)
        .args(args)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&work);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid("fit-v1", &doc, name);
    doc
}

/// The test server works on `{{workers}}` requests at once, 20 ms each,
/// the rest queued: under 4 connections, one worker answers 50 req/s with
/// a p99 near 80 ms, and 4 or more answer 200 req/s at 20 ms. So p99 ≤
/// 50 ms rules out 1 worker, and the best is 4 workers or more at about
/// 200 req/s; the server has no threads, so none are varied.
#[test]
fn the_test_servers_known_capacity_is_what_fit_recommends() {
    let command = serve_test_command("--workers {{workers}} --delay 20ms");
    let doc = fit(
        "capacity",
        &[
            "--server",
            "capped",
            "--command",
            &command,
            "-c",
            "4",
            "--max-workers",
            "6",
            "--repeats",
            "2",
            "--memory",
            "512M",
            "--slo",
            "p99=50ms",
        ],
    );
    let best = &doc["recommendation"];
    let workers = best["workers"].as_u64().unwrap();
    let rps = best["throughput_rps"].as_f64().unwrap();
    assert!(workers >= 4, "{doc:#}");
    assert!((170.0..=210.0).contains(&rps), "{rps} req/s: {doc:#}");
    assert_eq!(best["setting"], format!("workers={workers}"));
    let candidates = doc["candidates"].as_array().unwrap();
    assert!(candidates.iter().all(|c| c["threads"] == 1), "{doc:#}");
    let one = candidates.iter().find(|c| c["workers"] == 1).unwrap();
    assert_eq!(one["verdict"], "slo", "{doc:#}");
    let trials: u64 = candidates
        .iter()
        .map(|c| c["trials"].as_u64().unwrap())
        .sum();
    assert_eq!(doc["trials"].as_u64(), Some(trials));
    assert!(!doc["stopped_because"].as_str().unwrap().is_empty());
}

/// A real puma in a small search recommends a setting in puma's words.
#[test]
fn a_real_puma_gets_a_recommendation_in_its_own_words() {
    if !common::have("puma", "apt-get install puma") {
        return;
    }
    let doc = fit(
        "puma",
        &[
            "--server",
            "puma",
            "--app",
            "sleep-1ms",
            "-c",
            "4",
            "--max-workers",
            "2",
            "--max-threads",
            "4",
            "--repeats",
            "1",
            "--slo",
            "p99=500ms",
        ],
    );
    let best = &doc["recommendation"];
    let setting = best["setting"].as_str().unwrap();
    assert_eq!(
        setting,
        format!(
            "WEB_CONCURRENCY={} RAILS_MAX_THREADS={}",
            best["workers"], best["threads"]
        )
    );
    assert!(best["throughput_rps"].as_f64().unwrap() > 0.0, "{doc:#}");
    assert!(best["memory_peak_bytes"].as_u64().unwrap() > 0, "{doc:#}");
}

/// The ground truth: each worker of the memory app holds 64 MiB,
/// and 230 MiB holds two workers and not three (tests/budget.rs shows the
/// third one killed). Inside that budget fit never recommends more than
/// two, and any configuration it tried beyond two is judged killed or
/// over the headroom, never `ok`.
#[test]
fn fit_never_recommends_more_workers_than_the_memory_limit_holds() {
    if !common::have("puma", "apt-get install puma") {
        return;
    }
    let doc = fit(
        "memory-limit",
        &[
            "--server",
            "puma",
            "--app",
            "memory",
            "--env",
            "MEMORY_PER_WORKER=64M",
            "--memory",
            "230M",
            "--headroom",
            "5%",
            "--max-workers",
            "4",
            "--max-threads",
            "2",
            "--repeats",
            "1",
            "-c",
            "4",
        ],
    );
    let best = doc["recommendation"]["workers"].as_u64().unwrap();
    assert!(best <= 2, "recommended {best} workers in 230 MiB");
    for c in doc["candidates"].as_array().unwrap() {
        if c["workers"].as_u64().unwrap() > 2 {
            assert_ne!(c["verdict"], "ok", "{c}");
        }
    }
}
