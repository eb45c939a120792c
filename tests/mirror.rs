//! `rackbench mirror` driven with real servers: the test server (with its
//! fault knobs) as primary and shadows, plain sockets as the client. The
//! rule under test throughout: whatever a shadow does, the client gets the
//! primary's answer, and every copy a shadow did not answer is counted.

mod common;

use rackbench::mirror::doc::MirrorDoc;
use rackbench::mirror::{Mirror, MirrorConfig, Upstream};
use rackbench::testserver::{Fault, Framing, TestServer, TestServerConfig};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn up(url: &str) -> Upstream {
    Upstream::parse(url).unwrap()
}

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn config(primary: &TestServer, shadows: &[(&str, String)]) -> MirrorConfig {
    let mut cfg = MirrorConfig::new(local(), up(&primary.url()));
    cfg.shadows = shadows
        .iter()
        .map(|(n, u)| (n.to_string(), up(u)))
        .collect();
    cfg
}

/// One response as read off the wire: status line, headers as sent, the
/// body decoded from its framing.
#[derive(Debug)]
struct Raw {
    status_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_response(r: &mut BufReader<TcpStream>, head_only: bool) -> Raw {
    let mut status_line = String::new();
    r.read_line(&mut status_line).unwrap();
    assert!(status_line.starts_with("HTTP/1.1 "), "{status_line:?}");
    let mut headers = Vec::new();
    loop {
        let mut l = String::new();
        r.read_line(&mut l).unwrap();
        let l = l.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').unwrap();
        headers.push((n.to_string(), v.trim().to_string()));
    }
    let mut raw = Raw {
        status_line: status_line.trim_end().to_string(),
        headers,
        body: Vec::new(),
    };
    if head_only {
        return raw;
    }
    if raw
        .header("transfer-encoding")
        .is_some_and(|v| v.contains("chunked"))
    {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).unwrap();
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap(), 16).unwrap();
            if n == 0 {
                // Trailers, then the blank line.
                loop {
                    let mut l = String::new();
                    r.read_line(&mut l).unwrap();
                    if l.trim_end().is_empty() {
                        break;
                    }
                }
                break;
            }
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).unwrap();
            raw.body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(len) = raw.header("content-length") {
        let mut b = vec![0; len.parse().unwrap()];
        r.read_exact(&mut b).unwrap();
        raw.body = b;
    }
    raw
}

fn connect(addr: SocketAddr) -> BufReader<TcpStream> {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    BufReader::new(s)
}

fn exchange(c: &mut BufReader<TcpStream>, req: &str) -> Raw {
    c.get_mut().write_all(req.as_bytes()).unwrap();
    read_response(c, req.starts_with("HEAD "))
}

/// Waits until `f` holds (the shadows work in the background).
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..500 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("never happened: {what}");
}

/// Headers minus those that belong to one connection (the test server
/// sends no Date, so one added by the proxy shows).
fn message_headers(r: &Raw) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = r
        .headers
        .iter()
        .filter(|(n, _)| {
            !["connection", "transfer-encoding", "keep-alive"]
                .contains(&n.to_ascii_lowercase().as_str())
        })
        .cloned()
        .collect();
    h.sort();
    h
}

