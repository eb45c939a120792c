//! The mirror's counters and the pairing of each mirrored request's
//! answers: the primary's, every shadow's, and the second primary's when
//! body diffs filter noise.
//!
//! Counting is done so that nothing is lost silently: every shadow copy is
//! either sent or counted dropped (a [`QueueItem`] counts itself dropped
//! when it is dropped unsent), and every sent copy ends answered, timed
//! out or failed. Nothing here does I/O.

use hdrhistogram::Histogram;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The paired differences kept exactly before sampling starts: 4 MiB of
/// `i64`s per shadow at most, whatever the run's length.
pub const PAIRED_RESERVOIR: usize = 500_000;
/// Distinct paths tracked for mismatches; the rest are counted under
/// `(other paths)`.
pub const MISMATCH_PATHS: usize = 200;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("histogram bounds")
}

/// One answer to one copy of a request.
#[derive(Debug, Clone)]
pub struct Answer {
    /// From sending the request to the response head, microseconds.
    pub latency_us: u64,
    pub status: u16,
    /// The body, when body diffs are on and it fit the body limit.
    pub body: Option<Vec<u8>>,
}

/// Counters of one shadow (or of the second primary).
#[derive(Debug, Default)]
pub struct ShadowStats {
    /// Copies made for this shadow: each ends dropped, answered, timed
    /// out or failed.
    pub offered: AtomicU64,
    pub sent: AtomicU64,
    pub answered: AtomicU64,
    pub dropped: AtomicU64,
    /// Of `dropped`: the request body did not fit the body limit.
    pub dropped_body: AtomicU64,
    /// Of `dropped`: skipped while the shadow was backed off.
    pub backed_off: AtomicU64,
    /// The shadow's circuit breaker (backoff.rs).
    pub breaker: super::backoff::Breaker,
    pub timeouts: AtomicU64,
    pub errors: AtomicU64,
    pub status_mismatches: AtomicU64,
    pub body_mismatches: AtomicU64,
    /// Body differences seen but found to be noise (the two primaries
    /// differed there too).
    pub body_noise: AtomicU64,
    /// Bodies that could not be compared (one side missing or too large).
    pub body_unchecked: AtomicU64,
    pub slow: Mutex<ShadowSlow>,
}

/// The parts of a shadow's figures that need a lock.
#[derive(Debug)]
pub struct ShadowSlow {
    pub latency_us: Histogram<u64>,
    pub paired: Reservoir,
    /// Path → (status mismatches, body mismatches).
    pub by_path: HashMap<String, (u64, u64)>,
}

impl Default for ShadowSlow {
    fn default() -> Self {
        ShadowSlow {
            latency_us: new_histogram(),
            paired: Reservoir::new(PAIRED_RESERVOIR),
            by_path: HashMap::new(),
        }
    }
}

impl ShadowStats {
    /// Every copy made so far has ended.
    pub fn settled(&self) -> bool {
        let done = self.dropped.load(Ordering::Relaxed)
            + self.answered.load(Ordering::Relaxed)
            + self.timeouts.load(Ordering::Relaxed)
            + self.errors.load(Ordering::Relaxed);
        done >= self.offered.load(Ordering::Relaxed)
    }

