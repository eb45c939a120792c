//! What a mirror is told: its upstreams, when copies go to the shadows,
//! and its bounds. Plain data with its parsers; the files that run the
//! mirror read it, it reads none of them.

use hyper::Method;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// An upstream server: `http://host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    pub url: String,
    /// `host:port`.
    pub authority: String,
}

impl Upstream {
    /// Parses `http://host[:port][/]`; the error names the fix.
    pub fn parse(s: &str) -> Result<Upstream, String> {
        let rest = s.strip_prefix("http://").ok_or_else(|| {
            format!("'{s}' is not an http:// URL; give e.g. http://127.0.0.1:8080 (https upstreams are not supported)")
        })?;
        let (auth, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if !path.is_empty() && path != "/" {
            return Err(format!(
                "'{s}' has a path; requests keep the client's path, so give only http://host:port"
            ));
        }
        if auth.is_empty() || auth.parse::<hyper::http::uri::Authority>().is_err() {
            return Err(format!(
                "'{s}' has no usable host; give e.g. http://127.0.0.1:8080"
            ));
        }
        let authority = if auth
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
            && !auth.ends_with(']')
        {
            auth.to_string()
        } else {
            format!("{auth}:80")
        };
        Ok(Upstream {
            url: format!("http://{auth}"),
            authority,
        })
    }
}

/// When a request's copies go to the shadows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShadowSend {
    /// Once the client has the primary's answer (the default): shadow work
    /// never competes with the request the client is waiting for.
    Answered,
    /// As soon as the request has arrived (its body read).
    Arrival,
}

impl ShadowSend {
    pub fn parse(s: &str) -> Result<ShadowSend, String> {
        match s {
            "answered" => Ok(ShadowSend::Answered),
            "arrival" => Ok(ShadowSend::Arrival),
            _ => Err(format!(
                "'{s}' is not a send time; write answered or arrival"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ShadowSend::Answered => "answered",
            ShadowSend::Arrival => "arrival",
        }
    }
}

#[derive(Debug, Clone)]
pub struct MirrorConfig {
    pub listen: SocketAddr,
    pub primary: Upstream,
    /// A second copy of the primary, for telling noise from differences
    /// in body diffs.
    pub primary_b: Option<Upstream>,
    pub shadows: Vec<(String, Upstream)>,
    pub mirror_methods: Vec<Method>,
    /// Copies waiting per shadow before new ones are dropped.
    pub queue: usize,
    /// Requests in flight per shadow.
    pub shadow_concurrency: usize,
    pub shadow_timeout: Duration,
    pub shadow_send: ShadowSend,
    /// Threads of the primary path (1: one-thread runtime).
    pub threads: usize,
    /// Time for the primary's response head before the client gets 504.
    pub primary_timeout: Duration,
    /// Longest request body copied to shadows and the record, and longest
    /// answer body compared, bytes.
    pub body_limit: usize,
    pub diff_bodies: bool,
    pub record: Option<PathBuf>,
    pub keep_headers: Vec<String>,
    /// Client connections open at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// Largest request head, bytes (hyper's read buffer).
    pub max_header_bytes: usize,
    /// Time a client has to send a request head.
    pub header_timeout: Duration,
}

impl MirrorConfig {
    pub fn new(listen: SocketAddr, primary: Upstream) -> MirrorConfig {
        MirrorConfig {
            listen,
            primary,
            primary_b: None,
            shadows: Vec::new(),
            mirror_methods: vec![Method::GET, Method::HEAD],
            queue: 1024,
            shadow_concurrency: 64,
            shadow_timeout: Duration::from_secs(2),
            shadow_send: ShadowSend::Answered,
            threads: 1,
            primary_timeout: Duration::from_secs(60),
            body_limit: 1 << 20,
            diff_bodies: false,
            record: None,
            keep_headers: Vec::new(),
            max_connections: 10_000,
            max_header_bytes: 64 * 1024,
            header_timeout: Duration::from_secs(30),
        }
    }
}
