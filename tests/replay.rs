//! `rackbench replay`: recorded requests sent again, open loop, at their
//! recorded offsets. The servers here count and log what reaches them, so
//! "every request once, in order on its connection, never before it is
//! due" is checked where it lands. How late a request lands, and the
//! order across connections, belong to the machine's load (CI's is
//! busy), so no test here asserts them.

mod common;

use common::rackbench;
use rackbench::load::schedule::{read_record, Schedule};
use rackbench::load::{self, LoadConfig, Url};
use rackbench::mirror::{Mirror, MirrorConfig, Upstream};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A record file of `n` GETs to `/r/<i>`, `gap_us` apart.
fn synth_record(path: &Path, n: u64, gap_us: u64) {
    let mut out = String::from(
        "{\"format\":\"rackbench/record-v1\",\"rackbench_version\":\"0\",\"started_unix_ms\":0,\"dropped_headers\":[]}\n",
    );
    for i in 0..n {
        out.push_str(&format!(
            "{{\"seq\":{},\"t_us\":{},\"method\":\"GET\",\"target\":\"/r/{i}\",\"version\":\"HTTP/1.1\",\"headers\":[[\"host\",\"recorded:1\"]],\"body_b64\":\"\",\"body_bytes\":0}}\n",
            i + 1,
            1_000 + i * gap_us
        ));
    }
    std::fs::write(path, out).unwrap();
}

/// One request a [`LogServer`] saw: its arrival, request line, Host, and
/// the connection it came on (numbered as accepted).
type Arrival = (Instant, String, String, usize);
type Seen = Arc<Mutex<Vec<Arrival>>>;

/// A server that logs every request it answers (keep-alive, bodies by
/// Content-Length), so tests can check count, order on each connection,
/// and that nothing came early.
struct LogServer {
    addr: SocketAddr,
    seen: Seen,
}

impl LogServer {
    fn start() -> LogServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen: Seen = Arc::default();
        let s = Arc::clone(&seen);
        std::thread::spawn(move || {
            for (n, conn) in listener.incoming().enumerate() {
                let Ok(conn) = conn else { return };
                let s = Arc::clone(&s);
                std::thread::spawn(move || serve(conn, n, s));
            }
        });
        LogServer { addr, seen }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    fn seen(&self) -> Vec<Arrival> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(conn: TcpStream, conn_no: usize, seen: Seen) {
    conn.set_nodelay(true).unwrap();
    let mut w = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let at = Instant::now();
        let (mut host, mut len) = (String::new(), 0usize);
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (n, v) = h.split_once(':').unwrap();
            match n.to_ascii_lowercase().as_str() {
                "host" => host = v.trim().to_string(),
                "content-length" => len = v.trim().parse().unwrap(),
                _ => {}
            }
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).unwrap();
        seen.lock()
            .unwrap()
            .push((at, line.trim_end().to_string(), host, conn_no));
        if w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .is_err()
        {
            return;
        }
    }
}

fn replay_config(file: &Path, url: &str, speed: f64, repeat: bool) -> LoadConfig {
    let entries = read_record(BufReader::new(std::fs::File::open(file).unwrap()), "rec").unwrap();
    let schedule =
        Schedule::build(entries, &Url::parse(url).unwrap(), speed, repeat, true).unwrap();
    let mut cfg = LoadConfig::get(url).unwrap();
    cfg.connections = 4;
    Arc::new(schedule).drive(&mut cfg);
    cfg
}

/// The recorded offsets from the first request, at `speed`: when each
/// request of `file` falls due after the run's start.
fn due_offsets(file: &Path, speed: f64) -> Vec<Duration> {
    let entries = read_record(BufReader::new(std::fs::File::open(file).unwrap()), "rec").unwrap();
    let url = Url::parse("http://127.0.0.1:9/").unwrap();
    let schedule = Schedule::build(entries, &url, speed, false, true).unwrap();
    (0..schedule.len() as u64)
        .map(|k| schedule.due_offset(k).unwrap())
        .collect()
}

/// Asserts that no request reached the server before it fell due.
/// `before` is taken just before `load::run`, so the run's start is no
/// earlier, and a send is never early (open loop: at its due time or
/// later): each arrival is at least its due offset after `before`. This
/// holds on a busy machine, where how *late* a request lands does not.
fn assert_never_early(
    seen: &[Arrival],
    target_of: impl Fn(usize) -> String,
    due: &[Duration],
    before: Instant,
) {
    for (i, due) in due.iter().enumerate() {
        let want = target_of(i);
        let at = seen
            .iter()
            .find(|s| s.1 == want)
            .unwrap_or_else(|| panic!("{want} never arrived"))
            .0;
        assert!(
            at - before >= *due,
            "{want}: arrived {:?} after the start, due at {due:?}",
            at - before
        );
    }
}

