//! Slow clients: a few connections that misbehave beside the normal load,
//! the way production's clients do (a phone on a bad network, a
//! slowloris). Three modes: `headers` trickles a request head that never
//! ends, `body` sends a whole head declaring a body and trickles the body,
//! `read` sends a request at once and reads the answer a few bytes at a
//! time through a small receive buffer.
//!
//! They run on one thread of their own, outside the connection loop: a
//! few non-blocking sockets polled on a short timer, since there are few
//! (at most [`MAX_SLOW_CLIENTS`]) and they do almost nothing. They never
//! enter the recorder, so the load's `throughput_rps`, `latency_us` and
//! `errors` stay the normal clients' alone; their own account is a
//! [`SlowClientsReport`]. They connect only to the run's own endpoint,
//! never anywhere else. A connection the server closes is counted and
//! replaced at once, so N stay open (what a slowloris does); each
//! connection the server closed is one sample of `held_s`. A connection
//! still open when the run ends is no sample: its time was cut off by the
//! end, not by the server, so it is counted in `open_at_end` and the
//! shortest of those times is `open_at_end_min_s` (each was held at least
//! that long).

use super::response::{Progress, ResponseParser};
use super::target::Endpoint;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most slow clients one run may hold: they share one thread and a
/// poll over all their sockets.
pub const MAX_SLOW_CLIENTS: usize = 10_000;

/// How a slow client misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlowMode {
    /// A request line and headers trickled, never finished.
    Headers,
    /// A whole head declaring a large body, the body trickled.
    Body,
    /// A request sent at once, the answer read a few bytes at a time.
    Read,
}

impl SlowMode {
    pub fn parse(s: &str) -> Result<SlowMode, String> {
        match s {
            "headers" => Ok(SlowMode::Headers),
            "body" => Ok(SlowMode::Body),
            "read" => Ok(SlowMode::Read),
            other => Err(format!("slow mode '{other}': use headers, body or read")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SlowMode::Headers => "headers",
            SlowMode::Body => "body",
            SlowMode::Read => "read",
        }
    }
}

impl std::fmt::Display for SlowMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What the slow clients of one run do.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowClients {
    /// Connections kept open at once.
    pub count: usize,
    pub mode: SlowMode,
    /// Bytes written (or read, in `read` mode) at each step.
    pub bytes_per_step: usize,
    /// Time between steps.
    pub every: Duration,
    /// `read` mode: the socket's receive buffer (SO_RCVBUF), set before
    /// connecting so the window the server sees is small too.
    pub rcvbuf_bytes: usize,
}

/// Bytes per step unless told.
pub const DEFAULT_BYTES: usize = 4;
/// Time between steps unless told.
pub const DEFAULT_EVERY: Duration = Duration::from_secs(1);
/// `read` mode's receive buffer unless told.
pub const DEFAULT_RCVBUF_BYTES: usize = 1024;
/// `body` mode's declared Content-Length: under nginx's default
/// `client_max_body_size` (1 MiB), so a front refuses it for its slowness,
/// never its size; at 4 bytes a second it never ends in a run.
pub const DECLARED_BODY_BYTES: u64 = 1_000_000;

/// Slow clients go only to this machine: a loopback address or a unix
/// socket. They are an attack on the server they reach (a slowloris),
/// so a URL elsewhere is refused even where the normal load may go.
pub fn check_target(endpoint: &Endpoint) -> Result<(), String> {
    match endpoint {
        Endpoint::Unix(_) => Ok(()),
        Endpoint::Tcp(a) if a.ip().is_loopback() => Ok(()),
        Endpoint::Tcp(a) => Err(format!(
            "slow clients go only to this machine (127.0.0.1, ::1 or a unix socket), not {a}: drop --slow-clients or point the load at a local server"
        )),
    }
}

impl SlowClients {
    /// `count` clients in `mode` with the default pace.
    pub fn new(count: usize, mode: SlowMode) -> SlowClients {
        SlowClients {
            count,
            mode,
            bytes_per_step: DEFAULT_BYTES,
            every: DEFAULT_EVERY,
            rcvbuf_bytes: DEFAULT_RCVBUF_BYTES,
        }
    }

