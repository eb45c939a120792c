//! Gunther's Universal Scalability Law fitted to throughput against a swept
//! value N (processes, threads, workers, connections), and the knee of a
//! sweep: the smallest N whose throughput is not significantly below the
//! best.
//!
//! X(N) = λN / (1 + σ(N−1) + κN(N−1)): σ is contention (queueing on a
//! shared resource), κ coherency (the cost of keeping copies in step). The
//! fit minimises squared throughput error: for a given λ, σ and κ follow by
//! least squares on λN/X − 1 = σ(N−1) + κN(N−1) (both kept ≥ 0), and λ is
//! found by golden-section search.

use super::bootstrap::median;
use super::significance::mann_whitney_p;

/// A fitted USL curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UslFit {
    /// Throughput of one unit without contention (per second).
    pub lambda: f64,
    /// Contention σ.
    pub sigma: f64,
    /// Coherency κ.
    pub kappa: f64,
    /// Share of throughput variance the curve explains.
    pub r_squared: f64,
}

impl UslFit {
    /// Predicted throughput at `n`.
    pub fn throughput(&self, n: f64) -> f64 {
        self.lambda * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }

    /// N* = sqrt((1−σ)/κ), where throughput peaks; `None` without coherency
    /// cost (the curve then only flattens) or with σ ≥ 1.
    pub fn peak_n(&self) -> Option<f64> {
        (self.kappa > 0.0 && self.sigma < 1.0).then(|| ((1.0 - self.sigma) / self.kappa).sqrt())
    }
}

/// Fit the USL to (N, throughput) points. `None` with fewer than three
/// distinct N, a non-positive N or throughput.
pub fn fit(points: &[(f64, f64)]) -> Option<UslFit> {
    let mut ns: Vec<f64> = points.iter().map(|p| p.0).collect();
    ns.sort_by(f64::total_cmp);
    ns.dedup();
    if ns.len() < 3
        || points
            .iter()
            .any(|&(n, x)| n <= 0.0 || x <= 0.0 || !x.is_finite())
    {
        return None;
    }
    // λ·N ≥ X when σ, κ ≥ 0, so λ starts at the best per-unit rate.
    let lo = points.iter().map(|&(n, x)| x / n).fold(0.0, f64::max);
    let sse_at = |lambda: f64| {
        let (s, k) = coefficients(points, lambda);
        let f = UslFit {
            lambda,
            sigma: s,
            kappa: k,
            r_squared: 0.0,
        };
        points
            .iter()
            .map(|&(n, x)| (x - f.throughput(n)).powi(2))
            .sum::<f64>()
    };
    // Golden-section search on log λ over [lo, 10·lo].
    let (mut a, mut b) = (lo.ln(), (lo * 10.0).ln());
    let g = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = b - g * (b - a);
    let mut d = a + g * (b - a);
    for _ in 0..200 {
        if sse_at(c.exp()) < sse_at(d.exp()) {
            b = d;
        } else {
            a = c;
        }
        c = b - g * (b - a);
        d = a + g * (b - a);
    }
    let lambda = ((a + b) / 2.0).exp();
    let (sigma, kappa) = coefficients(points, lambda);
    let mut f = UslFit {
        lambda,
        sigma,
        kappa,
        r_squared: 0.0,
    };
    let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    let ss_tot: f64 = points.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let ss_res: f64 = points
        .iter()
        .map(|&(n, x)| (x - f.throughput(n)).powi(2))
        .sum();
    f.r_squared = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    Some(f)
}

