//! Restarts under load (`--restart KIND --restart-at T`) against the real
//! servers, through the binary: each kind on each server that has it
//! (puma phased and hot, unicorn reexec, passenger restart, kill-worker
//! on unicorn and puma) happened as that kind does (which processes were
//! replaced), the load was not ended as a server death, and nothing the
//! trial started is left running; a restart that cannot happen (a signal
//! the server ignores, a command that fails) is reported as failed; one
//! behind nginx; and the refusals before anything starts. A restart is
//! done only when every old worker has exited and as many new ones have
//! answered (`old_workers`, `new_workers`): held with the workers' pids.

mod common;

use common::schema::assert_valid;
use serde_json::Value;
use std::collections::BTreeSet;

fn installed(server: &str) -> bool {
    common::have(server, &format!("apt-get install {server}"))
}

/// `rackbench trial --json` with a short window and the restart 2 s into
/// it; the record, checked against its schema, once the command has
/// ended. The windows leave a restart several seconds to complete: on a
/// busy 2-CPU machine a phased restart or a re-exec took over 2 s. Four
/// connections unless `args` say `-c`.
fn trial(name: &str, window: &str, args: &[&str]) -> Value {
    let work = common::work_dir(&format!("restart-{name}"));
    let connections: &[&str] = if args.contains(&"-c") {
        &[]
    } else {
        &["-c", "4"]
    };
    let out = common::rackbench_cmd()
        .arg("trial")
        .args(connections)
        .args([
            "--no-pin",
            "--json",
            "-d",
            window,
            "--warmup",
            "1s",
            "--restart-at",
            "2s",
            "--work-dir",
        ])
        .arg(&work)
        .args(args)
        .output()
        .unwrap();
    let doc = common::stdout_json(&out, name);
    assert_valid("trial-v1", &doc, name);
    assert!(
        doc["server_exit"].is_null(),
        "{name}: the restart was taken for a death: {}",
        doc["server_exit"]
    );
    assert_nothing_left(name, &doc, &work);
    let _ = std::fs::remove_dir_all(&work);
    doc
}

fn pids(doc: &Value, key: &str) -> BTreeSet<u64> {
    doc["restart"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no restart.{key} in {}", doc["restart"]))
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect()
}

/// No process of the server is left once the trial has ended: none of
/// its pids before or after the restart lives, and no process names the
/// trial's directory on its command line.
fn assert_nothing_left(name: &str, doc: &Value, work: &std::path::Path) {
    let mut all = BTreeSet::new();
    if !doc["restart"].is_null() {
        all.extend(pids(doc, "pids_before"));
        all.extend(pids(doc, "pids_after"));
    }
    let work = work.display().to_string();
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rfind(')')
            .is_some_and(|i| stat[i + 1..].trim_start().starts_with('Z'));
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !zombie && (all.contains(&pid) || cmdline.contains(&work)) {
            left.push(format!("{pid} {cmdline}"));
        }
    }
    assert!(left.is_empty(), "{name}: left running: {left:?}");
}

fn pid_list(doc: &Value, key: &str) -> BTreeSet<u64> {
    pids(doc, key)
}

/// What "done" means, held with the workers' pids: every old worker gone
/// from `pids_after`, as many new ones (none of them there before), each
/// seen answering. (A master or a preloader may be replaced too.)
fn assert_replaced(name: &str, doc: &Value) {
    let r = &doc["restart"];
    let (before, after) = (pids(doc, "pids_before"), pids(doc, "pids_after"));
    let (old, new) = (pid_list(doc, "old_workers"), pid_list(doc, "new_workers"));
    assert!(!old.is_empty(), "{name}: no old worker named: {r}");
    assert!(old.is_subset(&before), "{name}: {r}");
    assert!(
        old.is_disjoint(&after),
        "{name}: an old worker outlived done: {r}"
    );
    // At least as many: a passenger process that had not answered before
    // the restart is not among the old, yet its replacement may answer.
    assert!(new.len() >= old.len(), "{name}: {r}");
    assert!(
        new.is_disjoint(&before) && new.is_subset(&after),
        "{name}: {r}"
    );
    assert_eq!(r["new_workers_answered"], true, "{name}: {r}");
}

fn restart(doc: &Value) -> &Value {
    let r = &doc["restart"];
    assert_eq!(r["outcome"], "done", "{r}");
    assert!(
        r["verdict"].as_str().unwrap().contains("zero-downtime"),
        "{r}"
    );
    r
}

