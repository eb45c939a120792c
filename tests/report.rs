//! `rackbench report`: a seeded results directory (2 servers × 2
//! connection levels × 2 repeats, one failed trial, one missing trial, one
//! trial with errors, one break point) → Markdown and CSV against golden
//! files, HTML checked for charts, markings and no external resources,
//! and rendered in headless Chromium when it is installed.
//!
//! `UPDATE_SNAPSHOTS=1 cargo test --test report` rewrites the golden files.

mod common;

use rackbench::report::{self, Report};
use rackbench::store::records::{StoredBreakpoint, StoredTrial};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn planned(server: &str, conns: u64, repeat: u32) -> Value {
    json!({
        "id": format!("{server}__hello__direct__c{conns}__rep{repeat}"),
        "group": format!("{server}__hello__direct__c{conns}"),
        "server": server, "variant": server,
        "workers": null, "threads": null, "settings": {}, "env": {},
        "app": "hello", "behind": "none", "nginx_workers": 0,
        "shape": { "connections": conns }, "repeat": repeat
    })
}

fn environment(commands: Vec<String>) -> Value {
    json!({
        "cpu_model": "Test CPU", "cores": 2, "kernel": "6.1.0-test",
        "ruby_version": "ruby 3.1.2p20", "rackbench_version": "0.1.0",
        "hostname": "fixture", "commands": commands
    })
}

/// A trial record with figures derived from `seed`; `errors_at` puts
/// errors in one timeline second.
fn record(server: &str, conns: u64, seed: f64, errors_at: Option<(u64, u64)>) -> Value {
    let rps = 10_000.0 + seed * 1000.0;
    let p50 = 100 + conns * 20 + seed as u64 * 7;
    let p99 = p50 * 6;
    let errors = errors_at.map_or(0, |e| e.1);
    let timeline: Vec<Value> = (0..4u64)
        .map(|t| {
            let e = errors_at.filter(|e| e.0 == t).map_or(0, |e| e.1);
            json!({
                "t_s": t, "ok": (rps as u64) - t * 50, "errors": e,
                "p50_us": p50 + t, "p99_us": p99 + t * 10,
                "rps": rps - (t * 50) as f64, "warmup": t == 0
            })
        })
        .collect();
    let dist: Vec<Value> = [
        (0.0, 1.0),
        (50.0, 1.0),
        (90.0, 2.0),
        (99.0, 6.0),
        (99.9, 10.0),
        (99.99, 14.0),
        (100.0, 15.0),
    ]
    .iter()
    .map(|(p, f)| json!({"percentile": p, "latency_us": (p50 as f64 * f) as u64}))
    .collect();
    let rss = 30_000_000 + (seed as u64) * 100_000 + conns * 1000;
    let server_cmd = format!("{server} --port 9000 hello.ru");
    let (telemetry, accept_queue) = inside(server, p50, (rps * 3.0) as u64);
    let load_cmd = format!("rackbench load http://127.0.0.1:9000/ -c {conns} -d 3s --warmup 1s");
    json!({
        "schema": "rackbench/trial-v1",
        "started_at": "2026-01-02T03:04:05Z",
        "server": {
            "name": server, "version": format!("{server} 1.0"), "command": server_cmd,
            "workers": 1, "threads": 5, "env": {}, "settings": {}
        },
        "app": { "name": "hello", "path": "/", "expect_status": 200, "expect_body": "hello world" },
        "topology": { "kind": "direct" },
        "verify": { "path": "/", "status": 200, "body": "hello world" },
        "load": {
            "schema": "rackbench/load-v1", "rackbench_version": "0.1.0",
            "url": "http://127.0.0.1:9000/",
            "config": {
                "endpoint": "127.0.0.1:9000", "connections": conns, "threads": 1,
                "duration_s": 3.0, "warmup_s": 1.0, "pipeline": 1,
                "keep_alive": true, "timeout_s": 10.0
            },
            "requests": { "total": (rps * 3.0) as u64 + errors, "ok": (rps * 3.0) as u64, "unfinished": 0, "unsent": 0 },
            "errors": { "connect": 0, "timeout": 0, "reset": errors, "parse": 0, "status": 0, "body": 0 },
            "throughput_rps": rps, "duration_s": 3.0,
            "latency_us": {
                "count": (rps * 3.0) as u64, "min": p50 / 2, "mean": p50 as f64 * 1.2,
                "stdev": p50 as f64 * 0.5, "p50": p50, "p90": p50 * 2, "p99": p99,
                "p999": p50 * 10, "max": p50 * 15
            },
            "connections": { "configured": conns, "opened": conns, "connect_failures": 0, "never_answered": 0 },
            "latency_distribution": dist,
            "timeline": timeline,
            "generator": { "cpu_user_s": 0.1, "cpu_sys_s": 0.2, "peak_rss_bytes": 5000000, "busiest_thread_utilization": 0.3 },
            "warnings": [], "interrupted": false
        },
        "server_metrics": {
            "cpu_user_s": 1.0, "cpu_sys_s": 0.5, "rss_peak_bytes": rss,
            "pss_peak_bytes": rss - 5_000_000, "uss_peak_bytes": rss - 8_000_000,
            "rss_mean_bytes": rss - 100_000, "pss_mean_bytes": rss - 5_100_000,
            "processes_peak": 2,
            "cpu_ms_per_request": 1500.0 / (rps * 3.0),
            "samples": {
                "cpu_user_s": 1.0, "cpu_sys_s": 0.5, "rss_peak_bytes": rss, "rss_mean_bytes": rss - 100_000,
                "pss_peak_bytes": rss - 5_000_000, "pss_mean_bytes": rss - 5_100_000,
                "uss_peak_bytes": rss - 8_000_000, "uss_mean_bytes": rss - 8_100_000,
                "processes_peak": 2, "processes_mean": 2.0, "samples": 20, "interval_ms": 200,
                "timeline": []
            },
            "telemetry": telemetry,
            "accept_queue": accept_queue
        },
        "telemetry": !telemetry.is_null(),
        "environment": environment(vec![server_cmd, load_cmd]),
        "killed_after_grace": [], "stopped_on_errors": false, "interrupted": false,
        "dir": "/results/work/x"
    })
}

/// puma's runs had telemetry on (app time 60% of the client's p50, some
/// GC); thin's did not. Both have the accept queue, sampled always.
fn inside(server: &str, p50: u64, requests: u64) -> (Value, Value) {
    let queue = json!({
        "max": 3, "mean": 1.5, "samples": 30,
        "timeline": [
            {"t_s": 0, "max": 2, "mean": 1.0, "samples": 10},
            {"t_s": 1, "max": 3, "mean": 2.0, "samples": 10},
            {"t_s": 2, "max": 2, "mean": 1.5, "samples": 10}
        ]
    });
    if server != "puma" {
        return (Value::Null, queue);
    }
    let app = p50 as f64 * 0.6;
    let q = |v: f64| json!({"p50": v, "p90": v * 1.5, "p99": v * 3.0, "mean": v * 1.1});
    let t = json!({
        "requests": requests, "app_us": q(app), "queue_requests": 0,
        "gc_runs": requests / 250, "gc_major_runs": 1, "gc_minor_runs": requests / 250 - 1,
        "gc_time_ms": requests as f64 * app * 1.1 * 0.05 / 1000.0,
        "gc_runs_per_1k_requests": 4.0, "gc_time_share": 0.05,
        "allocated_objects_per_request": 120.0, "processes": 1, "processes_exited_cleanly": 1,
        "per_worker": [],
        "timeline": [
            {"t_s": 0, "requests": requests / 3, "gc_runs": 40, "gc_time_ms": 12.0, "app_us_mean": app},
            {"t_s": 1, "requests": requests / 3, "gc_runs": 44, "gc_time_ms": 13.0, "app_us_mean": app},
            {"t_s": 2, "requests": requests / 3, "gc_runs": 36, "gc_time_ms": 11.0, "app_us_mean": app}
        ]
    });
    (t, queue)
}

/// Two records shaped like seed 001's misleading rows: puma c16 rep1 as
/// passenger on sleep.ru at 250 connections (57 OK, 347494 instant 503s),
/// thin c16 rep1 as thin that answered nothing in its window (16 requests
/// 1.5 s old at the end).
fn flag_the_seed_cases(id: &str, load: &mut Value) {
    let summary = |count: u64, base: u64| {
        json!({
            "count": count, "min": base, "mean": base as f64 * 1.1, "stdev": base as f64 * 0.1,
            "p50": base, "p90": base + base / 10, "p99": base + base / 5,
            "p999": base + base / 4, "max": base + base / 4
        })
    };
    match id {
        "puma__hello__direct__c16__rep1" => {
            load["requests"] = json!({ "total": 347_551, "ok": 57, "unfinished": 0, "unsent": 0 });
            load["errors"]["status"] = json!(347_494);
            load["throughput_rps"] = json!(19.0);
            load["latency_us"] = summary(57, 1_500_000);
            load["latency_failed_us"] = summary(347_494, 2_000);
        }
        "thin__hello__direct__c16__rep1" => {
            load["requests"] = json!({ "total": 16, "ok": 0, "unfinished": 16, "unsent": 0 });
            load["throughput_rps"] = json!(0.0);
            load["latency_us"] = summary(16, 1_500_000);
            load["latency_unfinished_us"] = summary(16, 1_500_000);
            load["latency_lower_bound"] = json!(true);
        }
        // A quiet mark: a p99 from 500 latencies (†) is still a result.
        "thin__hello__direct__c4__rep2" => {
            load["latency_us"]["count"] = json!(500);
        }
        _ => {}
    }
}

