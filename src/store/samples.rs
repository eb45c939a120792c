//! The samples the statistics work on, read from results directories:
//! the two sides of a comparison (`stats::compare`) and the values of a
//! sweep (`stats::sweep`). Each trial's numbers come from
//! `store::figures`, the grouping from `store::read::group_by`; the
//! statistics never see a file or a record.

use super::figures::TrialFigures;
use super::read::{group_by, pair_key};
use super::records::{PlannedTrial, StoredTrial};
use super::ResultsDir;
use crate::stats::compare::{Comparison, GroupSamples, Side, SideSamples};
use crate::stats::disturbance::DisturbedRuns;
use crate::stats::histogram;
use crate::stats::sweep::{self, Figures, Samples};
use std::path::{Path, PathBuf};

/// Parse `DIR` or `DIR:key=value` (a path that exists is a path, colon
/// and all).
pub fn parse_side(arg: &str) -> Result<Side, String> {
    if let Some((dir, sel)) = arg.rsplit_once(':') {
        if sel.contains('=') && !Path::new(arg).exists() {
            let (key, value) = sel.split_once('=').expect("has =");
            if !matches!(key, "server" | "variant" | "label") || value.is_empty() {
                return Err(format!(
                    "selector `{sel}` in `{arg}`: use DIR:server=NAME, DIR:variant=NAME or DIR:label=NAME"
                ));
            }
            return Ok(Side {
                dir: PathBuf::from(dir),
                selector: Some(sel.to_string()),
            });
        }
    }
    Ok(Side {
        dir: PathBuf::from(arg),
        selector: None,
    })
}

/// Compare two sides read from disk (`stats::compare::compare`), with
/// the warnings of records that could not be read.
pub fn compare(
    a: &Side,
    b: &Side,
    seed: u64,
    primary: Option<&str>,
) -> Result<(Comparison, Vec<String>), String> {
    if let Some(m) = primary {
        crate::stats::compare::check_metric("the primary metric", m)?;
    }
    let mut warnings = Vec::new();
    let la = side(a, &mut warnings)?;
    let lb = side(b, &mut warnings)?;
    let c = crate::stats::compare::compare((a, &la), (b, &lb), seed, primary)?;
    Ok((c, warnings))
}

/// A side's finished trials by pair key. Errors are for the user (not a
/// results directory, a selector matching nothing, two variants in one
/// group).
fn side(side: &Side, warnings: &mut Vec<String>) -> Result<SideSamples, String> {
    let dir = ResultsDir::open(&side.dir).map_err(|e| e.to_string())?;
    let trials = dir
        .read_trials()
        .map_err(|e| format!("cannot read {}: {e}", dir.root.display()))?;
    warnings.extend(
        trials
            .warnings()
            .into_iter()
            .map(|w| format!("{}: {w}", side.dir.display())),
    );
    let ok: Vec<&StoredTrial> = trials.ok().collect();
    let mut variants_seen: Vec<&str> = Vec::new();
    for t in &ok {
        if !variants_seen.contains(&t.planned.variant.as_str()) {
            variants_seen.push(&t.planned.variant);
        }
    }
    let selected = |p: &PlannedTrial| match &side.selector {
        Some(s) => {
            let (k, v) = s.split_once('=').expect("parsed selector");
            if k == "server" {
                p.server == v
            } else {
                p.variant == v
            }
        }
        None => true,
    };
    let groups = group_by(ok, |p| selected(p).then(|| pair_key(p)));
    if groups.is_empty() {
        return Err(match &side.selector {
            Some(s) => format!(
                "no finished trial in {} matches {s}; its variants are: {}",
                side.dir.display(),
                variants_seen.join(", ")
            ),
            None => format!("{} holds no finished trial", side.dir.display()),
        });
    }
    let mut out = SideSamples::default();
    for (key, runs) in groups {
        let variant = &runs[0].planned.variant;
        if let Some(other) = runs.iter().find(|t| &t.planned.variant != variant) {
            return Err(format!(
                "{} holds group `{key}` for both `{variant}` and `{}`: pick one with {}:variant=NAME",
                side.dir.display(),
                other.planned.variant,
                side.dir.display()
            ));
        }
        let mut g = GroupSamples {
            variant: variant.clone(),
            ..Default::default()
        };
        let mut disturbed = DisturbedRuns::default();
        for t in runs {
            let Some(r) = &t.trial else {
                disturbed.add(None);
                continue;
            };
            let f = TrialFigures::of(r);
            disturbed.add(f.disturbance.as_ref());
            for (name, v) in f.by_metric() {
                g.figures.entry(name).or_default().push(v);
            }
            if let Some(h) = r
                .load
                .latency_histogram
                .as_deref()
                .and_then(histogram::decode)
            {
                g.histograms.push(h);
            }
        }
        out.disturbed.insert(key.clone(), disturbed);
        out.groups.insert(key, g);
    }
    Ok(out)
}

