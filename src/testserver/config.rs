//! The test server's knobs and its account of itself: the faults and
//! framings it can be told to use, `TestServerConfig`, and what it saw
//! (`TestServerStats`, `SlowSeen`). Plain data; it never listens, reads or
//! writes a socket.

use crate::load::Endpoint;
use hdrhistogram::Histogram;
use std::net::SocketAddr;
use std::time::Duration;

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
    /// Keep at most this many connections accepted at once and leave the
    /// others in the listen backlog until one of them closes (0 = no
    /// limit): a server whose workers are all held by kept-alive
    /// connections while the rest wait in its accept queue (puma issue
    /// 3835). A client's connect succeeds either way (the kernel
    /// completes it); a connection left in the backlog is never answered.
    pub accept_at_most: usize,
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
            accept_at_most: 0,
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
