//! Incremental HTTP/1.1 response framing.
//!
//! The parser is fed whatever bytes have arrived and says how many it
//! consumed and whether a response is complete. It never copies a body: it
//! only counts it off (and, when asked, looks for a substring in it across
//! read boundaries). Headers are parsed by `httparse`; the body framing —
//! Content-Length, chunked with extensions and trailers, or delimited by the
//! connection closing — is done here, because that is where a load generator
//! must be both exact and cheap.
//!
//! A benchmarked server answers the same head over and over (nginx's Date
//! line changes once a second), so each parser keeps the last head it
//! parsed and what it meant; a head byte-for-byte equal to it is not parsed
//! again. Same bytes, same meaning: the shortcut cannot change a result.

use memchr::memmem;
use thiserror::Error;

/// Which statuses count as a good answer (here, beside the response it
/// judges, so that the config and a mix both name it without importing
/// each other).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectStatus {
    /// 2xx and 3xx.
    Success,
    /// Exactly these codes.
    Codes(Vec<u16>),
}

impl ExpectStatus {
    pub fn matches(&self, status: u16) -> bool {
        match self {
            ExpectStatus::Success => (200..400).contains(&status),
            ExpectStatus::Codes(c) => c.contains(&status),
        }
    }
}

/// Why a response could not be framed. All of these count as `parse` errors.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("malformed status line or headers: {0}")]
    Head(String),
    #[error("response headers exceed {0} bytes")]
    HeadTooLarge(usize),
    #[error("invalid Content-Length")]
    ContentLength,
    #[error("malformed chunked body")]
    Chunk,
    #[error("connection closed before the response was complete")]
    Truncated,
}

/// Headers larger than this are refused rather than buffered without end;
/// so are a chunk-size line and a trailer line.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The bytes a head or line must end within: only these are looked at,
/// so that the answer is the same whether a long one arrived whole or in
/// pieces (it was not: a 65,560-byte chunk-size line was framed when it
/// came in one read and refused when its first 65,537 bytes came alone).
fn within_limit(rest: &[u8]) -> &[u8] {
    &rest[..rest.len().min(MAX_HEAD_BYTES)]
}

/// Whether an unfinished head or line in `rest` can no longer end within
/// the limit.
fn past_limit(rest: &[u8]) -> bool {
    rest.len() >= MAX_HEAD_BYTES
}
const MAX_HEADERS: usize = 64;

/// What a complete response looked like, as far as the checks care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// False when the server asked to close the connection after this
    /// response (or framed the body by closing it).
    pub keep_alive: bool,
    /// Whether the expected body substring was seen (true when none is set).
    pub body_matched: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Progress {
    /// Need more bytes; `consumed` of the input may be dropped.
    Partial { consumed: usize },
    /// A response ended after `consumed` bytes of the input.
    Complete { consumed: usize, response: Response },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Fixed { remaining: u64 },
    ChunkSize,
    ChunkData { remaining: u64 },
    ChunkDataEnd,
    Trailers,
    UntilClose,
}

/// The text a body must hold, with its searcher built once: a run makes
/// one per needle before the first request, never one per response.
///
/// The searcher is `memchr`'s `memmem::Finder` (linear, vectorised); the
/// slice-window scan it replaces compared every offset byte by byte, and
/// checked about two 8 MiB answers a second in a debug build (issue 43).
#[derive(Debug, Clone, Default)]
pub struct Needle {
    /// None for no needle: every body matches.
    finder: Option<memmem::Finder<'static>>,
}

impl Needle {
    /// No expected text: every body matches.
    pub const NONE: Needle = Needle { finder: None };

    /// A needle of `text`; empty text is [`Needle::NONE`].
    pub fn new(text: &[u8]) -> Needle {
        Needle {
            finder: (!text.is_empty()).then(|| memmem::Finder::new(text).into_owned()),
        }
    }

    /// The expected text (empty for none).
    pub fn as_bytes(&self) -> &[u8] {
        self.finder.as_ref().map_or(&[], |f| f.needle())
    }

    pub fn is_empty(&self) -> bool {
        self.finder.is_none()
    }
}

