//! Segments: one generator's share of a load that several generators make
//! together, and what its document carries so the shares can be merged
//! exactly (`merge.rs`).
//!
//! Segment I of N takes floor(x/N) + 1 of a total x for the first x % N
//! segments and floor(x/N) for the others (connections, `-n`). Under
//! `--rate R` it sends at R/N, phase-shifted so its requests fall at
//! (k·N + I)/R: the N schedules interleave into exactly the schedule of one
//! generator at R, never N bursts at the same instants. Within a segment
//! the threads interleave the same way (thread j of T is lane I + N·j of
//! N·T). A replay's segment takes every N-th request, from the I-th.
//!
//! `--start-at` puts the start of every segment on one wall-clock instant,
//! so their schedules line up across machines (as closely as their clocks
//! agree: keep them in sync with NTP or chrony).
//!
//! This module parses and describes; it never runs load or touches disk.

use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Segment `index` of `count` (index from 0, so a Kubernetes Indexed Job's
/// `JOB_COMPLETION_INDEX` is the index as it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub index: u32,
    pub count: u32,
}

/// The furthest ahead `--start-at` may be: a typo in the date, not a plan.
pub const START_AT_AHEAD_MAX: Duration = Duration::from_secs(24 * 3600);
/// The furthest behind `--start-at` may be: past that the segment would
/// only report being late, and a stale time in a script is the likelier
/// cause.
pub const START_AT_BEHIND_MAX: Duration = Duration::from_secs(3600);

impl Segment {
    /// The whole load as one segment.
    pub const WHOLE: Segment = Segment { index: 0, count: 1 };

    /// Parses `I/N`, I from 0 to N-1.
    pub fn parse(text: &str) -> Result<Segment, String> {
        let bad = || {
            format!("--segment {text}: expected I/N with I counted from 0, e.g. 0/4 for the first of four")
        };
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 {
            return Err(format!(
                "--segment {text}: the count must be at least 1, e.g. 0/4"
            ));
        }
        if index >= count {
            return Err(format!(
                "--segment {text}: the index runs from 0 to {} (I counts from 0)",
                count - 1
            ));
        }
        Ok(Segment { index, count })
    }

    /// This segment's share of `total`: the shares of all N add up to it
    /// and differ by at most one.
    pub fn share(&self, total: u64) -> u64 {
        let n = u64::from(self.count);
        total / n + u64::from(u64::from(self.index) < total % n)
    }

    /// The lane of thread `thread` of `threads` among all segments' threads:
    /// (lane, lanes). Lane l's k-th request is the whole schedule's
    /// (k·lanes + l)-th.
    pub fn lane(&self, thread: usize, threads: usize) -> (u64, u64) {
        let n = u64::from(self.count);
        (
            u64::from(self.index) + n * thread as u64,
            n * threads.max(1) as u64,
        )
    }
}

impl std::fmt::Display for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Parses `--start-at`: RFC 3339 in UTC (`2026-11-23T21:00:00Z`, with an
/// optional fraction of a second) or unix seconds (`1795467600.5`), and
/// refuses a time more than [`START_AT_AHEAD_MAX`] ahead of `now` or
/// [`START_AT_BEHIND_MAX`] behind it.
pub fn parse_start_at(text: &str, now: SystemTime) -> Result<SystemTime, String> {
    let t = text.trim();
    let at = if t.contains('T') || t.contains('-') {
        parse_rfc3339_utc(t).ok_or_else(|| {
            format!(
                "--start-at {text}: not a UTC time like 2026-11-23T21:00:00Z (or unix seconds \
                 like 1795467600.5)"
            )
        })?
    } else {
        let secs: f64 = t
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s > 0.0)
            .ok_or_else(|| {
                format!(
                    "--start-at {text}: not unix seconds like 1795467600.5 (or a UTC time like \
                 2026-11-23T21:00:00Z)"
                )
            })?;
        Duration::try_from_secs_f64(secs)
            .ok()
            .and_then(|d| UNIX_EPOCH.checked_add(d))
            .ok_or_else(|| {
                format!("--start-at {text}: {secs} unix seconds is no time this machine can hold")
            })?
    };
    if let Ok(ahead) = at.duration_since(now) {
        if ahead > START_AT_AHEAD_MAX {
            return Err(format!(
                "--start-at {text} is {:.1} h from now (at most {} h): check the date; \
                 `date -u -d '+1 min' +%FT%TZ` gives a time a minute ahead",
                ahead.as_secs_f64() / 3600.0,
                START_AT_AHEAD_MAX.as_secs() / 3600
            ));
        }
    } else if let Ok(behind) = now.duration_since(at) {
        if behind > START_AT_BEHIND_MAX {
            return Err(format!(
                "--start-at {text} was {:.1} h ago (at most {} min): give a time a little \
                 ahead, e.g. `date -u -d '+1 min' +%FT%TZ`",
                behind.as_secs_f64() / 3600.0,
                START_AT_BEHIND_MAX.as_secs() / 60
            ));
        }
    }
    Ok(at)
}

