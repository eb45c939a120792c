//! Faults a trial must count (issue 36), against the real servers through
//! the binary. A worker killed by pid from outside, about 2 s into the
//! counted window (the test finds it in the trial's process tree and
//! sends SIGKILL itself; no `--restart`), is one entry of the record's
//! `faults.worker_deaths` with that pid, signal 9 where the kernel's exit
//! events can be read (root in the initial network namespace; null
//! otherwise, never guessed) and the pid
//! the master replaced it with, on puma (cluster), unicorn and Passenger;
//! the terminal says it in words; `per_worker` counts the workers the
//! server ran, naming the one that left. A worker stopped (SIGSTOP) for
//! 2 s is named among the hung workers. Nothing the trial started is left
//! running.

mod common;

use common::schema::assert_valid;
use serde_json::Value;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn installed(server: &str) -> bool {
    common::have(server, &format!("apt-get install {server}"))
}

/// Whether the kernel hands rackbench exit events here (root, in the
/// initial network namespace): a child killed with SIGKILL is seen so.
/// Without them a death's cause must read as unknown.
fn exit_events() -> bool {
    use rackbench::sampler::{ExitCause, ExitWatch};
    static SEEN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SEEN.get_or_init(|| {
        let Some(watch) = ExitWatch::start() else {
            return false;
        };
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        std::thread::sleep(Duration::from_millis(100));
        let _ = child.kill();
        let _ = child.wait();
        std::thread::sleep(Duration::from_millis(300));
        (watch.finish().iter()).any(|e| e.pid == pid && e.cause == ExitCause::Signal(9))
    })
}

/// Every process below `root` with its command line.
fn descendants(root: u32) -> Vec<(u32, String)> {
    let mut parent = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if fields.first() == Some(&"Z") {
            continue;
        }
        if let Some(ppid) = fields.get(1).and_then(|p| p.parse::<u32>().ok()) {
            parent.insert(pid, ppid);
        }
    }
    let below = |mut p: u32| {
        for _ in 0..16 {
            match parent.get(&p) {
                Some(&pp) if pp == root => return true,
                Some(&pp) => p = pp,
                None => return false,
            }
        }
        false
    };
    let mut out: Vec<(u32, String)> = parent
        .keys()
        .copied()
        .filter(|&p| below(p))
        .map(|p| {
            let raw = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            (p, String::from_utf8_lossy(&raw).replace('\0', " "))
        })
        .collect();
    out.sort();
    out
}

/// `rackbench trial` with `args`, 2 workers, a 1 s warm-up and a 6 s
/// window; once two workers titled `title` are in its tree and the load
/// holds its connections, 3 s later (about 2 s into the window) `act`
/// gets the first worker's pid. The trial's output and that pid.
fn trial_with(name: &str, args: &[&str], title: &str, act: impl FnOnce(u32)) -> (Output, u32) {
    let work = common::work_dir(&format!("faults-{name}"));
    let child = common::rackbench_cmd()
        .args([
            "trial",
            "--no-pin",
            "-c",
            "8",
            "-d",
            "6s",
            "--warmup",
            "1s",
            "--workers",
            "2",
            "--work-dir",
        ])
        .arg(&work)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let victim = loop {
        let workers: Vec<u32> = descendants(child.id())
            .into_iter()
            .filter(|(_, c)| c.contains(title))
            .map(|(p, _)| p)
            .collect();
        if workers.len() >= 2 {
            break Some(workers[0]);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let Some(victim) = victim else {
        let out = child.wait_with_output().unwrap();
        panic!(
            "{name}: no two workers titled {title:?} appeared: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // The load has started when the trial holds its 8 connections; the
    // sampler watches from before then, so a death from here on is seen.
    while sockets(child.id()) < 8 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(3000));
    act(victim);
    let out = child.wait_with_output().unwrap();
    assert_nothing_left(name, &work);
    let _ = std::fs::remove_dir_all(&work);
    (out, victim)
}

/// How many sockets `pid` holds open.
fn sockets(pid: u32) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    fds.flatten()
        .filter(|f| {
            std::fs::read_link(f.path()).is_ok_and(|l| l.to_string_lossy().starts_with("socket:"))
        })
        .count()
}

fn kill(pid: u32, signal: i32) {
    // SAFETY: a signal to a worker of the server this test's trial started.
    assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0, "kill {pid}");
}

/// No process whose command line names the trial's directory is left.
fn assert_nothing_left(name: &str, work: &Path) {
    let work = work.display().to_string();
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let raw = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains(&work) {
            left.push(format!("{} {cmdline}", entry.file_name().to_string_lossy()));
        }
    }
    assert!(left.is_empty(), "{name}: left running: {left:?}");
}

