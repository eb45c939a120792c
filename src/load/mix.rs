//! A request mix (`--mix FILE`, docs/MIX_FORMAT.md): endpoints drawn by
//! weight, each with its own request and its own idea of a good answer.
//!
//! The file is read and checked once, each mistake at its line with the
//! fix. It is then rendered once for a host: each endpoint's request
//! becomes fixed bytes (request line, Host, headers with
//! `X-Rackbench-Endpoint: NAME`, Content-Length, Connection as the run
//! says, body) with the path's placeholders as gaps, so per request the
//! loop only draws an endpoint and writes the drawn integers between the
//! fixed pieces into a buffer it keeps ([`Mix::write`]): no allocation,
//! no formatting of headers.
//!
//! The draw is deterministic: each load thread has two [`Draw`] streams
//! seeded from the mix's seed and the thread's lane, one for the
//! endpoints (in the order requests are issued) and one for the
//! placeholders (in the order they are written), and an endpoint is
//! found by a binary search of the cumulative weights.
//!
//! A mix never does I/O but read its own file, and never judges or
//! counts an answer (the loop and the recorder do, by its endpoints).

use super::response::ExpectStatus;
use super::target::{self, RequestSpec, TargetError, Url};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use thiserror::Error;

/// The header every request of a mix carries, naming its endpoint (the
/// server-side telemetry groups by it).
pub const ENDPOINT_HEADER: &str = "X-Rackbench-Endpoint";

/// A mix file's mistake, at its line.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum MixError {
    #[error("{file}, line {line}: {message}")]
    At {
        file: String,
        line: usize,
        message: String,
    },
    #[error(
        "cannot read mix file {file}: {message}: give the path of a mix file (docs/MIX_FORMAT.md)"
    )]
    Read { file: String, message: String },
}

/// One endpoint of a mix, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct MixEndpoint {
    pub name: String,
    pub method: String,
    /// The path as the file wrote it, placeholders unexpanded.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub weight: f64,
    pub expect_status: ExpectStatus,
    /// Substring the body must contain; empty for no check.
    pub expect_body: Vec<u8>,
    /// The path cut at its placeholders.
    pieces: Vec<Piece>,
}