/// Asserts that on each connection the requests came in the schedule's
/// order (`index` reads a request's place from its line).
fn assert_in_order_per_connection(seen: &[Arrival], index: impl Fn(&str) -> usize) {
    let conns: std::collections::BTreeSet<usize> = seen.iter().map(|s| s.3).collect();
    for c in conns {
        let on_c: Vec<usize> = seen
            .iter()
            .filter(|s| s.3 == c)
            .map(|s| index(&s.1))
            .collect();
        assert!(
            on_c.windows(2).all(|w| w[0] < w[1]),
            "connection {c} carried them out of order: {on_c:?}"
        );
    }
}

#[test]
fn a_recorded_session_replays_every_request_once_in_order() {
    // Record through the mirror: 30 requests, 10 ms apart, each its own target.
    let primary = common::plain_test_server();
    let dir = common::work_dir("replay-session");
    let file = dir.join("rec.jsonl");
    let mut cfg = MirrorConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        Upstream::parse(&primary.url()).unwrap(),
    );
    cfg.record = Some(file.clone());
    let m = Mirror::start(cfg).unwrap();
    let mut c = BufReader::new(TcpStream::connect(m.addr).unwrap());
    for i in 0..30 {
        let req = format!("GET /s/{i}?q={i} HTTP/1.1\r\nHost: proxy\r\nX-N: {i}\r\n\r\n");
        c.get_mut().write_all(req.as_bytes()).unwrap();
        // The test server answers "hello world" with a Content-Length.
        let mut line = String::new();
        loop {
            line.clear();
            c.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
        }
        let mut body = [0u8; 11];
        c.read_exact(&mut body).unwrap();
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(c);
    assert_eq!(m.stop().record.unwrap().written, 30);

    let target = LogServer::start();
    let cfg = replay_config(&file, &target.url(), 1.0, false);
    let before = Instant::now();
    let report = load::run(cfg, |_| {}).unwrap();
    let seen = target.seen();
    let line = |i: usize| format!("GET /s/{i}?q={i} HTTP/1.1");
    let index = |l: &str| -> usize {
        l["GET /s/".len()..]
            .split('?')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    // Every request once. The order is the schedule's on each connection;
    // across the four connections it is not the test's to know: requests
    // that fall due while the loop waits for the CPU go out together, one
    // per connection, and the server's threads log them in whatever order
    // they run (at load 15 it logged /s/16 before /s/13..15).
    let mut got: Vec<usize> = seen.iter().map(|s| index(&s.1)).collect();
    got.sort_unstable();
    assert_eq!(
        got,
        (0..30).collect::<Vec<_>>(),
        "every request once: {seen:?}"
    );
    assert!(seen.iter().all(|s| s.1 == line(index(&s.1))), "{seen:?}");
    assert_in_order_per_connection(&seen, index);
    // Host names the URL replayed to, not the proxy that recorded it.
    assert!(
        seen.iter().all(|s| s.2 == target.addr.to_string()),
        "{seen:?}"
    );
    assert_eq!(report.requests.ok, 30);
    let sch = report
        .schedule
        .as_ref()
        .expect("a replay reports its schedule");
    assert_eq!(sch.sends, Some(30));
    // The recorded spacing (10 ms sleeps and the exchanges) is kept, not
    // squeezed: no request lands before its recorded offset.
    let due = due_offsets(&file, 1.0);
    assert!(due[29] >= Duration::from_millis(290), "{due:?}");
    assert_never_early(&seen, line, &due, before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_request_is_answered_once_at_the_test_server() {
    let dir = common::work_dir("replay-count");
    let file = dir.join("rec.jsonl");
    synth_record(&file, 600, 1000); // 1,000 req/s for 0.6 s
    let server = common::plain_test_server();
    let mut cfg = replay_config(&file, &server.url(), 1.0, false);
    cfg.threads = 2;
    let report = load::run(cfg, |_| {}).unwrap();
    assert_eq!(server.stats().answered, 600);
    assert_eq!(report.requests.ok, 600);
    assert_eq!(report.requests.total, 600);
    let sch = report.schedule.unwrap();
    assert_eq!(sch.sends, Some(600));
    let share = sch.within_1ms_share.unwrap();
    assert!((0.0..=1.0).contains(&share));
    let doc = serde_json::to_value(
        load::run(replay_config(&file, &server.url(), 4.0, false), |_| {}).unwrap(),
    )
    .unwrap();
    common::schema::assert_valid("load-v1", &doc, "a replay");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn speed_two_halves_the_span() {
    let dir = common::work_dir("replay-speed");
    let file = dir.join("rec.jsonl");
    // 41 requests 10 ms apart: 400 ms. The due times at speed 2 are
    // exactly half those at speed 1.
    synth_record(&file, 41, 10_000);
    let (at_1, at_2) = (due_offsets(&file, 1.0), due_offsets(&file, 2.0));
    assert_eq!(at_1[40], Duration::from_millis(400));
    assert_eq!(at_2, at_1.iter().map(|d| *d / 2).collect::<Vec<_>>());
    // At the server, every request once and none before its due time at
    // its speed. How late they land is the machine's, not replay's: the
    // spans once asserted (under 600 ms and 350 ms) failed at load 15,
    // where a whole run can wait a scheduler's quantum or more.
    let target_of = |i: usize| format!("GET /r/{i} HTTP/1.1");
    let index = |l: &str| -> usize {
        l["GET /r/".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    for (speed, due) in [(1.0, &at_1), (2.0, &at_2)] {
        let server = LogServer::start();
        let cfg = replay_config(&file, &server.url(), speed, false);
        let before = Instant::now();
        let report = load::run(cfg, |_| {}).unwrap();
        let seen = server.seen();
        let mut got: Vec<usize> = seen.iter().map(|s| index(&s.1)).collect();
        got.sort_unstable();
        assert_eq!(got, (0..41).collect::<Vec<_>>(), "speed {speed}: {seen:?}");
        assert_eq!(report.requests.ok, 41, "speed {speed}");
        assert_never_early(&seen, target_of, due, before);
        assert_in_order_per_connection(&seen, index);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn loop_repeats_the_schedule_until_the_duration_ends() {
    let dir = common::work_dir("replay-loop");
    let file = dir.join("rec.jsonl");
    synth_record(&file, 10, 10_000); // 90 ms span, a pass every 100 ms
    let count = |seen: &[Arrival], i: usize| {
        let line = format!("GET /r/{i} HTTP/1.1");
        seen.iter().filter(|s| s.1 == line).count()
    };

    // Cut by a count instead of a clock: 25 requests are two passes and a
    // half, each request once per pass, whatever the machine's load.
    let server = LogServer::start();
    let mut cfg = replay_config(&file, &server.url(), 1.0, true);
    cfg.duration = None;
    cfg.requests = Some(25);
    let report = load::run(cfg, |_| {}).unwrap();
    let seen = server.seen();
    assert_eq!(report.requests.ok, 25, "{:?}", report.requests);
    for i in 0..10 {
        assert_eq!(
            count(&seen, i),
            if i < 5 { 3 } else { 2 },
            "/r/{i}: {seen:?}"
        );
    }
    assert_eq!(seen.len(), 25);

    // Cut by the duration: ten passes fall due within 1 s (the last at
    // 990 ms), each counted sent or, where the loop fell behind, unsent.
    // How many went out is the machine's: at load 15 fewer than the 80 once
    // asserted did; what was sent reached the server, each request at most
    // once per pass.
    let server = LogServer::start();
    let mut cfg = replay_config(&file, &server.url(), 1.0, true);
    cfg.duration = Some(Duration::from_secs(1));
    let report = load::run(cfg, |_| {}).unwrap();
    let seen = server.seen();
    let r = &report.requests;
    assert_eq!(r.total, 100, "{r:?}");
    assert_eq!(r.ok + r.unfinished + r.unsent, r.total, "no errors: {r:?}");
    let sends = report.schedule.as_ref().unwrap().sends.unwrap();
    assert!(
        r.ok as usize <= seen.len() && seen.len() as u64 <= sends,
        "{r:?}, {sends} sent, {} seen",
        seen.len()
    );
    assert!(seen.iter().all(|s| s.1.starts_with("GET /r/")), "{seen:?}");
    for i in 0..10 {
        assert!(count(&seen, i) <= 10, "/r/{i}: {seen:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cli_replays_a_record_and_an_nginx_log() {
    let dir = common::work_dir("replay-cli");
    let file = dir.join("rec.jsonl");
    synth_record(&file, 50, 2000);
    let server = common::plain_test_server();
    let out = rackbench(&["replay", file.to_str().unwrap(), &server.url(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["requests"]["ok"], 50);
    assert_eq!(doc["schedule"]["sends"], 50);
    assert!(doc["schedule"]["within_1ms_share"].as_f64().is_some());
    assert_eq!(server.stats().answered, 50);

    let log = dir.join("access.log");
    std::fs::write(
        &log,
        "127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] \"GET /a HTTP/1.1\" 200 5 \"-\" \"curl\"\n\
         127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] \"POST /b HTTP/1.1\" 200 5 \"-\" \"curl\"\n\
         127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] \"HEAD /c HTTP/1.1\" 200 0 \"-\" \"-\" 1795428000.200\n",
    )
    .unwrap();
    let log_server = LogServer::start();
    let out = rackbench(&[
        "replay",
        "--nginx-log",
        log.to_str().unwrap(),
        &log_server.url(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = log_server.seen().into_iter().map(|s| s.1).collect();
    assert_eq!(lines, ["GET /a HTTP/1.1", "HEAD /c HTTP/1.1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 request(s) other than GET/HEAD"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 36: a record whose clock jumped (a `t_us` of 10^15) made
/// `replay` wait silently until killed. Now the length is said before
/// the start, a schedule longer than a day is refused naming the way out,
/// and --max-gap (or a faster --speed) replays it.
#[test]
fn a_schedule_of_years_is_refused_and_max_gap_replays_it_after_saying_its_length() {
    let dir = common::work_dir("replay-gap");
    let file = dir.join("rec.jsonl");
    synth_record(&file, 2, 1_000_000_000_000_000);
    let started = Instant::now();
    let out = rackbench(&["replay", file.to_str().unwrap(), "http://127.0.0.1:9/"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the schedule lasts 31.7 years at this speed, longer than a day")
            && err.contains("--max-gap 10s"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "refused at once"
    );
    let server = common::plain_test_server();
    for flags in [["--max-gap", "10ms"], ["--speed", "1e12"]] {
        let out = rackbench(&[
            "replay",
            file.to_str().unwrap(),
            &server.url(),
            flags[0],
            flags[1],
            "--json",
        ]);
        common::assert_ran(&out, "replay");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("replaying 2 requests over "),
            "{flags:?}: {err}"
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["requests"]["ok"], 2, "{flags:?}");
    }
    let out = rackbench(&[
        "replay",
        file.to_str().unwrap(),
        &server.url(),
        "--max-gap",
        "10ms",
        "--json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("1 gap(s) between recorded requests cut to 10.00ms")
            && err.contains("replaying 2 requests over 10.00ms"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_malformed_record_line_is_a_usage_error_naming_it() {
    let dir = common::work_dir("replay-bad");
    let file = dir.join("rec.jsonl");
    synth_record(&file, 3, 1000);
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("{\"seq\":4,\"t_us\":\n");
    std::fs::write(&file, text).unwrap();
    let out = rackbench(&["replay", file.to_str().unwrap(), "http://127.0.0.1:9/"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("rec.jsonl:5: not a record-v1 request line"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plan_with_replay_runs_each_trial_on_the_record() {
    let cmd = format!(
        "{} serve-test --listen {{{{host}}}}:{{{{port}}}}",
        common::EXE
    );
    let text = format!(
        "name = \"replay\"\nservers = [\"t\"]\napps = [\"hello\"]\n[load]\nreplay = \"day.jsonl\"\n\
         rate_connections = 4\nwarmup = \"0s\"\n[server_defs.t]\ncommand = \"{cmd}\"\n"
    );
    let plan = common::Plan::write("replay-plan", "plan.toml", &text);
    synth_record(&plan.dir.join("day.jsonl"), 40, 5000); // 200 ms
    plan.run_ok(&["--no-pin"]);
    let rec = plan.only_doc("trials");
    let load = &rec["trial"]["load"];
    // Every recorded request once; /r/<i> is a 404 for the hello app and
    // still an answer, not an error.
    assert_eq!(load["requests"]["total"], 40, "{load}");
    assert_eq!(load["requests"]["ok"], 40, "{load}");
    assert_eq!(load["schedule"]["sends"], 40, "{load}");

    // A missing record file is refused before anything starts, at its line.
    std::fs::write(&plan.file, text.replace("day.jsonl", "nope.jsonl")).unwrap();
    let out = rackbench(&["run", plan.file.to_str().unwrap(), "--dry-run"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("plan.toml, line 5") && err.contains("nope.jsonl"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&plan.dir);
}
