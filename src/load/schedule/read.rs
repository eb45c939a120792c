//! The readers of replay's two inputs: a `rackbench/record-v1` file
//! (docs/RECORD_FORMAT.md) and an nginx access log in the `combined`
//! format, each into [`Entry`]s with errors naming the line. They are
//! the one reader of each: replay's and `rackbench mix`'s.
//!
//! They read only the reader they are handed; they never open a file,
//! and never render or time a request (mod.rs beside them builds the
//! schedule).

use super::{Entry, ScheduleError};
use base64::Engine;
use serde::Deserialize;
use std::io::BufRead;

#[derive(Deserialize)]
struct RecordHead {
    format: String,
}

#[derive(Deserialize)]
struct RecordLine {
    t_us: u64,
    method: String,
    target: String,
    #[serde(default)]
    headers: Vec<(String, String)>,
    #[serde(default)]
    body_b64: String,
}

/// Reads a `rackbench/record-v1` file (docs/RECORD_FORMAT.md); `name`
/// labels errors, which name the line.
pub fn read_record(input: impl BufRead, name: &str) -> Result<Vec<Entry>, ScheduleError> {
    let mut entries = Vec::new();
    for (i, line) in input.lines().enumerate() {
        let lineno = i + 1;
        let line = line.map_err(|err| ScheduleError::Io {
            what: format!("{name}:{lineno}"),
            err,
        })?;
        if i == 0 {
            let head: RecordHead = serde_json::from_str(&line).map_err(|e| {
                ScheduleError::Bad(format!(
                    "{name}:1: not a rackbench record ({e}): give a file written by \
                     `rackbench record`, or use --nginx-log for an access log"
                ))
            })?;
            if head.format != RECORD_FORMAT {
                return Err(ScheduleError::Bad(format!(
                    "{name}:1: format '{}' is not {RECORD_FORMAT}: give a file written by \
                     `rackbench record`",
                    head.format
                )));
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let r: RecordLine = serde_json::from_str(&line).map_err(|e| {
            ScheduleError::Bad(format!(
                "{name}:{lineno}: not a record-v1 request line ({e}): fix or delete that line"
            ))
        })?;
        let body = base64::engine::general_purpose::STANDARD
            .decode(r.body_b64.as_bytes())
            .map_err(|e| {
                ScheduleError::Bad(format!(
                    "{name}:{lineno}: body_b64 is not base64 ({e}): fix or delete that line"
                ))
            })?;
        entries.push(Entry {
            t_us: r.t_us,
            method: r.method,
            target: r.target,
            status: None,
            headers: r.headers,
            body,
        });
    }
    if entries.is_empty() {
        return Err(ScheduleError::Bad(format!(
            "{name} holds no requests: record some traffic first"
        )));
    }
    Ok(entries)
}

/// The format name a record file's first line carries.
pub const RECORD_FORMAT: &str = "rackbench/record-v1";

/// What an nginx log gave: the requests kept, and the lines skipped.
#[derive(Debug, Default)]
pub struct NginxLog {
    pub entries: Vec<Entry>,
    /// Lines that are requests of a method not kept.
    pub skipped_methods: u64,
}

/// Reads an nginx access log for replay: only GET and HEAD are kept;
/// other methods are counted and skipped (their bodies are not in the
/// log). A log with none to replay is an error. See
/// [`read_nginx_requests`] for the format.
pub fn read_nginx_log(input: impl BufRead, name: &str) -> Result<NginxLog, ScheduleError> {
    let log = read_nginx_requests(input, name, |m| m == "GET" || m == "HEAD")?;
    if log.entries.is_empty() {
        return Err(ScheduleError::Bad(format!(
            "{name} holds no GET or HEAD requests to replay ({} other requests skipped)",
            log.skipped_methods
        )));
    }
    Ok(log)
}

/// Reads an nginx access log in the `combined` format:
///
/// `$remote_addr - $remote_user [$time_local] "$request" $status
/// $body_bytes_sent "$http_referer" "$http_user_agent"`
///
/// with, optionally, more fields after it. The arrival time is `$msec`
/// (a field like `1795456581.610`, seconds with milliseconds) when a
/// line has one after the user agent, less a `$request_time` (a field like
/// `0.005`) beside it, since nginx writes `$msec` as the request ends;
/// else `$time_local` (whole seconds;
/// the requests kept of one second are then spread evenly over it, in
/// order). Requests whose method `keep` takes are kept with their target,
/// their status and, when not `-`, their Referer and User-Agent; the
/// others are counted and skipped before their target and time are
/// looked at. A line that is not in this format is an error naming it.
/// The one reader of nginx logs: replay's and `rackbench mix`'s.
pub fn read_nginx_requests(
    input: impl BufRead,
    name: &str,
    keep: impl Fn(&str) -> bool,
) -> Result<NginxLog, ScheduleError> {
    let mut log = NginxLog::default();
    // Lines of whole-second times, to spread over their second.
    let mut whole: Vec<(usize, u64)> = Vec::new();
    log.skipped_methods = each_nginx_request(input, name, keep, |entry, whole_secs| {
        if let Some(secs) = whole_secs {
            whole.push((log.entries.len(), secs));
        }
        log.entries.push(entry);
    })?;
    // Spread the requests of each whole second evenly over it.
    let mut j = 0;
    while j < whole.len() {
        let sec = whole[j].1;
        let k = whole[j..].iter().take_while(|w| w.1 == sec).count();
        for (m, w) in whole[j..j + k].iter().enumerate() {
            log.entries[w.0].t_us += m as u64 * 1_000_000 / k as u64;
        }
        j += k;
    }
    Ok(log)
}

/// Reads an nginx access log line by line ([`read_nginx_requests`]'s
/// format), handing each kept request to `on_request` with, when its
/// time is `$time_local`'s whole second, that second; returns the count
/// of lines skipped for their method. Only one line is held at a time,
/// so `rackbench mix` reads a 10 GB log in the memory of the shapes it
/// keeps.
pub fn each_nginx_request(
    mut input: impl BufRead,
    name: &str,
    keep: impl Fn(&str) -> bool,
    mut on_request: impl FnMut(Entry, Option<u64>),
) -> Result<u64, ScheduleError> {
    let mut skipped = 0;
    let mut raw = Vec::new();
    let mut lineno = 0;
    loop {
        raw.clear();
        lineno += 1;
        let n = input
            .read_until(b'\n', &mut raw)
            .map_err(|err| ScheduleError::Io {
                what: format!("{name}:{lineno}"),
                err,
            })?;
        if n == 0 {
            return Ok(skipped);
        }
        let line = std::str::from_utf8(&raw).map_err(|_| ScheduleError::Io {
            what: format!("{name}:{lineno}"),
            err: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            ),
        })?;
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            continue;
        }
        match nginx_entry(line, name, lineno, &keep)? {
            Some((entry, whole_secs)) => on_request(entry, whole_secs),
            None => skipped += 1,
        }
    }
}