/// σ, κ ≥ 0 by least squares on y = λN/X − 1 = σ·u + κ·v, u = N−1,
/// v = N(N−1), for a given λ.
fn coefficients(points: &[(f64, f64)], lambda: f64) -> (f64, f64) {
    let (mut suu, mut svv, mut suv, mut suy, mut svy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(n, x) in points {
        let (u, v, y) = (n - 1.0, n * (n - 1.0), lambda * n / x - 1.0);
        suu += u * u;
        svv += v * v;
        suv += u * v;
        suy += u * y;
        svy += v * y;
    }
    let det = suu * svv - suv * suv;
    if det.abs() > f64::EPSILON * suu * svv {
        let s = (suy * svv - svy * suv) / det;
        let k = (svy * suu - suy * suv) / det;
        if s >= 0.0 && k >= 0.0 {
            return (s, k);
        }
    }
    // One coefficient at its bound of zero: the better of the two one-term fits.
    let only_s = if suu > 0.0 { (suy / suu).max(0.0) } else { 0.0 };
    let only_k = if svv > 0.0 { (svy / svv).max(0.0) } else { 0.0 };
    let err = |s: f64, k: f64| {
        points
            .iter()
            .map(|&(n, x)| (lambda * n / x - 1.0 - s * (n - 1.0) - k * n * (n - 1.0)).powi(2))
            .sum::<f64>()
    };
    if err(only_s, 0.0) <= err(0.0, only_k) {
        (only_s, 0.0)
    } else {
        (0.0, only_k)
    }
}

/// The knee of a sweep: the smallest swept value whose throughput (its
/// repeats) is not significantly below the best value's (highest median),
/// by a two-sided rank test at `alpha`. With one repeat per value no test
/// can say "below", so the smallest value at or above the best median is
/// returned only when it *is* the best. `None` for an empty sweep.
pub fn knee(sweep: &[(f64, Vec<f64>)], alpha: f64) -> Option<f64> {
    let best = sweep
        .iter()
        .filter(|(_, xs)| !xs.is_empty())
        .max_by(|x, y| median(&x.1).total_cmp(&median(&y.1)))?;
    let mut sorted: Vec<&(f64, Vec<f64>)> = sweep.iter().filter(|(_, xs)| !xs.is_empty()).collect();
    sorted.sort_by(|x, y| x.0.total_cmp(&y.0));
    sorted
        .into_iter()
        .find(|(_, xs)| {
            let below = median(xs) < median(&best.1);
            !below || mann_whitney_p(xs, &best.1) >= alpha
        })
        .map(|(n, _)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn truth() -> UslFit {
        UslFit {
            lambda: 1000.0,
            sigma: 0.05,
            kappa: 0.002,
            r_squared: 1.0,
        }
    }

    #[test]
    fn exact_points_give_back_sigma_and_kappa() {
        let t = truth();
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 48.0]
            .iter()
            .map(|&n| (n, t.throughput(n)))
            .collect();
        let f = fit(&pts).unwrap();
        assert!((f.sigma - 0.05).abs() < 1e-3, "{f:?}");
        assert!((f.kappa - 0.002).abs() < 1e-4, "{f:?}");
        assert!((f.lambda - 1000.0).abs() < 5.0, "{f:?}");
        assert!(f.r_squared > 0.9999);
        // N* = sqrt(0.95 / 0.002) ≈ 21.79
        assert!(
            (f.peak_n().unwrap() - 21.79).abs() < 0.5,
            "{:?}",
            f.peak_n()
        );
    }

    #[test]
    fn noisy_points_without_n_one_still_fit() {
        let t = truth();
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let pts: Vec<(f64, f64)> = [2.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 40.0]
            .iter()
            .flat_map(|&n| {
                let x = t.throughput(n);
                (0..3)
                    .map(|_| (n, x * (1.0 + 0.02 * (rng.gen::<f64>() - 0.5))))
                    .collect::<Vec<_>>()
            })
            .collect();
        let f = fit(&pts).unwrap();
        assert!((f.sigma - 0.05).abs() < 0.02, "{f:?}");
        assert!((f.kappa - 0.002).abs() < 0.0005, "{f:?}");
        assert!(f.r_squared > 0.98, "{f:?}");
        let peak = f.peak_n().unwrap();
        assert!((peak - 21.8).abs() < 4.0, "{peak}");
    }

    #[test]
    fn linear_scaling_has_no_peak() {
        let pts: Vec<(f64, f64)> = (1..=6).map(|n| (n as f64, 500.0 * n as f64)).collect();
        let f = fit(&pts).unwrap();
        assert!(f.sigma < 1e-6 && f.kappa < 1e-9, "{f:?}");
        assert_eq!(f.peak_n(), None);
        assert!(fit(&pts[..2]).is_none());
    }

    #[test]
    fn knee_is_the_smallest_value_not_significantly_below_the_best() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut jitter = |x: f64| -> Vec<f64> {
            (0..6)
                .map(|_| x * (1.0 + 0.02 * (rng.gen::<f64>() - 0.5)))
                .collect()
        };
        let sweep = vec![
            (1.0, jitter(1000.0)),
            (2.0, jitter(1800.0)),
            (4.0, jitter(2995.0)),
            (8.0, jitter(3000.0)),
            (16.0, jitter(2990.0)),
        ];
        assert_eq!(knee(&sweep, 0.05), Some(4.0));
        assert_eq!(knee(&[], 0.05), None);
    }
}