impl MixEndpoint {
    /// The request is HEAD: its answer carries no body.
    pub fn is_head(&self) -> bool {
        self.method == "HEAD"
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    /// `{random:lo..hi}`: a uniform integer in lo..=hi.
    Random {
        lo: u64,
        hi: u64,
    },
}

/// One endpoint's request, rendered for a host: `fixed` with the drawn
/// integers written at `gaps` (offsets into `fixed`, in order).
#[derive(Debug, Clone, PartialEq)]
struct Rendered {
    fixed: Vec<u8>,
    gaps: Vec<Gap>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Gap {
    at: usize,
    lo: u64,
    /// hi - lo + 1, or 0 for the whole u64 range.
    span: u64,
}

/// A checked mix; [`Mix::render`] makes the requests for a host.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix {
    /// The file it came from, as given (for the equivalent command).
    pub file: String,
    /// The file's `seed`; None when it has none.
    pub file_seed: Option<u64>,
    /// The seed of the draw: the file's, else the run's, else 1.
    pub seed: u64,
    pub endpoints: Vec<MixEndpoint>,
    /// Cumulative weights, one per endpoint.
    cumulative: Vec<f64>,
    /// Empty until rendered.
    rendered: Vec<Rendered>,
}

// The file's shape. Spans give each mistake its line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMix {
    seed: Option<u64>,
    #[serde(default)]
    endpoint: Vec<FileEndpoint>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEndpoint {
    name: toml::Spanned<String>,
    method: Option<toml::Spanned<String>>,
    path: toml::Spanned<String>,
    headers: Option<toml::Spanned<BTreeMap<String, String>>>,
    body: Option<toml::Spanned<String>>,
    weight: Option<toml::Spanned<f64>>,
    expect: Option<toml::Spanned<FileExpect>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileExpect {
    status: Option<FileStatus>,
    body: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum FileStatus {
    One(u16),
    Many(Vec<u16>),
}

/// The line (from 1) of byte offset `at` in `text`.
fn line_at(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

impl Mix {
    /// Reads and checks the mix file at `path`.
    pub fn load(path: &Path) -> Result<Mix, MixError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| MixError::Read {
            file: file.clone(),
            message: e.to_string(),
        })?;
        Mix::parse(&text, &file)
    }

    /// Checks a mix file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Mix, MixError> {
        let at = |span: std::ops::Range<usize>, message: String| MixError::At {
            file: file.to_string(),
            line: line_at(text, span.start),
            message,
        };
        let raw: FileMix = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().to_string();
            let fix = if message.starts_with("unknown field") {
                ": remove it, or check its spelling (docs/MIX_FORMAT.md lists the fields)"
            } else {
                " (docs/MIX_FORMAT.md shows the format)"
            };
            at(e.span().unwrap_or(0..0), format!("{message}{fix}"))
        })?;
        if raw.endpoint.is_empty() {
            return Err(at(
                0..0,
                "no endpoint: add an [[endpoint]] table with a name and a path".into(),
            ));
        }
        let mut endpoints: Vec<MixEndpoint> = Vec::with_capacity(raw.endpoint.len());
        for e in raw.endpoint {
            let ep = check_endpoint(e, &at)?;
            if let Some(first) = endpoints.iter().find(|o| o.name == ep.name) {
                return Err(MixError::At {
                    file: file.to_string(),
                    line: line_of_name(text, &first.name, 2),
                    message: format!(
                        "endpoint name \"{}\" is given twice: give each endpoint its own name",
                        ep.name
                    ),
                });
            }
            endpoints.push(ep);
        }
        let total: f64 = endpoints.iter().map(|e| e.weight).sum();
        if total <= 0.0 {
            return Err(MixError::At {
                file: file.to_string(),
                line: text
                    .lines()
                    .position(|l| l.trim_start().starts_with("weight"))
                    .map_or(1, |i| i + 1),
                message: "every endpoint has weight 0: give at least one a weight above 0 \
                          (weight = 1, or leave weight out)"
                    .into(),
            });
        }
        let cumulative = endpoints
            .iter()
            .scan(0.0, |sum, e| {
                *sum += e.weight;
                Some(*sum)
            })
            .collect();
        Ok(Mix {
            file: file.to_string(),
            file_seed: raw.seed,
            seed: raw.seed.unwrap_or(1),
            endpoints,
            cumulative,
            rendered: Vec::new(),
        })
    }

    /// The draw's seed: the file's if it has one, else `run_seed`.
    pub fn with_run_seed(mut self, run_seed: u64) -> Mix {
        self.seed = self.file_seed.unwrap_or(run_seed);
        self
    }

    /// The requests rendered for `url`'s host (its path is not used),
    /// with `Connection: close` unless `keep_alive`.
    pub fn render(&self, url: &Url, keep_alive: bool) -> Result<Mix, TargetError> {
        let rendered = self
            .endpoints
            .iter()
            .map(|e| render_endpoint(e, url, keep_alive))
            .collect::<Result<_, _>>()?;
        Ok(Mix {
            rendered,
            ..self.clone()
        })
    }

    /// Whether [`Mix::render`] has made the requests.
    pub fn is_rendered(&self) -> bool {
        self.rendered.len() == self.endpoints.len()
    }

    /// Draws an endpoint by weight.
    #[inline]
    pub fn pick(&self, draw: &mut Draw) -> u32 {
        let total = *self.cumulative.last().expect("a mix has an endpoint");
        let u = draw.unit() * total;
        // The first endpoint whose cumulative weight is above u: a zero
        // weight (equal to its predecessor's) is never it.
        let i = self.cumulative.partition_point(|&c| c <= u);
        i.min(self.endpoints.len() - 1) as u32
    }

    /// Appends endpoint `ep`'s request to `out`, its placeholders drawn
    /// from `draw`. Needs [`Mix::render`] first.
    #[inline]
    pub fn write(&self, ep: u32, draw: &mut Draw, out: &mut Vec<u8>) {
        let r = &self.rendered[ep as usize];
        let mut from = 0;
        for g in &r.gaps {
            out.extend_from_slice(&r.fixed[from..g.at]);
            let v = if g.span == 0 {
                draw.next_u64()
            } else {
                g.lo + draw.below(g.span)
            };
            write_decimal(v, out);
            from = g.at;
        }
        out.extend_from_slice(&r.fixed[from..]);
    }
}

