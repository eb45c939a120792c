//! The nginx front-end: the knobs that decide how nginx talks to the server
//! behind it (upstream keep-alive and its pool, the upstream HTTP version,
//! one or several upstream servers), the rendering of `nginx.conf` from
//! them, and the label that tells two fronts apart in a report.
//!
//! These knobs change results, not just figures: thin closes kept-alive
//! connections beyond its limit of 100 while nginx reuses them from its
//! pool, which nginx answers with 502 ("writev() failed (32: Broken pipe)
//! while sending request to upstream"); seed 000 proxied HTTP/1.0 with no
//! pool, where that cannot happen. This module starts nothing.

use crate::server::template::{self, TemplateError, Vars};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::str::FromStr;

/// nginx's upstream keep-alive pool when nothing is said: what rackbench
/// always used before the knob existed, so old records read the same.
pub const DEFAULT_KEEPALIVE: u32 = 64;

/// The HTTP version nginx speaks to the server (`proxy_http_version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum HttpVersion {
    /// nginx's own default: "Connection: close" on every request.
    V1_0,
    /// Needed for upstream keep-alive.
    #[default]
    V1_1,
}

impl HttpVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            HttpVersion::V1_0 => "1.0",
            HttpVersion::V1_1 => "1.1",
        }
    }
}

impl fmt::Display for HttpVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for HttpVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().trim_start_matches("HTTP/") {
            "1.0" => Ok(HttpVersion::V1_0),
            "1.1" => Ok(HttpVersion::V1_1),
            other => Err(format!(
                "nginx upstream HTTP version '{other}': use 1.0 or 1.1"
            )),
        }
    }
}

impl Serialize for HttpVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for HttpVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Upstream keep-alive: "off" (or 0) or the pool size per nginx worker.
pub fn parse_keepalive(s: &str) -> Result<u32, String> {
    match s.trim() {
        "off" | "0" => Ok(0),
        n => n.parse::<u32>().map_err(|_| {
            format!("nginx upstream keep-alive '{n}': use off or a pool size such as 64")
        }),
    }
}

/// A plan's `nginx_keepalive` entry: `"off"` or a pool size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Keepalive(pub u32);

impl<'de> Deserialize<'de> for Keepalive {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Size(u32),
            Word(String),
        }
        match Raw::deserialize(d)? {
            Raw::Size(n) => Ok(Keepalive(n)),
            Raw::Word(w) => parse_keepalive(&w)
                .map(Keepalive)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// Why a keep-alive pool and an HTTP version cannot go together, if so.
/// Over HTTP/1.0 nginx sends "Connection: close" and the server closes
/// every connection, so a pool would stay empty while the record claimed
/// keep-alive.
pub fn conflict(keepalive: u32, http: HttpVersion) -> Option<String> {
    (keepalive > 0 && http == HttpVersion::V1_0).then(|| {
        format!("upstream keep-alive ({keepalive}) needs HTTP/1.1 to the server: use nginx HTTP 1.1 or keep-alive off")
    })
}

/// How the front reads in reports and progress lines: `nginx×1` for the
/// defaults (so older reports keep their labels), then what differs, e.g.
/// `nginx×1 http/1.0 keepalive off`.
pub fn label(workers: u32, keepalive: u32, http: HttpVersion) -> String {
    let mut s = format!("nginx×{}", workers.max(1));
    if http != HttpVersion::default() {
        s.push_str(&format!(" http/{http}"));
    }
    match keepalive {
        0 => s.push_str(" keepalive off"),
        DEFAULT_KEEPALIVE => {}
        n => s.push_str(&format!(" keepalive {n}")),
    }
    s
}

/// The same as a file-name part: empty for the defaults, else e.g.
/// `-http1.0-ka0`, so the group names of older runs stay as they were.
pub fn slug(keepalive: u32, http: HttpVersion) -> String {
    let mut s = String::new();
    if http != HttpVersion::default() {
        s.push_str(&format!("-http{http}"));
    }
    if keepalive != DEFAULT_KEEPALIVE {
        s.push_str(&format!("-ka{keepalive}"));
    }
    s
}

/// Everything `ruby/servers/nginx.conf` is rendered from.
#[derive(Debug, Clone)]
pub struct NginxConf<'a> {
    pub workers: u32,
    /// Pool size per worker; 0 is off.
    pub keepalive: u32,
    pub http: HttpVersion,
    /// One entry per server instance: "127.0.0.1:PORT" or "unix:/path".
    pub upstreams: &'a [String],
    /// The trial directory (pid, logs and temp paths).
    pub dir: &'a str,
    pub host: &'a str,
    pub port: u16,
    /// Stamp each proxied request with `X-Request-Start: t=<msec>`, from
    /// which the telemetry middleware takes queue time. Only with
    /// telemetry on, so a trial without it sends the server exactly the
    /// requests earlier runs did and stays comparable with them.
    pub request_start: bool,
}

