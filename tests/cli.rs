//! The binary's command line: bad input gets one line naming the fix and
//! exit status 2; good input prints what it promises.

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
