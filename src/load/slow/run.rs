//! The slow clients' thread: their connections opened, paced, read and
//! replaced when the server closes them, and their tally turned into a
//! [`SlowClientsReport`] at the end.
//!
//! It never enters the load's connection loop or recorder, and connects
//! only to the endpoint it is given.

use super::script::Script;
use super::{HeldSeconds, SlowClients, SlowClientsReport, SlowMode};
use crate::load::response::{Needle, Progress, ResponseParser};
use crate::load::target::Endpoint;
use hdrhistogram::Histogram;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
            match o.parser.feed(&o.unread, false, &Needle::NONE) {
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
    use crate::load::slow::tests::GET;

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