/// puma with 2 workers: a phased restart (USR1) and a hot one (USR2) both
/// keep the master and replace every worker. Without keep-alive: a worker
/// told to stop for a phased restart keeps serving the connections it
/// holds, and a closed loop's kept-alive connections never go idle, so it
/// then exits only when the load ends (bench/runs/2026-11-26-restarts),
/// which the record rightly calls a failed restart.
#[test]
fn puma_phased_and_hot_restarts_keep_the_master_and_replace_every_worker() {
    if !installed("puma") {
        return;
    }
    for kind in ["phased", "hot"] {
        // Puma replaces its workers one at a time in a phased restart,
        // each booting afresh: 5 s after the restart were too few once on
        // a busy CI machine (one worker replaced when the load ended).
        let doc = trial(
            &format!("puma-{kind}"),
            "12s",
            &[
                "--server",
                "puma",
                "--workers",
                "2",
                "--threads",
                "2",
                "--no-keepalive",
                "--restart",
                kind,
            ],
        );
        restart(&doc);
        assert_replaced(&format!("puma-{kind}"), &doc);
        let (before, after) = (pids(&doc, "pids_before"), pids(&doc, "pids_after"));
        let kept: Vec<_> = before.intersection(&after).collect();
        assert_eq!(
            kept.len(),
            1,
            "{kind}: only the master stays: {before:?} -> {after:?}"
        );
        assert_eq!(
            (before.len(), after.len()),
            (3, 3),
            "{kind}: {before:?} -> {after:?}"
        );
    }
}

/// A rackup whose every worker takes a second to boot, in a directory of
/// its own.
fn slow_boot_app(name: &str) -> (std::path::PathBuf, String) {
    let dir = common::work_dir(name);
    let app = dir.join("slow-boot.ru");
    std::fs::write(
        &app,
        "sleep 1 # each worker, as it boots\n\
         run ->(env) { [200, { \"content-type\" => \"text/plain\" }, [\"ok\\n\"]] }\n",
    )
    .unwrap();
    let path = app.display().to_string();
    (dir, path)
}

