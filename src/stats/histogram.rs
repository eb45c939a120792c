//! Latency histograms kept in records (HdrHistogram V2 + deflate, base64)
//! and compared across few runs: merged per side, a percentile read from
//! each, and a within-run interval of the change.
//!
//! The interval treats requests as independent draws, so it covers the
//! sampling error of one run's percentile and NOT the run-to-run variation;
//! `compare` therefore never calls a change significant on it alone.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use statrs::distribution::{ContinuousCDF, Normal};

/// Encode a histogram for a record; `None` for an empty one.
pub fn encode(h: &Histogram<u64>) -> Option<String> {
    if h.is_empty() {
        return None;
    }
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Decode what [`encode`] wrote; `None` for anything else.
pub fn decode(text: &str) -> Option<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()?;
    Deserializer::new().deserialize(&mut bytes.as_slice()).ok()
}

/// Merge histograms (a side's runs of one group) into one.
pub fn merge(hs: &[Histogram<u64>]) -> Option<Histogram<u64>> {
    let mut it = hs.iter();
    let mut out = it.next()?.clone();
    for h in it {
        out.add(h).ok()?;
    }
    Some(out)
}

/// The change of the `q` quantile (0..1), B over A in percent, and a
/// within-run 95% interval: each draw picks the quantile's position in each
/// histogram from the normal approximation of its order statistic
/// (mean q, variance q(1−q)/n, the same as resampling the requests) and
/// reads the value there. `None` when a side has fewer than 100 values.
pub fn quantile_change(
    a: &Histogram<u64>,
    b: &Histogram<u64>,
    q: f64,
    draws: usize,
    seed: u64,
) -> Option<(f64, f64, f64)> {
    let qa = a.value_at_quantile(q) as f64;
    if a.len() < 100 || b.len() < 100 || qa == 0.0 {
        return None;
    }
    let change = (b.value_at_quantile(q) as f64 / qa - 1.0) * 100.0;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pos = |n: u64| Normal::new(q, (q * (1.0 - q) / n as f64).sqrt().max(1e-12)).ok();
    let (na, nb) = (pos(a.len())?, pos(b.len())?);
    let mut changes: Vec<f64> = (0..draws)
        .map(|_| {
            let ua = na
                .inverse_cdf(rng.gen_range(1e-9..1.0 - 1e-9))
                .clamp(0.0, 1.0);
            let ub = nb
                .inverse_cdf(rng.gen_range(1e-9..1.0 - 1e-9))
                .clamp(0.0, 1.0);
            let va = a.value_at_quantile(ua).max(1) as f64;
            (b.value_at_quantile(ub) as f64 / va - 1.0) * 100.0
        })
        .collect();
    changes.sort_by(f64::total_cmp);
    let at = |p: f64| changes[((changes.len() - 1) as f64 * p).round() as usize];
    Some((change, at(0.025), at(0.975)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(base: u64, spread: u64, n: u64) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for i in 0..n {
            h.record(base + (i * 7919) % spread).unwrap();
        }
        h
    }

    #[test]
    fn round_trip_keeps_every_count() {
        let h = hist(1000, 500, 5000);
        let text = encode(&h).unwrap();
        let back = decode(&text).unwrap();
        assert_eq!(back.len(), h.len());
        assert_eq!(back.value_at_quantile(0.99), h.value_at_quantile(0.99));
        assert!(decode("not base64!").is_none());
        assert!(encode(&Histogram::<u64>::new(3).unwrap()).is_none());
    }

    #[test]
    fn merged_quantile_change_covers_a_known_shift() {
        let a = merge(&[hist(10_000, 2000, 3000), hist(10_000, 2000, 3000)]).unwrap();
        let b = merge(&[hist(11_500, 2300, 3000), hist(11_500, 2300, 3000)]).unwrap();
        assert_eq!(a.len(), 6000);
        let (c, lo, hi) = quantile_change(&a, &b, 0.5, 2000, 3).unwrap();
        assert!((c - 15.0).abs() < 0.5, "{c}");
        assert!(lo <= 15.0 && 15.0 <= hi && hi - lo < 5.0, "{lo} {hi}");
        assert!(quantile_change(&hist(1, 1, 10), &b, 0.5, 10, 1).is_none());
    }
}
