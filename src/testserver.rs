//! A small HTTP/1.1 server with delay, stall and fault knobs, for the load
//! engine's own tests and benchmarks — never for benchmarking Rack servers.
//!
//! Thread per connection, std only. It measures its own service time (from
//! a request fully read to its response handed to the kernel), so a test
//! can hold the generator's latency against the server's, and it counts
//! every response it wrote, so a test can hold the generator's ok count
//! against it.

use crate::load::Endpoint;
use hdrhistogram::Histogram;
use socket2::SockRef;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What goes wrong, on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    /// Read the request, never answer, keep the socket open.
    Hang,
    /// Read the request, then close with a TCP reset.
    Reset,
    /// Answer with bytes that are not HTTP.
    Garbage,
    /// Answer with this status.
    Status(u16),
    /// Answer 200 with a different body.
    WrongBody,
    /// Promise 100 bytes, send 10, close.
    CloseMidBody,
    /// Listen but never accept: connections sit in the backlog.
    NeverAccept,
}

/// How the body is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    ContentLength,
    /// Several chunks, a chunk extension and a trailer.
    Chunked,
    /// HTTP/1.0 style: no length, the close ends the body.
    Close,
}

#[derive(Debug, Clone)]
pub struct TestServerConfig {
    /// Where the server listens: the load engine's own `Endpoint`, so a
    /// test names one place for both sides.
    pub bind: Endpoint,
    /// Service time added to every request.
    pub delay: Duration,
    /// Between these offsets from the server's start, responses are held
    /// until the window ends (a whole-server pause, like a long GC).
    pub stall: Option<(Duration, Duration)>,
    pub fault: Fault,
    /// Apply the fault to every Nth request only (1 = all).
    pub fault_every: u64,
    /// Service time of the faulty answers instead of `delay` (a full
    /// queue's 503s come back at once while good answers take their time).
    pub fault_delay: Option<Duration>,
    pub body: Vec<u8>,
    pub framing: Framing,
    /// Send `Connection: close` and close after every Nth response on a
    /// connection (0 = never).
    pub close_every: u64,
    /// Answer 503 on connections beyond this many open at once (0 = no
    /// limit): a server with a known break point, for the search.
    pub max_connections: usize,
    /// Answer 503 at once to a request that arrives while this many are
    /// already in progress (0 = no limit): a server whose capacity is in
    /// requests, not connections. Admitted requests take their `delay` in
    /// full even when their client has left, as a real server's workers
    /// do, so a client that gives up leaves the server busy a while.
    pub max_in_progress: usize,
    /// Serve at most this many admitted requests at once; the others wait
    /// their turn in order (0 = all at once). With `max_in_progress`, a
    /// fixed pool of workers behind a bounded queue (puma's threads and
    /// backlog, unicorn's workers and listen queue): abandoned requests
    /// are worked off one pool-load after another.
    pub workers: usize,
    /// Keep each request's arrival on the wall clock (unix µs), for a test
    /// of when load arrived (segments that must interleave).
    pub record_arrivals: bool,
    /// Service times by path, in place of `delay`: a request whose path
    /// (query left out) starts with the first of these prefixes takes
    /// its time (a mix's endpoints with known, different service times).
    pub path_delays: Vec<(String, Duration)>,
    /// Count the requests seen by path, query left out
    /// (`TestServerStats::per_path`).
    pub count_paths: bool,
}

impl Default for TestServerConfig {
    fn default() -> Self {
        TestServerConfig {
            bind: Endpoint::Tcp(SocketAddr::from(([127, 0, 0, 1], 0))),
            delay: Duration::ZERO,
            stall: None,
            fault: Fault::None,
            fault_every: 1,
            fault_delay: None,
            body: b"hello world".to_vec(),
            framing: Framing::ContentLength,
            close_every: 0,
            max_connections: 0,
            max_in_progress: 0,
            workers: 0,
            record_arrivals: false,
            path_delays: Vec::new(),
            count_paths: false,
        }
    }
}

