//! Real Rack servers from Debian, started by the lab through the binary:
//! every installed adapter on hello and one other app, behind nginx, a
//! user's own command template, a server that will not start, and Ctrl-C
//! in the middle. After each, no process of the trial may survive.
//!
//! Its own test target (`cargo test --test servers`); a test whose server
//! (or nginx) is not installed skips with one `SKIP:` line, so the suite
//! runs anywhere, but under `RACKBENCH_REQUIRE=all` (CI) it fails instead.

mod common;

use common::have_nginx;
use common::schema::assert_valid;
use rackbench::require::require;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// Processes whose command line or working directory mentions `dir`.
fn survivors(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let cwd = std::fs::read_link(format!("/proc/{pid}/cwd"))
            .map(|p| p.to_string_lossy().to_string())
            .unwrap_or_default();
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = state
            .rfind(')')
            .is_some_and(|i| state[i + 1..].trim_start().starts_with('Z'));
        // Match the directory itself or paths under it, not a sibling whose
        // name merely starts the same (…-jruby vs …-jruby-jetty-primes).
        let inside = |p: &str| p == needle || p.starts_with(&format!("{needle}/"));
        if !zombie && (cmdline.split([' ', ':', '=']).any(inside) || inside(&cwd)) {
            out.push(format!("{pid}: {cmdline}"));
        }
    }
    out
}

/// Every adapter `rackbench servers --json` lists, and whether it is installed.
fn adapters() -> Vec<(String, bool)> {
    let out = common::rackbench_cmd()
        .args(["servers", "--json"])
        .output()
        .unwrap();
    let list: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    list.iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["installed"] == true,
            )
        })
        .collect()
}

/// How to install the adapter `name` on Debian 12.
fn how_to_install(name: &str) -> String {
    let packages = match name {
        "jruby-jetty" => return "scripts/deps.sh test && scripts/jruby-jetty.sh build".into(),
        "webrick" => "ruby-webrick ruby-rack",
        "uwsgi" => "uwsgi-core uwsgi-plugin-rack-ruby3.1",
        other => other,
    };
    format!("apt-get install {packages}, or scripts/deps.sh test")
}

/// Whether the test may use each of `servers`: false (after a `SKIP:`
/// line) when one is not installed; a failure under RACKBENCH_REQUIRE.
fn have(servers: &[&str]) -> bool {
    let all = adapters();
    servers.iter().all(|name| {
        let there = all.iter().any(|(n, ok)| n == name && *ok);
        require(name, there, &how_to_install(name))
    })
}

fn trial(args: &[&str], dir: &Path) -> Output {
    let out = common::rackbench_cmd()
        .arg("trial")
        .args(args)
        .arg("--work-dir")
        .arg(dir)
        .arg("--json")
        .output()
        .unwrap();
    let left = survivors(dir);
    assert!(left.is_empty(), "{args:?} left processes behind: {left:#?}");
    out
}

fn record(out: &Output, what: &str) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: not JSON ({e})"))
}

fn assert_sane(r: &serde_json::Value, what: &str) {
    assert_eq!(r["schema"], "rackbench/trial-v1", "{what}");
    assert_valid("trial-v1", r, what);
    let load = &r["load"];
    assert!(
        load["throughput_rps"].as_f64().unwrap() > 0.0,
        "{what}: no throughput"
    );
    for kind in ["connect", "timeout", "reset", "parse", "status", "body"] {
        assert_eq!(
            load["errors"][kind], 0,
            "{what}: {kind} errors: {}",
            load["errors"]
        );
    }
    let m = &r["server_metrics"];
    assert!(
        m["rss_peak_bytes"].as_u64().unwrap() > 1_000_000,
        "{what}: RSS {}",
        m["rss_peak_bytes"]
    );
    assert!(m["processes_peak"].as_u64().unwrap() >= 1, "{what}");
    // CPU is read in clock ticks (10 ms): a sleeping app may show none.
    assert!(
        m["cpu_ms_per_request"].as_f64().unwrap() >= 0.0,
        "{what}: no CPU figure"
    );
    if r["app"]["name"] == "hello" {
        assert!(
            m["cpu_ms_per_request"].as_f64().unwrap() > 0.0,
            "{what}: no server CPU seen"
        );
    }
    for key in [
        "cpu_user_s",
        "cpu_sys_s",
        "pss_peak_bytes",
        "uss_peak_bytes",
    ] {
        assert!(m.get(key).is_some(), "{what}: server_metrics.{key} missing");
    }
    let env = &r["environment"];
    assert!(
        env["cores"].as_u64().unwrap() >= 1 && env["commands"].as_array().unwrap().len() >= 2,
        "{what}"
    );
    assert!(r["server"]["command"].as_str().unwrap().len() > 5, "{what}");
}

