//! A replay schedule: requests with their own bytes and their own due
//! times, read from a `rackbench/record-v1` file or an nginx access log.
//!
//! The connection loop sends schedule entry k at `t0 + offset(k)` exactly
//! as the `--rate` loop sends request k at `t0 + k/rate`
//! ([`super::Pacing::Schedule`]); only where the bytes and the due time
//! come from differs. This module parses what it is handed (a reader); it
//! never opens files itself.
//!
//! Every request is rendered once, up front, into one buffer: a send is
//! then one slice, with no parsing or allocation in the loop. The price is
//! memory, so a schedule is refused past [`MAX_BYTES`] of rendered
//! requests (a day of GETs at 100 req/s, about 200 bytes each, is 1.7 GB;
//! cut such a file into hours).

use super::target::{render_request, RequestSpec, Url};
use base64::Engine;
use serde::Deserialize;
use std::io::BufRead;
use std::time::Duration;

/// The most request bytes a schedule holds in memory.
pub const MAX_BYTES: usize = 512 * 1024 * 1024;

/// The longest pass a schedule may take at its speed: a day. A record
/// whose clock jumped (a `t_us` of 10^15 after one of 10^3) once made a
/// replay wait silently for years; past this the build is refused with
/// the length and its longest gap, and the caller names the way out
/// (a faster speed, the idle gaps cut to a bound: [`cap_gaps`]).
pub const MAX_SPAN: Duration = Duration::from_secs(24 * 3600);

/// Headers the replayer sets itself (framing, connection handling) or
/// replaces (Host names the URL given, not the proxy that recorded it).
const REPLACED: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// One recorded request (a record's line, a log's line): what replay
/// renders and sends, and what `mixgen` groups into a mix.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// When it arrived, microseconds from any fixed origin.
    pub t_us: u64,
    pub method: String,
    /// Path and query (origin form).
    pub target: String,
    /// The answer's status, when the source has it (nginx logs do,
    /// records do not); replay never reads it.
    pub status: Option<u16>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Requests rendered for one URL, with their due offsets.
#[derive(Debug)]
pub struct Schedule {
    /// Due offset of each request from the start, nanoseconds, already
    /// divided by the speed; non-decreasing, the first is 0.
    offsets_ns: Vec<u64>,
    /// All rendered requests back to back; request i is
    /// `bytes[ends[i-1]..ends[i]]`.
    bytes: Vec<u8>,
    ends: Vec<usize>,
    head: Vec<bool>,
    /// With `--loop`: the schedule starts again this long after it began.
    period_ns: u64,
    /// `--loop`: passes follow one another until the duration ends.
    pub(super) repeat: bool,
}

/// A schedule that cannot be built; the message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("{0}")]
    Bad(String),
    #[error("cannot read {what}: {err}")]
    Io { what: String, err: std::io::Error },
    /// Longer than [`MAX_SPAN`] at the speed given.
    #[error(
        "the schedule lasts {} at this speed, longer than a day: its longest gap is {} (before the request at t_us {gap_before_t_us})",
        fmt_length(*length),
        fmt_length(*gap)
    )]
    TooLong {
        length: Duration,
        /// The longest gap between two requests, at the speed given.
        gap: Duration,
        gap_before_t_us: u64,
    },
}

/// A replay's length as people read it, from microseconds to years
/// ("1.50s", "12.0 min", "3.5 h", "31.7 years").
pub fn fmt_length(d: Duration) -> String {
    const DAY: f64 = 86_400.0;
    let s = d.as_secs_f64();
    match s {
        s if s < 120.0 => crate::units::fmt_us(s * 1e6),
        s if s < 7200.0 => format!("{:.1} min", s / 60.0),
        s if s < 2.0 * DAY => format!("{:.1} h", s / 3600.0),
        s if s < 730.0 * DAY => format!("{:.1} days", s / DAY),
        s => format!("{:.1} years", s / (365.25 * DAY)),
    }
}

