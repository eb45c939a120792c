//! Properties of the framing, for any bytes split at any points: it never
//! panics, it frames every input or refuses it with a [`ParseError`], and
//! its answer (the responses, and how the input ended) is the same however
//! the bytes arrive. Responses generated from a model (lengths, chunks
//! with extensions and trailers, a close, 1xx heads, HEAD and no-body
//! statuses, pipelined) frame as they were written, and cut short anywhere
//! end as a cut response must.
//!
//! Each property runs [`CASES`] cases in CI; the long run (a million) is
//! the ignored test at the end, recorded in bench/runs/2026-11-28-proptest.
//!
//! Tests only: it never frames anything the engine uses, and holds no
//! framing code of its own (that is all in mod.rs beside it).

use super::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Cases each property runs in CI: about 6 s for all of them in a
/// debug build on the 2-core test machine.
const CASES: u32 = 1_000;

/// The same cases on every run unless `PROPTEST_RNG_SEED` asks for
/// others (tests/properties.rs's `config` says why).
fn config(cases: u32) -> Config {
    let mut config = Config {
        cases,
        // A failure is kept as a named regression test, not a file.
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = proptest::test_runner::RngSeed::Fixed(36);
    }
    config
}

/// How a stream of bytes framed: the responses completed (the one a
/// close ended among them) and how the input ended: `Ok(n)` with `n`
/// bytes of an unfinished head left over (0: it ended between
/// responses), or the error that refused it.
#[derive(Debug, PartialEq)]
struct Framed {
    responses: Vec<Response>,
    end: Result<usize, ParseError>,
}

/// Feeds `wire` cut at `cuts` (offsets, in any order), as the loop
/// does: bytes not consumed wait for the next piece.
fn frame(wire: &[u8], cuts: &[usize], head: bool, needle: &[u8]) -> Framed {
    let mut at: Vec<usize> = cuts.iter().map(|&c| c.min(wire.len())).collect();
    at.push(wire.len());
    at.sort_unstable();
    at.dedup();
    let needle = &Needle::new(needle);
    let mut p = ResponseParser::default();
    let mut buf: Vec<u8> = Vec::new();
    let mut responses = Vec::new();
    let mut from = 0;
    for to in at {
        buf.extend_from_slice(&wire[from..to]);
        from = to;
        if let Err(e) = drain(&mut p, &mut buf, head, needle, &mut responses) {
            return Framed {
                responses,
                end: Err(e),
            };
        }
    }
    let end = match p.finish_at_eof(needle) {
        Ok(Some(r)) => {
            responses.push(r);
            Ok(buf.len())
        }
        Ok(None) => Ok(buf.len()),
        Err(e) => Err(e),
    };
    Framed { responses, end }
}

/// Frames what `buf` holds, keeping what the parser did not consume.
fn drain(
    p: &mut ResponseParser,
    buf: &mut Vec<u8>,
    head: bool,
    needle: &Needle,
    out: &mut Vec<Response>,
) -> Result<(), ParseError> {
    while !buf.is_empty() {
        match p.feed(buf, head, needle)? {
            Progress::Partial { consumed } => {
                assert!(
                    consumed <= buf.len(),
                    "consumed {consumed} of {}",
                    buf.len()
                );
                buf.drain(..consumed);
                return Ok(());
            }
            Progress::Complete { consumed, response } => {
                assert!(
                    (1..=buf.len()).contains(&consumed),
                    "a response of {consumed} bytes out of {}",
                    buf.len()
                );
                buf.drain(..consumed);
                out.push(response);
            }
        }
    }
    Ok(())
}

/// Pieces of HTTP, so that bytes drawn from them reach every phase of
/// the framing (uniform random bytes rarely get past the status line).
const WORDS: &[&[u8]] = &[
    b"HTTP/1.1 ",
    b"HTTP/1.0 ",
    b"200 OK",
    b"100 Continue",
    b"101 ",
    b"204 ",
    b"304 ",
    b"503 ",
    b"\r\n",
    b"\r\n\r\n",
    b"\n",
    b"Content-Length: ",
    b"content-length:",
    b"Transfer-Encoding: chunked",
    b"Transfer-Encoding: gzip, chunked",
    b"Connection: close",
    b"Connection: keep-alive",
    b"0",
    b"5",
    b"a",
    b"Ff",
    b"10000000000000000",
    b"18446744073709551616",
    b";ext=1",
    b": ",
    b"X: y",
    b" ",
    b"hello",
];

