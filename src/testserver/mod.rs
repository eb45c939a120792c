//! A small HTTP/1.1 server with delay, stall and fault knobs, for the load
//! engine's own tests and benchmarks — never for benchmarking Rack servers.
//!
//! Thread per connection, std only. It measures its own service time (from
//! a request fully read to its response handed to the kernel), so a test
//! can hold the generator's latency against the server's, and it counts
//! every response it wrote, so a test can hold the generator's ok count
//! against it.
//!
//! `config.rs` holds its knobs and figures, `shared.rs` what its threads
//! share, `connection.rs` one connection's service; this file starts and
//! stops it and accepts. `limit.rs` is a second, epoll server with a
//! connection limit.

mod config;
mod connection;
mod limit;
mod shared;

pub use config::{
    Fault, Framing, SlowSeen, TestServerConfig, TestServerStats, BLOCKED_WRITE, SLOW_AFTER,
};
pub use limit::serve_with_connection_limit;

use crate::load::Endpoint;
use connection::{serve, Conn};
use hdrhistogram::Histogram;
use shared::Shared;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

pub struct TestServer {
    shared: Arc<Shared>,
    addr: Endpoint,
    accept: Option<JoinHandle<()>>,
    /// Held open (never accepted from) for `Fault::NeverAccept`.
    _idle: Option<Listener>,
}

impl TestServer {
    pub fn start(cfg: TestServerConfig) -> io::Result<TestServer> {
        let listener = match &cfg.bind {
            Endpoint::Tcp(a) => {
                // A deep backlog, so thousands of connects at once are
                // queued rather than dropped (std listens with 128).
                let sock = socket2::Socket::new(
                    socket2::Domain::for_address(*a),
                    socket2::Type::STREAM,
                    None,
                )?;
                sock.set_reuse_address(true)?;
                sock.bind(&(*a).into())?;
                sock.listen(4096)?;
                Listener::Tcp(sock.into())
            }
            Endpoint::Unix(p) => {
                let _ = std::fs::remove_file(p);
                Listener::Unix(UnixListener::bind(p)?)
            }
        };
        let addr = match &listener {
            Listener::Tcp(l) => Endpoint::Tcp(l.local_addr()?),
            Listener::Unix(_) => cfg.bind.clone(),
        };
        let shared = Arc::new(Shared {
            started: Instant::now(),
            stop: AtomicBool::new(false),
            answered: AtomicU64::new(0),
            seen: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            open: AtomicU64::new(0),
            slow_heads: AtomicU64::new(0),
            longest_head_us: AtomicU64::new(0),
            head_bytes_max: AtomicU64::new(0),
            slow_bodies: AtomicU64::new(0),
            body_declared_max: AtomicU64::new(0),
            body_received_max: AtomicU64::new(0),
            blocked_writes: AtomicU64::new(0),
            service: Mutex::new(Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("bounds")),
            arrivals: Mutex::new(Vec::new()),
            per_path: Mutex::new(std::collections::BTreeMap::new()),
            pool: Mutex::new((0, 0)),
            turn: Condvar::new(),
            cfg,
        });
        if shared.cfg.fault == Fault::NeverAccept {
            return Ok(TestServer {
                shared,
                addr,
                accept: None,
                _idle: Some(listener),
            });
        }
        match &listener {
            Listener::Tcp(l) => l.set_nonblocking(true)?,
            Listener::Unix(l) => l.set_nonblocking(true)?,
        }
        let sh = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("testserver-accept".into())
            .spawn(move || accept_loop(listener, sh))?;
        Ok(TestServer {
            shared,
            addr,
            accept: Some(accept),
            _idle: None,
        })
    }

    /// The TCP address (panics for a unix socket server).
    pub fn addr(&self) -> SocketAddr {
        match &self.addr {
            Endpoint::Tcp(a) => *a,
            Endpoint::Unix(p) => panic!("server listens on {}", p.display()),
        }
    }

    pub fn url(&self) -> String {
        match &self.addr {
            Endpoint::Tcp(a) => format!("http://{a}/"),
            Endpoint::Unix(_) => "http://localhost/".into(),
        }
    }

    pub fn stats(&self) -> TestServerStats {
        TestServerStats {
            answered: self.shared.answered.load(Ordering::SeqCst),
            requests_seen: self.shared.seen.load(Ordering::SeqCst),
            accepted_connections: self.shared.accepted.load(Ordering::SeqCst),
            service_us: self
                .shared
                .service
                .lock()
                .expect("service histogram")
                .clone(),
            slow: self.slow_seen(),
            per_path: self.shared.per_path.lock().expect("per path").clone(),
        }
    }

