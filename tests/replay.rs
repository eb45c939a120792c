//! `rackbench replay`: recorded requests sent again, open loop, at their
//! recorded offsets. The servers here count and log what reaches them, so
//! "every request once, in order, on time" is checked where it lands.

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

/// What a [`LogServer`] saw: each request line and Host, with its arrival.
type Seen = Arc<Mutex<Vec<(Instant, String, String)>>>;

/// A server that logs every request it answers (keep-alive, bodies by
/// Content-Length), so tests can check order, count and timing.
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
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let s = Arc::clone(&s);
                std::thread::spawn(move || serve(conn, s));
            }
        });
        LogServer { addr, seen }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    fn seen(&self) -> Vec<(Instant, String, String)> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(conn: TcpStream, seen: Seen) {
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
            .push((at, line.trim_end().to_string(), host));
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

fn span_of(seen: &[(Instant, String, String)]) -> Duration {
    seen.last().unwrap().0 - seen[0].0
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
    let report = load::run(replay_config(&file, &target.url(), 1.0, false), |_| {}).unwrap();
    let seen = target.seen();
    let lines: Vec<&str> = seen.iter().map(|s| s.1.as_str()).collect();
    let want: Vec<String> = (0..30)
        .map(|i| format!("GET /s/{i}?q={i} HTTP/1.1"))
        .collect();
    assert_eq!(lines, want, "every request once, in the order recorded");
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
    // The recorded span (~300 ms and the exchanges) is kept, not squeezed.
    let span = span_of(&seen);
    assert!(span >= Duration::from_millis(280), "{span:?}");
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
    synth_record(&file, 41, 10_000); // 400 ms
    let once = LogServer::start();
    load::run(replay_config(&file, &once.url(), 1.0, false), |_| {}).unwrap();
    let twice = LogServer::start();
    load::run(replay_config(&file, &twice.url(), 2.0, false), |_| {}).unwrap();
    let (a, b) = (span_of(&once.seen()), span_of(&twice.seen()));
    assert_eq!((once.seen().len(), twice.seen().len()), (41, 41));
    // Generous margins: the machine is shared.
    assert!(
        a >= Duration::from_millis(390) && a < Duration::from_millis(600),
        "{a:?}"
    );
    assert!(
        b >= Duration::from_millis(190) && b < Duration::from_millis(350),
        "{b:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn loop_repeats_the_schedule_until_the_duration_ends() {
    let dir = common::work_dir("replay-loop");
    let file = dir.join("rec.jsonl");
    synth_record(&file, 10, 10_000); // 90 ms span, a pass every 100 ms
    let server = LogServer::start();
    let mut cfg = replay_config(&file, &server.url(), 1.0, true);
    cfg.duration = Some(Duration::from_secs(1));
    let report = load::run(cfg, |_| {}).unwrap();
    let seen = server.seen();
    // Ten passes fit in 1 s; allow for a slow start or end.
    assert!((80..=110).contains(&seen.len()), "{}", seen.len());
    for i in 0..10 {
        let n = seen
            .iter()
            .filter(|s| s.1 == format!("GET /r/{i} HTTP/1.1"))
            .count();
        assert!(n >= 8, "/r/{i} sent {n} times");
    }
    assert!(report.requests.ok as usize >= 80);
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
