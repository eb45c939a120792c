//! Settling between break-point steps on a running server: wait until the
//! server has worked off what the step before left it.
//!
//! A step that fails ends at its first error and abandons its requests,
//! but the server does not know that: unicorn's workers take the queued
//! connections from the backlog one by one, puma works off its queue, each
//! request at full cost. A step started at once meets those leftovers and
//! fails whatever its own level, and so does every step after it (a test
//! server taking 73 requests at a time was reported at 38 that way). So
//! before each step but the first the search waits, polling, until
//!
//! 1. the server-side ends of the last step's connections are gone (read
//!    from `/proc/net/tcp{,6}` (read by `sampler::sockets`): loopback only, so both ends are ours to
//!    see; a connection still queued or being worked on sits in
//!    CLOSE_WAIT), and so are those of any client that has left (CLOSE_WAIT
//!    too: a run just before this search, whose abandoned requests the
//!    server is still working off), and
//! 2. one request is answered, with an expected status, within about the
//!    latency of a clean step: twice the p50 of the last clean step (or of
//!    an idle request before the search) plus a small floor,
//!
//! or until a ceiling, and records the wait per step (`settle_s`). The
//! first step waits for (1) only, before the search's idle request.
//!
//! Connections open when the search began (other clients') are told from
//! the search's own by who they are (the client's address and the socket's
//! inode), never by how many there were: a count let the search's own
//! leftovers take the places of a previous run's connections as those
//! closed. A search started while the run before it still had 60 requests
//! queued at the test server counted 60 "other" connections, and after its
//! first failing step went on at each level with that many of its own
//! requests still queued: every step failed, capacity 60 was reported as 9.
//!
//! This module probes and waits; it never applies load.

use crate::load::{Endpoint, ExpectStatus};
use crate::sampler::{read_net_tcp, TcpRow, TcpState};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How long and how often to wait.
#[derive(Debug, Clone, Copy)]
pub struct SettleConfig {
    /// Give up waiting after this long (the step then runs anyway).
    pub ceiling: Duration,
    /// Between two looks at the server.
    pub poll: Duration,
    /// Added to twice the reference latency: a probe answered within that
    /// is "as fast as a clean step".
    pub floor: Duration,
}

impl Default for SettleConfig {
    fn default() -> Self {
        SettleConfig {
            ceiling: Duration::from_secs(10),
            poll: Duration::from_millis(20),
            floor: Duration::from_millis(10),
        }
    }
}

/// What a wait came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    pub waited: Duration,
    /// False when the ceiling ended the wait.
    pub drained: bool,
    /// What the last look saw, when the server had not drained.
    pub last_busy: Option<String>,
}

/// Polls `look` until it says the server is ready (`Ok`), `stop()` says
/// to give up (Ctrl-C), or `cfg.ceiling` passes. `look` says why not ready
/// with `Err`.
pub fn wait_until(
    cfg: &SettleConfig,
    mut look: impl FnMut() -> Result<(), String>,
    stop: impl Fn() -> bool,
) -> Settled {
    let t0 = Instant::now();
    loop {
        match look() {
            Ok(()) => {
                return Settled {
                    waited: t0.elapsed(),
                    drained: true,
                    last_busy: None,
                }
            }
            Err(why) => {
                if t0.elapsed() >= cfg.ceiling || stop() {
                    return Settled {
                        waited: t0.elapsed(),
                        drained: false,
                        last_busy: Some(why),
                    };
                }
            }
        }
        std::thread::sleep(cfg.poll);
    }
}

/// The running server a URL-mode search settles.
#[derive(Debug, Clone)]
pub struct Target {
    pub endpoint: Endpoint,
    pub host: String,
    pub path: String,
    pub expect: ExpectStatus,
    /// Server-side connections open before the search (other clients'),
    /// by who they are; None when `/proc/net/tcp` cannot be read.
    pub baseline_connections: Option<Vec<ServerConn>>,
}

impl Target {
    pub fn new(endpoint: Endpoint, host: String, path: String, expect: ExpectStatus) -> Target {
        let baseline_connections = match &endpoint {
            Endpoint::Tcp(a) => server_side_connections(*a),
            Endpoint::Unix(_) => None,
        };
        Target {
            endpoint,
            host,
            path,
            expect,
            baseline_connections,
        }
    }

    /// One request, timed; an unexpected status is an error.
    pub fn probe(&self, timeout: Duration) -> Result<Duration, String> {
        let t = Instant::now();
        let answer = crate::server::probe::get(&self.endpoint, &self.host, &self.path, timeout)
            .map_err(|e| format!("a single request failed: {e}"))?;
        let took = t.elapsed();
        if !self.expect.matches(answer.status) {
            return Err(format!("a single request was answered {}", answer.status));
        }
        Ok(took)
    }