/// Cuts every gap between two requests (in arrival order) longer than
/// `max_gap` down to it, so idle hours in a record (or a clock that
/// jumped) replay as `max_gap` of quiet; returns how many were cut.
pub fn cap_gaps(entries: &mut [Entry], max_gap: Duration) -> usize {
    let max_us = u64::try_from(max_gap.as_micros()).unwrap_or(u64::MAX);
    entries.sort_by_key(|e| e.t_us);
    let (mut cut, mut shift) = (0, 0u64);
    let mut prev = entries.first().map_or(0, |e| e.t_us);
    for e in entries.iter_mut() {
        let gap = e.t_us - prev;
        prev = e.t_us;
        if gap > max_us {
            cut += 1;
            shift += gap - max_us;
        }
        e.t_us -= shift;
    }
    cut
}

impl Schedule {
    /// Renders `entries` against `url` (its host and port; each entry
    /// keeps its own target). Entries are sorted by arrival; offsets count
    /// from the first and are divided by `speed`.
    pub fn build(
        entries: Vec<Entry>,
        url: &Url,
        speed: f64,
        repeat: bool,
        keep_alive: bool,
    ) -> Result<Schedule, ScheduleError> {
        Schedule::build_within(entries, url, speed, repeat, keep_alive, MAX_BYTES)
    }

    fn build_within(
        mut entries: Vec<Entry>,
        url: &Url,
        speed: f64,
        repeat: bool,
        keep_alive: bool,
        max_bytes: usize,
    ) -> Result<Schedule, ScheduleError> {
        if !(speed.is_finite() && speed > 0.0) {
            return Err(ScheduleError::Bad(format!(
                "--speed {speed} must be a positive number, e.g. 1 or 2.0"
            )));
        }
        if entries.is_empty() {
            return Err(ScheduleError::Bad(
                "the schedule has no requests to replay: record some traffic first".into(),
            ));
        }
        // Stable: equal times keep the file's order.
        entries.sort_by_key(|e| e.t_us);
        let first = entries[0].t_us;
        let mut s = Schedule {
            offsets_ns: Vec::with_capacity(entries.len()),
            bytes: Vec::new(),
            ends: Vec::with_capacity(entries.len()),
            head: Vec::with_capacity(entries.len()),
            period_ns: 0,
            repeat,
        };
        let times: Vec<u64> = entries.iter().map(|e| e.t_us).collect();
        for e in entries {
            let mut u = url.clone();
            u.path = e.target;
            let spec = RequestSpec {
                method: e.method.clone(),
                headers: e
                    .headers
                    .into_iter()
                    .filter(|(n, _)| !REPLACED.iter().any(|r| n.eq_ignore_ascii_case(r)))
                    .collect(),
                body: e.body,
                keep_alive,
            };
            let rendered = render_request(&u, &spec)
                .map_err(|err| ScheduleError::Bad(format!("request at t_us {}: {err}", e.t_us)))?;
            if s.bytes.len() + rendered.len() > max_bytes {
                return Err(ScheduleError::Bad(format!(
                    "the schedule renders to more than {} MiB of requests: replay a part of \
                     the file (split it by time)",
                    max_bytes >> 20
                )));
            }
            s.bytes.extend_from_slice(&rendered);
            s.ends.push(s.bytes.len());
            s.head.push(e.method == "HEAD");
            s.offsets_ns
                .push(((e.t_us - first) as f64 * 1000.0 / speed).round() as u64);
        }
        let n = s.offsets_ns.len() as u64;
        let span = *s.offsets_ns.last().expect("not empty");
        if Duration::from_nanos(span) > MAX_SPAN {
            return Err(s.too_long(&times));
        }
        // A repeat begins one mean gap after the last request, so the seam
        // between two passes looks like the rest of the schedule.
        s.period_ns = if n > 1 {
            span + span / (n - 1)
        } else {
            1_000_000_000
        }
        .max(1);
        Ok(s)
    }

