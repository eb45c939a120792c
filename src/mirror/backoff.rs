//! A circuit breaker per shadow: after [`TRIP_AFTER`] failures in a row
//! (connect refused, reset, timed out), copies to that shadow stop for a
//! back-off period; when it ends one copy goes as a probe. A probe that
//! fails doubles the period (up to [`MAX_BACKOFF_MS`]); any answer closes
//! the breaker.
//!
//! Why: a dead or resetting shadow costs a connect and a failure per copy,
//! 2,000 a second at a modest rate, on the same CPUs as the primary path;
//! backing off keeps that cost to a probe now and then. Copies skipped
//! while backed off are counted (`backed_off`, and in `dropped`), never
//! hidden. Times are microseconds on the mirror's own clock; nothing here
//! reads a clock or does I/O, so it is tested with plain numbers.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Failures in a row that open the breaker.
pub const TRIP_AFTER: u32 = 5;
/// The first back-off period.
pub const FIRST_BACKOFF_MS: u64 = 100;
/// The longest back-off period.
pub const MAX_BACKOFF_MS: u64 = 5_000;

/// What to do with one copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Send,
    /// Send it as the probe of a shadow that was backed off.
    Probe,
    BackedOff,
}

#[derive(Debug, Default)]
pub struct Breaker {
    /// Failures since the last answer.
    failures: AtomicU32,
    /// Back-off periods in a row; the period is FIRST << level.
    level: AtomicU32,
    /// 0: closed; else the time (µs) the current back-off ends.
    open_until_us: AtomicU64,
    /// Back-off periods begun (the first and each after a failed probe).
    pub periods: AtomicU64,
}

fn period_us(level: u32) -> u64 {
    (FIRST_BACKOFF_MS << level.min(16)).min(MAX_BACKOFF_MS) * 1000
}

impl Breaker {
    /// Cheap check for the primary path: is the shadow backed off now?
    pub fn backed_off(&self, now_us: u64) -> bool {
        let u = self.open_until_us.load(Ordering::Relaxed);
        u != 0 && now_us < u
    }

    /// Time left in the current back-off, µs (None: not backed off).
    pub fn remaining_us(&self, now_us: u64) -> Option<u64> {
        let u = self.open_until_us.load(Ordering::Relaxed);
        (u != 0 && now_us < u).then(|| u - now_us)
    }

    /// The sender's decision for one copy. Past the end of a back-off the
    /// first copy is the probe; it re-arms the back-off for the period or
    /// `probe_wait_us` (the shadow timeout), whichever is longer, so the
    /// copies after it wait for its outcome: one probe at a time.
    pub fn admit(&self, now_us: u64, probe_wait_us: u64) -> Admit {
        let u = self.open_until_us.load(Ordering::Acquire);
        if u == 0 {
            return Admit::Send;
        }
        if now_us < u {
            return Admit::BackedOff;
        }
        let level = self.level.load(Ordering::Relaxed);
        let next = (now_us + period_us(level).max(probe_wait_us)).max(1);
        match self
            .open_until_us
            .compare_exchange(u, next, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Admit::Probe,
            Err(_) => Admit::BackedOff,
        }
    }

    /// A copy failed (no answer: connect error, reset, timeout).
    pub fn failed(&self, now_us: u64, probe: bool) {
        let n = self.failures.fetch_add(1, Ordering::AcqRel) + 1;
        if probe {
            let level = (self.level.load(Ordering::Relaxed) + 1).min(16);
            self.level.store(level, Ordering::Relaxed);
            self.open_until_us
                .store((now_us + period_us(level)).max(1), Ordering::Release);
            self.periods.fetch_add(1, Ordering::Relaxed);
        } else if n >= TRIP_AFTER
            && self
                .open_until_us
                .compare_exchange(
                    0,
                    (now_us + period_us(0)).max(1),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
        {
            self.level.store(0, Ordering::Relaxed);
            self.periods.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The shadow answered (any status): it is reachable again.
    pub fn answered(&self) {
        // Read first: on the healthy path nothing is written.
        if self.failures.load(Ordering::Relaxed) != 0
            || self.open_until_us.load(Ordering::Relaxed) != 0
        {
            self.failures.store(0, Ordering::Relaxed);
            self.level.store(0, Ordering::Relaxed);
            self.open_until_us.store(0, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1000;

    #[test]
    fn opens_after_failures_in_a_row_and_an_answer_resets_the_count() {
        let b = Breaker::default();
        for _ in 0..TRIP_AFTER - 1 {
            b.failed(0, false);
        }
        b.answered();
        b.failed(0, false);
        assert_eq!(b.admit(1, 0), Admit::Send, "one failure after an answer");
        for _ in 0..TRIP_AFTER {
            b.failed(10, false);
        }
        assert!(b.backed_off(11));
        assert_eq!(b.admit(11, 0), Admit::BackedOff);
        assert_eq!(b.periods.load(Ordering::Relaxed), 1);
        // More failures of copies already in flight do not lengthen it.
        b.failed(20, false);
        assert_eq!(b.remaining_us(20), Some(10 + FIRST_BACKOFF_MS * MS - 20));
    }

    #[test]
    fn one_probe_after_the_period_failed_probes_double_it_up_to_the_cap() {
        let b = Breaker::default();
        for _ in 0..TRIP_AFTER {
            b.failed(0, false);
        }
        let mut now = 0;
        let mut period = FIRST_BACKOFF_MS * MS;
        for _ in 0..12 {
            now += period;
            assert_eq!(b.admit(now, 0), Admit::Probe);
            assert_eq!(b.admit(now, 0), Admit::BackedOff, "one probe at a time");
            b.failed(now, true);
            period = (period * 2).min(MAX_BACKOFF_MS * MS);
            assert_eq!(b.remaining_us(now), Some(period));
        }
        assert_eq!(period, MAX_BACKOFF_MS * MS);
        now += period;
        assert_eq!(b.admit(now, 0), Admit::Probe);
        b.answered();
        assert!(!b.backed_off(now));
        assert_eq!(b.admit(now, 0), Admit::Send);
    }

    /// A probe to a shadow that hangs takes the whole timeout to fail; no
    /// second probe goes while it may still be answered.
    #[test]
    fn a_probe_holds_the_next_one_back_for_the_shadow_timeout() {
        let b = Breaker::default();
        for _ in 0..TRIP_AFTER {
            b.failed(0, false);
        }
        let timeout = 2_000 * MS;
        let first = FIRST_BACKOFF_MS * MS;
        assert_eq!(b.admit(first, timeout), Admit::Probe);
        assert_eq!(b.admit(first + 2 * first, timeout), Admit::BackedOff);
        assert_eq!(b.admit(first + timeout - 1, timeout), Admit::BackedOff);
        // It timed out: the next period is twice the first, from then.
        b.failed(first + timeout, true);
        assert_eq!(b.remaining_us(first + timeout), Some(2 * first));
    }
}
