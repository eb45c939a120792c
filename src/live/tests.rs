//! The board, its two readings (`/live.json`, `/metrics`) and the server.

use super::snapshot::bucket_of;
use super::*;
use crate::load::recorder::new_histogram;
use crate::load::report::TimelineRow;
use crate::load::ErrorCounts;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// A second of `ok` answers at `latency_us` each and `reset` resets.
fn second(ok: u64, reset: u64, latency_us: u64, warmup: bool) -> (TimelineRow, Histogram<u64>) {
    let mut h = new_histogram(2);
    h.record_n(latency_us, ok).unwrap();
    let row = TimelineRow {
        t_s: 0,
        ok,
        errors: reset,
        p50_us: latency_us,
        p99_us: latency_us,
        rps: ok as f64,
        warmup,
        span_s: 1.0,
        error_kinds: (reset > 0).then_some(ErrorCounts {
            reset,
            ..ErrorCounts::default()
        }),
        status_5xx: 0,
    };
    (row, h)
}

fn feed(board: &Board, ok: u64, reset: u64, latency_us: u64) {
    let (row, h) = second(ok, reset, latency_us, false);
    board.add_second(&row, &h);
}

fn labels(trial: &str, repeat: u32) -> TrialLabels {
    TrialLabels {
        study: "s".into(),
        trial: trial.into(),
        server: "puma".into(),
        app: "hello".into(),
        variant: "control".into(),
        runtime: "system".into(),
        repeat,
    }
}

/// The samples of an exposition text: (name with its labels, value).
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (name, value) = l.rsplit_once(' ').unwrap();
            (name.to_string(), value.parse().unwrap())
        })
        .collect()
}

/// The sum of a sample family's values over its label sets.
fn summed(text: &str, name: &str) -> f64 {
    samples(text)
        .iter()
        .filter(|(k, _)| k.as_str() == name || k.starts_with(&format!("{name}{{")))
        .map(|(_, v)| v)
        .sum()
}

#[test]
fn counts_add_up_in_both_readings() {
    let board = Board::new("load");
    feed(&board, 100, 2, 800);
    feed(&board, 50, 0, 3_000);
    let snap = board.snapshot();
    let doc = snap.to_json();
    assert_eq!(doc["schema"], "rackbench/live-v1");
    assert_eq!(doc["totals"]["ok"], 150);
    assert_eq!(doc["totals"]["errors"], 2);
    assert_eq!(doc["totals"]["requests"], 152);
    assert_eq!(doc["totals"]["errors_by_kind"]["reset"], 2);
    assert_eq!(doc["trial_totals"]["requests"], 152);
    assert_eq!(doc["seconds"].as_array().unwrap().len(), 2);
    assert_eq!(doc["last_second"]["ok"], 50);
    assert!(doc["trial"].is_null());
    for openmetrics in [true, false] {
        let (text, _) = render(snap.clone(), openmetrics);
        assert_eq!(summed(&text, "rackbench_ok_total"), 150.0, "{text}");
        assert_eq!(summed(&text, "rackbench_requests_total"), 152.0);
        assert_eq!(summed(&text, "rackbench_errors_total"), 2.0);
        let s = samples(&text);
        // 800 µs falls under 1 ms, 3 ms under 5 ms; the count is the OKs.
        assert_eq!(s["rackbench_latency_seconds_bucket{le=\"0.0005\"}"], 0.0);
        assert_eq!(s["rackbench_latency_seconds_bucket{le=\"0.001\"}"], 100.0);
        assert_eq!(s["rackbench_latency_seconds_bucket{le=\"0.0025\"}"], 100.0);
        assert_eq!(s["rackbench_latency_seconds_bucket{le=\"0.005\"}"], 150.0);
        assert_eq!(s["rackbench_latency_seconds_bucket{le=\"+Inf\"}"], 150.0);
        assert_eq!(s["rackbench_latency_seconds_count"], 150.0);
        assert_eq!(text.ends_with("# EOF\n"), openmetrics);
    }
}

#[test]
fn the_labels_change_with_the_trial_and_each_set_keeps_its_counts() {
    let board = Board::new("run");
    board.plan(Some(2));
    board.trial_started(labels("a", 1));
    feed(&board, 10, 0, 500);
    board.trial_ended();
    board.trial_started(labels("b", 1));
    feed(&board, 7, 1, 500);
    let snap = board.snapshot();
    let doc = snap.to_json();
    assert_eq!(doc["trial"]["trial"], "b");
    assert_eq!(doc["trial"]["repeat"], 1);
    assert_eq!(doc["trial_totals"]["requests"], 8, "afresh per trial");
    assert_eq!(doc["totals"]["requests"], 18, "the process's, all trials");
    assert_eq!(doc["plan"]["trials_done"], 1);
    assert_eq!(doc["plan"]["trials_total"], 2);
    assert_eq!(doc["phase"], "counted");
    let (text, _) = render(snap, true);
    let s = samples(&text);
    let a = "rackbench_ok_total{study=\"s\",trial=\"a\",server=\"puma\",app=\"hello\",variant=\"control\",runtime=\"system\",repeat=\"1\"}";
    let b = a.replace("trial=\"a\"", "trial=\"b\"");
    assert_eq!(s[a], 10.0, "{text}");
    assert_eq!(s[&b], 7.0);
    // The gauges are the current trial's only.
    assert!(text.contains("rackbench_latency_quantile_seconds{study=\"s\",trial=\"b\""));
    assert!(!text.contains("rackbench_latency_quantile_seconds{study=\"s\",trial=\"a\""));
}