    fn mismatch(&self, path: &str, status: bool) {
        let mut slow = self.slow.lock().expect("shadow stats");
        let key = if slow.by_path.contains_key(path) || slow.by_path.len() < MISMATCH_PATHS {
            path.to_string()
        } else {
            "(other paths)".to_string()
        };
        let e = slow.by_path.entry(key).or_default();
        if status {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    }
}

/// Counters of the primary path.
#[derive(Debug)]
pub struct PrimaryStats {
    pub requests: AtomicU64,
    pub mirrored: AtomicU64,
    pub errors: AtomicU64,
    pub timeouts: AtomicU64,
    pub latency_us: Mutex<Histogram<u64>>,
}

impl Default for PrimaryStats {
    fn default() -> Self {
        PrimaryStats {
            requests: AtomicU64::new(0),
            mirrored: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            latency_us: Mutex::new(new_histogram()),
        }
    }
}

/// A uniform sample of at most `cap` values (Algorithm R): exact until
/// `cap`, a fair sample after.
#[derive(Debug)]
pub struct Reservoir {
    pub values: Vec<i64>,
    pub seen: u64,
    cap: usize,
    rng: u64,
}

impl Reservoir {
    pub fn new(cap: usize) -> Reservoir {
        Reservoir {
            values: Vec::new(),
            seen: 0,
            cap,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    pub fn push(&mut self, v: i64) {
        self.seen += 1;
        if self.values.len() < self.cap {
            self.values.push(v);
            return;
        }
        // xorshift64*: cheap, and fair enough for a sample.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) % self.seen;
        if (r as usize) < self.cap {
            self.values[r as usize] = v;
        }
    }
}

/// Which copy of a request a part is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Primary,
    /// Index into the mirror's shadows (the second primary, if any, is the
    /// last).
    Shadow(usize),
}

/// The answers to one mirrored request, judged when the last arrives.
pub struct Pair {
    path: String,
    parts: Mutex<PairParts>,
    judge: Arc<Judge>,
}

struct PairParts {
    primary: Option<Answer>,
    shadows: Vec<Option<Answer>>,
    pending: usize,
}

/// What judging a pair needs: each shadow's stats and whether the last
/// shadow is the second primary.
pub struct Judge {
    pub shadows: Vec<Arc<ShadowStats>>,
    pub has_primary_b: bool,
    pub diff_bodies: bool,
}

impl Pair {
    pub fn new(path: String, judge: Arc<Judge>) -> Arc<Pair> {
        let n = judge.shadows.len();
        Arc::new(Pair {
            path,
            parts: Mutex::new(PairParts {
                primary: None,
                shadows: vec![None; n],
                pending: n + 1,
            }),
            judge,
        })
    }

    /// A part is in (None: it was dropped, timed out or failed). The last
    /// part in judges the pair.
    pub fn finish(&self, part: Part, answer: Option<Answer>) {
        let mut p = self.parts.lock().expect("pair");
        match part {
            Part::Primary => p.primary = answer,
            Part::Shadow(i) => p.shadows[i] = answer,
        }
        p.pending -= 1;
        if p.pending == 0 {
            let primary = p.primary.take();
            let shadows = std::mem::take(&mut p.shadows);
            drop(p);
            self.judge(primary, shadows);
        }
    }

