//! The kernel's view of queueing: how many connections wait in a
//! listening socket's accept queue for a worker to take them.
//!
//! This is the figure people get from `ss -lnt` (Recv-Q on a LISTEN line)
//! or from unicorn's raindrops, and the reason a preforking server's
//! latency climbs once connections outnumber workers: the surplus waits in
//! the kernel, invisible to the app. Both come from netlink sock_diag,
//! asking the kernel for listening sockets only: for TCP the
//! `idiag_rqueue` of an inet_diag dump (IPv4 and IPv6) matched on the
//! port, for a unix socket `UNIX_DIAG_RQLEN` matched on the path.
//!
//! Why not `/proc/net/tcp`, which shows the same count as the rx_queue of
//! a LISTEN line: it lists every socket, TIME_WAIT ones included, and the
//! kernel formats them all on each read. After a few trials of a server
//! that closes its connections (puma, thin) 38,000 TIME_WAIT sockets made
//! one read cost 52 ms of CPU; sampled every 100 ms that was half a CPU
//! taken from the generator, growing trial after trial for a minute, and
//! five repeats of puma hello lost 23% of their throughput from the first
//! to the last (bench/runs/2026-11-26-aa-spread). A listening-only dump
//! never walks the established and TIME_WAIT tables.
//!
//! Where a server listens is the load engine's [`Endpoint`], the same
//! value the load connects to. A TCP endpoint is matched on its port
//! alone, on any local address, IPv4 and IPv6: a server bound to 0.0.0.0
//! or [::] is the listener the load reaches at 127.0.0.1.
//!
//! Only reads the kernel's tables: it never connects to the socket, so
//! reading does not change the queue it measures. Aggregation
//! ([`AcceptQueueRecorder`]) is plain data; [`AcceptQueueSampler`] is a
//! thread that samples on its own for callers without a sampling loop.

use crate::load::Endpoint;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The endpoint a server's `{{listen}}` value names: a path (starting
/// with '/' or '.') is a unix socket, else "ip:port" (or "[::1]:port") is
/// TCP. None when it is neither.
pub fn listen_endpoint(listen: &str) -> Option<Endpoint> {
    if listen.starts_with('/') || listen.starts_with('.') {
        return Some(Endpoint::Unix(PathBuf::from(listen)));
    }
    listen.parse::<SocketAddr>().ok().map(Endpoint::Tcp)
}

