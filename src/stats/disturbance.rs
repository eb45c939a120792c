//! How many of a group's runs the machine disturbed, and the sentence a
//! verdict resting on them gets.
//!
//! Each trial record carries a `disturbance` object (steal and foreign CPU
//! on the server's and the generator's CPUs; `sampler::disturbance` makes
//! it, docs/STATISTICS.md says how). Here runs are only counted: a group's
//! [`DisturbedRuns`], and for `compare` and `sweep` a caveat line per
//! group or value whose runs were disturbed. It never changes a verdict:
//! a disturbed run is a caveat, not a failure, and leaving it out would
//! hide that the host was busy.
//!
//! It counts plain figures (`RunDisturbance`), which `store::figures`
//! takes from each trial record; a record made before the field existed
//! hands it none and counts as unmeasured. It never reads a file.

use serde::{Deserialize, Serialize};

/// What one run's record says about the machine: the figures of
/// `sampler::disturbance::Disturbance` counted here.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunDisturbance {
    pub disturbed: bool,
    /// Steal ticks / all ticks of the measured CPUs, 0..1.
    pub steal_share: f64,
    /// Task ticks not ours / all ticks of the measured CPUs, 0..1.
    pub foreign_cpu_share: f64,
    /// The thresholds the run was judged by (None: any share counts).
    pub threshold_steal_share: Option<f64>,
    pub threshold_foreign_cpu_share: Option<f64>,
}

/// A group's runs by what the machine did during them.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct DisturbedRuns {
    /// Finished runs counted.
    pub runs: usize,
    /// Runs whose record says `disturbed`.
    pub disturbed: usize,
    /// Runs whose record has no disturbance (older records, or none measured).
    pub unmeasured: usize,
    /// The largest steal share among runs disturbed by steal (0 if none).
    pub steal_share_max: f64,
    /// The largest foreign CPU share among runs disturbed by it (0 if none).
    pub foreign_cpu_share_max: f64,
}

impl DisturbedRuns {
    /// Counts one finished run from its record's disturbance (None:
    /// unmeasured).
    pub fn add(&mut self, run: Option<&RunDisturbance>) {
        self.runs += 1;
        let Some(d) = run else {
            self.unmeasured += 1;
            return;
        };
        if !d.disturbed {
            return;
        }
        self.disturbed += 1;
        let passed = |share: f64, threshold: Option<f64>| threshold.is_none_or(|t| share >= t);
        if passed(d.steal_share, d.threshold_steal_share) {
            self.steal_share_max = self.steal_share_max.max(d.steal_share);
        }
        if passed(d.foreign_cpu_share, d.threshold_foreign_cpu_share) {
            self.foreign_cpu_share_max = self.foreign_cpu_share_max.max(d.foreign_cpu_share);
        }
    }

    /// "steal up to 12%, foreign CPU up to 34%".
    fn why(&self) -> String {
        let mut parts = Vec::new();
        if self.steal_share_max > 0.0 {
            parts.push(format!("steal up to {:.0}%", self.steal_share_max * 100.0));
        }
        if self.foreign_cpu_share_max > 0.0 {
            parts.push(format!(
                "foreign CPU up to {:.0}%",
                self.foreign_cpu_share_max * 100.0
            ));
        }
        parts.join(", ")
    }

    /// "2 of 5 runs disturbed (steal up to 12%)"; None when none was.
    pub fn note(&self) -> Option<String> {
        (self.disturbed > 0).then(|| {
            format!(
                "{} of {} run{} disturbed ({})",
                self.disturbed,
                self.runs,
                if self.runs == 1 { "" } else { "s" },
                self.why()
            )
        })
    }

    /// "2 of 5 B trials disturbed (steal up to 12%)"; None when none was.
    fn of_side(&self, side: &str) -> Option<String> {
        (self.disturbed > 0).then(|| {
            format!(
                "{} of {} {side} trial{} disturbed ({})",
                self.disturbed,
                self.runs,
                if self.runs == 1 { "" } else { "s" },
                self.why()
            )
        })
    }
}