    /// Refuses what cannot run, naming the fix.
    pub fn check(&self) -> Result<(), String> {
        if self.count == 0 {
            return Err("--slow-clients must be at least 1 (leave it out for none)".into());
        }
        if self.count > MAX_SLOW_CLIENTS {
            return Err(format!(
                "--slow-clients {} is over the bound of {MAX_SLOW_CLIENTS}: give fewer",
                self.count
            ));
        }
        if self.bytes_per_step == 0 {
            return Err("--slow-bytes must be at least 1".into());
        }
        if self.every < Duration::from_millis(10) {
            return Err("--slow-every must be at least 10ms, e.g. 1s".into());
        }
        Ok(())
    }
}

/// Percentiles of the seconds each slow connection stayed open until the
/// server closed it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HeldSeconds {
    /// Connections measured: those the server closed during the run (all
    /// zeros when it closed none). Those still open at the end are
    /// `open_at_end`, never a sample here.
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

/// The slow clients' own account (`slow_clients` in load-v1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowClientsReport {
    /// Connections kept open at once.
    pub count: usize,
    pub mode: SlowMode,
    pub bytes_per_step: usize,
    pub every_ms: u64,
    /// Connections established (the connect completed: the kernel took
    /// them, whether or not a worker ever read a byte).
    pub accepted: u64,
    /// Connects tried, replacements included.
    pub connections_opened: u64,
    /// Connects that failed (refused, or not through within a few seconds).
    pub refused: u64,
    /// Established connections the server closed (or reset) during the run.
    pub closed_by_server: u64,
    /// Seconds each connection the server closed had stayed open.
    pub held_s: HeldSeconds,
    /// Connections still open when the run ended: their time was cut off
    /// by the end, so they are no sample of `held_s`.
    #[serde(default)]
    pub open_at_end: u64,
    /// The shortest time open of those `open_at_end` connections: each was
    /// held at least this long (0 when none was open).
    #[serde(default)]
    pub open_at_end_min_s: f64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// `read` mode: whole responses read.
    #[serde(default)]
    pub responses: u64,
}

/// A connect not through in this long counts as refused.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest the thread sleeps between looks at its sockets.
const TICK: Duration = Duration::from_millis(50);

/// The running slow clients; [`SlowRun::finish`] stops them and returns
/// their account.
pub struct SlowRun {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<SlowClientsReport>,
}

/// Starts `slow` against `endpoint` at `t0` (or at once if past), on a
/// thread of their own; `request` is the normal load's request, whose
/// line and Host header they borrow. They stop at `finish` or when
/// `interrupt` is set.
pub fn start(
    slow: &SlowClients,
    endpoint: &Endpoint,
    request: &[u8],
    t0: Instant,
    interrupt: Arc<AtomicBool>,
) -> std::io::Result<SlowRun> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Clients::new(slow.clone(), endpoint.clone(), request);
    let flag = Arc::clone(&stop);
    let handle = std::thread::Builder::new()
        .name("rackbench-slow".into())
        .spawn(move || {
            let stopped = || flag.load(Ordering::Relaxed) || interrupt.load(Ordering::Relaxed);
            while Instant::now() < t0 && !stopped() {
                std::thread::sleep(TICK);
            }
            while !stopped() {
                clients.step(Instant::now());
            }
            clients.finish(Instant::now())
        })?;
    Ok(SlowRun { stop, handle })
}

impl SlowRun {
    /// Stops the clients (closing their sockets) and returns their account.
    pub fn finish(self) -> SlowClientsReport {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .join()
            .expect("the slow-client thread never panics")
    }
}

/// The bytes a slow client writes: `prefix` first, then in `headers` mode
/// an endless run of `X-Slow` header lines (the head never ends), in
/// `body` mode the body's bytes.
#[derive(Debug, Clone)]
struct Script {
    prefix: Vec<u8>,
    /// Repeated after the prefix, forever.
    filler: &'static [u8],
}

impl Script {
    fn of(mode: SlowMode, request: &[u8]) -> Script {
        let head_end = request
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(request.len(), |i| i + 2);
        match mode {
            // The head without its blank line: request line, headers.
            SlowMode::Headers => Script {
                prefix: request[..head_end].to_vec(),
                filler: b"X-Slow: 1\r\n",
            },
            SlowMode::Body => Script {
                prefix: body_head(request),
                filler: b"x",
            },
            SlowMode::Read => Script {
                prefix: request.to_vec(),
                filler: b"",
            },
        }
    }

