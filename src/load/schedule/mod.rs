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
use std::time::Duration;

mod read;
pub use read::{
    each_nginx_request, read_nginx_log, read_nginx_requests, read_record, NginxLog, RECORD_FORMAT,
};

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

#[cfg(test)]
mod tests {
    use super::*;

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