/// Looks for one needle across the pieces of a body as they arrive.
#[derive(Debug, Default)]
struct BodyMatcher {
    found: bool,
    /// The last `needle.len() - 1` bytes seen, to catch a match that
    /// straddles two reads.
    carry: Vec<u8>,
}

impl BodyMatcher {
    /// Each byte is searched at most twice (once in the piece, and once
    /// more if within `needle.len() - 1` of an edge), so a body costs time
    /// linear in its length whatever the size of its pieces.
    fn feed(&mut self, needle: &Needle, piece: &[u8]) {
        let Some(finder) = &needle.finder else { return };
        if self.found || piece.is_empty() {
            return;
        }
        let keep = finder.needle().len() - 1;
        // A match that starts in the carried tail ends within the first
        // `keep` bytes of this piece.
        let mut edge = std::mem::take(&mut self.carry);
        edge.extend_from_slice(&piece[..piece.len().min(keep)]);
        if finder.find(&edge).is_some() || finder.find(piece).is_some() {
            self.found = true;
            return;
        }
        let mut tail = edge;
        if piece.len() >= keep {
            tail.clear();
            tail.extend_from_slice(&piece[piece.len() - keep..]);
        } else if tail.len() > keep {
            tail.drain(..tail.len() - keep);
        }
        self.carry = tail;
    }
}

/// What a final (non-1xx) response head says about the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    status: u16,
    /// The server asked to close (or spoke HTTP/1.0 without keep-alive).
    close: bool,
    length: Option<u64>,
    chunked: bool,
}

/// Heads longer than this are not kept for reuse.
const MAX_CACHED_HEAD: usize = 1024;

/// Parses a response head at the start of `buf`: None if incomplete, else
/// its length and, for a final response, what it says (None for 1xx).
fn parse_head(buf: &[u8]) -> Result<Option<(usize, Option<Head>)>, ParseError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let n = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(ParseError::Head(e.to_string())),
    };
    let status = resp.code.unwrap_or(0);
    if (100..200).contains(&status) && status != 101 {
        return Ok(Some((n, None)));
    }
    let mut head = Head {
        status,
        close: resp.version.unwrap_or(1) == 0,
        length: None,
        chunked: false,
    };
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            // Digits only (RFC 9112: 1*DIGIT): Rust's parse takes "+5" too.
            let digits = h.value.trim_ascii();
            let v = std::str::from_utf8(digits)
                .ok()
                .filter(|_| !digits.is_empty() && digits.iter().all(u8::is_ascii_digit))
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or(ParseError::ContentLength)?;
            if head.length.is_some_and(|l| l != v) {
                return Err(ParseError::ContentLength);
            }
            head.length = Some(v);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            head.chunked = h
                .value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    head.close = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    head.close = false;
                }
            }
        }
    }
    Ok(Some((n, Some(head))))
}

/// What [`ResponseParser::read_head`] found at the start of the input.
#[derive(Debug, Clone, Copy)]
enum HeadRead {
    /// Not a whole head yet.
    Partial,
    /// A whole 1xx head of this many bytes; the real response follows.
    Interim(usize),
    /// A whole final head of this many bytes.
    Final(usize, Head),
}

/// Frames one response after another on a connection.
#[derive(Debug)]
pub struct ResponseParser {
    phase: Phase,
    status: u16,
    keep_alive: bool,
    matcher: BodyMatcher,
    /// The bytes of the last final head parsed, and what they meant.
    last_head: Vec<u8>,
    last: Option<Head>,
}

impl Default for ResponseParser {
    fn default() -> Self {
        ResponseParser {
            phase: Phase::Head,
            status: 0,
            keep_alive: true,
            matcher: BodyMatcher::default(),
            last_head: Vec::new(),
            last: None,
        }
    }
}

impl ResponseParser {
    /// Forgets the response in progress (a new connection), keeping the
    /// last head for reuse.
    pub fn reset(&mut self) {
        self.phase = Phase::Head;
        self.status = 0;
        self.keep_alive = true;
        self.matcher = BodyMatcher::default();
    }

