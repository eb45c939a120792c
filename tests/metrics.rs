//! The live endpoint (`--metrics-listen`, docs/LIVE.md) during a real
//! `rackbench load` against the test server: Prometheus' own Python
//! parsers (Debian's python3-prometheus-client) read both formats, the
//! counters never go back and end at the run's own count; and a real
//! Prometheus (Debian's `prometheus`) scrapes it, and what it stored is
//! the run's count and, through `histogram_quantile`, the run's p99 to
//! the bucket. A plan's trials are each a label set; a trial shows its
//! server and telemetry while it runs; a mirror feeds its
//! shadows; a port in use is refused.

mod common;

use common::{rackbench_cmd, test_server};
use rackbench::testserver::{Fault, TestServerConfig};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Debian's Python, which python3-prometheus-client installs for.
const PYTHON: &str = "/usr/bin/python3";

/// A process stopped (SIGKILL) and reaped however the test ends.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A rackbench command started (`rackbench load URL --json
/// --metrics-listen ADDR ARGS`, or any other), its stderr's lines on a
/// channel and its stdout kept for the document.
struct Run {
    child: Stopped,
    lines: mpsc::Receiver<String>,
}

impl Run {
    fn start(url: &str, listen: &str, args: &[&str]) -> Run {
        let mut all = vec!["load", url, "--json", "--metrics-listen", listen];
        all.extend(args);
        Run::spawn(&all)
    }

    /// `rackbench ARGS`, whatever the command.
    fn spawn(args: &[&str]) -> Run {
        let mut child = rackbench_cmd()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rackbench load");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Run {
            child: Stopped(child),
            lines,
        }
    }

    /// The next stderr line holding `text` (the whole stderr so far in
    /// the failure when the process ends first).
    fn line_with(&self, text: &str) -> String {
        let mut seen = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(120)) {
            if line.contains(text) {
                return line;
            }
            seen.push(line);
        }
        panic!(
            "rackbench never said {text:?}; stderr:\n{}",
            seen.join("\n")
        );
    }

    /// The endpoint's address, from the line that names its URL.
    fn endpoint(&self) -> SocketAddr {
        let line = self.line_with("live: http://");
        let url = line.split("http://").nth(1).unwrap();
        url.split('/').next().unwrap().parse().unwrap()
    }

    /// The work has ended; the endpoint lingers.
    fn ended(&self) {
        self.line_with("serving the final figures");
    }

    /// The JSON document printed before the linger begins.
    fn document(&mut self) -> Value {
        self.ended();
        let mut out = String::new();
        let stdout = self.child.0.stdout.as_mut().unwrap();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            out.push_str(&line);
            out.push('\n');
            if line == "}" {
                break;
            }
        }
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    /// SIGTERM ends the linger; the command then exits 0.
    fn end(mut self) {
        unsafe { libc::kill(self.child.0.id() as i32, libc::SIGTERM) };
        let status = self.child.0.wait().unwrap();
        assert!(status.success(), "rackbench after SIGTERM: {status}");
    }
}