/// One line of the log as an entry (with its whole second when it has
/// no `$msec`), or None for a method not kept.
fn nginx_entry(
    line: &str,
    name: &str,
    lineno: usize,
    keep: &impl Fn(&str) -> bool,
) -> Result<Option<(Entry, Option<u64>)>, ScheduleError> {
    let bad = |why: &str| {
        ScheduleError::Bad(format!(
            "{name}:{lineno}: {why}: the log must be in nginx's combined format \
             ('$remote_addr - $remote_user [$time_local] \"$request\" $status ...')"
        ))
    };
    let p = parse_combined(line).map_err(bad)?;
    let (method, target) = match p.request.split(' ').collect::<Vec<_>>()[..] {
        [m, t, _] | [m, t] => (m, t),
        _ => return Err(bad("the request field is not 'METHOD TARGET HTTP/x'")),
    };
    if !keep(method) {
        return Ok(None);
    }
    if !target.starts_with('/') {
        return Err(bad("the request target does not start with '/'"));
    }
    let mut headers = Vec::new();
    if p.referer != "-" && !p.referer.is_empty() {
        headers.push(("referer".to_string(), p.referer.to_string()));
    }
    if p.user_agent != "-" && !p.user_agent.is_empty() {
        headers.push(("user-agent".to_string(), p.user_agent.to_string()));
    }
    let (t_us, whole_secs) = match p.msec {
        Some(us) => (us, None),
        None => {
            let secs = time_local_secs(p.time_local)
                .ok_or_else(|| bad("$time_local is not like [10/Oct/2026:13:55:36 +0000]"))?;
            (secs * 1_000_000, Some(secs))
        }
    };
    let entry = Entry {
        t_us,
        method: method.to_string(),
        target: target.to_string(),
        status: p.status,
        headers,
        body: Vec::new(),
    };
    Ok(Some((entry, whole_secs)))
}

