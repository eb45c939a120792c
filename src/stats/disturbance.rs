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
//! It reads the record through `serde_json::Value` (like `compare`), so
//! records made before the field existed count as unmeasured.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

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
    /// Counts one finished run from its record's `disturbance` (null or
    /// absent: unmeasured).
    pub fn add(&mut self, disturbance: &Value) {
        self.runs += 1;
        let Some(d) = disturbance.as_object() else {
            self.unmeasured += 1;
            return;
        };
        if d.get("disturbed").and_then(Value::as_bool) != Some(true) {
            return;
        }
        self.disturbed += 1;
        let get = |k: &str| d.get(k).and_then(Value::as_f64);
        let passed = |share: &str, threshold: &str| {
            get(share).filter(|s| get(threshold).is_none_or(|t| *s >= t))
        };
        if let Some(s) = passed("steal_share", "threshold_steal_share") {
            self.steal_share_max = self.steal_share_max.max(s);
        }
        if let Some(s) = passed("foreign_cpu_share", "threshold_foreign_cpu_share") {
            self.foreign_cpu_share_max = self.foreign_cpu_share_max.max(s);
        }
    }

    /// Counts a run from its trial-v1 record.
    pub fn add_trial(&mut self, trial: &Value) {
        self.add(&trial["disturbance"]);
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

/// Per value of a sweep, its finished runs' disturbance: the trials in
/// `dir`/trials whose planned value (`value_of`) is one of `values`.
pub fn by_value(
    dir: &Path,
    values: &[String],
    value_of: &dyn Fn(&Value) -> Option<String>,
) -> Vec<DisturbedRuns> {
    let mut out = vec![DisturbedRuns::default(); values.len()];
    let Ok(entries) = std::fs::read_dir(dir.join("trials")) else {
        return out;
    };
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Some(doc) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        else {
            continue;
        };
        if doc["outcome"] != "ok" {
            continue;
        }
        if let Some(i) = value_of(&doc["planned"]).and_then(|v| values.iter().position(|x| *x == v))
        {
            out[i].add_trial(&doc["trial"]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(steal: f64, foreign: f64, disturbed: bool) -> Value {
        json!({"steal_share": steal, "foreign_cpu_share": foreign, "disturbed": disturbed,
               "threshold_steal_share": 0.05, "threshold_foreign_cpu_share": 0.1})
    }

    #[test]
    fn runs_are_counted_by_what_disturbed_them() {
        // (case, records, disturbed, unmeasured, note)
        type Row = (&'static str, Vec<Value>, usize, usize, Option<&'static str>);
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
                vec![Value::Null, d(0.0, 0.5, true)],
                1,
                1,
                Some("1 of 2 runs disturbed (foreign CPU up to 50%)"),
            ),
        ];
        for (case, records, disturbed, unmeasured, note) in rows {
            let mut r = DisturbedRuns::default();
            for rec in &records {
                r.add(rec);
            }
            assert_eq!(r.runs, records.len(), "{case}");
            assert_eq!(r.disturbed, disturbed, "{case}");
            assert_eq!(r.unmeasured, unmeasured, "{case}");
            assert_eq!(r.note().as_deref(), note, "{case}");
        }
    }

    /// A results dir of `fast` and `slow` runs (throughput only); the
    /// slow runs listed in `disturbed` carry a disturbance by steal, the
    /// rest a quiet one, except run 3 of each, an older record without.
    fn results_dir(name: &str, disturbed: &[u32]) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("rackbench-dist-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("trials")).unwrap();
        std::fs::write(dir.join("manifest.json"), "{}").unwrap();
        for (variant, workers, rps) in [("fast", 2, 1000.0), ("slow", 1, 900.0)] {
            for r in 1..=3u32 {
                let mut trial =
                    json!({"load": {"throughput_rps": rps + r as f64, "duration_s": 1.0}});
                if r != 3 {
                    let hit = variant == "slow" && disturbed.contains(&r);
                    trial["disturbance"] = if hit {
                        d(0.12, 0.0, true)
                    } else {
                        d(0.0, 0.0, false)
                    };
                }
                let doc = json!({
                    "outcome": "ok",
                    "planned": {"variant": variant, "server": variant, "app": "hello", "workers": workers,
                                "behind": "none", "shape": {"connections": 4}},
                    "trial": trial
                });
                std::fs::write(
                    dir.join(format!("trials/{variant}{r}.json")),
                    doc.to_string(),
                )
                .unwrap();
            }
        }
        dir
    }

    #[test]
    fn compare_and_sweep_count_each_sides_disturbed_runs_and_say_so() {
        use crate::stats::{compare, sweep};
        let dir = results_dir("both", &[1]);
        let side = |v: &str| compare::Side {
            dir: dir.clone(),
            selector: Some(format!("variant={v}")),
        };
        let c = compare::compare(&side("fast"), &side("slow"), 1, None).unwrap();
        assert_eq!(c.disturbance.len(), 1, "{c:?}");
        let g = &c.disturbance[0];
        assert_eq!((g.a.runs, g.a.disturbed, g.a.unmeasured), (3, 0, 1));
        assert_eq!((g.b.runs, g.b.disturbed, g.b.unmeasured), (3, 1, 1));
        assert!(
            c.verdicts.iter().any(|v| v.ends_with(
                "1 of 3 B trials disturbed (steal up to 12%): this verdict may be the host's"
            )),
            "{:#?}",
            c.verdicts
        );
        let values: Vec<String> = vec!["2".into(), "1".into()];
        let of = |p: &Value| p["workers"].as_u64().map(|w| w.to_string());
        let spec = sweep::Spec {
            variable: "workers",
            values: &values,
            value_of: &of,
            ordered: true,
            scales: false,
            primary: None,
        };
        let s = sweep::analyse(&dir, &spec, 1).unwrap();
        assert_eq!(
            s.disturbance
                .iter()
                .map(|d| d.disturbed)
                .collect::<Vec<_>>(),
            vec![0, 1]
        );
        assert!(
            s.verdicts.contains(
                &"workers=1: 1 of 3 runs disturbed (steal up to 12%): its figures may be the host's".to_string()
            ),
            "{:#?}",
            s.verdicts
        );
        let quiet = results_dir("quiet", &[]);
        let side = |v: &str| compare::Side {
            dir: quiet.clone(),
            selector: Some(format!("variant={v}")),
        };
        let c = compare::compare(&side("fast"), &side("slow"), 1, None).unwrap();
        assert!(
            !c.verdicts.iter().any(|v| v.contains("disturbed")),
            "{:#?}",
            c.verdicts
        );
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&quiet);
    }

    #[test]
    fn a_comparison_names_the_disturbed_side_and_says_the_verdict_may_be_the_hosts() {
        let mut b = DisturbedRuns::default();
        for rec in [d(0.12, 0.0, true), d(0.0, 0.0, false), d(0.09, 0.0, true)] {
            b.add(&rec);
        }
        let mut quiet = DisturbedRuns::default();
        quiet.add(&d(0.0, 0.0, false));
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