    /// The refusal of a schedule longer than [`MAX_SPAN`]: its length and
    /// its longest gap (`times`: the entries' t_us, sorted).
    fn too_long(&self, times: &[u64]) -> ScheduleError {
        let (i, gap_ns) = self
            .offsets_ns
            .windows(2)
            .map(|w| w[1] - w[0])
            .enumerate()
            .max_by_key(|&(_, g)| g)
            .unwrap_or((0, 0));
        ScheduleError::TooLong {
            length: self.span(),
            gap: Duration::from_nanos(gap_ns),
            gap_before_t_us: times.get(i + 1).copied().unwrap_or(0),
        }
    }

    /// Requests in one pass.
    pub fn len(&self) -> usize {
        self.offsets_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.offsets_ns.is_empty()
    }

    /// Whether the schedule starts again at its end (`--loop`).
    pub fn repeats(&self) -> bool {
        self.repeat
    }

    /// From the first request's due time to the last's, at the speed given.
    pub fn span(&self) -> Duration {
        Duration::from_nanos(*self.offsets_ns.last().unwrap_or(&0))
    }

    /// When request `k` (counting across repeats) is due after the start;
    /// None past the end of a schedule that does not repeat.
    #[inline]
    pub fn due_offset(&self, k: u64) -> Option<Duration> {
        let n = self.offsets_ns.len() as u64;
        let (pass, i) = (k / n, (k % n) as usize);
        if pass > 0 && !self.repeat {
            return None;
        }
        let ns = pass
            .checked_mul(self.period_ns)?
            .checked_add(self.offsets_ns[i])?;
        Some(Duration::from_nanos(ns))
    }

    /// The position in one pass of request `k`.
    #[inline]
    pub fn index(&self, k: u64) -> u32 {
        (k % self.offsets_ns.len() as u64) as u32
    }

    /// The rendered bytes of the request at position `i`.
    #[inline]
    pub fn request(&self, i: u32) -> &[u8] {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// Whether the request at position `i` is a HEAD (its answer has no body).
    #[inline]
    pub fn is_head(&self, i: u32) -> bool {
        self.head[i as usize]
    }
}

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

