//! A blocking one-shot HTTP client for readiness probes and answer checks.
//!
//! It sends a real request (a stray byte makes puma log a parse error) with
//! `Connection: close` and reads one whole framed answer (by length, by
//! chunks, or to the close) or until the deadline passes. It is for one
//! request at a time; load goes through `load`.
//!
//! The answer is read once, front to back: the head is searched for its
//! end only in the bytes that just arrived and parsed once, and the body's
//! bytes are appended as they come (a chunk's size line is the only thing
//! held back). Reading is linear in the answer's size; an 8 MiB report
//! download is read in one pass, never re-parsed after every read (which
//! was quadratic, and cut at 4 MiB, so a big answer read as "did not
//! answer" until the start timeout).
//!
//! The body is kept up to a cap ([`DEFAULT_MAX_BODY_BYTES`], or the
//! caller's): past it the probe stops reading and says so in
//! [`Answer::cut`], so the caller can judge the status, look for its
//! text in what was read, or refuse in words. It never judges an answer
//! itself and never blames the server for an answer that was simply big.

use crate::load::Endpoint;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// The most body bytes a check reads unless told otherwise
/// (`--check-max-body`): enough for any page, report or export a check
/// needs to look into, and a bounded cost for one that is bigger.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 64 << 20;

/// The longest answer head read (status line and headers).
const MAX_HEAD_BYTES: usize = 64 << 10;

/// The longest chunk-size or trailer line read.
const MAX_LINE_BYTES: usize = 4096;

/// What one probe saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    /// Set when the body was longer than the cap and only its start was
    /// read; None for a whole body.
    pub cut: Option<Cut>,
}

/// A body read only up to the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// The cap: the body bytes read and kept.
    pub read_bytes: u64,
    /// The body's whole length when the answer said it (Content-Length);
    /// None for a chunked or close-framed body.
    pub total_bytes: Option<u64>,
}

impl Answer {
    /// An answer with a whole body.
    pub fn whole(status: u16, body: Vec<u8>) -> Answer {
        Answer {
            status,
            body,
            cut: None,
        }
    }

    /// The body as text, cut to `max` characters for messages.
    pub fn body_snippet(&self, max: usize) -> String {
        // Only the start is shown: never turn a 64 MiB body into text.
        let start = &self.body[..self.body.len().min(max.saturating_mul(4))];
        let text = String::from_utf8_lossy(start);
        let one_line: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if one_line.chars().count() > max || start.len() < self.body.len() {
            format!("{}…", one_line.chars().take(max).collect::<String>())
        } else {
            one_line
        }
    }

    /// Whether the body read holds `text` (anywhere, not only in the
    /// snippet a message shows).
    pub fn body_contains(&self, text: &str) -> bool {
        let needle = text.as_bytes();
        needle.is_empty() || self.body.windows(needle.len()).any(|w| w == needle)
    }
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

/// GETs `path` from `endpoint`, giving up after `timeout`; the body is
/// kept up to [`DEFAULT_MAX_BODY_BYTES`].
pub fn get(
    endpoint: &Endpoint,
    host: &str,
    path: &str,
    timeout: Duration,
) -> std::io::Result<Answer> {
    get_capped(endpoint, host, path, timeout, DEFAULT_MAX_BODY_BYTES)
}

/// [`get`], keeping at most `max_body_bytes` of the body.
pub fn get_capped(
    endpoint: &Endpoint,
    host: &str,
    path: &str,
    timeout: Duration,
    max_body_bytes: u64,
) -> std::io::Result<Answer> {
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: rackbench-probe\r\nConnection: close\r\n\r\n"
    );
    send_capped(endpoint, req.as_bytes(), timeout, max_body_bytes)
}

/// Sends one whole rendered request (it should say `Connection: close`)
/// and reads its answer, giving up after `timeout`; the body is kept up
/// to [`DEFAULT_MAX_BODY_BYTES`].
pub fn send(endpoint: &Endpoint, request: &[u8], timeout: Duration) -> std::io::Result<Answer> {
    send_capped(endpoint, request, timeout, DEFAULT_MAX_BODY_BYTES)
}

