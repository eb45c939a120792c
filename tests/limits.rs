//! The generator at scale: its own open-files limit (raised when a run
//! needs it, a clear exit 2 when even the hard limit is too low) and
//! thousands of connections opened in waves a listen backlog can take.

mod common;

use rackbench::load::{self, LoadConfig};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Output, Stdio};
use std::time::Duration;

/// `rackbench serve-test` with its epoll server (thousands of connections
/// on one thread), and its URL.
struct ServeTest {
    child: Child,
    url: String,
}

impl ServeTest {
    fn start() -> ServeTest {
        let mut child = common::rackbench_cmd()
            .args(["serve-test", "--max-connections", "5000"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve-test starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = format!("{}hello", line.trim());
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        ServeTest { child, url }
    }

    /// Stops the server and returns how many requests it answered.
    fn stop(mut self) -> u64 {
        // SAFETY: kill on our own child's pid.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        self.child.wait().unwrap();
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let n = err
            .lines()
            .find_map(|l| l.strip_prefix("{\"answered\":"))
            .and_then(|l| l.trim_end_matches('}').parse().ok());
        n.unwrap_or_else(|| panic!("no answered count in serve-test's stderr: {err}"))
    }
}

/// `rackbench load` with the open-files limit set to `soft:hard` first.
fn load_limited(soft: u64, hard: u64, args: &[&str]) -> Output {
    let mut cmd = common::rackbench_cmd();
    cmd.arg("load").args(args);
    // SAFETY: only setrlimit between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: soft as libc::rlim_t,
                rlim_max: hard as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

#[test]
fn a_thousand_connections_raise_the_soft_open_files_limit() {
    let server = ServeTest::start();
    let out = load_limited(
        256,
        4096,
        &[&server.url, "-c", "1000", "-d", "1s", "--json"],
    );
    server.stop();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["connections"]["opened"], 1000, "{doc}");
    assert_eq!(doc["connections"]["connect_failures"], 0, "{doc}");
    assert_eq!(doc["errors"]["connect"], 0, "{doc}");
    assert!(doc["requests"]["ok"].as_u64().unwrap() >= 1000, "{doc}");
}

#[test]
fn a_hard_limit_too_low_is_a_usage_error_before_any_load() {
    let server = ServeTest::start();
    let out = load_limited(256, 256, &[&server.url, "-c", "1000", "-d", "2s"]);
    let answered = server.stop();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    for fix in [
        "-c 1000",
        "hard 256",
        "ulimit -Hn",
        "LimitNOFILE",
        "fewer connections",
    ] {
        assert!(stderr.contains(fix), "{fix:?} missing from: {stderr}");
    }
    assert_eq!(answered, 0, "no load before the error");
}

/// A server whose listen backlog holds `backlog` connections and which
/// starts accepting only after `pause`: a connect storm beyond the backlog
/// has its SYNs dropped, and the client's kernel retries them a second
/// later. Answers every request with a 2-byte body.
fn slow_accepting_server(backlog: i32, pause: Duration) -> String {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    sock.listen(backlog).unwrap();
    let listener: std::net::TcpListener = sock.into();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        std::thread::sleep(pause);
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || answer_all(stream));
        }
    });
    url
}

fn answer_all(mut stream: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            if stream.write_all(ok).is_err() {
                return;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

#[test]
fn a_connect_storm_opens_in_waves_the_listen_backlog_takes() {
    // 1,500 connections for 1,500 requests: all at once into a backlog of
    // 300, most SYNs are dropped and retried by the kernel a second later,
    // so most requests take over a second. In waves, they are answered
    // about when the server starts accepting (150 ms) or soon after.
    let url = slow_accepting_server(300, Duration::from_millis(150));
    let mut c = LoadConfig::get(&url).unwrap();
    c.connections = 1500;
    c.duration = None;
    c.requests = Some(1500);
    c.timeout = Duration::from_secs(10);
    let r = load::run(c, |_| {}).expect("load runs");
    assert_eq!(r.errors, Default::default());
    assert_eq!(r.requests.ok, 1500);
    assert!(
        r.latency_us.p50 < 600_000,
        "the median request waited {} us: connects' SYNs were dropped and retried",
        r.latency_us.p50
    );
}

#[test]
fn large_bodies_are_read_whole_through_the_small_first_read_buffer() {
    // A read buffer starts at 1 KiB and grows when reads fill it: 300 KB
    // bodies, pipelined and chunked, must still frame and match exactly.
    use rackbench::testserver::{Framing, TestServerConfig};
    let mut body = vec![b'x'; 300_000];
    body.extend_from_slice(b"THE-END");
    for framing in [Framing::ContentLength, Framing::Chunked] {
        let server = common::test_server(TestServerConfig {
            body: body.clone(),
            framing,
            ..Default::default()
        });
        let mut c = LoadConfig::get(&server.url()).unwrap();
        c.connections = 2;
        c.pipeline = 4;
        c.duration = None;
        c.requests = Some(40);
        c.expect_body = b"THE-END".to_vec();
        let r = load::run(c, |_| {}).expect("load runs");
        assert_eq!(r.errors, Default::default(), "{framing:?}");
        assert_eq!(r.requests.ok, 40, "{framing:?}");
    }
}

/// A server like a busy nginx: one thread, one accept per pass of its
/// loop, and each request answered in the pass costs it 1 ms, so the more
/// connections it serves, the slower it accepts new ones.
fn one_accept_per_pass_server() -> String {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    sock.listen(1024).unwrap();
    let listener: std::net::TcpListener = sock.into();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut conns: Vec<(TcpStream, Vec<u8>, bool)> = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let mut busy = false;
            if let Ok((s, _)) = listener.accept() {
                s.set_nonblocking(true).unwrap();
                conns.push((s, Vec::new(), true));
                busy = true;
            }
            for (s, buf, alive) in conns.iter_mut() {
                match s.read(&mut chunk) {
                    Ok(0) => *alive = false,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    Err(_) => {}
                }
                while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    buf.drain(..end + 4);
                    std::thread::sleep(Duration::from_millis(1));
                    let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                    *alive &= s.write_all(ok).is_ok();
                    busy = true;
                }
            }
            conns.retain(|c| c.2);
            if !busy {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    });
    url
}

#[test]
fn connections_beyond_a_wave_all_open_against_a_server_that_accepts_slowly_when_busy() {
    // Were the first waves loaded while later ones wait in the backlog,
    // this server would take minutes to accept them all; answered
    // connections wait until every connection has been answered once.
    let url = one_accept_per_pass_server();
    let mut c = LoadConfig::get(&url).unwrap();
    c.connections = 600;
    c.duration = Some(Duration::from_secs(3));
    c.timeout = Duration::from_secs(20);
    let r = load::run(c, |_| {}).expect("load runs");
    assert_eq!(r.connections.opened, 600, "{:?}", r.connections);
    assert_eq!(r.connections.never_answered, 0, "{:?}", r.connections);
    assert_eq!(r.errors, Default::default());
}