/// The listening socket's current accept-queue length: connections the
/// kernel has completed that no worker has accepted yet. `None` when no
/// socket listens there (not started yet, or gone). Several listeners on
/// one port (SO_REUSEPORT, IPv4 and IPv6) are summed, whatever address
/// each is bound to.
pub fn accept_queue_len(endpoint: &Endpoint) -> io::Result<Option<u32>> {
    match endpoint {
        Endpoint::Tcp(addr) => {
            let port = addr.port();
            let mut found = None;
            for family in [libc::AF_INET, libc::AF_INET6] {
                match tcp_listen_queue(family, port) {
                    Ok(Some(n)) => found = Some(found.unwrap_or(0) + n),
                    Ok(None) => {}
                    // No IPv6 in this kernel or namespace.
                    Err(e)
                        if family == libc::AF_INET6 && e.raw_os_error() == Some(libc::ENOENT) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(found)
        }
        Endpoint::Unix(path) => unix_listen_queue(path),
    }
}

// From linux/sock_diag.h, linux/inet_diag.h and linux/unix_diag.h (not all
// in the libc crate).
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const UDIAG_SHOW_NAME: u32 = 0x01;
const UDIAG_SHOW_RQLEN: u32 = 0x10;
const UNIX_DIAG_NAME: u16 = 0;
const UNIX_DIAG_RQLEN: u16 = 4;
const TCP_LISTEN: u32 = 10;
const NLMSG_HDR: usize = 16;
const UNIX_DIAG_MSG: usize = 16;
/// inet_diag_msg: family, state, timer, retrans, then inet_diag_sockid
/// (sport and dport big-endian first), expires, rqueue, wqueue, uid, inode.
const INET_DIAG_MSG: usize = 72;
const INET_DIAG_SPORT: usize = 4;
const INET_DIAG_RQUEUE: usize = 56;

/// The summed accept queue of the listening TCP sockets of one address
/// family on `port`, or None when there is none.
fn tcp_listen_queue(family: i32, port: u16) -> io::Result<Option<u32>> {
    Ok(tcp_listeners(family)?
        .into_iter()
        .filter(|l| l.port == port)
        .map(|l| l.queue)
        .reduce(|a, b| a + b))
}

/// One answer of an inet_diag dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DiagListener {
    /// The kernel's TCP state (10 is LISTEN).
    state: u8,
    port: u16,
    /// For a listener, `idiag_rqueue` is the accept-queue length.
    queue: u32,
}

/// The listening TCP sockets of one address family (inet_diag, asked for
/// the LISTEN state only: the kernel then never walks its tables of
/// established and TIME_WAIT sockets).
fn tcp_listeners(family: i32) -> io::Result<Vec<DiagListener>> {
    // inet_diag_req_v2: family, protocol, ext, pad, states, then a zeroed
    // inet_diag_sockid (48 bytes: no socket in particular).
    let mut body = vec![family as u8, libc::IPPROTO_TCP as u8, 0, 0];
    body.extend_from_slice(&(1u32 << TCP_LISTEN).to_ne_bytes());
    body.extend_from_slice(&[0; 48]);
    let mut out = Vec::new();
    sock_diag_dump(&body, |msg| {
        if msg.len() < INET_DIAG_MSG {
            return;
        }
        let port = u16::from_be_bytes([msg[INET_DIAG_SPORT], msg[INET_DIAG_SPORT + 1]]);
        let queue = u32::from_ne_bytes(
            msg[INET_DIAG_RQUEUE..INET_DIAG_RQUEUE + 4]
                .try_into()
                .unwrap(),
        );
        out.push(DiagListener {
            state: msg[1],
            port,
            queue,
        });
    })?;
    Ok(out)
}

/// Dumps the listening unix sockets over netlink sock_diag and returns the
/// receive-queue length (pending connections) of the one bound to `path`.
fn unix_listen_queue(path: &Path) -> io::Result<Option<u32>> {
    let mut wanted = vec![path.as_os_str().as_bytes().to_vec()];
    if let Ok(c) = path.canonicalize() {
        wanted.push(c.as_os_str().as_bytes().to_vec());
    }
    // unix_diag_req: family, protocol, pad, states, ino, show, cookie.
    let mut body = vec![libc::AF_UNIX as u8, 0, 0, 0];
    body.extend_from_slice(&(1u32 << TCP_LISTEN).to_ne_bytes());
    body.extend_from_slice(&0u32.to_ne_bytes());
    body.extend_from_slice(&(UDIAG_SHOW_NAME | UDIAG_SHOW_RQLEN).to_ne_bytes());
    body.extend_from_slice(&[0xff; 8]); // no cookie
    let mut found: Option<u32> = None;
    sock_diag_dump(&body, |msg| {
        if let Some((name, rq)) = unix_diag_entry(msg) {
            if wanted.contains(&name) {
                found = Some(found.unwrap_or(0) + rq);
            }
        }
    })?;
    Ok(found)
}

/// Sends one sock_diag dump request (`body` after the netlink header) and
/// hands each answer's payload to `each`, until the kernel says done.
fn sock_diag_dump(body: &[u8], mut each: impl FnMut(&[u8])) -> io::Result<()> {
    // SAFETY: plain socket(2); the fd is closed by Fd's drop.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    struct Fd(libc::c_int);
    impl Drop for Fd {
        fn drop(&mut self) {
            // SAFETY: our own fd, closed once.
            unsafe { libc::close(self.0) };
        }
    }
    let fd = Fd(fd);

    // nlmsghdr, native endian, then the request.
    let mut req = Vec::with_capacity(NLMSG_HDR + body.len());
    req.extend_from_slice(&((NLMSG_HDR + body.len()) as u32).to_ne_bytes());
    req.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16).to_ne_bytes());
    req.extend_from_slice(&1u32.to_ne_bytes()); // seq
    req.extend_from_slice(&0u32.to_ne_bytes()); // pid: the kernel
    req.extend_from_slice(body);
    // SAFETY: a zeroed sockaddr_nl is valid; family set below.
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as u16;
    // SAFETY: req and kernel outlive the call; lengths are theirs.
    let sent = unsafe {
        libc::sendto(
            fd.0,
            req.as_ptr().cast(),
            req.len(),
            0,
            (&kernel as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as u32,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }

    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: buf is ours and as long as passed.
        let n = unsafe { libc::recv(fd.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let mut msgs = &buf[..n as usize];
        while msgs.len() >= NLMSG_HDR {
            let len = u32::from_ne_bytes(msgs[0..4].try_into().unwrap()) as usize;
            let kind = u16::from_ne_bytes(msgs[4..6].try_into().unwrap());
            if len < NLMSG_HDR || len > msgs.len() {
                return Err(io::Error::other("sock_diag: truncated netlink message"));
            }
            match kind as i32 {
                libc::NLMSG_DONE => return Ok(()),
                libc::NLMSG_ERROR => {
                    let code = i32::from_ne_bytes(msgs[16..20].try_into().unwrap());
                    return Err(io::Error::from_raw_os_error(-code));
                }
                _ => each(&msgs[NLMSG_HDR..len]),
            }
            let step = (len + 3) & !3;
            msgs = &msgs[step.min(msgs.len())..];
        }
    }
}

/// The path and receive-queue length of one unix_diag_msg and its
/// attributes.
fn unix_diag_entry(msg: &[u8]) -> Option<(Vec<u8>, u32)> {
    let mut attrs = msg.get(UNIX_DIAG_MSG..)?;
    let (mut name, mut rq) = (None, None);
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes(attrs[0..2].try_into().unwrap()) as usize;
        let kind = u16::from_ne_bytes(attrs[2..4].try_into().unwrap());
        if len < 4 || len > attrs.len() {
            break;
        }
        let data = &attrs[4..len];
        match kind {
            UNIX_DIAG_NAME => {
                // A path name may carry its terminating NUL; an abstract
                // name starts with one and is kept whole.
                let mut n = data.to_vec();
                if n.first() != Some(&0) {
                    while n.last() == Some(&0) {
                        n.pop();
                    }
                }
                name = Some(n)
            }
            UNIX_DIAG_RQLEN if data.len() >= 4 => {
                rq = Some(u32::from_ne_bytes(data[0..4].try_into().unwrap()))
            }
            _ => {}
        }
        let step = (len + 3) & !3;
        attrs = &attrs[step.min(attrs.len())..];
    }
    Some((name?, rq?))
}

/// `server_metrics.accept_queue`: the accept-queue length over a trial.
/// Field names are a contract.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AcceptQueue {
    /// The longest queue seen in any sample.
    pub max: u32,
    /// The mean over all samples.
    pub mean: f64,
    /// How many samples found the socket.
    pub samples: u64,
    /// Per second from the recorder's origin.
    pub timeline: Vec<AcceptQueueSecond>,
}