#[test]
fn every_installed_adapter_serves_hello_and_another_app() {
    let all = adapters();
    assert!(all.len() >= 6, "`rackbench servers --json` lists {all:?}");
    let servers: Vec<String> = all
        .into_iter()
        .filter(|(name, ok)| require(name, *ok, &how_to_install(name)))
        .map(|(name, _)| name)
        .collect();
    for (i, server) in servers.iter().enumerate() {
        // A different second app per server keeps the suite short.
        let other = ["primes", "ip", "fib", "sleep", "rails"][i % 5];
        for app in ["hello", other] {
            let dir = common::scratch(&format!("servers-{server}-{app}"));
            let what = format!("{server} with {app}");
            let out = trial(
                &[
                    "--server", server, "--app", app, "-c", "8", "-d", "2s", "--warmup", "500ms",
                ],
                &dir,
            );
            let r = record(&out, &what);
            assert_sane(&r, &what);
            eprintln!(
                "{what}: {:.0} req/s",
                r["load"]["throughput_rps"].as_f64().unwrap()
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// Issue 27: memory per worker is what one more worker costs, so a
/// cluster must show its workers apart from its master.
#[test]
fn a_puma_cluster_shows_memory_per_worker_and_its_master() {
    if !have(&["puma"]) {
        return;
    }
    let dir = common::scratch("servers-puma-per-worker");
    let args = [
        "--server",
        "puma",
        "--app",
        "hello",
        "--workers",
        "2",
        "-c",
        "4",
        "-d",
        "2s",
        "--warmup",
        "500ms",
    ];
    let r = record(&trial(&args, &dir), "puma --workers 2");
    assert_sane(&r, "puma --workers 2");
    let s = &r["server_metrics"]["samples"];
    let roles: Vec<&str> = s["per_process"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["master", "worker", "worker"],
        "{}",
        s["per_process"]
    );
    let w = &s["per_worker"];
    assert_eq!(
        (w["workers"].as_u64(), w["role"].as_str()),
        (Some(2), Some("worker")),
        "{w}"
    );
    assert_eq!(w["master"]["masters"], 1, "{w}");
    let (pss, uss, rss) = (
        w["pss_mean_bytes"].as_u64().unwrap(),
        w["uss_mean_bytes"].as_u64().unwrap(),
        w["rss_mean_bytes"].as_u64().unwrap(),
    );
    assert!(
        0 < uss && uss <= pss && pss <= rss,
        "USS {uss} <= PSS {pss} <= RSS {rss}"
    );
    // Workers share their master's pages: a worker's PSS is well under
    // its RSS, and the tree's PSS is about the sum of its processes'.
    assert!(
        pss < rss * 9 / 10,
        "PSS {pss} vs RSS {rss}: nothing shared?"
    );
    let tree_pss = s["pss_mean_bytes"].as_u64().unwrap();
    let sum: u64 = s["per_process"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pss_mean_bytes"].as_u64().unwrap())
        .sum();
    assert!(
        sum.abs_diff(tree_pss) < tree_pss / 20,
        "tree PSS {tree_pss}, its processes' {sum}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn behind_nginx_over_a_unix_socket_and_over_tcp() {
    if !have(&["puma"]) || !have_nginx() {
        return;
    }
    for extra in [&[][..], &["--nginx-tcp"][..]] {
        let dir = common::scratch(&format!("servers-nginx{}", extra.len()));
        let mut args = vec![
            "--server",
            "puma",
            "--app",
            "ip",
            "--behind",
            "nginx",
            "--nginx-workers",
            "2",
            "-c",
            "8",
            "-d",
            "1s",
        ];
        args.extend_from_slice(extra);
        let r = record(&trial(&args, &dir), "puma behind nginx");
        assert_sane(&r, "puma behind nginx");
        assert_eq!(r["topology"]["kind"], "nginx");
        let upstream = r["topology"]["upstream"].as_str().unwrap();
        assert_eq!(
            upstream.starts_with("unix:"),
            extra.is_empty(),
            "{upstream}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn four_thin_instances_behind_nginx_http_1_0_as_seed_000_ran_them() {
    // Seed 000: four thin on four unix sockets as one nginx upstream,
    // proxied over HTTP/1.0 with no upstream keep-alive. Every instance is
    // started, answers, is sampled, and is gone afterwards.
    if !(have(&["thin"]) && have_nginx()) {
        return;
    }
    let dir = common::scratch("servers-thin-x4");
    let args = [
        "--server",
        "thin",
        "--app",
        "ip",
        "--behind",
        "nginx",
        "--instances",
        "4",
        "--nginx-keepalive",
        "off",
        "--nginx-http",
        "1.0",
        "-c",
        "16",
        "-d",
        "2s",
        "--warmup",
        "500ms",
    ];
    let r = record(&trial(&args, &dir), "thin x4 behind nginx");
    assert_sane(&r, "thin x4 behind nginx");
    let topo = &r["topology"];
    assert_eq!(topo["kind"], "nginx");
    assert_eq!(topo["instances"], 4, "{topo}");
    assert_eq!(topo["keepalive"], 0, "{topo}");
    assert_eq!(topo["http_version"], "1.0", "{topo}");
    let upstreams: Vec<&str> = topo["upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    assert_eq!(upstreams.len(), 4, "{upstreams:?}");
    let mut distinct = upstreams.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "one socket each: {upstreams:?}");
    assert!(
        upstreams.iter().all(|u| u.starts_with("unix:")),
        "{upstreams:?}"
    );
    assert_eq!(r["server"]["instances"], 4);
    assert_eq!(r["server"]["commands"].as_array().unwrap().len(), 4);
    // thin is one process per instance: all four sampled as the server.
    assert!(
        r["server_metrics"]["processes_peak"].as_u64().unwrap() >= 4,
        "{}",
        r["server_metrics"]["processes_peak"]
    );
    let conf = std::fs::read_to_string(dir.join("nginx.conf")).unwrap();
    assert!(conf.contains("proxy_http_version 1.0;"), "{conf}");
    let pool = conf
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .any(|l| l.contains(" keepalive "));
    assert!(!pool, "no upstream pool: {conf}");
    for u in &upstreams {
        assert!(
            conf.contains(&format!("server {u} fail_timeout=0;")),
            "{conf}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);

    // Keep-alive over HTTP/1.0 is refused before anything starts.
    let dir = common::scratch("servers-thin-ka10");
    let out = trial(
        &[
            "--server",
            "thin",
            "--behind",
            "nginx",
            "--nginx-keepalive",
            "16",
            "--nginx-http",
            "1.0",
        ],
        &dir,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--nginx-keepalive off"), "{err}");
    // Several instances with nobody to balance them: a usage error too.
    let out = trial(&["--server", "thin", "--instances", "4"], &dir);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_instance_that_will_not_start_stops_the_others_and_tcp_instances_get_a_port_each() {
    if !(have(&["thin"]) && have_nginx()) {
        return;
    }
    // The third copy refuses to start: the trial fails naming it, and the
    // two already serving are stopped (trial() checks for survivors).
    let dir = common::scratch("servers-instances-fail");
    let cmd = "sh -c 'if [ {{instance}} = 2 ]; then echo copy two refuses; exit 3; fi; \
               exec thin start --rackup {{app}} --socket {{socket}} --environment production'";
    let out = trial(
        &[
            "--server",
            "mythin",
            "--command",
            cmd,
            "--behind",
            "nginx",
            "--instances",
            "3",
            "-c",
            "2",
            "-d",
            "1s",
        ],
        &dir,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("mythin instance 2 exited") && err.contains("copy two refuses"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);

    // Over TCP each copy has a port of its own.
    let dir = common::scratch("servers-instances-tcp");
    let args = [
        "--server",
        "thin",
        "--behind",
        "nginx",
        "--nginx-tcp",
        "--instances",
        "2",
        "-c",
        "4",
        "-d",
        "1s",
    ];
    let r = record(&trial(&args, &dir), "thin x2 over TCP");
    let ups: Vec<&str> = r["topology"]["upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    assert_eq!(ups.len(), 2, "{ups:?}");
    assert!(ups.iter().all(|u| u.starts_with("127.0.0.1:")), "{ups:?}");
    assert_ne!(ups[0], ups[1]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_deep_work_dir_does_not_break_unix_sockets() {
    // A unix socket path holds at most 107 bytes: sockets must not live in
    // the trial directory, which can be deep (passenger's agent sockets
    // failed under `/work/main/results/…`).
    let dir =
        common::scratch("servers-deep").join("a-directory-name-long-enough-to-matter".repeat(3));
    assert!(dir.as_os_str().len() > 120);
    let mut cases: Vec<Vec<&str>> = Vec::new();
    if have(&["puma"]) && have_nginx() {
        cases.push(vec!["--server", "puma", "--behind", "nginx"]);
    }
    if have(&["passenger"]) {
        cases.push(vec!["--server", "passenger"]);
    }
    for mut args in cases {
        args.extend_from_slice(&["--app", "hello", "-c", "4", "-d", "1s"]);
        let r = record(&trial(&args, &dir), &args.join(" "));
        assert_sane(&r, &args.join(" "));
    }
    let _ = std::fs::remove_dir_all(common::scratch("servers-deep"));
}

#[test]
fn a_users_own_command_template_works_like_a_builtin() {
    if !have(&["puma"]) {
        return;
    }
    let dir = common::scratch("servers-custom");
    let args = [
        "--server",
        "my-puma",
        "--command",
        "puma -b tcp://{{host}}:{{port}} -w {{workers}} -t {{threads}}:{{threads}} {{app}}",
        "--workers",
        "2",
        "--threads",
        "2",
        "--app",
        "primes",
        "-c",
        "4",
        "-d",
        "1s",
    ];
    let r = record(&trial(&args, &dir), "custom template");
    assert_sane(&r, "custom template");
    assert_eq!(r["server"]["name"], "my-puma");
    assert!(
        r["server_metrics"]["processes_peak"].as_u64().unwrap() >= 3,
        "master and two workers"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_trial_sends_its_own_method_headers_and_body_and_expects_its_own_answer() {
    // `trial` used to overwrite -m, -H, --body and --expect-*: the server
    // got a bare GET and was judged by the app's default answer.
    if !have(&["puma"]) {
        return;
    }
    let dir = common::scratch("servers-request");
    std::fs::create_dir_all(&dir).unwrap();
    let app = dir.join("echo.ru");
    std::fs::write(
        &app,
        "# echo.ru: answers 201 with the method, the X-Token header and the body.\n\
         run lambda { |env| [201, {\"content-type\" => \"text/plain\"}, \
         [\"#{env[\"REQUEST_METHOD\"]} #{env[\"HTTP_X_TOKEN\"]} #{env[\"rack.input\"].read}\"]] }\n",
    )
    .unwrap();
    let out = trial(
        &[
            "--server",
            "puma",
            "--app",
            app.to_str().unwrap(),
            "-m",
            "POST",
            "-H",
            "X-Token: secret",
            "--body",
            "order=42",
            "--expect-status",
            "201",
            "--expect-body",
            "POST secret order=42",
            "-c",
            "2",
            "-d",
            "1s",
        ],
        &dir.join("work"),
    );
    let r = record(&out, "POST trial");
    assert_eq!(r["verify"]["status"], 201, "{}", r["verify"]);
    assert_eq!(r["verify"]["body"], "POST secret order=42");
    assert_eq!(r["app"]["method"], "POST");
    assert_eq!(r["app"]["body"], "order=42");
    assert_eq!(r["load"]["errors"]["status"], 0, "every answer was 201");
    assert_eq!(
        r["load"]["errors"]["body"], 0,
        "every answer echoed the body"
    );
    assert!(r["load"]["requests"]["ok"].as_u64().unwrap() > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_that_will_not_start_fails_clearly_and_leaves_nothing() {
    let dir = common::scratch("servers-broken");
    let out = trial(
        &[
            "--server",
            "broken",
            "--command",
            "ruby -e 'warn \"boom: no such gem\"; exit 3' {{port}}",
            "-d",
            "1s",
        ],
        &dir,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("exited during start-up") && err.contains("boom: no such gem"),
        "{err}"
    );

    let out = trial(
        &[
            "--server",
            "silent",
            "--command",
            "sleep 30 # {{port}}",
            "--start-timeout",
            "1s",
            "-d",
            "1s",
        ],
        &dir,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("did not answer") && err.contains("--start-timeout"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 43: an 8 MiB answer (a report download) read as "did not
/// answer within 60s": the probe cut answers at 4 MiB and judged them
/// incomplete until the start timeout. The 8 MiB answer is checked and
/// loaded; the 100 MiB one is refused in words at once when the expected
/// text is past the check's 64 MiB, and passes when it is within them
/// (the check looks for it in what it read). The text is at the body's
/// start for the load: the engine's search of a body for it is the
/// engine's cost, not this test's subject.
#[test]
fn big_answers_are_checked_and_one_past_the_cap_is_refused_in_words() {
    if !have(&["puma"]) {
        return;
    }
    let app = concat!(env!("CARGO_MANIFEST_DIR"), "/ruby/apps/download.ru");
    let dir = common::scratch("servers-download");
    let run = |path: &str, expect: &str, conns: &str| {
        let args = [
            "--server",
            "puma",
            "--app",
            app,
            "--app-path",
            path,
            "--app-expect-body",
            expect,
            "-c",
            conns,
            "-d",
            "1s",
            "--warmup",
            "200ms",
        ];
        trial(&args, &dir)
    };
    let r = record(&run("/?mib=8", "download of 8388608 bytes", "2"), "8 MiB");
    assert_sane(&r, "8 MiB");

    let started = std::time::Instant::now();
    let hundred = run("/?mib=100", "end of download", "1");
    let err = String::from_utf8_lossy(&hundred.stderr);
    assert_eq!(hundred.status.code(), Some(1), "{err}");
    assert!(
        err.contains("a body of 100.0 MiB, over the 64.0 MiB the check reads")
            && err.contains("raise --check-max-body")
            && !err.contains("did not answer"),
        "{err}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(50),
        "refused at once, not at the start timeout"
    );
    let r = record(
        &run("/?mib=100", "download of 104857600 bytes", "1"),
        "100 MiB by its start",
    );
    assert!(r["load"]["throughput_rps"].as_f64().unwrap() > 0.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_wrong_answer_stops_the_trial_before_any_load() {
    if !have(&["puma"]) {
        return;
    }
    let dir = common::scratch("servers-wrong");
    let out = trial(
        &[
            "--server",
            "puma",
            "--app",
            "hello",
            "--app-expect-body",
            "goodbye",
            "-d",
            "1s",
        ],
        &dir,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("expected status 200 and a body containing \"goodbye\"")
            && err.contains("hello world"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ctrl_c_mid_run_stops_the_server_and_keeps_the_figures() {
    if !have(&["unicorn"]) {
        return;
    }
    let dir = common::scratch("servers-sigint");
    let child = common::rackbench_cmd()
        .args([
            "trial",
            "--server",
            "unicorn",
            "--workers",
            "2",
            "--app",
            "hello",
            "-c",
            "4",
            "-d",
            "60s",
            "--json",
            "--work-dir",
        ])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the load is on (the server has answered), then interrupt.
    let deadline = Instant::now() + Duration::from_secs(30);
    while survivors(&dir).len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "took {:?} to stop",
        t.elapsed()
    );
    assert_eq!(out.status.code(), Some(130));
    let r: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("the record is still printed");
    assert_eq!(r["interrupted"], true);
    assert_valid("trial-v1", &r, "an interrupted trial");
    assert!(r["load"]["requests"]["ok"].as_u64().unwrap() > 0);
    let left = survivors(&dir);
    assert!(left.is_empty(), "left behind: {left:#?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plan_runs_interleaved_survives_ctrl_c_and_resumes_without_redoing() {
    if !have(&["puma", "thin"]) {
        return;
    }
    let plan = common::Plan::write(
        "servers-plan",
        "plan.toml",
        r#"
name = "resume-test"
repeats = 2
servers = ["puma", "thin"]
apps = ["hello"]
[load]
connections = [4]
duration = "2s"
warmup = "500ms"
"#,
    );
    let (dir, out) = (plan.dir.clone(), plan.out.clone());
    let run = |resume: bool| {
        let mut c = plan.command();
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        if resume {
            c.arg("--resume");
        }
        c
    };
    // Interrupt during the second trial (whichever the shuffle put first).
    let child = run(false).spawn().unwrap();
    let trials_dir = out.join("trials");
    let first_done = || {
        std::fs::read_dir(&trials_dir)
            .ok()
            .and_then(|d| d.flatten().next())
            .map(|e| e.path())
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while first_done().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let first = first_done().expect("a first trial within 60 s");
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("--resume"), "must say how to resume: {err}");
    assert!(survivors(&dir).is_empty(), "{:?}", survivors(&dir));
    let before = std::fs::metadata(&first).unwrap().modified().unwrap();

    let o = run(true).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::metadata(&first).unwrap().modified().unwrap(),
        before,
        "a finished trial was redone"
    );
    let trials: Vec<_> = std::fs::read_dir(out.join("trials"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(trials.len(), 4);
    for t in trials {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(t.path()).unwrap()).unwrap();
        assert_eq!(v["outcome"], "ok", "{}", t.path().display());
        assert_valid("run-trial-v1", &v, &t.path().display().to_string());
    }
    // Order of the manifest: each round runs every server once, in the
    // order of the seed printed and kept in the manifest.
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_valid("run-v1", &m, "manifest.json");
    let ids: Vec<&str> = m["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["group"].as_str().unwrap())
        .collect();
    assert_ne!(ids[0], ids[1]);
    assert_ne!(ids[2], ids[3]);
    let seed = m["seed"].as_u64().expect("the manifest keeps the seed");
    assert!(
        err.contains(&format!("--seed {seed}")),
        "the resume command replays the seed: {err}"
    );
    let summary = String::from_utf8_lossy(&o.stdout);
    assert!(
        summary.contains("puma") && summary.contains("thin") && summary.contains("req/s"),
        "{summary}"
    );
    assert!(survivors(&dir).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plan_with_a_typo_is_refused_before_anything_starts() {
    let plan = common::Plan::write(
        "servers-badplan",
        "plan.toml",
        "name = \"x\"\napps = [\"hello\"]\nservers = [\"pumma\"]\n[load]\nconnections = [4]\n",
    );
    let o = plan.run(&[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("plan.toml, line 3") && err.contains("pumma") && err.contains("known servers"),
        "{err}"
    );
    assert!(!plan.out.exists(), "nothing may start");
    let _ = std::fs::remove_dir_all(&plan.dir);
}

#[test]
fn jruby_in_jetty_serves_the_same_rackup_files_and_shows_its_warm_up() {
    if !have(&["jruby-jetty"]) {
        return;
    }
    let dir = common::scratch("servers-jruby");
    let out = trial(
        &[
            "--server",
            "jruby-jetty",
            "--app",
            "hello",
            "-c",
            "8",
            "-d",
            "4s",
            "--warmup",
            "4s",
            "--start-timeout",
            "180s",
        ],
        &dir,
    );
    let r = record(&out, "jruby-jetty with hello");
    assert_sane(&r, "jruby-jetty with hello");
    assert_eq!(r["server_metrics"]["processes_peak"], 1, "one JVM");
    let timeline = r["load"]["timeline"].as_array().unwrap();
    assert!(
        timeline.iter().any(|t| t["warmup"] == true) && timeline.len() >= 7,
        "{timeline:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_server_that_dies_mid_run_ends_the_trial_with_its_log_and_a_reason() {
    if !have(&["puma"]) {
        return;
    }
    let dir = common::scratch("servers-dies");
    // `timeout` kills puma 4 s after its start, inside the 20 s run (on TERM
    // puma keeps serving kept-alive connections).
    let out = trial(
        &[
            "--server",
            "mortal",
            "--command",
            "timeout -s KILL 4 puma -b tcp://{{host}}:{{port}} {{app}}",
            "-c",
            "4",
            "-d",
            "20s",
        ],
        &dir,
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("the record is still printed");
    assert_valid("trial-v1", &r, "a trial whose server died");
    let why = r["server_exit"].as_str().expect("server_exit says why");
    assert!(
        why.contains("exited during the run") && why.contains("server.log"),
        "{why}"
    );
    assert!(
        r["load"]["duration_s"].as_f64().unwrap() < 10.0,
        "the load ended with the server"
    );
    assert!(
        r["load"]["requests"]["ok"].as_u64().unwrap() > 0,
        "what was measured before is kept"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The JSON file at `path`.
fn json_file(path: &Path) -> serde_json::Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_plan_writes_documents_that_keep_their_contracts() {
    // The plan tests/contracts' samples were made with: one puma trial and
    // a break-point search, every document of a results directory.
    if !have(&["puma"]) {
        return;
    }
    let dir = common::scratch("servers-contracts");
    let _ = std::fs::remove_dir_all(&dir);
    let out = dir.join("results");
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/contracts/plan.toml");
    let o = common::rackbench_cmd()
        .arg("run")
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_valid(
        "run-v1",
        &json_file(&out.join("manifest.json")),
        "manifest.json",
    );
    assert_valid(
        "summary-v1",
        &json_file(&out.join("summary.json")),
        "summary.json",
    );
    assert_valid(
        "report-v1",
        &json_file(&out.join("report.json")),
        "report.json",
    );
    for (sub, schema, n) in [
        ("trials", "run-trial-v1", 1),
        ("breakpoints", "breakpoint-v1", 1),
    ] {
        let files: Vec<PathBuf> = std::fs::read_dir(out.join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), n, "{sub}: {files:?}");
        for f in files {
            let doc = json_file(&f);
            assert_valid(schema, &doc, &f.display().to_string());
            if schema == "run-trial-v1" {
                assert_valid("trial-v1", &doc["trial"], "its trial record");
                assert_valid("load-v1", &doc["trial"]["load"], "its load report");
            }
        }
    }
    assert!(survivors(&dir).is_empty(), "{:?}", survivors(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Regressions: under --warmup-until-steady the server's sampler started
/// its window at the warm-up ceiling, not where the load's counted window
/// began; and `started_at` was stamped when the trial ended. The server
/// here is rackbench's own test server behind a user command template, so
/// this runs without Ruby. Its 50 ms service time, slept rather than
/// computed, makes throughput steady within seconds, long before the 30 s
/// ceiling, even on a busy machine (at 10 ms the scheduler's jitter on a
/// loaded two-core box kept it from settling).
#[test]
fn the_server_is_measured_over_the_load_window_and_the_trial_is_timed_truthfully() {
    let dir = common::scratch("servers-window");
    let command = format!(
        "{} serve-test --listen {{{{host}}}}:{{{{port}}}} --delay 50ms",
        common::EXE
    );
    let args = [
        "--server",
        "test-server",
        "--command",
        &command,
        "-c",
        "4",
        "-d",
        "2s",
        "--warmup",
        "15s",
        "--warmup-until-steady",
    ];
    // Whether throughput settles is the machine's to decide: a busy one
    // gets three tries before the test gives up on its precondition.
    let mut tries = Vec::new();
    let (r, before, after) = loop {
        let before = rackbench::host::utc_now();
        let r = record(&trial(&args, &dir), "steady warm-up");
        let after = rackbench::host::utc_now();
        if r["load"]["config"]["warmup_until_steady"] == true {
            break (r, before, after);
        }
        tries.push(r["load"]["timeline"].to_string());
        assert!(
            tries.len() < 3,
            "throughput never settled, so this test means nothing here: {tries:?}"
        );
    };
    let load = &r["load"];
    let warmup_ms = load["config"]["warmup_s"].as_f64().unwrap() * 1000.0;
    assert!(warmup_ms < 14_000.0, "warm-up {warmup_ms} ms");
    let samples = &r["server_metrics"]["samples"];
    let window_ms = samples["window_start_ms"]
        .as_f64()
        .unwrap_or_else(|| panic!("the sampler never marked its window: {samples}"));
    // The sampler starts a few milliseconds before the load's clock; the
    // watcher polls every 20 ms; a loaded machine adds its share.
    assert!(
        (window_ms - warmup_ms).abs() < 400.0,
        "sampler window starts at {window_ms} ms, the load's at {warmup_ms} ms"
    );
    // The window's samples cover ~2 s at 200 ms, not the warm-up as well.
    let n = samples["samples"].as_u64().unwrap();
    assert!((5..=16).contains(&n), "{n} samples in the window");

    let started = r["started_at"].as_str().unwrap();
    let ended = r["ended_at"].as_str().unwrap();
    assert!(
        before.as_str() <= started && started < ended && ended <= after.as_str(),
        "{before} <= {started} < {ended} <= {after}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
