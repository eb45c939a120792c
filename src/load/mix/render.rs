//! A mix's requests rendered for a host and written per request: each
//! endpoint's request as fixed bytes with the path's placeholders as
//! gaps, and [`Mix::write`] putting the drawn integers between them
//! without allocating.
//!
//! It never checks a file nor chooses an endpoint (`file.rs` and
//! `mod.rs` do).

use super::{Draw, Fill, Gap, Mix, MixEndpoint, Piece, Rendered, ENDPOINT_HEADER};
use crate::load::target::{self, RequestSpec, TargetError, Url};

impl Mix {
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
    /// Appends endpoint `ep`'s request to `out`, its placeholders drawn
    /// from `draw`. Needs [`Mix::render`] first.
    #[inline]
    pub fn write(&self, ep: u32, draw: &mut Draw, out: &mut Vec<u8>) {
        let r = &self.rendered[ep as usize];
        let mut from = 0;
        for g in &r.gaps {
            out.extend_from_slice(&r.fixed[from..g.at]);
            match &g.fill {
                Fill::Random { lo, span: 0 } => {
                    write_decimal(lo.wrapping_add(draw.next_u64()), out)
                }
                Fill::Random { lo, span } => write_decimal(lo + draw.below(*span), out),
                Fill::OneOf(values) => {
                    out.extend_from_slice(&values[draw.below(values.len() as u64) as usize])
                }
            }
            from = g.at;
        }
        out.extend_from_slice(&r.fixed[from..]);
    }
}

/// Renders one endpoint's request with a NUL where each placeholder goes,
/// then cuts it there: the same bytes `target::render_request` makes for
/// a single URL, so a mix of one endpoint sends what `load URL` sends
/// (plus its endpoint header).
fn render_endpoint(e: &MixEndpoint, url: &Url, keep_alive: bool) -> Result<Rendered, TargetError> {
    let mut path = String::new();
    let mut fills = Vec::new();
    for p in &e.pieces {
        match p {
            Piece::Text(t) => path.push_str(t),
            Piece::Random { lo, hi } => {
                path.push('\0');
                fills.push(Fill::Random {
                    lo: *lo,
                    span: (hi - lo).wrapping_add(1),
                });
            }
            Piece::OneOf(values) => {
                path.push('\0');
                fills.push(Fill::OneOf(
                    values.iter().map(|v| v.clone().into_bytes()).collect(),
                ));
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
    let mut gaps = Vec::with_capacity(fills.len());
    let mut fills = fills.into_iter();
    // Only the request line holds NULs (the path has none of its own).
    let line_end = bytes
        .windows(2)
        .position(|w| w == b"\r\n")
        .unwrap_or(bytes.len());
    for (i, &b) in bytes.iter().enumerate() {
        if b == 0 && i < line_end {
            gaps.push(Gap {
                at: fixed.len(),
                fill: fills.next().expect("one fill per NUL"),
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
#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::mix::tests::{url, BLOG};

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
    fn one_of_draws_every_value_and_none_other() {
        let m = Mix::parse(
            "[[endpoint]]\nname = \"a\"\npath = \"/u/{one_of:0b9e|c3-x|2026-11-28}.json\"\n",
            "t",
        )
        .unwrap()
        .render(&url(), true)
        .unwrap();
        let mut d = Draw::new(1, 0, 1);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..300 {
            let r = request(&m, 0, &mut d);
            let id = r
                .strip_prefix("GET /u/")
                .unwrap()
                .split_once(".json ")
                .unwrap()
                .0;
            seen.insert(id.to_string());
        }
        assert_eq!(
            seen.into_iter().collect::<Vec<_>>(),
            ["0b9e", "2026-11-28", "c3-x"]
        );
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
