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
//!
//! This file holds what a run is told (the modes, the count and pace,
//! the loopback-only check) and the account it gets back; `script.rs`
//! holds the bytes a slow client writes, `run.rs` the thread that holds
//! the connections. It never opens a socket itself.

mod run;
mod script;

pub use run::{start, SlowRun};

use super::target::Endpoint;
use serde::{Deserialize, Serialize};
use std::time::Duration;

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

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const GET: &[u8] =
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
}