#[test]
fn the_client_gets_the_primarys_answer_byte_for_byte() {
    for framing in [Framing::ContentLength, Framing::Chunked] {
        let primary = common::test_server(TestServerConfig {
            framing,
            body: b"a body in several chunks, with a trailer".to_vec(),
            ..Default::default()
        });
        let shadow = common::test_server(TestServerConfig {
            body: b"the shadow's own answer".to_vec(),
            ..Default::default()
        });
        let m = Mirror::start(config(&primary, &[("s", shadow.url())])).unwrap();
        let req = "GET /some/path?q=1 HTTP/1.1\r\nHost: example\r\n\r\n";
        let direct = exchange(&mut connect(primary.addr()), req);
        let proxied = exchange(&mut connect(m.addr), req);
        assert_eq!(proxied.status_line, direct.status_line, "{framing:?}");
        assert_eq!(
            message_headers(&proxied),
            message_headers(&direct),
            "{framing:?}"
        );
        assert_eq!(proxied.body, direct.body, "{framing:?}");
        // The status the primary chose passes through too.
        let head = exchange(&mut connect(m.addr), "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(head.status_line, direct.status_line);
        eventually("the shadow got both", || shadow.stats().requests_seen == 2);
        let doc = m.stop();
        assert_eq!(doc.requests, 2);
        assert_eq!(doc.shadows[0].answered, 2);
    }
}

#[test]
fn keep_alive_carries_many_requests_and_connection_close_ends_it() {
    let primary = common::plain_test_server();
    let shadow = common::plain_test_server();
    let m = Mirror::start(config(&primary, &[("s", shadow.url())])).unwrap();
    let mut c = connect(m.addr);
    for _ in 0..5 {
        let r = exchange(&mut c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(r.body, b"hello world");
    }
    let r = exchange(
        &mut c,
        "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.body, b"hello world");
    assert_eq!(r.header("connection"), Some("close"));
    let mut rest = Vec::new();
    assert_eq!(
        c.read_to_end(&mut rest).unwrap(),
        0,
        "closed after the answer"
    );
    let doc = m.stop();
    assert_eq!(doc.requests, 6);
    assert_eq!(doc.primary.errors, 0);
}

#[test]
fn post_is_mirrored_only_when_asked() {
    let primary = common::plain_test_server();
    let shadow = common::plain_test_server();
    let post = "POST /write HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";

    let m = Mirror::start(config(&primary, &[("s", shadow.url())])).unwrap();
    let r = exchange(&mut connect(m.addr), post);
    assert_eq!(r.body, b"hello world");
    let doc = m.stop();
    assert_eq!((doc.requests, doc.mirrored), (1, 0));
    assert_eq!(shadow.stats().requests_seen, 0);

    let mut cfg = config(&primary, &[("s", shadow.url())]);
    cfg.mirror_methods = vec![hyper::Method::POST];
    let m = Mirror::start(cfg).unwrap();
    exchange(&mut connect(m.addr), post);
    eventually("the shadow got the POST", || {
        shadow.stats().requests_seen == 1
    });
    let doc = m.stop();
    assert_eq!((doc.mirrored, doc.shadows[0].answered), (1, 1));
}

/// A shadow that accepts and never answers, one that resets every
/// connection, and an address nobody listens on.
#[test]
fn a_faulty_shadow_never_shows_to_the_client_and_every_copy_is_counted() {
    let primary = common::plain_test_server();
    let hung = common::test_server(TestServerConfig {
        fault: Fault::Hang,
        ..Default::default()
    });
    let reset = common::test_server(TestServerConfig {
        fault: Fault::Reset,
        ..Default::default()
    });
    let dead = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let mut cfg = config(
        &primary,
        &[("hung", hung.url()), ("reset", reset.url()), ("dead", dead)],
    );
    cfg.queue = 4;
    cfg.shadow_concurrency = 2;
    cfg.shadow_timeout = Duration::from_millis(300);
    let m = Mirror::start(cfg).unwrap();
    let n = 200;
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let addr = m.addr;
            std::thread::spawn(move || {
                let mut c = connect(addr);
                for _ in 0..n / 4 {
                    let r = exchange(&mut c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
                    assert!(r.status_line.starts_with("HTTP/1.1 200"), "{r:?}");
                    assert_eq!(r.body, b"hello world");
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let doc = m.stop();
    assert_eq!(doc.requests, n);
    assert_eq!(doc.primary.errors, 0);
    for sh in &doc.shadows {
        assert_eq!(sh.answered, 0, "{}", sh.name);
        assert_eq!(
            sh.sent + sh.dropped,
            n,
            "{}: every copy sent or counted dropped",
            sh.name
        );
        assert_eq!(
            sh.timeouts + sh.errors + sh.in_flight,
            sh.sent,
            "{}: every sent copy ends somewhere",
            sh.name
        );
    }
    let by = |name: &str| doc.shadows.iter().find(|s| s.name == name).unwrap();
    assert!(
        by("hung").timeouts > 0 && by("hung").dropped > 0,
        "{:?}",
        by("hung")
    );
    assert!(by("reset").errors > 0, "{:?}", by("reset"));
    assert!(by("dead").errors > 0, "{:?}", by("dead"));
}

#[test]
fn the_paired_difference_shows_a_slower_shadow() {
    let primary = common::plain_test_server();
    let slow = common::test_server(TestServerConfig {
        delay: Duration::from_millis(20),
        ..Default::default()
    });
    let m = Mirror::start(config(&primary, &[("slow", slow.url())])).unwrap();
    let mut c = connect(m.addr);
    for _ in 0..30 {
        exchange(&mut c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        std::thread::sleep(Duration::from_millis(5));
    }
    eventually("30 shadow answers", || {
        m.snapshot().shadows[0].answered == 30
    });
    let doc = m.stop();
    let p = &doc.shadows[0].paired;
    assert_eq!(p.count, 30);
    let (lo, hi) = (p.ci95_low_us.unwrap(), p.ci95_high_us.unwrap());
    // The shadow sleeps 20 ms; a generous floor for a busy machine.
    assert!(lo > 5_000, "{p:?}");
    assert!(lo as f64 <= p.median_us.unwrap() && p.median_us.unwrap() <= hi as f64);
    let schema_doc = serde_json::to_value(&doc).unwrap();
    common::schema::assert_valid("mirror-v1", &schema_doc, "a mirror run");
}

#[test]
fn the_record_file_holds_each_request_without_sensitive_headers() {
    let primary = common::plain_test_server();
    let dir = common::work_dir("record");
    let file = dir.join("rec.jsonl");
    let mut cfg = MirrorConfig::new(local(), up(&primary.url()));
    cfg.record = Some(file.clone());
    cfg.keep_headers = vec!["cookie".into()];
    let m = Mirror::start(cfg).unwrap();
    let mut c = connect(m.addr);
    exchange(
        &mut c,
        "POST /form?a=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\nCookie: k=v\r\nX-Trace: 7\r\nContent-Length: 5\r\n\r\nabcde",
    );
    exchange(&mut c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let doc = m.stop();
    assert_eq!(doc.record.as_ref().unwrap().written, 2);
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0]["format"], "rackbench/record-v1");
    assert_eq!(
        lines[0]["dropped_headers"],
        serde_json::json!(["authorization", "proxy-authorization"])
    );
    let post = &lines[1];
    assert_eq!(post["method"], "POST");
    assert_eq!(post["target"], "/form?a=1");
    // (A Content-Length body: the test server reads no chunked bodies.)
    assert_eq!(post["body_b64"], "YWJjZGU="); // "abcde"
    assert_eq!(post["body_bytes"], 5);
    let names: Vec<&str> = post["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h[0].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"authorization"), "{names:?}");
    assert!(
        names.contains(&"cookie") && names.contains(&"x-trace"),
        "{names:?}"
    );
    assert!(!text.contains("secret"));
    assert!(lines[2]["t_us"].as_u64().unwrap() >= lines[1]["t_us"].as_u64().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server whose body has a line that changes every answer (a counter,
/// like a timestamp or request id) and a line that is its content.
fn noisy_server(content: &'static str) -> (SocketAddr, Arc<AtomicBool>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let counter = Arc::new(AtomicU64::new(0));
    let st = Arc::clone(&stop);
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        while !st.load(Ordering::Relaxed) {
            let Ok((s, _)) = l.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            s.set_nonblocking(false).unwrap();
            let counter = Arc::clone(&counter);
            std::thread::spawn(move || {
                let mut r = BufReader::new(s);
                loop {
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line.trim_end().is_empty() {
                            break;
                        }
                    }
                    let n = counter.fetch_add(1, Ordering::Relaxed) + (addr.port() as u64) * 1000;
                    let body = format!("id: {n}\ncontent: {content}\n");
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if r.get_mut().write_all(resp.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, stop)
}

#[test]
fn body_diffs_report_changes_but_not_the_noise_two_primaries_disagree_on() {
    let (a, sa) = noisy_server("same");
    let (b, sb) = noisy_server("same");
    let (same, s1) = noisy_server("same");
    let (changed, s2) = noisy_server("changed");
    let run = |with_b: bool| -> MirrorDoc {
        let mut cfg = MirrorConfig::new(local(), up(&format!("http://{a}")));
        cfg.shadows = vec![
            ("same".into(), up(&format!("http://{same}"))),
            ("changed".into(), up(&format!("http://{changed}"))),
        ];
        cfg.diff_bodies = true;
        if with_b {
            cfg.primary_b = Some(up(&format!("http://{b}")));
        }
        let m = Mirror::start(cfg).unwrap();
        let mut c = connect(m.addr);
        for _ in 0..10 {
            let r = exchange(&mut c, "GET /page HTTP/1.1\r\nHost: x\r\n\r\n");
            assert!(String::from_utf8_lossy(&r.body).contains("content: same"));
        }
        eventually("every shadow answered", || {
            m.snapshot().shadows.iter().all(|s| s.answered == 10)
        });
        m.stop()
    };
    let filtered = run(true);
    let by = |d: &MirrorDoc, n: &str| d.shadows.iter().find(|s| s.name == n).unwrap().clone();
    assert_eq!(by(&filtered, "same").body_mismatches, 0, "{filtered:?}");
    assert_eq!(by(&filtered, "same").body_noise, 10);
    assert_eq!(by(&filtered, "changed").body_mismatches, 10);
    assert_eq!(by(&filtered, "changed").mismatches_by_path[0].path, "/page");
    assert_eq!(filtered.primary_b.as_ref().unwrap().answered, 10);
    // The HTML section shows the paired distribution and where bodies differ.
    let page = rackbench::report::mirror::page(&filtered);
    assert!(page.contains("<svg") && page.contains("Paired latency difference"));
    assert!(page.contains("<td class=\"l\">/page</td>"), "{page}");
    // Without the second primary the counter line is a difference too.
    let raw = run(false);
    assert_eq!(by(&raw, "same").body_mismatches, 10);
    for s in [sa, sb, s1, s2] {
        s.store(true, Ordering::Relaxed);
    }
}

#[test]
fn bad_upstreams_are_refused_with_the_fix() {
    for (url, says) in [
        ("https://127.0.0.1:1", "https upstreams are not supported"),
        ("http://127.0.0.1:1/app", "has a path"),
        ("127.0.0.1:1", "not an http:// URL"),
    ] {
        let e = Upstream::parse(url).unwrap_err();
        assert!(e.contains(says), "{url}: {e}");
    }
    assert_eq!(up("http://localhost").authority, "localhost:80");
    let out = common::rackbench_cmd()
        .args([
            "mirror",
            "--listen",
            "127.0.0.1:0",
            "--primary",
            "http://127.0.0.1:1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--shadow NAME=URL"));
}

/// `Connection: close` from the primary belongs to the mirror's connection
/// to it, not the client's: the client's keep-alive connection goes on.
#[test]
fn hop_by_hop_headers_stay_on_their_own_hop() {
    let primary = common::test_server(TestServerConfig {
        close_every: 1,
        ..Default::default()
    });
    let shadow = common::plain_test_server();
    let m = Mirror::start(config(&primary, &[("s", shadow.url())])).unwrap();
    let mut c = connect(m.addr);
    for _ in 0..3 {
        let r = exchange(&mut c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(r.body, b"hello world");
        assert_eq!(r.header("connection"), None, "{r:?}");
    }
    assert_eq!(primary.stats().accepted_connections, 3);
    let doc = m.stop();
    assert_eq!(doc.primary.errors, 0);
}

/// A body larger than the copy limit reaches the primary whole, streamed;
/// the shadows' copies of it are dropped and counted, not buffered.
#[test]
fn a_body_over_the_limit_reaches_the_primary_and_its_copies_are_dropped() {
    let primary = common::plain_test_server();
    let shadow = common::plain_test_server();
    let mut cfg = config(&primary, &[("s", shadow.url())]);
    cfg.mirror_methods = vec![hyper::Method::POST];
    cfg.body_limit = 64 * 1024;
    let m = Mirror::start(cfg).unwrap();
    let mut c = connect(m.addr);
    let body = vec![b'x'; 4 << 20];
    c.get_mut()
        .write_all(
            format!(
                "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
    c.get_mut().write_all(&body).unwrap();
    let r = read_response(&mut c, false);
    assert_eq!(r.body, b"hello world");
    let small = exchange(
        &mut c,
        "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
    );
    assert_eq!(small.body, b"hello world");
    eventually("the small copy answered", || {
        m.snapshot().shadows[0].answered == 1
    });
    let doc = m.stop();
    let s = &doc.shadows[0];
    assert_eq!((s.dropped, s.dropped_body, s.sent), (1, 1, 1), "{s:?}");
    assert_eq!(shadow.stats().requests_seen, 1);
}

/// The command end to end: live lines on stderr, then mirror.json (held to
/// the schema) and mirror.html under --out.
#[test]
fn the_command_writes_its_document_and_page_under_out() {
    let primary = common::plain_test_server();
    let shadow = common::plain_test_server();
    let dir = common::scratch("mirror-out");
    let mut child = common::rackbench_cmd()
        .args([
            "mirror",
            "--listen",
            "127.0.0.1:0",
            "--primary",
            &primary.url(),
        ])
        .args([
            "--shadow",
            &format!("s={}", shadow.url()),
            "-d",
            "2s",
            "--out",
        ])
        .arg(&dir)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    let addr: SocketAddr = first
        .trim()
        .strip_prefix("mirror listening on http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("{first}"))
        .parse()
        .unwrap();
    let mut c = connect(addr);
    for _ in 0..5 {
        assert_eq!(
            exchange(&mut c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").body,
            b"hello world"
        );
    }
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success(), "{rest}");
    assert!(rest.contains("requests 5"), "{rest}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("mirror.json")).unwrap()).unwrap();
    common::schema::assert_valid("mirror-v1", &doc, "mirror.json");
    assert_eq!(doc["shadows"][0]["answered"], 5);
    let page = std::fs::read_to_string(dir.join("mirror.html")).unwrap();
    assert!(page.starts_with("<!doctype html>") && !page.contains("<script"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that leaves mid-body takes nothing down: its copies are
/// dropped and counted, and the next client is served.
#[test]
fn a_client_that_vanishes_mid_body_is_counted_and_harms_no_one() {
    let primary = common::plain_test_server();
    let shadow = common::plain_test_server();
    let mut cfg = config(&primary, &[("s", shadow.url())]);
    cfg.mirror_methods = vec![hyper::Method::POST];
    let m = Mirror::start(cfg).unwrap();
    {
        let mut c = TcpStream::connect(m.addr).unwrap();
        c.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let r = exchange(
        &mut connect(m.addr),
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
    );
    assert_eq!(r.body, b"hello world");
    eventually("the vanished request is over", || {
        let s = &m.snapshot().shadows[0];
        s.dropped == 1 && s.answered == 1
    });
    m.stop();
}

/// A primary that never answers: the client gets a 504 at the primary
/// timeout, counted, instead of waiting forever.
#[test]
fn a_hung_primary_gets_the_client_a_504_at_the_timeout() {
    let primary = common::test_server(TestServerConfig {
        fault: Fault::Hang,
        ..Default::default()
    });
    let shadow = common::plain_test_server();
    let mut cfg = config(&primary, &[("s", shadow.url())]);
    cfg.primary_timeout = Duration::from_millis(300);
    let m = Mirror::start(cfg).unwrap();
    let r = exchange(&mut connect(m.addr), "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(r.status_line.starts_with("HTTP/1.1 504"), "{r:?}");
    let doc = m.stop();
    assert_eq!((doc.primary.errors, doc.primary.timeouts), (1, 1));
}

#[test]
fn a_shadow_server_is_started_verified_sampled_and_stopped() {
    let cmd = format!(
        "{} serve-test --listen {{{{host}}}}:{{{{port}}}}",
        common::EXE
    );
    let sh = shadow_server_run(&["lab", "--command", &cmd], "serve-test");
    assert!(sh["server"].get("telemetry").is_none(), "{sh}");
}

#[test]
fn puma_as_a_shadow_server() {
    let there = rackbench::server::spec::which("puma").is_some();
    if !rackbench::require::require("puma", there, "apt-get install puma") {
        return;
    }
    shadow_server_run(&["puma", "--workers", "2", "--threads", "2"], "puma --bind");
}

/// Runs `rackbench mirror --shadow-server ARGS...` for a few seconds with
/// five requests through it; checks the shadow answered them, was sampled
/// and is gone afterwards. Returns its mirror-v1 shadow entry.
fn shadow_server_run(server_args: &[&str], command_has: &str) -> serde_json::Value {
    let primary = common::plain_test_server();
    let port = rackbench::host::free_port().unwrap();
    let listen = format!("127.0.0.1:{port}");
    let url = primary.url();
    let mut args = vec!["mirror", "--listen", &listen, "--primary", &url];
    args.push("--shadow-server");
    args.extend(server_args);
    args.extend(["--no-pin", "-d", "8s", "--json"]);
    let child = common::rackbench_cmd()
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The mirror listens once the shadow server has answered its check.
    let addr: SocketAddr = listen.parse().unwrap();
    let mut sent = 0;
    for _ in 0..1000 {
        if let Ok(s) = TcpStream::connect(addr) {
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut c = BufReader::new(s);
            for i in 0..5 {
                let r = exchange(&mut c, &format!("GET /x/{i} HTTP/1.1\r\nHost: x\r\n\r\n"));
                assert!(r.status_line.contains("200"), "{r:?}");
                sent += 1;
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(sent, 5, "the mirror never listened");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    common::schema::assert_valid("mirror-v1", &doc, "a mirror with a shadow server");
    let sh = &doc["shadows"][0];
    assert_eq!(sh["name"], server_args[0]);
    assert_eq!(sh["answered"], 5, "{sh}");
    let server = &sh["server"];
    assert!(server["rss_peak_bytes"].as_u64().unwrap() > 0, "{server}");
    assert!(server["samples"].as_u64().unwrap() > 0, "{server}");
    assert!(server["commands"][0]
        .as_str()
        .unwrap()
        .contains(command_has));
    // Stopped on exit: nothing answers on the shadow's port any more.
    let shadow: SocketAddr = sh["url"]
        .as_str()
        .unwrap()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    assert!(
        TcpStream::connect(shadow).is_err(),
        "the shadow server still listens"
    );
    sh.clone()
}

/// `--telemetry` with `--shadow-server`: the middleware's figures from
/// inside the shadow's app land in its mirror-v1 entry (it was refused
/// before, as nothing read them).
#[test]
fn a_shadow_servers_telemetry_is_in_its_entry() {
    let there = rackbench::server::spec::which("puma").is_some();
    if !rackbench::require::require("puma", there, "apt-get install puma") {
        return;
    }
    let sh = shadow_server_run(
        &["puma", "--workers", "2", "--threads", "2", "--telemetry"],
        "puma --bind",
    );
    let t = &sh["server"]["telemetry"];
    assert!(t["requests"].as_u64().is_some_and(|n| n > 0), "{sh}");
}

/// A dead or resetting shadow costs a connect and a failure per copy, on
/// the CPUs the primary path uses; after a few failures in a row the
/// mirror backs it off and probes now and then. Exists because without
/// the back-off a resetting shadow added over 500 µs to the primary's p99
/// (bench/runs/2026-11-23-mirror-quiet).
#[test]
fn a_failing_shadow_is_backed_off_counted_and_taken_back_when_it_answers() {
    let primary = common::plain_test_server();
    let reset = common::test_server(TestServerConfig {
        fault: Fault::Reset,
        ..Default::default()
    });
    let dead_addr = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let m = Mirror::start(config(
        &primary,
        &[
            ("reset", reset.url()),
            ("dead", format!("http://{dead_addr}")),
        ],
    ))
    .unwrap();
    let mut c = connect(m.addr);
    let get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    let n = 300;
    for _ in 0..n {
        let r = exchange(&mut c, get);
        assert!(r.status_line.starts_with("HTTP/1.1 200"), "{r:?}");
        assert_eq!(r.body, b"hello world");
    }
    eventually("every copy accounted for", || {
        m.snapshot()
            .shadows
            .iter()
            .all(|s| s.sent + s.dropped == n && s.in_flight == 0)
    });
    let doc = m.snapshot();
    for s in &doc.shadows {
        assert!(s.backoffs >= 1, "{s:?}");
        assert!(s.backed_off > n / 2, "most copies backed off: {s:?}");
        assert!(
            s.backed_off <= s.dropped,
            "backed off counts as dropped: {s:?}"
        );
        assert_eq!(s.answered, 0, "{s:?}");
        assert_eq!(s.errors, s.sent, "{s:?}");
    }
    // The resetting shadow saw a few connections, not one per copy.
    let accepted = reset.stats().accepted_connections;
    assert!(accepted < n / 4, "{accepted} connections for {n} copies");

    // The dead shadow comes up: after its back-off a probe reaches it and
    // copies flow again.
    let _revived = common::test_server(TestServerConfig {
        bind: rackbench::load::Endpoint::Tcp(dead_addr),
        ..Default::default()
    });
    eventually("the revived shadow answers a probe", || {
        exchange(&mut c, get);
        let d = m.snapshot();
        d.shadows[1].answered > 0
    });
    for _ in 0..20 {
        exchange(&mut c, get);
    }
    let doc = m.stop();
    assert_eq!(doc.primary.errors, 0);
    let dead = &doc.shadows[1];
    assert!(dead.answered >= 20, "{dead:?}");
    assert_eq!(dead.backed_off_for_ms, None, "{dead:?}");
    for s in &doc.shadows {
        assert_eq!(s.sent + s.dropped, doc.requests, "{s:?}");
        assert_eq!(s.answered + s.timeouts + s.errors + s.in_flight, s.sent);
    }
    let v = serde_json::to_value(&doc).unwrap();
    common::schema::assert_valid("mirror-v1", &v, "a mirror run with a backed-off shadow");
    let page = rackbench::report::mirror::page(&doc);
    assert!(page.contains("of which backed off"), "{page}");
    assert!(
        page.contains(&format!("<td>{}</td>", doc.shadows[0].backed_off)),
        "{page}"
    );
}

/// `--proxy-threads N`: the primary path on a multi-thread runtime relays
/// and mirrors the same; 0 is refused with the fix.
#[test]
fn more_proxy_threads_relay_and_mirror_the_same() {
    let primary = common::plain_test_server();
    let shadow = common::plain_test_server();
    let mut cfg = config(&primary, &[("s", shadow.url())]);
    cfg.threads = 3;
    let m = Mirror::start(cfg).unwrap();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let addr = m.addr;
            std::thread::spawn(move || {
                let mut c = connect(addr);
                for _ in 0..50 {
                    let r = exchange(&mut c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
                    assert_eq!(r.body, b"hello world");
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    eventually("every copy answered", || {
        m.snapshot().shadows[0].answered == 200
    });
    let doc = m.stop();
    assert_eq!((doc.requests, doc.primary.errors), (200, 0));
    let out = common::rackbench_cmd()
        .args(["mirror", "--listen", "127.0.0.1:0", "--primary"])
        .arg(primary.url())
        .args(["--shadow", &format!("s={}", shadow.url())])
        .args(["--proxy-threads", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--proxy-threads must be at least 1"));
}

/// `--shadow-send answered` (the default) holds a request's copies until
/// the client has the primary's answer, so shadow work never competes with
/// the request the client waits for; `arrival` sends them at once.
#[test]
fn copies_go_once_the_client_is_answered_or_at_arrival_when_asked() {
    use rackbench::mirror::ShadowSend;
    for (send, early) in [(ShadowSend::Answered, 0), (ShadowSend::Arrival, 1)] {
        let primary = common::test_server(TestServerConfig {
            delay: Duration::from_millis(800),
            ..Default::default()
        });
        let shadow = common::plain_test_server();
        let mut cfg = config(&primary, &[("s", shadow.url())]);
        cfg.shadow_send = send;
        let m = Mirror::start(cfg).unwrap();
        let addr = m.addr;
        let client = std::thread::spawn(move || {
            let mut c = connect(addr);
            exchange(&mut c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        });
        // Well inside the primary's 800 ms, well after an arrival copy.
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(
            shadow.stats().requests_seen,
            early,
            "{send:?}: copies at the shadow while the client waits"
        );
        let r = client.join().unwrap();
        assert!(r.status_line.starts_with("HTTP/1.1 200"), "{r:?}");
        eventually("the shadow answers", || {
            m.snapshot().shadows[0].answered == 1
        });
        let doc = m.stop();
        assert_eq!(doc.config.shadow_send, send.name());
    }
}

/// Issue 36: `record` and `mirror` with no request proxied printed
/// "primary p50 0µs p99 0µs" and wrote zeros in `latency_us`: a
/// measurement of nothing. The figures are null (as in load-v1) and the
/// line says "no requests".
#[test]
fn no_request_proxied_is_said_in_words_and_written_null() {
    let primary = common::plain_test_server();
    let shadow = common::plain_test_server();
    let dir = common::work_dir("mirror-nothing");
    let record = dir.join("rec.jsonl");
    let shadow_arg = format!("s={}", shadow.url());
    let cases: [&[&str]; 2] = [&["record"], &["mirror", "--shadow", &shadow_arg]];
    for command in cases {
        let out = common::rackbench_cmd()
            .args(command)
            .args(["--listen", "127.0.0.1:0", "--primary", &primary.url()])
            .args(["-d", "1s", "--json", "--record"])
            .arg(&record)
            .output()
            .unwrap();
        let what = format!("{command:?} with no request");
        let doc = common::stdout_json(&out, &what);
        common::schema::assert_valid("mirror-v1", &doc, &what);
        let mut latencies = vec![&doc["primary"]["latency_us"]];
        latencies.extend(
            doc["shadows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| &s["latency_us"]),
        );
        assert_eq!(
            latencies.len(),
            1 + command.len() / 2,
            "one per shadow: {doc}"
        );
        for l in latencies {
            assert_eq!(l["count"], 0, "{l}");
            for f in ["min", "mean", "p50", "p99", "max"] {
                assert!(l[f].is_null(), "{what}: {f}: {l}");
            }
        }
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| l.contains("requests")).unwrap();
        assert!(last.contains("primary no requests"), "{what}: {err}");
        assert!(!err.contains("0µs"), "{what}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
