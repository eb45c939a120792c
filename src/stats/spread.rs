//! The spread of a figure across repeats of one trial: median, min, max.
//! Pure arithmetic over numbers already measured; it reads no files and
//! knows no record types, so `store` and `report` can both use it.

use serde::{Deserialize, Serialize};

/// Median and range across repeats.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_median_and_range() {
        assert_eq!(
            Spread::of(&[3.0, 1.0, 2.0]).unwrap(),
            Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0,
                n: 3
            }
        );
        assert_eq!(Spread::of(&[4.0, 1.0]).unwrap().median, 2.5);
        assert!(Spread::of(&[]).is_none());
    }
}
