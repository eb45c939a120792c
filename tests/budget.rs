//! Budgets end to end with real servers (issue 28): the memory app's
//! workers against a memory limit that holds two and not three, the CPU
//! quota halving a CPU-bound app's throughput on one pinned core, a server
//! that cannot start inside its budget, the group gone after Ctrl-C, and
//! no group at all without a budget.

mod common;

use common::{have, rackbench_cmd, work_dir};
use rackbench::budget::cgroup::place_here;
use rackbench::require::require;
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The trials share CPU 0: one at a time, or the CPU test measures the
/// others' load instead of the quota.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A writable place for groups here, or a skip (a failure in CI).
fn cgroups() -> bool {
    let place = place_here();
    require("cgroups", place.is_ok(), &place.err().unwrap_or_default())
}

/// `rackbench trial --json` of the memory app on puma with `args`.
fn trial(name: &str, args: &[&str]) -> (bool, Value, String) {
    let dir = work_dir(name);
    let out = rackbench_cmd()
        .args([
            "trial",
            "--server",
            "puma",
            "--app",
            "memory",
            "--json",
            "--server-cpus",
            "0",
        ])
        .args(["--work-dir", dir.to_str().unwrap()])
        .args(args)
        .output()
        .expect("run rackbench");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.success(), doc, stderr)
}

/// The groups rackbench process `pid` made, in either parent.
fn groups_of(pid: u32) -> Vec<PathBuf> {
    let place = place_here().expect("checked");
    let mut found = Vec::new();
    for parent in [place.memory_parent, place.cpu_parent] {
        for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&format!("rackbench-{pid}-")) {
                found.push(e.path());
            }
        }
    }
    found
}

#[test]
fn workers_beyond_what_the_memory_limit_holds_are_killed_for_memory_and_within_it_none() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !cgroups() || !have("puma", "apt-get install puma") {
        return;
    }
    // Each puma worker holds 64 MiB besides its own ~25 MiB; two fit in
    // 230 MiB with the master, three do not. The workers load the app one
    // by one after the first answers: a busy machine took 2 s to bring the
    // third, after a 2 s trial had ended, so the warm-up gives them 3 s.
    let common = [
        "--env",
        "MEMORY_PER_WORKER=64M",
        "--memory",
        "230M",
        "--warmup",
        "3s",
        "-d",
        "2s",
        "--threads",
        "1",
    ];
    let (ok, two, err) = trial("budget-two", &[&common[..], &["--workers", "2"]].concat());
    assert!(ok, "{err}");
    assert_eq!(two["budget"]["oom_kills"], 0, "{}", two["budget"]);
    assert_eq!(two["budget"]["memory_limit_bytes"], 230u64 << 20);
    let peak = two["budget"]["memory_peak_bytes"].as_u64().unwrap();
    assert!(peak > 128 << 20, "two workers hold 128 MiB: peak {peak}");
    let (ok, three, err) = trial("budget-three", &[&common[..], &["--workers", "3"]].concat());
    if ok {
        let kills = three["budget"]["oom_kills"].as_u64().unwrap();
        assert!(kills > 0, "{}", three["budget"]);
    } else {
        assert!(err.contains("killed for memory"), "{err}");
    }
}

#[test]
fn a_server_that_cannot_start_inside_its_memory_fails_with_that_reason_in_one_line() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !cgroups() || !have("puma", "apt-get install puma") {
        return;
    }
    let (ok, _, err) = trial(
        "budget-tiny",
        &[
            "--env",
            "MEMORY_PER_WORKER=128M",
            "--memory",
            "64M",
            "--workers",
            "1",
            "--start-timeout",
            "10s",
            "-d",
            "1s",
        ],
    );
    assert!(!ok);
    assert!(
        err.contains("killed for memory while starting inside --memory 64M"),
        "{err}"
    );
}

#[test]
fn half_a_cpu_gives_about_half_the_throughput_of_one() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !cgroups() || !have("puma", "apt-get install puma") {
        return;
    }
    let rps = |cpus: &str| {
        let (ok, d, err) = trial(
            &format!("budget-cpu-{cpus}"),
            &[
                "--cpus",
                cpus,
                "--workers",
                "1",
                "--threads",
                "1",
                "-c",
                "4",
                "-d",
                "4s",
                "--env",
                "CPU_PER_REQUEST_MS=5",
            ],
        );
        assert!(ok, "{err}");
        let n = d["load"]["requests"]["ok"].as_f64().unwrap();
        (n, d["budget"]["cpu_throttled_periods"].as_u64().unwrap())
    };
    let (full, _) = rps("1");
    let (half, throttled) = rps("0.5");
    let ratio = half / full;
    assert!(
        (0.35..=0.65).contains(&ratio),
        "0.5 CPU {half} vs 1 CPU {full}: {ratio:.2}"
    );
    assert!(throttled > 0, "half a CPU is throttled");
}

#[test]
fn the_group_is_gone_after_ctrl_c_and_no_group_is_made_without_a_budget() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !cgroups() || !have("puma", "apt-get install puma") {
        return;
    }
    for budget in [true, false] {
        let dir = work_dir(&format!("budget-int-{budget}"));
        let mut cmd = rackbench_cmd();
        cmd.args(["trial", "--server", "puma", "--app", "hello", "-d", "30s"])
            .args(["--work-dir", dir.to_str().unwrap()]);
        if budget {
            cmd.args(["--memory", "512M", "--cpus", "1"]);
        }
        let mut child = cmd
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        // The load has begun once the server's log says it listens.
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            seen = groups_of(pid);
            let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
            if log.contains("Use Ctrl-C") && (!budget || !seen.is_empty()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_secs(2));
        if budget {
            assert!(!seen.is_empty(), "a budget makes a group");
        } else {
            assert!(groups_of(pid).is_empty(), "no budget, no group");
        }
        // SAFETY: kill(2) on the child we started.
        unsafe {
            libc::kill(pid as i32, libc::SIGINT);
        }
        child.wait().unwrap();
        assert!(
            groups_of(pid).is_empty(),
            "left behind: {:?}",
            groups_of(pid)
        );
        for g in seen {
            assert!(!g.exists(), "{} left behind", g.display());
        }
    }
}
