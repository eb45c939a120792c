//! Who got served: the answers each connection got in the counted window,
//! summed into the document's `fairness` (issue 39). A server that keeps
//! some connections busy while the rest wait in its accept queue still
//! shows a fast p50 (the lucky connections' answers are all there are);
//! these figures say how many were left out.
//!
//! Pure arithmetic over per-connection counts; the workers count (one
//! counter per connection slot), this file never runs load.

use serde::{Deserialize, Serialize};

/// The `fairness` object of a load-v1 document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    /// Connections that got at least one answer in the counted window.
    pub connections_answered: u64,
    /// Connections that carried a request in the window and got no
    /// answer in it.
    pub connections_starved: u64,
    /// The share of the window's answers taken by the busiest 10% of the
    /// connections that carried a request (at least one connection, see
    /// [`top10_share`]); null when no answer came back.
    pub top10_share: Option<f64>,
    /// Jain's fairness index over the answers per connection that carried
    /// a request: 1 when all got as many, 1/n when one got them all; null
    /// when no answer came back.
    pub jain_index: Option<f64>,
    /// Answers per connection that carried a request, busiest first: kept
    /// only in segment documents (`--segment`, `--hist-out`), so that a
    /// merge computes the figures over every segment's connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers_per_connection: Option<Vec<u64>>,
}

impl Fairness {
    /// The figures of `counts`: the answers in the window of each
    /// connection that carried a request in it (any order). With `keep`,
    /// the counts themselves stay in the document, busiest first.
    pub fn of(mut counts: Vec<u64>, keep: bool) -> Fairness {
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let answered = counts.iter().filter(|&&n| n > 0).count() as u64;
        Fairness {
            connections_answered: answered,
            connections_starved: counts.len() as u64 - answered,
            top10_share: top10_share(&counts),
            jain_index: jain_index(&counts),
            answers_per_connection: keep.then_some(counts),
        }
    }

    /// The fairness of merged segments: their connections side by side.
    /// None when any segment lacks its per-connection counts (a document
    /// written without `--segment`, or before the field): the busiest 10%
    /// of the union cannot be known from each one's figures.
    pub fn merge<'a>(segments: impl IntoIterator<Item = Option<&'a Fairness>>) -> Option<Fairness> {
        let mut counts = Vec::new();
        for f in segments {
            counts.extend_from_slice(f?.answers_per_connection.as_deref()?);
        }
        Some(Fairness::of(counts, true))
    }
}

/// How many connections are "the busiest 10%" of `n`: a tenth, rounded
/// up, so at least one of any connection at all (with fewer than ten
/// connections, the busiest one; with 15, the busiest two).
pub fn top10_count(n: usize) -> usize {
    n.div_ceil(10)
}

/// The share of all answers taken by the busiest [`top10_count`]
/// connections of `counts`; None when there was no answer. Equal counts
/// give `top10_count(n) / n` (0.1 for a multiple of ten connections).
pub fn top10_share(counts: &[u64]) -> Option<f64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let mut sorted = counts.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let top: u64 = sorted[..top10_count(sorted.len())].iter().sum();
    Some(top as f64 / total as f64)
}

