//! The binary's command line: bad input gets one line naming the fix and
//! exit status 2; good input prints what it promises.

mod common;

use common::rackbench;
use std::process::{Command, Output};

#[test]
fn bad_input_is_a_one_line_error_naming_the_fix() {
    let cases: &[(&[&str], &str)] = &[
        (&["load", "127.0.0.1:8080"], "http://127.0.0.1:8080/path"),
        (&["load", "https://127.0.0.1/"], "https is not supported"),
        (&["doctor", "--seconds", "0"], "--seconds 0 must be"),
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
        (&["trial", "--server", "pumma"], "known servers"),
        (
            &["trial", "--server", "puma", "--app", "helo"],
            "built in: hello",
        ),
        (
            &[
                "trial",
                "--server",
                "x",
                "--command",
                "srv {{port}}",
                "--app",
                "helo",
            ],
            "--app-expect-body",
        ),
        (
            &[
                "trial",
                "--server",
                "x",
                "--command",
                "srv {{port}}",
                "--app",
                "/nonexistent/app.ru",
            ],
            "/nonexistent/app.ru: file not found",
        ),
        (
            &["load", "http://127.0.0.1:8080/", "--slack", "1ms"],
            "--slack applies to an open loop: add --rate R",
        ),
        (
            &["load", "http://127.0.0.1:8080/", "--mix", "/nonexistent/mix.toml"],
            "cannot read mix file /nonexistent/mix.toml",
        ),
        (
            &["load", "http://127.0.0.1:8080/api", "--mix", "/nonexistent/mix.toml"],
            "--mix gives the paths: write the URL as http://127.0.0.1:8080/",
        ),
        (
            &["load", "http://127.0.0.1:8080/", "--mix", "m.toml", "-H", "A: b"],
            "cannot be used with",
        ),
        (
            &["breakpoint", "http://127.0.0.1:8080/", "--slack", "1ms"],
            "--slack applies to an open loop: add --mode rate",
        ),
        (
            &[
                "trial",
                "--server",
                "x",
                "--command",
                "srv {{port}}",
                "--slack",
                "1ms",
            ],
            "--slack applies to an open loop: add --rate R",
        ),
        (
            &["trial", "--server", "x", "--command", "sleep 30"],
            "never says where to listen: put {{port}}",
        ),
        (
            &[
                "trial",
                "--server",
                "x",
                "--command",
                "srv {{port}}",
                "--unix-socket",
                "/tmp/s.sock",
            ],
            "--unix-socket /tmp/s.sock does not apply to a trial",
        ),
        (
            &[
                "trial",
                "--server",
                "x",
                "--command",
                "srv {{port}}",
                "--expect-status",
                "2xx",
            ],
            "--expect-status 201",
        ),
        (
            &[
                "trial",
                "--server",
                "x",
                "--command",
                "srv {{port}}",
                "--expect-body",
                "a",
                "--app-expect-body",
                "b",
            ],
            "keep one",
        ),
        (
            &[
                "trial",
                "--server",
                "x",
                "--command",
                "srv {{port}}",
                "--check",
                "p99<",
            ],
            "has no threshold",
        ),
        // Slow clients (issue 29): a pace without a count, a mode that
        // is none, more than the bound, a step of no time.
        (
            &["load", "http://127.0.0.1:8080/", "--slow-mode", "body"],
            "--slow-mode needs --slow-clients N: add it (e.g. --slow-clients 4), or drop --slow-mode",
        ),
        (
            &[
                "trial",
                "--server",
                "x",
                "--command",
                "srv {{port}}",
                "--slow-mode",
                "read",
            ],
            "--slow-mode needs --slow-clients N: add it",
        ),
        (
            &[
                "load",
                "http://127.0.0.1:8080/",
                "--slow-clients",
                "4",
                "--slow-mode",
                "slowloris",
            ],
            "slow mode 'slowloris': use headers, body or read",
        ),
        (
            &[
                "load",
                "http://127.0.0.1:8080/",
                "--slow-clients",
                "10001",
            ],
            "--slow-clients 10001 is over the bound of 10000: give fewer",
        ),
        (
            &[
                "load",
                "http://127.0.0.1:8080/",
                "--slow-clients",
                "4",
                "--slow-every",
                "0",
            ],
            "--slow-every must be at least 10ms, e.g. 1s",
        ),
        // Issue 36: clap answered these with a tip to write `-- -1`.
        (
            &["load", "http://127.0.0.1:8080/", "-d", "-1s"],
            "error: -d -1s is negative: -d takes DURATION, never below zero, e.g. -d 1s",
        ),
        (
            &["load", "http://127.0.0.1:8080/", "--rate", "-5"],
            "error: --rate -5 is negative: --rate takes RATE, never below zero, e.g. --rate 5",
        ),
        (
            &["trial", "--server", "puma", "--memory", "-512M"],
            "error: --memory -512M is negative",
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

/// Issue 36's other half: every flag that takes a number, a duration or a
/// size, in every subcommand, refuses a negative value with its reason,
/// by each of its spellings and in both forms (`--flag -1`, `--flag=-1`);
/// the flags are found from clap's own command, so one added later is
/// held too.
#[test]
fn every_number_flag_of_every_subcommand_refuses_a_negative_value() {
    use clap::CommandFactory;
    use rackbench::cli::negative::{first_negative, names, numeric_flags, refusal};
    fn walk(cmd: &clap::Command, path: &mut Vec<String>, seen: &mut usize) {
        let numeric = numeric_flags(cmd);
        for arg in &numeric {
            for name in names(arg) {
                for line in [vec![name.clone(), "-1".into()], vec![format!("{name}=-1")]] {
                    let got = first_negative(&numeric, &line);
                    let want = format!("{name} -1 is negative: {name} takes ");
                    assert!(
                        got.as_deref().is_some_and(|g| g.starts_with(&want)),
                        "rackbench {} {}: {got:?}",
                        path.join(" "),
                        line.join(" ")
                    );
                    *seen += 1;
                }
            }
        }
        for sub in cmd.get_subcommands() {
            path.push(sub.get_name().to_string());
            walk(sub, path, seen);
            path.pop();
        }
    }
    let cli = rackbench::cli::Cli::command();
    let mut seen = 0;
    walk(&cli, &mut Vec::new(), &mut seen);
    assert!(seen > 200, "only {seen} flag spellings held");
    // The subcommand is found from the line (a nested one too), and the
    // flags of one are not taken for another's.
    let line = |l: &str| -> Vec<String> { l.split_whitespace().map(String::from).collect() };
    let cases: &[(&str, Option<&str>)] = &[
        (
            "rackbench trial --server puma --cpus -1.5",
            Some("--cpus -1.5 is negative"),
        ),
        (
            "rackbench k8s job --segments -2",
            Some("--segments -2 is negative"),
        ),
        ("rackbench runtime add x --ruby /r --gemfile -1", None),
        ("rackbench load http://127.0.0.1:9/ --header -1", None),
        ("rackbench k8s run -- load -d -1s", None),
    ];
    for &(l, want) in cases {
        let got = refusal(&cli, &line(l));
        match (got.as_deref(), want) {
            (None, None) => {}
            (Some(got), Some(want)) => assert!(got.starts_with(want), "{l}: {got}"),
            (got, want) => panic!("{l}: got {got:?}, want {want:?}"),
        }
    }
    let load = cli.find_subcommand("load").unwrap();
    let load: Vec<String> = numeric_flags(load)
        .iter()
        .map(|a| a.get_long().unwrap().to_string())
        .collect();
    for f in [
        "rate",
        "duration",
        "connections",
        "requests",
        "warmup",
        "timeout",
    ] {
        assert!(load.contains(&f.to_string()), "{f}: {load:?}");
    }
    for f in ["header", "method", "body", "unix-socket", "io"] {
        assert!(!load.contains(&f.to_string()), "{f}: {load:?}");
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
    let s = common::plain_test_server();
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
    let s = common::plain_test_server();
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
    let s = common::plain_test_server();
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
    let dir = common::work_dir("body");
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
    let s = common::plain_test_server();
    let url = s.url();
    let run = |stop: &[&str]| {
        let mut args = vec!["load", url.as_str(), "-c", "8", "--json"];
        args.extend_from_slice(stop);
        let out = rackbench(&args);
        assert!(out.status.success());
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ok = doc["requests"]["ok"].as_u64().unwrap();
        let rss = doc["generator"]["peak_rss_bytes"].as_u64().unwrap();
        (ok, rss)
    };
    // One process's peak RSS varies from run to run by up to about a
    // megabyte (1 s runs here: 17.4 to 18.5 MB), with no growth behind it
    // (a 20 s run peaks where a 1 s run does): the short runs' highest is
    // the baseline, and the long run counts enough requests that eight
    // bytes kept per request would exceed the allowance by half again,
    // and at least eight times the short run's requests (a count, not a
    // time, so that a busy machine takes longer instead of testing less;
    // the minute is only a bound).
    let (short_ok, short_rss) = run(&["-d", "1s"]);
    let (_, short_rss2) = run(&["-d", "1s"]);
    let short_rss = short_rss.max(short_rss2);
    let long = (3u64 << 20 >> 3).max(8 * short_ok);
    let (long_ok, long_rss) = run(&["-n", &long.to_string(), "-d", "60s"]);
    assert!(
        long_ok >= long,
        "{short_ok} in 1 s, then {long_ok} of {long} within a minute"
    );
    assert!(
        long_rss <= short_rss + (2 << 20),
        "peak RSS {short_rss} after 1 s ({short_ok} requests), {long_rss} after 10 s ({long_ok})"
    );
}

/// Runs `args` under a pseudo-terminal (util-linux `script`), returning
/// all it wrote there, or None where `script` is missing.
fn on_a_terminal(args: &[&str]) -> Option<Output> {
    let mut line = common::EXE.to_string();
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
    let s = common::plain_test_server();
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

#[test]
fn load_exits_1_when_no_request_succeeded() {
    // Every answer lacks the expected body: nothing succeeded, and a
    // script must be able to tell without parsing the summary.
    let s = common::plain_test_server();
    let out = rackbench(&[
        "load",
        &s.url(),
        "-c",
        "1",
        "-n",
        "20",
        "--expect-body",
        "no such text",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no request succeeded"), "{err}");
}

#[test]
fn checks_print_met_or_not_and_set_the_exit_status() {
    let s = common::plain_test_server();
    let url = s.url();
    let base = ["load", url.as_str(), "-c", "2", "-n", "200"];
    let with = |checks: &[&str]| {
        let mut args: Vec<&str> = base.to_vec();
        for c in checks {
            args.extend(["--check", c]);
        }
        rackbench(&args)
    };
    let out = with(&["p99<10s", "errors<1%", "rps>1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for want in [
        "check p99<10s: met (p99 ",
        "check errors<1%: met (errors 0.00%)",
        "check rps>1: met (rps ",
    ] {
        assert!(text.contains(want), "want '{want}' in:\n{text}");
    }
    let out = with(&["p99<10s", "rps>100000000"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("check rps>100000000: NOT met (rps "),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 of 2 check(s) not met"));
    // Beside --json the lines go to stderr: stdout stays one document.
    let out = rackbench(&[
        "load", &url, "-c", "1", "-n", "10", "--json", "--check", "p50<10s",
    ]);
    assert_eq!(out.status.code(), Some(0));
    serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("one JSON document");
    assert!(String::from_utf8_lossy(&out.stderr).contains("check p50<10s: met"));
    // A malformed check is bad usage.
    let out = with(&["p99<200"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("give the latency a unit"), "{err}");
}

#[test]
fn resume_is_refused_when_the_plan_changed_unless_forced() {
    let dir = common::scratch("resume");
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.join("results");
    std::fs::create_dir_all(&out).unwrap();
    let old = "name = \"r\"\nservers = [\"puma\"]\napps = [\"hello\"]\n[load]\nconnections = [4]\n";
    std::fs::write(out.join("plan.toml"), old).unwrap();
    std::fs::write(out.join("manifest.json"), "{\"seed\": 5}").unwrap();
    let plan = dir.join("plan.toml");
    std::fs::write(&plan, old.replace("[4]", "[8]")).unwrap();
    let servers = dir.join("servers.toml");
    std::fs::write(&servers, "[mine]\ncommand = \"mine {{port}} {{app}}\"\n").unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--resume",
            "--dry-run",
        ];
        args.extend(extra);
        rackbench(&args)
    };
    let o = run(&[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("line 5 was `connections = [4]`, now `connections = [8]`")
            && err.contains("--force-resume"),
        "{err}"
    );
    let o = run(&["--force-resume"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("resuming anyway"), "{err}");
    // The same plan, but a servers file the run did not have.
    std::fs::write(&plan, old).unwrap();
    let o = run(&["--servers-file", servers.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is new: the run began without it"), "{err}");
    // A seed other than the run's own would change its order.
    let o = run(&["--seed", "6"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("differs from the run's seed 5"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server template for the built-in test server, which answers
/// "hello world" like the hello app: trials and plans without Ruby.
fn test_server_command() -> String {
    format!(
        "{} serve-test --listen {{{{host}}}}:{{{{port}}}}",
        common::EXE
    )
}

#[test]
fn a_port_answered_by_another_process_stops_the_trial() {
    // The "server" only writes down its port and sleeps; this test process
    // listens there and answers like the hello app. The trial must notice
    // that the answer comes from outside the server's process tree.
    use std::io::{Read, Write};
    let dir = common::work_dir("stranger");
    let port_file = dir.join("port");
    let command = format!(
        "sh -c 'echo {{{{port}}}} > {}; exec sleep 60'",
        port_file.display()
    );
    let stranger = {
        let port_file = port_file.clone();
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            let port: u16 = loop {
                if let Some(p) = std::fs::read_to_string(&port_file)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
                {
                    break p;
                }
                assert!(std::time::Instant::now() < deadline, "no port written");
                std::thread::sleep(std::time::Duration::from_millis(20));
            };
            let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
            listener.set_nonblocking(true).unwrap();
            let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let mut answered = 0;
            while std::time::Instant::now() < until {
                match listener.accept() {
                    Ok((mut c, _)) => {
                        c.set_nonblocking(false).unwrap();
                        let mut buf = [0u8; 4096];
                        let _ = c.read(&mut buf);
                        let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\nConnection: close\r\n\r\nhello world");
                        answered += 1;
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
                if port_file.with_extension("done").exists() {
                    break;
                }
            }
            (port, answered)
        })
    };
    let out = rackbench(&[
        "trial",
        "--server",
        "impostor",
        "--command",
        &command,
        "--work-dir",
        dir.join("work").to_str().unwrap(),
        "-d",
        "1s",
        "--start-timeout",
        "20s",
    ]);
    std::fs::write(port_file.with_extension("done"), "").unwrap();
    let (port, answered) = stranger.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(answered >= 1, "the stranger was never asked");
    assert!(
        err.contains(&format!(
            "port {port} is served by another process (pid {},",
            std::process::id()
        )) && err.contains("not by impostor"),
        "{err}"
    );
    assert!(!err.contains("req/s"), "no load may run: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_trial_on_a_server_of_its_own_passes_the_port_check_and_its_checks() {
    let dir = common::scratch("own");
    let cmd = test_server_command();
    let out = rackbench(&[
        "trial",
        "--server",
        "own",
        "--command",
        &cmd,
        "--work-dir",
        dir.to_str().unwrap(),
        "-c",
        "2",
        "-d",
        "500ms",
        "--warmup",
        "0s",
        "--check",
        "errors<1%",
        "--check",
        "rps>100000000",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}{err}");
    assert!(text.contains("check errors<1%: met"), "{text}");
    assert!(text.contains("check rps>100000000: NOT met"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn run_plan(dir: &std::path::Path, plan: &str, extra: &[&str]) -> Output {
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join("plan.toml");
    std::fs::write(&file, plan).unwrap();
    let out = dir.join("results");
    let mut args = vec![
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--no-pin",
    ];
    args.extend(extra);
    rackbench(&args)
}

#[test]
fn run_exits_1_when_a_trial_failed_or_missed_a_check() {
    let dir = common::scratch("runexit");
    let _ = std::fs::remove_dir_all(&dir);
    let cmd = test_server_command();
    let plan = format!(
        r#"name = "exit"
servers = ["good", "broken"]
apps = ["hello"]
checks = ["errors<1%", "rps>100000000"]
[load]
connections = [2]
duration = "500ms"
warmup = "0s"
[server_defs.good]
command = "{cmd}"
[server_defs.broken]
command = "false {{{{port}}}}"
"#
    );
    let o = run_plan(&dir.join("a"), &plan, &["--seed", "3"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("1 trial(s) failed"), "{err}");
    assert!(err.contains("1 trial(s) missed a check"), "{err}");
    assert!(err.contains("seed 3"), "{err}");
    let rec: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("a/results/trials/good__hello__direct__c2__rep1.json")).unwrap(),
    )
    .unwrap();
    let checks = rec["checks"].as_array().expect("checks in the record");
    assert_eq!(checks.len(), 2, "{checks:?}");
    assert_eq!(checks[0]["check"], "errors<1%");
    assert_eq!(checks[0]["met"], true);
    assert_eq!(checks[1]["met"], false);
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("a/results/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(m["seed"], 3);

    // Resuming the finished run keeps its failures: still exit 1.
    let o = run_plan(&dir.join("a"), &plan, &["--resume"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // All good, the server from a servers file: exit 0, the file copied
    // beside the results and named in the command that resumes the run.
    let servers = dir.join("servers.toml");
    std::fs::write(&servers, format!("[good]\ncommand = \"{cmd}\"\n")).unwrap();
    let plan =
        "name = \"exit\"\nservers = [\"good\"]\napps = [\"hello\"]\nchecks = [\"errors<1%\"]\n\
                [load]\nconnections = [2]\nduration = \"500ms\"\nwarmup = \"0s\"\n";
    let o = run_plan(
        &dir.join("b"),
        plan,
        &["--servers-file", servers.to_str().unwrap()],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let results = dir.join("b/results");
    assert_eq!(
        std::fs::read_to_string(results.join("servers-1.toml")).unwrap(),
        std::fs::read_to_string(&servers).unwrap()
    );
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(results.join("manifest.json")).unwrap()).unwrap();
    let command = m["command"].as_str().unwrap();
    assert!(
        command.contains(&format!("--servers-file {}", servers.display()))
            && command.contains(&format!("--seed {}", m["seed"])),
        "{command}"
    );
    // An edited servers file cannot be resumed into the same results.
    std::fs::write(&servers, format!("[good]\ncommand = \"{cmd} \"\n")).unwrap();
    let o = run_plan(
        &dir.join("b"),
        plan,
        &["--servers-file", servers.to_str().unwrap(), "--resume"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("differs from the run's copy") && err.contains("line 2 was"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_seed_replays_the_order_and_each_round_runs_every_trial_once() {
    let dir = common::work_dir("seed");
    let mut plan = String::from(
        "name = \"seed\"\nrepeats = 3\nservers = [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\"]\napps = [\"hello\"]\n[load]\nconnections = [1]\n",
    );
    for s in ["a", "b", "c", "d", "e", "f"] {
        plan.push_str(&format!(
            "[server_defs.{s}]\ncommand = \"true {{{{port}}}}\"\n"
        ));
    }
    let file = dir.join("plan.toml");
    std::fs::write(&file, plan).unwrap();
    let order = |seed: &str| {
        let o = rackbench(&["run", file.to_str().unwrap(), "--dry-run", "--seed", seed]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("seed {seed}")));
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let one = order("1");
    assert_eq!(one, order("1"), "a seed replays its order");
    assert_ne!(one, order("2"), "another seed, another order");
    assert_eq!(one.len(), 18);
    let rounds: Vec<Vec<&str>> = one
        .chunks(6)
        .map(|r| r.iter().map(|id| id.split("__").next().unwrap()).collect())
        .collect();
    for (i, r) in rounds.iter().enumerate() {
        assert!(one[i * 6..i * 6 + 6]
            .iter()
            .all(|id| id.ends_with(&format!("rep{}", i + 1))));
        let mut sorted = r.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, ["a", "b", "c", "d", "e", "f"], "round {i}: {r:?}");
    }
    assert!(
        rounds[0] != rounds[1] || rounds[1] != rounds[2],
        "the rounds are shuffled one by one: {rounds:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reader_that_leaves_early_ends_the_output_quietly() {
    // `rackbench servers | head -1`: the reader is gone before rackbench
    // writes (the pipe's read end is closed before it starts).
    let mut fds = [0; 2];
    // SAFETY: a two-element array for pipe(2) to fill.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just made and are owned here.
    let (read, write) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    drop(read);
    let out = common::rackbench_cmd()
        .arg("servers")
        .stdout(write)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(141), "{err}");
}

/// A process that burns a CPU until dropped (killed and reaped).
struct Burner(std::process::Child);

impl Drop for Burner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn doctor_prints_every_check_and_exits_1_only_on_a_problem() {
    let out = rackbench(&["doctor", "--seconds", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let code = out.status.code();
    assert!(matches!(code, Some(0) | Some(1)), "{code:?}\n{text}");
    assert!(
        text.starts_with("rackbench doctor: ") && text.contains("a problem stands in the way"),
        "{text}"
    );
    for check in rackbench::doctor::CHECKS {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(check))
            .unwrap_or_else(|| panic!("no line for {check}:\n{text}"));
        let status = line.split_whitespace().next().unwrap();
        assert!(["ok", "note", "problem"].contains(&status), "{line}");
    }
    let problems = text.lines().filter(|l| l.starts_with("problem ")).count();
    assert_eq!(code == Some(1), problems > 0, "{text}");
}

#[test]
fn doctor_names_a_busy_process_in_a_document_that_keeps_its_contract() {
    let burner = Burner(
        Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh"),
    );
    let pid = burner.0.id();
    let out = rackbench(&["doctor", "--seconds", "1", "--json"]);
    drop(burner);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    common::schema::assert_valid("doctor-v1", &doc, "rackbench doctor --json");
    let findings = doc["findings"].as_array().unwrap();
    let checks: Vec<&str> = findings
        .iter()
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    assert_eq!(checks, rackbench::doctor::CHECKS);
    let busy = findings
        .iter()
        .find(|f| f["check"] == "busy-processes")
        .unwrap();
    assert_eq!(busy["status"], "problem", "{busy}");
    assert!(
        busy["found"]
            .as_str()
            .unwrap()
            .contains(&format!("sh (pid {pid})")),
        "the burner (pid {pid}) is not named: {busy}"
    );
    assert_eq!(doc["ok"], false, "a problem makes the document not ok");
    assert_eq!(out.status.code(), Some(1));
}

/// Issue 30: `rackbench mix --from-record FILE --out MIX` writes a mix
/// whose weights are the record's counts per endpoint (3 : 1 : 1), its ids
/// a range, its write with the recorded body and Content-Type; a file that
/// is no record is one line naming the flag that reads it.
#[test]
fn mix_from_a_record_reproduces_its_proportions() {
    let dir = common::work_dir("cli-mix");
    let record = dir.join("r.jsonl");
    let line = |seq: u32, method: &str, target: &str, body_b64: &str| {
        format!(
            "{{\"seq\":{seq},\"t_us\":{seq}000,\"method\":\"{method}\",\"target\":\"{target}\",\"headers\":[[\"content-type\",\"application/x-www-form-urlencoded\"]],\"body_b64\":\"{body_b64}\"}}\n"
        )
    };
    let mut text = String::from("{\"format\":\"rackbench/record-v1\"}\n");
    for (i, id) in [4, 19, 7].iter().enumerate() {
        text += &line(i as u32 + 1, "GET", &format!("/posts/{id}"), "");
    }
    text += &line(4, "POST", "/posts/4/comments", "Ym9keT1oaQ==");
    text += &line(5, "GET", "/", "");
    std::fs::write(&record, text).unwrap();
    let out = dir.join("mix.toml");
    let o = rackbench(&[
        "mix",
        "--from-record",
        record.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mix: toml::Value = toml::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let e = mix["endpoint"].as_array().unwrap();
    let got: Vec<(&str, &str, i64)> = e
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["path"].as_str().unwrap(),
                t["weight"].as_integer().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("posts_id", "/posts/{random:4..19}", 3),
            ("root", "/", 1),
            ("post_posts_id_comments", "/posts/4/comments", 1)
        ]
    );
    assert_eq!(e[2]["body"].as_str(), Some("body=hi"));
    assert_eq!(
        e[2]["headers"]["Content-Type"].as_str(),
        Some("application/x-www-form-urlencoded")
    );
    let o = rackbench(&[
        "mix",
        "--from-record",
        dir.join("mix.toml").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not a rackbench record") && err.contains("--from-nginx-log"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 36: a server that exits during start-up, or never answers, was
/// reported with its message and log excerpt twice (the second time after
/// "caused by:"). Each is said once.
#[test]
fn a_start_up_failure_is_printed_once_with_its_log() {
    let dir = common::work_dir("cli-start-once");
    let cases = [
        (
            "sh -c 'echo boom-no-such-gem >&2; exit 3' {{port}}",
            "exited during start-up",
            "boom-no-such-gem",
        ),
        ("sleep 30 # {{port}}", "did not answer", "--start-timeout"),
    ];
    for (command, what, detail) in cases {
        let out = common::rackbench_cmd()
            .args(["trial", "--server", "broken", "--command", command])
            .args(["--start-timeout", "1s", "-d", "1s", "--work-dir"])
            .arg(&dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(err.matches(what).count(), 1, "{what} once:\n{err}");
        assert_eq!(err.matches(detail).count(), 1, "{detail} once:\n{err}");
        assert!(!err.contains("caused by"), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 36: every answer of 200 to `--expect-status 404` gave a headline
/// of "≥ 110us (ages of unanswered requests, too few responses came
/// back)". What happened is said in words, and the answers' latency is
/// the failed one.
#[test]
fn answers_that_all_fail_the_status_check_are_said_in_words() {
    let s = common::plain_test_server();
    let args = [
        "load",
        &s.url(),
        "-c",
        "2",
        "-d",
        "1s",
        "--expect-status",
        "404",
    ];
    let out = rackbench(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("answers, none with the expected status: got 200, expected 404"),
        "{text}"
    );
    assert!(text.contains("  latency      none\n"), "{text}");
    assert!(text.contains("  failed       min "), "{text}");
    assert!(!text.contains('≥'), "no lower bound: {text}");
    let json = common::rackbench_cmd()
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["latency_us"]["count"], 0, "{doc}");
    assert_eq!(doc["latency_lower_bound"], false, "{doc}");
    assert!(
        doc["latency_failed_us"]["count"].as_u64().unwrap() > 0,
        "{doc}"
    );
}

/// Issue 36: a server that never answers within the window: stdout said
/// "errors: none" while stderr said "see the errors above", and the
/// headline "mean ≥ 996.61ms ± 0us". "no answer in the window" is said
/// once on each stream, nothing contradicts it.
#[test]
fn a_server_that_never_answers_is_said_to_give_no_answer_once() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    // Accepts, reads nothing, answers nothing; the sockets are held until
    // the test process ends.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            held.extend(conn.ok());
        }
    });
    let out = rackbench(&["load", &url, "-c", "2", "-d", "1s"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}{err}");
    assert_eq!(text.matches("no answer in the window").count(), 1, "{text}");
    assert!(!text.contains("errors:      none"), "{text}");
    assert!(!text.contains('±'), "{text}");
    assert!(err.contains("error: no answer in the window"), "{err}");
    assert!(!err.contains("see the errors above"), "{err}");
}

/// Issue 36: after Ctrl-C the summary showed the trials that never ran
/// as 0 req/s and "RSS peak 0.0 KiB", and the trial cut short mid-load
/// printed its figures like a finished one's. The one says "interrupted"
/// on its progress line; every group without a finished run is "-" and
/// "not run".
#[test]
fn after_ctrl_c_the_summary_shows_what_did_not_run() {
    use std::io::{BufRead, BufReader};
    let dir = common::work_dir("cli-ctrl-c");
    let cmd = test_server_command();
    let plan = format!(
        r#"name = "ctrlc"
servers = ["first", "second"]
apps = ["hello"]
[load]
connections = [2]
duration = "60s"
warmup = "0s"
[server_defs.first]
command = "{cmd}"
[server_defs.second]
command = "{cmd}"
"#
    );
    std::fs::write(dir.join("plan.toml"), plan).unwrap();
    let results = dir.join("results");
    let mut child = common::rackbench_cmd()
        .arg("run")
        .arg(dir.join("plan.toml"))
        .arg("--out")
        .arg(&results)
        .args(["--no-pin", "--seed", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut progress = String::new();
    while !progress.contains("[1/2]") {
        assert!(err.read_line(&mut progress).unwrap() > 0, "{progress}");
    }
    // The load is on once the server listens (its log names its URL)
    // and the trial's one verifying request has been answered.
    let listening = || {
        std::fs::read_dir(results.join("work"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|d| {
                std::fs::read_to_string(d.path().join("server.log"))
                    .is_ok_and(|log| log.contains("http://"))
            })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !listening() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    let summary = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{progress}{rest}");
    assert!(
        rest.contains("        interrupted after "),
        "the progress line: {progress}{rest}"
    );
    let rows: Vec<&str> = summary
        .lines()
        .filter(|l| l.starts_with("first ") || l.starts_with("second "))
        .collect();
    assert_eq!(rows.len(), 2, "a row per planned group: {summary}");
    for row in rows {
        assert!(row.ends_with("-  not run"), "{row}\n{summary}");
        assert!(!row.contains("KiB"), "{row}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
