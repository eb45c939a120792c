//! The binary's command line: bad input gets one line naming the fix and
//! exit status 2; good input prints what it promises.

mod common;

use rackbench::testserver::{TestServer, TestServerConfig};
use std::process::{Command, Output};

fn rackbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rackbench"))
        .args(args)
        .output()
        .expect("run rackbench")
}

#[test]
fn bad_input_is_a_one_line_error_naming_the_fix() {
    let cases: &[(&[&str], &str)] = &[
        (&["load", "127.0.0.1:8080"], "http://127.0.0.1:8080/path"),
        (&["load", "https://127.0.0.1/"], "https is not supported"),
        (&["load", "http://127.0.0.1:99999/"], "1 to 65535"),
        (
            &["load", "http://127.0.0.1:8080/", "-c", "0"],
            "--connections must be at least 1",
        ),
        (
            &["load", "http://127.0.0.1:8080/", "-d", "10x"],
            "use us, ms, s, m or h",
        ),
        (
            &["load", "http://127.0.0.1:8080/", "-d", "ten"],
            "10s, 250ms",
        ),
        (
            &["load", "http://127.0.0.1:8080/", "-H", "NoColon"],
            "'Name: value'",
        ),
        (
            &["load", "http://127.0.0.1:8080/", "--rate", "0"],
            "--rate 0 must be a positive",
        ),
        (
            &[
                "load",
                "http://127.0.0.1:8080/",
                "--pipeline",
                "2",
                "--no-keepalive",
            ],
            "--pipeline needs keep-alive",
        ),
        (
            &["load", "http://127.0.0.1:8080/", "--expect-status", "abc"],
            "2xx",
        ),
        (
            &[
                "load",
                "http://127.0.0.1:8080/",
                "--body-file",
                "/nonexistent/x",
            ],
            "cannot read --body-file",
        ),
        (&["load", "http://127.0.0.1:8080/", "--bogus"], "--bogus"),
        (
            &["load", "http://127.0.0.1:8080/", "--io", "kqueue"],
            "io_uring",
        ),
        (
            &[
                "load",
                "http://127.0.0.1:8080/",
                "--rate",
                "10",
                "--io",
                "io_uring",
            ],
            "drop --io or --rate",
        ),
        (&["trial", "--server", "pumma"], "known servers"),
        (
            &["trial", "--server", "puma", "--app", "helo"],
            "built in: hello",
        ),
    ];
    for (args, hint) in cases {
        let out = rackbench(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(hint),
            "{args:?} should mention '{hint}', said: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    }
}

/// A pin that cannot be made used to be ignored, and the run went on
/// unpinned, sharing CPUs with the server it measures.
#[test]
fn a_cpu_the_machine_lacks_is_a_one_line_usage_error() {
    // No machine this runs on has 1023 CPUs (1024 and up is not a list).
    let cases: &[(&[&str], &str)] = &[
        (
            &["load", "http://127.0.0.1:8080/", "--load-cpus", "1023"],
            "--load-cpus: CPU 1023 does not exist here",
        ),
        (
            &[
                "load",
                "http://127.0.0.1:8080/",
                "--load-cpus",
                "0,1022-1023",
            ],
            "--load-cpus: CPUs 1022-1023 do not exist here",
        ),
        (
            &["trial", "--server", "puma", "--server-cpus", "1023"],
            "--server-cpus: CPU 1023 does not exist here",
        ),
        (
            &["trial", "--server", "puma", "--load-cpus", "1023"],
            "--load-cpus: CPU 1023 does not exist here",
        ),
    ];
    for (args, hint) in cases {
        let out = rackbench(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(hint), "{args:?}: {err}");
        assert!(
            err.contains("use CPUs from that list, e.g."),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    // A CPU it has pins and runs (the flag used to panic in clap).
    let s = TestServer::start(TestServerConfig::default()).unwrap();
    let cpu = rackbench::load::cpus::allowed()[0].to_string();
    let out = rackbench(&["load", &s.url(), "--load-cpus", &cpu, "-d", "300ms"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn load_prints_a_summary_or_one_json_document() {
    let s = TestServer::start(TestServerConfig::default()).unwrap();
    let url = s.url();
    let out = rackbench(&["load", &url, "-c", "2", "-d", "300ms"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for want in ["req/s", "latency", "p99", "generator", "errors:      none"] {
        assert!(text.contains(want), "summary lacks '{want}':\n{text}");
    }
    let out = rackbench(&[
        "load",
        &url,
        "-c",
        "2",
        "-n",
        "50",
        "--json",
        "--expect-body",
        "hello",
    ]);
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["requests"]["ok"], 50);
    assert_eq!(doc["schema"], "rackbench/load-v1");
    common::schema::assert_valid("load-v1", &doc, "rackbench load --json");
}

#[test]
fn breakpoint_prints_one_json_document_that_keeps_its_contract() {
    let s = TestServer::start(TestServerConfig::default()).unwrap();
    let url = s.url();
    let out = rackbench(&[
        "breakpoint",
        &url,
        "--json",
        "--start",
        "2",
        "--max",
        "4",
        "-d",
        "300ms",
        "--probe",
        "200ms",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    common::schema::assert_valid("breakpoint-v1", &doc, "rackbench breakpoint --json");
    assert_eq!(doc["target"], url.as_str());
    assert!(!doc["steps"].as_array().unwrap().is_empty(), "{doc}");
}

#[test]
fn a_body_file_is_sent_with_its_length() {
    use std::io::{Read, Write};
    let dir = std::env::temp_dir().join(format!("rackbench-body-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("body.json");
    let body = b"{\"order\": [1, 2, 3], \"note\": \"line\r\nbreak\"}";
    std::fs::write(&file, body).unwrap();
    // A one-request server that keeps what it was sent.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/orders", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = conn.read(&mut buf).unwrap();
            got.extend_from_slice(&buf[..n]);
            let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
                assert!(n > 0, "closed before the head ended");
                continue;
            };
            let head = String::from_utf8_lossy(&got[..end]).to_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .map_or(0, |v| v.trim().parse().unwrap());
            if got.len() >= end + 4 + len || n == 0 {
                break;
            }
        }
        conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            .unwrap();
        got
    });
    let path = file.to_str().unwrap();
    let out = rackbench(&[
        "load",
        &url,
        "-m",
        "POST",
        "--body-file",
        path,
        "-c",
        "1",
        "-n",
        "1",
        "--json",
    ]);
    let got = server.join().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["requests"]["ok"], 1);
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("POST /orders HTTP/1.1\r\n"), "{text}");
    assert!(
        text.contains(&format!("Content-Length: {}\r\n", body.len())),
        "{text}"
    );
    assert!(
        got.ends_with(&[&b"\r\n\r\n"[..], &body[..]].concat()),
        "{text}"
    );
}

#[test]
fn memory_stays_flat_however_long_the_run() {
    let s = TestServer::start(TestServerConfig::default()).unwrap();
    let url = s.url();
    let run = |duration: &str| {
        let out = rackbench(&["load", &url, "-c", "8", "-d", duration, "--json"]);
        assert!(out.status.success());
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ok = doc["requests"]["ok"].as_u64().unwrap();
        let rss = doc["generator"]["peak_rss_bytes"].as_u64().unwrap();
        (ok, rss)
    };
    let (short_ok, short_rss) = run("1s");
    let (long_ok, long_rss) = run("6s");
    // Eight bytes kept per request would be megabytes by now.
    assert!(
        long_ok > 4 * short_ok.max(10_000),
        "{short_ok} then {long_ok}"
    );
    assert!(
        long_rss <= short_rss + (1 << 20),
        "peak RSS {short_rss} after 1 s ({short_ok} requests), {long_rss} after 6 s ({long_ok})"
    );
}

/// Runs `args` under a pseudo-terminal (util-linux `script`), returning
/// all it wrote there, or None where `script` is missing.
fn on_a_terminal(args: &[&str]) -> Option<Output> {
    let mut line = env!("CARGO_BIN_EXE_rackbench").to_string();
    for a in args {
        line.push(' ');
        line.push_str(a);
    }
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .output();
    let how = "apt-get install bsdutils (util-linux's `script`)";
    rackbench::require::require("script", out.is_ok(), how).then(|| out.unwrap())
}

#[test]
fn a_terminal_gets_a_live_line_each_second_and_a_pipe_does_not() {
    let s = TestServer::start(TestServerConfig::default()).unwrap();
    let url = s.url();
    let args = ["load", &url, "-c", "2", "-d", "2s"];
    let Some(tty) = on_a_terminal(&args) else {
        return;
    };
    assert!(tty.status.success());
    let text = String::from_utf8_lossy(&tty.stdout);
    for second in ["1s/2s", "2s/2s"] {
        let live = text
            .split("\r\x1b[2K")
            .find(|l| l.trim_start().starts_with(second))
            .unwrap_or_else(|| panic!("no live line for {second}:\n{text:?}"));
        assert!(live.contains("req/s") && live.contains("p99"), "{live:?}");
    }
    // The summary follows, the live line cleared.
    assert!(text.contains("errors:      none"), "{text}");
    let piped = rackbench(&args);
    assert!(piped.status.success());
    assert!(!piped.stderr.contains(&b'\r'), "a pipe got the live line");
    assert!(!piped.stdout.contains(&b'\r'));
}

#[test]
fn servers_lists_every_adapter_as_json() {
    let out = rackbench(&["servers", "--json"]);
    assert!(out.status.success());
    let list: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = list.iter().map(|s| s["name"].as_str().unwrap()).collect();
    for want in ["puma", "unicorn", "thin", "passenger", "webrick", "uwsgi"] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    for s in &list {
        assert!(
            s["installed"].is_boolean() && (s["version"].is_string() || s["version"].is_null()),
            "{s}"
        );
    }
}
