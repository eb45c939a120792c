//! `rackbench sweep` end to end. Against the test server, whose capacity
//! is known: with `--workers N` it serves N requests at a time, each
//! taking 20 ms, and the load keeps 4 connections busy, so throughput
//! doubles from 1 to 2 to 4 workers and is flat after: the knee is 4.
//! Against real puma (workers 1, 2 on hello) when it is installed. Also
//! the sweep-v1 contract, `--analyse` from disk, the usage errors, and the
//! report's sweep and comparison sections in headless Chromium.

mod common;

use common::rackbench_cmd as bin;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn test_server_sweep(out: &Path) -> std::process::Output {
    let exe = common::EXE;
    bin()
        .args(["sweep", "--command"])
        .arg(format!(
            "{exe} serve-test --listen {{{{listen}}}} --delay 20ms --workers {{{{workers}}}}"
        ))
        .args([
            "--vary",
            "workers=1,2,4,8",
            "--connections",
            "4",
            "--duration",
            "1s",
            "--warmup",
            "200ms",
            "--repeats",
            "5",
            "--no-pin",
            "--seed",
            "14",
            "--json",
            "--out",
        ])
        .arg(out)
        .output()
        .unwrap()
}

fn value<'a>(doc: &'a Value, v: &str) -> &'a Value {
    doc["values"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["value"] == v)
        .unwrap_or_else(|| panic!("no value {v} in {doc}"))
}

#[test]
fn a_workers_sweep_finds_the_known_knee_and_fits_the_usl() {
    let dir = common::work_dir("sweep-knee");
    let out = dir.join("results");
    let o = test_server_sweep(&out);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    // stdout is the document alone; the run's lines went to stderr.
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    });
    common::schema::assert_valid("sweep-v1", &doc, "rackbench sweep --json");
    assert_eq!(doc["variable"], "workers");
    assert_eq!(doc["control"], "1");
    assert_eq!(doc["knee"], "4", "{:#}", doc["verdicts"]);
    for v in ["1", "2", "4", "8"] {
        assert_eq!(value(&doc, v)["n"], 5, "{v}");
    }
    // 50, 100, 200 req/s: generous margins for a busy machine.
    let rps = |v: &str| value(&doc, v)["throughput_rps"]["median"].as_f64().unwrap();
    assert!(rps("2") > rps("1") * 1.5, "{} {}", rps("1"), rps("2"));
    assert!(rps("4") > rps("2") * 1.5, "{} {}", rps("2"), rps("4"));
    let t4 = &value(&doc, "4")["vs_control"][0];
    assert_eq!(t4["metric"], "throughput");
    assert_eq!(t4["direction"], "better", "{t4}");
    let usl = &doc["usl"];
    assert!(
        usl["sigma"].is_number() && usl["kappa"].is_number(),
        "{usl}"
    );
    assert!(usl["r2"].as_f64().unwrap() > 0.5, "{usl}");
    let verdicts = doc["verdicts"].to_string();
    assert!(
        verdicts.contains("knee: workers=4") && verdicts.contains("USL fit"),
        "{verdicts}"
    );

    // The same analysis from disk alone, as a table.
    let a = bin()
        .args(["sweep", "--analyse"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let table = String::from_utf8_lossy(&a.stdout);
    assert!(table.contains("workers=4 (knee)"), "{table}");
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    assert_eq!(stored["knee"], "4");

    // `rackbench report` rebuilds the sweep section; with a comparison of
    // two of its values beside it, both render in a browser.
    let c = bin()
        .arg("compare")
        .arg(format!("{}:variant=custom-w1", out.display()))
        .arg(format!("{}:variant=custom-w4", out.display()))
        .arg("--json")
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    std::fs::write(out.join("compare.json"), &c.stdout).unwrap();
    let r = bin().args(["report", "-q"]).arg(&out).output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("id=\"sweep\"") && html.contains("USL σ="),
        "no sweep section"
    );
    assert!(html.contains("id=\"comparison\""), "no comparison section");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Sweep of workers"), "{md}");
    render_in_chromium(&out.join("report.html"), &dir);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn render_in_chromium(html: &Path, dir: &Path) {
    if !common::have_chromium() {
        return;
    }
    let o = common::headless_chromium(&dir.join("chromium"))
        .arg("--dump-dom")
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "chromium failed: {stderr}");
    assert!(!stderr.contains("Uncaught"), "JavaScript error: {stderr}");
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(
        dom.contains("id=\"sweep\"") && dom.contains("id=\"comparison\"") && dom.contains("knee"),
        "DOM lacks the sections"
    );
}