/// The line of the `count`-th `name = "NAME"` (1 if none).
fn line_of_name(text: &str, name: &str, count: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim_start();
            l.starts_with("name") && l.contains(&format!("\"{name}\""))
        })
        .nth(count - 1)
        .map_or(1, |(i, _)| i + 1)
}

fn check_endpoint(
    e: FileEndpoint,
    at: &impl Fn(std::ops::Range<usize>, String) -> MixError,
) -> Result<MixEndpoint, MixError> {
    let name = e.name.get_ref();
    let valid_name = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !valid_name {
        return Err(at(
            e.name.span(),
            format!(
                "endpoint name \"{name}\": use lower-case letters, digits, _ and - (e.g. \"post_show\")"
            ),
        ));
    }
    let method = match &e.method {
        Some(m) => {
            let up = m.get_ref().to_ascii_uppercase();
            if up.is_empty() || !up.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(at(
                    m.span(),
                    format!(
                        "method \"{}\": use a method such as GET, POST or HEAD",
                        m.get_ref()
                    ),
                ));
            }
            up
        }
        None => "GET".to_string(),
    };
    let path = e.path.get_ref().clone();
    let pieces = parse_path(&path).map_err(|why| at(e.path.span(), why))?;
    let mut headers = Vec::new();
    if let Some(h) = &e.headers {
        for (n, v) in h.get_ref() {
            let (n, v) = target::parse_header(&format!("{n}: {v}"))
                .map_err(|_| at(h.span(), format!("header \"{n}\": write it as Name = \"value\" with a token name and a one-line value")))?;
            if v.contains("{random:") {
                return Err(at(h.span(), "placeholders are drawn in the path only: move it to the path, or write the header literally".into()));
            }
            headers.push((n, v));
        }
    }
    let body = match &e.body {
        Some(b) if b.get_ref().contains("{random:") => {
            return Err(at(
                b.span(),
                "placeholders are drawn in the path only: move it to the path, or write the body literally".into(),
            ))
        }
        Some(b) => b.get_ref().clone().into_bytes(),
        None => Vec::new(),
    };
    let weight = match &e.weight {
        Some(w) if !(w.get_ref().is_finite() && *w.get_ref() >= 0.0) => {
            return Err(at(
                w.span(),
                format!(
                    "weight {}: give a number of 0 or more (default 1)",
                    w.get_ref()
                ),
            ))
        }
        Some(w) => *w.get_ref(),
        None => 1.0,
    };
    let (expect_status, expect_body) = match &e.expect {
        None => (ExpectStatus::Success, Vec::new()),
        Some(x) => {
            let codes = match &x.get_ref().status {
                None => None,
                Some(FileStatus::One(c)) => Some(vec![*c]),
                Some(FileStatus::Many(c)) => Some(c.clone()),
            };
            if let Some(bad) = codes.iter().flatten().find(|c| !(100..=599).contains(*c)) {
                return Err(at(
                    x.span(),
                    format!("expect status {bad}: give an HTTP status from 100 to 599 (or a list of them)"),
                ));
            }
            if codes.as_ref().is_some_and(|c| c.is_empty()) {
                return Err(at(
                    x.span(),
                    "expect status []: give a status or a list of them, or leave status out for 2xx and 3xx".into(),
                ));
            }
            (
                codes.map_or(ExpectStatus::Success, ExpectStatus::Codes),
                x.get_ref().body.clone().unwrap_or_default().into_bytes(),
            )
        }
    };
    Ok(MixEndpoint {
        name: name.clone(),
        method,
        path,
        headers,
        body,
        weight,
        expect_status,
        expect_body,
        pieces,
    })
}