/// Jain's fairness index, (Σx)² / (n·Σx²): 1 when every connection got as
/// many answers, k/n when k of them shared all answers equally and the
/// rest got none. None when there was no answer (or no connection).
pub fn jain_index(counts: &[u64]) -> Option<f64> {
    let sum: f64 = counts.iter().map(|&x| x as f64).sum();
    let squares: f64 = counts.iter().map(|&x| (x as f64) * (x as f64)).sum();
    // At most 1 by Cauchy-Schwarz; rounding of large sums must not say more.
    (squares > 0.0).then(|| (sum * sum / (counts.len() as f64 * squares)).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
    }

    #[test]
    fn jains_index_on_fixed_vectors() {
        let cases: &[(&[u64], f64)] = &[
            (&[5, 5, 5, 5], 1.0),
            (&[1], 1.0),
            // One of four got everything: 1/n.
            (&[12, 0, 0, 0], 0.25),
            // Half of them shared it equally: k/n.
            (&[7, 7, 0, 0], 0.5),
            // (1+2+3)² / (3·(1+4+9)) = 36/42.
            (&[1, 2, 3], 36.0 / 42.0),
            // (10+30)² / (2·(100+900)) = 1600/2000.
            (&[10, 30], 0.8),
        ];
        for (counts, want) in cases {
            let got = jain_index(counts);
            assert!(close(got, *want), "{counts:?}: {got:?}, want {want}");
        }
        assert_eq!(jain_index(&[0, 0, 0]), None);
        assert_eq!(jain_index(&[]), None);
    }

    #[test]
    fn the_busiest_tenth_is_rounded_up_to_at_least_one_connection() {
        let cases: &[(usize, usize)] = &[
            (0, 0),
            (1, 1),
            (9, 1),
            (10, 1),
            (11, 2),
            (15, 2),
            (20, 2),
            (80, 8),
            (81, 9),
        ];
        for &(n, want) in cases {
            assert_eq!(top10_count(n), want, "{n}");
        }
    }

    #[test]
    fn top10_share_on_fixed_counts() {
        let even = [10u64; 20];
        let cases: &[(&[u64], f64)] = &[
            // 20 equal connections: the busiest 2 took 2/20.
            (&even, 0.1),
            // Fewer than ten: the busiest one's share.
            (&[3, 1], 0.75),
            (&[4, 4, 4, 4], 0.25),
            (&[9], 1.0),
            // Ten connections, one took half: 50 of 100.
            (&[5, 5, 5, 5, 5, 5, 5, 5, 10, 50], 0.5),
            // 11 connections: the busiest two (rounded up), in any order.
            (&[1, 1, 1, 1, 1, 1, 1, 1, 1, 6, 5], 11.0 / 20.0),
        ];
        for (counts, want) in cases {
            let got = top10_share(counts);
            assert!(close(got, *want), "{counts:?}: {got:?}, want {want}");
        }
        assert_eq!(top10_share(&[0, 0]), None);
        assert_eq!(top10_share(&[]), None);
    }

    #[test]
    fn starved_and_answered_connections_are_counted_from_the_counts() {
        let f = Fairness::of(vec![0, 40, 0, 40, 0], false);
        assert_eq!((f.connections_answered, f.connections_starved), (2, 3));
        assert!(close(f.jain_index, 0.4));
        assert!(close(f.top10_share, 0.5));
        assert_eq!(f.answers_per_connection, None);
        // Nobody answered: no share, no index, every connection starved.
        let f = Fairness::of(vec![0, 0], true);
        assert_eq!((f.connections_answered, f.connections_starved), (0, 2));
        assert_eq!((f.top10_share, f.jain_index), (None, None));
        assert_eq!(f.answers_per_connection, Some(vec![0, 0]));
    }

    /// Merged segments are their connections side by side: each one's
    /// even share is no even share of the whole when one segment's
    /// connections were starved.
    #[test]
    fn segments_merge_by_their_connections_or_not_at_all() {
        let a = Fairness::of(vec![10, 10], true);
        let b = Fairness::of(vec![0, 0], true);
        let m = Fairness::merge([Some(&a), Some(&b)]).expect("both kept their counts");
        assert_eq!((m.connections_answered, m.connections_starved), (2, 2));
        assert!(close(m.jain_index, 0.5));
        assert_eq!(m.answers_per_connection, Some(vec![10, 10, 0, 0]));
        // A segment without its counts (or without fairness) makes it
        // unknown, not a guess from the others.
        let bare = Fairness::of(vec![10, 10], false);
        assert_eq!(Fairness::merge([Some(&a), Some(&bare)]), None);
        assert_eq!(Fairness::merge([Some(&a), None]), None);
    }
}