#[test]
fn bad_sweeps_are_usage_errors_that_name_the_fix() {
    let dir = common::work_dir("sweep-usage");
    let rows: &[(&[&str], &str)] = &[
        (&["sweep", "--server", "puma"], "--vary workers=1,2,4,8"),
        (
            &["sweep", "--server", "puma", "--vary", "workers"],
            "NAME=V1,V2",
        ),
        (
            &["sweep", "--server", "puma", "--vary", "workers=1"],
            "two or more values",
        ),
        (&["sweep", "--vary", "workers=1,2"], "name the server"),
        (
            &["sweep", "--analyse", "/nonexistent-rackbench"],
            "is not a directory: give the results directory",
        ),
    ];
    for (args, says) in rows {
        let o = bin()
            .args(*args)
            .arg("--out")
            .arg(dir.join("r"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
    }
    // A plan file without [sweep] and without --vary.
    let plan = dir.join("p.toml");
    std::fs::write(
        &plan,
        "name = \"p\"\nservers = [\"puma\"]\napps = [\"hello\"]\n[load]\nconnections = [1]\n",
    )
    .unwrap();
    let o = bin().arg("sweep").arg(&plan).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no [sweep] section"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Real puma, workers 1 and 2 on hello, short: the sweep runs, every
/// value has its repeats and a CPU share, and the control is compared.
#[test]
fn a_real_puma_workers_sweep_runs_end_to_end() {
    let installed = Command::new("sh")
        .args(["-c", "command -v puma"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !rackbench::require::require("puma", installed, "apt-get install puma") {
        return;
    }
    let dir = common::work_dir("sweep-puma");
    let out = dir.join("results");
    let o = bin()
        .args([
            "sweep",
            "--server",
            "puma",
            "--app",
            "hello",
            "--threads",
            "1",
            "--vary",
            "workers=1,2",
            "--connections",
            "4",
            "--duration",
            "1s",
            "--warmup",
            "300ms",
            "--repeats",
            "2",
            "--json",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    common::schema::assert_valid("sweep-v1", &doc, "puma sweep");
    for v in ["1", "2"] {
        let row = value(&doc, v);
        assert_eq!(row["n"], 2, "{row}");
        assert!(
            row["throughput_rps"]["median"].as_f64().unwrap() > 0.0,
            "{row}"
        );
        let cpu = row["cpu_utilization"]["median"].as_f64().unwrap();
        assert!(cpu > 0.0 && cpu < 1.5, "{row}");
    }
    assert_eq!(value(&doc, "2")["vs_control"][0]["metric"], "throughput");
    // Two values: too few for a fit.
    assert!(doc["usl"].is_null(), "{}", doc["usl"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The seed 002 plan holds four sweeps: its own [sweep] and three more by
/// `--vary`, which replaces the plan's value of that field (unicorn's
/// workers, nginx_workers, the GC_PROFILER env). Each expands to one trial
/// per value and repeat.
#[test]
fn the_seed_002_plan_expands_each_of_its_sweeps() {
    let installed = Command::new("sh")
        .args(["-c", "command -v unicorn && command -v nginx"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !rackbench::require::require(
        "unicorn and nginx",
        installed,
        "apt-get install unicorn nginx",
    ) {
        return;
    }
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/sportsengine-2012-tuning.toml");
    let rows: &[(Option<&str>, &[&str])] = &[
        (
            None,
            &[
                "RUBY_GC_MALLOC_LIMIT-80000000",
                "RUBY_GC_MALLOC_LIMIT-8000000-debian-13__",
            ],
        ),
        (
            Some("workers=1,2,3"),
            &["unicorn-w1-debian-13__", "unicorn-w3-debian-13__"],
        ),
        (Some("nginx_workers=1,2,3"), &["nginx1__", "nginx3__"]),
        (
            Some("env.GC_PROFILER=on,off"),
            &["GC_PROFILER-on-debian-13__", "GC_PROFILER-off-debian-13__"],
        ),
    ];
    for (vary, want) in rows {
        let mut cmd = bin();
        cmd.arg("sweep").arg(&plan).arg("--dry-run");
        if let Some(v) = vary {
            cmd.args(["--vary", v]);
        }
        let o = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{vary:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let values = if vary.is_some_and(|v| v.starts_with("env.")) {
            2
        } else {
            3
        };
        assert_eq!(
            stdout.lines().filter(|l| l.contains("__rep")).count(),
            values * 5,
            "{vary:?}: {stdout}"
        );
        for w in *want {
            assert!(stdout.contains(w), "{vary:?}: no {w} in {stdout}");
        }
    }
}