/// Cuts a path at its `{random:A..B}` placeholders; the error says what
/// to write instead.
fn parse_path(path: &str) -> Result<Vec<Piece>, String> {
    if !path.starts_with('/') {
        return Err(format!(
            "path \"{path}\" does not start with /: write it as \"/{}\"",
            path.trim_start_matches('/')
        ));
    }
    if let Some(c) = path.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "path \"{path}\" holds {c:?}: percent-encode it (a space is %20)"
        ));
    }
    let mut pieces = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find(['{', '}']) {
        let bad = |what: &str| {
            format!("bad placeholder {what} in path \"{path}\": write {{random:A..B}} with whole numbers A <= B, e.g. {{random:1..1000}}")
        };
        if rest[open..].starts_with('}') {
            return Err(bad("'}'"));
        }
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            return Err(bad(&format!("'{}'", &rest[open..])));
        };
        let inner = &rest[open + 1..close];
        let range = inner
            .strip_prefix("random:")
            .and_then(|r| r.split_once(".."))
            .and_then(|(a, b)| Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?)))
            .filter(|(a, b)| a <= b);
        let Some((lo, hi)) = range else {
            return Err(bad(&format!("'{{{inner}}}'")));
        };
        if open > 0 {
            pieces.push(Piece::Text(rest[..open].to_string()));
        }
        pieces.push(Piece::Random { lo, hi });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    Ok(pieces)
}

/// Renders one endpoint's request with a NUL where each placeholder goes,
/// then cuts it there: the same bytes `target::render_request` makes for
/// a single URL, so a mix of one endpoint sends what `load URL` sends
/// (plus its endpoint header).
fn render_endpoint(e: &MixEndpoint, url: &Url, keep_alive: bool) -> Result<Rendered, TargetError> {
    let mut path = String::new();
    let mut ranges = Vec::new();
    for p in &e.pieces {
        match p {
            Piece::Text(t) => path.push_str(t),
            Piece::Random { lo, hi } => {
                path.push('\0');
                ranges.push((*lo, *hi));
            }
        }
    }
    let mut headers = e.headers.clone();
    headers.push((ENDPOINT_HEADER.to_string(), e.name.clone()));
    let spec = RequestSpec {
        method: e.method.clone(),
        headers,
        body: e.body.clone(),
        keep_alive,
    };
    let url = Url {
        path,
        ..url.clone()
    };
    let bytes = target::render_request(&url, &spec)?;
    let mut fixed = Vec::with_capacity(bytes.len());
    let mut gaps = Vec::with_capacity(ranges.len());
    let mut ranges = ranges.into_iter();
    // Only the request line holds NULs (the path has none of its own).
    let line_end = bytes
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(bytes.len());
    for (i, &b) in bytes.iter().enumerate() {
        if b == 0 && i < line_end {
            let (lo, hi) = ranges.next().expect("one range per NUL");
            gaps.push(Gap {
                at: fixed.len(),
                lo,
                span: (hi - lo).wrapping_add(1),
            });
        } else {
            fixed.push(b);
        }
    }
    Ok(Rendered { fixed, gaps })
}

/// Writes `v` in decimal, without allocating.
#[inline]
fn write_decimal(mut v: u64, out: &mut Vec<u8>) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// A small, fast generator (splitmix64), written out here so a seed draws
/// the same requests in every future version.
#[derive(Debug, Clone)]
pub struct Draw {
    state: u64,
}

