//! A mix file read and checked (docs/MIX_FORMAT.md): the file's shape,
//! each mistake at its line with the fix, a path cut at its
//! `{random:A..B}` and `{one_of:a|b}` placeholders, and [`Mix::load`] / [`Mix::parse`].
//!
//! It never renders a request nor draws an endpoint (`render.rs` and
//! `mod.rs` do), and reads no file but the mix's own.

use super::{Mix, MixEndpoint, Piece};
use crate::load::response::ExpectStatus;
use crate::load::target;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use thiserror::Error;

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
            if v.contains("{random:") || v.contains("{one_of:") {
                return Err(at(h.span(), "placeholders are drawn in the path only: move it to the path, or write the header literally".into()));
            }
            headers.push((n, v));
        }
    }
    let body = match &e.body {
        Some(b) if b.get_ref().contains("{random:") || b.get_ref().contains("{one_of:") => {
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

/// Cuts a path at its `{random:A..B}` and `{one_of:a|b|c}` placeholders;
/// the error says what to write instead.
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
            format!("bad placeholder {what} in path \"{path}\": write {{random:A..B}} with whole numbers A <= B, e.g. {{random:1..1000}}, or {{one_of:a|b|c}} with one or more values")
        };
        if rest[open..].starts_with('}') {
            return Err(bad("'}'"));
        }
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            return Err(bad(&format!("'{}'", &rest[open..])));
        };
        let inner = &rest[open + 1..close];
        let Some(piece) = placeholder(inner) else {
            return Err(bad(&format!("'{{{inner}}}'")));
        };
        if open > 0 {
            pieces.push(Piece::Text(rest[..open].to_string()));
        }
        pieces.push(piece);
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    Ok(pieces)
}

/// What is between a placeholder's braces, when it is one.
fn placeholder(inner: &str) -> Option<Piece> {
    if let Some(values) = inner.strip_prefix("one_of:") {
        let values: Vec<String> = values.split('|').map(str::to_string).collect();
        return values
            .iter()
            .all(|v| !v.is_empty() && !v.contains('{'))
            .then_some(Piece::OneOf(values));
    }
    inner
        .strip_prefix("random:")
        .and_then(|r| r.split_once(".."))
        .and_then(|(a, b)| Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?)))
        .filter(|(a, b)| a <= b)
        .map(|(lo, hi)| Piece::Random { lo, hi })
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::mix::tests::BLOG;

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
        assert_eq!(
            parse_path("/r/{one_of:2026-11-28|a1b2}.csv").unwrap(),
            [
                Piece::Text("/r/".into()),
                Piece::OneOf(vec!["2026-11-28".into(), "a1b2".into()]),
                Piece::Text(".csv".into()),
            ]
        );
        for bad in ["/r/{one_of:}", "/r/{one_of:a||b}", "/r/{one_of:a"] {
            let err = parse_path(bad).unwrap_err();
            assert!(err.contains("{one_of:a|b|c}"), "{bad}: {err}");
        }
    }
}