    #[test]
    fn offsets_scale_with_speed_and_repeat_one_gap_later() {
        let e = |t_us, target: &str| Entry {
            t_us,
            method: "GET".into(),
            target: target.into(),
            status: None,
            headers: vec![
                ("host".into(), "proxy:1".into()),
                ("x-a".into(), "1".into()),
            ],
            body: Vec::new(),
        };
        let url = Url::parse("http://127.0.0.1:9/").unwrap();
        let entries = vec![e(3_000, "/b"), e(1_000, "/a"), e(5_000, "/c")];
        let s = Schedule::build(entries.clone(), &url, 2.0, true, true).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s.due_offset(0), Some(Duration::ZERO));
        assert_eq!(s.due_offset(1), Some(Duration::from_micros(1000)));
        assert_eq!(s.due_offset(2), Some(Duration::from_micros(2000)));
        // Period: span 2 ms + one mean gap 1 ms.
        assert_eq!(s.due_offset(3), Some(Duration::from_micros(3000)));
        let r = String::from_utf8(s.request(s.index(4)).to_vec()).unwrap();
        assert_eq!(r, "GET /b HTTP/1.1\r\nHost: 127.0.0.1:9\r\nx-a: 1\r\n\r\n");
        let once = Schedule::build(entries, &url, 1.0, false, true).unwrap();
        assert_eq!(once.due_offset(2), Some(Duration::from_micros(4000)));
        assert_eq!(once.due_offset(3), None);
    }

    fn at(t_us: u64) -> Entry {
        Entry {
            t_us,
            method: "GET".into(),
            target: "/".into(),
            status: None,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    #[test]
    fn issue_36_a_schedule_longer_than_a_day_is_refused_with_its_length_and_gap() {
        let url = Url::parse("http://127.0.0.1:9/").unwrap();
        let years = vec![at(1_000), at(2_000), at(1_000_000_000_000_000)];
        let err = Schedule::build(years.clone(), &url, 1.0, false, true).unwrap_err();
        let ScheduleError::TooLong {
            length,
            gap,
            gap_before_t_us,
        } = &err
        else {
            panic!("{err}")
        };
        assert!(*length > Duration::from_secs(3600 * 24 * 365 * 31), "{err}");
        assert_eq!(*gap_before_t_us, 1_000_000_000_000_000);
        assert_eq!(length.as_micros() - gap.as_micros(), 1_000);
        assert!(err.to_string().contains("longer than a day"), "{err}");
        // A day exactly is allowed; faster, the same record fits.
        let day = vec![at(0), at(24 * 3600 * 1_000_000)];
        assert!(Schedule::build(day, &url, 1.0, false, true).is_ok());
        let fast = Schedule::build(years.clone(), &url, 1e12, false, true).unwrap();
        assert!(fast.span() < Duration::from_millis(2));
        // Or with its gaps cut to a bound.
        let mut cut = years;
        assert_eq!(cap_gaps(&mut cut, Duration::from_millis(10)), 1);
        let times: Vec<u64> = cut.iter().map(|e| e.t_us).collect();
        assert_eq!(times, [1_000, 2_000, 12_000]);
        let s = Schedule::build(cut, &url, 1.0, false, true).unwrap();
        assert_eq!(s.span(), Duration::from_micros(11_000));
    }

    #[test]
    fn lengths_read_from_microseconds_to_years() {
        let cases: &[(f64, &str)] = &[
            (0.0015, "1.50ms"),
            (90.0, "90.00s"),
            (720.0, "12.0 min"),
            (12_600.0, "3.5 h"),
            (3.0 * 86_400.0, "3.0 days"),
            (1e9, "31.7 years"),
        ];
        for &(secs, want) in cases {
            assert_eq!(fmt_length(Duration::from_secs_f64(secs)), want);
        }
    }

    #[test]
    fn cap_gaps_cuts_only_the_gaps_past_the_bound_and_keeps_the_order() {
        let cases: &[(&[u64], u64, &[u64], usize)] = &[
            (&[0, 5, 100], 10, &[0, 5, 15], 1),
            (&[100, 0, 5], 10, &[0, 5, 15], 1),
            (&[0, 50, 100, 101], 10, &[0, 10, 20, 21], 2),
            (&[7, 8], 10, &[7, 8], 0),
            (&[], 10, &[], 0),
        ];
        for &(times, max_us, want, cuts) in cases {
            let mut e: Vec<Entry> = times.iter().map(|&t| at(t)).collect();
            assert_eq!(
                cap_gaps(&mut e, Duration::from_micros(max_us)),
                cuts,
                "{times:?}"
            );
            let got: Vec<u64> = e.iter().map(|e| e.t_us).collect();
            assert_eq!(got, want, "{times:?}");
        }
    }

    #[test]
    fn a_schedule_past_its_memory_bound_is_refused() {
        let url = Url::parse("http://127.0.0.1:9/").unwrap();
        let big = |n: u64| {
            (0..n)
                .map(|i| Entry {
                    t_us: i,
                    method: "POST".into(),
                    target: "/".into(),
                    status: None,
                    headers: Vec::new(),
                    body: vec![b'x'; 1 << 19],
                })
                .collect::<Vec<_>>()
        };
        // Seven half-MiB bodies and their heads fit in 4 MiB; eight do not.
        assert!(Schedule::build_within(big(7), &url, 1.0, false, true, 4 << 20).is_ok());
        let err = Schedule::build_within(big(8), &url, 1.0, false, true, 4 << 20).unwrap_err();
        assert!(err.to_string().contains("more than 4 MiB"), "{err}");
    }
}