    /// The status line of the last response head, e.g. "HTTP/1.1 503
    /// Service Unavailable" (None when that head was too long to keep).
    pub fn status_line(&self) -> Option<String> {
        if self.last.map(|h| h.status) != Some(self.status) {
            return None;
        }
        let line = self.last_head.split(|&b| b == b'\r' || b == b'\n').next()?;
        Some(String::from_utf8_lossy(line).into_owned())
    }

    /// True when no byte of the current response has been consumed.
    pub fn is_idle(&self) -> bool {
        self.phase == Phase::Head
    }

    /// True when the response ends only when the server closes.
    pub fn reads_until_close(&self) -> bool {
        self.phase == Phase::UntilClose
    }

    /// Feeds bytes. `head_request` says the request was HEAD (no body
    /// follows whatever the headers say); `needle` is the expected body
    /// substring ([`Needle::NONE`] for none).
    pub fn feed(
        &mut self,
        buf: &[u8],
        head_request: bool,
        needle: &Needle,
    ) -> Result<Progress, ParseError> {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            match self.phase {
                Phase::Head => match self.read_head(rest)? {
                    HeadRead::Partial => return Ok(Progress::Partial { consumed: pos }),
                    // 1xx answers are interim: the real response follows.
                    HeadRead::Interim(n) => pos += n,
                    HeadRead::Final(n, head) => {
                        pos += n;
                        self.begin_body(head, head_request);
                    }
                },
                Phase::Fixed { remaining } => {
                    let take = (rest.len() as u64).min(remaining) as usize;
                    self.matcher.feed(needle, &rest[..take]);
                    pos += take;
                    let remaining = remaining - take as u64;
                    if remaining == 0 {
                        return Ok(self.complete(pos, needle));
                    }
                    self.phase = Phase::Fixed { remaining };
                    return Ok(Progress::Partial { consumed: pos });
                }
                // httparse reads a line with no digit ("\r\n", ";x\r\n") as
                // a last chunk of size 0: a malformed body framed as whole.
                Phase::ChunkSize if rest.first().is_some_and(|b| !b.is_ascii_hexdigit()) => {
                    return Err(ParseError::Chunk);
                }
                Phase::ChunkSize => match httparse::parse_chunk_size(within_limit(rest)) {
                    Ok(httparse::Status::Complete((n, size))) => {
                        pos += n;
                        self.phase = if size == 0 {
                            Phase::Trailers
                        } else {
                            Phase::ChunkData { remaining: size }
                        };
                    }
                    Ok(httparse::Status::Partial) => {
                        if past_limit(rest) {
                            return Err(ParseError::Chunk);
                        }
                        return Ok(Progress::Partial { consumed: pos });
                    }
                    Err(_) => return Err(ParseError::Chunk),
                },
                Phase::ChunkData { remaining } => {
                    let take = (rest.len() as u64).min(remaining) as usize;
                    self.matcher.feed(needle, &rest[..take]);
                    pos += take;
                    let remaining = remaining - take as u64;
                    if remaining > 0 {
                        self.phase = Phase::ChunkData { remaining };
                        return Ok(Progress::Partial { consumed: pos });
                    }
                    self.phase = Phase::ChunkDataEnd;
                }
                Phase::ChunkDataEnd => {
                    if rest.len() < 2 {
                        return Ok(Progress::Partial { consumed: pos });
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(ParseError::Chunk);
                    }
                    pos += 2;
                    self.phase = Phase::ChunkSize;
                }
                Phase::Trailers => {
                    // Zero or more trailer fields, then an empty line.
                    let line = within_limit(rest);
                    let Some(eol) = line.windows(2).position(|w| w == b"\r\n") else {
                        if past_limit(rest) {
                            return Err(ParseError::Chunk);
                        }
                        return Ok(Progress::Partial { consumed: pos });
                    };
                    pos += eol + 2;
                    if eol == 0 {
                        return Ok(self.complete(pos, needle));
                    }
                }
                Phase::UntilClose => {
                    self.matcher.feed(needle, rest);
                    return Ok(Progress::Partial {
                        consumed: buf.len(),
                    });
                }
            }
        }
    }

    /// Reads the response head at the start of `rest`: the last final head
    /// again, compared byte for byte instead of parsed (a server answers
    /// alike every time), or a new one, kept for next time when short.
    /// Copies into the kept buffer only when the head changed, so the
    /// steady state allocates nothing.
    fn read_head(&mut self, rest: &[u8]) -> Result<HeadRead, ParseError> {
        if let Some(h) = self.last {
            if rest.starts_with(&self.last_head) {
                return Ok(HeadRead::Final(self.last_head.len(), h));
            }
        }
        match parse_head(within_limit(rest))? {
            None => {
                if past_limit(rest) {
                    return Err(ParseError::HeadTooLarge(MAX_HEAD_BYTES));
                }
                Ok(HeadRead::Partial)
            }
            Some((n, None)) => Ok(HeadRead::Interim(n)),
            Some((n, Some(h))) => {
                if n <= MAX_CACHED_HEAD {
                    self.last_head.clear();
                    self.last_head.extend_from_slice(&rest[..n]);
                    self.last = Some(h);
                }
                Ok(HeadRead::Final(n, h))
            }
        }
    }

    /// Takes a final head's word on what follows: no body (HEAD, 204,
    /// 304), chunks, a length, or everything until the server closes
    /// (which also ends keep-alive).
    fn begin_body(&mut self, head: Head, head_request: bool) {
        self.status = head.status;
        self.keep_alive = !head.close;
        self.matcher = BodyMatcher::default();
        let no_body = head_request || head.status == 204 || head.status == 304;
        self.phase = if no_body {
            Phase::Fixed { remaining: 0 }
        } else if head.chunked {
            Phase::ChunkSize
        } else if let Some(len) = head.length {
            Phase::Fixed { remaining: len }
        } else {
            self.keep_alive = false;
            Phase::UntilClose
        };
    }

    /// The connection closed. Completes a response framed by the close, or
    /// says why the close cut a response short. `Ok(None)` means no byte of
    /// a response had been consumed: the close came between responses, or
    /// inside a head, whose bytes the caller still holds unconsumed.
    pub fn finish_at_eof(&mut self, needle: &Needle) -> Result<Option<Response>, ParseError> {
        match self.phase {
            Phase::UntilClose => match self.complete(0, needle) {
                Progress::Complete { response, .. } => Ok(Some(response)),
                Progress::Partial { .. } => unreachable!("complete always completes"),
            },
            Phase::Head => Ok(None),
            _ => Err(ParseError::Truncated),
        }
    }

    fn complete(&mut self, consumed: usize, needle: &Needle) -> Progress {
        let response = Response {
            status: self.status,
            keep_alive: self.keep_alive,
            body_matched: needle.is_empty() || self.matcher.found,
        };
        self.phase = Phase::Head;
        Progress::Complete { consumed, response }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` in pieces of `step` bytes, as the socket would, and
    /// returns every response completed.
    fn frame(
        wire: &[u8],
        step: usize,
        head: bool,
        needle: &[u8],
    ) -> Result<Vec<Response>, ParseError> {
        let needle = &Needle::new(needle);
        let mut p = ResponseParser::default();
        let mut buf: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        for piece in wire.chunks(step) {
            buf.extend_from_slice(piece);
            loop {
                match p.feed(&buf, head, needle)? {
                    Progress::Partial { consumed } => {
                        buf.drain(..consumed);
                        break;
                    }
                    Progress::Complete { consumed, response } => {
                        buf.drain(..consumed);
                        out.push(response);
                        if buf.is_empty() {
                            break;
                        }
                    }
                }
            }
        }
        if let Some(r) = p.finish_at_eof(needle)? {
            out.push(r);
        }
        Ok(out)
    }

    const CL: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world";
    const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n";

    #[test]
    fn frames_every_framing_at_every_split() {
        let close10 = b"HTTP/1.0 200 OK\r\n\r\nhello world".as_slice();
        let cases: &[(&str, &[u8], bool, usize)] = &[
            ("content-length", CL, false, 1),
            ("chunked with extension and trailer", CHUNKED, false, 1),
            ("close-delimited HTTP/1.0", close10, false, 1),
            (
                "HEAD ignores Content-Length",
                b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n",
                true,
                1,
            ),
            (
                "204 has no body",
                b"HTTP/1.1 204 No Content\r\n\r\n",
                false,
                1,
            ),
            (
                "304 has no body",
                b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
                false,
                1,
            ),
            (
                "100 Continue is skipped",
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                false,
                1,
            ),
        ];
        for &(name, wire, head, count) in cases {
            for step in [1, 2, 3, 7, 64, 4096] {
                let got = frame(wire, step, head, b"").unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(got.len(), count, "{name} at step {step}");
            }
        }
    }

    #[test]
    fn a_repeated_head_is_reused_and_a_changed_one_parsed_again() {
        // Same head twice, then one differing only in its length, then a
        // close: every split must frame all four exactly.
        let mut wire = Vec::new();
        wire.extend_from_slice(CL);
        wire.extend_from_slice(CL);
        wire.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nhello world!");
        wire.extend_from_slice(b"HTTP/1.1 500 OK\r\nContent-Length: 11\r\n\r\nhello world");
        wire.extend_from_slice(CL);
        for step in 1..=wire.len() {
            let out = frame(&wire, step, false, b"world!").unwrap();
            let got: Vec<_> = out.iter().map(|r| (r.status, r.body_matched)).collect();
            assert_eq!(
                got,
                [
                    (200, false),
                    (200, false),
                    (200, true),
                    (500, false),
                    (200, false)
                ],
                "step {step}"
            );
        }
        // The shortcut keeps a parser's answer to a malformed length.
        let mut p = ResponseParser::default();
        let bad = b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n";
        assert_eq!(
            p.feed(bad, false, &Needle::NONE),
            Err(ParseError::ContentLength)
        );
        let mut p = ResponseParser::default();
        p.feed(CL, false, &Needle::NONE).unwrap();
        assert_eq!(
            p.feed(bad, false, &Needle::NONE),
            Err(ParseError::ContentLength)
        );
    }

    #[test]
    fn pipelined_responses_in_one_buffer() {
        let mut wire = Vec::new();
        for _ in 0..3 {
            wire.extend_from_slice(CL);
            wire.extend_from_slice(CHUNKED);
        }
        for step in [1, 5, 10_000] {
            assert_eq!(frame(&wire, step, false, b"").unwrap().len(), 6);
        }
    }

    #[test]
    fn keep_alive_follows_version_and_connection_header() {
        let cases: &[(&[u8], bool)] = &[
            (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true),
            (
                b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
                false,
            ),
            (
                b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, Close\r\nContent-Length: 0\r\n\r\n",
                false,
            ),
            (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false),
            (
                b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
                true,
            ),
        ];
        for &(wire, keep) in cases {
            let got = frame(wire, 4096, false, b"").unwrap();
            assert_eq!(got[0].keep_alive, keep, "{}", String::from_utf8_lossy(wire));
        }
    }

    #[test]
    fn body_substring_is_found_across_reads_and_chunks() {
        for step in [1, 2, 3, 4096] {
            assert!(frame(CHUNKED, step, false, b"lo wo").unwrap()[0].body_matched);
            assert!(frame(CL, step, false, b"hello world").unwrap()[0].body_matched);
            assert!(!frame(CL, step, false, b"goodbye").unwrap()[0].body_matched);
            assert!(!frame(CL, step, false, b"hello world!").unwrap()[0].body_matched);
        }
    }

    /// Whether a Content-Length response of `body` matched `needle` when
    /// its bytes arrived cut at `cuts` (offsets into the body, ascending).
    fn matched_with_cuts(body: &[u8], cuts: &[usize], needle: &Needle) -> bool {
        let mut wire =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        let head = wire.len();
        wire.extend_from_slice(body);
        let mut p = ResponseParser::default();
        let mut from = 0;
        for to in cuts.iter().map(|c| head + c).chain([wire.len()]) {
            match p.feed(&wire[from..to], false, needle).unwrap() {
                Progress::Partial { consumed } => assert_eq!(consumed, to - from),
                Progress::Complete { response, .. } => return response.body_matched,
            }
            from = to;
        }
        panic!("the response never completed")
    }

    /// The needle split between two reads, and among three (pieces shorter
    /// than the needle, so the carried tail is all that joins them), at
    /// every cut point: found when whole in the body, never when only a
    /// prefix or a suffix of it is.
    #[test]
    fn needle_split_at_every_cut_point_is_found_and_a_near_miss_is_not() {
        let cases: &[(&str, &[u8], bool)] = &[
            ("needle mid-body", b"xx hello world! yy", true),
            ("needle at the start", b"hello world! yy", true),
            ("needle at the end", b"xx hello world!", true),
            (
                "a prefix, then the rest too late",
                b"xx hello worl yy d!",
                false,
            ),
            (
                "a prefix twice, then whole",
                b"hello worlhello world!",
                true,
            ),
            ("only a suffix", b"ello world! yy", false),
        ];
        let needle = Needle::new(b"hello world!");
        for &(name, body, want) in cases {
            for a in 0..=body.len() {
                assert_eq!(
                    matched_with_cuts(body, &[a], &needle),
                    want,
                    "{name}: cut at {a}"
                );
                for b in a..=body.len() {
                    let got = matched_with_cuts(body, &[a, b], &needle);
                    assert_eq!(got, want, "{name}: cuts at {a} and {b}");
                }
            }
        }
    }

    /// The case of issue 43: the old window-by-window scan checked about
    /// two such answers a second in a debug build. Found read whole, and
    /// in reads of 64 KiB; absent when the body lacks it.
    #[test]
    fn needle_at_the_end_of_an_8_mib_body_is_found_in_one_pass() {
        let needle = Needle::new(b"</html><!-- end -->");
        let mut body = b"<p>filler</p>".repeat(8 * 1024 * 1024 / 13);
        let without = body.clone();
        body.extend_from_slice(needle.as_bytes());
        assert!(matched_with_cuts(&body, &[], &needle), "read whole");
        let reads = |len: usize| (1..=len / 65536).map(|i| i * 65536).collect::<Vec<_>>();
        assert!(
            matched_with_cuts(&body, &reads(body.len()), &needle),
            "read in 64 KiB"
        );
        let last = body.len() - 5;
        assert!(
            matched_with_cuts(&body, &[last], &needle),
            "cut 5 bytes from its end"
        );
        let cuts = reads(without.len());
        assert!(!matched_with_cuts(&without, &cuts, &needle), "absent");
    }

    #[test]
    fn malformed_input_is_a_parse_error() {
        let cases: &[(&str, &[u8], ParseError)] = &[
            (
                "garbage",
                b"HTTX/9 banana\r\n\r\n",
                ParseError::Head("invalid HTTP version".into()),
            ),
            (
                "bad length",
                b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
                ParseError::ContentLength,
            ),
            (
                "signed length",
                b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello",
                ParseError::ContentLength,
            ),
            (
                "conflicting lengths",
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                ParseError::ContentLength,
            ),
            (
                "bad chunk size",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                ParseError::Chunk,
            ),
            (
                "chunk size line with no digit",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n\r\n",
                ParseError::Chunk,
            ),
            (
                "chunk extension with no size",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n;x=1\r\n\r\n",
                ParseError::Chunk,
            ),
            (
                "missing chunk CRLF",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
                ParseError::Chunk,
            ),
            (
                "truncated body",
                b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
                ParseError::Truncated,
            ),
        ];
        for (name, wire, want) in cases {
            assert_eq!(frame(wire, 4096, false, b"").unwrap_err(), *want, "{name}");
        }
    }

    #[test]
    fn oversized_head_is_refused_not_buffered_forever() {
        let mut wire = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        wire.resize(MAX_HEAD_BYTES + 10, b'a');
        let mut p = ResponseParser::default();
        assert_eq!(
            p.feed(&wire, false, &Needle::NONE),
            Err(ParseError::HeadTooLarge(MAX_HEAD_BYTES))
        );
    }
}

#[cfg(test)]
mod properties;