/// The one death in `doc`, checked: the victim's pid, signal 9 as root
/// (null, the cause unknown, otherwise), a replacement, the resets
/// counted, within the load's time; a replacement when `replaces`.
fn assert_one_death(name: &str, doc: &Value, victim: u32, replaces: bool) {
    let deaths = doc["faults"]["worker_deaths"].as_array().unwrap();
    assert_eq!(deaths.len(), 1, "{name}: {}", doc["faults"]);
    let d = &deaths[0];
    assert_eq!(d["pid"], victim, "{name}: {d}");
    if exit_events() {
        assert_eq!(d["signal"], 9, "{name}: {d}");
    } else {
        assert!(d["signal"].is_null(), "{name}: guessed a cause: {d}");
    }
    assert!(d["exit_status"].is_null(), "{name}: {d}");
    let at = d["at_s"].as_f64().unwrap();
    assert!((-1.0..=6.5).contains(&at), "{name}: at {at} s: {d}");
    // Passenger spawns an app process when its pool wants one, which a
    // short load may not ask for; puma's and unicorn's masters always do.
    match d["replaced_by"].as_u64() {
        Some(by) => {
            assert_ne!(by, u64::from(victim), "{name}");
            assert!(d["replaced_after_ms"].is_u64(), "{name}: {d}");
        }
        None => assert!(!replaces, "{name}: not replaced: {d}"),
    }
    assert!(d["connections_reset"].is_u64(), "{name}: {d}");
    // Counted per pid that lived: a replaced worker once, and named.
    let w = &doc["server_metrics"]["samples"]["per_worker"];
    assert_eq!(w["workers"], 2, "{name}: a 2-worker server: {w}");
    if d["replaced_by"].is_u64() {
        assert_eq!(
            w["replaced_pids"],
            serde_json::json!([victim]),
            "{name}: {w}"
        );
    }
    assert!(doc["server_exit"].is_null(), "{name}: the master lived on");
    assert!(
        doc["faults"]["hung_workers"].as_array().unwrap().is_empty(),
        "{name}"
    );
}

/// puma (cluster), unicorn and Passenger each replace a worker killed by
/// pid mid-load: the record counts the death. Regression: it read as a
/// clean run with `per_worker.workers` 3 for a 2-worker server.
#[test]
fn a_worker_killed_by_pid_mid_load_is_a_counted_death_on_every_preforking_server() {
    for (server, title, replaces, extra) in [
        ("puma", "cluster worker", true, &["--threads", "2"][..]),
        ("unicorn", "worker[", true, &[][..]),
        ("passenger", "Passenger RubyApp", false, &[][..]),
    ] {
        if !installed(server) {
            continue;
        }
        let mut args = vec!["--json", "--server", server];
        args.extend_from_slice(extra);
        let (out, victim) = trial_with(server, &args, title, |pid| kill(pid, libc::SIGKILL));
        let doc = common::stdout_json(&out, server);
        assert_valid("trial-v1", &doc, server);
        assert_one_death(server, &doc, victim, replaces);
        let warnings = doc["load"]["warnings"].to_string();
        assert!(
            !warnings.contains("too few workers"),
            "{server}: the warning blames the wrong cause: {warnings}"
        );
    }
}

/// The terminal says the death in words, on its own line.
#[test]
fn the_terminal_says_a_workers_death_in_words() {
    if !installed("unicorn") {
        return;
    }
    let (out, victim) = trial_with("unicorn-text", &["--server", "unicorn"], "worker[", |pid| {
        kill(pid, libc::SIGKILL)
    });
    common::assert_ran(&out, "unicorn-text");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("FAULT:"))
        .unwrap_or_else(|| panic!("no FAULT line:\n{text}"));
    let cause = if exit_events() {
        "(signal 9)"
    } else {
        "(cause unknown)"
    };
    assert!(
        line.contains(&format!("worker {victim} died at")) && line.contains(cause),
        "{line}"
    );
    assert!(line.contains("the master replaced it in"), "{line}");
}

/// A worker stopped with SIGSTOP for 2 s, then continued, is named among
/// the hung workers with about how long (the samples' resolution).
#[test]
fn a_worker_stopped_for_two_seconds_is_named_as_hung() {
    if !installed("puma") {
        return;
    }
    let args = ["--json", "--server", "puma", "--threads", "2"];
    let (out, victim) = trial_with("puma-hung", &args, "cluster worker", |pid| {
        kill(pid, libc::SIGSTOP);
        std::thread::sleep(Duration::from_secs(2));
        kill(pid, libc::SIGCONT);
    });
    let doc = common::stdout_json(&out, "puma-hung");
    assert_valid("trial-v1", &doc, "puma-hung");
    let hung = doc["faults"]["hung_workers"].as_array().unwrap();
    assert_eq!(hung.len(), 1, "{}", doc["faults"]);
    assert_eq!(hung[0]["pid"], victim, "{}", hung[0]);
    let for_s = hung[0]["for_s"].as_f64().expect("continued before the end");
    assert!((1.0..=4.0).contains(&for_s), "stopped for {for_s} s");
    assert!(doc["faults"]["worker_deaths"]
        .as_array()
        .unwrap()
        .is_empty());
}
