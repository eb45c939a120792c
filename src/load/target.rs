//! Where the load goes and the exact bytes of the request sent there.
//!
//! The request is rendered once into a byte template that every connection
//! shares; the hot loop only ever copies it to the socket.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TargetError {
    #[error("'{0}' is not an http:// URL: write it as http://127.0.0.1:8080/path (https is not supported)")]
    Scheme(String),
    #[error("'{0}' has no host: write it as http://127.0.0.1:8080/path")]
    NoHost(String),
    #[error("'{url}' has an invalid port '{port}': use a number from 1 to 65535")]
    Port { url: String, port: String },
    #[error("cannot resolve host '{0}': use an IP address such as 127.0.0.1 or [::1]")]
    Resolve(String),
    #[error("invalid header '{0}': write it as 'Name: value'")]
    Header(String),
    #[error("invalid method '{0}': use a token such as GET, POST or HEAD")]
    Method(String),
}

/// Where connections are made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp(a) => write!(f, "{a}"),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// A parsed `http://host[:port]/path?query` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub host: String,
    pub port: u16,
    /// Path and query, always starting with '/'.
    pub path: String,
}

impl Url {
    pub fn parse(s: &str) -> Result<Url, TargetError> {
        let rest = s
            .strip_prefix("http://")
            .ok_or_else(|| TargetError::Scheme(s.to_string()))?;
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| TargetError::NoHost(s.to_string()))?;
            (h, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(TargetError::NoHost(s.to_string()));
        }
        let port = match port {
            None => 80,
            Some(p) => {
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p > 0)
                    .ok_or_else(|| TargetError::Port {
                        url: s.to_string(),
                        port: p.to_string(),
                    })?
            }
        };
        Ok(Url {
            host: host.to_string(),
            port,
            path,
        })
    }

    /// The value of the Host header.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == 80 {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    pub fn resolve(&self) -> Result<SocketAddr, TargetError> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| TargetError::Resolve(self.host.clone()))
    }
}

/// What to send, rendered once.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub keep_alive: bool,
}

impl Default for RequestSpec {
    fn default() -> Self {
        RequestSpec {
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
            keep_alive: true,
        }
    }
}

/// Splits `Name: value` as given on the command line.
pub fn parse_header(s: &str) -> Result<(String, String), TargetError> {
    let (name, value) = s
        .split_once(':')
        .ok_or_else(|| TargetError::Header(s.to_string()))?;
    let name = name.trim();
    let valid_name = !name.is_empty() && name.bytes().all(is_token_byte);
    if !valid_name || value.contains(['\r', '\n']) {
        return Err(TargetError::Header(s.to_string()));
    }
    Ok((name.to_string(), value.trim().to_string()))
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Renders the request bytes. User headers override the defaults of the
/// same name (Host, Connection, Content-Length).
///
/// A plain GET is the request line and Host, byte for byte what wrk sends:
/// every header is work for the server under test (nginx looks for browser
/// names in a User-Agent on every request), so the default adds none, and
/// generators compared side by side send the same request.
pub fn render_request(url: &Url, spec: &RequestSpec) -> Result<Vec<u8>, TargetError> {
    if spec.method.is_empty() || !spec.method.bytes().all(is_token_byte) {
        return Err(TargetError::Method(spec.method.clone()));
    }
    let has = |name: &str| {
        spec.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let mut out = format!("{} {} HTTP/1.1\r\n", spec.method, url.path);
    if !has("host") {
        out.push_str(&format!("Host: {}\r\n", url.host_header()));
    }
    if !spec.keep_alive && !has("connection") {
        out.push_str("Connection: close\r\n");
    }
    if (!spec.body.is_empty() || matches!(spec.method.as_str(), "POST" | "PUT" | "PATCH"))
        && !has("content-length")
    {
        out.push_str(&format!("Content-Length: {}\r\n", spec.body.len()));
    }
    for (n, v) in &spec.headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&spec.body);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let ok: &[(&str, &str, u16, &str)] = &[
            ("http://127.0.0.1:8080/", "127.0.0.1", 8080, "/"),
            ("http://127.0.0.1:8080", "127.0.0.1", 8080, "/"),
            ("http://localhost/a/b?x=1", "localhost", 80, "/a/b?x=1"),
            ("http://[::1]:9000/p", "::1", 9000, "/p"),
            ("http://127.0.0.1:81?ms=5", "127.0.0.1", 81, "/?ms=5"),
        ];
        for &(s, host, port, path) in ok {
            let u = Url::parse(s).unwrap();
            assert_eq!(
                (u.host.as_str(), u.port, u.path.as_str()),
                (host, port, path),
                "{s}"
            );
        }
        let bad: &[&str] = &[
            "https://x/",
            "127.0.0.1:80",
            "http://:80/",
            "http://h:0/",
            "http://h:99999/",
            "http://h:x/",
        ];
        for s in bad {
            assert!(Url::parse(s).is_err(), "{s} should be refused");
        }
    }

    #[test]
    fn host_header_brackets_ipv6_and_drops_port_80() {
        assert_eq!(
            Url::parse("http://[::1]:81/").unwrap().host_header(),
            "[::1]:81"
        );
        assert_eq!(Url::parse("http://a/").unwrap().host_header(), "a");
    }

    #[test]
    fn headers_need_a_name_and_colon() {
        assert_eq!(parse_header("X-A: 1").unwrap(), ("X-A".into(), "1".into()));
        for bad in ["nocolon", ": v", "Bad Name: v", "X: a\r\nInjected: 1"] {
            assert!(parse_header(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn renders_request_with_overrides_and_body() {
        let url = Url::parse("http://127.0.0.1:9/x").unwrap();
        let spec = RequestSpec {
            method: "POST".into(),
            headers: vec![("Host".into(), "example".into())],
            body: b"abc".to_vec(),
            keep_alive: false,
        };
        let text = String::from_utf8(render_request(&url, &spec).unwrap()).unwrap();
        assert!(text.starts_with("POST /x HTTP/1.1\r\n"));
        assert!(text.contains("Host: example\r\n") && !text.contains("127.0.0.1:9"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("Content-Length: 3\r\nHost: example\r\n\r\nabc"));
        let get = RequestSpec {
            method: "GET".into(),
            keep_alive: true,
            ..RequestSpec::default()
        };
        assert_eq!(
            render_request(&url, &get).unwrap(),
            b"GET /x HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n"
        );
        let bad = RequestSpec {
            method: "GE T".into(),
            ..RequestSpec::default()
        };
        assert!(render_request(&url, &bad).is_err());
    }
}
