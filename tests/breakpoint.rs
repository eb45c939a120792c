//! `rackbench breakpoint` end to end against the test server with a known
//! capacity: a fixed pool of workers behind a bounded queue that answers
//! 503 beyond it, and keeps working off requests whose clients have left
//! (as unicorn's backlog and puma's queue do). The search must find the
//! capacity within its resolution whatever the start, the default included.

mod common;

use common::{have_nginx, serve_test_command};
use rackbench::testserver::{TestServer, TestServerConfig};
use serde_json::Value;
use std::time::Duration;

/// A server that takes `capacity` requests at once (`workers` of them
/// worked on, `delay` each) and answers 503 beyond. Its work takes tens of
/// milliseconds: a closed loop's capacity is crisp only when a request
/// spends next to no time between its answer and the next send compared
/// with its time at the server, and a debug build of the generator on a
/// busy 2-core machine is not quick.
fn server(capacity: usize, workers: usize, delay_ms: u64) -> TestServer {
    common::test_server(TestServerConfig {
        max_in_progress: capacity,
        workers,
        delay: Duration::from_millis(delay_ms),
        ..Default::default()
    })
}

/// Runs a search with short steps and returns its JSON document.
fn breakpoint(url: &str, extra: &[&str]) -> Value {
    let out = common::rackbench_cmd()
        .args([
            "breakpoint",
            url,
            "--json",
            "--probe",
            "400ms",
            "-d",
            "500ms",
        ])
        .args(["--max", "1000"])
        .args(extra)
        .output()
        .unwrap();
    common::stdout_json(&out, "breakpoint")
}

fn levels(doc: &Value) -> Vec<String> {
    doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            if s["clean"] == true {
                format!("{} after {}s", s["level"], s["settle_s"])
            } else {
                format!("{} after {}s: {}", s["level"], s["settle_s"], s["why"])
            }
        })
        .collect()
}

/// The level found is the capacity within the search's resolution (5%).
/// It may pass the capacity by a little: a closed loop's requests are not
/// all at the server at every moment (each spends a moment on its way
/// back and forth), the less so on a busy machine.
fn assert_found(doc: &Value, capacity: f64) {
    let found = doc["connections"]
        .as_f64()
        .or(doc["level"].as_f64())
        .unwrap_or_else(|| panic!("no break point: {:?}", levels(doc)));
    assert!(
        found <= capacity * 1.05 && found >= (capacity * 0.95).floor() - 1.0,
        "capacity {capacity}: found {found} via {:?}",
        levels(doc)
    );
    assert_eq!(doc["confirmed"], true);
}

#[test]
fn a_capacity_above_the_default_start_is_found() {
    let s = server(160, 16, 40);
    let doc = breakpoint(&s.url(), &[]);
    assert_found(&doc, 160.0);
    assert_eq!(doc["search"]["start"], 100.0);
}

#[test]
fn a_capacity_below_the_default_start_is_found_by_searching_down() {
    // Seed 000's figure: the first step (100) fails; that is no reason to
    // say "no break point".
    let s = server(60, 6, 40);
    let doc = breakpoint(&s.url(), &[]);
    assert_eq!(doc["steps"][0]["level"], 100.0);
    assert_eq!(doc["steps"][0]["clean"], false);
    assert_found(&doc, 60.0);
    // The failing step says why: the status line of its first failure.
    let first = &doc["steps"][0];
    assert_eq!(first["first_failure"]["status"], 503, "{first}");
    assert_eq!(first["first_failure"]["status_line"], "HTTP/1.1 503 X");
    assert!(
        first["status_codes"]["503"].as_u64().unwrap() >= 1,
        "{first}"
    );
    assert!(
        first["errors_by_kind"]["status"].as_u64().unwrap() >= 1,
        "{first}"
    );
    assert!(
        first["why"]
            .as_str()
            .unwrap()
            .contains("\"HTTP/1.1 503 X\""),
        "{first}"
    );
}

#[test]
fn the_capacity_is_found_whatever_the_start() {
    let s = server(60, 6, 40);
    for start in ["1000", "59", "61", "1"] {
        let doc = breakpoint(&s.url(), &["--start", start]);
        assert_found(&doc, 60.0);
    }
}