fn write(path: &Path, v: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

/// The seeded directory: thin c16 rep2 failed, puma c16 rep2 missing,
/// thin c4 rep1 with 3 reset errors at second 2, a break point for puma.
fn seed(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    let mut planned_all = Vec::new();
    for repeat in 1..=2u32 {
        for server in ["puma", "thin"] {
            for conns in [4u64, 16] {
                planned_all.push(planned(server, conns, repeat));
            }
        }
    }
    write(
        &dir.join("manifest.json"),
        &json!({
            "schema": "rackbench/run-v1", "layout": "rackbench/results-v1",
            "plan": "fixture", "follows": null, "started_at": "2026-01-02T03:00:00Z",
            "repeats": 2, "trials": planned_all,
            "skipped": ["unicorn: threads are not supported"],
            "breakpoints": ["puma__hello__direct__c4"],
            "environment": environment(vec!["rackbench run fixture.toml --out results/fixture".into()]),
            "command": "rackbench run fixture.toml --out results/fixture"
        }),
    );
    for p in &planned_all {
        let id = p["id"].as_str().unwrap().to_string();
        let server = p["server"].as_str().unwrap();
        let conns = p["shape"]["connections"].as_u64().unwrap();
        let repeat = p["repeat"].as_u64().unwrap();
        if id == "puma__hello__direct__c16__rep2" {
            continue; // missing: the run was interrupted before it
        }
        let mut stored = json!({
            "schema": "rackbench/run-trial-v1", "id": id, "group": p["group"],
            "repeat": repeat, "outcome": "ok", "planned": p,
        });
        if id == "thin__hello__direct__c16__rep2" {
            stored["outcome"] = json!("failed");
            stored["error"] = json!(
                "thin did not answer within 30s\nlast lines of its log:\nbind: address in use"
            );
        } else {
            let seed =
                (conns as f64 / 4.0) + repeat as f64 + if server == "thin" { 0.5 } else { 0.0 };
            let errors = (id == "thin__hello__direct__c4__rep1").then_some((2, 3));
            stored["trial"] = record(server, conns, seed, errors);
            flag_the_seed_cases(&id, &mut stored["trial"]["load"]);
        }
        // The fixture must stay a valid rackbench/run-trial-v1 record.
        let _: StoredTrial = serde_json::from_value(stored.clone()).expect("fixture parses");
        write(&dir.join("trials").join(format!("{id}.json")), &stored);
    }
    let steps = json!([
        {"level": 4.0, "throughput_rps": 11000.0, "errors": 0, "p99_us": 700, "load_seconds": 3.0, "clean": true},
        {"level": 12.0, "throughput_rps": 12500.0, "errors": 0, "p99_us": 1900, "load_seconds": 3.0, "clean": true},
        {"level": 36.0, "throughput_rps": 9000.0, "errors": 12, "p99_us": 9000, "load_seconds": 1.2, "clean": false, "why": "12 errors"},
        {"level": 20.0, "throughput_rps": 12800.0, "errors": 0, "p99_us": 2500, "load_seconds": 3.0, "clean": true},
        {"level": 27.0, "throughput_rps": 9500.0, "errors": 4, "p99_us": 8000, "load_seconds": 1.1, "clean": false,
         "why": "4 errors: 502 from nginx, upstream closed a kept-alive connection", "settle_s": 0.4,
         "errors_by_kind": {"connect": 0, "timeout": 0, "reset": 0, "parse": 0, "status": 4, "body": 0},
         "status_codes": {"502": 4},
         "first_failure": {"kind": "status", "status": 502, "status_line": "HTTP/1.1 502 Bad Gateway",
            "detail": "the status was not one of those expected", "at_s": 0.2,
            "log_line": "2026/01/02 03:04:05 [error] 7#7: *9 upstream prematurely closed connection while reading response header from upstream",
            "reason": "502 from nginx, upstream closed a kept-alive connection"}}
    ]);
    let bp = json!({
        "schema": "rackbench/breakpoint-v1", "group": "puma__hello__direct__c4",
        "server": "puma", "variant": "puma", "app": "hello", "behind": "none",
        "mode": "connections", "connections": 20.0, "throughput_rps": 12800.0,
        "load_seconds": 11.3,
        "search": {"start": 4.0, "max": 1000.0, "growth": 3.0, "resolution": 0.3, "integer": true, "slo_p99_us": null},
        "result": {"level": 20.0, "throughput_rps": 12800.0, "failed_at": 27.0, "load_seconds": 11.3, "steps": steps, "capped": false}
    });
    let _: StoredBreakpoint = serde_json::from_value(bp.clone()).expect("breakpoint parses");
    write(
        &dir.join("breakpoints").join("puma__hello__direct__c4.json"),
        &bp,
    );
}

/// The seeded directory with `edit` applied to each trial's stored record
/// (the failed one, which has no `trial`, included), each written back
/// and still a valid rackbench/run-trial-v1 record.
fn seed_with(dir: &Path, edit: impl Fn(&mut Value)) {
    seed(dir);
    for entry in std::fs::read_dir(dir.join("trials")).unwrap() {
        let path = entry.unwrap().path();
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        edit(&mut v);
        let _: StoredTrial = serde_json::from_value(v.clone()).expect("fixture parses");
        write(&path, &v);
    }
}

fn fixture_dir(name: &str) -> PathBuf {
    let dir = common::scratch(&format!("report-{name}"));
    seed(&dir);
    dir
}

fn snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    if std::env::var("UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        eprintln!("wrote snapshot {}", path.display());
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_SNAPSHOTS=1 writes it)", path.display()));
    if expected != actual {
        for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
            if e != a {
                panic!(
                    "{name} differs from the snapshot at line {}:\n  expected: {e}\n  actual:   {a}\n(UPDATE_SNAPSHOTS=1 rewrites it)",
                    i + 1
                );
            }
        }
        panic!(
            "{name} differs from the snapshot in length ({} vs {} lines; UPDATE_SNAPSHOTS=1 rewrites it)",
            expected.lines().count(),
            actual.lines().count()
        );
    }
}

