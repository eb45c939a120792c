//! The bytes a slow client writes, by mode: a head that never ends, a
//! head declaring a body then the body, or the request whole.
//!
//! It never opens a socket nor paces a write (`run.rs` does).

use super::{SlowMode, DECLARED_BODY_BYTES};

/// The bytes a slow client writes: `prefix` first, then in `headers` mode
/// an endless run of `X-Slow` header lines (the head never ends), in
/// `body` mode the body's bytes.
#[derive(Debug, Clone)]
pub(super) struct Script {
    pub(super) prefix: Vec<u8>,
    /// Repeated after the prefix, forever.
    filler: &'static [u8],
}

impl Script {
    pub(super) fn of(mode: SlowMode, request: &[u8]) -> Script {
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
    pub(super) fn bytes(&self, offset: u64, n: usize) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::slow::tests::GET;

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
}