/// One second of [`AcceptQueue::timeline`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcceptQueueSecond {
    /// Whole seconds since the origin the samples were timed from.
    pub t_s: u64,
    pub max: u32,
    pub mean: f64,
    pub samples: u64,
}

/// The most rows an [`AcceptQueue::timeline`] keeps: an hour of seconds.
/// A longer run (a soak) merges neighbouring rows in pairs when the cap
/// is reached, so a row then covers 2, 4, 8... seconds (its `t_s` the
/// first) and the recorder and the record stay the same size over hours.
pub const TIMELINE_CAP: usize = 3600;

/// Collects samples of the queue length, timed in seconds from an origin
/// of the caller's choosing (the load's start, for a trial). Each sample
/// is folded into its second at once (the whole run's max, sum and count,
/// the second's too): nothing is kept per sample, and at most
/// [`TIMELINE_CAP`] rows.
#[derive(Debug, Clone)]
pub struct AcceptQueueRecorder {
    /// Rows by their first second; each `mean` a sum until `summary`.
    rows: BTreeMap<u64, AcceptQueueSecond>,
    /// How many seconds a row covers (doubles at the cap).
    row_s: u64,
    max: u32,
    sum: u64,
    samples: u64,
}

impl Default for AcceptQueueRecorder {
    fn default() -> Self {
        AcceptQueueRecorder {
            rows: BTreeMap::new(),
            row_s: 1,
            max: 0,
            sum: 0,
            samples: 0,
        }
    }
}

impl AcceptQueueRecorder {
    pub fn new() -> Self {
        Self::default()
    }

    /// One sample: the queue held `len` connections `t_s` seconds after the
    /// origin. Samples before the origin (negative) are dropped.
    pub fn record(&mut self, t_s: f64, len: u32) {
        if t_s < 0.0 {
            return;
        }
        self.max = self.max.max(len);
        self.sum += u64::from(len);
        self.samples += 1;
        let first = (t_s.floor() as u64) / self.row_s * self.row_s;
        let row = self.rows.entry(first).or_insert(AcceptQueueSecond {
            t_s: first,
            max: len,
            mean: 0.0,
            samples: 0,
        });
        row.max = row.max.max(len);
        row.mean += f64::from(len);
        row.samples += 1;
        if self.rows.len() > TIMELINE_CAP {
            self.coarsen();
        }
    }