/// What the server saw.
#[derive(Debug, Clone)]
pub struct TestServerStats {
    /// Complete responses written.
    pub answered: u64,
    pub requests_seen: u64,
    pub accepted_connections: u64,
    /// Service time per answered request, microseconds.
    pub service_us: Histogram<u64>,
    /// What it saw of slow clients (`load::slow`).
    pub slow: SlowSeen,
    /// With `count_paths`: the requests seen by path, query left out.
    pub per_path: std::collections::BTreeMap<String, u64>,
}

/// The test server's own account of slow clients: what a request that
/// arrives slowly, or is read slowly, looked like from its side.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlowSeen {
    /// Connections whose request head was still unfinished
    /// [`SLOW_AFTER`] after its first byte (each counted once).
    pub slow_heads: u64,
    /// The longest a head stayed unfinished while it was read, µs.
    pub longest_head_us: u64,
    /// The most bytes one unfinished head held.
    pub head_bytes_max: u64,
    /// Requests whose head was complete and body still unfinished
    /// [`SLOW_AFTER`] after their first byte (each counted once).
    pub slow_bodies: u64,
    /// The largest body such a request declared (Content-Length).
    pub body_declared_bytes_max: u64,
    /// The most bytes of such a body received.
    pub body_received_bytes_max: u64,
    /// Responses whose write took over [`BLOCKED_WRITE`]: the client read
    /// slowly and the kernel's buffers were full.
    pub blocked_writes: u64,
}

/// A request still arriving this long after its first byte is slow.
pub const SLOW_AFTER: Duration = Duration::from_secs(1);
/// A response write that takes this long was blocked by its reader.
pub const BLOCKED_WRITE: Duration = Duration::from_millis(500);

struct Shared {
    cfg: TestServerConfig,
    started: Instant,
    stop: AtomicBool,
    answered: AtomicU64,
    seen: AtomicU64,
    accepted: AtomicU64,
    open: AtomicU64,
    service: Mutex<Histogram<u64>>,
    /// `SlowSeen`'s figures, each a count or a maximum.
    slow_heads: AtomicU64,
    longest_head_us: AtomicU64,
    head_bytes_max: AtomicU64,
    slow_bodies: AtomicU64,
    body_declared_max: AtomicU64,
    body_received_max: AtomicU64,
    blocked_writes: AtomicU64,
    /// Arrival of each request, unix µs (with `record_arrivals`).
    arrivals: Mutex<Vec<u64>>,
    /// Requests seen by path (with `count_paths`).
    per_path: Mutex<std::collections::BTreeMap<String, u64>>,
    /// (requests admitted, of which being worked on), with `turn`.
    pool: Mutex<(usize, usize)>,
    turn: Condvar,
}

/// An admitted request's place: in progress until dropped.
struct Permit<'a> {
    sh: &'a Shared,
}

impl Shared {
    /// A request's service time: a faulty answer's, else its path's
    /// (`path_delays`, query left out), else `delay`; its path counted
    /// with `count_paths`.
    fn service_time(&self, path: &str, faulty: bool) -> Duration {
        let cfg = &self.cfg;
        let bare = path.split('?').next().unwrap_or("/");
        if cfg.count_paths {
            *self
                .per_path
                .lock()
                .expect("per path")
                .entry(bare.to_string())
                .or_default() += 1;
        }
        match (faulty, cfg.fault_delay) {
            (true, Some(d)) => d,
            _ => cfg
                .path_delays
                .iter()
                .find(|(prefix, _)| bare.starts_with(prefix.as_str()))
                .map_or(cfg.delay, |(_, d)| *d),
        }
    }

    /// Admits a request under `max_in_progress` and waits for a worker
    /// under `workers`; None when it is to be refused.
    fn admit(&self) -> Option<Permit<'_>> {
        let (limit, workers) = (self.cfg.max_in_progress, self.cfg.workers);
        if limit == 0 && workers == 0 {
            return Some(Permit { sh: self });
        }
        let mut p = self.pool.lock().expect("pool");
        if limit > 0 && p.0 >= limit {
            return None;
        }
        p.0 += 1;
        while workers > 0 && p.1 >= workers {
            p = self.turn.wait(p).expect("pool");
        }
        p.1 += 1;
        Some(Permit { sh: self })
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let (limit, workers) = (self.sh.cfg.max_in_progress, self.sh.cfg.workers);
        if limit == 0 && workers == 0 {
            return;
        }
        let mut p = self.sh.pool.lock().expect("pool");
        p.0 -= 1;
        p.1 -= 1;
        drop(p);
        self.sh.turn.notify_one();
    }
}

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