/// `YYYY-MM-DDTHH:MM:SS[.fff]Z` (or `+00:00`) as a time.
fn parse_rfc3339_utc(t: &str) -> Option<SystemTime> {
    let t = t
        .strip_suffix('Z')
        .or_else(|| t.strip_suffix('z'))
        .or_else(|| t.strip_suffix("+00:00"))?;
    let (date, time) = t.split_once(['T', 't'])?;
    let d: Vec<i64> = date
        .split('-')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let [y, m, day] = d[..] else { return None };
    let (hms, frac) = match time.split_once('.') {
        Some((hms, f)) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) => {
            (hms, format!("0.{f}").parse::<f64>().ok()?)
        }
        Some(_) => return None,
        None => (time, 0.0),
    };
    let h: Vec<i64> = hms
        .split(':')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let [hh, mm, ss] = h[..] else { return None };
    // Years past 9999 are no RFC 3339 time (and would overflow the day count).
    if !(1..=9999).contains(&y)
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&day)
        || hh > 23
        || mm > 59
        || ss > 60
    {
        return None;
    }
    let secs = days_from_civil(y, m, day) * 86_400 + hh * 3600 + mm * 60 + ss;
    let secs = u64::try_from(secs).ok()?;
    UNIX_EPOCH
        .checked_add(Duration::from_secs(secs))?
        .checked_add(Duration::from_secs_f64(frac))
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Milliseconds since the epoch (with a fraction).
pub fn unix_ms(t: SystemTime) -> f64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs_f64() * 1000.0,
        Err(e) => -e.duration().as_secs_f64() * 1000.0,
    }
}

/// A time as RFC 3339 UTC with milliseconds, e.g. `2026-11-23T21:00:00.000Z`.
pub fn rfc3339_ms(t: SystemTime) -> String {
    let ms = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    crate::host::rfc3339_millis(ms)
}

/// The `segment` object of a load-v1 document: which share this was and
/// where it sat on the wall clock. Field names are part of the contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentInfo {
    /// I, from 0.
    pub index: u32,
    /// N.
    pub count: u32,
    /// `--start-at` as given, in RFC 3339 UTC; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// How late the load began after `--start-at` (0 when on time or
    /// without it).
    pub late_ms: f64,
    /// Wall clock at the start of the run (warm-up included), unix ms:
    /// timeline second t_s covers [run_start_unix_ms + 1000·t_s, +1000).
    pub run_start_unix_ms: f64,
    /// Wall clock at the start of the counted window, unix ms.
    pub window_start_unix_ms: f64,
}

/// The histograms an exact merge needs, each HdrHistogram V2 + deflate
/// (the "compressed" V2 encoding), base64, latencies in µs; absent when
/// empty. Together they rebuild every latency figure of the document the
/// way one run would (see `report::headline`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Histograms {
    /// OK responses of the counted window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<String>,
    /// Unfinished requests older than the OK median at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub censored: Option<String>,
    /// Unfinished and timed-out requests at their age.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unanswered: Option<String>,
    /// Failed requests that got an ending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// Every counted request unanswered or unsent at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<String>,
    /// Under `--rate`: OK responses from the actual send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected: Option<String>,
    /// One per timeline second that had OK responses: their latency
    /// (2 significant digits, as the timeline's).
    #[serde(default)]
    pub seconds: Vec<SecondHistogram>,
}

/// The OK latencies of one timeline second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondHistogram {
    /// The timeline row's `t_s`.
    pub t_s: u64,
    pub ok_us: String,
}