    /// Rows twice as long: neighbours merged.
    fn coarsen(&mut self) {
        self.row_s *= 2;
        let mut rows: BTreeMap<u64, AcceptQueueSecond> = BTreeMap::new();
        for r in std::mem::take(&mut self.rows).into_values() {
            let first = r.t_s / self.row_s * self.row_s;
            match rows.get_mut(&first) {
                Some(m) => {
                    m.max = m.max.max(r.max);
                    m.mean += r.mean;
                    m.samples += r.samples;
                }
                None => {
                    rows.insert(first, AcceptQueueSecond { t_s: first, ..r });
                }
            }
        }
        self.rows = rows;
    }

    pub fn summary(&self) -> AcceptQueue {
        let n = self.samples;
        if n == 0 {
            return AcceptQueue::default();
        }
        let timeline = self
            .rows
            .values()
            .map(|r| AcceptQueueSecond {
                mean: r.mean / r.samples as f64,
                ..r.clone()
            })
            .collect();
        AcceptQueue {
            max: self.max,
            mean: self.sum as f64 / n as f64,
            samples: n,
            timeline,
        }
    }
}

/// A thread that samples one endpoint's accept queue every `interval`
/// until stopped, timed from its own start.
pub struct AcceptQueueSampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<io::Result<AcceptQueueRecorder>>,
}