trait Conn: Read + Write + Send {
    fn set_timeout(&self, d: Duration) -> io::Result<()>;
    fn reset(self: Box<Self>);
}

impl Conn for TcpStream {
    fn set_timeout(&self, d: Duration) -> io::Result<()> {
        self.set_write_timeout(Some(d))?;
        self.set_read_timeout(Some(d))
    }
    fn reset(self: Box<Self>) {
        // Linger 0: close sends RST instead of FIN.
        let _ = SockRef::from(&*self).set_linger(Some(Duration::ZERO));
    }
}

impl Conn for UnixStream {
    fn set_timeout(&self, d: Duration) -> io::Result<()> {
        self.set_write_timeout(Some(d))?;
        self.set_read_timeout(Some(d))
    }
    fn reset(self: Box<Self>) {}
}

fn accept_loop(listener: Listener, sh: Arc<Shared>) {
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    while !sh.stop.load(Ordering::SeqCst) {
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
                let over = limit > 0 && sh.open.fetch_add(1, Ordering::SeqCst) >= limit;
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

/// Parses one request head at the start of `buf`: (bytes used incl. body, is HEAD, path, wants close).
fn parse_request(buf: &[u8]) -> Option<Result<(usize, bool, String, bool), ()>> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => {
            let len = req
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| {
                    std::str::from_utf8(h.value)
                        .ok()?
                        .trim()
                        .parse::<usize>()
                        .ok()
                })
                .unwrap_or(0);
            if buf.len() < n + len {
                return None;
            }
            let close = req.headers.iter().any(|h| {
                h.name.eq_ignore_ascii_case("connection")
                    && String::from_utf8_lossy(h.value)
                        .to_ascii_lowercase()
                        .contains("close")
            }) || req.version == Some(0);
            let head = req.method == Some("HEAD");
            Some(Ok((
                n + len,
                head,
                req.path.unwrap_or("/").to_string(),
                close,
            )))
        }
        Ok(httparse::Status::Partial) => None,
        Err(_) => Some(Err(())),
    }
}

fn serve(mut conn: Box<dyn Conn>, sh: Arc<Shared>, over_limit: bool) {
    let cfg = &sh.cfg;
    let _ = conn.set_timeout(Duration::from_millis(50));
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    let mut on_conn = 0u64;
    let mut arriving = Arriving::default();
    loop {
        // Answer every complete request already buffered (pipelining).
        while let Some(parsed) = parse_request(&buf) {
            let Ok((used, head, path, client_close)) = parsed else {
                return;
            };
            buf.drain(..used);
            arriving = Arriving::default();
            let n = sh.seen.fetch_add(1, Ordering::SeqCst) + 1;
            let t = Instant::now();
            if cfg.record_arrivals {
                let us = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_micros() as u64);
                sh.arrivals.lock().expect("arrivals").push(us);
            }
            let faulty = cfg.fault != Fault::None && n % cfg.fault_every.max(1) == 0;
            let delay = sh.service_time(&path, faulty);
            // Released before the answer is written, so the client's next
            // request finds its place free.
            let permit = sh.admit();
            if permit.is_some() && !delay.is_zero() {
                std::thread::sleep(delay);
            }
            if let Some((from, to)) = cfg.stall {
                let now = sh.started.elapsed();
                if now >= from && now < to {
                    std::thread::sleep(to - now);
                }
            }
            on_conn += 1;
            let server_close = cfg.close_every > 0 && on_conn % cfg.close_every == 0;
            let close = client_close || server_close || cfg.framing == Framing::Close;
            let (status, body): (u16, &[u8]) = match (faulty, cfg.fault) {
                (true, Fault::Hang) => {
                    hang(&sh);
                    return;
                }
                (true, Fault::Reset) => {
                    conn.reset();
                    return;
                }
                (true, Fault::Garbage) => {
                    let _ = conn.write_all(b"HTTX/9 banana\r\n\r\n");
                    hang(&sh);
                    return;
                }
                (true, Fault::CloseMidBody) => {
                    let _ =
                        conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789");
                    return;
                }
                (true, Fault::Status(s)) => (s, b"fault"),
                (true, Fault::WrongBody) => (200, b"something else entirely"),
                _ if over_limit => (503, b"over the connection limit"),
                _ if permit.is_none() => (503, b"over capacity"),
                _ => match path.as_str() {
                    "/204" => (204, b""),
                    "/304" => (304, b""),
                    "/404" => (404, b"not found"),
                    _ => (200, &cfg.body[..]),
                },
            };
            let out = render_response(cfg.framing, status, body, head, close);
            // The service time ends as the write starts: on loopback the
            // client's socket has the response (and stamps it) partway
            // through the write, while the rest of the write (waking the
            // client, say) is no part of what the client can see.
            let us = t.elapsed().as_micros().max(1) as u64;
            sh.service
                .lock()
                .expect("service histogram")
                .saturating_record(us);
            // Counted before the write, so the count is never behind what
            // a client has already read; taken back if the write fails.
            sh.answered.fetch_add(1, Ordering::SeqCst);
            drop(permit);
            if write_answer(&mut *conn, &out, &sh).is_err() {
                sh.answered.fetch_sub(1, Ordering::SeqCst);
                return;
            }
            if close {
                return;
            }
        }
        arriving.observe(&buf, &sh);
        if sh.stop.load(Ordering::SeqCst) {
            return;
        }
        match conn.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return,
        }
    }
}

