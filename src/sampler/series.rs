//! Memory over time for a soak, bounded whatever its length: one
//! [`BoundedSeries`] per process (and one of rackbench itself), each at
//! most [`SERIES_CAP`] points.
//!
//! Samples are averaged into buckets of `step_ms` (the soak interval to
//! begin with); each full bucket becomes one point. When the series holds
//! [`SERIES_CAP`] points, neighbours are merged in pairs (weighted by the
//! samples behind each) and the step doubles: an hour at 1 s steps holds
//! 720 points of 5 s, a day 720 points of about 2 minutes. Memory and the
//! record's size stay flat over hours, and nothing is kept per request.
//!
//! [`coarsen_rows`] does the same for any per-second timeline (the
//! sampler's and the load's): merge neighbours when a cap is reached.
//!
//! Pure bookkeeping: it never reads /proc (the sampler hands it figures).

use super::procfs::Memory;
use serde::{Deserialize, Serialize};

/// The most points one series keeps.
pub const SERIES_CAP: usize = 720;

/// One point of a soak series: the mean of the samples of its bucket.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// Seconds since the counted window started (the samples' mean).
    pub t_s: f64,
    pub rss_bytes: u64,
    /// None when smaps_rollup was unreadable in a sample of the bucket.
    pub pss_bytes: Option<u64>,
    /// Private_Clean + Private_Dirty.
    pub uss_bytes: Option<u64>,
    /// RSS − USS: pages shared with the master or siblings (copy-on-write
    /// pages of a preloaded app among them).
    pub shared_bytes: Option<u64>,
}

/// A bucket or a point being built: sums over `n` samples. 48 bytes: a
/// series grows by one a second until its cap, so its size is what
/// rackbench's own memory gains per process per second in a soak's first
/// twelve minutes. u64 sums hold a year at 1-second samples of 64 GiB
/// (2^36 bytes x 2^25 samples).
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    n: u64,
    t_ms: u64,
    rss: u64,
    pss: u64,
    uss: u64,
    /// Some sample lacked PSS/USS.
    missing: bool,
}

impl Acc {
    fn add(&mut self, t_ms: u64, m: &Memory) {
        self.n += 1;
        self.t_ms = self.t_ms.saturating_add(t_ms);
        self.rss = self.rss.saturating_add(m.rss);
        match (m.pss, m.uss) {
            (Some(p), Some(u)) => {
                self.pss = self.pss.saturating_add(p);
                self.uss = self.uss.saturating_add(u);
            }
            _ => self.missing = true,
        }
    }

    fn merge(&mut self, o: &Acc) {
        self.n += o.n;
        self.t_ms = self.t_ms.saturating_add(o.t_ms);
        self.rss = self.rss.saturating_add(o.rss);
        self.pss = self.pss.saturating_add(o.pss);
        self.uss = self.uss.saturating_add(o.uss);
        self.missing |= o.missing;
    }

    fn point(&self) -> SeriesPoint {
        let n = self.n.max(1);
        let mean = |s: u64| s / n;
        let known = !self.missing;
        let (rss, uss) = (mean(self.rss), mean(self.uss));
        SeriesPoint {
            t_s: (self.t_ms / n) as f64 / 1000.0,
            rss_bytes: rss,
            pss_bytes: known.then(|| mean(self.pss)),
            uss_bytes: known.then_some(uss),
            shared_bytes: known.then(|| rss.saturating_sub(uss)),
        }
    }
}

/// A process's memory over a soak, at most [`SERIES_CAP`] points (see the
/// module doc).
#[derive(Debug, Clone)]
pub struct BoundedSeries {
    step_ms: u64,
    cap: usize,
    points: Vec<Acc>,
    /// The bucket being filled and its index (t_ms / step_ms).
    open: Option<(u64, Acc)>,
}

impl BoundedSeries {
    /// An empty series whose buckets start `step_ms` wide (at least 1).
    pub fn new(step_ms: u64) -> BoundedSeries {
        BoundedSeries::with_cap(step_ms, SERIES_CAP)
    }

    fn with_cap(step_ms: u64, cap: usize) -> BoundedSeries {
        BoundedSeries {
            step_ms: step_ms.max(1),
            cap: cap.max(2),
            points: Vec::new(),
            open: None,
        }
    }

    /// Adds one sample taken `t_ms` after the window started.
    pub(crate) fn push(&mut self, t_ms: u64, m: &Memory) {
        let bucket = t_ms / self.step_ms;
        match &mut self.open {
            Some((b, acc)) if *b == bucket => acc.add(t_ms, m),
            _ => {
                self.close();
                let mut acc = Acc::default();
                acc.add(t_ms, m);
                self.open = Some((bucket, acc));
            }
        }
    }