/// GET `path` with `accept`: the response head and body.
fn get(addr: SocketAddr, path: &str, accept: &str) -> (String, String) {
    let mut c = TcpStream::connect(addr).unwrap();
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = String::new();
    c.read_to_string(&mut all).unwrap();
    let (head, body) = all.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

/// The exposition read by Prometheus' Python client: the strict
/// OpenMetrics parser, or the 0.0.4 text parser. Each family by name:
/// its type, unit and samples ([name, labels, value]).
fn parsed(text: &str, openmetrics: bool) -> Value {
    let script = "import sys, json\n\
        from prometheus_client.openmetrics.parser import text_string_to_metric_families as om\n\
        from prometheus_client.parser import text_string_to_metric_families as p004\n\
        parse = om if sys.argv[1] == 'openmetrics' else p004\n\
        out = {}\n\
        for f in parse(sys.stdin.read()):\n\
        \x20   out[f.name] = {'type': f.type, 'unit': f.unit, 'samples': [[s.name, s.labels, s.value] for s in f.samples]}\n\
        print(json.dumps(out))\n";
    let mut child = Command::new(PYTHON)
        .args([
            "-c",
            script,
            if openmetrics { "openmetrics" } else { "0.0.4" },
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "prometheus_client refused it ({}):\n{}\n--- the text:\n{text}",
        if openmetrics { "OpenMetrics" } else { "0.0.4" },
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The sum of a family's samples named `sample` over their label sets.
fn sum(families: &Value, family: &str, sample: &str) -> f64 {
    let f = &families[family];
    assert!(!f.is_null(), "no family {family}: {families:#}");
    f["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s[0] == sample)
        .map(|s| s[2].as_f64().unwrap())
        .sum()
}

/// Requests that ended in a load-v1 document: its OK answers and errors.
fn ended(doc: &Value) -> f64 {
    let errors: u64 = common::error_count(&doc["errors"]);
    (doc["requests"]["ok"].as_u64().unwrap() + errors) as f64
}

fn python_client() -> bool {
    let there = Command::new(PYTHON)
        .args(["-c", "import prometheus_client"])
        .output()
        .is_ok_and(|o| o.status.success());
    rackbench::require::require(
        "python3-prometheus-client",
        there,
        "apt-get install python3-prometheus-client",
    )
}

#[test]
fn prometheus_clients_parsers_read_both_formats_during_a_real_load() {
    if !python_client() {
        return;
    }
    // Every 50th request answered 503, so an error kind has a count.
    let server = test_server(TestServerConfig {
        delay: Duration::from_micros(300),
        fault: Fault::Status(503),
        fault_every: 50,
        ..TestServerConfig::default()
    });
    let mut run = Run::start(
        &server.url(),
        "127.0.0.1:0",
        &["-d", "4s", "-c", "4", "--metrics-linger", "120s"],
    );
    let addr = run.endpoint();
    let mut last = 0.0;
    let mut scrapes = 0;
    let started = Instant::now();
    // Scrape while it runs: each reading parses, adds up and never goes
    // back.
    while started.elapsed() < Duration::from_secs(3) {
        for openmetrics in [true, false] {
            let accept = if openmetrics {
                "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"
            } else {
                "text/plain;version=0.0.4"
            };
            let (head, body) = get(addr, "/metrics", accept);
            assert_eq!(head.contains("openmetrics-text"), openmetrics, "{head}");
            let f = parsed(&body, openmetrics);
            if f["rackbench_requests"].is_null() && last == 0.0 {
                continue; // the load has not started yet
            }
            let requests = sum(&f, "rackbench_requests", "rackbench_requests_total");
            let ok = sum(&f, "rackbench_ok", "rackbench_ok_total");
            let errors = sum(&f, "rackbench_errors", "rackbench_errors_total");
            assert_eq!(requests, ok + errors, "{f:#}");
            assert!(
                requests >= last,
                "the counter went back: {last} then {requests}"
            );
            last = requests;
            assert_eq!(f["rackbench_requests"]["type"], "counter");
            assert_eq!(f["rackbench_latency_seconds"]["type"], "histogram");
            assert_eq!(
                f["rackbench_errors"]["samples"].as_array().unwrap().len(),
                6,
                "every kind, 0 included"
            );
            if openmetrics {
                assert_eq!(f["rackbench_latency_seconds"]["unit"], "seconds");
            }
            scrapes += 1;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(scrapes >= 2);
    let doc = run.document();
    // Lingering: the final figures are the run's own count.
    let (_, body) = get(addr, "/metrics", "application/openmetrics-text");
    let f = parsed(&body, true);
    let expected = ended(&doc);
    assert!(doc["errors"]["status"].as_u64().unwrap() > 0, "{doc:#}");
    assert_eq!(
        sum(&f, "rackbench_errors", "rackbench_errors_total"),
        doc["errors"]["status"].as_f64().unwrap()
    );
    assert_eq!(
        sum(&f, "rackbench_requests", "rackbench_requests_total"),
        expected
    );
    assert_eq!(
        sum(
            &f,
            "rackbench_latency_seconds",
            "rackbench_latency_seconds_count"
        ),
        doc["requests"]["ok"].as_f64().unwrap()
    );
    let (head, body) = get(addr, "/live.json", "*/*");
    assert!(head.contains("Content-Type: application/json"), "{head}");
    let live: Value = serde_json::from_str(&body).unwrap();
    common::schema::assert_valid("live-v1", &live, "/live.json");
    assert_eq!(live["schema"], "rackbench/live-v1");
    assert_eq!(live["done"], true);
    assert_eq!(live["command"], "load");
    assert_eq!(live["totals"]["requests"].as_f64().unwrap(), expected);
    run.end();
}

/// An instant query's one value from Prometheus' HTTP API (None while
/// it has no sample for it).
fn query(prometheus: SocketAddr, promql: &str) -> Option<f64> {
    let mut q = String::new();
    for b in promql.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            q.push(b as char);
        } else {
            q.push_str(&format!("%{b:02X}"));
        }
    }
    let (_, body) = get(prometheus, &format!("/api/v1/query?query={q}"), "*/*");
    // The body may come chunked; the JSON is the one line that starts
    // with '{'.
    let json = body.lines().find(|l| l.starts_with('{'))?;
    let doc: Value = serde_json::from_str(json).ok()?;
    assert_eq!(doc["status"], "success", "{promql}: {doc}");
    let result = doc["data"]["result"].as_array()?;
    result.first()?["value"][1].as_str()?.parse().ok()
}

/// The bounds (low, high] of the fixed bucket `s` seconds falls in.
fn bucket(s: f64) -> (f64, f64) {
    let bounds = rackbench::live::BUCKETS_S;
    let i = bounds.iter().position(|&b| s <= b).unwrap_or(bounds.len());
    let low = if i == 0 { 0.0 } else { bounds[i - 1] };
    (low, bounds.get(i).copied().unwrap_or(f64::INFINITY))
}

#[test]
fn a_real_prometheus_stores_the_runs_count_and_p99() {
    if !common::have("prometheus", "apt-get install prometheus") {
        return;
    }
    // About 3 ms an answer: the p99 sits inside the 2.5-5 ms bucket.
    let server = test_server(TestServerConfig {
        delay: Duration::from_millis(3),
        ..TestServerConfig::default()
    });
    let port = rackbench::host::free_port().unwrap();
    let endpoint = format!("127.0.0.1:{port}");
    let dir = common::work_dir("metrics-prometheus");
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: rackbench\n    static_configs:\n      - targets: ['{endpoint}']\n"
        ),
    )
    .unwrap();
    let web = SocketAddr::from(([127, 0, 0, 1], rackbench::host::free_port().unwrap()));
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let _prometheus = Stopped(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start prometheus"),
    );
    let mut run = Run::start(
        &server.url(),
        &endpoint,
        &["-d", "5s", "-c", "4", "--metrics-linger", "300s"],
    );
    run.endpoint();
    let doc = run.document();
    let expected = ended(&doc);
    // The run has ended and its endpoint serves the final figures until
    // told to stop: wait for a scrape that has them. The counter only
    // grows, so its largest stored value is the last one scraped.
    let stored = "max_over_time(rackbench_requests_total[10m])";
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = None;
    while Instant::now() < deadline {
        seen = query(web, stored);
        if seen == Some(expected) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let prometheus_log = || std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
    assert_eq!(
        seen,
        Some(expected),
        "Prometheus's stored count against the run's ({doc:#}); its log:\n{}",
        prometheus_log()
    );
    let p99 = query(
        web,
        "histogram_quantile(0.99, sum by (le) (max_over_time(rackbench_latency_seconds_bucket[10m])))",
    )
    .expect("a p99 from the stored buckets");
    let own = doc["latency_us"]["p99"].as_f64().unwrap() / 1e6;
    // The engine's own figure has two or three significant digits, so
    // one within 1% of a bound may fall either side of it.
    let (low, _) = bucket(own * 0.99);
    let (_, high) = bucket(own * 1.01);
    assert!(
        (low..=high).contains(&p99),
        "PromQL's p99 {p99} s is not in the run's p99 {own} s bucket ({low}, {high}]"
    );
    run.end();
}

#[test]
fn a_port_in_use_is_refused_before_any_load_and_beyond_loopback_is_warned() {
    let server = common::plain_test_server();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = common::rackbench(&["load", &server.url(), "-d", "1s", "--metrics-listen", &addr]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("in use") && stderr.contains("another"),
        "{stderr}"
    );
    assert_eq!(server.stats().accepted_connections, 0, "no load ran");

    let out = common::rackbench(&["load", &server.url(), "-d", "1s", "--metrics-linger", "5s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--metrics-listen"), "{stderr}");

    let out = common::rackbench(&[
        "load",
        &server.url(),
        "-d",
        "1s",
        "--metrics-listen",
        "0.0.0.0:0",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: --metrics-listen 0.0.0.0:0 serves"),
        "{stderr}"
    );
}

#[test]
fn a_mirrors_shadow_is_counted_on_the_endpoint_as_in_its_document() {
    if !python_client() {
        return;
    }
    let primary = common::plain_test_server();
    let shadow = test_server(TestServerConfig {
        delay: Duration::from_millis(1),
        ..TestServerConfig::default()
    });
    let proxy = format!("127.0.0.1:{}", rackbench::host::free_port().unwrap());
    let shadow_url = format!("next={}", shadow.url());
    let mut run = Run::spawn(&[
        "mirror",
        "--listen",
        &proxy,
        "--primary",
        &primary.url(),
        "--shadow",
        &shadow_url,
        "-d",
        "4s",
        "--json",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "120s",
    ]);
    let addr = run.endpoint();
    run.line_with("mirror listening on");
    let load = common::rackbench(&["load", &format!("http://{proxy}/"), "-n", "300", "-c", "2"]);
    common::assert_ran(&load, "load through the mirror");
    let doc = run.document();
    let sh = &doc["shadows"][0];
    let ended = ["answered", "timeouts", "errors"]
        .map(|k| sh[k].as_u64().unwrap())
        .iter()
        .sum::<u64>();
    assert!(ended > 0, "{doc:#}");
    let (_, body) = get(addr, "/live.json", "*/*");
    let live: Value = serde_json::from_str(&body).unwrap();
    common::schema::assert_valid("live-v1", &live, "/live.json");
    assert_eq!(live["command"], "mirror");
    assert_eq!(live["shadows"][0]["name"], "next");
    assert_eq!(live["shadows"][0]["requests"], ended, "{live:#}");
    assert_eq!(live["proxy"]["requests"], doc["requests"], "{live:#}");
    assert!(doc["requests"].as_u64().unwrap() >= 300, "{doc:#}");
    let (_, body) = get(addr, "/metrics", "application/openmetrics-text");
    let f = parsed(&body, true);
    let requests = sum(
        &f,
        "rackbench_shadow_requests",
        "rackbench_shadow_requests_total",
    );
    assert_eq!(requests, ended as f64);
    assert_eq!(
        sum(
            &f,
            "rackbench_proxy_requests",
            "rackbench_proxy_requests_total"
        ),
        doc["requests"].as_f64().unwrap()
    );
    assert_eq!(
        f["rackbench_shadow_latency_quantile_seconds"]["type"],
        "gauge"
    );
    run.end();
}

#[test]
fn a_plans_trials_are_each_a_label_set_counted_as_their_records_count() {
    let plan = common::Plan::write(
        "metrics-plan",
        "plan.toml",
        &format!(
            r#"name = "live"
repeats = 2
servers = ["ts"]
apps = ["hello"]
[server_defs.ts]
command = "{}"
[load]
connections = [2]
duration = "1s"
warmup = "0s"
"#,
            common::serve_test_command("--delay 1ms")
        ),
    );
    let out = plan.out.to_string_lossy().into_owned();
    let file = plan.file.to_string_lossy().into_owned();
    let run = Run::spawn(&[
        "run",
        &file,
        "--out",
        &out,
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "120s",
    ]);
    let addr = run.endpoint();
    run.ended();
    let (_, body) = get(addr, "/live.json", "*/*");
    let live: Value = serde_json::from_str(&body).unwrap();
    common::schema::assert_valid("live-v1", &live, "/live.json");
    assert_eq!(live["plan"]["trials_done"], 2, "{live:#}");
    assert_eq!(live["plan"]["trials_total"], 2);
    assert_eq!(live["trial"]["study"], "live");
    let (_, text) = get(addr, "/metrics", "text/plain");
    let mut total = 0;
    for (_, stored) in plan.docs("trials") {
        let load = &stored["trial"]["load"];
        let ended = load["requests"]["ok"].as_u64().unwrap() + common::error_count(&load["errors"]);
        total += ended;
        let labels = format!(
            "study=\"live\",trial=\"{}\",server=\"ts\",app=\"hello\",variant=\"ts\",runtime=\"system\",repeat=\"{}\"",
            stored["group"].as_str().unwrap(),
            stored["repeat"]
        );
        let line = format!("rackbench_requests_total{{{labels}}} {ended}\n");
        assert!(text.contains(&line), "no {line:?} in:\n{text}");
        assert!(
            text.contains(&format!("rackbench_server_cpu_seconds_total{{{labels}}} ")),
            "{text}"
        );
    }
    assert_eq!(live["totals"]["requests"], total);
    run.end();
}

#[test]
fn a_trial_shows_its_servers_memory_accept_queue_and_telemetry_while_it_runs() {
    if !common::have("unicorn", "apt-get install unicorn") {
        return;
    }
    // One unicorn worker and an app that sleeps 20 ms: the other 7 of the
    // 8 connections wait in the accept queue, and telemetry's app time is
    // about 20 ms a request.
    let work = common::scratch("metrics-telemetry");
    let work = work.to_string_lossy().into_owned();
    let run = Run::spawn(&[
        "trial",
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
        "4s",
        "--warmup",
        "1s",
        "--telemetry",
        "--work-dir",
        &work,
        "--json",
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-linger",
        "120s",
    ]);
    let addr = run.endpoint();
    let (mut queue, mut rss, mut app_ms) = (0, 0, None);
    loop {
        let (_, body) = get(addr, "/live.json", "*/*");
        let live: Value = serde_json::from_str(&body).unwrap();
        common::schema::assert_valid("live-v1", &live, "/live.json");
        if live["phase"] == "counted" {
            let server = &live["server"];
            queue = queue.max(server["accept_queue"].as_u64().unwrap_or(0));
            rss = rss.max(server["rss_bytes"].as_u64().unwrap_or(0));
            app_ms = live["telemetry"]["app_ms"].as_f64().or(app_ms);
            assert_eq!(live["trial"]["server"], "unicorn");
        }
        if live["done"] == true {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!((5..=8).contains(&queue), "the accept queue seen: {queue}");
    assert!(rss > 1 << 20, "the tree's RSS: {rss}");
    let app_ms = app_ms.expect("telemetry's app time while the load ran");
    assert!((18.0..60.0).contains(&app_ms), "app time {app_ms} ms");
    let (_, text) = get(addr, "/metrics", "application/openmetrics-text");
    let f = if python_client() {
        parsed(&text, true)
    } else {
        return;
    };
    let app_s = sum(
        &f,
        "rackbench_telemetry_app_seconds",
        "rackbench_telemetry_app_seconds",
    );
    assert!((0.018..0.06).contains(&app_s), "{app_s}");
    assert!(
        sum(
            &f,
            "rackbench_server_cpu_seconds",
            "rackbench_server_cpu_seconds_total"
        ) > 0.0
    );
    run.end();
    let _ = std::fs::remove_dir_all(&work);
}