#[test]
fn counters_never_go_back() {
    let board = Board::new("run");
    board.trial_started(labels("a", 1));
    board.server_sample(2.0, 1000, Some(500));
    board.server_sample(1.5, 1000, Some(500)); // a sample that reads less
    board.trial_ended();
    // The same labels again (a rerun): the CPU counter goes on from 2.
    board.trial_started(labels("a", 1));
    board.server_sample(0.5, 1000, None);
    let cpu = |b: &Board| {
        summed(
            &render(b.snapshot(), true).0,
            "rackbench_server_cpu_seconds_total",
        )
    };
    assert_eq!(cpu(&board), 2.5);
    board.shadow(Shadow {
        name: "next".into(),
        requests: 10,
        ok: 9,
        errors: 1,
        p50_ms: Some(1.0),
        p99_ms: None,
        paired_median_ms: Some(-0.5),
    });
    let (text, _) = render(board.snapshot(), true);
    let paired = "rackbench_shadow_paired_median_seconds{study=\"s\",trial=\"a\",server=\"puma\",app=\"hello\",variant=\"control\",runtime=\"system\",repeat=\"1\",shadow=\"next\"}";
    assert_eq!(samples(&text)[paired], -0.0005, "{text}");
    // A later reading that says less leaves the counts where they were.
    board.shadow(Shadow {
        name: "next".into(),
        requests: 4,
        ..Shadow::default()
    });
    let doc = board.snapshot().to_json();
    assert_eq!(doc["shadows"][0]["requests"], 10);
    assert_eq!(doc["server"]["rss_bytes"], 1000);
    assert!(doc["server"]["pss_bytes"].is_null());
}

#[test]
fn warm_up_seconds_count_but_stay_out_of_the_trials_quantiles() {
    let board = Board::new("trial");
    board.trial_started(labels("a", 1));
    let (row, h) = second(100, 0, 90_000, true);
    board.add_second(&row, &h);
    assert_eq!(board.snapshot().to_json()["phase"], "warmup");
    assert!(board.snapshot().latency.is_none());
    feed(&board, 100, 0, 1_000);
    let snap = board.snapshot();
    assert_eq!(snap.totals().ok, 200);
    let max = snap.latency.unwrap().max_ms;
    assert!(
        (max - 1.0).abs() < 0.02,
        "the warm-up's 90 ms left out: {max}"
    );
    board.finish();
    let doc = board.snapshot().to_json();
    assert_eq!(
        (doc["done"].clone(), doc["phase"].clone()),
        (true.into(), "done".into())
    );
}

#[test]
fn a_latency_falls_in_the_bucket_its_bound_names() {
    assert_eq!(bucket_of(1), 0);
    assert_eq!(bucket_of(500), 0);
    assert_eq!(bucket_of(501), 1);
    assert_eq!(bucket_of(10_000_000), BUCKETS_S.len() - 1);
    assert_eq!(bucket_of(10_000_001), BUCKETS_S.len());
}

#[test]
fn openmetrics_is_served_to_who_asks_for_it() {
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert!(wants_openmetrics(Some(prometheus)));
    assert!(!wants_openmetrics(Some("text/plain;version=0.0.4")));
    assert!(!wants_openmetrics(Some("application/openmetrics-text;q=0")));
    assert!(!wants_openmetrics(None));
}

/// GET `path` from `addr` with `accept`: the status line, headers and
/// body as one text.
fn get(addr: std::net::SocketAddr, path: &str, accept: &str) -> String {
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn the_server_answers_each_path_and_a_taken_port_is_named() {
    let board = std::sync::Arc::new(Board::new("load"));
    feed(&board, 3, 0, 100);
    let server = Server::start("127.0.0.1:0".parse().unwrap(), board.clone()).unwrap();
    let addr = server.addr();
    let om = get(addr, "/metrics", "application/openmetrics-text");
    assert!(om.starts_with("HTTP/1.1 200 OK\r\n"), "{om}");
    assert!(om.contains(&format!("Content-Type: {OPENMETRICS}\r\n")));
    assert!(om.contains("rackbench_ok_total 3\n") && om.ends_with("# EOF\n"));
    let text = get(addr, "/metrics", "*/*");
    assert!(text.contains(&format!("Content-Type: {PROMETHEUS_TEXT}\r\n")));
    assert!(!text.contains("# EOF"));
    let json = get(addr, "/live.json", "*/*");
    assert!(json.contains("Content-Type: application/json\r\n"));
    let body = json.split("\r\n\r\n").nth(1).unwrap();
    let doc: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(doc["totals"]["ok"], 3);
    assert!(get(addr, "/", "*/*").contains("text/html"));
    assert!(get(addr, "/nope", "*/*").starts_with("HTTP/1.1 404"));
    // A client that connects and says nothing holds up no one else: the
    // next is answered while the idle one is still waited for (answered
    // one after the other, the idle one would be given up on first).
    let mut idle = std::net::TcpStream::connect(addr).unwrap();
    assert!(get(addr, "/metrics", "*/*").starts_with("HTTP/1.1 200 OK"));
    idle.set_nonblocking(true).unwrap();
    let still_open = idle.read(&mut [0u8; 1]);
    assert!(
        still_open
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "{still_open:?}"
    );
    drop(idle);
    let taken = Server::start(addr, board).unwrap_err();
    assert!(taken.contains("in use"), "{taken}");
    assert_eq!(parse_addr("9464").unwrap().to_string(), "127.0.0.1:9464");
    assert_eq!(parse_addr(":0").unwrap().to_string(), "127.0.0.1:0");
    assert!(parse_addr("nowhere").is_err());
}
