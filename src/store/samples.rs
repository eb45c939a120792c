//! The samples the statistics work on, read from results directories:
//! the two sides of a comparison (`stats::compare`) and the values of a
//! sweep (`stats::sweep`). Each trial's numbers come from
//! `store::figures`, the grouping from `store::read::group_by`; the
//! statistics never see a file or a record.

use super::figures::TrialFigures;
use super::read::{group_by, pair_key};
use super::records::{PlannedTrial, StoredTrial};
use super::runtime::{labels, ran_on, RanOn};
use super::study::Study;
use crate::stats::compare::{Comparison, GroupSamples, Side, SideSamples};
use crate::stats::disturbance::DisturbedRuns;
use crate::stats::histogram;
use crate::stats::sweep::{self, Figures, Samples};
use std::path::{Path, PathBuf};

/// Parse `DIR` or `DIR:key=value[,key=value…]` (a path that exists is a
/// path, colon and all). The keys: server, variant, label (the plan's),
/// and runtime, yjit, allocator (what the record's server ran with,
/// `store::runtime`); a trial is selected when it matches every one.
pub fn parse_side(arg: &str) -> Result<Side, String> {
    if let Some((dir, sel)) = arg.rsplit_once(':') {
        if sel.contains('=') && !Path::new(arg).exists() {
            for part in sel.split(',') {
                check_selector(part)
                    .map_err(|why| format!("selector `{part}` in `{arg}`: {why}"))?;
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

/// One `key=value` of a selection, or why not (naming the fix).
fn check_selector(part: &str) -> Result<(), String> {
    let use_ = "use DIR:server=NAME, DIR:variant=NAME, DIR:label=NAME, DIR:runtime=NAME, DIR:yjit=true|false or DIR:allocator=glibc|jemalloc, several joined by commas (DIR:runtime=debian-13,yjit=true)";
    let Some((key, value)) = part.split_once('=').filter(|(_, v)| !v.is_empty()) else {
        return Err(use_.into());
    };
    match key {
        "server" | "variant" | "label" | "runtime" => Ok(()),
        "yjit" if matches!(value, "true" | "false") => Ok(()),
        "allocator" if matches!(value, "glibc" | "jemalloc") => Ok(()),
        _ => Err(use_.into()),
    }
}

/// Whether `t` is what `side`'s selection names: its planned trial for
/// server, variant and label, its record's runtime for the others.
fn selected(side: &Side, t: &StoredTrial) -> bool {
    let Some(sel) = &side.selector else {
        return true;
    };
    let on = t.trial.as_ref().and_then(RanOn::of);
    sel.split(',').all(|part| {
        let (k, v) = part.split_once('=').expect("parsed selector");
        match k {
            "server" => t.planned.server == v,
            "variant" | "label" => t.planned.variant == v,
            _ => on.as_ref().is_some_and(|o| o.matches(k, v)),
        }
    })
}

/// Compare two sides read from disk (`stats::compare::compare`), with
/// the warnings of records that could not be read; a directory both sides
/// name is read once.
pub fn compare(
    a: &Side,
    b: &Side,
    seed: u64,
    primary: Option<&str>,
) -> Result<(Comparison, Vec<String>), String> {
    let open = |s: &Side| Study::open(&s.dir).map_err(|e| e.to_string());
    let sa = open(a);
    let sb = (b.dir != a.dir).then(|| open(b));
    let study_b = sb.as_ref().unwrap_or(&sa);
    compare_in(
        (a, sa.as_ref().map_err(String::clone)),
        (b, study_b.as_ref().map_err(String::clone)),
        seed,
        primary,
    )
}

/// Compare two sides of studies already open (each the study of its
/// side's directory, or why it is not one), with the warnings of records
/// that could not be read.
pub fn compare_in(
    (a, sa): (&Side, Result<&Study, String>),
    (b, sb): (&Side, Result<&Study, String>),
    seed: u64,
    primary: Option<&str>,
) -> Result<(Comparison, Vec<String>), String> {
    if let Some(m) = primary {
        crate::stats::compare::check_metric("the primary metric", m)?;
    }
    let mut warnings = Vec::new();
    let la = side(a, sa?, &mut warnings)?;
    let lb = side(b, sb?, &mut warnings)?;
    let c = crate::stats::compare::compare((a, &la), (b, &lb), seed, primary)?;
    Ok((c, warnings))
}

/// Where the CPU moved from A to B (issue 40), for the groups both sides'
/// selections profiled.
pub fn profile_differences(
    (a, sa): (&Side, &Study),
    (b, sb): (&Side, &Study),
) -> Result<Vec<super::profiles::ProfileDifference>, String> {
    let la = super::profiles::side_stacks(sa, |t| selected(a, t))?;
    let lb = super::profiles::side_stacks(sb, |t| selected(b, t))?;
    Ok(super::profiles::differences(&la, &lb))
}

/// A side's finished trials by pair key (compare's sides, history's
/// runs). Errors are for the user (a selector matching nothing, two
/// variants in one group).
pub fn side(side: &Side, study: &Study, warnings: &mut Vec<String>) -> Result<SideSamples, String> {
    let trials = study
        .trials()
        .map_err(|e| format!("cannot read {}: {e}", study.root().display()))?;
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
    let runtimes_seen = ran_on(ok.iter().filter_map(|t| t.trial.as_ref()));
    let chosen: Vec<&StoredTrial> = ok.into_iter().filter(|t| selected(side, t)).collect();
    let groups = group_by(chosen.iter().copied(), |p| Some(pair_key(p)));
    if groups.is_empty() {
        return Err(match &side.selector {
            Some(s) => format!(
                "no finished trial in {} matches {s}; its variants are: {}{}",
                side.dir.display(),
                variants_seen.join(", "),
                match labels(&runtimes_seen) {
                    Some(l) => format!("; its runtimes: {}", l.replace(" / ", ", ")),
                    None => String::new(),
                }
            ),
            None => format!("{} holds no finished trial", side.dir.display()),
        });
    }
    let mut out = SideSamples {
        runtimes: ran_on(chosen.iter().filter_map(|t| t.trial.as_ref()))
            .iter()
            .map(RanOn::label)
            .collect(),
        ..Default::default()
    };
    for (key, runs) in groups {
        one_runtime(side, &key, &runs)?;
        super::profiles::not_pooled(&side.dir.display().to_string(), &key, &runs)?;
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
            for (name, v) in f.endpoint_metrics() {
                g.add_endpoint(name, v);
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

/// A group of one side must have run on one runtime, or its figures would
/// mix two Rubies: the error names the selection that picks one.
fn one_runtime(side: &Side, key: &str, runs: &[&StoredTrial]) -> Result<(), String> {
    let on = ran_on(runs.iter().filter_map(|t| t.trial.as_ref()));
    if on.len() < 2 {
        return Ok(());
    }
    let dir = side.dir.display();
    Err(format!(
        "{dir} holds group `{key}` run on both `{}` and `{}`: pick one with {dir}:runtime=NAME (and ,yjit=true|false or ,allocator=NAME for its switches)",
        on[0].label(),
        on[1].label()
    ))
}

/// A sweep's samples: the finished trials of the study by their value of
/// the swept variable (`value_of`, one of `values`), and the server's
/// cores from the manifest.
pub fn sweep(
    study: &Study,
    values: &[String],
    value_of: &dyn Fn(&PlannedTrial) -> Option<String>,
) -> Result<Samples, String> {
    let dir = study.root();
    let manifest = study.manifest().ok_or_else(|| {
        format!(
            "{} has no readable manifest.json ({}): give a directory `rackbench sweep` wrote",
            dir.display(),
            study.manifest_warning().unwrap_or_default()
        )
    })?;
    let cores = sweep::server_cores(manifest.environment.cores as f64, &manifest.command);
    let trials = study.trials().map_err(|e| {
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
        let rows = [
            ("results/x:runtime=debian-13", true),
            ("results/x:runtime=debian-13,yjit=true", true),
            ("results/x:yjit=false,allocator=jemalloc,server=puma", true),
            ("results/x:colour=red", false),
            ("results/x:yjit=on", false),
            ("results/x:allocator=tcmalloc", false),
            ("results/x:runtime=debian-13,", false),
            ("results/x:runtime=", false),
        ];
        for (arg, ok) in rows {
            let got = parse_side(arg);
            assert_eq!(got.is_ok(), ok, "{arg}: {got:?}");
            if let Err(e) = got {
                assert!(e.contains("DIR:runtime=NAME, DIR:yjit=true|false"), "{e}");
            }
        }
    }

    /// A results directory of one group (puma, hello, direct) run on
    /// system's Ruby 3.1 and on debian-13's Ruby 3.3, with YJIT off and
    /// on; debian-13's runs 10% faster with YJIT. Three runs each.
    fn runtimes_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("rackbench-runtimes-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("trials")).unwrap();
        let cells = [
            ("system", "3.1.2", false, 1000.0),
            ("debian-13", "3.3.8", false, 1000.0),
            ("debian-13", "3.3.8", true, 1100.0),
        ];
        for (name, version, yjit, rps) in cells {
            for r in 1..=3u32 {
                let doc = stored(|v| {
                    v["trial"]["runtime"]["name"] = name.into();
                    v["trial"]["runtime"]["ruby_version"] = version.into();
                    v["trial"]["runtime"]["yjit"] = yjit.into();
                    v["trial"]["load"]["throughput_rps"] = (rps + r as f64).into();
                });
                let file = format!("trials/{name}-{yjit}-{r}.json");
                std::fs::write(dir.join(file), doc.to_string()).unwrap();
            }
        }
        dir
    }

    #[test]
    fn sides_select_by_runtime_and_switches_and_name_their_runtime() {
        let dir = runtimes_dir("select");
        let side = |sel: &str| Side {
            dir: dir.clone(),
            selector: Some(sel.into()),
        };
        let (c, _) = compare(
            &side("runtime=system"),
            &side("runtime=debian-13,yjit=true"),
            1,
            None,
        )
        .unwrap();
        assert_eq!(c.runtime_a, ["system ruby 3.1.2"]);
        assert_eq!(c.runtime_b, ["debian-13 ruby 3.3.8 +yjit"]);
        assert!(c
            .side_shown(true)
            .ends_with(":runtime=debian-13,yjit=true (debian-13 ruby 3.3.8 +yjit)"));
        let tp = c.rows.iter().find(|r| r.metric == "throughput").unwrap();
        assert_eq!((tp.a, tp.b, tp.n_a, tp.n_b), (1002.0, 1102.0, 3, 3));
        let (c, _) = compare(
            &side("yjit=false,runtime=debian-13"),
            &side("yjit=true"),
            1,
            None,
        )
        .unwrap();
        assert_eq!(c.runtime_a, ["debian-13 ruby 3.3.8"]);
        // Two runtimes under one group on one side would mix two Rubies.
        let err =
            compare(&side("runtime=debian-13"), &side("runtime=system"), 1, None).unwrap_err();
        assert!(
            err.contains("run on both `debian-13 ruby 3.3.8` and `debian-13 ruby 3.3.8 +yjit`: pick one with")
                && err.contains(":runtime=NAME (and ,yjit=true|false"),
            "{err}"
        );
        let err = compare(&side("runtime=jruby"), &side("runtime=system"), 1, None).unwrap_err();
        assert!(
            err.contains(
                "its runtimes: debian-13 ruby 3.3.8, debian-13 ruby 3.3.8 +yjit, system ruby 3.1.2"
            ),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_record_without_a_runtime_is_never_selected_by_one() {
        let dir = results_dir("old", &[]);
        let side = |sel: &str| Side {
            dir: dir.clone(),
            selector: Some(sel.into()),
        };
        // The sample's records say system; the older ones say nothing.
        assert!(compare(
            &side("runtime=system,variant=fast"),
            &side("variant=slow"),
            1,
            None
        )
        .is_ok());
        for f in std::fs::read_dir(dir.join("trials")).unwrap().flatten() {
            let text = std::fs::read_to_string(f.path()).unwrap();
            let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            if let Some(t) = v["trial"].as_object_mut() {
                t.remove("runtime");
            }
            std::fs::write(f.path(), v.to_string()).unwrap();
        }
        let err = compare(&side("runtime=system"), &side("variant=slow"), 1, None).unwrap_err();
        assert!(
            err.contains("matches runtime=system; its variants are: fast, slow"),
            "{err}"
        );
        let (c, _) = compare(&side("variant=fast"), &side("variant=slow"), 1, None).unwrap();
        assert!(c.runtime_a.is_empty() && c.side_shown(false).ends_with(":variant=fast"));
        let _ = std::fs::remove_dir_all(&dir);
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
        let samples = sweep(&Study::open(&dir).unwrap(), &values, &of).unwrap();
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

    /// One endpoint of a record's load: `rps` and a p50 of `p50_us`
    /// (p99 four times it).
    fn endpoint(name: &str, rps: f64, p50_us: f64) -> serde_json::Value {
        let us = |f: f64| (p50_us * f).round() as u64;
        json!({"name": name, "method": "GET", "path": format!("/{name}"), "weight": 1.0,
               "requests": 1000, "ok": 1000, "throughput_rps": rps,
               "latency_us": {"count": 1000, "min": us(0.5), "mean": p50_us, "stdev": p50_us / 4.0,
                              "p50": us(1.0), "p90": us(2.0), "p99": us(4.0), "p999": us(5.0),
                              "max": us(6.0)},
               "errors": {"connect": 0, "timeout": 0, "reset": 0, "parse": 0, "status": 0,
                          "body": 0}})
    }

    /// Variants `a` and `b` of one group, 8 repeats each, every run with
    /// a mix of index, show and search; each figure of each run jittered
    /// by up to ±3% (the same jitters on both sides, in another order),
    /// and `b`'s `slower` endpoint, if any, twice as slow.
    fn mix_dir(name: &str, slower: Option<&str>) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rackbench-mix-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("trials")).unwrap();
        std::fs::write(
            dir.join("manifest.json"),
            include_str!("../../tests/contracts/run-v1.json"),
        )
        .unwrap();
        let jitter_a = [0.97, 1.01, 1.03, 0.99, 1.00, 0.98, 1.02, 1.00];
        let jitter_b = [1.00, 0.98, 1.02, 1.01, 0.97, 1.03, 0.99, 1.00];
        for (variant, jitter) in [("a", jitter_a), ("b", jitter_b)] {
            for (r, j) in jitter.iter().enumerate() {
                let eps: Vec<serde_json::Value> = [
                    ("index", 300.0, 2000.0),
                    ("show", 100.0, 800.0),
                    ("search", 20.0, 9000.0),
                ]
                .iter()
                .map(|&(n, rps, p50)| {
                    let twice = variant == "b" && slower == Some(n);
                    endpoint(n, rps * j, p50 * j * if twice { 2.0 } else { 1.0 })
                })
                .collect();
                let doc = stored(|v| {
                    v["planned"]["variant"] = variant.into();
                    v["trial"]["load"]["endpoints"] = eps.into();
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

    fn compare_mix(dir: &Path) -> Comparison {
        let side = |sel: &str| Side {
            dir: dir.to_path_buf(),
            selector: Some(sel.into()),
        };
        compare(&side("variant=a"), &side("variant=b"), 1, None)
            .unwrap()
            .0
    }

    /// Issue 30: an A/A with a mix finds no endpoint different, though
    /// every endpoint row could have been found (judged).
    #[test]
    fn an_a_a_with_a_mix_gives_no_significant_endpoint_row() {
        let dir = mix_dir("aa", None);
        let c = compare_mix(&dir);
        let ep: Vec<&crate::stats::compare::Row> = c
            .rows
            .iter()
            .filter(|r| r.metric.starts_with("endpoint:"))
            .collect();
        assert_eq!(ep.len(), 9, "3 endpoints × throughput, p50, p99");
        assert_eq!(ep[0].metric, "endpoint:index:throughput");
        assert!(ep.iter().all(|r| r.judged && !r.significant), "{ep:#?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Issue 30: one endpoint twice as slow on B is found on that
    /// endpoint's latency rows and no other, in the one Holm family of
    /// all rows (the headline rows' too).
    #[test]
    fn one_endpoint_twice_as_slow_is_flagged_and_no_other() {
        let dir = mix_dir("2x", Some("show"));
        let c = compare_mix(&dir);
        let flagged: Vec<&str> = c
            .rows
            .iter()
            .filter(|r| r.significant)
            .map(|r| r.metric.as_str())
            .collect();
        assert_eq!(flagged, ["endpoint:show:p50", "endpoint:show:p99"]);
        let p99 = c
            .rows
            .iter()
            .find(|r| r.metric == "endpoint:show:p99")
            .unwrap();
        assert_eq!(p99.direction, "worse");
        assert!(
            p99.verdict
                .starts_with("B's p99 latency of show is 100% higher"),
            "{}",
            p99.verdict
        );
        // Holm's first step multiplies the smallest p by the family's size:
        // every row, headline and per endpoint.
        let min_p = c.rows.iter().map(|r| r.p_value).fold(1.0, f64::min);
        let min_adj = c.rows.iter().map(|r| r.p_adjusted).fold(1.0, f64::min);
        assert!(
            (min_adj - min_p * c.rows.len() as f64).abs() < 1e-12,
            "{min_p} {min_adj}"
        );
        assert!(c.rows.len() > 9, "headline rows in the family too");
        assert!(c.method.contains("per-endpoint rows"), "{}", c.method);
        assert!(
            c.verdict
                .contains("B is worse in p50 latency of show, p99 latency of show"),
            "{}",
            c.verdict
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