impl AcceptQueueSampler {
    pub fn start(endpoint: Endpoint, interval: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let origin = Instant::now();
            let mut rec = AcceptQueueRecorder::new();
            while !flag.load(Ordering::Relaxed) {
                if let Some(len) = accept_queue_len(&endpoint)? {
                    rec.record(origin.elapsed().as_secs_f64(), len);
                }
                std::thread::sleep(interval);
            }
            Ok(rec)
        });
        Self { stop, handle }
    }

    /// Stops the thread and returns what it saw, or the error that stopped
    /// it (netlink refused, /proc unreadable).
    pub fn finish(self) -> io::Result<AcceptQueue> {
        self.stop.store(true, Ordering::Relaxed);
        let rec = self
            .handle
            .join()
            .map_err(|_| io::Error::other("accept-queue sampler panicked"))??;
        Ok(rec.summary())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::unix::net::{UnixListener, UnixStream};

    #[test]
    fn a_listener_nobody_accepts_from_shows_each_waiting_connection() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let listen = Endpoint::Tcp(SocketAddr::from(([127, 0, 0, 1], port)));
        assert_eq!(accept_queue_len(&listen).unwrap(), Some(0));
        let held: Vec<TcpStream> = (0..3)
            .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
            .collect();
        assert_eq!(accept_queue_len(&listen).unwrap(), Some(3));
        let (_one, _) = l.accept().unwrap();
        assert_eq!(accept_queue_len(&listen).unwrap(), Some(2));
        drop(held);
        drop(l);
        assert_eq!(accept_queue_len(&listen).unwrap(), None);
    }

    #[test]
    fn an_ipv6_listener_counts_too() {
        let Ok(l) = TcpListener::bind("[::1]:0") else {
            return; // no IPv6 loopback here
        };
        let port = l.local_addr().unwrap().port();
        let _held: Vec<TcpStream> = (0..2)
            .map(|_| TcpStream::connect(("::1", port)).unwrap())
            .collect();
        let listen = Endpoint::Tcp(SocketAddr::from(([0, 0, 0, 0, 0, 0, 0, 1], port)));
        assert_eq!(accept_queue_len(&listen).unwrap(), Some(2));
    }

    /// Regression: the accept queue was read from /proc/net/tcp, whose
    /// every read formats every TIME_WAIT socket; with 38,000 of them left
    /// by earlier trials one read cost 52 ms of CPU, half a CPU at the
    /// lab's 100 ms interval. The dump must hand over listeners only,
    /// however many closed connections the machine holds.
    #[test]
    fn the_dump_never_walks_closed_connections() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        // The side that closes first keeps TIME_WAIT: close the client's
        // end after the server has accepted.
        for _ in 0..50 {
            let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
            let (s, _) = l.accept().unwrap();
            drop(c);
            drop(s);
        }
        let time_wait = std::fs::read_to_string("/proc/net/tcp")
            .unwrap()
            .lines()
            .filter(|x| x.split_whitespace().nth(3) == Some("06"))
            .count();
        assert!(time_wait >= 50, "{time_wait} TIME_WAIT sockets");
        let seen = super::tcp_listeners(libc::AF_INET).unwrap();
        assert!(seen.iter().any(|x| x.port == port), "{seen:?}");
        assert!(
            seen.iter().all(|x| u32::from(x.state) == super::TCP_LISTEN),
            "{seen:?}"
        );
        assert!(seen.len() < 50, "{} answers", seen.len());
    }

    #[test]
    fn a_unix_listener_is_found_by_its_path_over_sock_diag() {
        let dir = std::env::temp_dir().join(format!("rb-aq-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sock");
        let _ = std::fs::remove_file(&path);
        let other = dir.join("other.sock");
        let _ = std::fs::remove_file(&other);
        let l = UnixListener::bind(&path).unwrap();
        let _o = UnixListener::bind(&other).unwrap();
        let _busy: Vec<UnixStream> = (0..2)
            .map(|_| UnixStream::connect(&other).unwrap())
            .collect();
        let listen = Endpoint::Unix(path.clone());
        assert_eq!(accept_queue_len(&listen).unwrap(), Some(0));
        let mut held: Vec<UnixStream> = (0..4)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        held[0].write_all(b"x").unwrap();
        assert_eq!(accept_queue_len(&listen).unwrap(), Some(4));
        let _taken = l.accept().unwrap();
        assert_eq!(accept_queue_len(&listen).unwrap(), Some(3));
        assert_eq!(
            accept_queue_len(&Endpoint::Unix(dir.join("absent.sock"))).unwrap(),
            None
        );
        drop(l);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_trials_listen_value_names_the_socket_to_watch() {
        let tcp = |s: &str| Some(Endpoint::Tcp(s.parse().unwrap()));
        let rows = [
            ("127.0.0.1:8080", tcp("127.0.0.1:8080")),
            ("[::1]:9", tcp("[::1]:9")),
            (
                "/tmp/rb-1/app.sock",
                Some(Endpoint::Unix(PathBuf::from("/tmp/rb-1/app.sock"))),
            ),
            (
                "./app.sock",
                Some(Endpoint::Unix(PathBuf::from("./app.sock"))),
            ),
            ("localhost:http", None),
            ("127.0.0.1:99999", None),
        ];
        for (listen, want) in rows {
            assert_eq!(listen_endpoint(listen), want, "{listen}");
        }
    }

    /// A server bound to every address is the listener the load reaches
    /// at 127.0.0.1: the endpoint's address does not narrow the match.
    #[test]
    fn a_tcp_endpoint_is_matched_on_its_port_on_any_address() {
        let l = TcpListener::bind("0.0.0.0:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let _held = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let loopback = Endpoint::Tcp(SocketAddr::from(([127, 0, 0, 1], port)));
        assert_eq!(accept_queue_len(&loopback).unwrap(), Some(1));
    }

    #[test]
    fn the_recorder_gives_max_mean_and_a_per_second_timeline() {
        let mut r = AcceptQueueRecorder::new();
        for (t, n) in [(0.1, 2), (0.6, 4), (1.2, 7), (1.7, 5), (3.0, 0), (-0.5, 99)] {
            r.record(t, n);
        }
        let s = r.summary();
        assert_eq!(s.max, 7);
        assert_eq!(s.samples, 5);
        assert!((s.mean - 18.0 / 5.0).abs() < 1e-9);
        let secs: Vec<(u64, u32, f64)> =
            s.timeline.iter().map(|x| (x.t_s, x.max, x.mean)).collect();
        assert_eq!(secs, vec![(0, 4, 3.0), (1, 7, 6.0), (3, 0, 0.0)]);
        let v = serde_json::to_value(&s).unwrap();
        for k in ["max", "mean", "timeline"] {
            assert!(v.get(k).is_some(), "{k} missing from {v}");
        }
    }

    /// A day of samples every 100 ms: the recorder keeps at most
    /// [`TIMELINE_CAP`] rows (it kept every sample once, 24 bytes each,
    /// growing for as long as a soak ran), and loses no sample, no
    /// maximum and no mean in the merging.
    #[test]
    fn a_soak_long_recorder_stays_within_its_cap_and_keeps_max_and_mean() {
        let mut r = AcceptQueueRecorder::new();
        let tenths = 24 * 36_000u64;
        for i in 0..tenths {
            r.record(
                i as f64 / 10.0,
                (i % 7) as u32 + u32::from(i == 50_000) * 90,
            );
        }
        let s = r.summary();
        assert!(s.timeline.len() <= TIMELINE_CAP, "{}", s.timeline.len());
        assert!(s.timeline.len() >= TIMELINE_CAP / 2, "{}", s.timeline.len());
        assert_eq!(s.samples, tenths);
        assert_eq!(s.timeline.iter().map(|x| x.samples).sum::<u64>(), tenths);
        assert_eq!(s.max, 96);
        assert_eq!(s.timeline.iter().filter(|x| x.max == 96).count(), 1);
        assert!(s.timeline.windows(2).all(|w| w[0].t_s < w[1].t_s));
        assert!((s.mean - 3.0).abs() < 1e-3, "{}", s.mean);
    }
}