#[test]
fn markdown_and_csv_match_the_snapshots() {
    let dir = fixture_dir("snap");
    let written = report::write_all(&dir, None).unwrap();
    let md = std::fs::read_to_string(&written.markdown).unwrap();
    let csv = std::fs::read_to_string(&written.csv).unwrap();
    let trials = std::fs::read_to_string(&written.trials_csv).unwrap();
    snapshot("report.md", &md);
    snapshot("report.csv", &csv);
    snapshot("trials.csv", &trials);
    // Deterministic: a second run writes the same bytes.
    let again = report::write_all(&dir, None).unwrap();
    assert_eq!(std::fs::read_to_string(&again.markdown).unwrap(), md);
    assert_eq!(
        std::fs::read_to_string(&again.html).unwrap(),
        std::fs::read_to_string(&written.html).unwrap()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn failed_and_missing_trials_are_marked_everywhere() {
    let dir = fixture_dir("marks");
    let r = Report::load(&dir).unwrap();
    assert_eq!(r.trials.len(), 8, "every planned trial is listed");
    let md = r.markdown();
    assert!(
        md.contains("| puma__hello__direct__c16__rep2 | **missing** | not run"),
        "{md}"
    );
    assert!(
        md.contains(
            "| thin__hello__direct__c16__rep2 | **failed** | thin did not answer within 30s"
        ),
        "{md}"
    );
    assert!(md.contains("1 failed"), "{md}");
    assert!(md.contains("1 missing"), "{md}");
    let term = r.terminal();
    assert!(
        term.contains("missing") && term.contains("failed"),
        "{term}"
    );
    let trials = r.trials_csv();
    assert!(trials.contains(",missing,"), "{trials}");
    assert!(trials.contains(",failed,\"thin did not answer"), "{trials}");
    let json: Value = serde_json::from_str(&r.json().unwrap()).unwrap();
    assert_eq!(json["schema"], "rackbench/report-v1");
    common::schema::assert_valid(
        "report-v1",
        &json,
        "report.json with failed and missing trials",
    );
    assert_eq!(json["counts"]["missing"], 1);
    assert_eq!(json["counts"]["failed"], 1);
    assert_eq!(json["counts"]["ok"], 6);
    assert_eq!(json["breakpoints"][0]["level"], 20.0);
    assert_eq!(
        json["breakpoints"][0]["why_failed"],
        "4 errors: 502 from nginx, upstream closed a kept-alive connection"
    );
    assert!(
        term.contains("first failing 27: puma: 4 errors: 502 from nginx, upstream closed a kept-alive connection"),
        "{term}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn html_is_self_contained_with_a_chart_per_section() {
    let dir = fixture_dir("html");
    let out = dir.join("elsewhere").join("custom.html");
    let written = report::write_all(&dir, Some(&out)).unwrap();
    assert_eq!(written.html, out);
    let html = std::fs::read_to_string(&out).unwrap();
    let mut sections = 0;
    for part in html.split("<section class=\"chart\"").skip(1) {
        let body = &part[..part.find("</section>").unwrap()];
        let id = &body[body.find("id=\"").unwrap() + 4..];
        let id = &id[..id.find('"').unwrap()];
        assert!(body.contains("<svg"), "chart section {id} has no <svg>");
        sections += 1;
    }
    for id in [
        "throughput",
        "latency",
        "timeline",
        "memory",
        "cpu",
        "spread",
        "breakpoints",
    ] {
        assert!(
            html.contains(&format!("<section class=\"chart\" id=\"{id}\"")),
            "no {id} section"
        );
    }
    assert!(sections >= 7);
    // Failed and missing trials are named with their reason.
    assert!(html.contains("status-failed"));
    assert!(html.contains("status-missing"));
    assert!(html.contains("thin did not answer within 30s"));
    assert!(html.contains("not run: no record in trials/"));
    // Errors where they happened: the second with errors is marked.
    assert!(
        html.contains("second 2: 3 errors"),
        "errors in the timeline"
    );
    assert!(html.contains("break point 20"));
    // Why the first failing level failed, with nginx's own line.
    assert!(
        html.contains("puma: 4 errors: 502 from nginx, upstream closed a kept-alive connection"),
        "the reason of the first failing level"
    );
    assert!(html.contains("<code>2026/01/02 03:04:05 [error] 7#7: *9 upstream prematurely closed"));
    // Environment and exact commands.
    assert!(html.contains("rackbench run fixture.toml --out results/fixture"));
    assert!(html.contains("rackbench load http://127.0.0.1:9000/ -c 16"));
    // Nothing loaded from elsewhere.
    for attr in ["src=", "href="] {
        for (i, _) in html.match_indices(attr) {
            let v = &html[i + attr.len()..(i + attr.len() + 12).min(html.len())];
            let v = v.trim_start_matches(['"', '\'']);
            assert!(
                !v.starts_with("http:") && !v.starts_with("https:") && !v.starts_with("//"),
                "external resource: {}",
                &html[i..(i + 60).min(html.len())]
            );
            if attr == "href=" {
                assert!(
                    v.starts_with('#'),
                    "only in-page links: {}",
                    &html[i..(i + 60).min(html.len())]
                );
            }
        }
    }
    assert!(!html.contains("<link"), "no stylesheets from files");
    assert!(!html.contains("@import"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_directory_without_results_is_refused() {
    let dir = common::work_dir("report-empty");
    let err = report::write_all(&dir, None).unwrap_err().to_string();
    assert!(err.contains("not a rackbench results directory"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_report_renders_in_a_browser_without_script_errors() {
    if !common::have_chromium() {
        return;
    }
    let dir = fixture_dir("browser");
    let written = report::write_all(&dir, None).unwrap();
    let profile = dir.join("chromium-profile");
    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let url = format!("file://{}", written.html.display());
    let out = common::headless_chromium(&profile)
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,2000")
        .arg(&url)
        .output()
        .expect("chromium runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium failed: {stderr}");
    assert!(!stderr.contains("Uncaught"), "JavaScript error: {stderr}");
    let len = std::fs::metadata(&shot).map_or(0, |m| m.len());
    assert!(len > 10_000, "screenshot {} is {len} bytes", shot.display());

    // The DOM after scripts ran: the report's sections are there.
    let out = common::headless_chromium(&dir.join("chromium-profile-dom"))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("chromium runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("Uncaught"), "JavaScript error: {stderr}");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("id=\"throughput\"") && dom.contains("<svg"),
        "DOM: {}",
        &dom[..dom.len().min(500)]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Regressions from seed 001: errors that answered at once made a
/// 19 req/s server look fast, and a server that answered nothing showed
/// "p99 0us". Every report marks such rows and says why.
#[test]
fn flagged_rows_are_marked_and_explained_in_every_report() {
    let dir = fixture_dir("flags");
    let r = Report::load(&dir).unwrap();
    let term = r.terminal();
    // The first row that starts with `lead` and contains `key`, with the
    // indented lines its wrapped notes continue on.
    let line = |text: &str, lead: &str, key: &str| -> String {
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with(lead) && l.contains(key))
            .unwrap_or_else(|| panic!("no line {lead}…{key}:\n{text}"));
        let more = lines[at + 1..].iter().take_while(|l| l.starts_with("   "));
        std::iter::once(&lines[at])
            .chain(more)
            .map(|l| l.trim())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let thin = line(&term, "thin ", "16 conn");
    assert!(
        thin.contains("≥ 1.50s") && thin.contains("0†") && thin.contains("lower bound"),
        "{thin}"
    );
    let puma = line(&term, "puma ", "16 conn");
    assert!(
        puma.contains(">99.9% of requests failed: not a result") && puma.contains("1.80s†"),
        "{puma}"
    );
    let clean = line(&term, "puma ", " 4 conn");
    assert!(!clean.contains('†') && !clean.contains('≥'), "{clean}");

    let md = r.markdown();
    let thin = line(&md, "| thin | 16 conn |", "");
    assert!(
        thin.contains("≥ 1800.00†") && thin.contains("0†") && thin.contains("lower bound"),
        "{thin}"
    );
    let puma = line(&md, "| puma | 16 conn |", "");
    assert!(
        puma.contains(">99.9% of requests failed: not a result")
            && puma.contains("p90/p99 from 57 latencies"),
        "{puma}"
    );

    let csv = r.csv();
    let thin = line(&csv, "thin__hello__direct__c16,", "");
    assert!(
        thin.contains(",true,") && thin.contains("lower bound"),
        "{thin}"
    );
    let trials = r.trials_csv();
    assert!(
        line(&trials, "puma__hello__direct__c16__rep1", "").contains("not a result"),
        "{trials}"
    );

    let html = r.html();
    assert!(
        html.contains("≥ 1.80s†") && html.contains("<b>0†</b>"),
        "html lacks the marks"
    );
    assert!(html.contains("not a result"), "html lacks the notes");
    // Only rows that are not a result are painted red; a † is a quiet
    // mark with its note, and the notes cell wraps.
    let html_row = |variant: &str, load: &str| -> String {
        let at = html
            .find(&format!("</span> {variant}</td><td>{load}</td>"))
            .unwrap_or_else(|| panic!("no summary row {variant} {load}"));
        let start = html[..at].rfind("<tr").unwrap();
        let end = at + html[at..].find("</tr>").unwrap();
        html[start..end].to_string()
    };
    for (variant, load, red) in [
        ("puma", "16 conn", true),
        ("thin", "16 conn", true),
        ("puma", "4 conn", false),
        ("thin", "4 conn", false),
    ] {
        let row = html_row(variant, load);
        assert_eq!(row.starts_with("<tr class=\"bad\">"), red, "{row}");
        assert_eq!(row.contains("notes bad-text"), red, "{row}");
    }
    let quiet = html_row("thin", "4 conn");
    assert!(
        quiet.contains("p99 from 500 latencies") && quiet.contains("class=\"l notes\""),
        "{quiet}"
    );
    assert!(
        html.contains("td.notes{white-space:normal;"),
        "notes do not wrap"
    );

    // The errors table alarms about runs that are not results, not about
    // 3 errors in 37500 requests.
    let errors_row = |id: &str| -> String {
        let at = html.find(&format!("<td class=\"l\">{id}</td>")).unwrap();
        html[html[..at].rfind("<tr").unwrap()..at].to_string()
    };
    assert_eq!(errors_row("thin__hello__direct__c4__rep1"), "<tr>");
    assert_eq!(
        errors_row("puma__hello__direct__c16__rep1"),
        "<tr class=\"bad\">"
    );

    // Every report opens with what the data shows, rows that are not
    // results named.
    let said = "Not results: puma at 16 conn (>99.9% of requests failed); thin at 16 conn (no OK response).";
    let shows_at = html
        .find("id=\"shows\"")
        .expect("html opens with what this shows");
    assert!(shows_at < html.find("id=\"summary\"").unwrap());
    assert!(
        html.contains(&said.replace('>', "&gt;")),
        "html lacks the paragraph"
    );
    assert!(
        md.starts_with("# rackbench report: fixture\n\n## What this shows\n\n"),
        "{md}"
    );
    assert!(md.contains(said), "{md}");
    assert!(term.starts_with("what this shows:\n"), "{term}");
    assert!(term.replace("\n    ", " ").contains(said), "{term}");

    let json: Value = serde_json::from_str(&r.json().unwrap()).unwrap();
    let t = json["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "thin__hello__direct__c16__rep1")
        .unwrap();
    assert_eq!(t["latency_lower_bound"], true);

    let summary = rackbench::report::render_summary(
        &r.groups
            .iter()
            .filter_map(|g| g.summary.clone())
            .collect::<Vec<_>>(),
    );
    // The summary `run` prints reads the groups in natural order of their
    // names: "…__c4" before "…__c16" (plain order put 16 first).
    let names: Vec<String> = rackbench::store::study::Study::open(&dir)
        .unwrap()
        .summary()
        .unwrap()
        .into_iter()
        .map(|g| g.group)
        .collect();
    assert_eq!(
        names,
        [
            "puma__hello__direct__c4",
            "puma__hello__direct__c16",
            "thin__hello__direct__c4",
            "thin__hello__direct__c16"
        ]
    );
    let thin = line(&summary, "thin ", "≥ 1.50s");
    assert!(
        thin.contains("0†") && thin.contains("lower bound"),
        "{thin}"
    );
    let puma = line(&summary, "puma ", "347494");
    assert!(puma.contains("not a result"), "{puma}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 15: telemetry in every report. puma's runs had it on, thin's
/// did not: the columns, the stacked bar per group and the per-second
/// accept queue and GC runs show for puma, and thin's rows stay empty.
#[test]
fn telemetry_shows_where_the_time_goes_in_every_report() {
    let dir = fixture_dir("telemetry");
    report::write_all(&dir, None).unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("| queue p50 (ms) | app p50 (ms) | GC/1k req | GC time % |"),
        "{md}"
    );
    // puma c4: app p50 is 60% of the client's 0.2 ms, GC 4 per 1k, 5%.
    assert!(
        md.contains("| puma | 4 conn | - | 0.12 | 4.0 | 5.0 |"),
        "{md}"
    );
    assert!(
        !md.contains("| thin | 4 conn | - |"),
        "thin had no telemetry"
    );

    let csv = std::fs::read_to_string(dir.join("report.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| {
        head.iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no {name}: {head:?}"))
    };
    let (app, gc, share) = (
        col("app_p50_us"),
        col("gc_runs_per_1k_requests"),
        col("gc_time_pct"),
    );
    col("queue_p50_us");
    for line in lines {
        let row: Vec<&str> = line.split(',').collect();
        if row[0] == "puma__hello__direct__c4" {
            assert_eq!(
                (row[app], row[gc], row[share]),
                ("118.5", "4.0", "5.0"),
                "{line}"
            );
        }
        if row[0] == "thin__hello__direct__c4" {
            assert_eq!((row[app], row[gc]), ("", ""), "{line}");
        }
    }
    let trials = std::fs::read_to_string(dir.join("trials.csv")).unwrap();
    assert!(trials
        .lines()
        .next()
        .unwrap()
        .contains(",queue_p50_us,app_p50_us,gc_runs_per_1k_requests,gc_time_pct"));

    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let split = &html[html.find("id=\"time-split\"").expect("the stacked bars")..];
    let split = &split[..split.find("</section>").unwrap()];
    assert!(
        split.contains("puma · hello · direct · 4 conn: app "),
        "{split}"
    );
    assert!(
        split.contains(": GC ") && split.contains(": rest "),
        "{split}"
    );
    assert!(!split.contains("thin ·"), "thin had no telemetry");
    assert!(html.contains("href=\"#time-split\""));
    let tl = &html[html
        .find("Inside the server per second, puma__hello__direct__c4__rep1")
        .expect("puma's timeline")..];
    assert!(tl[..tl.find("</svg>").unwrap()].contains("GC runs/s"));
    assert!(
        html.contains("Inside the server per second, thin__hello__direct__c4__rep1"),
        "the accept queue is drawn without telemetry too"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A trial the machine disturbed (18% steal) is a caveat, not a failure:
/// every report says so beside the figures, quietly, and only for its group.
#[test]
fn a_disturbed_trial_is_noted_in_every_report() {
    let dir = fixture_dir("disturbed");
    let file = dir.join("trials/puma__hello__direct__c4__rep1.json");
    let mut stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    stored["trial"]["disturbance"] = json!({
        "steal_share": 0.18, "foreign_cpu_share": 0.02, "disturbed": true,
        "cpus": [0, 1], "window_s": 10.0, "steal_cpu_s": 3.6, "foreign_cpu_s": 0.4,
        "own_cpu_s": 12.0, "own_cpu_outside": false,
        "threshold_steal_share": 0.05, "threshold_foreign_cpu_share": 0.1,
        "foreign_top": [{"pid": 4242, "name": "cc1plus", "cpu_s": 0.4}]
    });
    write(&file, &stored);
    let r = Report::load(&dir).unwrap();
    let note = "1 of 2 runs disturbed (steal up to 18%)";
    let line = |text: &str, lead: &str, key: &str| -> String {
        text.lines()
            .find(|l| l.starts_with(lead) && l.contains(key))
            .unwrap_or_else(|| panic!("no line {lead}…{key}:\n{text}"))
            .to_string()
    };
    // The terminal wraps a row's notes onto indented lines of their own.
    let row_of = |text: &str, lead: &str, key: &str| -> String {
        let mut lines = text
            .lines()
            .skip_while(|l| !(l.starts_with(lead) && l.contains(key)));
        let first = lines
            .next()
            .unwrap_or_else(|| panic!("no row {lead}…{key}:\n{text}"));
        let rest = lines.take_while(|l| l.starts_with(' '));
        std::iter::once(first)
            .chain(rest)
            .flat_map(str::split_whitespace)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let term = r.terminal();
    assert!(row_of(&term, "puma ", " 4 conn").contains(note), "{term}");
    assert!(
        !row_of(&term, "thin ", " 4 conn").contains("disturbed"),
        "{term}"
    );

    let md = r.markdown();
    assert!(line(&md, "| puma | 4 conn |", "").contains(note), "{md}");
    assert!(md.contains("## Disturbed trials"), "{md}");
    let row = line(&md, "| puma__hello__direct__c4__rep1 |", "");
    assert!(
        row.contains("| 18.0% | 2.0% | 0-1 | cc1plus (0.4 s) |"),
        "{row}"
    );

    let csv = r.csv();
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = head.iter().position(|h| *h == "disturbed_runs").unwrap();
    // The notes column holds commas inside quotes: count from the end.
    let disturbed = |lead: &str| line(&csv, lead, "").rsplit(',').nth(1).unwrap().to_string();
    assert_eq!(
        head[col..],
        ["disturbed_runs", "requests_per_worker"],
        "disturbed_runs is before the last column"
    );
    assert_eq!(disturbed("puma__hello__direct__c4,"), "1", "{csv}");
    assert_eq!(disturbed("thin__hello__direct__c4,"), "0", "{csv}");
    let trials = r.trials_csv();
    assert!(
        line(&trials, "puma__hello__direct__c4__rep1", "").ends_with(",true,0.1800,0.0200"),
        "{trials}"
    );
    assert!(
        line(&trials, "puma__hello__direct__c4__rep2", "").ends_with(",,,"),
        "a record without a disturbance leaves the columns empty: {trials}"
    );

    let html = r.html();
    assert!(
        html.contains("<span class=\"note\" title=") && html.contains(&format!("⚠ {note}</span>")),
        "html lacks the group's quiet note"
    );
    assert!(
        html.contains("<p class=\"note\">⚠ disturbed: 18% steal</p>"),
        "html lacks the trial's note"
    );

    let json: Value = serde_json::from_str(&r.json().unwrap()).unwrap();
    common::schema::assert_valid("report-v1", &json, "report.json with a disturbed trial");
    let t = json["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "puma__hello__direct__c4__rep1")
        .unwrap();
    assert_eq!(t["disturbance"]["disturbed"], true);
    let g = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "puma__hello__direct__c4")
        .unwrap();
    assert_eq!(g["summary"]["disturbance"]["disturbed"], 1);

    let summary = report::render_summary(
        &r.groups
            .iter()
            .filter_map(|g| g.summary.clone())
            .collect::<Vec<_>>(),
    );
    assert!(
        row_of(&summary, "puma ", "  4 ").contains(note),
        "{summary}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A runtime object as `runtime::inside` writes it: system's Ruby 3.1
/// or debian-13's Ruby 3.3, YJIT as given, and `mismatches`.
fn runtime(name: &str, yjit: bool, mismatches: &[&str]) -> Value {
    let (kind, version, server, root) = match name {
        "system" => ("system", "3.1.2", "puma 5.6.5", Value::Null),
        _ => (
            "debian",
            "3.3.8",
            "puma 6.6.0",
            json!("/var/lib/rackbench/debian-13"),
        ),
    };
    json!({
        "name": name, "kind": kind,
        "ruby_description": format!("ruby {version} (2025-04-09 revision fixture) {}[x86_64-linux-gnu]",
            if yjit { "+YJIT " } else { "" }),
        "ruby_version": version, "engine": "ruby", "yjit": yjit, "allocator": "glibc",
        "server_version": server, "server_version_from": "process",
        "asked": { "yjit": yjit }, "processes_reporting": 1,
        "mismatches": mismatches, "root": root
    })
}

/// The seeded directory with each record's runtime set by `of(id)`.
fn seed_runtimes(dir: &Path, of: impl Fn(&str) -> Value) {
    seed_with(dir, |v| {
        if v["trial"].is_object() {
            v["trial"]["runtime"] = of(v["id"].as_str().unwrap());
        }
    });
}

/// Issue 27: a study whose trials ran on system's Ruby 3.1 (puma) and
/// debian-13's Ruby 3.3 with YJIT (thin) labels every row with its
/// runtime, lists each runtime once in the environment, and shows a
/// record's mismatch beside its row.
#[test]
fn a_study_on_two_runtimes_labels_every_row_and_lists_each_runtime_once() {
    let dir = common::scratch("report-runtimes");
    let asked = "allocator asked jemalloc, the server mapped glibc";
    seed_runtimes(&dir, |id| {
        if id.starts_with("puma") {
            runtime("system", false, &[])
        } else if id == "thin__hello__direct__c4__rep2" {
            runtime("debian-13", true, &[asked])
        } else {
            runtime("debian-13", true, &[])
        }
    });
    let written = report::write_all(&dir, None).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let (md, html) = (read(&written.markdown), read(&written.html));
    let (sys, deb) = ("system ruby 3.1.2", "debian-13 ruby 3.3.8 +yjit");
    assert!(md.contains("| Server | Runtime | Load | Runs |"), "{md}");
    assert!(md.contains(&format!("| puma | {sys} | 4 conn |")), "{md}");
    assert!(md.contains(&format!("| thin | {deb} | 16 conn |")), "{md}");
    assert!(
        md.contains(&format!("- Runtime `{deb}`: ruby 3.3.8")),
        "{md}"
    );
    let thin_c4 = md
        .lines()
        .find(|l| l.starts_with(&format!("| thin | {deb} | 4 conn")))
        .unwrap();
    assert!(thin_c4.contains(&format!("runtime: {asked}")), "{thin_c4}");
    let terminal = &written.table;
    assert!(
        terminal.contains(deb) && terminal.contains(sys),
        "{terminal}"
    );
    let csv = read(&written.csv);
    assert!(csv.lines().next().unwrap().ends_with(",runtime"), "{csv}");
    assert!(csv.contains("thin__hello__direct__c16,thin,"));
    assert!(csv
        .lines()
        .any(|l| l.starts_with("thin__hello__direct__c4,") && l.ends_with(deb)));
    let trials = read(&written.trials_csv);
    assert!(trials
        .lines()
        .any(|l| l.starts_with("puma__hello__direct__c4__rep1,") && l.ends_with(sys)));
    // The environment lists each runtime once, from the records.
    let env = &html[html.find("<section id=\"environment\"").unwrap()..];
    for (label, description) in [
        (
            sys,
            "ruby 3.1.2 (2025-04-09 revision fixture) [x86_64-linux-gnu]",
        ),
        (
            deb,
            "ruby 3.3.8 (2025-04-09 revision fixture) +YJIT [x86_64-linux-gnu]",
        ),
    ] {
        assert_eq!(
            env.matches(&format!("<td class=\"l\">{label}</td>"))
                .count(),
            1,
            "{label}"
        );
        assert!(env.contains(description), "{description}");
    }
    assert!(env.contains("/var/lib/rackbench/debian-13") && env.contains("puma 6.6.0"));
    assert!(env.contains(asked), "the mismatch in the environment");
    assert!(html.contains("<th class=\"l\">Runtime</th><th>Load</th>"));
    let json: Value = serde_json::from_str(&read(&written.json)).unwrap();
    common::schema::assert_valid("report-v1", &json, "report.json on two runtimes");
    let labels: Vec<&str> = json["runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, [deb, sys]);
    assert_eq!(json["runtimes"][0]["mismatches"], json!([asked]));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// When every trial ran on one runtime, it is shown once in the
/// environment and no column is added: the tables read as before.
#[test]
fn a_study_on_one_runtime_shows_it_once_and_adds_no_column() {
    let dir = common::scratch("report-one-runtime");
    seed_runtimes(&dir, |_| runtime("debian-13", false, &[]));
    let written = report::write_all(&dir, None).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let md = read(&written.markdown);
    let label = "debian-13 ruby 3.3.8";
    assert!(
        md.contains(&format!("- Runtime `{label}`: ruby 3.3.8")),
        "{md}"
    );
    assert!(!md.contains("| Runtime |"), "{md}");
    let snapshot_csv =
        read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/report.csv"));
    assert_eq!(read(&written.csv), snapshot_csv, "no runtime column");
    let html = read(&written.html);
    assert_eq!(
        html.matches(&format!("<td class=\"l\">{label}</td>"))
            .count(),
        1
    );
    assert!(!html.contains("<th class=\"l\">Runtime</th><th>Load</th>"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The seeded directory with every record run under `budget(id)` (None:
/// no budget), as `budget::BudgetRecord` writes it.
fn seed_budgets(dir: &Path, budget: impl Fn(&str) -> Option<Value>) {
    seed_with(dir, |v| {
        if let (true, Some(b)) = (v["trial"].is_object(), budget(v["id"].as_str().unwrap())) {
            v["trial"]["budget"] = b;
        }
    });
}

fn budget_record(memory_mib: u64, kills: u64, events: &[f64]) -> Value {
    json!({
        "memory_limit_bytes": memory_mib << 20, "cpus": 1.0,
        "memory_peak_bytes": 431u64 << 20, "oom_kills": kills,
        "cpu_throttled_s": 0.36, "cpu_throttled_periods": 12,
        "cgroup": "v2", "oom_events": events
    })
}

/// Issue 28: a study run under one budget (512 MiB, 1 CPU) where a puma
/// worker was killed for memory 1.5 s into the window: the budget is said
/// once in the header, each group shows its peak against the limit and its
/// throttling, the killed trial's row is flagged in every format (never a
/// clean result) and its timeline marks the kill at its second.
#[test]
fn a_worker_killed_for_memory_is_flagged_everywhere_and_marked_on_the_timeline() {
    let dir = common::scratch("report-budget");
    let killed = "puma__hello__direct__c4__rep1";
    seed_budgets(&dir, |id| {
        Some(if id == killed {
            budget_record(512, 1, &[1.5])
        } else {
            budget_record(512, 0, &[])
        })
    });
    let written = report::write_all(&dir, None).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let note = "killed for memory: 1 worker (limit 512 MiB)";
    let header = "Budget: 512 MiB, 1 CPU for each server process tree (every trial)";

    let term = &written.table;
    assert!(term.contains(header), "{term}");
    assert!(term.contains(note), "{term}");
    assert!(
        term.contains("peak 431 MiB of 512 MiB, 84%; CPU throttled 0.12 s/s"),
        "{term}"
    );

    let md = read(&written.markdown);
    assert!(md.contains(&format!("- {header}")), "{md}");
    let row = md
        .lines()
        .find(|l| l.starts_with("| puma | 4 conn | 2/2 "))
        .unwrap();
    assert!(row.contains(note), "{row}");
    assert!(
        !md.lines()
            .find(|l| l.starts_with("| thin | 4 conn | 2/2 "))
            .unwrap()
            .contains("killed"),
        "only the killed group is flagged"
    );
    assert!(
        md.contains("| Server | Load | Memory peak of limit | CPU throttled (s per s) | Killed for memory |"),
        "one budget: no Budget column: {md}"
    );
    assert!(
        md.contains("| puma | 4 conn | 431 MiB of 512 MiB, 84% | 0.12 s/s | 1 (1 of 2 runs) |"),
        "{md}"
    );

    let csv = read(&written.csv);
    assert!(
        csv.lines().next().unwrap().ends_with(
            ",budget,memory_limit_bytes,memory_peak_bytes,memory_peak_share,cpus,cpu_throttled_s_per_s,oom_kills"
        ),
        "{csv}"
    );
    let puma = csv
        .lines()
        .find(|l| l.starts_with("puma__hello__direct__c4,"))
        .unwrap();
    assert!(puma.contains(note) && puma.ends_with(",1"), "{puma}");
    let trials = read(&written.trials_csv);
    let t = trials.lines().find(|l| l.starts_with(killed)).unwrap();
    assert!(t.contains(note) && t.ends_with(",1"), "{t}");

    let html = read(&written.html);
    let summary = &html[html.find("<section id=\"summary\"").unwrap()..];
    let row = &summary[..summary.find(note).expect("the note in the summary")];
    let row_start = row.rfind("<tr").unwrap();
    assert!(
        row[row_start..].starts_with("<tr class=\"bad\">"),
        "the killed group is painted as not a result"
    );
    assert!(html.contains(&format!("<p id=\"budget\">{header}</p>")));
    let tl = &html[html
        .find(&format!("Throughput per second, {killed}"))
        .expect("the killed trial's timeline")..];
    let svg = &tl[..tl.find("</svg>").unwrap()];
    assert!(
        svg.contains(">killed for memory at 2.5s</text>"),
        "the kill marked 1.5 s after the 1 s warm-up: {svg}"
    );
    assert!(!html.contains(
        "Throughput per second, puma__hello__direct__c4__rep2</title><desc></desc>killed"
    ));
    assert_eq!(
        html.matches("killed for memory at").count(),
        1,
        "one kill, one marker"
    );

    let json: Value = serde_json::from_str(&read(&written.json)).unwrap();
    common::schema::assert_valid("report-v1", &json, "report.json with budgets");
    assert_eq!(json["budgets"], json!(["512 MiB, 1 CPU"]));
    let t = json["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == killed)
        .unwrap();
    assert_eq!(t["budget"]["oom_kills"], 1);
    assert!(t["notes"].as_array().unwrap().contains(&json!(note)));
    let g = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "puma__hello__direct__c4")
        .unwrap();
    assert_eq!(g["budget"]["oom_kills"], 1);
    assert!(g["notes"].as_str().unwrap().contains(note));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Budgets that differ between groups are a Budget column, and a study
/// without any budget reads exactly as before (the snapshots).
#[test]
fn budgets_that_differ_are_a_column_and_no_budget_changes_nothing() {
    let dir = common::scratch("report-budgets-differ");
    seed_budgets(&dir, |id| {
        Some(budget_record(
            if id.starts_with("puma") { 512 } else { 256 },
            0,
            &[],
        ))
    });
    let md = Report::load(&dir).unwrap().markdown();
    assert!(
        md.contains(
            "- Budgets: 512 MiB, 1 CPU; 256 MiB, 1 CPU (each group's in the budget tables)"
        ),
        "{md}"
    );
    assert!(
        md.contains("| thin | 4 conn | 256 MiB, 1 CPU | 431 MiB of 256 MiB, 168% |"),
        "{md}"
    );
    seed_budgets(&dir, |_| None);
    let written = report::write_all(&dir, None).unwrap();
    let snap = |name: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/snapshots")
                .join(name),
        )
        .unwrap()
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(&written.markdown), snap("report.md"));
    assert_eq!(read(&written.csv), snap("report.csv"));
    assert_eq!(read(&written.trials_csv), snap("trials.csv"));
    let json: Value = serde_json::from_str(&read(&written.json)).unwrap();
    assert!(json.get("budgets").is_none() && json["groups"][0].get("budget").is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The seeded directory with every record's load beside the slow clients
/// `slow(id)` (None: none), as `load::slow` writes them.
fn seed_slow(dir: &Path, slow: impl Fn(&str) -> Option<Value>) {
    seed_with(dir, |v| {
        if let (true, Some(s)) = (v["trial"].is_object(), slow(v["id"].as_str().unwrap())) {
            v["trial"]["load"]["slow_clients"] = s;
        }
    });
}

/// 4 `headers` slow clients: a server that closed none (all 4 open at
/// the end, held 6 s each) or one that closed `closed`, held 1.5 s each.
fn slow_record(closed: u64) -> Value {
    let held = if closed == 0 { 0.0 } else { 1.5 };
    json!({
        "count": 4, "mode": "headers", "bytes_per_step": 4, "every_ms": 1000,
        "accepted": 4 + closed, "connections_opened": 4 + closed, "refused": 0,
        "closed_by_server": closed,
        "held_s": { "count": closed, "p50": held, "p90": held, "p99": held, "max": held },
        "open_at_end": 4, "open_at_end_min_s": 5.999,
        "bytes_sent": 96, "bytes_received": 0, "responses": 0
    })
}

/// Issue 29: a study whose every trial ran beside 4 `headers` slow
/// clients says so once in the header of every format, and each group
/// shows what its slow connections saw: accepted, closed by the server,
/// the held p50 of the closed ones, and those open at the end (held at
/// least 6 s: the end cut them off, so they are no held sample).
#[test]
fn slow_clients_shared_by_every_trial_are_one_header_line_and_a_table() {
    let dir = common::scratch("report-slow");
    seed_slow(&dir, |id| {
        Some(slow_record(if id.starts_with("thin") { 3 } else { 0 }))
    });
    let written = report::write_all(&dir, None).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let header =
        "Slow clients: 4 headers (4 B every 1 s) beside the load of every trial, in none of its figures";

    let term = &written.table;
    assert!(term.contains(header), "{term}");
    assert!(
        term.contains("8 accepted, 0 closed by the server, held p50 none closed; 8 open at the end, held ≥ 6.0 s"),
        "puma's 2 runs: {term}"
    );

    let md = read(&written.markdown);
    assert!(md.contains(&format!("- {header}")), "{md}");
    assert!(
        md.contains("| Server | Load | Accepted | Closed by server | Held p50 (closed ones) | Open at end |"),
        "one setting: no Slow column: {md}"
    );
    assert!(
        md.contains("| puma | 4 conn | 8 | 0 | none closed | 8, held ≥ 6.0 s |"),
        "{md}"
    );
    assert!(
        md.contains("| thin | 4 conn | 14 | 6 | 1.5 s | 8, held ≥ 6.0 s |"),
        "{md}"
    );

    let csv = read(&written.csv);
    assert!(
        csv.lines().next().unwrap().ends_with(
            ",slow,slow_accepted,slow_closed_by_server,slow_held_p50_s,slow_open_at_end,slow_open_at_end_min_s"
        ),
        "{csv}"
    );
    let thin = csv
        .lines()
        .find(|l| l.starts_with("thin__hello__direct__c4,"))
        .unwrap();
    assert!(thin.ends_with(",4 headers,14,6,1.5000,8,5.9990"), "{thin}");
    let trials = read(&written.trials_csv);
    let t = trials
        .lines()
        .find(|l| l.starts_with("puma__hello__direct__c4__rep1,"))
        .unwrap();
    assert!(t.ends_with(",4 headers,4,0,,4,5.9990"), "{t}");

    let html = read(&written.html);
    assert!(
        html.contains(&format!("<p id=\"slow\">{header}</p>")),
        "header"
    );
    assert!(html.contains(
        "<table class=\"slow\"><tr><th class=\"l\">Server</th><th>Load</th><th>Accepted</th>"
    ));
    assert!(html.contains("<td>8, held ≥ 6.0 s</td>"));

    let json: Value = serde_json::from_str(&read(&written.json)).unwrap();
    common::schema::assert_valid("report-v1", &json, "report.json with slow clients");
    assert_eq!(json["slow_settings"], json!(["4 headers (4 B every 1 s)"]));
    assert_eq!(json["slow_line"], json!(header));
    let g = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "thin__hello__direct__c4")
        .unwrap();
    assert_eq!(g["slow_clients"]["closed_by_server"], 6);
    assert_eq!(g["slow_clients"]["held_p50_s"], 1.5);
    let t = json["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "puma__hello__direct__c4__rep1")
        .unwrap();
    assert_eq!(t["slow_clients"]["held_p50_s"], Value::Null);
    assert_eq!(t["slow_clients"]["open_at_end"], 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Some trials with slow clients and some without (a study of `[0, 4]`):
/// the header lists both, and the table gets a Slow column where the
/// trials without them say "none"; a study without any reads exactly as
/// before (the snapshots).
#[test]
fn slow_clients_that_differ_are_a_column_and_none_changes_nothing() {
    let dir = common::scratch("report-slow-differ");
    seed_slow(&dir, |id| id.starts_with("puma").then(|| slow_record(0)));
    let written = report::write_all(&dir, None).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let md = read(&written.markdown);
    assert!(
        md.contains("- Slow clients: none; 4 headers (4 B every 1 s) (each group's in the slow-client tables; in none of the load's figures)"),
        "{md}"
    );
    assert!(md.contains("| Server | Load | Slow | Accepted |"), "{md}");
    assert!(
        md.contains("| puma | 4 conn | 4 headers | 8 | 0 | none closed | 8, held ≥ 6.0 s |"),
        "{md}"
    );
    assert!(
        md.contains("| thin | 4 conn | none | - | - | - | - |"),
        "{md}"
    );
    assert!(
        written.table.contains("4 headers: 8 accepted"),
        "{}",
        written.table
    );
    let csv = read(&written.csv);
    let thin = csv
        .lines()
        .find(|l| l.starts_with("thin__hello__direct__c4,"))
        .unwrap();
    assert!(thin.ends_with(",none,,,,,"), "{thin}");
    let html = read(&written.html);
    assert!(html.contains("<th class=\"l\">Slow</th>"));
    assert!(html.contains("<td class=\"l\">none</td><td>–</td>"));

    seed_slow(&dir, |_| None);
    let written = report::write_all(&dir, None).unwrap();
    let snap = |name: &str| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/snapshots")
                .join(name),
        )
        .unwrap()
    };
    assert_eq!(read(&written.markdown), snap("report.md"));
    assert_eq!(read(&written.csv), snap("report.csv"));
    assert_eq!(read(&written.trials_csv), snap("trials.csv"));
    let json: Value = serde_json::from_str(&read(&written.json)).unwrap();
    assert!(json.get("slow_line").is_none() && json["groups"][0].get("slow_clients").is_none());
    assert!(!read(&written.html).contains("id=\"slow\""));
}

/// Issue 29: a study where one trial was a soak (the committed record
/// tests/contracts/trial-v1-soak.json: the leak app on puma, 2 workers).
/// Every report says each worker's verdict; the HTML report draws its
/// memory over time, one line per worker and its fitted slope, beside the
/// table of verdicts. The other trials, and a study without a soak
/// (the snapshots), get nothing.
#[test]
fn a_soak_is_charted_per_worker_and_its_verdicts_are_in_every_report() {
    let dir = common::scratch("report-soak");
    let soaked = "puma__hello__direct__c4__rep1";
    let sample: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/contracts/trial-v1-soak.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let soak = sample["soak"].clone();
    let verdicts: Vec<String> = soak["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["verdict"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(verdicts.len(), 2);
    seed_with(&dir, |v| {
        if v["id"] == soaked {
            v["trial"]["soak"] = soak.clone();
        }
    });

    let written = report::write_all(&dir, None).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let term = &written.table;
    assert!(
        term.contains(&format!("soak {soaked}: 2 workers over 40s at 200 req/s")),
        "{term}"
    );
    for verdict in &verdicts {
        assert!(term.contains(verdict.as_str()), "{term}");
    }
    assert!(term.contains("rackbench (RSS): +14.5 MiB/hour"), "{term}");

    let md = read(&written.markdown);
    assert_eq!(md.matches("## Soak").count(), 1, "{md}");
    assert!(
        md.contains("| worker 1 (pid 6266) | uss | +2412.2 | +2277.8 to +2531.2 |"),
        "{md}"
    );
    assert!(md.contains("| all workers |  | +11308.4 |"), "{md}");

    let html = read(&written.html);
    assert!(html.contains("<a href=\"#soak\">Soak</a>"));
    assert_eq!(
        html.matches("<section class=\"chart\" id=\"soak\">")
            .count(),
        1
    );
    let title = format!("Memory per worker, {soaked}: 2 workers over 40s at 200 req/s");
    assert!(
        html.contains(&format!("aria-label=\"{title}\"")),
        "no chart"
    );
    let section = &html[html.find("id=\"soak\"").unwrap()..];
    let section = &section[..section.find("</section>").unwrap()];
    // Each worker: its series and its fitted slope, dashed.
    assert_eq!(section.matches("<polyline").count(), 4, "{section}");
    assert_eq!(
        section
            .matches("stroke-width=\"1.2\" stroke-dasharray=\"5 3\"")
            .count(),
        2
    );
    assert!(
        section.contains(">fitted growth<"),
        "the dashed line is in the legend"
    );
    assert!(section.contains("worker 2 (pid 6267): +8896.2 MiB/hour"));
    assert!(section.contains("still growing"));
    assert_eq!(
        html.matches("aria-label=\"Memory per worker, ").count(),
        1,
        "one chart: one soak"
    );

    // Without a soak: no section, no link.
    seed(&dir);
    let plain = read(&report::write_all(&dir, None).unwrap().html);
    assert!(!plain.contains("id=\"soak\"") && !plain.contains("#soak"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One endpoint of a load's `endpoints` (load-v1, as the engine writes
/// it with `--mix`).
fn endpoint_record(
    name: &str,
    path: &str,
    requests: u64,
    rps: f64,
    (p50, p90, p99): (u64, u64, u64),
    status_errors: u64,
) -> Value {
    json!({
        "name": name, "method": "GET", "path": path, "weight": 1.0,
        "requests": requests, "ok": requests - status_errors, "throughput_rps": rps,
        "latency_us": {"count": requests - status_errors, "min": p50 / 2, "mean": p50 as f64,
                       "stdev": 1.0, "p50": p50, "p90": p90, "p99": p99, "p999": p99,
                       "max": p99},
        "errors": {"connect": 0, "timeout": 0, "reset": 0, "parse": 0,
                   "status": status_errors, "body": 0}
    })
}

/// The seeded directory with every record's load carrying a mix of
/// `index` (300 requests, 100 + 10·repeat rps, p50 1 ms × repeat) and
/// `show` (100 requests, 2 failed, 30 rps, p50 200 µs).
fn seed_endpoints(dir: &Path) {
    seed_with(dir, |v| {
        if !v["trial"].is_object() {
            return;
        }
        let r = v["repeat"].as_u64().unwrap();
        v["trial"]["load"]["endpoints"] = json!([
            endpoint_record(
                "index",
                "/posts",
                300,
                100.0 + 10.0 * r as f64,
                (1000 * r, 3000, 5000),
                0
            ),
            endpoint_record(
                "show",
                "/posts/{random:1..100}",
                100,
                30.0,
                (200, 300, 400),
                2
            ),
        ]);
    });
}

/// Issue 30: a study whose trials ran a mix shows each group's endpoints
/// in every report: a table per group (requests and share, throughput,
/// p50/p90/p99 as the median with the range across repeats, errors),
/// columns per endpoint in report.csv, `endpoints` in report.json, and
/// in HTML the p50 and p99 of each endpoint as bars. A study without a
/// mix reads exactly as before (the snapshots).
#[test]
fn a_mix_gives_a_table_per_group_and_latency_per_endpoint_in_every_report() {
    let dir = common::scratch("report-endpoints");
    seed_endpoints(&dir);
    let written = report::write_all(&dir, None).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();

    let term = &written.table;
    assert!(
        term.contains("Endpoints (median over repeats; share of the group's requests):"),
        "{term}"
    );
    assert!(
        term.contains("  puma, hello, direct, 4 conn:\n    index   75.0%       115 rps  p50 1.50ms  p90 3.00ms  p99 5.00ms  0 errors\n"),
        "{term}"
    );

    let md = read(&written.markdown);
    assert!(
        md.contains("### Endpoints\n\nEach endpoint of the mix"),
        "{md}"
    );
    assert!(md.contains("**puma · 4 conn**\n\n| Endpoint | Requests | Share | Throughput (rps) | p50 | p90 | p99 | Errors |"), "{md}");
    assert!(
        md.contains("| index (GET /posts) | 600 | 75.0% | 115 (110–120) | 1.50ms (1.00ms–2.00ms) | 3.00ms (3.00ms–3.00ms) | 5.00ms (5.00ms–5.00ms) | 0 |"),
        "{md}"
    );
    assert!(
        md.contains("| show (GET /posts/{random:1..100}) | 200 | 25.0% | 30 (30–30) | 200us (200us–200us) | 300us (300us–300us) | 400us (400us–400us) | 4 (status 4) |"),
        "{md}"
    );
    // thin c16 ran once (its second run failed): no range.
    assert!(
        md.contains("**thin · 16 conn**\n\n| Endpoint |")
            && md.contains(
                "| index (GET /posts) | 300 | 75.0% | 110 | 1.00ms | 3.00ms | 5.00ms | 0 |"
            ),
        "{md}"
    );

    let csv = read(&written.csv);
    let head = csv.lines().next().unwrap();
    assert!(
        head.ends_with(",endpoint_index_requests,endpoint_index_share,endpoint_index_throughput_rps,endpoint_index_p50_us,endpoint_index_p90_us,endpoint_index_p99_us,endpoint_index_errors,endpoint_show_requests,endpoint_show_share,endpoint_show_throughput_rps,endpoint_show_p50_us,endpoint_show_p90_us,endpoint_show_p99_us,endpoint_show_errors"),
        "{head}"
    );
    let puma = csv
        .lines()
        .find(|l| l.starts_with("puma__hello__direct__c4,"))
        .unwrap();
    assert!(
        puma.ends_with(",600,0.7500,115.0,1500,3000,5000,0,200,0.2500,30.0,200,300,400,4"),
        "{puma}"
    );

    let html = read(&written.html);
    assert!(html.contains("<h3>Endpoints</h3>"));
    assert!(html.contains("<table class=\"endpoints\"><caption>puma · 4 conn</caption>"));
    assert!(html.contains("Latency per endpoint: p50 and p99"));
    assert!(
        html.contains("its p50 (solid) and p99 (pale) latency"),
        "the chart's key"
    );
    assert!(
        html.contains("puma · 4 conn · show"),
        "a chart row per group and endpoint"
    );
    assert!(
        html.contains("<td class=\"l\">index<br><small>GET /posts</small></td>"),
        "the request under the endpoint's name"
    );
    assert!(
        html.contains("<td class=\"bad-text\">4 (status 4)</td>"),
        "show's errors marked"
    );

    let json: Value = serde_json::from_str(&read(&written.json)).unwrap();
    common::schema::assert_valid("report-v1", &json, "report.json with endpoints");
    let g = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "puma__hello__direct__c4")
        .unwrap();
    assert_eq!(g["endpoints"][0]["share"], 0.75);
    assert_eq!(g["endpoints"][1]["latency_p99_us"]["median"], 400.0);
    let t = json["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "puma__hello__direct__c4__rep2")
        .unwrap();
    assert_eq!(t["endpoints"][0]["latency_p50_us"], 2000.0);

    // Without a mix: nothing of it anywhere.
    seed(&dir);
    let written = report::write_all(&dir, None).unwrap();
    assert!(!written.table.contains("Endpoints"));
    assert!(!read(&written.markdown).contains("Endpoints"));
    assert!(!read(&written.html).contains("Latency per endpoint"));
    let json: Value = serde_json::from_str(&read(&written.json)).unwrap();
    assert!(json["groups"][0].get("endpoints").is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 30: the blog app on PostgreSQL (puma) and SQLite (thin). Every
/// report says which database, the rows the load wrote and PostgreSQL's
/// own CPU and memory (never added to the server's), and telemetry's SQL
/// and pool-wait time beside queue, app and GC.
#[test]
fn the_database_and_the_time_in_sql_and_pool_wait_are_in_every_report() {
    let dir = common::scratch("report-database");
    let blog: Value = serde_json::from_str(include_str!("contracts/trial-v1-blog.json")).unwrap();
    seed_with(&dir, |v| {
        let Some(id) = v["id"]
            .as_str()
            .map(str::to_string)
            .filter(|_| v["trial"].is_object())
        else {
            return;
        };
        let t = &mut v["trial"];
        let mut db = blog["database"].clone();
        if id.starts_with("thin") {
            db = json!({
                "kind": "sqlite", "version": "", "url": "sqlite3:///x/blog.sqlite3",
                "rows_seeded": 6050, "rows_written": 40, "seed_s": 0.4
            });
        } else {
            db["rows_written"] = json!(if id.ends_with("rep1") { 100 } else { 140 });
            // 1 s of PostgreSQL CPU in the window.
            (db["cpu_user_s"], db["cpu_sys_s"]) = (json!(0.75), json!(0.25));
        }
        t["database"] = db;
        let mut tel = blog["server_metrics"]["telemetry"].clone();
        tel["app_us"]["mean"] = json!(4000.0);
        tel["db_us"] = json!({"p50": 1000.0, "p90": 2000.0, "p99": 3000.0, "mean": 1200.0});
        tel["pool_wait_us"] = json!({"p50": 300.0, "p90": 900.0, "p99": 8000.0, "mean": 500.0});
        t["server_metrics"]["telemetry"] = tel;
    });
    let written = report::write_all(&dir, None).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();

    let term = &written.table;
    assert!(
        term.contains("Databases: PostgreSQL 15.18; SQLite (in the app's processes)"),
        "{term}"
    );
    assert!(
        term.contains("PostgreSQL 15.18; 6050 rows seeded, 120 rows written per run (100–140), "),
        "{term}"
    );
    assert!(
        term.contains("SQLite (in the app's processes); 6050 rows seeded, 40 rows written\n"),
        "SQLite has no CPU or memory of its own: {term}"
    );

    let md = read(&written.markdown);
    assert!(md.contains("### Database\n"), "{md}");
    assert!(
        md.contains("| Server | Load | Database | Rows written per run | DB CPU per request (ms) | DB CPU (cores) | DB memory peak (RSS) | DB processes |"),
        "two databases: a Database column: {md}"
    );
    assert!(
        md.contains("| thin | 4 conn | SQLite (in the app's processes) | 40 | - | - | - | - |"),
        "{md}"
    );
    assert!(
        md.contains("| SQL p50 (ms) | pool wait p50 / p99 (ms) |"),
        "SQL and pool wait beside queue, app and GC: {md}"
    );
    assert!(
        md.contains("| 1.00 | 0.30 / 8.00 |"),
        "SQL p50 1 ms, pool wait p50 0.3 ms p99 8 ms: {md}"
    );
    assert!(
        md.contains(" / 4.00 (0.50, 1.20, "),
        "the app's mean split into pool wait, SQL and GC: {md}"
    );

    let csv = read(&written.csv);
    assert!(
        csv.lines().next().unwrap().ends_with(
            ",database,db_rows_seeded,db_rows_written,db_cpu_ms_per_request,db_cpu_cores,db_rss_peak_bytes,db_pss_peak_bytes"
        ),
        "{csv}"
    );
    let trials = read(&written.trials_csv);
    assert!(
        trials.lines().next().unwrap().ends_with(",database,db_rows_seeded,db_rows_written,db_seed_s,db_seed_runtime,db_cpu_s,db_rss_peak_bytes,db_pss_peak_bytes"),
        "{trials}"
    );

    let html = read(&written.html);
    assert!(html.contains("<p id=\"database\">Databases: PostgreSQL 15.18;"));
    assert!(html.contains("<table class=\"database\">") || html.contains("class=\"database\""));
    assert!(
        html.contains("Mean latency: queue, pool wait, SQL, app, GC and the rest"),
        "the time split has pool wait and SQL"
    );

    let json: Value = serde_json::from_str(&read(&written.json)).unwrap();
    common::schema::assert_valid("report-v1", &json, "report.json with a database");
    let g = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "puma__hello__direct__c4")
        .unwrap();
    assert_eq!(g["database"]["kind"], "postgres");
    assert_eq!(g["database"]["rows_written"]["median"], 120.0);
    assert_eq!(
        g["summary"]["telemetry"]["pool_wait_p99_us"]["median"],
        8000.0
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A study without a database and without ActiveRecord keeps its reports:
/// no database line, table or column, no SQL or pool-wait column.
#[test]
fn no_database_adds_nothing() {
    let dir = common::scratch("report-no-database");
    seed(&dir);
    let written = report::write_all(&dir, None).unwrap();
    let md = std::fs::read_to_string(&written.markdown).unwrap();
    let csv = std::fs::read_to_string(&written.csv).unwrap();
    assert!(!md.contains("Database") && !md.contains("SQL"), "{md}");
    assert!(!csv.contains("db_"), "{csv}");
    assert!(!written.table.contains("Database"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The seeded directory with `load.fairness` in every good record: puma
/// at 4 connections left 3 of its 4 connections unanswered in rep 2
/// (per client and per socket alike), every other run none.
fn seed_fairness(dir: &Path) {
    seed_with(dir, |v| {
        if v.get("trial").is_none() {
            return;
        }
        let conns = v["trial"]["load"]["connections"]["configured"]
            .as_u64()
            .unwrap();
        let starved = if v["id"] == "puma__hello__direct__c4__rep2" {
            3
        } else {
            0
        };
        let load = &mut v["trial"]["load"];
        load["connections"]["never_answered"] = json!(starved);
        load["fairness"] = json!({
            "connections_answered": conns - starved, "connections_starved": starved,
            "top10_share": 0.1, "jain_index": if starved > 0 { 0.6 } else { 1.0 }
        });
    });
}

#[test]
fn starved_connections_are_marked_in_every_report_and_the_row_is_no_result() {
    let dir = common::scratch("report-starved");
    seed_fairness(&dir);
    let written = report::write_all(&dir, None).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let note = "3 of 4 connections never answered in the worst of 2 runs: not a result";
    let shows =
        "puma at 4 conn served 1 of 4 connections in the worst of 2 runs; the rest got no answer";

    let term = &written.table;
    let flat = term.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(note) && flat.contains(shows), "{term}");
    assert!(
        flat.contains("puma at 4 conn (3 of 4 connections never answered in the worst of 2 runs)"),
        "{term}"
    );
    assert!(!term.contains("puma is the fastest"), "{term}");

    let md = read(&written.markdown);
    assert!(md.contains(shows), "{md}");
    let row = |prefix: &str| md.lines().find(|l| l.starts_with(prefix)).unwrap();
    assert!(row("| puma | 4 conn | 2/2 ").contains(note), "{md}");
    assert!(
        !row("| thin | 4 conn | 2/2 ").contains("never answered"),
        "{md}"
    );

    let csv = read(&written.csv);
    assert!(
        (csv.lines().next().unwrap()).ends_with(
            ",requests_per_worker,connections_starved,connections_starved_of,jain_index"
        ),
        "{csv}"
    );
    let line = |group: &str| csv.lines().find(|l| l.starts_with(group)).unwrap();
    // The median Jain's index of 0.6 and 1.
    assert!(
        line("puma__hello__direct__c4,").ends_with(",3,4,0.800"),
        "{csv}"
    );
    assert!(
        line("thin__hello__direct__c4,").ends_with(",0,4,1.000"),
        "{csv}"
    );
    assert!(csv.contains(note), "{csv}");
    let trials = read(&written.trials_csv);
    assert!(
        trials.lines().next().unwrap().ends_with(
            ",connections_answered,connections_starved,connections_opened,never_answered,jain_index,worker_deviation"
        ),
        "{trials}"
    );

    let html = read(&written.html);
    assert!(html.contains(shows), "{html}");
    let tr = (html.split("<tr"))
        .find(|r| r.contains("class=\"l notes") && r.contains(note))
        .expect("a row with the note");
    assert!(
        tr.starts_with(" class=\"bad\""),
        "marked as no result: {tr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn records_without_fairness_are_not_judged_and_add_no_column() {
    let dir = fixture_dir("no-fairness");
    let written = report::write_all(&dir, None).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    assert!(!written.table.contains("never answered"));
    assert!(!read(&written.csv).contains("connections_starved"));
    assert!(!read(&written.trials_csv).contains("jain_index"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The committed long-tail run (bench/runs/2026-11-28-puma-long-tail):
/// its report rebuilt from its records names the starved rows in every
/// format, as its README's table counts them.
#[test]
fn the_committed_long_tail_run_marks_its_starved_rows() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/runs/2026-11-28-puma-long-tail");
    let dir = common::work_dir("report-long-tail");
    for sub in ["", "trials"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for e in std::fs::read_dir(src.join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                std::fs::copy(&p, dir.join(sub).join(p.file_name().unwrap())).unwrap();
            }
        }
    }
    let out = common::rackbench(&["report", dir.to_str().unwrap()]);
    common::assert_ran(&out, "rackbench report");
    let term = String::from_utf8_lossy(&out.stdout).to_string();
    // Per connection opened: 43 of 140 (puma 6.6.0, Debian 13) and 40 of
    // 135 (puma 5.6.5, the system's) in their worse run.
    let six = "43 of 140 connections opened never answered in the worst of 2 runs";
    let five = "40 of 135 connections opened never answered in the worst of 2 runs";
    let flat = term.split_whitespace().collect::<Vec<_>>().join(" ");
    for w in [six, five] {
        assert!(flat.contains(&format!("{w}: not a result")), "{term}");
    }
    assert!(
        flat.contains("puma-w4-t5@debian-13 at 80 conn served 97 of 140 connections opened"),
        "{term}"
    );
    assert!(
        !flat.contains("puma-w4-t5@debian-13 is the fastest"),
        "{term}"
    );
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let md = read("report.md");
    assert!(md.contains(&format!("{six}: not a result")), "{md}");
    assert!(md.contains(&format!("{five}: not a result")), "{md}");
    // Puma 8.0.2 served every connection: no mark.
    let unstable = (md.lines())
        .find(|l| l.contains("puma-w4-t5@debian-unstable") && l.contains("| 80 conn |"))
        .unwrap();
    assert!(!unstable.contains("never answered"), "{unstable}");
    let csv = read("report.csv");
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .contains(",connections_starved,"));
    assert!(csv.contains(six), "{csv}");
    let html = read("report.html");
    let tr = (html.split("<tr"))
        .find(|r| r.contains("class=\"l notes") && r.contains(six))
        .expect("the row");
    assert!(tr.starts_with(" class=\"bad\""), "{tr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A results directory holding ab.json (what `rackbench ab` leaves): the
/// report draws the A/B's interval round by round in HTML and says its
/// verdict in the terminal table and in Markdown.
#[test]
fn an_ab_directory_gets_its_verdict_and_the_interval_round_by_round() {
    let dir = fixture_dir("ab");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/contracts/ab-v1.json");
    std::fs::copy(&sample, dir.join("ab.json")).unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&sample).unwrap()).unwrap();
    let reason = doc["reason"].as_str().unwrap();
    let written = report::write_all(&dir, None).unwrap();
    assert!(
        written.table.contains(&format!("slower: {reason}")),
        "{}",
        written.table
    );
    let md = std::fs::read_to_string(&written.markdown).unwrap();
    assert!(
        md.contains(&format!("## A/B\n\n**slower**: {reason}")),
        "{md}"
    );
    let html = std::fs::read_to_string(&written.html).unwrap();
    let start = html
        .find("<section class=\"chart\" id=\"ab\">")
        .expect("the A/B section");
    let section = &html[start..start + html[start..].find("</section>").unwrap()];
    assert!(
        section.contains("<svg") && section.contains("<polygon"),
        "{section}"
    );
    assert!(section.contains("round by round"), "{section}");
    // Without ab.json, no A/B section.
    std::fs::remove_file(dir.join("ab.json")).unwrap();
    let written = report::write_all(&dir, None).unwrap();
    let html = std::fs::read_to_string(&written.html).unwrap();
    assert!(!html.contains("id=\"ab\""));
    std::fs::remove_dir_all(&dir).unwrap();
}