/// Regression: a puma phased restart's record once listed the same three
/// pids before and after with "recovered after 998 ms": it was judged
/// before any worker was replaced. With 3 workers that each take a second
/// to boot, puma replaces them one after another, so the restart cannot
/// be done in less than 3 s: `took_ms` runs until the third new worker has
/// answered (it stopped at the third one's fork before, about 2 s), only
/// the master is in both pid lists, and recovery counts from done.
#[test]
fn puma_phased_restart_is_done_when_every_old_worker_has_exited_and_as_many_new_ones_answered() {
    if !installed("puma") {
        return;
    }
    let (dir, app) = slow_boot_app("restart-slow-boot");
    let doc = trial(
        "puma-phased-3",
        "16s",
        &[
            "--server",
            "puma",
            "--app",
            &app,
            "--workers",
            "3",
            "--threads",
            "2",
            "--no-keepalive",
            "--restart",
            "phased",
        ],
    );
    let r = restart(&doc);
    assert_replaced("puma-phased-3", &doc);
    let (before, after) = (pids(&doc, "pids_before"), pids(&doc, "pids_after"));
    let shared: Vec<_> = before.intersection(&after).collect();
    assert_eq!(shared.len(), 1, "only the master stays: {r}");
    assert_eq!(pid_list(&doc, "new_workers").len(), 3, "{r}");
    let took = r["took_ms"].as_u64().unwrap();
    assert!(took >= 3000, "three workers booted one after another: {r}");
    if let Some(rec) = r["recovered_after_ms"].as_u64() {
        assert!(rec + 1 >= took, "recovery counts from done: {r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same restart under a closed loop's kept-alive connections, more
/// than puma's threads: puma 5's old workers keep serving the connections
/// they hold, so the restart may not be done by the window's end. Either
/// way the record must not say more than happened: done only with every
/// old worker gone and as many new ones answering; failed with no time
/// taken, no recovery and the old worker still running named.
#[test]
fn puma_phased_restart_under_kept_alive_load_is_never_judged_before_it_is_done() {
    if !installed("puma") {
        return;
    }
    let doc = trial(
        "puma-phased-keepalive",
        "8s",
        &[
            "--server",
            "puma",
            "-c",
            "8",
            "--workers",
            "3",
            "--threads",
            "2",
            "--restart",
            "phased",
        ],
    );
    let r = &doc["restart"];
    let (old, after) = (pid_list(&doc, "old_workers"), pids(&doc, "pids_after"));
    assert_eq!(old.len(), 3, "{r}");
    if r["outcome"] == "done" {
        assert_replaced("puma-phased-keepalive", &doc);
        return;
    }
    assert!(r["took_ms"].is_null(), "{r}");
    assert!(
        r["recovered_after_ms"].is_null(),
        "a restart never done never recovered: {r}"
    );
    assert_eq!(r["zero_downtime"], false, "{r}");
    let why = r["why"].as_str().unwrap();
    for pid in old.intersection(&after) {
        assert!(
            why.contains(&pid.to_string()),
            "{pid} still running, unnamed: {why}"
        );
    }
}

/// unicorn's re-exec: a new master and new workers, the old master gone
/// on QUIT; the trial followed the new master instead of ending the load.
#[test]
fn unicorn_reexec_replaces_the_master_and_the_load_follows_it() {
    if !installed("unicorn") {
        return;
    }
    let doc = trial(
        "unicorn-reexec",
        "8s",
        &[
            "--server",
            "unicorn",
            "--workers",
            "2",
            "--restart",
            "reexec",
        ],
    );
    restart(&doc);
    assert_replaced("unicorn-reexec", &doc);
    let (before, after) = (pids(&doc, "pids_before"), pids(&doc, "pids_after"));
    assert!(before.is_disjoint(&after), "{before:?} -> {after:?}");
    assert_eq!(
        (before.len(), after.len()),
        (3, 3),
        "{before:?} -> {after:?}"
    );
    let load_s = doc["load"]["duration_s"].as_f64().unwrap();
    assert!(load_s > 3.5, "the load ran its window: {load_s} s");
}

/// Behind nginx the same re-exec: nginx's upstream is the socket the new
/// master inherited.
#[test]
fn unicorn_reexec_behind_nginx_is_done_and_the_load_goes_on() {
    if !installed("unicorn") || !common::have_nginx() {
        return;
    }
    let doc = trial(
        "unicorn-reexec-nginx",
        "8s",
        &[
            "--server",
            "unicorn",
            "--workers",
            "2",
            "--behind",
            "nginx",
            "--restart",
            "reexec",
        ],
    );
    restart(&doc);
    assert!(pids(&doc, "pids_before").is_disjoint(&pids(&doc, "pids_after")));
}

/// kill-worker: exactly one worker gone and one new one, on unicorn and
/// on puma.
#[test]
fn kill_worker_replaces_exactly_one_worker_on_unicorn_and_puma() {
    for server in ["unicorn", "puma"] {
        if !installed(server) {
            continue;
        }
        let doc = trial(
            &format!("{server}-kill"),
            "6s",
            &[
                "--server",
                server,
                "--workers",
                "2",
                "--restart",
                "kill-worker",
            ],
        );
        restart(&doc);
        assert_replaced(&format!("{server}-kill"), &doc);
        assert_eq!(pid_list(&doc, "old_workers").len(), 1, "{server}");
        let (before, after) = (pids(&doc, "pids_before"), pids(&doc, "pids_after"));
        assert_eq!(
            before.difference(&after).count(),
            1,
            "{server}: {before:?} -> {after:?}"
        );
        assert_eq!(
            after.difference(&before).count(),
            1,
            "{server}: {before:?} -> {after:?}"
        );
    }
}

/// passenger-config restart-app against this trial's own instance.
#[test]
fn passenger_restart_replaces_its_app_processes() {
    if !installed("passenger") {
        return;
    }
    let doc = trial(
        "passenger-restart",
        "8s",
        &[
            "--server",
            "passenger",
            "--workers",
            "2",
            "--restart",
            "restart",
        ],
    );
    restart(&doc);
    assert_replaced("passenger-restart", &doc);
    let (before, after) = (pids(&doc, "pids_before"), pids(&doc, "pids_after"));
    assert!(
        after.difference(&before).count() >= 2,
        "{before:?} -> {after:?}"
    );
}

/// A restart that does not happen is reported as failed, never as
/// zero-downtime: a signal puma ignores (WINCH), and a command that
/// exits 1.
#[test]
fn a_restart_that_does_not_happen_is_reported_as_failed() {
    if !installed("puma") {
        return;
    }
    let dir = common::work_dir("restart-servers-file");
    let file = dir.join("servers.toml");
    std::fs::write(
        &file,
        "[deaf-puma]\nrequires = [\"puma\"]\nprocesses = true\nthreads = true\n\
         command = \"puma --bind {{listen_url}} --workers {{workers}} --threads 2:2 --pidfile {{pidfile}} {{app}}\"\n\
         restarts = { ignored = { signal = \"WINCH\", timeout_s = 1.5 }, broken = { command = \"echo no such app >&2; exit 1\" } }\n",
    )
    .unwrap();
    let file = file.display().to_string();
    let rows = [
        ("ignored", "timed out waiting for workers"),
        ("broken", "exit status: 1: no such app"),
    ];
    for (kind, why) in rows {
        let doc = trial(
            &format!("deaf-{kind}"),
            "4s",
            &[
                "--servers-file",
                &file,
                "--server",
                "deaf-puma",
                "--workers",
                "2",
                "--restart",
                kind,
            ],
        );
        let r = &doc["restart"];
        assert_eq!(r["outcome"], "failed", "{kind}: {r}");
        assert_eq!(r["zero_downtime"], false, "{kind}: {r}");
        let verdict = r["verdict"].as_str().unwrap();
        assert!(
            verdict.starts_with("restart failed: ") && verdict.contains(why),
            "{kind}: {verdict}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Refused before anything starts, in one line naming the fix.
#[test]
fn restarts_a_server_cannot_do_are_refused_in_one_line() {
    if !installed("puma") {
        return;
    }
    let rows: &[(&[&str], &str)] = &[
        (
            &[
                "--workers",
                "2",
                "--restart",
                "reexec",
                "--restart-at",
                "1s",
            ],
            "its kinds are hot, kill-worker, phased",
        ),
        (
            &["--restart", "phased", "--restart-at", "1s"],
            "give --workers 2",
        ),
        (
            &["--workers", "2", "--restart", "hot", "--restart-at", "9s"],
            "outside the counted window",
        ),
    ];
    for (args, want) in rows {
        let out = common::rackbench_cmd()
            .args(["trial", "--no-pin", "--server", "puma", "-d", "4s"])
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(want),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