fn soup() -> impl Strategy<Value = Vec<u8>> {
    let word = prop_oneof![
        4 => proptest::sample::select(WORDS).prop_map(<[u8]>::to_vec),
        1 => proptest::collection::vec(any::<u8>(), 0..6),
    ];
    proptest::collection::vec(word, 0..40).prop_map(|w| w.concat())
}

/// Cut points anywhere in (or past) a wire of up to `len` bytes.
fn cuts(len: usize) -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0..=len, 0..24)
}

/// What a model response is framed by.
#[derive(Debug, Clone)]
enum Body {
    Length(Vec<u8>),
    /// Non-empty chunks; hex in upper case, an extension on each, and
    /// these trailer lines.
    Chunked {
        chunks: Vec<Vec<u8>>,
        upper: bool,
        ext: bool,
        trailers: Vec<String>,
    },
    /// Until the close: the last response of a wire only.
    Close(Vec<u8>),
}

/// One response as a server might write it.
#[derive(Debug, Clone)]
struct Model {
    /// `100 Continue` heads before it.
    interim: usize,
    http10: bool,
    status: u16,
    connection: Option<&'static str>,
    /// Headers that change nothing of the framing.
    extra: Vec<(String, String)>,
    body: Body,
}

/// A model response's bytes, and where its final head ends.
struct Written {
    /// Offsets of its heads' starts (interim ones, then the final one).
    heads: Vec<usize>,
    head_end: usize,
    end: usize,
}

impl Model {
    fn no_body(&self, head_request: bool) -> bool {
        head_request || self.status == 204 || self.status == 304
    }

    /// The body the parser counts off (empty when there is none).
    fn body(&self, head_request: bool) -> Vec<u8> {
        if self.no_body(head_request) {
            return Vec::new();
        }
        match &self.body {
            Body::Length(b) | Body::Close(b) => b.clone(),
            Body::Chunked { chunks, .. } => chunks.concat(),
        }
    }

    /// What the parser must answer when the response ends with
    /// `body` of it seen.
    fn expected(&self, head_request: bool, body: &[u8], needle: &[u8]) -> Response {
        let mut close = self.http10;
        for token in self.connection.unwrap_or("").split(',') {
            match token.trim().to_ascii_lowercase().as_str() {
                "close" => close = true,
                "keep-alive" => close = false,
                _ => {}
            }
        }
        let by_close = matches!(self.body, Body::Close(_)) && !self.no_body(head_request);
        Response {
            status: self.status,
            keep_alive: !close && !by_close,
            body_matched: needle.is_empty() || contains(body, needle),
        }
    }

    fn write(&self, head_request: bool, wire: &mut Vec<u8>) -> Written {
        let mut heads = Vec::new();
        for _ in 0..self.interim {
            heads.push(wire.len());
            wire.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        heads.push(wire.len());
        let version = if self.http10 { "1.0" } else { "1.1" };
        let mut head = format!("HTTP/{version} {} Whatever\r\n", self.status);
        for (k, v) in &self.extra {
            head += &format!("{k}: {v}\r\n");
        }
        if let Some(c) = self.connection {
            head += &format!("Connection: {c}\r\n");
        }
        match &self.body {
            Body::Length(b) => head += &format!("content-LENGTH: {}\r\n", b.len()),
            Body::Chunked { .. } => head += "Transfer-Encoding: gzip, Chunked\r\n",
            Body::Close(_) => {}
        }
        wire.extend_from_slice(head.as_bytes());
        wire.extend_from_slice(b"\r\n");
        let head_end = wire.len();
        if !self.no_body(head_request) {
            self.write_body(wire);
        }
        Written {
            heads,
            head_end,
            end: wire.len(),
        }
    }

    fn write_body(&self, wire: &mut Vec<u8>) {
        match &self.body {
            Body::Length(b) | Body::Close(b) => wire.extend_from_slice(b),
            Body::Chunked {
                chunks,
                upper,
                ext,
                trailers,
            } => {
                for c in chunks {
                    let size = if *upper {
                        format!("{:X}", c.len())
                    } else {
                        format!("{:x}", c.len())
                    };
                    let ext = if *ext { ";name=\"v\"" } else { "" };
                    wire.extend_from_slice(format!("{size}{ext}\r\n").as_bytes());
                    wire.extend_from_slice(c);
                    wire.extend_from_slice(b"\r\n");
                }
                wire.extend_from_slice(b"0\r\n");
                for t in trailers {
                    wire.extend_from_slice(format!("{t}\r\n").as_bytes());
                }
                wire.extend_from_slice(b"\r\n");
            }
        }
    }
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn body(last: bool) -> impl Strategy<Value = Body> {
    let chunked = (
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..40), 0..5),
        any::<bool>(),
        any::<bool>(),
        proptest::collection::vec("[A-Za-z-]{1,8}: [ -~]{0,12}", 0..3),
    )
        .prop_map(|(chunks, upper, ext, trailers)| Body::Chunked {
            chunks,
            upper,
            ext,
            trailers,
        });
    let close = if last { 1 } else { 0 };
    prop_oneof![
        3 => bytes(120).prop_map(Body::Length),
        3 => chunked,
        close => bytes(120).prop_map(Body::Close),
    ]
}

