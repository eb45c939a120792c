//! The counted window, shared by the workers and the collector.
//!
//! With a timed warm-up its start is fixed before the run. With a
//! steady-state warm-up (`--warmup-until-steady`) the collector decides it
//! mid-run, the moment the per-second throughput has held steady, and the
//! workers see it on their next request; the warm-up's ceiling decides it
//! if the throughput never settles. Either way the load never pauses: the
//! warm-up flows straight into the counted window.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Seconds that must agree, and how closely, for throughput to be steady.
pub const STEADY_SECONDS: usize = 3;
pub const STEADY_TOLERANCE: f64 = 0.05;

const UNDECIDED: u64 = u64::MAX;

#[derive(Debug)]
pub struct Window {
    t0: Instant,
    /// Offset of the start from t0 in nanoseconds; UNDECIDED until known.
    start_ns: AtomicU64,
    /// The longest the warm-up may last.
    ceiling: Duration,
    duration: Option<Duration>,
    /// Whether the start came from steadiness rather than the ceiling.
    steady: AtomicU64,
}

impl Window {
    pub fn fixed(t0: Instant, warmup: Duration, duration: Option<Duration>) -> Window {
        Window {
            t0,
            start_ns: AtomicU64::new(warmup.as_nanos() as u64),
            ceiling: warmup,
            duration,
            steady: AtomicU64::new(0),
        }
    }

    pub fn until_steady(t0: Instant, ceiling: Duration, duration: Option<Duration>) -> Window {
        Window {
            t0,
            start_ns: AtomicU64::new(UNDECIDED),
            ceiling,
            duration,
            steady: AtomicU64::new(0),
        }
    }

    /// The start, once decided.
    #[inline]
    pub fn start(&self) -> Option<Instant> {
        match self.start_ns.load(Ordering::Relaxed) {
            UNDECIDED => None,
            ns => Some(self.t0 + Duration::from_nanos(ns)),
        }
    }

    /// Whether the counted window has begun by `now`: its start decided
    /// and reached (a fixed window knows its start from the first moment).
    #[inline]
    pub fn opened_by(&self, now: Instant) -> bool {
        self.start().is_some_and(|start| now >= start)
    }

    /// The start, or where the ceiling will put it.
    #[inline]
    pub fn start_or_ceiling(&self) -> Instant {
        self.start().unwrap_or(self.t0 + self.ceiling)
    }

