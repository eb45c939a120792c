//! Medians and a seeded percentile bootstrap of the relative change of
//! medians between two independent samples (per-repeat figures of A and B).
//!
//! The resampling is seeded (ChaCha8), so the same inputs and seed give the
//! same interval on every machine.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use statrs::statistics::{Data, Median};

/// Resamples drawn for an interval: enough that the 2.5% and 97.5% points
/// move by well under a tenth of a percent between seeds.
pub const RESAMPLES: usize = 10_000;

/// The median of a sample (the mean of the two middle values for an even
/// count); NaN for an empty sample.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    Data::new(values.to_vec()).median()
}

/// The relative change of medians, B over A, in percent.
pub fn change_pct(a: &[f64], b: &[f64]) -> f64 {
    let ma = median(a);
    (median(b) / ma - 1.0) * 100.0
}

/// A percentile-bootstrap `level` interval (e.g. 0.95) of the change of
/// medians B over A in percent: each side resampled with replacement on its
/// own, `resamples` times. A resample whose A median is zero has no
/// relative change and is dropped; `None` when either side has fewer than
/// two values or more than 2.5% of resamples were dropped (then a tail of
/// the interval itself is undefined).
pub fn change_ci_pct(
    a: &[f64],
    b: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    if a.len() < 2 || b.len() < 2 || resamples == 0 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    let mut changes = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for x in ra.iter_mut() {
            *x = a[rng.gen_range(0..a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[rng.gen_range(0..b.len())];
        }
        let ma = median(&ra);
        if ma != 0.0 {
            changes.push((median(&rb) / ma - 1.0) * 100.0);
        }
    }
    if (changes.len() as f64) < resamples as f64 * 0.975 {
        return None;
    }
    changes.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some((quantile(&changes, tail), quantile(&changes, 1.0 - tail)))
}

/// The `q` quantile of sorted values, linear between neighbours.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn change_is_b_over_a() {
        assert!((change_pct(&[100.0, 100.0], &[112.0, 112.0]) - 12.0).abs() < 1e-9);
        assert!((change_pct(&[100.0], &[90.0]) + 10.0).abs() < 1e-9);
    }

    #[test]
    fn interval_covers_a_known_shift_and_is_seeded() {
        // B is A scaled by 1.15 plus the same jitter: the change is 15%.
        let a: Vec<f64> = (0..12).map(|i| 1000.0 + (i as f64 * 7.3) % 40.0).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.15).collect();
        let (lo, hi) = change_ci_pct(&a, &b, 0.95, RESAMPLES, 7).unwrap();
        assert!(lo < 15.0 && 15.0 < hi, "{lo} {hi}");
        assert!(lo > 10.0 && hi < 20.0, "{lo} {hi}");
        assert_eq!(
            change_ci_pct(&a, &b, 0.95, RESAMPLES, 7),
            Some((lo, hi)),
            "same seed, same interval"
        );
    }

    #[test]
    fn no_interval_from_one_value() {
        assert_eq!(change_ci_pct(&[1.0], &[1.0, 2.0], 0.95, 100, 1), None);
    }

    #[test]
    fn a_rare_zero_drops_resamples_a_common_one_the_interval() {
        // One zero in eleven: a resampled median is zero only when six or
        // more of eleven draws hit it, which almost never happens.
        let mut a = vec![0.0];
        a.extend((0..10).map(|i| 0.1 + i as f64 * 0.001));
        let b: Vec<f64> = a.iter().map(|x| x * 1.1 + 0.01).collect();
        assert!(change_ci_pct(&a, &b, 0.95, 2000, 3).is_some());
        // Half zeros: the A median is zero in about half the resamples.
        let half = [0.0, 0.0, 0.0, 0.1, 0.1, 0.1];
        assert_eq!(change_ci_pct(&half, &b[..6], 0.95, 2000, 3), None);
    }
}