#[test]
fn a_search_right_after_another_clients_abandoned_requests_finds_the_capacity() {
    // Regression: the test above once found capacity 60 as 9. Its last
    // search began while the one before it still had 60 requests queued,
    // their clients gone: the first step met them, and the search took
    // their connections for other clients' and let as many of its own
    // leftovers pass for them after every failing step. Here another
    // client keeps the server full of abandoned requests while the search
    // starts: it must wait for them (in its first settle), not fail its
    // first step (at 1 connection: "no break point") or count them.
    let s = server(60, 6, 40);
    let addr = s.addr();
    let until = std::time::Instant::now() + Duration::from_millis(300);
    let flood: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                use std::io::Write;
                while std::time::Instant::now() < until {
                    if let Ok(mut c) = std::net::TcpStream::connect(addr) {
                        let _ = c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    let doc = breakpoint(&s.url(), &["--start", "1"]);
    for f in flood {
        f.join().unwrap();
    }
    assert_found(&doc, 60.0);
    assert!(
        doc["steps"][0]["settle_s"].as_f64().unwrap() > 0.0,
        "the first step waited for the abandoned requests: {:?}",
        levels(&doc)
    );
}

/// The workers of a slow pool: a failing step leaves up to 60 requests
/// queued, 0.6 s of work, long after its client has gone.
fn leaky_server() -> TestServer {
    server(60, 3, 30)
}

#[test]
fn steps_do_not_leak_into_each_other() {
    // From a low start the search passes the capacity (90 fails) and
    // bisects back below it; each step must meet a drained server.
    let s = leaky_server();
    let doc = breakpoint(&s.url(), &["--start", "10"]);
    assert_found(&doc, 60.0);
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(
        steps[0]["settle_s"], 0.0,
        "the first step waits for nothing"
    );
    // Every step says how long it waited; the one after a failure waited
    // for the abandoned requests to be worked off.
    assert!(steps.iter().all(|s| s["settle_s"].is_f64()));
    let after_failure = steps
        .windows(2)
        .find(|w| w[0]["clean"] == false)
        .map(|w| w[1]["settle_s"].as_f64().unwrap())
        .expect("a failing step with one after it");
    assert!(after_failure > 0.02, "{after_failure}");
    assert!(doc["settle_seconds"].as_f64().unwrap() >= after_failure);
}

#[test]
fn without_settling_the_leak_shows() {
    // Why settling exists: the same search, each step started at once,
    // meets the last step's leftovers and reports well below the truth.
    let s = leaky_server();
    let doc = breakpoint(&s.url(), &["--start", "10", "--settle-max", "0"]);
    let found = doc["connections"].as_f64().unwrap_or(0.0);
    assert!(found < 55.0, "found {found} via {:?}", levels(&doc));
}

#[test]
fn no_break_point_only_when_even_one_connection_fails() {
    let s = common::test_server(TestServerConfig {
        fault: rackbench::testserver::Fault::Status(503),
        ..Default::default()
    });
    let out = common::rackbench_cmd()
        .args(["breakpoint", &s.url(), "--probe", "200ms", "-d", "300ms"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("no break point: even 1 connection failed")
            && stdout.contains("HTTP/1.1 503 X"),
        "{stdout}"
    );
}

/// A lab search whose "server" is the test server with a capacity of 40,
/// started afresh for each step by the lab, directly or behind nginx.
fn lab_breakpoint(extra: &[&str]) -> Value {
    let command = serve_test_command("--max-in-progress 40 --workers 4 --delay 40ms");
    let work = common::scratch(&format!("bp-lab-{}", extra.len()));
    let out = common::rackbench_cmd()
        .args(["breakpoint", "--server", "capped", "--command", &command])
        .args(["--app", "hello", "--no-pin", "--json"])
        .args(["--probe", "500ms", "-d", "600ms", "--work-dir"])
        .arg(&work)
        .args(extra)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&work);
    common::stdout_json(&out, "lab breakpoint")
}

#[test]
fn the_lab_finds_a_capacity_below_the_default_start() {
    let doc = lab_breakpoint(&[]);
    assert_found(&doc, 40.0);
    // Each lab step starts its own server: nothing to wait for, said so.
    assert!(doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["settle_s"] == 0.0));
    assert_eq!(doc["steps"][0]["first_failure"]["status"], 503);
}

#[test]
fn the_lab_finds_it_behind_nginx_too() {
    if !have_nginx() {
        return;
    }
    let doc = lab_breakpoint(&["--behind", "nginx"]);
    assert_found(&doc, 40.0);
    assert_eq!(doc["steps"][0]["first_failure"]["status"], 503);
}

#[test]
fn the_load_report_counts_unexpected_statuses_and_keeps_the_first_failure() {
    use rackbench::load::{self, LoadConfig};
    let s = common::test_server(TestServerConfig {
        fault: rackbench::testserver::Fault::Status(502),
        fault_every: 3,
        ..Default::default()
    });
    let mut c = LoadConfig::get(&s.url()).unwrap();
    c.connections = 2;
    c.duration = None;
    c.requests = Some(300);
    let r = load::run(c, |_| {}).unwrap();
    assert_eq!(r.errors.status, 100, "{:?}", r.errors);
    assert_eq!(r.status_codes.get(&502), Some(&100));
    assert_eq!(r.status_codes.len(), 1);
    let f = r.first_failure.expect("a first failure");
    assert_eq!(
        (f.kind.as_str(), f.status, f.status_line.as_deref()),
        ("status", Some(502), Some("HTTP/1.1 502 X"))
    );
    // In the JSON document under their contract names.
    let json = serde_json::to_value(
        load::run(
            {
                let mut c = LoadConfig::get(&s.url()).unwrap();
                c.duration = None;
                c.requests = Some(3);
                c.connections = 1;
                c
            },
            |_| {},
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(json["status_codes"]["502"], 1, "{json}");
    assert_eq!(json["first_failure"]["status_line"], "HTTP/1.1 502 X");
    common::schema::assert_valid("load-v1", &json, "a failing run's load report");
}

#[test]
fn a_5xx_nginx_made_itself_is_explained_from_its_error_log() {
    if !have_nginx() {
        return;
    }
    // An upstream that resets every 20th request: nginx answers 502 and
    // says why in nginx-error.log.
    let command = serve_test_command("--reset-every 20");
    let work = common::scratch("bp-reset");
    let out = common::rackbench_cmd()
        .args(["breakpoint", "--server", "resetting", "--command", &command])
        .args(["--app", "hello", "--no-pin", "--json", "--behind", "nginx"])
        .args([
            "--start", "10", "--max", "30", "--probe", "300ms", "-d", "300ms",
        ])
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&work);
    let doc = common::stdout_json(&out, "breakpoint behind nginx");
    let failed = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["clean"] == false)
        .unwrap_or_else(|| panic!("no failing step: {:?}", levels(&doc)));
    let f = &failed["first_failure"];
    assert_eq!(f["status"], 502, "{failed}");
    assert!(
        f["log_line"]
            .as_str()
            .is_some_and(|l| l.contains("(104: Connection reset by peer)")),
        "{failed}"
    );
    assert_eq!(f["reason"], "502 from nginx, upstream reset the connection");
    assert_eq!(
        failed["why"],
        "1 error: 502 from nginx, upstream reset the connection"
    );
}

#[test]
fn a_plans_break_point_is_found_below_its_start_too() {
    let plan = common::Plan::write(
        "bp-plan",
        "capped.toml",
        &format!(
            r#"name = "capped"
servers = ["capped"]
apps = ["hello"]
[server_defs.capped]
command = "{} serve-test --listen {{{{listen}}}} --max-in-progress 40 --workers 4 --delay 40ms"
[load]
warmup = "200ms"
[breakpoint]
start = 100
step_duration = "600ms"
probe = "500ms"
"#,
            common::EXE
        ),
    );
    plan.run_ok(&["--no-pin"]);
    let stored = plan.only_doc("breakpoints");
    assert_found(&stored["result"], 40.0);
    assert_eq!(stored["connections"], stored["result"]["level"]);
    let first = &stored["result"]["steps"][0];
    assert_eq!(
        (first["level"].as_f64(), first["clean"].as_bool()),
        (Some(100.0), Some(false))
    );
    assert_eq!(first["first_failure"]["status"], 503);
    let _ = std::fs::remove_dir_all(&plan.dir);
}