/// One compared group's disturbed runs on each side (compare-v1's
/// `disturbance`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GroupDisturbance {
    pub group: String,
    pub a: DisturbedRuns,
    pub b: DisturbedRuns,
}

/// The verdict caveats of a comparison: one line per group with a
/// disturbed run on either side.
pub fn compare_lines(groups: &[GroupDisturbance]) -> Vec<String> {
    groups
        .iter()
        .filter_map(|g| {
            let sides: Vec<String> = [g.a.of_side("A"), g.b.of_side("B")]
                .into_iter()
                .flatten()
                .collect();
            (!sides.is_empty()).then(|| {
                format!(
                    "{}: {}: this verdict may be the host's",
                    g.group,
                    sides.join("; ")
                )
            })
        })
        .collect()
}

/// The verdict caveats of a sweep: one line per value with a disturbed
/// run (`name` is how the value is shown, e.g. "workers=4").
pub fn sweep_lines(values: &[(String, DisturbedRuns)]) -> Vec<String> {
    values
        .iter()
        .filter_map(|(name, d)| {
            d.note()
                .map(|n| format!("{name}: {n}: its figures may be the host's"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(steal: f64, foreign: f64, disturbed: bool) -> Option<RunDisturbance> {
        Some(RunDisturbance {
            disturbed,
            steal_share: steal,
            foreign_cpu_share: foreign,
            threshold_steal_share: Some(0.05),
            threshold_foreign_cpu_share: Some(0.1),
        })
    }

    #[test]
    fn runs_are_counted_by_what_disturbed_them() {
        // (case, records, disturbed, unmeasured, note)
        type Row = (
            &'static str,
            Vec<Option<RunDisturbance>>,
            usize,
            usize,
            Option<&'static str>,
        );
        let rows: Vec<Row> = vec![
            ("quiet", vec![d(0.0, 0.01, false)], 0, 0, None),
            (
                "steal in one of three",
                vec![d(0.12, 0.02, true), d(0.0, 0.0, false), d(0.01, 0.0, false)],
                1,
                0,
                Some("1 of 3 runs disturbed (steal up to 12%)"),
            ),
            (
                "foreign and steal, the worst kept",
                vec![d(0.07, 0.3, true), d(0.2, 0.05, true)],
                2,
                0,
                Some("2 of 2 runs disturbed (steal up to 20%, foreign CPU up to 30%)"),
            ),
            (
                "an older record is unmeasured, not quiet",
                vec![None, d(0.0, 0.5, true)],
                1,
                1,
                Some("1 of 2 runs disturbed (foreign CPU up to 50%)"),
            ),
        ];
        for (case, records, disturbed, unmeasured, note) in rows {
            let mut r = DisturbedRuns::default();
            for rec in &records {
                r.add(rec.as_ref());
            }
            assert_eq!(r.runs, records.len(), "{case}");
            assert_eq!(r.disturbed, disturbed, "{case}");
            assert_eq!(r.unmeasured, unmeasured, "{case}");
            assert_eq!(r.note().as_deref(), note, "{case}");
        }
    }

    #[test]
    fn a_comparison_names_the_disturbed_side_and_says_the_verdict_may_be_the_hosts() {
        let mut b = DisturbedRuns::default();
        for rec in [d(0.12, 0.0, true), d(0.0, 0.0, false), d(0.09, 0.0, true)] {
            b.add(rec.as_ref());
        }
        let mut quiet = DisturbedRuns::default();
        quiet.add(d(0.0, 0.0, false).as_ref());
        let lines = compare_lines(&[
            GroupDisturbance {
                group: "hello direct c=4".into(),
                a: quiet,
                b,
            },
            GroupDisturbance {
                group: "quiet group".into(),
                a: quiet,
                b: quiet,
            },
        ]);
        assert_eq!(
            lines,
            vec!["hello direct c=4: 2 of 3 B trials disturbed (steal up to 12%): this verdict may be the host's"]
        );
        assert_eq!(
            sweep_lines(&[("workers=4".into(), b), ("workers=8".into(), quiet)]),
            vec![
                "workers=4: 2 of 3 runs disturbed (steal up to 12%): its figures may be the host's"
            ]
        );
    }
}
