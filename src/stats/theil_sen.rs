//! The Theil-Sen slope of a series and its 95% interval (Sen 1968): the
//! median of the slopes between every pair of points, robust to outliers
//! (a GC spike, a page cache hiccup) where least squares is not. A soak's
//! memory growth per hour is read from it.
//!
//! The interval comes from the sorted pairwise slopes themselves: with N
//! slopes and Kendall's S variance over the y values (ties corrected),
//! C = 1.96 · sqrt(Var S); the bounds are the slopes of ranks (N − C)/2
//! and (N + C)/2 + 1 (1-based, interpolated between neighbours). A series
//! of more than [`MAX_POINTS`] points is thinned (evenly spaced points
//! kept) first, so the cost stays under half a million slopes.
//!
//! Arithmetic only: it takes (x, y) pairs and returns numbers.

/// The most points fitted; longer series are thinned to this many.
pub const MAX_POINTS: usize = 1000;

/// The normal quantile of a two-sided 95% interval.
const Z_95: f64 = 1.959_963_984_540_054;

/// A fitted slope with its 95% interval, in y units per x unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SenSlope {
    pub slope: f64,
    pub low: f64,
    pub high: f64,
    /// Points fitted (after thinning).
    pub points: usize,
}

/// The Theil-Sen slope of `points` and its 95% interval; None with fewer
/// than 3 points, a non-finite value, or fewer than 2 distinct x.
pub fn theil_sen(points: &[(f64, f64)]) -> Option<SenSlope> {
    if points.len() < 3 || points.iter().any(|p| !p.0.is_finite() || !p.1.is_finite()) {
        return None;
    }
    let pts = thin(points, MAX_POINTS);
    let mut slopes = Vec::with_capacity(pts.len() * (pts.len() - 1) / 2);
    for (i, a) in pts.iter().enumerate() {
        for b in &pts[i + 1..] {
            if b.0 != a.0 {
                slopes.push((b.1 - a.1) / (b.0 - a.0));
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    slopes.sort_by(f64::total_cmp);
    let n_slopes = slopes.len() as f64;
    let c = Z_95 * kendall_s_variance(&pts).sqrt();
    // 1-based ranks of the bounds, kept within the slopes.
    let lower_rank = ((n_slopes - c) / 2.0).clamp(1.0, n_slopes);
    let upper_rank = ((n_slopes + c) / 2.0 + 1.0).clamp(1.0, n_slopes);
    Some(SenSlope {
        slope: at_rank(&slopes, (n_slopes + 1.0) / 2.0),
        low: at_rank(&slopes, lower_rank),
        high: at_rank(&slopes, upper_rank),
        points: pts.len(),
    })
}

/// Var(S) of Kendall's S over the y values, with the ties correction:
/// [n(n−1)(2n+5) − Σ t(t−1)(2t+5)] / 18, t the size of each group of
/// equal y.
fn kendall_s_variance(points: &[(f64, f64)]) -> f64 {
    let term = |t: f64| t * (t - 1.0) * (2.0 * t + 5.0);
    let mut ys: Vec<f64> = points.iter().map(|p| p.1).collect();
    ys.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut run = 1.0;
    for w in ys.windows(2) {
        if w[0] == w[1] {
            run += 1.0;
        } else {
            ties += term(run);
            run = 1.0;
        }
    }
    ties += term(run);
    ((term(points.len() as f64) - ties) / 18.0).max(0.0)
}

/// The value at 1-based `rank` of sorted `v`, interpolated between
/// neighbours for a fractional rank.
fn at_rank(v: &[f64], rank: f64) -> f64 {
    let i = (rank - 1.0).max(0.0);
    let lo = i.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    let frac = i - lo as f64;
    v[lo] + (v[hi] - v[lo]) * frac
}

/// At most `max` points of `points`, evenly spaced, first and last kept.
fn thin(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max {
        return points.to_vec();
    }
    let last = points.len() - 1;
    (0..max).map(|k| points[k * last / (max - 1)]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: usize, f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        (0..n).map(|i| (i as f64, f(i as f64))).collect()
    }

    /// A fixed noise in [-1, 1): a linear congruential generator.
    fn noise(i: f64) -> f64 {
        let x = (i as u64)
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((x >> 33) as f64 / (1u64 << 31) as f64) - 1.0
    }

    /// (case, points, slope, low, high), to 1e-9.
    #[test]
    fn theil_sen_matches_known_answers() {
        let mut outliers = line(21, |x| x);
        outliers[5].1 = 1000.0;
        outliers[15].1 = -1000.0;
        type Row = (&'static str, Vec<(f64, f64)>, f64, f64, f64);
        let rows: Vec<Row> = vec![
            (
                "exact line: its slope, a zero-width interval",
                line(10, |x| 2.0 * x + 1.0),
                2.0,
                2.0,
                2.0,
            ),
            (
                "constant: 0, every y tied",
                line(10, |_| 7.0),
                0.0,
                0.0,
                0.0,
            ),
            ("two wild outliers do not move it", outliers, 1.0, 1.0, 1.0),
            // By hand: 10 slopes, sorted -1, -1, 1/3, 1/2, 3/4, 1, 1,
            // 4/3, 2, 3: the median (rank 5.5) is 7/8; Var S = 5·4·15/18,
            // C = 8.0017, the bounds' ranks 0.9992 and 10.0008 (kept to
            // 1 and 10).
            (
                "five points by hand",
                vec![(1.0, 1.0), (2.0, 3.0), (3.0, 2.0), (4.0, 5.0), (5.0, 4.0)],
                0.875,
                -1.0,
                3.0,
            ),
        ];
        for (case, pts, slope, low, high) in rows {
            let s = theil_sen(&pts).unwrap_or_else(|| panic!("{case}: no fit"));
            assert!((s.slope - slope).abs() < 1e-9, "{case}: slope {}", s.slope);
            assert!((s.low - low).abs() < 1e-9, "{case}: low {}", s.low);
            assert!((s.high - high).abs() < 1e-9, "{case}: high {}", s.high);
        }
    }

    #[test]
    fn noise_around_a_known_slope_is_covered_by_a_narrow_interval() {
        let pts = line(200, |x| 3.0 * x + 5.0 * noise(x));
        let s = theil_sen(&pts).unwrap();
        assert!((s.slope - 3.0).abs() < 0.05, "{s:?}");
        assert!(s.low < 3.0 && 3.0 < s.high, "{s:?}");
        assert!(s.high - s.low < 0.2, "{s:?}");
        let flat = theil_sen(&line(200, |x| 5.0 * noise(x))).unwrap();
        assert!(flat.low < 0.0 && 0.0 < flat.high, "{flat:?}");
    }

    #[test]
    fn too_few_or_unusable_points_give_no_slope() {
        let rows: Vec<(&str, Vec<(f64, f64)>)> = vec![
            ("empty", vec![]),
            ("two points", line(2, |x| x)),
            ("one x", vec![(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]),
            ("a NaN", vec![(0.0, 0.0), (1.0, f64::NAN), (2.0, 2.0)]),
        ];
        for (case, pts) in rows {
            assert_eq!(theil_sen(&pts), None, "{case}");
        }
    }

    #[test]
    fn long_series_are_thinned_to_the_cap_keeping_both_ends() {
        let s = theil_sen(&line(100_000, |x| 0.5 * x)).unwrap();
        assert_eq!(s.points, MAX_POINTS);
        assert_eq!(s.slope, 0.5);
        let t = thin(&line(5000, |x| x), 10);
        assert_eq!((t[0].0, t[9].0), (0.0, 4999.0));
    }
}