impl NginxConf<'_> {
    /// The config text. Several upstreams are one `upstream` block, as seed
    /// 000 ran four thin instances; `fail_timeout=0` as there, so nginx
    /// never takes an instance out of the rotation for a failure.
    pub fn render(&self) -> Result<String, TemplateError> {
        let text = crate::server::spec::BUILTIN_TEMPLATES
            .iter()
            .find(|(n, _)| *n == "nginx.conf")
            .expect("nginx.conf is built in")
            .1;
        let servers: Vec<String> = self
            .upstreams
            .iter()
            .map(|u| format!("server {u} fail_timeout=0;"))
            .collect();
        let mut v = Vars::default();
        v.set("nginx_workers", self.workers.max(1))
            .set("dir", self.dir)
            .set("upstream_servers", servers.join(" "))
            .set("keepalive", self.keepalive)
            .set("http_version", self.http)
            .set("host", self.host)
            .set("port", self.port)
            .set(
                "request_start",
                if self.request_start {
                    r#"proxy_set_header X-Request-Start "t=${msec}";"#
                } else {
                    ""
                },
            );
        template::render(text, &v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(keepalive: u32, http: HttpVersion, upstreams: &[String]) -> String {
        NginxConf {
            workers: 2,
            keepalive,
            http,
            upstreams,
            dir: "/tmp/t",
            host: "127.0.0.1",
            port: 8080,
            request_start: false,
        }
        .render()
        .unwrap()
    }

    /// The directives that matter, one per line, without comments.
    fn directives(text: &str) -> Vec<String> {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.starts_with('#'))
            .flat_map(|l| l.split([';', '{', '}']))
            .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|d| !d.is_empty())
            .collect()
    }

    /// Telemetry's queue time is nginx's stamp: present with it on, and
    /// absent without, so other trials send what earlier runs sent.
    #[test]
    fn the_front_stamps_x_request_start_only_for_telemetry() {
        let ups = ["unix:/s.sock".to_string()];
        let mut c = NginxConf {
            workers: 1,
            keepalive: 64,
            http: HttpVersion::V1_1,
            upstreams: &ups,
            dir: "/tmp/t",
            host: "127.0.0.1",
            port: 8080,
            request_start: true,
        };
        let on = c.render().unwrap();
        assert!(
            on.contains(r#"proxy_set_header X-Request-Start "t=${msec}";"#),
            "{on}"
        );
        c.request_start = false;
        let off = directives(&c.render().unwrap());
        assert!(
            !off.iter().any(|d| d.contains("X-Request-Start")),
            "{off:#?}"
        );
    }

    #[test]
    fn the_default_front_keeps_a_pool_over_http_1_1() {
        let d = directives(&conf(64, HttpVersion::V1_1, &["unix:/s.sock".into()]));
        for want in [
            "worker_processes 2",
            "keepalive 64",
            "proxy_http_version 1.1",
            "proxy_set_header Connection \"\"",
            "server unix:/s.sock fail_timeout=0",
            "listen 127.0.0.1:8080",
            "error_log /tmp/t/nginx-error.log warn",
        ] {
            assert!(d.iter().any(|x| x == want), "no '{want}' in {d:#?}");
        }
    }

    #[test]
    fn seed_000s_front_speaks_http_1_0_with_no_pool_to_four_sockets() {
        let socks: Vec<String> = (0..4).map(|i| format!("unix:/r/server.{i}.sock")).collect();
        let d = directives(&conf(0, HttpVersion::V1_0, &socks));
        assert!(d.iter().any(|x| x == "proxy_http_version 1.0"), "{d:#?}");
        // No pool, and nginx's own "Connection: close" left in place.
        assert!(!d.iter().any(|x| x.starts_with("keepalive ")), "{d:#?}");
        assert!(!d.iter().any(|x| x.contains("Connection")), "{d:#?}");
        for s in &socks {
            let want = format!("server {s} fail_timeout=0");
            assert_eq!(d.iter().filter(|x| **x == want).count(), 1, "{d:#?}");
        }
    }

    #[test]
    fn keep_alive_off_over_http_1_1_closes_upstream_connections() {
        let d = directives(&conf(0, HttpVersion::V1_1, &["127.0.0.1:9".into()]));
        assert!(d.iter().any(|x| x == "proxy_http_version 1.1"), "{d:#?}");
        assert!(!d.iter().any(|x| x.starts_with("keepalive ")), "{d:#?}");
        assert!(!d.iter().any(|x| x.contains("Connection")), "{d:#?}");
        let d = directives(&conf(8, HttpVersion::V1_1, &["127.0.0.1:9".into()]));
        assert!(d.iter().any(|x| x == "keepalive 8"), "{d:#?}");
    }

    #[test]
    fn knobs_parse_and_refuse_with_the_fix() {
        let rows: &[(&str, Result<u32, &str>)] = &[
            ("off", Ok(0)),
            ("0", Ok(0)),
            ("64", Ok(64)),
            ("on", Err("use off or a pool size")),
            ("-1", Err("use off or a pool size")),
        ];
        for (input, want) in rows {
            match (parse_keepalive(input), want) {
                (Ok(got), Ok(w)) => assert_eq!(got, *w, "{input}"),
                (Err(e), Err(w)) => assert!(e.contains(w), "{input}: {e}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
        assert_eq!("1.0".parse::<HttpVersion>(), Ok(HttpVersion::V1_0));
        assert_eq!("HTTP/1.1".parse::<HttpVersion>(), Ok(HttpVersion::V1_1));
        assert!("2"
            .parse::<HttpVersion>()
            .unwrap_err()
            .contains("1.0 or 1.1"));
        assert!(conflict(64, HttpVersion::V1_0).is_some());
        assert!(conflict(0, HttpVersion::V1_0).is_none());
        assert!(conflict(64, HttpVersion::V1_1).is_none());
    }

    #[test]
    fn labels_name_what_differs_from_the_default_front() {
        assert_eq!(label(1, 64, HttpVersion::V1_1), "nginx×1");
        assert_eq!(
            label(1, 0, HttpVersion::V1_0),
            "nginx×1 http/1.0 keepalive off"
        );
        assert_eq!(label(2, 16, HttpVersion::V1_1), "nginx×2 keepalive 16");
        assert_eq!(slug(64, HttpVersion::V1_1), "");
        assert_eq!(slug(0, HttpVersion::V1_0), "-http1.0-ka0");
    }
}