fn model(last: bool) -> impl Strategy<Value = Model> {
    let status = proptest::sample::select(&[200u16, 201, 204, 304, 404, 500, 503, 101][..]);
    let connection = proptest::option::of(proptest::sample::select(
        &[
            "close",
            "keep-alive",
            "Keep-Alive, Close",
            "CLOSE",
            "upgrade",
        ][..],
    ));
    let extra = proptest::collection::vec(("X-[A-Za-z]{1,10}", "[ -~]{0,20}"), 0..4);
    (
        0..3usize,
        any::<bool>(),
        status,
        connection,
        extra,
        body(last),
    )
        .prop_map(|(interim, http10, status, connection, extra, body)| Model {
            interim,
            http10,
            status,
            connection,
            extra,
            body,
        })
}

/// One to four pipelined responses, the last of which may end at the
/// close.
fn models() -> impl Strategy<Value = Vec<Model>> {
    (proptest::collection::vec(model(false), 0..4), model(true)).prop_map(|(mut v, last)| {
        v.push(last);
        v
    })
}

/// The responses' bytes and where each was written.
fn write_all(models: &[Model], head_request: bool) -> (Vec<u8>, Vec<Written>) {
    let mut wire = Vec::new();
    let written = models
        .iter()
        .map(|m| m.write(head_request, &mut wire))
        .collect();
    (wire, written)
}

/// The model's own substring test: the plainest scan there is, so that
/// the parser's (a `memmem` finder, fed piece by piece) is checked against
/// something it does not share.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A needle: a piece of the wire (often a body's) or a few bytes.
fn needle_in(wire: &[u8], pick: (usize, usize, bool)) -> Vec<u8> {
    let (at, len, from_wire) = pick;
    if !from_wire || wire.is_empty() {
        return Vec::new();
    }
    let at = at % wire.len();
    wire[at..(at + len % 6).min(wire.len())].to_vec()
}

/// What framing the first `cut` bytes of a model wire must answer.
fn expected_at(
    models: &[Model],
    written: &[Written],
    cut: usize,
    head: bool,
    needle: &[u8],
) -> Framed {
    let mut responses = Vec::new();
    for (m, w) in models.iter().zip(written) {
        if cut >= w.end {
            responses.push(m.expected(head, &m.body(head), needle));
            continue;
        }
        let by_close = matches!(m.body, Body::Close(_)) && !m.no_body(head);
        let end = if cut >= w.head_end && by_close {
            // The close ends the body where it was cut.
            let seen = &m.body(head)[..cut - w.head_end];
            responses.push(m.expected(head, seen, needle));
            Ok(0)
        } else if cut >= w.head_end {
            Err(ParseError::Truncated)
        } else {
            // Inside a head, or between two: what arrived of it waits.
            let start = w.heads.iter().rev().find(|&&h| h <= cut).copied();
            Ok(start.map_or(0, |s| cut - s))
        };
        return Framed { responses, end };
    }
    Framed {
        responses,
        end: Ok(0),
    }
}