/// One segment as a merged document lists it (`segments`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentSummary {
    pub index: u32,
    /// Where it came from (a file name), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Counted requests: ok + errors + unfinished + unsent.
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub throughput_rps: f64,
    /// Its own p99 (µs), for spotting a slow segment; never averaged.
    pub p99_us: u64,
    pub connections: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_rps: Option<f64>,
    pub late_ms: f64,
    pub window_start_unix_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_parses_with_errors_naming_the_range() {
        type Want = Result<(u32, u32), &'static str>;
        let cases: &[(&str, Want)] = &[
            ("0/4", Ok((0, 4))),
            ("3/4", Ok((3, 4))),
            ("0/1", Ok((0, 1))),
            ("4/4", Err("--segment 4/4: the index runs from 0 to 3")),
            ("1/0", Err("the count must be at least 1")),
            ("a/4", Err("expected I/N")),
            ("2", Err("expected I/N")),
            ("-1/4", Err("expected I/N")),
        ];
        for (text, want) in cases {
            let got = Segment::parse(text);
            match (got, want) {
                (Ok(s), Ok((i, n))) => assert_eq!((s.index, s.count), (*i, *n), "{text}"),
                (Err(e), Err(w)) => assert!(e.contains(w), "{text}: {e}"),
                (g, w) => panic!("{text}: got {g:?}, want {w:?}"),
            }
        }
    }

    #[test]
    fn shares_add_up_and_the_first_take_the_remainder() {
        for (total, n) in [(10u64, 4u32), (3, 4), (0, 3), (1_000_001, 7), (8, 8)] {
            let shares: Vec<u64> = (0..n)
                .map(|index| Segment { index, count: n }.share(total))
                .collect();
            assert_eq!(shares.iter().sum::<u64>(), total);
            for (i, s) in shares.iter().enumerate() {
                let want = total / u64::from(n) + u64::from((i as u64) < total % u64::from(n));
                assert_eq!(*s, want);
            }
        }
    }

    #[test]
    fn lanes_of_all_segments_and_threads_cover_each_slot_once() {
        // Lane l's k-th request is slot k·lanes + l: over every segment
        // and thread, each slot of the whole schedule is taken exactly once.
        let (n, threads) = (3u32, 2usize);
        let mut slots = Vec::new();
        for index in 0..n {
            let s = Segment { index, count: n };
            for j in 0..threads {
                let (lane, lanes) = s.lane(j, threads);
                assert_eq!(lanes, 6);
                slots.extend((0..10).map(|k| k * lanes + lane));
                // Segment I's requests are exactly the slots ≡ I (mod N).
                assert!((0..10).all(|k| (k * lanes + lane) % u64::from(n) == u64::from(index)));
            }
        }
        slots.sort_unstable();
        assert_eq!(slots, (0..60).collect::<Vec<u64>>());
    }

    #[test]
    fn start_at_reads_rfc3339_and_unix_seconds_and_refuses_far_times() {
        let now = UNIX_EPOCH + Duration::from_secs(1_795_467_000); // 2026-11-23T20:50:00Z
        let at = |s| parse_start_at(s, now);
        let want = UNIX_EPOCH + Duration::from_secs(1_795_467_600);
        assert_eq!(at("2026-11-23T21:00:00Z").unwrap(), want);
        assert_eq!(at("2026-11-23T21:00:00+00:00").unwrap(), want);
        assert_eq!(
            at("2026-11-23T21:00:00.250Z").unwrap(),
            want + Duration::from_millis(250)
        );
        assert_eq!(at("1795467600").unwrap(), want);
        assert_eq!(
            at("1795467600.5").unwrap(),
            want + Duration::from_millis(500)
        );
        assert!(at("2026-11-25T21:00:00Z")
            .unwrap_err()
            .contains("h from now"));
        assert!(at("2026-11-23T10:00:00Z").unwrap_err().contains("h ago"));
        assert!(at("2026-11-23 21:00")
            .unwrap_err()
            .contains("not a UTC time"));
        assert!(at("2026-11-23T21:00:00+01:00").is_err());
        assert!(at("soon").unwrap_err().contains("not unix seconds"));
        // A few seconds late is allowed: the segment says how late.
        assert!(at("2026-11-23T20:49:58Z").is_ok());
    }

    /// Regression (tests/properties.rs found it): unix seconds or a year
    /// too large for the clock panicked adding to the epoch; now refused.
    #[test]
    fn a_start_at_beyond_the_clock_is_refused_not_a_panic() {
        let now = UNIX_EPOCH + Duration::from_secs(1_795_467_000);
        for text in [
            "10000000000000000000",
            "1e300",
            "99999999999999999-01-01T00:00:00Z",
            "10000-01-01T00:00:00Z",
        ] {
            assert!(parse_start_at(text, now).is_err(), "{text}");
        }
    }

    #[test]
    fn rfc3339_round_trips() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_467_600_250);
        assert_eq!(rfc3339_ms(t), "2026-11-23T21:00:00.250Z");
        assert_eq!(parse_rfc3339_utc(&rfc3339_ms(t)), Some(t));
    }
}