impl Draw {
    /// Stream `stream` of lane `lane` under `seed`: lanes (threads, and
    /// segments' threads) draw apart, and so do a lane's streams.
    pub fn new(seed: u64, lane: u64, stream: u64) -> Draw {
        let mut d = Draw {
            state: seed
                ^ lane.wrapping_mul(0xA24B_AED4_963E_E407)
                ^ stream.wrapping_mul(0x9FB2_1C65_1E98_DF25),
        };
        // Stir once, so neighbouring seeds start far apart.
        d.next_u64();
        d
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in 0..n (n > 0), by multiplication (Lemire's method,
    /// without the rejection step: the bias is below n / 2^64).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOG: &str = r#"# The blog's mix.
seed = 7

[[endpoint]]
name = "index"
path = "/posts?page={random:1..10}"
weight = 50
expect = { status = 200, body = "Posts" }

[[endpoint]]
name = "comment"
method = "post"
path = "/posts/{random:1..1000}/comments"
headers = { Accept = "text/html" }
body = "comment[body]=hi"
weight = 5
expect = { status = [200, 302] }

[[endpoint]]
name = "never"
path = "/never"
weight = 0
"#;

    fn url() -> Url {
        Url::parse("http://127.0.0.1:8080/").unwrap()
    }

    #[test]
    fn a_mix_file_reads_with_its_defaults() {
        let m = Mix::parse(BLOG, "blog.toml").unwrap();
        assert_eq!(m.seed, 7);
        let names: Vec<&str> = m.endpoints.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["index", "comment", "never"]);
        let index = &m.endpoints[0];
        assert_eq!(index.method, "GET");
        assert_eq!(index.weight, 50.0);
        assert_eq!(index.expect_status, ExpectStatus::Codes(vec![200]));
        assert_eq!(index.expect_body, b"Posts");
        let comment = &m.endpoints[1];
        assert_eq!(comment.method, "POST");
        assert_eq!(comment.expect_status, ExpectStatus::Codes(vec![200, 302]));
        assert_eq!(
            comment.headers,
            [("Accept".to_string(), "text/html".to_string())]
        );
        let never = &m.endpoints[2];
        assert_eq!(never.weight, 0.0);
        assert_eq!(never.expect_status, ExpectStatus::Success);
        let one = Mix::parse("[[endpoint]]\nname = \"a\"\npath = \"/\"\n", "a.toml").unwrap();
        assert_eq!(
            (one.seed, one.file_seed, one.endpoints[0].weight),
            (1, None, 1.0)
        );
        assert_eq!(one.clone().with_run_seed(9).seed, 9);
        assert_eq!(m.with_run_seed(9).seed, 7, "the file's seed wins");
    }

    #[test]
    fn each_bad_mix_is_refused_at_its_line_with_the_fix() {
        let ep = |body: &str| format!("seed = 1\n\n[[endpoint]]\nname = \"a\"\n{body}\n");
        let rows: &[(String, &str)] = &[
            (
                ep("path = \"/\"\nwieght = 3"),
                "line 6: unknown field `wieght`",
            ),
            (
                ep("path = \"/\"\nwieght = 3"),
                "remove it, or check its spelling",
            ),
            (
                format!("color = 1\n{}", ep("path = \"/\"")),
                "line 1: unknown field `color`",
            ),
            (
                ep("path = \"/\"\nweight = 0"),
                "line 6: every endpoint has weight 0: give at least one a weight above 0",
            ),
            (
                ep("path = \"posts\""),
                "line 5: path \"posts\" does not start with /: write it as \"/posts\"",
            ),
            (
                ep("path = \"/p/{random:5..1}\""),
                "line 5: bad placeholder '{random:5..1}'",
            ),
            (
                ep("path = \"/p/{rand:1..5}\""),
                "write {random:A..B} with whole numbers A <= B",
            ),
            (ep("path = \"/p/{random:1..x}\""), "line 5: bad placeholder"),
            (
                ep("path = \"/p/{random:1..5\""),
                "line 5: bad placeholder '{random:1..5'",
            ),
            (
                ep("path = \"/p/a b\""),
                "line 5: path \"/p/a b\" holds ' ': percent-encode it",
            ),
            (
                ep("path = \"/\"\nweight = -2"),
                "line 6: weight -2: give a number of 0 or more",
            ),
            (
                ep("path = \"/\"\nmethod = \"G T\""),
                "line 6: method \"G T\"",
            ),
            (
                ep("path = \"/\"\nexpect = { status = 99 }"),
                "line 6: expect status 99: give an HTTP status from 100 to 599",
            ),
            (
                ep("path = \"/\"\nexpect = { code = 200 }"),
                "unknown field `code`",
            ),
            (
                ep("path = \"/\"\nbody = \"id={random:1..3}\""),
                "line 6: placeholders are drawn in the path only",
            ),
            (
                "seed = 1\n".to_string(),
                "line 1: no endpoint: add an [[endpoint]] table",
            ),
            (
                format!(
                    "{}[[endpoint]]\nname = \"a\"\npath = \"/b\"\n",
                    ep("path = \"/\"")
                ),
                "line 7: endpoint name \"a\" is given twice",
            ),
            (
                ep("path = \"/\"").replace("\"a\"", "\"Big One\""),
                "line 4: endpoint name \"Big One\": use lower-case letters",
            ),
            (
                "[[endpoint]]\nname = \"a\"\n".to_string(),
                "missing field `path`",
            ),
        ];
        for (text, want) in rows {
            let err = Mix::parse(text, "m.toml").unwrap_err().to_string();
            assert!(err.starts_with("m.toml, line "), "{err}");
            assert!(
                err.contains(want),
                "want {want:?} in: {err}\n--- for:\n{text}"
            );
        }
    }

    #[test]
    fn placeholders_are_cut_out_of_the_path() {
        let p = parse_path("/posts/{random:1..1000}/c?x={random:0..0}").unwrap();
        assert_eq!(
            p,
            [
                Piece::Text("/posts/".into()),
                Piece::Random { lo: 1, hi: 1000 },
                Piece::Text("/c?x=".into()),
                Piece::Random { lo: 0, hi: 0 },
            ]
        );
        assert_eq!(
            parse_path("/plain").unwrap(),
            [Piece::Text("/plain".into())]
        );
    }

    /// The request of endpoint `ep` with its placeholders drawn.
    fn request(m: &Mix, ep: u32, d: &mut Draw) -> String {
        let mut out = Vec::new();
        m.write(ep, d, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_rendered_request_holds_its_drawn_integers_and_its_endpoint_header() {
        let m = Mix::parse(BLOG, "blog.toml")
            .unwrap()
            .render(&url(), true)
            .unwrap();
        let mut d = Draw::new(1, 0, 1);
        for _ in 0..200 {
            let r = request(&m, 1, &mut d);
            let id: u64 = r
                .strip_prefix("POST /posts/")
                .and_then(|r| r.split_once('/'))
                .unwrap()
                .0
                .parse()
                .unwrap();
            assert!((1..=1000).contains(&id), "{r}");
            assert!(
                r.ends_with(
                    "/comments HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Length: 16\r\n\
                 Accept: text/html\r\nX-Rackbench-Endpoint: comment\r\n\r\ncomment[body]=hi"
                ),
                "{r}"
            );
        }
        let closing = Mix::parse(BLOG, "b")
            .unwrap()
            .render(&url(), false)
            .unwrap();
        let r = request(&closing, 2, &mut d);
        assert_eq!(
            r,
            "GET /never HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: close\r\n\
             X-Rackbench-Endpoint: never\r\n\r\n"
        );
        // Every value of a small range comes up, and none outside it.
        let tiny = Mix::parse(
            "[[endpoint]]\nname = \"a\"\npath = \"/{random:3..5}\"\n",
            "t",
        )
        .unwrap()
        .render(&url(), true)
        .unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let r = request(&tiny, 0, &mut d);
            seen.insert(r[5..6].to_string());
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["3", "4", "5"]);
        let wide = Mix::parse(
            "[[endpoint]]\nname = \"a\"\npath = \"/{random:0..18446744073709551615}\"\n",
            "t",
        )
        .unwrap()
        .render(&url(), true)
        .unwrap();
        assert!(request(&wide, 0, &mut d).starts_with("GET /"));
    }

    #[test]
    fn the_draw_follows_the_weights_and_a_seed_repeats_it() {
        let m = Mix::parse(BLOG, "blog.toml").unwrap();
        let draws = |seed: u64, lane: u64| -> Vec<u32> {
            let mut d = Draw::new(seed, lane, 0);
            (0..55_000).map(|_| m.pick(&mut d)).collect()
        };
        let a = draws(7, 0);
        assert_eq!(a, draws(7, 0), "the same seed and lane draw the same");
        assert_ne!(a, draws(7, 1), "lanes draw apart");
        assert_ne!(a, draws(8, 0), "seeds draw apart");
        let count = |e: u32| a.iter().filter(|&&x| x == e).count() as f64;
        // 50 : 5 : 0 over 55,000 draws: 50,000 and 5,000 expected, sd
        // about 68; 5 sd either side.
        assert!((count(0) - 50_000.0).abs() < 350.0, "{}", count(0));
        assert!((count(1) - 5_000.0).abs() < 350.0, "{}", count(1));
        assert_eq!(count(2), 0.0, "weight 0 is never drawn");
    }

    #[test]
    fn decimals_are_written_without_formatting() {
        for v in [0u64, 7, 10, 999, 1_000_000, u64::MAX] {
            let mut out = b"x".to_vec();
            write_decimal(v, &mut out);
            assert_eq!(out, format!("x{v}").into_bytes());
        }
    }
}