/// A sweep's samples: the finished trials of `dir` by their value of the
/// swept variable (`value_of`, one of `values`), and the server's cores
/// from the manifest.
pub fn sweep(
    dir: &Path,
    values: &[String],
    value_of: &dyn Fn(&PlannedTrial) -> Option<String>,
) -> Result<Samples, String> {
    let rd = ResultsDir::open(dir).map_err(|e| e.to_string())?;
    let mut warnings = Vec::new();
    let manifest = rd.read_manifest(&mut warnings).ok_or_else(|| {
        format!(
            "{} has no readable manifest.json ({}): give a directory `rackbench sweep` wrote",
            dir.display(),
            warnings.join("; ")
        )
    })?;
    let cores = sweep::server_cores(manifest.environment.cores as f64, &manifest.command);
    let trials = rd.read_trials().map_err(|e| {
        format!("cannot read {}/trials: {e}; give a directory `rackbench sweep` or `rackbench run` wrote", dir.display())
    })?;
    let mut out = Samples {
        cores,
        values: vec![Figures::new(); values.len()],
        disturbance: vec![DisturbedRuns::default(); values.len()],
    };
    let by_value = group_by(trials.ok(), |p| value_of(p).filter(|v| values.contains(v)));
    for (value, runs) in by_value {
        let i = values.iter().position(|x| *x == value).expect("filtered");
        for t in runs {
            let f = t.trial.as_ref().map(TrialFigures::of);
            out.disturbance[i].add(f.as_ref().and_then(|f| f.disturbance.as_ref()));
            let Some(f) = f else { continue };
            let figs = &mut out.values[i];
            for (name, v) in f.by_metric() {
                figs.entry(name).or_default().push(v);
            }
            if let Some(u) = f.metric("cpu_utilization", cores) {
                figs.entry("cpu_utilization").or_default().push(u);
            }
            for (name, v) in f.per_worker_figures() {
                figs.entry(name).or_default().push(v);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::figures::tests::stored;
    use serde_json::json;

    fn steal(disturbed: bool) -> serde_json::Value {
        let share = if disturbed { 0.12 } else { 0.0 };
        json!({"steal_share": share, "foreign_cpu_share": 0.0, "disturbed": disturbed,
               "cpus": [0], "window_s": 1.0, "steal_cpu_s": 0.0, "foreign_cpu_s": 0.0,
               "own_cpu_s": 0.5, "own_cpu_outside": false, "threshold_steal_share": 0.05,
               "threshold_foreign_cpu_share": 0.1, "foreign_top": []})
    }

    /// A results directory of whole records: `fast` (2 workers) and
    /// `slow` (1 worker) runs of one group, three each; the slow runs
    /// listed in `disturbed` carry a disturbance by steal, the rest a
    /// quiet one, except run 3 of each, an older record without; and a
    /// file that is not a record.
    fn results_dir(name: &str, disturbed: &[u32]) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("rackbench-samples-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("trials")).unwrap();
        let mut manifest: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/contracts/run-v1.json")).unwrap();
        manifest["command"] = "rackbench sweep --out x".into();
        manifest["environment"]["cores"] = 2.into();
        std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
        for (variant, workers, rps) in [("fast", 2, 1000.0), ("slow", 1, 900.0)] {
            for r in 1..=3u32 {
                let doc = stored(|v| {
                    v["planned"]["variant"] = variant.into();
                    v["planned"]["server"] = variant.into();
                    v["planned"]["workers"] = workers.into();
                    v["trial"]["load"]["throughput_rps"] = (rps + r as f64).into();
                    v["trial"]["disturbance"] = if r == 3 {
                        serde_json::Value::Null
                    } else {
                        steal(variant == "slow" && disturbed.contains(&r))
                    };
                });
                std::fs::write(
                    dir.join(format!("trials/{variant}{r}.json")),
                    doc.to_string(),
                )
                .unwrap();
            }
        }
        std::fs::write(dir.join("trials/zz-old.json"), r#"{"outcome": "ok"}"#).unwrap();
        dir
    }

    #[test]
    fn selectors_parse() {
        let s = parse_side("results/x:server=puma-w4").unwrap();
        assert_eq!(s.dir, PathBuf::from("results/x"));
        assert_eq!(s.selector.as_deref(), Some("server=puma-w4"));
        assert!(parse_side("results/x").unwrap().selector.is_none());
        assert!(parse_side("results/x:colour=red").is_err());
    }

    #[test]
    fn sides_must_pick_one_variant_per_group_and_unreadable_records_are_warnings() {
        let dir = results_dir("ambiguous", &[]);
        let whole = Side {
            dir: dir.clone(),
            selector: None,
        };
        let err = compare(&whole, &whole, 1, None).unwrap_err();
        assert!(err.contains("variant=NAME"), "{err}");
        let none = Side {
            dir: dir.clone(),
            selector: Some("server=nope".into()),
        };
        let err = compare(&none, &whole, 1, None).unwrap_err();
        assert!(err.contains("its variants are: fast, slow"), "{err}");
        let side = |v: &str| Side {
            dir: dir.clone(),
            selector: Some(format!("variant={v}")),
        };
        let (_, warnings) = compare(&side("fast"), &side("slow"), 1, None).unwrap();
        assert_eq!(warnings.len(), 2, "once a side: {warnings:?}");
        assert!(
            warnings[0].contains("trials/zz-old.json unreadable"),
            "{warnings:?}"
        );
        let err = compare(&side("fast"), &side("slow"), 1, Some("speed")).unwrap_err();
        assert!(err.contains("is not a metric"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn compare_and_sweep_count_each_sides_disturbed_runs_and_say_so() {
        let dir = results_dir("both", &[1]);
        let side = |v: &str| Side {
            dir: dir.clone(),
            selector: Some(format!("variant={v}")),
        };
        let (c, _) = compare(&side("fast"), &side("slow"), 1, None).unwrap();
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
        let of = |p: &PlannedTrial| p.workers.map(|w| w.to_string());
        let samples = sweep(&dir, &values, &of).unwrap();
        assert_eq!(samples.cores, 1.0, "two cores, one for the generator");
        assert_eq!(
            samples.values[0]["throughput"],
            vec![1001.0, 1002.0, 1003.0]
        );
        assert!(samples.values[1]["cpu_utilization"].len() == 3);
        let spec = sweep::Spec {
            variable: "workers",
            values: &values,
            ordered: true,
            scales: false,
            primary: None,
        };
        let s = sweep::analyse(&dir, &spec, &samples, 1).unwrap();
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
        let side = |v: &str| Side {
            dir: quiet.clone(),
            selector: Some(format!("variant={v}")),
        };
        let (c, _) = compare(&side("fast"), &side("slow"), 1, None).unwrap();
        assert!(
            !c.verdicts.iter().any(|v| v.contains("disturbed")),
            "{:#?}",
            c.verdicts
        );
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(&quiet);
    }
}