fn check_split_alike(wire: &[u8], cuts: &[usize], head: bool, needle: &[u8]) {
    let whole = frame(wire, &[], head, needle);
    let split = frame(wire, cuts, head, needle);
    assert_eq!(split, whole, "cut at {cuts:?}");
    if wire.len() <= 256 {
        let every: Vec<usize> = (0..wire.len()).collect();
        assert_eq!(frame(wire, &every, head, needle), whole, "byte by byte");
    }
}

/// Any bytes (pieces of HTTP, or plain random), split anywhere:
/// framed alike, never a panic.
fn any_bytes_split_anywhere_frame_alike(runner: &mut TestRunner) {
    let input = prop_oneof![soup(), bytes(200)]
        .prop_flat_map(|wire| (cuts(wire.len()), Just(wire)))
        .prop_flat_map(|(cuts, wire)| (Just(wire), Just(cuts), any::<bool>(), bytes(4)));
    runner
        .run(&input, |(wire, cuts, head, needle)| {
            check_split_alike(&wire, &cuts, head, &needle);
            Ok(())
        })
        .unwrap();
}

/// Model responses, whole or with a few bytes changed, split anywhere:
/// whole, they frame as written; changed, at least alike.
fn model_responses_frame_as_written(runner: &mut TestRunner) {
    let input = (models(), any::<bool>()).prop_flat_map(|(models, head)| {
        let len = write_all(&models, head).0.len();
        let flips = proptest::collection::vec((0..len.max(1), any::<u8>()), 0..3);
        let pick = (0..len.max(1), 0..6usize, any::<bool>());
        (Just(models), Just(head), cuts(len), flips, pick)
    });
    runner
        .run(&input, |(models, head, cuts, flips, pick)| {
            let (mut wire, written) = write_all(&models, head);
            let needle = needle_in(&wire, pick);
            let want = expected_at(&models, &written, wire.len(), head, &needle);
            assert_eq!(frame(&wire, &cuts, head, &needle), want, "{models:?}");
            for (at, b) in flips {
                if let Some(x) = wire.get_mut(at) {
                    *x = b;
                }
            }
            check_split_alike(&wire, &cuts, head, &needle);
            Ok(())
        })
        .unwrap();
}

/// Model responses cut short anywhere: the ones before the cut frame,
/// a body cut by the close is refused as truncated unless the close
/// is what frames it, and a head cut short waits, unconsumed.
fn cut_responses_end_as_cut(runner: &mut TestRunner) {
    let input = (models(), any::<bool>()).prop_flat_map(|(models, head)| {
        let len = write_all(&models, head).0.len();
        let pick = (0..len.max(1), 0..6usize, any::<bool>());
        (Just(models), Just(head), 0..=len, cuts(len), pick)
    });
    runner
        .run(&input, |(models, head, cut, cuts, pick)| {
            let (wire, written) = write_all(&models, head);
            let needle = needle_in(&wire, pick);
            let want = expected_at(&models, &written, cut, head, &needle);
            assert_eq!(
                frame(&wire[..cut], &cuts, head, &needle),
                want,
                "cut at {cut}"
            );
            Ok(())
        })
        .unwrap();
}

/// A head, a chunk-size line or a trailer line of about
/// [`MAX_HEAD_BYTES`], split anywhere: framed alike, whether it
/// arrived whole or in pieces.
fn lines_near_the_limit_frame_alike(runner: &mut TestRunner) {
    let input =
        (0..3usize, MAX_HEAD_BYTES - 40..MAX_HEAD_BYTES + 8).prop_flat_map(|(which, len)| {
            let wire = long_line(which, len);
            let n = wire.len();
            (Just(wire), proptest::collection::vec(n - 60..=n, 1..4))
        });
    runner
        .run(&input, |(wire, cuts)| {
            check_split_alike(&wire, &cuts, false, b"");
            Ok(())
        })
        .unwrap();
}