    /// The `n` bytes from `offset` of the endless stream.
    fn bytes(&self, offset: u64, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n);
        let mut at = offset;
        while out.len() < n {
            if let Some(&b) = self.prefix.get(at as usize) {
                out.push(b);
            } else if self.filler.is_empty() {
                break;
            } else {
                let i = (at - self.prefix.len() as u64) % self.filler.len() as u64;
                out.push(self.filler[i as usize]);
            }
            at += 1;
        }
        out
    }
}

/// A POST head to the request's path and host declaring
/// [`DECLARED_BODY_BYTES`] of body.
fn body_head(request: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(request);
    let path = text
        .lines()
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or("/");
    let host = text
        .lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("host"))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "localhost".into());
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/octet-stream\r\n\
         Content-Length: {DECLARED_BODY_BYTES}\r\n\r\n"
    )
    .into_bytes()
}

/// One slow connection.
enum Slot {
    /// Nothing open; open one at this instant.
    Idle {
        open_at: Instant,
    },
    Connecting {
        sock: Socket,
        since: Instant,
    },
    Open(Box<Open>),
}

struct Open {
    sock: Socket,
    opened: Instant,
    next_step: Instant,
    /// Bytes of the script written.
    sent: u64,
    /// `read` mode: frames the answers.
    parser: ResponseParser,
    /// `read` mode: bytes read and not yet consumed by the parser.
    unread: Vec<u8>,
}

/// All the slow clients of a run and their tally.
struct Clients {
    cfg: SlowClients,
    endpoint: Endpoint,
    script: Script,
    slots: Vec<Slot>,
    held_ms: Histogram<u64>,
    report: SlowClientsReport,
}

enum Event {
    Nothing,
    /// The server closed (or reset) the connection.
    Closed,
}

impl Clients {
    fn new(cfg: SlowClients, endpoint: Endpoint, request: &[u8]) -> Clients {
        let now = Instant::now();
        let report = SlowClientsReport {
            count: cfg.count,
            mode: cfg.mode,
            bytes_per_step: cfg.bytes_per_step,
            every_ms: cfg.every.as_millis() as u64,
            accepted: 0,
            connections_opened: 0,
            refused: 0,
            closed_by_server: 0,
            held_s: HeldSeconds::default(),
            open_at_end: 0,
            open_at_end_min_s: 0.0,
            bytes_sent: 0,
            bytes_received: 0,
            responses: 0,
        };
        Clients {
            script: Script::of(cfg.mode, request),
            slots: (0..cfg.count)
                .map(|_| Slot::Idle { open_at: now })
                .collect(),
            // Up to a day, in milliseconds.
            held_ms: Histogram::new_with_bounds(1, 86_400_000, 3).expect("valid bounds"),
            cfg,
            endpoint,
            report,
        }
    }

    /// One look at every socket, then a sleep until the next is due.
    fn step(&mut self, now: Instant) {
        for i in 0..self.slots.len() {
            let slot = std::mem::replace(&mut self.slots[i], Slot::Idle { open_at: now });
            self.slots[i] = self.advance(slot, now);
        }
        let next = self
            .slots
            .iter()
            .map(|s| match s {
                Slot::Idle { open_at } => *open_at,
                Slot::Connecting { .. } => now + Duration::from_millis(5),
                Slot::Open(o) => o.next_step,
            })
            .min()
            .unwrap_or(now + TICK);
        let wait = next.saturating_duration_since(Instant::now()).min(TICK);
        self.wait_readable(wait.max(Duration::from_millis(1)));
    }