    fn slow_seen(&self) -> SlowSeen {
        let sh = &self.shared;
        let get = |a: &AtomicU64| a.load(Ordering::SeqCst);
        SlowSeen {
            slow_heads: get(&sh.slow_heads),
            longest_head_us: get(&sh.longest_head_us),
            head_bytes_max: get(&sh.head_bytes_max),
            slow_bodies: get(&sh.slow_bodies),
            body_declared_bytes_max: get(&sh.body_declared_max),
            body_received_bytes_max: get(&sh.body_received_max),
            blocked_writes: get(&sh.blocked_writes),
        }
    }

    /// When each request arrived, unix µs, in order (empty without
    /// `record_arrivals`).
    pub fn arrivals(&self) -> Vec<u64> {
        let mut v = self.shared.arrivals.lock().expect("arrivals").clone();
        v.sort_unstable();
        v
    }

    /// Stops accepting and tells every connection thread to finish.
    pub fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        if let Endpoint::Unix(p) = &self.addr {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept_loop(listener: Listener, sh: Arc<Shared>) {
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    let at_most = sh.cfg.accept_at_most as u64;
    while !sh.stop.load(Ordering::SeqCst) {
        if at_most > 0 && sh.open.load(Ordering::SeqCst) >= at_most {
            // Held: the next connection waits in the backlog.
            std::thread::sleep(Duration::from_millis(2));
            continue;
        }
        let conn: io::Result<Box<dyn Conn>> = match &listener {
            Listener::Tcp(l) => l.accept().map(|(s, _)| {
                let _ = s.set_nodelay(true);
                let _ = s.set_nonblocking(false);
                Box::new(s) as Box<dyn Conn>
            }),
            Listener::Unix(l) => l.accept().map(|(s, _)| {
                let _ = s.set_nonblocking(false);
                Box::new(s) as Box<dyn Conn>
            }),
        };
        match conn {
            Ok(c) => {
                sh.accepted.fetch_add(1, Ordering::SeqCst);
                // Past the limit a connection is served, but every answer
                // is 503: a crisp, repeatable break point.
                let limit = sh.cfg.max_connections as u64;
                let open = sh.open.fetch_add(1, Ordering::SeqCst);
                let over = limit > 0 && open >= limit;
                let sh = Arc::clone(&sh);
                workers.push(std::thread::spawn(move || {
                    serve(c, Arc::clone(&sh), over);
                    sh.open.fetch_sub(1, Ordering::SeqCst);
                }));
                workers.retain(|w| !w.is_finished());
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(2))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    for w in workers {
        let _ = w.join();
    }
}

/// Runs a server in the foreground until SIGINT or SIGTERM, printing its
/// URL first and its own figures (answered, service p50/p99) as one JSON
/// line on stderr at the end.
pub fn serve_forever(cfg: TestServerConfig) -> io::Result<()> {
    serve_forever_recording(cfg, None)
}

/// [`serve_forever`], writing each request's arrival (unix µs, one per
/// line, in order) to `arrivals_out` at the end.
pub fn serve_forever_recording(
    mut cfg: TestServerConfig,
    arrivals_out: Option<&std::path::Path>,
) -> io::Result<()> {
    cfg.record_arrivals |= arrivals_out.is_some();
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [libc::SIGINT, libc::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    let mut server = TestServer::start(cfg)?;
    println!("{}", server.url());
    io::stdout().flush()?;
    while !flag.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let s = server.stats();
    eprintln!(
        "{{\"answered\":{},\"requests_seen\":{},\"accepted_connections\":{},\"service_p50_us\":{},\"service_p99_us\":{}}}",
        s.answered,
        s.requests_seen,
        s.accepted_connections,
        s.service_us.value_at_quantile(0.5),
        s.service_us.value_at_quantile(0.99)
    );
    server.shutdown();
    if let Some(path) = arrivals_out {
        let mut text = String::new();
        for us in server.arrivals() {
            text.push_str(&us.to_string());
            text.push('\n');
        }
        std::fs::write(path, text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpStream;

    fn exchange(server: &TestServer, req: &[u8]) -> Vec<u8> {
        exchange_within(server, req, Duration::from_millis(500))
    }

    /// One exchange that gives up after `idle` without a byte.
    fn exchange_within(server: &TestServer, req: &[u8], idle: Duration) -> Vec<u8> {
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.set_read_timeout(Some(idle)).unwrap();
        s.write_all(req).unwrap();
        let mut out = Vec::new();
        let mut b = [0u8; 4096];
        while let Ok(n) = s.read(&mut b) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&b[..n]);
        }
        out
    }

    #[test]
    fn answers_pipelined_requests_and_counts_them() {
        let s = TestServer::start(TestServerConfig::default()).unwrap();
        let req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(3);
        let out = String::from_utf8(exchange(&s, &req)).unwrap();
        assert_eq!(out.matches("hello world").count(), 3, "{out}");
        assert_eq!(s.stats().answered, 3);
    }

    #[test]
    fn chunked_answer_has_extension_and_trailer() {
        let s = TestServer::start(TestServerConfig {
            framing: Framing::Chunked,
            ..Default::default()
        })
        .unwrap();
        let out = String::from_utf8(exchange(
            &s,
            b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        ))
        .unwrap();
        assert!(
            out.contains("4;ext=1\r\nhell\r\n") && out.ends_with("0\r\nX-Trailer: done\r\n\r\n"),
            "{out}"
        );
    }

    #[test]
    fn reset_fault_resets() {
        let s = TestServer::start(TestServerConfig {
            fault: Fault::Reset,
            ..Default::default()
        })
        .unwrap();
        let mut c = TcpStream::connect(s.addr()).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut b = [0u8; 16];
        let r = c.read(&mut b);
        assert!(
            matches!(r, Err(ref e) if e.kind() == io::ErrorKind::ConnectionReset)
                || matches!(r, Ok(0)),
            "{r:?}"
        );
    }

    #[test]
    fn never_accept_leaves_connections_unanswered() {
        let s = TestServer::start(TestServerConfig {
            fault: Fault::NeverAccept,
            ..Default::default()
        })
        .unwrap();
        let mut c = TcpStream::connect(s.addr()).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        c.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut b = [0u8; 16];
        assert!(c.read(&mut b).is_err(), "no answer expected");
        assert_eq!(s.stats().accepted_connections, 0);
    }

    fn status_of(out: &[u8]) -> String {
        String::from_utf8_lossy(out)
            .lines()
            .next()
            .unwrap_or("")
            .to_string()
    }

    #[test]
    fn abandoned_requests_keep_their_place_until_their_work_is_done() {
        let s = TestServer::start(TestServerConfig {
            max_in_progress: 1,
            delay: Duration::from_millis(400),
            ..Default::default()
        })
        .unwrap();
        // A client asks and leaves at once; the server works on regardless.
        let mut gone = TcpStream::connect(s.addr()).unwrap();
        gone.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        drop(gone);
        std::thread::sleep(Duration::from_millis(100));
        let req = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        assert_eq!(status_of(&exchange(&s, req)), "HTTP/1.1 503 X");
        std::thread::sleep(Duration::from_millis(500));
        let t = Instant::now();
        let out = exchange(&s, req);
        assert_eq!(status_of(&out), "HTTP/1.1 200 X");
        assert!(
            t.elapsed() >= Duration::from_millis(400),
            "{:?}",
            t.elapsed()
        );
    }

    #[test]
    fn a_worker_pool_serves_admitted_requests_in_turn() {
        let s = TestServer::start(TestServerConfig {
            max_in_progress: 3,
            workers: 1,
            // Long enough that the fourth request arrives while the first is
            // still being served, even on a loaded machine.
            delay: Duration::from_millis(400),
            ..Default::default()
        })
        .unwrap();
        let req = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        let t = Instant::now();
        let answers: Vec<String> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..4)
                .map(|i| {
                    let s = &s;
                    sc.spawn(move || {
                        std::thread::sleep(Duration::from_millis(20 * i));
                        status_of(&exchange_within(s, req, Duration::from_secs(5)))
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // Three admitted, served one after another; the fourth refused.
        assert_eq!(answers.iter().filter(|a| a.contains("200")).count(), 3);
        assert_eq!(answers[3], "HTTP/1.1 503 X", "{answers:?}");
        assert!(
            t.elapsed() >= Duration::from_millis(1200),
            "{:?}",
            t.elapsed()
        );
    }

    #[test]
    fn shutdown_is_prompt_even_with_hung_connections() {
        let mut s = TestServer::start(TestServerConfig {
            fault: Fault::Hang,
            ..Default::default()
        })
        .unwrap();
        let mut c = TcpStream::connect(s.addr()).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let t = Instant::now();
        s.shutdown();
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }
}