    /// Whether the server has drained: the last step's connections closed
    /// and one request answered within `2 × reference + floor` (no request
    /// when there is no reference: the server fails a single request even
    /// idle, so a failing one would say nothing).
    pub fn look(&self, reference: Option<Duration>, cfg: &SettleConfig) -> Result<(), String> {
        if let (Endpoint::Tcp(a), Some(base)) = (&self.endpoint, &self.baseline_connections) {
            if let Some(open) = server_side_connections(*a) {
                let left = leftovers(&open, base);
                if left > 0 {
                    return Err(format!(
                        "{left} connection(s) of the last step, or of a client that has left, still open on the server"
                    ));
                }
            }
        }
        let Some(reference) = reference else {
            return Ok(());
        };
        let limit = reference * 2 + cfg.floor;
        let took = self.probe(limit.max(Duration::from_secs(1)))?;
        if took > limit {
            return Err(format!(
                "a single request took {:.1} ms (a clean step's: under {:.1} ms)",
                took.as_secs_f64() * 1e3,
                limit.as_secs_f64() * 1e3
            ));
        }
        Ok(())
    }
}

/// One connection the server holds, as `/proc/net/tcp` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerConn {
    /// The client's end.
    pub peer: SocketAddr,
    /// The server's socket; 0 while it waits in the accept queue.
    pub inode: u64,
    /// The client has closed its end (CLOSE_WAIT): what the server still
    /// does on it is for nobody.
    pub client_gone: bool,
}

impl ServerConn {
    /// The same connection as `before` (seen earlier): the same client
    /// end and socket, or accepted since `before` was queued.
    fn is(&self, before: &ServerConn) -> bool {
        self.peer == before.peer && (self.inode == before.inode || before.inode == 0)
    }
}

/// How many of the connections `open` now are leftovers to wait for: not
/// among those open before the search (`base`), or whose client has left.
fn leftovers(open: &[ServerConn], base: &[ServerConn]) -> usize {
    // By client end: a look over thousands of connections stays linear.
    let before: HashMap<SocketAddr, &ServerConn> = base.iter().map(|b| (b.peer, b)).collect();
    open.iter()
        .filter(|c| c.client_gone || !before.get(&c.peer).is_some_and(|b| c.is(b)))
        .count()
}

/// Sockets on the server's side of `addr` (local address and port equal
/// to it) that are not listening and not in TIME_WAIT: connections the
/// server still holds. None when /proc/net/tcp cannot be read.
pub fn server_side_connections(addr: SocketAddr) -> Option<Vec<ServerConn>> {
    read_net_tcp().map(|rows| server_side(&rows, addr).collect())
}