    /// Sleeps up to `wait`, waking early when a server writes to (or
    /// closes) a connection in the modes that read whatever comes.
    fn wait_readable(&self, wait: Duration) {
        let mut fds: Vec<libc::pollfd> = Vec::new();
        if self.cfg.mode != SlowMode::Read {
            for s in &self.slots {
                if let Slot::Open(o) = s {
                    fds.push(libc::pollfd {
                        fd: o.sock.as_raw_fd(),
                        events: libc::POLLIN | libc::POLLRDHUP,
                        revents: 0,
                    });
                }
            }
        }
        // SAFETY: `fds` is a valid array of pollfd for its length (or
        // empty: poll then only sleeps).
        unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                wait.as_millis() as libc::c_int,
            )
        };
    }

    fn advance(&mut self, slot: Slot, now: Instant) -> Slot {
        match slot {
            Slot::Idle { open_at } if now >= open_at => self.connect(now),
            Slot::Connecting { sock, since } => match sock.take_error() {
                Ok(None) if sock.peer_addr().is_ok() => {
                    self.report.accepted += 1;
                    Slot::Open(Box::new(Open {
                        sock,
                        opened: now,
                        next_step: now,
                        sent: 0,
                        parser: ResponseParser::default(),
                        unread: Vec::new(),
                    }))
                }
                Ok(None) if now.duration_since(since) < CONNECT_TIMEOUT => {
                    Slot::Connecting { sock, since }
                }
                _ => self.refused(now),
            },
            Slot::Open(mut o) => match self.service(&mut o, now) {
                Event::Nothing => Slot::Open(o),
                Event::Closed => {
                    self.report.closed_by_server += 1;
                    self.record_held(o.opened, now);
                    // A slowloris keeps its N open: the next one at once.
                    Slot::Idle { open_at: now }
                }
            },
            idle => idle,
        }
    }

    fn refused(&mut self, now: Instant) -> Slot {
        self.report.refused += 1;
        Slot::Idle {
            open_at: now + self.cfg.every,
        }
    }

    /// Opens one connection (non-blocking); a connect that fails at once
    /// counts as refused and is tried again a step later.
    fn connect(&mut self, now: Instant) -> Slot {
        self.report.connections_opened += 1;
        let made = (|| -> std::io::Result<Socket> {
            let (domain, addr, proto) = match &self.endpoint {
                Endpoint::Tcp(a) => (
                    Domain::for_address(*a),
                    SockAddr::from(*a),
                    Some(Protocol::TCP),
                ),
                Endpoint::Unix(p) => (Domain::UNIX, SockAddr::unix(p)?, None),
            };
            let sock = Socket::new(domain, Type::STREAM.nonblocking().cloexec(), proto)?;
            if self.cfg.mode == SlowMode::Read {
                sock.set_recv_buffer_size(self.cfg.rcvbuf_bytes)?;
            }
            match sock.connect(&addr) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
                Err(e) => return Err(e),
            }
            Ok(sock)
        })();
        match made {
            Ok(sock) => Slot::Connecting { sock, since: now },
            Err(_) => self.refused(now),
        }
    }

    /// What one open connection does now: notice a close, take its step
    /// when due.
    fn service(&mut self, o: &mut Open, now: Instant) -> Event {
        if self.cfg.mode != SlowMode::Read {
            // Whatever the server says (a 408, a 400) is read at once; its
            // close is what counts.
            if let Event::Closed = self.read_some(o, 64 * 1024) {
                return Event::Closed;
            }
        }
        if now < o.next_step {
            return Event::Nothing;
        }
        o.next_step += self.cfg.every;
        if o.next_step < now {
            // A late step is not made up in a burst.
            o.next_step = now + self.cfg.every;
        }
        match self.cfg.mode {
            SlowMode::Headers | SlowMode::Body => {
                let first = o.sent == 0 && self.cfg.mode == SlowMode::Body;
                // `body` sends its whole head at once, then trickles.
                let n = if first {
                    self.script.prefix.len()
                } else {
                    self.cfg.bytes_per_step
                };
                self.write(o, n)
            }
            SlowMode::Read => {
                if o.sent == 0 {
                    if let Event::Closed = self.write(o, self.script.prefix.len()) {
                        return Event::Closed;
                    }
                }
                self.read_some(o, self.cfg.bytes_per_step)
            }
        }
    }

    fn write(&mut self, o: &mut Open, n: usize) -> Event {
        let bytes = self.script.bytes(o.sent, n);
        match (&o.sock).write(&bytes) {
            Ok(k) => {
                o.sent += k as u64;
                self.report.bytes_sent += k as u64;
                Event::Nothing
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Event::Nothing,
            Err(_) => Event::Closed,
        }
    }

    /// Reads at most `max` bytes; in `read` mode frames the answer and,
    /// after a whole one on a kept-alive connection, asks again.
    fn read_some(&mut self, o: &mut Open, max: usize) -> Event {
        let mut buf = vec![0u8; max.min(64 * 1024)];
        match (&o.sock).read(&mut buf) {
            Ok(0) => Event::Closed,
            Ok(k) => {
                self.report.bytes_received += k as u64;
                if self.cfg.mode == SlowMode::Read {
                    return self.framed(o, &buf[..k]);
                }
                Event::Nothing
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Event::Nothing,
            Err(_) => Event::Closed,
        }
    }

    /// Frames what `read` mode read; bytes the parser has not consumed
    /// wait in `o.unread` for the next ones.
    fn framed(&mut self, o: &mut Open, bytes: &[u8]) -> Event {
        o.unread.extend_from_slice(bytes);
        while !o.unread.is_empty() {
            match o.parser.feed(&o.unread, false, b"") {
                Ok(Progress::Partial { consumed }) => {
                    o.unread.drain(..consumed);
                    return Event::Nothing;
                }
                Ok(Progress::Complete { consumed, response }) => {
                    self.report.responses += 1;
                    o.unread.drain(..consumed);
                    if !response.keep_alive {
                        // The server will close; its close is counted then.
                        return Event::Nothing;
                    }
                    o.parser.reset();
                    o.sent = 0;
                    if let Event::Closed = self.write(o, self.script.prefix.len()) {
                        return Event::Closed;
                    }
                }
                Err(_) => return Event::Closed,
            }
        }
        Event::Nothing
    }

    fn record_held(&mut self, opened: Instant, now: Instant) {
        let ms = now.saturating_duration_since(opened).as_millis() as u64;
        self.held_ms.saturating_record(ms.max(1));
    }

    /// Closes every connection still open (counted in `open_at_end`, the
    /// shortest time among them kept, never a sample of `held_s`) and
    /// returns the account.
    fn finish(mut self, now: Instant) -> SlowClientsReport {
        let open: Vec<Duration> = std::mem::take(&mut self.slots)
            .into_iter()
            .filter_map(|slot| match slot {
                Slot::Open(o) => Some(now.saturating_duration_since(o.opened)),
                _ => None,
            })
            .collect();
        self.report.open_at_end = open.len() as u64;
        self.report.open_at_end_min_s = open
            .iter()
            .min()
            .map_or(0.0, |d| d.as_millis() as f64 / 1000.0);
        let h = &self.held_ms;
        let s = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        self.report.held_s = if h.is_empty() {
            HeldSeconds::default()
        } else {
            HeldSeconds {
                count: h.len(),
                p50: s(0.5),
                p90: s(0.9),
                p99: s(0.99),
                max: h.max() as f64 / 1000.0,
            }
        };
        self.report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GET: &[u8] =
        b"GET /hello?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: rackbench\r\n\r\n";

    #[test]
    fn slow_clients_go_to_loopback_or_a_unix_socket_only() {
        for (endpoint, ok) in [
            (Endpoint::Tcp("127.0.0.1:80".parse().unwrap()), true),
            (Endpoint::Tcp("127.0.0.2:80".parse().unwrap()), true),
            (Endpoint::Tcp("[::1]:80".parse().unwrap()), true),
            (Endpoint::Unix("/tmp/s.sock".into()), true),
            (Endpoint::Tcp("10.1.2.3:80".parse().unwrap()), false),
            (Endpoint::Tcp("[2001:db8::1]:80".parse().unwrap()), false),
        ] {
            let got = check_target(&endpoint);
            assert_eq!(got.is_ok(), ok, "{endpoint:?}: {got:?}");
            if let Err(why) = got {
                assert!(why.contains("drop --slow-clients"), "{why}");
            }
        }
    }

    #[test]
    fn modes_parse_by_name_and_a_bad_one_names_the_choices() {
        for (text, want) in [
            ("headers", Ok(SlowMode::Headers)),
            ("body", Ok(SlowMode::Body)),
            ("read", Ok(SlowMode::Read)),
        ] {
            assert_eq!(SlowMode::parse(text), want);
            assert_eq!(want.unwrap().name(), text);
        }
        let err = SlowMode::parse("slowloris").unwrap_err();
        assert!(err.contains("use headers, body or read"), "{err}");
    }

    #[test]
    fn counts_over_the_bound_and_empty_paces_are_refused() {
        let ok = SlowClients::new(4, SlowMode::Headers);
        assert_eq!(ok.check(), Ok(()));
        for (bad, says) in [
            (
                SlowClients {
                    count: 0,
                    ..ok.clone()
                },
                "at least 1",
            ),
            (
                SlowClients {
                    count: MAX_SLOW_CLIENTS + 1,
                    ..ok.clone()
                },
                "over the bound of 10000",
            ),
            (
                SlowClients {
                    bytes_per_step: 0,
                    ..ok.clone()
                },
                "--slow-bytes",
            ),
            (
                SlowClients {
                    every: Duration::ZERO,
                    ..ok.clone()
                },
                "--slow-every",
            ),
        ] {
            let err = bad.check().unwrap_err();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn a_headers_script_never_ends_its_head() {
        let s = Script::of(SlowMode::Headers, GET);
        let head_len = GET.len() - 2;
        let all = s.bytes(0, head_len + 200);
        assert_eq!(&all[..head_len], &GET[..head_len]);
        assert!(
            !all.windows(4).any(|w| w == b"\r\n\r\n"),
            "a blank line ends the head"
        );
        assert!(all.ends_with(b"\r\n") || all.contains(&b'X'));
        // Taken in steps of 4 it is the same stream.
        let stepped: Vec<u8> = (0..(all.len() as u64 / 4))
            .flat_map(|k| s.bytes(k * 4, 4))
            .collect();
        assert_eq!(stepped, all[..stepped.len()]);
    }

    #[test]
    fn a_body_script_declares_its_length_on_the_requests_path_and_host() {
        let s = Script::of(SlowMode::Body, GET);
        let head = String::from_utf8(s.prefix.clone()).unwrap();
        assert!(
            head.starts_with("POST /hello?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"),
            "{head}"
        );
        assert!(head.contains("Content-Length: 1000000\r\n") && head.ends_with("\r\n\r\n"));
        assert_eq!(s.bytes(s.prefix.len() as u64 + 10, 3), b"xxx");
    }

    #[test]
    fn a_read_script_is_the_request_whole_and_nothing_after() {
        let s = Script::of(SlowMode::Read, GET);
        assert_eq!(s.bytes(0, 1000), GET);
        assert!(s.bytes(GET.len() as u64, 4).is_empty());
    }

    /// A server that reads nothing and closes each connection after a
    /// moment: every close is counted and replaced, every connection held
    /// is a sample.
    #[test]
    fn closed_connections_are_counted_and_replaced() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..4 {
                let (c, _) = listener.accept().unwrap();
                std::thread::sleep(Duration::from_millis(100));
                drop(c);
            }
        });
        let slow = SlowClients {
            every: Duration::from_millis(20),
            ..SlowClients::new(1, SlowMode::Headers)
        };
        let run = start(
            &slow,
            &Endpoint::Tcp(addr),
            GET,
            Instant::now(),
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap();
        server.join().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let r = run.finish();
        assert!(r.closed_by_server >= 4, "{r:?}");
        assert!(r.accepted >= 4, "{r:?}");
        assert_eq!(r.held_s.count, r.closed_by_server, "{r:?}");
        assert_eq!(r.accepted, r.closed_by_server + r.open_at_end, "{r:?}");
        assert!(r.held_s.p50 >= 0.09 && r.held_s.p50 < 1.0, "{r:?}");
        assert!(r.bytes_sent > 0 && r.bytes_received == 0, "{r:?}");
    }

    /// A server that accepts and never closes: the connection open at the
    /// end is no sample of `held_s` (its time was cut off by the end, not
    /// the server) but counted in `open_at_end`, held at least its time.
    #[test]
    fn connections_open_at_the_end_are_counted_apart_from_held_s() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let slow = SlowClients {
            every: Duration::from_millis(20),
            ..SlowClients::new(2, SlowMode::Headers)
        };
        let run = start(
            &slow,
            &Endpoint::Tcp(addr),
            GET,
            Instant::now(),
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap();
        let (_a, _) = listener.accept().unwrap();
        let (_b, _) = listener.accept().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let r = run.finish();
        assert_eq!((r.accepted, r.closed_by_server), (2, 0), "{r:?}");
        assert_eq!(r.held_s, HeldSeconds::default(), "{r:?}");
        assert_eq!(r.open_at_end, 2, "{r:?}");
        assert!(
            r.open_at_end_min_s >= 0.25 && r.open_at_end_min_s < 5.0,
            "{r:?}"
        );
    }
}