    fn judge(&self, primary: Option<Answer>, mut shadows: Vec<Option<Answer>>) {
        let Some(primary) = primary else { return };
        let j = &self.judge;
        let reference = if j.has_primary_b {
            shadows.pop().flatten()
        } else {
            None
        };
        for (i, shadow) in shadows.into_iter().enumerate() {
            let Some(shadow) = shadow else { continue };
            let stats = &j.shadows[i];
            stats
                .slow
                .lock()
                .expect("shadow stats")
                .paired
                .push(shadow.latency_us as i64 - primary.latency_us as i64);
            let status_noise = reference
                .as_ref()
                .is_some_and(|b| b.status != primary.status);
            if shadow.status != primary.status {
                if !status_noise {
                    stats.status_mismatches.fetch_add(1, Ordering::Relaxed);
                    stats.mismatch(&self.path, true);
                }
                continue;
            }
            if !j.diff_bodies {
                continue;
            }
            let b_body = reference.as_ref().and_then(|b| b.body.as_deref());
            match (&primary.body, &shadow.body) {
                (Some(a), Some(s)) if j.has_primary_b && b_body.is_none() => {
                    // No second answer to tell noise from change.
                    let _ = (a, s);
                    stats.body_unchecked.fetch_add(1, Ordering::Relaxed);
                }
                (Some(a), Some(s)) => match body_verdict(a, b_body, s) {
                    Verdict::Same => {}
                    Verdict::Noise => {
                        stats.body_noise.fetch_add(1, Ordering::Relaxed);
                    }
                    Verdict::Differs => {
                        stats.body_mismatches.fetch_add(1, Ordering::Relaxed);
                        stats.mismatch(&self.path, false);
                    }
                },
                _ => {
                    stats.body_unchecked.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// What comparing a shadow's body with the primary's found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Same,
    /// Different only where the two primaries differ from each other too.
    Noise,
    Differs,
}

/// Compares bodies line by line, in the spirit of Diffy: lines where the
/// primary `a` and the second primary `b` differ (a timestamp, a request
/// id) are noise, and a shadow differing there is not a mismatch; a shadow
/// differing anywhere else is. Without `b`, any difference counts.
pub fn body_verdict(a: &[u8], b: Option<&[u8]>, shadow: &[u8]) -> Verdict {
    if a == shadow {
        return Verdict::Same;
    }
    let Some(b) = b else {
        return Verdict::Differs;
    };
    let la: Vec<&[u8]> = a.split(|c| *c == b'\n').collect();
    let lb: Vec<&[u8]> = b.split(|c| *c == b'\n').collect();
    let ls: Vec<&[u8]> = shadow.split(|c| *c == b'\n').collect();
    if la.len() != lb.len() {
        // The primaries disagree on the body's shape: all of it is noise.
        return Verdict::Noise;
    }
    if ls.len() != la.len() {
        return Verdict::Differs;
    }
    for i in 0..la.len() {
        if ls[i] != la[i] && la[i] == lb[i] {
            return Verdict::Differs;
        }
    }
    Verdict::Noise
}

/// The median of `values` and a distribution-free 95% confidence interval
/// for it from order statistics: with n samples, the number below the true
/// median is Binomial(n, 1/2), so the interval between the k-th smallest
/// and the k-th largest holds the median with probability
/// 1 − 2·P(Bin(n, ½) < k); k is the largest rank keeping that ≥ 95%.
/// Exact for any distribution, no resampling. None under 6 samples (no
/// pair of ranks reaches 95% below that).
pub fn median_ci95(values: &mut [i64]) -> Option<(f64, i64, i64)> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    values.sort_unstable();
    let median = if n % 2 == 1 {
        values[n / 2] as f64
    } else {
        (values[n / 2 - 1] as f64 + values[n / 2] as f64) / 2.0
    };
    let k = ci_rank(n)?;
    Some((median, values[k - 1], values[n - k]))
}

/// The largest k (1-based) with P(Bin(n, ½) ≤ k − 1) ≤ 0.025, or None.
pub fn ci_rank(n: usize) -> Option<usize> {
    let nf = n as f64;
    let ln2 = std::f64::consts::LN_2;
    // log C(n, j) built up term by term; exp underflows to 0 harmlessly
    // for the far tail of large n.
    let mut log_c = 0.0f64;
    let mut cdf = 0.0f64;
    let mut k = 0usize;
    for j in 0..=n / 2 {
        if j > 0 {
            log_c += ((n - j + 1) as f64).ln() - (j as f64).ln();
        }
        cdf += (log_c - nf * ln2).exp();
        if cdf > 0.025 {
            break;
        }
        // P(Bin ≤ j) ≤ 0.025: rank j + 1 is allowed.
        k = j + 1;
    }
    (k >= 1).then_some(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_ranks_match_the_binomial_tables() {
        // Conover's table of order statistics for the median at 95%.
        for (n, want) in [
            (5, None),
            (6, Some(1)),
            (10, Some(2)),
            (20, Some(6)),
            (30, Some(10)),
            (100, Some(40)),
        ] {
            assert_eq!(ci_rank(n), want, "n = {n}");
        }
        // Large n: close to n/2 − 0.98·√n.
        let k = ci_rank(1_000_000).unwrap() as f64;
        assert!((k - (500_000.0 - 980.0)).abs() < 3.0, "{k}");
    }

    #[test]
    fn median_and_interval_of_a_known_sample() {
        let mut v: Vec<i64> = (1..=20).rev().collect();
        let (m, lo, hi) = median_ci95(&mut v).unwrap();
        assert_eq!(m, 10.5);
        assert_eq!((lo, hi), (6, 15));
        assert!(median_ci95(&mut [1, 2, 3]).is_none());
        assert!(median_ci95(&mut []).is_none());
    }

    #[test]
    fn noise_lines_are_not_mismatches() {
        let a = b"id: 1\nname: x\ntime: 10";
        let b = b"id: 1\nname: x\ntime: 11";
        let same = b"id: 1\nname: x\ntime: 10";
        let noisy = b"id: 1\nname: x\ntime: 12";
        let changed = b"id: 1\nname: y\ntime: 12";
        let longer = b"id: 1\nname: x\ntime: 12\nextra";
        assert_eq!(body_verdict(a, Some(b), same), Verdict::Same);
        assert_eq!(body_verdict(a, Some(b), noisy), Verdict::Noise);
        assert_eq!(body_verdict(a, Some(b), changed), Verdict::Differs);
        assert_eq!(body_verdict(a, Some(b), longer), Verdict::Differs);
        assert_eq!(body_verdict(a, None, noisy), Verdict::Differs);
    }

    #[test]
    fn reservoir_is_bounded() {
        let mut r = Reservoir::new(10);
        for i in 0..1000 {
            r.push(i);
        }
        assert_eq!(r.values.len(), 10);
        assert_eq!(r.seen, 1000);
    }
}