/// One line of a combined log, its fields borrowed from the line.
struct Combined<'a> {
    time_local: &'a str,
    request: &'a str,
    referer: &'a str,
    user_agent: &'a str,
    /// `$status`, when it is a number.
    status: Option<u16>,
    /// `$msec`, as microseconds, when the line has it.
    msec: Option<u64>,
}

fn parse_combined(line: &str) -> Result<Combined<'_>, &'static str> {
    let open = line.find('[').ok_or("no [$time_local]")?;
    let close = open + line[open..].find(']').ok_or("no [$time_local]")?;
    let time_local = &line[open + 1..close];
    let rest = &line[close + 1..];
    let (request, rest) = quoted(rest).ok_or("no quoted \"$request\"")?;
    let status = rest.split_whitespace().next().and_then(|f| f.parse().ok());
    let (referer, rest) = quoted(rest).ok_or("no quoted \"$http_referer\"")?;
    let (user_agent, rest) = quoted(rest).ok_or("no quoted \"$http_user_agent\"")?;
    let fields: Vec<&str> = rest
        .split_whitespace()
        .map(|f| f.trim_matches('"'))
        .collect();
    // nginx writes $msec when the request ends: with a $request_time
    // beside it, the request arrived that long before.
    let msec = fields.iter().find_map(|f| msec_us(f)).map(|end| {
        let took = fields.iter().find_map(|f| request_time_us(f)).unwrap_or(0);
        end.saturating_sub(took)
    });
    Ok(Combined {
        time_local,
        request,
        referer,
        user_agent,
        status,
        msec,
    })
}

/// The next `"..."` field (with `\"` escapes, as nginx writes them).
fn quoted(s: &str) -> Option<(&str, &str)> {
    let start = s.find('"')? + 1;
    let b = s.as_bytes();
    let mut i = start;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some((&s[start..i], &s[i + 1..])),
            _ => i += 1,
        }
    }
    None
}

