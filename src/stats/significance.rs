//! The Mann–Whitney U rank test (as Go's benchstat uses) and Holm's
//! step-down adjustment, which keeps the chance of calling *any* of many
//! compared metrics significant by noise alone at or under the level.
//!
//! The rank test assumes only that the repeats of each side are independent
//! draws; it makes no claim about normality, and it is robust to the one
//! odd repeat that a mean-based test would follow.

use statrs::distribution::{ContinuousCDF, Normal};

/// Sides this small (and without ties) get the exact null distribution of
/// U; larger ones the normal approximation with tie and continuity
/// correction.
const EXACT_MAX: usize = 30;

/// The two-sided p-value of the Mann–Whitney U test of A against B; 1.0 when
/// either side is empty or every value is equal.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return 1.0;
    }
    // Midranks over the pooled sample.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let total = pooled.len();
    let mut rank_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < total {
        let mut j = i;
        while j + 1 < total && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let midrank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        for p in &pooled[i..=j] {
            if p.1 {
                rank_a += midrank;
            }
        }
        i = j + 1;
    }
    let u = rank_a - (m * (m + 1)) as f64 / 2.0;
    let (mf, nf) = (m as f64, n as f64);
    let mean = mf * nf / 2.0;
    if tie_term == 0.0 && m <= EXACT_MAX && n <= EXACT_MAX {
        return exact_p(m, n, u);
    }
    let nn = mf + nf;
    let var = mf * nf / 12.0 * ((nn + 1.0) - tie_term / (nn * (nn - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    let normal = Normal::new(0.0, 1.0).expect("standard normal");
    (2.0 * (1.0 - normal.cdf(z))).min(1.0)
}

/// Exact two-sided p: twice the smaller tail of U's null distribution,
/// counted over all C(m+n, m) equally likely arrangements.
fn exact_p(m: usize, n: usize, u: f64) -> f64 {
    let max_u = m * n;
    // counts[i][u]: arrangements of i A-values among the first values.
    // Built by the recurrence f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u).
    let mut f = vec![vec![vec![0f64; max_u + 1]; n + 1]; m + 1];
    for (i, fi) in f.iter_mut().enumerate() {
        for (j, fij) in fi.iter_mut().enumerate() {
            if i == 0 || j == 0 {
                fij[0] = 1.0;
            }
        }
    }
    for i in 1..=m {
        for j in 1..=n {
            for k in 0..=i * j {
                let with_a_last = if k >= j { f[i - 1][j][k - j] } else { 0.0 };
                f[i][j][k] = with_a_last + f[i][j - 1][k];
            }
        }
    }
    let dist = &f[m][n];
    let all: f64 = dist.iter().sum();
    let u = u.round() as usize;
    let lower: f64 = dist[..=u].iter().sum::<f64>() / all;
    let upper: f64 = dist[u..].iter().sum::<f64>() / all;
    (2.0 * lower.min(upper)).min(1.0)
}

/// Holm's step-down adjusted p-values, in the order given: compare each to
/// the level to control the family-wise error rate over all of them.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&x, &y| p[x].total_cmp(&p[y]));
    let mut adjusted = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &idx) in order.iter().enumerate() {
        let a = ((m - rank) as f64 * p[idx]).min(1.0);
        running = running.max(a);
        adjusted[idx] = running;
    }
    adjusted
}

/// The smallest two-sided p a rank test can reach with these side sizes
/// (no ties): 2 / C(m+n, m). Below the level, a difference can be shown.
pub fn smallest_p(m: usize, n: usize) -> f64 {
    let mut c = 1.0f64;
    for i in 0..m {
        c = c * (n + m - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn exact_p_matches_tables() {
        // Complete separation of 3 and 3: p = 2 / C(6,3) = 0.1.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert!((p - 0.1).abs() < 1e-12, "{p}");
        // 5 and 5 separated: 2/252.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]);
        assert!((p - 2.0 / 252.0).abs() < 1e-12, "{p}");
        assert!((smallest_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        // R: wilcox.test(c(1,3,5,7), c(2,4,6,8,9))$p.value == 0.4127
        let p = mann_whitney_p(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0, 9.0]);
        assert!((p - 0.4127).abs() < 1e-3, "{p}");
    }

    #[test]
    fn normal_approximation_with_ties() {
        // By hand: midranks give U = 2.5, mean 12.5, tie-corrected
        // variance 25/12 · (11 − 36/90) = 22.083, z = (10 − 0.5)/4.6993 =
        // 2.0216, p = 2(1 − Φ(z)) = 0.04322.
        let p = mann_whitney_p(&[1.0, 2.0, 2.0, 3.0, 4.0], &[3.0, 4.0, 4.0, 5.0, 6.0]);
        assert!((p - 0.04322).abs() < 1e-4, "{p}");
        assert_eq!(mann_whitney_p(&[1.0, 1.0], &[1.0, 1.0]), 1.0);
    }

    #[test]
    fn holm_matches_known_answer() {
        // R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
    }

    /// A/A: many comparisons of two samples from one distribution, eight
    /// metrics at once, Holm-adjusted. The share of comparisons with any
    /// false "significant" must stay at or under 5% (plus sampling slack).
    #[test]
    fn a_a_draws_are_rarely_significant_over_eight_metrics() {
        let mut rng = ChaCha8Rng::seed_from_u64(2002);
        let draws = 2000;
        let mut any_false = 0;
        for _ in 0..draws {
            let p: Vec<f64> = (0..8)
                .map(|_| {
                    let a: Vec<f64> = (0..8)
                        .map(|_| 1000.0 * (1.0 + 0.29 * rng.gen::<f64>()))
                        .collect();
                    let b: Vec<f64> = (0..8)
                        .map(|_| 1000.0 * (1.0 + 0.29 * rng.gen::<f64>()))
                        .collect();
                    mann_whitney_p(&a, &b)
                })
                .collect();
            if holm(&p).iter().any(|&x| x < 0.05) {
                any_false += 1;
            }
        }
        let share = any_false as f64 / draws as f64;
        assert!(share <= 0.06, "family-wise false positives {share}");
        // Without the adjustment the same draws are wrong far more often,
        // which is what the adjustment is for.
    }

    #[test]
    fn a_real_shift_is_found() {
        let mut rng = ChaCha8Rng::seed_from_u64(15);
        let a: Vec<f64> = (0..8)
            .map(|_| 100.0 * (1.0 + 0.05 * rng.gen::<f64>()))
            .collect();
        let b: Vec<f64> = (0..8)
            .map(|_| 115.0 * (1.0 + 0.05 * rng.gen::<f64>()))
            .collect();
        assert!(mann_whitney_p(&a, &b) < 0.001);
    }
}
