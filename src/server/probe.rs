//! A blocking one-shot HTTP client for readiness probes and answer checks.
//!
//! It sends a real request (a stray byte makes puma log a parse error) with
//! `Connection: close` and reads until the server closes or the deadline
//! passes. It is for one request at a time; load goes through `load`.

use crate::load::Endpoint;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// What one probe saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as text, cut to `max` characters for messages.
    pub fn body_snippet(&self, max: usize) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let one_line: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if one_line.chars().count() > max {
            format!("{}…", one_line.chars().take(max).collect::<String>())
        } else {
            one_line
        }
    }
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

/// GETs `path` from `endpoint`, giving up after `timeout`.
pub fn get(
    endpoint: &Endpoint,
    host: &str,
    path: &str,
    timeout: Duration,
) -> std::io::Result<Answer> {
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: rackbench-probe\r\nConnection: close\r\n\r\n"
    );
    send(endpoint, req.as_bytes(), timeout)
}

/// Sends one whole rendered request (it should say `Connection: close`)
/// and reads its answer, giving up after `timeout`.
pub fn send(endpoint: &Endpoint, request: &[u8], timeout: Duration) -> std::io::Result<Answer> {
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
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if Instant::now() > deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no complete answer in time",
            ));
        }
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if let Some(answer) = complete(&buf, head) {
                    return Ok(answer);
                }
                if buf.len() > 4 * 1024 * 1024 {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    parse(&buf, true, head)
}

/// The answer, once `buf` holds a whole response framed by length or chunks.
fn complete(buf: &[u8], head: bool) -> Option<Answer> {
    parse(buf, false, head).ok()
}

fn parse(buf: &[u8], at_eof: bool, head: bool) -> std::io::Result<Answer> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let head_len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err(bad("incomplete response head")),
        Err(e) => return Err(bad(&format!("not an HTTP response: {e}"))),
    };
    let status = resp.code.unwrap_or(0);
    if head {
        return Ok(Answer {
            status,
            body: Vec::new(),
        });
    }
    let header = |name: &str| {
        resp.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
    };
    let rest = &buf[head_len..];
    if header("transfer-encoding").is_some_and(|v| v.ends_with("chunked")) {
        let mut body = Vec::new();
        let mut pos = 0;
        loop {
            match httparse::parse_chunk_size(&rest[pos..]) {
                Ok(httparse::Status::Complete((n, 0))) => {
                    let _ = n;
                    return Ok(Answer { status, body });
                }
                Ok(httparse::Status::Complete((n, size))) => {
                    let start = pos + n;
                    let end = start + size as usize;
                    if rest.len() < end + 2 {
                        return Err(bad("incomplete chunk"));
                    }
                    body.extend_from_slice(&rest[start..end]);
                    pos = end + 2;
                }
                Ok(httparse::Status::Partial) => return Err(bad("incomplete chunk size")),
                Err(_) => return Err(bad("malformed chunk size")),
            }
        }
    }
    if let Some(len) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        if rest.len() >= len {
            return Ok(Answer {
                status,
                body: rest[..len].to_vec(),
            });
        }
        return Err(bad("body shorter than Content-Length"));
    }
    if at_eof || status == 204 || status == 304 {
        return Ok(Answer {
            status,
            body: rest.to_vec(),
        });
    }
    Err(bad("body not yet complete"))
}

#[cfg(test)]
#[allow(clippy::type_complexity)]
mod tests {
    use super::*;

    #[test]
    fn parses_length_chunked_and_close_framing() {
        let cases: &[(&[u8], bool, Option<(u16, &str)>)] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, Some((200, "hello"))),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", false, None),
            (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;x=y\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n", false, Some((200, "hello"))),
            (b"HTTP/1.0 500 Oops\r\n\r\nboom", false, None),
            (b"HTTP/1.0 500 Oops\r\n\r\nboom", true, Some((500, "boom"))),
            (b"garbage\r\n\r\n", true, None),
        ];
        for &(wire, eof, want) in cases {
            let got = parse(wire, eof, false)
                .ok()
                .map(|a| (a.status, String::from_utf8(a.body).unwrap()));
            assert_eq!(
                got,
                want.map(|(s, b)| (s, b.to_string())),
                "{}",
                String::from_utf8_lossy(wire)
            );
        }
    }

    #[test]
    fn the_answer_to_a_head_is_complete_without_its_body() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n";
        assert!(
            parse(wire, false, false).is_err(),
            "a GET waits for 11 bytes"
        );
        let a = parse(wire, false, true).unwrap();
        assert_eq!((a.status, a.body.len()), (200, 0));
    }

    #[test]
    fn snippet_is_one_short_line() {
        let a = Answer {
            status: 500,
            body: b"line one\nline two and more".to_vec(),
        };
        assert_eq!(a.body_snippet(12), "line one lin…");
    }
}
