//! `rackbench history` end to end over results directories written by
//! hand (the committed sample of a stored trial, its figures set): ten
//! runs of six repeats with a known 20% p99 regression from the sixth on
//! are one step, found where it is, and `--fail-if` fails on it against a
//! baseline before it; ten runs of the same figures (an A/A series) name
//! no step, and `--fail-if` passes. Also the formats, `--since` and the
//! history-v1 contract.

mod common;

use common::rackbench_cmd as bin;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The run written on day `day` (its directory named out of date order):
/// six repeats of one group, p99 `p99_us` and throughput 1000 rps, each
/// off by up to ±1% (a fixed spread, different in each run), with the
/// project's commit in its environment.
fn write_run(root: &Path, name: &str, day: usize, p99_us: f64) {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("trials")).unwrap();
    std::fs::write(dir.join("plan.toml"), "name = \"h\"\napps = [\"hello\"]\n").unwrap();
    for r in 0..6usize {
        let noise = 1.0 + (((day * 7 + r * 5) % 11) as f64 - 5.0) * 0.002;
        let mut doc: Value =
            serde_json::from_str(include_str!("contracts/run-trial-v1.json")).unwrap();
        let (load, sm) = ("load", "server_metrics");
        doc["id"] = format!("s__rep{r}").into();
        doc["repeat"] = r.into();
        doc["planned"]["server"] = "s".into();
        doc["planned"]["variant"] = "s".into();
        doc["planned"]["shape"] = serde_json::json!({"connections": 4});
        doc["trial"]["started_at"] = format!("2026-11-{day:02}T03:00:{r:02}Z").into();
        doc["trial"]["environment"]["git_commit"] = format!("{day:02}{}", "ab".repeat(19)).into();
        doc["trial"][load]["throughput_rps"] = (1000.0 * noise).into();
        for (p, base) in [("p50", 0.3), ("p90", 0.6), ("p99", 1.0)] {
            doc["trial"][load]["latency_us"][p] = ((p99_us * base * noise) as u64).into();
        }
        doc["trial"][load]["latency_histogram"] = Value::Null;
        doc["trial"][sm]["rss_peak_bytes"] = ((5e7 * noise) as u64).into();
        std::fs::write(
            dir.join("trials").join(format!("s__rep{r}.json")),
            doc.to_string(),
        )
        .unwrap();
    }
}

/// Ten runs, days 1 to 10, in directories whose names do not sort by
/// date; p99 `step` times higher from day 6 on.
fn series(name: &str, step: f64) -> PathBuf {
    let root = common::scratch(&format!("history-{name}"));
    let _ = std::fs::remove_dir_all(&root);
    for day in 1..=10 {
        let p99 = if day >= 6 { 3000.0 * step } else { 3000.0 };
        write_run(&root, &format!("run-{}", (day * 7) % 10), day, p99);
    }
    root
}

fn history(args: &[&str]) -> std::process::Output {
    bin().arg("history").args(args).output().unwrap()
}

