//! `rackbench compare` and `rackbench run --aa` end to end against the test
//! server, whose service time is known: an A/A run must find no significant
//! difference on any metric, and a real 15% longer service time must be
//! found, with an interval that covers 15%. Also --fail-if's exit codes and
//! the compare-v1 contract.

mod common;

use common::rackbench_cmd as bin;
use serde_json::Value;
use std::path::PathBuf;

/// A plan with two test servers: `base` (50 ms per request) and `slow`
/// (57.5 ms, 15% longer), 6 repeats each of a short fixed load. The service
/// time is long so that the server's fixed overhead (a few hundred µs of
/// wake-up and parsing, the same on both sides) dilutes the 15% by under a
/// tenth of a point.
fn write_plan(name: &str) -> common::Plan {
    let exe = common::EXE;
    common::Plan::write(
        name,
        "plan.toml",
        &format!(
            r#"name = "service-time"
repeats = 6
servers = ["base", "slow"]
apps = ["hello"]
[server_defs.base]
command = "{exe} serve-test --listen {{{{listen}}}} --delay 50ms"
[server_defs.slow]
command = "{exe} serve-test --listen {{{{listen}}}} --delay 57500us"
[load]
connections = [8]
duration = "700ms"
warmup = "150ms"
"#
        ),
    )
}

/// One plan run at a time in this file. Two runs side by side disturb each
/// other's figures in step with each other's rounds, and one, the server's
/// PSS, depends on them directly: the test server shares its pages with
/// every process that maps the same binary, the other run's servers
/// included. An A/A run beside the 15% run once found B's PSS 2% higher,
/// "significant" (p = 0.03 adjusted).
static ONE_RUN_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(args: &[&str], plan: &common::Plan) -> std::process::Output {
    let _one = ONE_RUN_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    plan.run_ok(&[&["--no-pin", "--seed", "14"][..], args].concat())
}

fn row<'a>(doc: &'a Value, metric: &str) -> &'a Value {
    doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} row in {doc}"))
}