/// [`send`], keeping at most `max_body_bytes` of the body.
pub fn send_capped(
    endpoint: &Endpoint,
    request: &[u8],
    timeout: Duration,
    max_body_bytes: u64,
) -> std::io::Result<Answer> {
    // The answer to a HEAD has a Content-Length but never a body.
    let head = request.starts_with(b"HEAD ");
    let deadline = Instant::now() + timeout;
    let mut stream: Box<dyn Stream> = match endpoint {
        Endpoint::Tcp(addr) => {
            let s = TcpStream::connect_timeout(addr, timeout)?;
            s.set_read_timeout(Some(timeout))?;
            s.set_write_timeout(Some(timeout))?;
            Box::new(s)
        }
        Endpoint::Unix(path) => {
            let s = UnixStream::connect(path)?;
            s.set_read_timeout(Some(timeout))?;
            s.set_write_timeout(Some(timeout))?;
            Box::new(s)
        }
    };
    stream.write_all(request)?;
    read_answer(&mut stream, head, max_body_bytes, deadline)
}

fn bad(m: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, m.into())
}

/// One read into `buf`, or a timeout past `deadline`; 0 at the end.
fn fill(stream: &mut dyn Read, buf: &mut [u8], deadline: Instant) -> std::io::Result<usize> {
    loop {
        if Instant::now() > deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no complete answer in time",
            ));
        }
        match stream.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// What the head said about the body.
struct Head {
    /// The head's length in the bytes read.
    len: usize,
    status: u16,
    chunked: bool,
    content_length: Option<u64>,
}

/// The head, once `bytes` hold all of it; None while they do not.
fn parse_head(bytes: &[u8]) -> std::io::Result<Option<Head>> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let len = match resp.parse(bytes) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(bad(format!("not an HTTP response: {e}"))),
    };
    let header = |name: &str| {
        resp.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
    };
    Ok(Some(Head {
        len,
        status: resp.code.unwrap_or(0),
        chunked: header("transfer-encoding").is_some_and(|v| v.ends_with("chunked")),
        content_length: header("content-length").and_then(|v| v.parse().ok()),
    }))
}

/// The body kept so far, up to the cap.
struct Body {
    bytes: Vec<u8>,
    cap: u64,
    /// More than the cap was offered: reading stops.
    over: bool,
}

impl Body {
    fn push(&mut self, data: &[u8]) {
        let room = (self.cap - self.bytes.len() as u64).min(data.len() as u64) as usize;
        self.bytes.extend_from_slice(&data[..room]);
        self.over |= room < data.len();
    }
}

/// Where a chunked body's decoder is.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum ChunkState {
    #[default]
    Size,
    /// Bytes of the current chunk still to come.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    Trailer,
    Done,
}

/// A chunked body decoded as its bytes arrive; only a line (a chunk's
/// size, the CRLF after its data, a trailer) is ever held back.
#[derive(Debug, Default)]
struct Chunked {
    state: ChunkState,
    line: Vec<u8>,
}

impl Chunked {
    fn feed(&mut self, mut input: &[u8], body: &mut Body) -> std::io::Result<()> {
        while !input.is_empty() && self.state != ChunkState::Done && !body.over {
            if let ChunkState::Data(n) = self.state {
                let take = n.min(input.len() as u64) as usize;
                body.push(&input[..take]);
                input = &input[take..];
                self.state = if n == take as u64 {
                    ChunkState::DataEnd
                } else {
                    ChunkState::Data(n - take as u64)
                };
                continue;
            }
            let newline = input.iter().position(|&b| b == b'\n');
            let end = newline.map_or(input.len(), |i| i + 1);
            self.line.extend_from_slice(&input[..end]);
            input = &input[end..];
            if self.line.len() > MAX_LINE_BYTES {
                return Err(bad("a chunk-size or trailer line over 4 KiB"));
            }
            if newline.is_some() {
                self.end_line()?;
            }
        }
        Ok(())
    }

