//! Nothing left behind, even after SIGKILL (issue 36): a real `rackbench
//! trial --memory 512M --database postgres` on the blog app is killed
//! mid-trial, so none of its drops run and its control groups, its
//! PostgreSQL data directory (with its claim) and its run dir stay; then
//! `doctor` lists them, the next trial removes them before it starts and
//! says so in one line, and leaves nothing of its own.
//!
//! Its own test target with one test, so no other test of the binary
//! starts a server (and sweeps) between the kill and the next trial.

mod common;

use common::{have, rackbench_cmd, work_dir};
use rackbench::budget::cgroup::{group_owner, group_parents_here, group_processes, place_here};
use rackbench::leftovers::claims;
use rackbench::require::require;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn have_blog_on_postgres() -> bool {
    let place = place_here();
    if !require("cgroups", place.is_ok(), &place.err().unwrap_or_default()) {
        return false;
    }
    let rails = Command::new("ruby")
        .args([
            "-e",
            "require 'rails'; require 'active_record'; require 'pg'",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    let postgres = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.path().join("bin/postgres").is_file());
    require("rails", rails, "apt-get install ruby-rails ruby-pg")
        && require("postgresql", postgres, "apt-get install postgresql")
        && have("puma", "apt-get install puma")
}

/// What rackbench process `pid` made that outlives it: its groups in
/// every hierarchy, its claims, its run dirs.
#[derive(Debug, Default)]
struct Made {
    groups: Vec<PathBuf>,
    claims: Vec<(PathBuf, PathBuf)>,
    run_dirs: Vec<PathBuf>,
}

impl Made {
    fn of(pid: u32) -> Made {
        let mut made = Made::default();
        for (parent, _) in group_parents_here() {
            for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
                if group_owner(&e.file_name().to_string_lossy()) == Some(pid) {
                    made.groups.push(e.path());
                }
            }
        }
        for c in claims::read(&claims::ledger()) {
            if c.pid == pid {
                made.claims.push((c.link, c.target));
            }
        }
        for e in std::fs::read_dir(std::env::temp_dir())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&format!("rb-{pid}-")) {
                made.run_dirs.push(e.path());
            }
        }
        made
    }

    fn is_empty(&self) -> bool {
        self.groups.is_empty() && self.claims.is_empty() && self.run_dirs.is_empty()
    }
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .collect()
}

/// Polls `done` every 100 ms until it holds or `limit` passes.
fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

/// The blog on puma over PostgreSQL in a 512 MiB budget.
const TRIAL: &[&str] = &[
    "trial",
    "--server",
    "puma",
    "--app",
    "blog",
    "--database",
    "postgres",
    "--memory",
    "512M",
    "--no-pin",
];

/// Starts the trial in `dir` and SIGKILLs it once its server has taken
/// load for a moment; returns its PID once its servers and PostgreSQL,
/// told by their parent-death signal, are gone.
fn kill_mid_trial(dir: &Path) -> u32 {
    let mut child = rackbench_cmd()
        .args(TRIAL)
        .args(["-c", "2", "-d", "60s", "--work-dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run rackbench");
    let pid = child.id();
    let data = dir.join("postgres-data").display().to_string();
    let started = wait_for(Duration::from_secs(120), || {
        assert!(child.try_wait().unwrap().is_none(), "the trial ended early");
        std::fs::read_to_string(dir.join("server.log")).is_ok_and(|l| l.contains("Use Ctrl-C"))
    });
    assert!(started, "the trial never started its server");
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !processes_mentioning(&data).is_empty(),
        "postgres should be running mid-trial"
    );
    // SAFETY: kill(2) on the child we started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let groups = Made::of(pid).groups;
    let quiet = wait_for(Duration::from_secs(30), || {
        processes_mentioning(&data).is_empty()
            && groups.iter().all(|g| group_processes(g).is_empty())
    });
    assert!(quiet, "the killed trial's servers or postgres kept running");
    pid
}

#[test]
fn a_trial_killed_mid_load_leaves_groups_and_postgres_data_the_next_trial_removes_in_one_line() {
    if !have_blog_on_postgres() {
        return;
    }
    let dir = work_dir("leftovers-killed");
    let pid = kill_mid_trial(&dir);
    let data = dir.join("postgres-data");

    // What no drop removed: this is what the next command must find.
    let left = Made::of(pid);
    assert!(!left.groups.is_empty(), "no group left: {left:?}");
    assert!(data.is_dir(), "no data directory left: {left:?}");
    assert_eq!(
        left.claims.iter().map(|(_, t)| t).collect::<Vec<_>>(),
        vec![&data],
        "the data directory is claimed: {left:?}"
    );
    assert!(!left.run_dirs.is_empty(), "no run dir left: {left:?}");
    let group_name = left.groups[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();

    // doctor lists them and removes nothing.
    let out = rackbench_cmd()
        .args(["doctor", "--seconds", "1", "--json"])
        .output()
        .expect("run doctor");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("doctor-v1");
    let finding = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == "leftovers")
        .expect("a leftovers finding")
        .clone();
    assert_eq!(finding["status"], "note", "{finding}");
    let found = finding["found"].as_str().unwrap();
    for part in [
        &group_name,
        &data.display().to_string(),
        &format!("rackbench pid {pid}"),
    ] {
        assert!(found.contains(part.as_str()), "{part} not in: {found}");
    }
    assert!(data.is_dir() && left.groups.iter().all(|g| g.exists()));

    // The next trial removes them first and says so in one line.
    let next_dir = work_dir("leftovers-next");
    let next = rackbench_cmd()
        .args(TRIAL)
        .args([
            "-c",
            "1",
            "-d",
            "1s",
            "--warmup",
            "0s",
            "--json",
            "--work-dir",
        ])
        .arg(&next_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rackbench");
    let next_pid = next.id();
    let out = next.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the next trial failed: {stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("killed rackbench"))
        .collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    for part in [
        "note: removed what killed rackbench",
        &pid.to_string(),
        &group_name,
        &format!("PostgreSQL data {}", data.display()),
    ] {
        assert!(lines[0].contains(part), "{part} not in: {}", lines[0]);
    }
    let after = Made::of(pid);
    assert!(after.is_empty(), "still there: {after:?}");
    assert!(!data.exists(), "{} still there", data.display());
    for g in &left.groups {
        assert!(!g.exists(), "{} still there", g.display());
    }

    // And the next trial, which ended as trials end, left nothing itself.
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).expect("trial-v1");
    assert_eq!(record["database"]["kind"], "postgres");
    assert!(record["budget"]["cgroup"].is_string(), "it ran in a group");
    assert!(!next_dir.join("postgres-data").exists());
    let its_own = Made::of(next_pid);
    assert!(its_own.is_empty(), "the next trial left {its_own:?}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&next_dir);
}