#[test]
fn a_15_percent_longer_service_time_is_found_and_gates_ci() {
    let plan = write_plan("compare");
    let (dir, out) = (plan.dir.clone(), plan.out.clone());
    run(&[], &plan);
    let a = format!("{}:server=base", out.display());
    let b = format!("{}:server=slow", out.display());
    let o = bin().args(["compare", &a, &b, "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    common::schema::assert_valid("compare-v1", &doc, "compare output");

    let p50 = row(&doc, "p50");
    assert_eq!(p50["significant"], true, "{p50}");
    let (lo, hi) = (
        p50["ci_low_pct"].as_f64().unwrap(),
        p50["ci_high_pct"].as_f64().unwrap(),
    );
    // The servers' service times differ by exactly 15% (50 ms against
    // 57.5 ms); what the client measures adds a fixed overhead o (parsing,
    // loopback, the loop) to both, so the true change of its latency is
    // (57.5 + o) / (50 + o) - 1: 15% at o = 0, 14.7% at o = 1 ms, 13.6% at
    // o = 5 ms (a machine loaded to a load average of 6: a run beside
    // other builds once gave an interval whose top was under 14.5%). The
    // interval must reach into that band, whose width the test cannot
    // narrow further without knowing o; 10% or 20% stay far outside it.
    assert!(
        lo <= 15.0 && hi >= 13.5,
        "p50 interval {lo}..{hi} misses the true change (13.5% to 15%): {p50}"
    );
    assert_eq!(p50["n_a"], 6);
    // The trial records keep their latency histograms; merged, they agree.
    let merged = p50["merged_change_pct"]
        .as_f64()
        .expect("histograms stored and merged");
    assert!(
        (merged - p50["change_pct"].as_f64().unwrap()).abs() < 3.0,
        "{p50}"
    );
    // Closed loop with 8 connections: throughput falls by 1 − 1/1.15 = 13%,
    // give or take the whole rounds of 50 ms that fit in 700 ms (quantised,
    // so only the direction and rough size are asserted).
    let tput = row(&doc, "throughput");
    assert_eq!(tput["significant"], true, "{tput}");
    let change = tput["change_pct"].as_f64().unwrap();
    assert!((-20.0..=-8.0).contains(&change), "{tput}");
    assert!(tput["ci_high_pct"].as_f64().unwrap() < 0.0, "{tput}");
    let verdict = tput["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("B is 1") && verdict.contains("% slower in throughput (95% CI"),
        "{tput}"
    );

    // A significant p50 rise over 5% fails the build; over 30% it does not.
    let gate = |rule: &str| {
        bin()
            .args(["compare", &a, &b, "--fail-if", rule])
            .output()
            .unwrap()
    };
    let failing = gate("p50>+5%");
    assert_eq!(
        failing.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&failing.stderr)
    );
    assert!(String::from_utf8_lossy(&failing.stderr).contains("fail-if p50>5%"));
    assert_eq!(gate("p50>+30%").status.code(), Some(0));
    assert_eq!(gate("throughput<-5%").status.code(), Some(1));
    let bad = gate("p50 > 5");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("METRIC>+N%"));

    // Markdown and the HTML page carry the same comparison.
    let md = bin()
        .args(["compare", &a, &b, "--markdown"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&md.stdout).contains("| hello direct connections=8 | p50 |"));
    let html = dir.join("cmp.html");
    let o = bin()
        .args(["compare", &a, &b, "--html"])
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("hello direct connections=8 · p50 latency"));

    // A selector that matches nothing names the variants there are.
    let o = bin()
        .args(["compare", &a, &format!("{}:server=nope", out.display())])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("its variants are: base, slow"));
    // Without a selector each side holds two variants per group: refused.
    let whole = out.display().to_string();
    let o = bin().args(["compare", &whole, &whole]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("variant=NAME"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn aa_run_of_one_configuration_finds_no_difference() {
    let plan = write_plan("aa");
    let (dir, out) = (plan.dir.clone(), plan.out.clone());
    let o = run(&["--aa", "--control", "base"], &plan);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("A/A comparison"), "{stdout}");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("compare.json")).unwrap()).unwrap();
    common::schema::assert_valid("compare-v1", &doc, "compare.json");
    let rows = doc["rows"].as_array().unwrap();
    assert!(rows.len() >= 6, "{doc}");
    for r in rows {
        assert_eq!(r["significant"], false, "A/A found a difference: {r}");
        assert_eq!(r["n_a"], 6, "{r}");
    }
    assert!(doc["verdict"]
        .as_str()
        .unwrap()
        .starts_with("no significant difference"));
    // Only the control ran, as two variants.
    let trials = std::fs::read_dir(out.join("trials")).unwrap().count();
    assert_eq!(trials, 12);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("id=\"comparison\""),
        "the report shows the A/A comparison"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn aa_plans_only_the_control_twice_and_refuses_an_unknown_one() {
    let plan = write_plan("aa-dry");
    let o = bin()
        .arg("run")
        .arg(&plan.file)
        .args(["--aa", "--dry-run"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ids: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(ids.len(), 12, "{ids:?}");
    assert_eq!(
        ids.iter()
            .filter(|i| i.starts_with("base-aa1__hello"))
            .count(),
        6
    );
    assert_eq!(
        ids.iter()
            .filter(|i| i.starts_with("base-aa2__hello"))
            .count(),
        6
    );
    let o = bin()
        .arg("run")
        .arg(&plan.file)
        .args(["--aa", "--control", "nope", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("it has: base, slow"));
    let _ = std::fs::remove_dir_all(&plan.dir);
}

/// A results directory written by hand: 5 repeats of one group, every
/// figure `scale` times the base, and a plan naming `primary_metric`.
fn fixture_dir(name: &str, scale: f64, plan: &str) -> PathBuf {
    let dir = common::scratch(&format!("primary-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("trials")).unwrap();
    std::fs::write(dir.join("manifest.json"), "{}").unwrap();
    std::fs::write(dir.join("plan.toml"), plan).unwrap();
    for r in 0..5 {
        let x = scale * (1.0 + r as f64 * 0.002);
        // The committed sample of a stored trial, its figures scaled.
        let mut doc: Value =
            serde_json::from_str(include_str!("contracts/run-trial-v1.json")).unwrap();
        let (load, sm) = ("load", "server_metrics");
        doc["planned"]["server"] = "s".into();
        doc["planned"]["variant"] = "s".into();
        doc["planned"]["shape"] = serde_json::json!({"connections": 4});
        doc["trial"][load]["throughput_rps"] = (1000.0 / x).into();
        for (p, base) in [("p50", 900.0), ("p90", 1500.0), ("p99", 3000.0)] {
            doc["trial"][load]["latency_us"][p] = ((base * x) as u64).into();
        }
        doc["trial"][load]["requests"]["total"] = 10000.into();
        doc["trial"][load]["latency_histogram"] = Value::Null;
        doc["trial"][sm]["rss_peak_bytes"] = ((5e7 * x) as u64).into();
        doc["trial"][sm]["pss_peak_bytes"] = ((4e7 * x) as u64).into();
        doc["trial"][sm]["cpu_ms_per_request"] = (0.2 * x).into();
        std::fs::write(
            dir.join("trials").join(format!("s__rep{r}.json")),
            doc.to_string(),
        )
        .unwrap();
    }
    dir
}

/// Five repeats a side cannot show anything among eight Holm-adjusted
/// metrics; the metric named before the run (the plan's primary_metric,
/// or --metric over it) is judged alone and can.
#[test]
fn a_primary_metric_from_the_plan_or_the_flag_is_judged_alone() {
    let plan = "name = \"p\"\nprimary_metric = \"p99\"\napps = [\"hello\"]\n";
    let a = fixture_dir("a", 1.0, plan);
    let b = fixture_dir("b", 1.2, plan);
    let compare = |extra: &[&str]| {
        let o = bin()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .arg("--json")
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        common::schema::assert_valid("compare-v1", &doc, "compare --json");
        doc
    };
    let doc = compare(&[]);
    assert_eq!(doc["primary_metric"], "p99");
    let p99 = row(&doc, "p99");
    assert_eq!(p99["primary"], true);
    assert_eq!(p99["significant"], true, "{p99}");
    assert_eq!(row(&doc, "p50")["significant"], false);
    assert_eq!(row(&doc, "p50")["primary"], false);
    assert!(doc["verdict"]
        .as_str()
        .unwrap()
        .starts_with("primary p99: B's p99 latency is 20% higher"));
    let doc = compare(&["--metric", "throughput"]);
    assert_eq!(doc["primary_metric"], "throughput");
    assert_eq!(row(&doc, "throughput")["significant"], true);
    assert_eq!(row(&doc, "p99")["significant"], false);
    let o = bin()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--metric", "speed"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "--metric \"speed\" is not a metric: use one of throughput, p50, p90, p99, rss_peak"
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

/// Issue 27: one results directory whose group ran on system's Ruby 3.1
/// and on debian-13's Ruby 3.3 (20% slower here, by construction):
/// `DIR:runtime=debian-13` against `DIR:runtime=system` compares the two,
/// every output names each side's runtime, and the whole directory is
/// refused rather than pooling two Rubies.
#[test]
fn a_side_selected_by_runtime_compares_one_ruby_against_another() {
    let dir = fixture_dir("runtimes", 1.0, "name = \"rt\"\n");
    let debian = fixture_dir("runtimes-debian", 1.2, "name = \"rt\"\n");
    for f in std::fs::read_dir(debian.join("trials")).unwrap().flatten() {
        let mut doc: Value =
            serde_json::from_str(&std::fs::read_to_string(f.path()).unwrap()).unwrap();
        doc["trial"]["runtime"]["name"] = "debian-13".into();
        doc["trial"]["runtime"]["kind"] = "debian".into();
        doc["trial"]["runtime"]["ruby_version"] = "3.3.8".into();
        doc["trial"]["runtime"]["yjit"] = true.into();
        let name = format!("debian-{}", f.file_name().to_string_lossy());
        std::fs::write(dir.join("trials").join(name), doc.to_string()).unwrap();
    }
    let _ = std::fs::remove_dir_all(&debian);
    let side = |sel: &str| format!("{}:{sel}", dir.display());
    let o = bin()
        .args([
            "compare",
            &side("runtime=system"),
            &side("runtime=debian-13"),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    common::schema::assert_valid("compare-v1", &doc, "compare by runtime");
    assert_eq!(doc["runtime_a"], serde_json::json!(["system ruby 3.1.2"]));
    assert_eq!(
        doc["runtime_b"],
        serde_json::json!(["debian-13 ruby 3.3.8 +yjit"])
    );
    // Each side took its own five runs: B's p99 is 20% above A's.
    let p99 = row(&doc, "p99");
    assert_eq!(
        (p99["n_a"].as_u64(), p99["n_b"].as_u64()),
        (Some(5), Some(5))
    );
    let change = p99["change_pct"].as_f64().unwrap();
    assert!((19.5..20.5).contains(&change), "{p99}");
    let o = bin()
        .args([
            "compare",
            &side("runtime=system"),
            &side("runtime=debian-13,yjit=true"),
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.starts_with(&format!(
            "A: {} (system ruby 3.1.2)\nB: {} (debian-13 ruby 3.3.8 +yjit)\n",
            side("runtime=system"),
            side("runtime=debian-13,yjit=true")
        )),
        "{out}"
    );
    let whole = dir.display().to_string();
    let o = bin().args(["compare", &whole, &whole]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "run on both `debian-13 ruby 3.3.8 +yjit` and `system ruby 3.1.2`: pick one with"
        ),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