    /// A whole line is in `self.line`: what it means in this state.
    fn end_line(&mut self) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(&self.line).into_owned();
        let line = text.trim_end_matches(['\r', '\n']);
        self.state = match self.state {
            ChunkState::Size => {
                let size = line.split(';').next().unwrap_or("").trim();
                match u64::from_str_radix(size, 16) {
                    Ok(0) => ChunkState::Trailer,
                    Ok(n) => ChunkState::Data(n),
                    Err(_) => return Err(bad("malformed chunk size")),
                }
            }
            ChunkState::DataEnd if line.is_empty() => ChunkState::Size,
            ChunkState::DataEnd => return Err(bad("a chunk's data is not followed by CRLF")),
            ChunkState::Trailer if line.is_empty() => ChunkState::Done,
            other => other,
        };
        self.line.clear();
        Ok(())
    }
}

/// Reads one answer from `stream`: the head, then the body as it is
/// framed (chunks, Content-Length, or to the close), keeping at most
/// `max_body` bytes of it. A HEAD's answer (`head_only`), a 1xx, 204 or
/// 304 has no body.
fn read_answer(
    stream: &mut dyn Read,
    head_only: bool,
    max_body: u64,
    deadline: Instant,
) -> std::io::Result<Answer> {
    let mut buf = vec![0u8; 64 << 10];
    let mut start = Vec::new();
    let head = loop {
        let n = fill(stream, &mut buf, deadline)?;
        if n == 0 {
            return Err(bad(if start.is_empty() {
                "closed without an answer"
            } else {
                "incomplete response head"
            }));
        }
        start.extend_from_slice(&buf[..n]);
        // Bounded: a head is parsed again only while it is under 64 KiB.
        if let Some(head) = parse_head(&start)? {
            break head;
        }
        if start.len() > MAX_HEAD_BYTES {
            return Err(bad("the answer's head is over 64 KiB"));
        }
    };
    let status = head.status;
    if head_only || status < 200 || status == 204 || status == 304 {
        return Ok(Answer::whole(status, Vec::new()));
    }
    let first = &start[head.len..];
    let mut body = Body {
        bytes: Vec::with_capacity(head.content_length.unwrap_or(0).min(max_body) as usize),
        cap: max_body,
        over: false,
    };
    let cut = |body: Body, total_bytes: Option<u64>| Answer {
        status,
        cut: Some(Cut {
            read_bytes: body.bytes.len() as u64,
            total_bytes,
        }),
        body: body.bytes,
    };
    if head.chunked {
        let mut chunked = Chunked::default();
        chunked.feed(first, &mut body)?;
        loop {
            if body.over {
                return Ok(cut(body, None));
            }
            if chunked.state == ChunkState::Done {
                return Ok(Answer::whole(status, body.bytes));
            }
            let n = fill(stream, &mut buf, deadline)?;
            if n == 0 {
                return Err(bad("incomplete chunked body"));
            }
            chunked.feed(&buf[..n], &mut body)?;
        }
    }
    if let Some(len) = head.content_length {
        let mut seen = first.len().min(len as usize) as u64;
        body.push(&first[..seen as usize]);
        while seen < len && !body.over && (body.bytes.len() as u64) < max_body {
            let n = fill(stream, &mut buf, deadline)?;
            if n == 0 {
                return Err(bad("body shorter than Content-Length"));
            }
            let take = (len - seen).min(n as u64) as usize;
            body.push(&buf[..take]);
            seen += take as u64;
        }
        if len > max_body {
            return Ok(cut(body, Some(len)));
        }
        return Ok(Answer::whole(status, body.bytes));
    }
    body.push(first);
    while !body.over {
        let n = fill(stream, &mut buf, deadline)?;
        if n == 0 {
            return Ok(Answer::whole(status, body.bytes));
        }
        body.push(&buf[..n]);
    }
    Ok(cut(body, None))
}

#[cfg(test)]
#[allow(clippy::type_complexity)]
mod tests {
    use super::*;

    /// A stream that gives `data` `step` bytes at a time.
    struct Pieces {
        data: Vec<u8>,
        at: usize,
        step: usize,
    }

    impl Read for Pieces {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len() - self.at);
            out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn read(wire: &[u8], step: usize, head: bool, cap: u64) -> std::io::Result<Answer> {
        let mut s = Pieces {
            data: wire.to_vec(),
            at: 0,
            step,
        };
        read_answer(&mut s, head, cap, Instant::now() + Duration::from_secs(30))
    }