/// Writes a whole answer, however slowly its reader takes it (the
/// socket's timeout only lets a stop be seen), counting it in
/// `blocked_writes` once it has taken over [`BLOCKED_WRITE`].
fn write_answer(conn: &mut dyn Conn, out: &[u8], sh: &Shared) -> io::Result<()> {
    let t = Instant::now();
    let mut at = 0;
    let mut counted = false;
    while at < out.len() {
        // Counted as soon as it is blocked that long, finished or not.
        if !counted && t.elapsed() > BLOCKED_WRITE {
            sh.blocked_writes.fetch_add(1, Ordering::SeqCst);
            counted = true;
        }
        match conn.write(&out[at..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => at += n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) && !sh.stop.load(Ordering::SeqCst) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A request still arriving on one connection: since when, and whether
/// it was already counted slow.
#[derive(Default)]
struct Arriving {
    since: Option<Instant>,
    counted: bool,
}

impl Arriving {
    /// Looks at the unfinished request in `buf` (nothing when empty):
    /// an unfinished head, or a head with its body still coming.
    fn observe(&mut self, buf: &[u8], sh: &Shared) {
        if buf.is_empty() {
            return;
        }
        let since = *self.since.get_or_insert_with(Instant::now);
        let slow = since.elapsed() >= SLOW_AFTER && !self.counted;
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(buf) {
            Ok(httparse::Status::Complete(n)) => {
                let declared = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| {
                        std::str::from_utf8(h.value)
                            .ok()?
                            .trim()
                            .parse::<u64>()
                            .ok()
                    })
                    .unwrap_or(0);
                sh.body_declared_max.fetch_max(declared, Ordering::SeqCst);
                sh.body_received_max
                    .fetch_max((buf.len() - n) as u64, Ordering::SeqCst);
                if slow {
                    sh.slow_bodies.fetch_add(1, Ordering::SeqCst);
                    self.counted = true;
                }
            }
            Ok(httparse::Status::Partial) => {
                let us = since.elapsed().as_micros() as u64;
                sh.longest_head_us.fetch_max(us, Ordering::SeqCst);
                sh.head_bytes_max
                    .fetch_max(buf.len() as u64, Ordering::SeqCst);
                if slow {
                    sh.slow_heads.fetch_add(1, Ordering::SeqCst);
                    self.counted = true;
                }
            }
            Err(_) => {}
        }
    }
}

/// The bytes of one answer in `framing`: status line, `Connection: close`
/// when `close` (implied by HTTP/1.0's close framing), the length or the
/// chunks (the first with an extension, then a trailer), and the body
/// unless the request was HEAD (`head`) or the status has none.
fn render_response(framing: Framing, status: u16, body: &[u8], head: bool, close: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    let no_body = head || status == 204 || status == 304;
    match framing {
        Framing::Close => out.extend_from_slice(format!("HTTP/1.0 {status} X\r\n").as_bytes()),
        _ => out.extend_from_slice(format!("HTTP/1.1 {status} X\r\n").as_bytes()),
    }
    if close && framing != Framing::Close {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    match framing {
        Framing::ContentLength => {
            if status != 204 && status != 304 {
                out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
            }
            out.extend_from_slice(b"\r\n");
            if !no_body {
                out.extend_from_slice(body);
            }
        }
        Framing::Chunked => {
            out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
            if !no_body {
                for (i, piece) in body.chunks(4).enumerate() {
                    if i == 0 {
                        out.extend_from_slice(format!("{:x};ext=1\r\n", piece.len()).as_bytes());
                    } else {
                        out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                    }
                    out.extend_from_slice(piece);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\nX-Trailer: done\r\n\r\n");
            }
        }
        Framing::Close => {
            out.extend_from_slice(b"\r\n");
            if !no_body {
                out.extend_from_slice(body);
            }
        }
    }
    out
}

/// Holds the connection open until the server stops.
fn hang(sh: &Shared) {
    while !sh.stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(10));
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

/// A single-threaded epoll server for break-point benchmarks: it answers
/// "hello world" on its first `limit` open connections and 503 on any
/// beyond, so the highest clean concurrency is exactly `limit`. Unlike the
/// thread-per-connection server it stays responsive with thousands of
/// connections on one core. Runs until `stop` is set.
pub fn serve_with_connection_limit(
    listen: SocketAddr,
    limit: usize,
    stop: &AtomicBool,
    on_ready: impl FnOnce(SocketAddr),
) -> io::Result<u64> {
    use crate::load::epoll::Epoll;
    use std::collections::HashMap;
    use std::os::fd::AsRawFd;
    let sock = socket2::Socket::new(
        socket2::Domain::for_address(listen),
        socket2::Type::STREAM,
        None,
    )?;
    sock.set_reuse_address(true)?;
    sock.bind(&listen.into())?;
    sock.listen(4096)?;
    let listener: TcpListener = sock.into();
    listener.set_nonblocking(true)?;
    on_ready(listener.local_addr()?);
    let mut ep = Epoll::new(1024)?;
    const LISTENER: u64 = u64::MAX;
    ep.add(listener.as_raw_fd(), LISTENER)?;
    // token -> (stream, over the limit, unparsed bytes)
    let mut conns: HashMap<u64, (TcpStream, bool, Vec<u8>)> = HashMap::new();
    let mut next = 0u64;
    let mut answered = 0u64;
    let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world";
    let busy = b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy";
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        let n = ep.wait(Some(Duration::from_millis(50)))?;
        for i in 0..n {
            let (token, _ready) = ep.event(i);
            if token == LISTENER {
                while let Ok((s, _)) = listener.accept() {
                    s.set_nonblocking(true)?;
                    s.set_nodelay(true)?;
                    let over = conns.len() >= limit;
                    ep.add(s.as_raw_fd(), next)?;
                    conns.insert(next, (s, over, Vec::new()));
                    next += 1;
                }
                continue;
            }
            let mut close = false;
            if let Some((s, over, pending)) = conns.get_mut(&token) {
                loop {
                    match s.read(&mut buf) {
                        Ok(0) => {
                            close = true;
                            break;
                        }
                        Ok(k) => pending.extend_from_slice(&buf[..k]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => {
                            close = true;
                            break;
                        }
                    }
                }
                // Answer every complete request head (GETs without bodies).
                let mut out = Vec::new();
                while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                    pending.drain(..end + 4);
                    out.extend_from_slice(if *over { busy } else { ok });
                    answered += 1;
                }
                if !out.is_empty() && s.write_all(&out).is_err() {
                    close = true;
                }
            }
            if close {
                conns.remove(&token);
                // Later connections keep their place: the limit counts
                // connections open at once, checked when each is accepted.
            }
        }
    }
    Ok(answered)
}

#[cfg(test)]
mod tests {
    use super::*;

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