/// A response whose head (0), chunk-size line (1) or trailer line (2)
/// is `len` bytes long, with its line end.
fn long_line(which: usize, len: usize) -> Vec<u8> {
    const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    let mut wire = Vec::new();
    match which {
        0 => {
            const END: &[u8] = b"\r\nContent-Length: 0\r\n\r\n";
            wire.extend_from_slice(b"HTTP/1.1 200 OK\r\nX: ");
            wire.resize(len - END.len(), b'a');
            wire.extend_from_slice(END);
        }
        1 => {
            wire.extend_from_slice(CHUNKED);
            let start = wire.len();
            wire.extend_from_slice(b"1;");
            wire.resize(start + len - 2, b'e');
            wire.extend_from_slice(b"\r\nx\r\n0\r\n\r\n");
        }
        _ => {
            wire.extend_from_slice(CHUNKED);
            wire.extend_from_slice(b"0\r\nX: ");
            let start = wire.len() - 3;
            wire.resize(start + len - 2, b't');
            wire.extend_from_slice(b"\r\n\r\n");
        }
    }
    wire
}

/// Regression: a chunk-size line (or a head, or a trailer line) over
/// the limit was framed when it arrived in one read and refused when
/// the limit's worth of it arrived first; now one over the limit is
/// refused and one at the limit framed, however it arrives.
#[test]
fn a_line_over_the_limit_is_refused_whole_or_in_pieces() {
    let over = Err(ParseError::HeadTooLarge(MAX_HEAD_BYTES));
    let cases: &[(&str, usize, Result<(), ParseError>)] = &[
        ("head", 0, over.clone()),
        ("chunk-size line", 1, Err(ParseError::Chunk)),
        ("trailer line", 2, Err(ParseError::Chunk)),
    ];
    for (name, which, refusal) in cases {
        for (len, want) in [
            (MAX_HEAD_BYTES, Ok(())),
            (MAX_HEAD_BYTES + 1, refusal.clone()),
        ] {
            let wire = long_line(*which, len);
            for cut in (wire.len() - 80..=wire.len()).step_by(3) {
                let got = frame(&wire, &[cut], false, b"");
                let got = got.end.map(|left| assert_eq!(left, 0));
                assert_eq!(got, want, "{name} of {len} bytes cut at {cut}");
            }
        }
    }
}

/// A chunk-size line must start with a hex digit (RFC 9112: chunk-size
/// is 1*HEXDIG): any other is refused, however it goes on.
fn a_chunk_size_with_no_digit_is_refused(runner: &mut TestRunner) {
    let first = any::<u8>().prop_filter("not a hex digit", |b| !b.is_ascii_hexdigit());
    runner
        .run(&(first, bytes(20), cuts(80)), |(first, tail, cuts)| {
            let mut wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            wire.push(first);
            wire.extend_from_slice(&tail);
            wire.extend_from_slice(b"\r\n0\r\n\r\n");
            let got = frame(&wire, &cuts, false, b"");
            assert_eq!(got.end, Err(ParseError::Chunk), "{wire:?}");
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_chunk_size_with_no_digit_is_refused_in_ci() {
    a_chunk_size_with_no_digit_is_refused(&mut TestRunner::new(config(CASES)));
}

#[test]
fn lines_near_the_limit_frame_alike_in_ci() {
    lines_near_the_limit_frame_alike(&mut TestRunner::new(config(CASES / 10)));
}

#[test]
fn any_bytes_split_anywhere_frame_alike_in_ci() {
    any_bytes_split_anywhere_frame_alike(&mut TestRunner::new(config(CASES)));
}

#[test]
fn model_responses_frame_as_written_in_ci() {
    model_responses_frame_as_written(&mut TestRunner::new(config(CASES)));
}

#[test]
fn cut_responses_end_as_cut_in_ci() {
    cut_responses_end_as_cut(&mut TestRunner::new(config(CASES)));
}

/// The long run: a million cases of each (bench/runs/2026-11-28-proptest
/// has the command and what it took).
#[test]
#[ignore = "a million cases each; run by hand in release, see bench/runs/2026-11-28-proptest"]
fn a_million_cases_each() {
    let cases = 1_000_000;
    any_bytes_split_anywhere_frame_alike(&mut TestRunner::new(config(cases)));
    model_responses_frame_as_written(&mut TestRunner::new(config(cases)));
    cut_responses_end_as_cut(&mut TestRunner::new(config(cases)));
    lines_near_the_limit_frame_alike(&mut TestRunner::new(config(cases / 100)));
}