    /// (wire, the answer as (status, body), or None for an error), read
    /// whole and split at every small step: the same answer either way.
    #[test]
    fn reads_length_chunked_and_close_framing_however_the_bytes_arrive() {
        let cases: &[(&[u8], Option<(u16, &str)>)] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", Some((200, "hello"))),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello, and more", Some((200, "hello"))),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", None),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n", Some((200, "hello"))),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n", Some((200, "hello"))),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", None),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", None),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n", None),
            (b"HTTP/1.0 500 Oops\r\n\r\nboom", Some((500, "boom"))),
            (b"HTTP/1.1 204 No Content\r\n\r\n", Some((204, ""))),
            (b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok", Some((200, "ok"))),
            (b"garbage\r\n\r\n", None),
            (b"", None),
        ];
        for &(wire, want) in cases {
            for step in [1, 2, 3, 7, 64, usize::MAX] {
                let got = read(wire, step, false, 1 << 20)
                    .ok()
                    .map(|a| (a.status, String::from_utf8(a.body).unwrap(), a.cut));
                assert_eq!(
                    got,
                    want.map(|(s, b)| (s, b.to_string(), None)),
                    "step {step}: {}",
                    String::from_utf8_lossy(wire)
                );
            }
        }
    }

    #[test]
    fn the_answer_to_a_head_is_complete_without_its_body() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n";
        assert!(
            read(wire, 64, false, 1 << 20).is_err(),
            "a GET waits for 11 bytes"
        );
        let a = read(wire, 64, true, 1 << 20).unwrap();
        assert_eq!((a.status, a.body.len()), (200, 0));
    }

    /// Regression: a body over 4 MiB was cut and then judged incomplete
    /// until the start timeout ("did not answer"). Bodies over the cap are
    /// read up to it and say so, whatever their framing; the one at the
    /// cap is whole.
    #[test]
    fn a_body_over_the_cap_is_read_to_the_cap_and_says_so() {
        let cap = 10u64;
        let body = "0123456789abcdef";
        let length = format!("HTTP/1.1 200 OK\r\nContent-Length: 16\r\n\r\n{body}");
        let chunked = format!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{}\r\n8\r\n{}\r\n0\r\n\r\n",
            &body[..8],
            &body[8..]
        );
        let close = format!("HTTP/1.0 200 OK\r\n\r\n{body}");
        for (wire, total) in [(length, Some(16)), (chunked, None), (close, None)] {
            for step in [1, 5, usize::MAX] {
                let a = read(wire.as_bytes(), step, false, cap).unwrap();
                assert_eq!(a.body, b"0123456789", "{wire}");
                assert_eq!(
                    a.cut,
                    Some(Cut {
                        read_bytes: 10,
                        total_bytes: total
                    }),
                    "{wire}"
                );
            }
        }
        let at_cap = read(
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789",
            3,
            false,
            cap,
        )
        .unwrap();
        assert_eq!(at_cap.cut, None);
    }

    /// 100 MiB read through 64 KiB reads: one pass (the old probe parsed
    /// the whole buffer again after every read, 1,600 times here).
    #[test]
    fn a_100_mib_answer_is_read_whole_in_one_pass() {
        let len = 100usize << 20;
        let mut wire = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n").into_bytes();
        wire.resize(wire.len() + len, b'a');
        wire.extend_from_slice(b"Z");
        let a = read(&wire, 64 << 10, false, 128 << 20).unwrap();
        assert_eq!((a.body.len(), a.cut), (len, None));
        assert!(a.body_contains("aaaa") && !a.body_contains("Z"));
    }

    #[test]
    fn snippet_is_one_short_line() {
        let a = Answer::whole(500, b"line one\nline two and more".to_vec());
        assert_eq!(a.body_snippet(12), "line one lin…");
        let big = Answer::whole(200, vec![b'x'; 1 << 20]);
        assert_eq!(big.body_snippet(3), "xxx…");
        assert!(big.body_contains("") && !big.body_contains("y"));
    }
}