    /// Ends the open bucket as a point, coarsening when full.
    fn close(&mut self) {
        let Some((_, acc)) = self.open.take() else {
            return;
        };
        if self.points.len() >= self.cap {
            self.points = merge_pairs(&self.points, |a, b| {
                let mut m = *a;
                m.merge(b);
                m
            });
            self.step_ms *= 2;
        }
        self.points.push(acc);
    }

    /// The current width of a point, in milliseconds.
    pub fn step_ms(&self) -> u64 {
        self.step_ms
    }

    /// Every point, the open bucket's last.
    pub fn points(&self) -> Vec<SeriesPoint> {
        self.points
            .iter()
            .chain(self.open.as_ref().map(|(_, a)| a))
            .map(Acc::point)
            .collect()
    }
}

/// Neighbours merged in pairs (an odd last one kept as it is).
fn merge_pairs<T: Clone>(rows: &[T], merge: impl Fn(&T, &T) -> T) -> Vec<T> {
    rows.chunks(2)
        .map(|c| match c {
            [a, b] => merge(a, b),
            [a] => a.clone(),
            _ => unreachable!("chunks of two"),
        })
        .collect()
}

/// Keeps a timeline within `cap` rows: once it holds `cap`, neighbours are
/// merged in pairs with `merge` (the later row's time, the pair's peak)
/// and the returned factor says the rows now cover twice as long. Returns
/// 1 when nothing was merged.
pub fn coarsen_rows<T: Clone>(rows: &mut Vec<T>, cap: usize, merge: impl Fn(&T, &T) -> T) -> u64 {
    if rows.len() < cap.max(2) {
        return 1;
    }
    *rows = merge_pairs(rows, merge);
    2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mem(rss: u64, uss: u64) -> Memory {
        Memory {
            rss,
            pss: Some(uss + 1),
            uss: Some(uss),
        }
    }

    #[test]
    fn samples_of_one_step_average_into_one_point_with_shared_as_rss_minus_uss() {
        let mut s = BoundedSeries::new(1000);
        s.push(100, &mem(100, 40));
        s.push(900, &mem(200, 60));
        s.push(1100, &mem(300, 100));
        let p = s.points();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].t_s, 0.5);
        assert_eq!(p[0].rss_bytes, 150);
        assert_eq!(p[0].uss_bytes, Some(50));
        assert_eq!(p[0].shared_bytes, Some(100));
        assert_eq!(p[1].rss_bytes, 300);
    }

    #[test]
    fn a_sample_without_smaps_leaves_the_point_without_pss() {
        let mut s = BoundedSeries::new(1000);
        s.push(0, &mem(100, 40));
        s.push(
            10,
            &Memory {
                rss: 100,
                pss: None,
                uss: None,
            },
        );
        assert_eq!(s.points()[0].pss_bytes, None);
        assert_eq!(s.points()[0].shared_bytes, None);
    }

    /// A week of samples every 200 ms (3 million) stays within the cap, the
    /// step grows, and a steady slope survives the merging.
    #[test]
    fn a_series_stays_within_its_cap_however_long_the_soak() {
        let mut s = BoundedSeries::new(1000);
        let week_ms = 7 * 24 * 3_600_000u64;
        let mut t = 0;
        while t < week_ms {
            // 1 byte a second.
            s.push(t, &mem(1_000_000 + t / 1000, 1000));
            t += 200;
        }
        let p = s.points();
        assert!(p.len() <= SERIES_CAP + 1, "{} points", p.len());
        assert!(p.len() >= SERIES_CAP / 2, "{} points", p.len());
        assert!(
            s.step_ms() >= week_ms / SERIES_CAP as u64,
            "{}",
            s.step_ms()
        );
        let (a, b) = (p[10], p[p.len() - 10]);
        let slope = (b.rss_bytes - a.rss_bytes) as f64 / (b.t_s - a.t_s);
        assert!((slope - 1.0).abs() < 0.01, "{slope}");
        assert!(p.windows(2).all(|w| w[0].t_s < w[1].t_s));
    }

    /// What a soak's series costs per process per second before its cap.
    #[test]
    fn a_point_in_the_making_is_48_bytes() {
        assert_eq!(std::mem::size_of::<Acc>(), 48);
    }

    #[test]
    fn coarsen_rows_merges_pairs_only_at_the_cap() {
        let max = |a: &u32, b: &u32| *a.max(b);
        let rows: Vec<(usize, Vec<u32>, Vec<u32>, u64)> = vec![
            (4, vec![1, 2, 3], vec![1, 2, 3], 1),
            (4, vec![1, 5, 3, 2], vec![5, 3], 2),
            (4, vec![1, 5, 3, 2, 9], vec![5, 3, 9], 2),
        ];
        for (cap, mut have, want, factor) in rows {
            assert_eq!(coarsen_rows(&mut have, cap, max), factor);
            assert_eq!(have, want);
        }
    }
}