    /// Fixes the start at `at` if it is still open; the first caller wins.
    pub fn decide(&self, at: Instant, steady: bool) {
        let ns = at
            .saturating_duration_since(self.t0)
            .min(self.ceiling)
            .as_nanos() as u64;
        if self
            .start_ns
            .compare_exchange(UNDECIDED, ns, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
            && steady
        {
            self.steady.store(1, Ordering::Relaxed);
        }
    }

    /// Called by workers on every loop: past the ceiling, the ceiling decides.
    #[inline]
    pub fn tick(&self, now: Instant) {
        if self.start_ns.load(Ordering::Relaxed) == UNDECIDED && now >= self.t0 + self.ceiling {
            self.decide(self.t0 + self.ceiling, false);
        }
    }

    pub fn reached_steady(&self) -> bool {
        self.steady.load(Ordering::Relaxed) == 1
    }

    /// Whether a request scheduled at `sched` is counted.
    #[inline]
    pub fn counts(&self, sched: Instant) -> bool {
        match self.start() {
            None => false,
            Some(s) => sched >= s && self.duration.is_none_or(|d| sched < s + d),
        }
    }

    /// Whether something in progress from `from` to `to` (a request from
    /// its send to its ending) was so at some moment of the window.
    #[inline]
    pub fn meets(&self, from: Instant, to: Instant) -> bool {
        match self.start() {
            None => false,
            Some(s) => to >= s && self.duration.is_none_or(|d| from < s + d),
        }
    }

    /// The end of the run: the counted window's end, or ten years away
    /// ("no time limit") when only a request count stops it.
    #[inline]
    pub fn deadline(&self) -> Instant {
        let limit = self
            .duration
            .unwrap_or(Duration::from_secs(10 * 365 * 86_400));
        let s = self.start_or_ceiling();
        s.checked_add(limit)
            .unwrap_or_else(|| s + Duration::from_secs(365 * 86_400))
    }

    /// The counted window's end, if it has one.
    pub fn end(&self) -> Option<Instant> {
        self.duration.map(|d| self.start_or_ceiling() + d)
    }

    /// Whether the second starting at `sec` seconds is still warm-up.
    pub fn is_warmup_second(&self, sec: u64) -> bool {
        match self.start() {
            None => true,
            Some(s) => self.t0 + Duration::from_secs(sec) < s,
        }
    }
}

/// Whether the last `STEADY_SECONDS` per-second rates agree within the
/// tolerance (and are not all zero).
pub fn is_steady(rates: &[f64]) -> bool {
    if rates.len() < STEADY_SECONDS {
        return false;
    }
    let last = &rates[rates.len() - STEADY_SECONDS..];
    let (lo, hi) = last
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    hi > 0.0 && (hi - lo) / hi <= STEADY_TOLERANCE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steadiness_needs_three_close_seconds() {
        let cases: &[(&[f64], bool)] = &[
            (&[100.0, 500.0, 1000.0, 1010.0, 1020.0], true),
            (&[1000.0, 1010.0], false),
            (&[900.0, 1000.0, 1100.0], false),
            (&[0.0, 0.0, 0.0], false),
            (&[2000.0, 1990.0, 1960.0], true),
        ];
        for (rates, want) in cases {
            assert_eq!(is_steady(rates), *want, "{rates:?}");
        }
    }

    #[test]
    fn the_ceiling_decides_when_nothing_else_does() {
        let t0 = Instant::now();
        let w = Window::until_steady(t0, Duration::from_secs(5), Some(Duration::from_secs(2)));
        assert!(!w.counts(t0 + Duration::from_secs(6)));
        w.tick(t0 + Duration::from_secs(4));
        assert_eq!(w.start(), None);
        w.tick(t0 + Duration::from_secs(5));
        assert_eq!(w.start(), Some(t0 + Duration::from_secs(5)));
        assert!(!w.reached_steady());
        assert!(w.counts(t0 + Duration::from_secs(6)) && !w.counts(t0 + Duration::from_secs(8)));
        // A later decision does not move it.
        w.decide(t0 + Duration::from_secs(1), true);
        assert_eq!(w.start(), Some(t0 + Duration::from_secs(5)));
    }

    #[test]
    fn a_steady_decision_starts_the_window_and_moves_the_deadline() {
        let t0 = Instant::now();
        let w = Window::until_steady(t0, Duration::from_secs(60), Some(Duration::from_secs(10)));
        assert_eq!(w.deadline(), t0 + Duration::from_secs(70));
        w.decide(t0 + Duration::from_secs(7), true);
        assert!(w.reached_steady());
        assert_eq!(w.deadline(), t0 + Duration::from_secs(17));
        assert!(w.is_warmup_second(6) && !w.is_warmup_second(7));
    }

    #[test]
    fn a_span_meets_the_window_when_it_overlaps_it() {
        let t0 = Instant::now();
        let s = |secs: u64| t0 + Duration::from_secs(secs);
        let w = Window::fixed(t0, Duration::from_secs(2), Some(Duration::from_secs(3)));
        // Window [2 s, 5 s).
        assert!(w.meets(s(0), s(10)), "across the whole window");
        assert!(w.meets(s(1), s(2)) && w.meets(s(4), s(9)));
        assert!(!w.meets(s(0), s(1)), "ended in the warm-up");
        assert!(!w.meets(s(5), s(6)), "sent after the window");
        let open = Window::until_steady(t0, Duration::from_secs(5), None);
        assert!(!open.meets(s(0), s(9)), "no window yet");
        open.decide(s(1), true);
        assert!(open.meets(s(100), s(101)), "no end");
    }
}