/// `$msec`: seconds since the epoch with exactly three decimals.
fn msec_us(f: &str) -> Option<u64> {
    let (s, ms) = f.split_once('.')?;
    if s.len() < 9 || ms.len() != 3 || !s.bytes().chain(ms.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Checked: 17 digits of seconds parse, but overflow as microseconds.
    s.parse::<u64>()
        .ok()?
        .checked_mul(1_000_000)?
        .checked_add(ms.parse::<u64>().ok()? * 1000)
}

/// `$request_time`: seconds with exactly three decimals, under a day (so
/// it is never taken for a `$msec`).
fn request_time_us(f: &str) -> Option<u64> {
    let (s, ms) = f.split_once('.')?;
    if s.is_empty() || s.len() > 5 || ms.len() != 3 {
        return None;
    }
    if !s.bytes().chain(ms.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(s.parse::<u64>().ok()? * 1_000_000 + ms.parse::<u64>().ok()? * 1000)
}

/// `10/Oct/2026:13:55:36 +0000` as seconds since the epoch.
fn time_local_secs(t: &str) -> Option<u64> {
    let (dt, zone) = t.split_once(' ')?;
    let mut parts = dt.splitn(4, [':', '/']);
    let day: i64 = parts.next()?.parse().ok()?;
    let mon = parts.next()?;
    let year: i64 = parts.next()?.parse().ok()?;
    let hms: Vec<i64> = parts
        .next()?
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let [h, mi, se] = hms[..] else { return None };
    // Only dates nginx writes: larger numbers overflowed the arithmetic
    // below (a panic found by tests/properties.rs).
    let sane = (1..=31).contains(&day)
        && (1970..=9999).contains(&year)
        && (0..24).contains(&h)
        && (0..60).contains(&mi)
        && (0..=60).contains(&se);
    if !sane {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let m = MONTHS.iter().position(|x| *x == mon)? as i64 + 1;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let z = zone.trim_start_matches(['+', '-']);
    // Four ASCII digits: "a€" is four bytes too, and slicing it at 2 panicked.
    if z.len() != 4 || !z.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let off = sign * (z[..2].parse::<i64>().ok()? * 3600 + z[2..].parse::<i64>().ok()? * 60);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - off;
    u64::try_from(secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = r#"127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET /a?x=1 HTTP/1.1" 200 12 "-" "curl/8.0"
127.0.0.1 - frank [23/Nov/2026:10:00:00 +0000] "POST /form HTTP/1.1" 302 0 "-" "-"
::1 - - [23/Nov/2026:10:00:00 +0000] "HEAD /b HTTP/1.1" 200 0 "http://x/" "Mozilla/5.0 (X11; \"q\")"

10.0.0.1 - - [23/Nov/2026:11:00:01 +0100] "GET /c HTTP/1.0" 404 9 "-" "-"
"#;

    #[test]
    fn combined_lines_keep_get_and_head_with_their_times() {
        let log = read_nginx_log(LOG.as_bytes(), "access.log").unwrap();
        assert_eq!(log.skipped_methods, 1);
        let e = &log.entries;
        assert_eq!(e.len(), 3);
        assert_eq!(
            (e[0].method.as_str(), e[0].target.as_str()),
            ("GET", "/a?x=1")
        );
        assert_eq!(e[0].headers, vec![("user-agent".into(), "curl/8.0".into())]);
        assert_eq!(e[1].method, "HEAD");
        assert_eq!(e[1].headers[0], ("referer".into(), "http://x/".into()));
        assert_eq!(e[1].headers[1].1, r#"Mozilla/5.0 (X11; \"q\")"#);
        // 2026-11-23T10:00:00Z; two GET/HEAD in that second: spread by 0.5 s.
        let t0 = 1_795_428_000_000_000u64;
        assert_eq!(e[0].t_us, t0);
        assert_eq!(e[1].t_us, t0 + 500_000);
        // 11:00:01 +0100 is 10:00:01 UTC.
        assert_eq!(e[2].t_us, t0 + 1_000_000);
    }

    /// Replay skips a method before it looks at the line's target or
    /// time, so a line it skips can never be its error; a reader keeping
    /// every method (`rackbench mix`) checks them, and keeps the status.
    #[test]
    fn a_skipped_method_is_never_checked_and_a_kept_one_has_its_status() {
        let odd =
            r#"127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "OPTIONS * HTTP/1.1" 204 0 "-" "-""#;
        let text = format!("{LOG}{odd}\n");
        let log = read_nginx_log(text.as_bytes(), "access.log").unwrap();
        assert_eq!((log.entries.len(), log.skipped_methods), (3, 2));
        assert!(log.entries.iter().all(|e| e.status.is_some()));
        let all = read_nginx_requests(LOG.as_bytes(), "access.log", |_| true).unwrap();
        let got: Vec<(&str, Option<u16>)> = all
            .entries
            .iter()
            .map(|e| (e.method.as_str(), e.status))
            .collect();
        assert_eq!(
            got,
            [
                ("GET", Some(200)),
                ("POST", Some(302)),
                ("HEAD", Some(200)),
                ("GET", Some(404))
            ]
        );
        let err = read_nginx_requests(text.as_bytes(), "access.log", |_| true).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("access.log:6: the request target"),
            "{err}"
        );
    }

    #[test]
    fn msec_wins_over_time_local() {
        let line = r#"127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-" 1795428000.250 0.001"#;
        let log = read_nginx_log(line.as_bytes(), "a").unwrap();
        // $msec is when the request ended; $request_time (1 ms) before it, it began.
        assert_eq!(log.entries[0].t_us, 1_795_428_000_249_000);
        let line = r#"127.0.0.1 - - [23/Nov/2026:10:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "-" 1795428000.250"#;
        let log = read_nginx_log(line.as_bytes(), "a").unwrap();
        assert_eq!(log.entries[0].t_us, 1_795_428_000_250_000);
    }

    #[test]
    fn a_line_in_another_format_is_named() {
        let text = format!(
            "{}garbage here\n",
            LOG.lines().next().unwrap().to_owned() + "\n"
        );
        let err = read_nginx_log(text.as_bytes(), "access.log").unwrap_err();
        assert!(err.to_string().starts_with("access.log:2: "), "{err}");
    }

    #[test]
    fn a_malformed_record_line_is_named() {
        let text = "{\"format\":\"rackbench/record-v1\"}\n\
                    {\"seq\":1,\"t_us\":5,\"method\":\"GET\",\"target\":\"/\",\"headers\":[],\"body_b64\":\"\"}\n\
                    {\"seq\":2,\"t_us\":\n";
        let err = read_record(text.as_bytes(), "r.jsonl").unwrap_err();
        assert!(err.to_string().starts_with("r.jsonl:3: "), "{err}");
        let err = read_record("{\"format\":\"x\"}\n".as_bytes(), "r.jsonl").unwrap_err();
        assert!(err.to_string().contains("r.jsonl:1: format 'x'"), "{err}");
    }
}