/// The rows of `/proc/net/tcp` that are connections the server at `addr`
/// holds: not its listener, not TIME_WAIT or CLOSE (the kernel's alone).
fn server_side(rows: &[TcpRow], addr: SocketAddr) -> impl Iterator<Item = ServerConn> + '_ {
    rows.iter()
        .filter(move |r| {
            r.local == addr
                && ![TcpState::Listen, TcpState::TimeWait, TcpState::Close].contains(&r.state)
        })
        .map(|r| ServerConn {
            peer: r.remote,
            inode: r.inode,
            client_gone: r.state == TcpState::CloseWait,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::parse_net_tcp;
    use std::cell::Cell;

    #[test]
    fn proc_net_tcp_counts_only_the_servers_open_connections() {
        // 127.0.0.1:8080 listening, two accepted (one in CLOSE_WAIT), one
        // in TIME_WAIT, a client socket whose remote end is the server,
        // and a connection to another port.
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0
   1: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 2 1 0 20 4 30 10 -1
   2: 0100007F:1F90 0100007F:D432 08 00000000:00000000 00:00000000 00000000  1000        0 3 1 0 20 4 30 10 -1
   3: 0100007F:1F90 0100007F:D433 06 00000000:00000000 00:00000000 00000000  1000        0 0 1 0 20 4 30 10 -1
   4: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4 1 0 20 4 30 10 -1
   5: 0100007F:1F91 0100007F:D434 01 00000000:00000000 00:00000000 00000000  1000        0 5 1 0 20 4 30 10 -1
";
        let a: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let rows = parse_net_tcp(text);
        assert_eq!(server_side(&rows, a).count(), 2);
        assert_eq!(server_side(&parse_net_tcp("header only\n"), a).count(), 0);
        // Who they are: the client's end, the socket, whether it has left.
        let seen: Vec<ServerConn> = server_side(&rows, a).collect();
        assert_eq!(
            seen,
            [
                ServerConn {
                    peer: "127.0.0.1:54321".parse().unwrap(),
                    inode: 2,
                    client_gone: false
                },
                ServerConn {
                    peer: "127.0.0.1:54322".parse().unwrap(),
                    inode: 3,
                    client_gone: true
                }
            ]
        );
    }

    #[test]
    fn the_kernel_shows_an_accepted_connection_until_it_is_closed() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let open = || server_side_connections(addr).map(|c| c.len());
        assert_eq!(open(), Some(0));
        let client = std::net::TcpStream::connect(addr).unwrap();
        let (served, _) = listener.accept().unwrap();
        assert_eq!(open(), Some(1));
        // The client leaves; the server has not closed yet (CLOSE_WAIT).
        drop(client);
        assert_eq!(open(), Some(1));
        drop(served);
        let closed = wait_until(
            &SettleConfig::default(),
            || match open() {
                Some(0) => Ok(()),
                n => Err(format!("{n:?} open")),
            },
            || false,
        );
        assert!(closed.drained, "{closed:?}");
    }

    /// A search's view of a loopback server at `addr` with no reference
    /// latency: its looks ask about connections only.
    fn target(addr: SocketAddr) -> Target {
        Target::new(
            Endpoint::Tcp(addr),
            "x".into(),
            "/".into(),
            ExpectStatus::Success,
        )
    }

    /// Waits out the kernel's closing of sockets just dropped (loopback:
    /// at once, but the last ACK may trail).
    fn look_until(t: &Target, want_ok: bool) -> Result<(), String> {
        let mut last = t.look(None, &SettleConfig::default());
        for _ in 0..100 {
            if last.is_ok() == want_ok {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            last = t.look(None, &SettleConfig::default());
        }
        last
    }

    #[test]
    fn a_closing_earlier_connection_makes_no_room_for_the_searchs_own() {
        // Regression: the search once counted the connections open at its
        // start and waited only until no more than that many were open.
        // When those (a previous run's, still being worked off) closed,
        // as many of the search's own leftovers passed for them: capacity
        // 60 was reported as 9.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let earlier = std::net::TcpStream::connect(addr).unwrap();
        let (earlier_served, _) = listener.accept().unwrap();
        let t = target(addr);
        // The earlier connection is in the baseline. (Not "the only one":
        // the port is ephemeral, and a parallel test's socket that used the
        // same number may still be closing, in FIN_WAIT or LAST_ACK.)
        let earlier_peer = earlier.local_addr().unwrap();
        assert!(
            t.baseline_connections
                .as_ref()
                .is_some_and(|b| b.iter().any(|c| c.peer == earlier_peer)),
            "{:?}",
            t.baseline_connections
        );
        assert_eq!(t.look(None, &SettleConfig::default()), Ok(()));
        // The earlier client and its server side go (the server's side
        // may linger a moment in LAST_ACK, no longer the baseline's socket:
        // CI once counted it beside ours, "2 connection(s)"); then a step's
        // connection is still held by the server.
        drop(earlier);
        drop(earlier_served);
        assert_eq!(look_until(&t, true), Ok(()));
        let ours = std::net::TcpStream::connect(addr).unwrap();
        let (ours_served, _) = listener.accept().unwrap();
        let why = look_until(&t, false).expect_err("the step's connection is a leftover");
        assert!(why.starts_with("1 connection(s)"), "{why}");
        // The step's client leaves first, as the engine does.
        drop(ours);
        drop(ours_served);
        assert_eq!(look_until(&t, true), Ok(()));
    }

    #[test]
    fn a_connection_whose_client_has_left_is_waited_for_even_from_before() {
        // A run just before the search left a request the server is still
        // working on: its client has gone (CLOSE_WAIT), the server holds
        // the socket until the work is done. A client still there is
        // someone else's and is not waited for.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let other = std::net::TcpStream::connect(addr).unwrap();
        let (_other_served, _) = listener.accept().unwrap();
        let gone = std::net::TcpStream::connect(addr).unwrap();
        let (gone_served, _) = listener.accept().unwrap();
        let t = target(addr);
        assert_eq!(t.look(None, &SettleConfig::default()), Ok(()));
        drop(gone);
        assert!(look_until(&t, false).is_err());
        drop(gone_served);
        assert_eq!(look_until(&t, true), Ok(()));
        drop(other);
    }

    #[test]
    fn waiting_ends_when_ready_at_the_ceiling_or_on_stop() {
        let cfg = SettleConfig {
            ceiling: Duration::from_millis(200),
            poll: Duration::from_millis(5),
            floor: Duration::ZERO,
        };
        let looks = Cell::new(0);
        let s = wait_until(
            &cfg,
            || {
                looks.set(looks.get() + 1);
                if looks.get() >= 3 {
                    Ok(())
                } else {
                    Err("busy".into())
                }
            },
            || false,
        );
        assert!(s.drained && looks.get() == 3, "{s:?}");
        let s = wait_until(&cfg, || Err("still busy".into()), || false);
        assert!(!s.drained && s.waited >= cfg.ceiling, "{s:?}");
        assert_eq!(s.last_busy.as_deref(), Some("still busy"));
        let s = wait_until(&cfg, || Err("busy".into()), || true);
        assert!(!s.drained && s.waited < cfg.ceiling, "{s:?}");
    }
}