fn json(out: &std::process::Output) -> Value {
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each point's run (by its day) and verdict.
fn verdicts(doc: &Value) -> Vec<(String, Option<String>)> {
    doc["groups"][0]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["started"].as_str().unwrap()[..10].to_string(),
                p["verdict_vs_baseline"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn a_step_part_way_is_found_alone_and_fails_the_gate() {
    let root = series("step", 1.2);
    let r = root.to_str().unwrap();
    let out = history(&[r, "--metric", "p99", "--json"]);
    let doc = json(&out);
    common::schema::assert_valid("history-v1", &doc, "history --json");
    let groups = doc["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "--metric shows one metric: {doc}");
    let steps = groups[0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{steps:?}");
    // Day 5 is run-5, day 6 run-2 (day × 7 mod 10).
    assert!(
        steps[0]["from"].as_str().unwrap().ends_with("run-5"),
        "{steps:?}"
    );
    assert!(
        steps[0]["to"].as_str().unwrap().ends_with("run-2"),
        "{steps:?}"
    );
    assert_eq!(steps[0]["verdict"], "slower");
    let c = steps[0]["change_pct"].as_f64().unwrap();
    assert!((c - 20.0).abs() < 3.0, "{c}");
    // In date order; the first makes the baseline; only day 6 is slower.
    let v = verdicts(&doc);
    let days: Vec<&str> = v.iter().map(|(d, _)| d.as_str()).collect();
    assert_eq!(
        days,
        (1..=10)
            .map(|d| format!("2026-11-{d:02}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(v[0].1, None);
    for (i, (_, w)) in v.iter().enumerate().skip(1) {
        let want = if i == 5 { "slower" } else { "equivalent" };
        assert_eq!(w.as_deref(), Some(want), "day {}: {v:?}", i + 1);
    }
    assert_eq!(
        doc["runs"][0]["commit"],
        format!("01{}", "ab".repeat(19)),
        "{}",
        doc["runs"][0]
    );

    // The newest run against the run before it is no regression: passes.
    let gate = ["--metric", "p99", "--fail-if", "p99>+5%"];
    let out = history(&[&[r][..], &gate[..]].concat());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Against the first run it is: exit 1, the rule and group named.
    let first = root.join("run-7");
    let base = first.to_str().unwrap();
    let out = history(&[&[r, "--baseline", base][..], &gate[..]].concat());
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("fail-if p99>5%: hello direct connections=4 p99"),
        "{err}"
    );
    // Against the median of the five before a newest run just past the
    // step too; the five make the baseline.
    let since = ["--since", "2026-11-01", "--baseline", "median-of-5"];
    let six: Vec<String> = (1..=6)
        .map(|d| {
            root.join(format!("run-{}", (d * 7) % 10))
                .display()
                .to_string()
        })
        .collect();
    let mut args: Vec<&str> = six.iter().map(String::as_str).collect();
    args.extend(since);
    args.extend(gate);
    args.push("--json");
    let out = history(&args);
    assert_eq!(out.status.code(), Some(1));
    let v = verdicts(&json(&out));
    assert!(
        v[..5].iter().all(|(_, w)| w.is_none()) && v[5].1.as_deref() == Some("slower"),
        "{v:?}"
    );

    // The other formats name the step; --html draws it.
    let page = root.join("history.html");
    let md = history(&[
        r,
        "--metric",
        "p99",
        "--markdown",
        "--html",
        page.to_str().unwrap(),
    ]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("## hello direct connections=4: p99 latency"),
        "{md}"
    );
    assert!(md.contains("- step: p99 latency +2"), "{md}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<svg") && html.contains("step +2") && !html.contains("<script"));
    let csv = history(&[r, "--metric", "p99", "--csv"]);
    let csv = String::from_utf8_lossy(&csv.stdout);
    assert_eq!(csv.lines().count(), 11, "{csv}");
    assert!(csv.lines().nth(6).unwrap().contains(",slower,"), "{csv}");
    let term = history(&[r, "--metric", "p99"]);
    assert!(String::from_utf8_lossy(&term.stdout).contains("step: p99 latency"));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_aa_series_has_no_step_and_passes_the_gate() {
    let root = series("aa", 1.0);
    let r = root.to_str().unwrap();
    for baseline in ["last", "median-of-3"] {
        let out = history(&[
            r,
            "--metric",
            "p99",
            "--baseline",
            baseline,
            "--fail-if",
            "p99>+1%",
            "--json",
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc = json(&out);
        assert_eq!(
            doc["groups"][0]["steps"],
            serde_json::json!([]),
            "{baseline}"
        );
        assert!(
            verdicts(&doc)
                .iter()
                .all(|(_, w)| !matches!(w.as_deref(), Some("faster" | "slower"))),
            "{baseline}: {:?}",
            verdicts(&doc)
        );
    }
    // Without --metric: every metric the runs have, none with a step.
    let doc = json(&history(&[r, "--json"]));
    let groups = doc["groups"].as_array().unwrap();
    assert!(groups.len() >= 5, "{}", groups.len());
    assert!(groups.iter().all(|g| g["steps"] == serde_json::json!([])));
    // --since leaves the earlier runs out.
    let doc = json(&history(&[
        r,
        "--metric",
        "p99",
        "--since",
        "2026-11-08",
        "--json",
    ]));
    assert_eq!(doc["runs"].as_array().unwrap().len(), 3);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn wrong_arguments_are_usage_errors_naming_the_fix() {
    let root = series("usage", 1.0);
    let r = root.to_str().unwrap();
    for (args, says) in [
        (vec![r, "--baseline", "median-of-0"], "median-of-N"),
        (vec![r, "--since", "yesterday"], "--since yesterday"),
        (vec![r, "--metric", "speed"], "is not a metric"),
        (vec![r, "--fail-if", "p99>5"], "METRIC>+N%"),
        (vec!["/nonexistent-history"], "is not a results directory"),
        (
            vec![r, "--since", "2027-01-01"],
            "no run started at or after",
        ),
    ] {
        let out = history(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&root);
}
