//! One connection's life on the thread-per-connection test server: read,
//! parse (pipelined requests too), wait the service time, answer in the
//! configured framing or fault, and watch requests that arrive slowly or
//! are read slowly. It never accepts connections or starts threads.

use super::config::{Fault, Framing, BLOCKED_WRITE, SLOW_AFTER};
use super::shared::Shared;
use socket2::SockRef;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) trait Conn: Read + Write + Send {
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

pub(super) fn serve(mut conn: Box<dyn Conn>, sh: Arc<Shared>, over_limit: bool) {
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
