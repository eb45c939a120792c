//! A restart under load (`--restart KIND --restart-at 5s`): at the counted
//! window's start plus `at`, the server is restarted the way its operators
//! do it (a kind from its adapter: a signal to its master, unicorn's
//! re-exec sequence, a command, or the built-in SIGKILL to one worker),
//! while the load goes on; then what the load saw around that instant is
//! summed up as the record's `restart` with a verdict in words.
//!
//! A restart is done when it is done: every old worker has exited and as
//! many new ones have answered a request (each marks its first answer,
//! `ruby/runtime/inside.ru`; while one is silent the restart asks the
//! server once in a while, since a closed loop's kept-alive connections
//! may all sit on the other workers). `pids_after` is taken then,
//! `took_ms` runs until then, and recovery is looked for only from then:
//! a phased restart once read "recovered after 998 ms" with the same pids
//! before and after, judged before any worker was replaced.
//!
//! Only processes of the server rackbench started are ever signalled: the
//! master the trial's watcher follows, or a child of it, each found in the
//! server's own scope. A restart that did not happen (nothing changed, the
//! new master never came up, the command failed) is reported as failed,
//! never as zero-downtime. Starts no server and drives no load.

use super::record::{RestartErrors, RestartRecord};
use crate::load::report::{LatencySummary, TimelineRow};
use crate::load::window::Window;
use crate::sampler::Scope;
use crate::server::spec::{RestartKind, QUIT_OLD_MASTER};
use crate::server::supervisor::{is_alive, Probe};
use hdrhistogram::Histogram;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What a trial asks: which kind of restart, how far into the counted
/// window.
#[derive(Debug, Clone, PartialEq)]
pub struct RestartSpec {
    pub kind: String,
    /// From the start of the counted window.
    pub at: Duration,
}

/// A restart command: rendered, its environment, where it runs, its log.
pub(super) type RestartCommand = (String, Vec<(String, String)>, PathBuf, PathBuf);

/// The restart's resolution in time: the load's timeline is per second.
pub const RESOLUTION_MS: u64 = 1000;

/// How close to the seconds before the restart throughput and p99 must be
/// to count as recovered.
const WITHIN: f64 = 0.10;

/// How long a command kind's processes must hold still to count as done.
const SETTLE: Duration = Duration::from_secs(1);

/// How often the restart looks at the server's processes while waiting.
const POLL: Duration = Duration::from_millis(20);

/// How often it asks the server while a new worker has not answered: a
/// few requests a second beside the load, enough for an idle worker to
/// win one accept.
const NUDGE: Duration = Duration::from_millis(100);

/// Everything the restart thread needs, found by the trial.
pub(super) struct Plan {
    pub(super) kind: RestartKind,
    pub(super) at: Duration,
    pub(super) window: Arc<OnceLock<Arc<Window>>>,
    pub(super) scope: Scope,
    /// The server's main processes as the trial's watcher follows them;
    /// the first is the one restarted, replaced here when a new master
    /// takes over.
    pub(super) masters: Arc<Mutex<Vec<u32>>>,
    /// The first instance's pid file (`{{pidfile}}`).
    pub(super) pidfile: PathBuf,
    /// The command, rendered, with the server's environment and where it
    /// runs and logs (a command kind).
    pub(super) command: Option<RestartCommand>,
    pub(super) answers: Answers,
}

/// Where a new worker's first answer shows, and how to ask for one.
pub(super) struct Answers {
    /// The runtime wrapper's directory: each process of the server leaves
    /// `answered-PID` there at its first request.
    pub(super) dir: PathBuf,
    /// One request to the restarted instance (`Connection: close`).
    pub(super) probe: Probe,
}

impl Answers {
    /// The instance at `endpoint`, asked for the app's `path`; its
    /// processes mark answers in `dir`.
    pub(super) fn new(
        dir: &std::path::Path,
        endpoint: &crate::load::Endpoint,
        host: &str,
        path: &str,
    ) -> Answers {
        Answers {
            dir: dir.to_path_buf(),
            probe: Probe {
                endpoint: endpoint.clone(),
                host: host.into(),
                path: path.into(),
                timeout: Duration::from_secs(1),
                // Any answer is a worker's first; the body is not checked.
                max_body_bytes: crate::server::probe::DEFAULT_MAX_BODY_BYTES,
            },
        }
    }

    fn answered(&self, pid: u32) -> bool {
        self.dir.join(format!("answered-{pid}")).exists()
    }

    /// Whether any process has marked an answer: not when the server's
    /// command ignores `{{app}}` (no wrapper, no marks).
    fn marked(&self) -> bool {
        std::fs::read_dir(&self.dir).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("answered-"))
        })
    }

    /// One request, its answer unread: what counts is the mark it leaves.
    fn ask(&self) {
        let p = &self.probe;
        let _ = crate::server::probe::get(&p.endpoint, &p.host, &p.path, p.timeout);
    }
}

/// What the restart thread did.
#[derive(Debug, Clone, Default)]
pub(super) struct Performed {
    /// When the signal was sent or the command started.
    pub(super) started: Option<Instant>,
    /// When the restart was seen complete (None when it failed).
    pub(super) done: Option<Instant>,
    pub(super) why_failed: Option<String>,
    pub(super) pids_before: Vec<u32>,
    pub(super) pids_after: Vec<u32>,
    /// The workers replaced and those that replaced them (answered).
    pub(super) workers: Workers,
}

/// The workers a restart replaces, and the new ones seen answering.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Workers {
    pub(super) old: Vec<u32>,
    pub(super) new: Vec<u32>,
    /// The new ones were seen answering (false: the server marks no
    /// answer, so they counted once alive).
    pub(super) answered: bool,
}

/// The restart's thread, started with the load.
pub(super) struct Restarter {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Performed>,
}

impl Restarter {
    pub(super) fn start(plan: Plan) -> Restarter {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || run(&plan, &flag));
        Restarter { stop, handle }
    }

    /// The load has ended: a restart still waiting for its time or for its
    /// completion ends as failed, saying so.
    pub(super) fn finish(self) -> Performed {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_else(|_| Performed {
            why_failed: Some("the restart's thread panicked".into()),
            ..Performed::default()
        })
    }
}

/// Waits for the window's start plus `at`, snapshots the server's
/// processes, performs the kind, waits (bounded) for it to be done (every
/// old worker gone, as many new ones answering) and snapshots again.
fn run(plan: &Plan, stop: &AtomicBool) -> Performed {
    let mut done = Performed::default();
    loop {
        if stop.load(Ordering::Relaxed) {
            done.why_failed = Some(format!(
                "the load ended before {:?} into its counted window",
                plan.at
            ));
            return done;
        }
        let due = plan
            .window
            .get()
            .and_then(|w| w.start())
            .map(|s| s + plan.at);
        if due.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    done.pids_before = sorted(plan.scope.pids());
    done.started = Some(Instant::now());
    let deadline = Instant::now() + Duration::from_secs_f64(plan.kind.timeout_s);
    let waited = Waited { deadline, stop };
    done.workers.answered = plan.answers.marked();
    match perform(plan, &done.pids_before, &waited, &mut done.workers) {
        Ok(()) => done.done = Some(Instant::now()),
        Err(why) => done.why_failed = Some(why),
    }
    done.pids_after = sorted(plan.scope.pids());
    if done.why_failed.is_none() && done.pids_after == done.pids_before {
        done.done = None;
        done.why_failed = Some(format!(
            "no process of the server changed ({})",
            list(&done.pids_before)
        ));
    }
    done
}

/// The bound on waiting: the kind's timeout, or the load's end.
struct Waited<'a> {
    deadline: Instant,
    stop: &'a AtomicBool,
}

impl Waited<'_> {
    /// Polls `ready` until it holds; Err(why) with `what` when time runs out.
    fn until(&self, what: &str, mut ready: impl FnMut() -> bool) -> Result<(), String> {
        loop {
            if ready() {
                return Ok(());
            }
            if self.stop.load(Ordering::Relaxed) {
                return Err(format!("the load ended while waiting for {what}"));
            }
            if Instant::now() >= self.deadline {
                return Err(format!("timed out waiting for {what}"));
            }
            std::thread::sleep(POLL);
        }
    }
}

/// The old workers and their replacements as one look saw them.
#[derive(Debug, Default, PartialEq)]
struct Look {
    /// Old workers still alive.
    running: Vec<u32>,
    /// New processes among the candidates (alive, not there before).
    new: Vec<u32>,
    /// Those of them that have answered.
    answered: Vec<u32>,
}

impl Look {
    /// What a restart still waits for, in words: "7 still running; 1 of 2
    /// new workers answered".
    fn missing(&self, old: usize) -> String {
        let mut parts = Vec::new();
        if !self.running.is_empty() {
            parts.push(format!("{} still running", list(&self.running)));
        }
        if self.answered.len() < old {
            let silent = self.new.len() - self.answered.len();
            parts.push(format!(
                "{} of {old} new workers answered{}",
                self.answered.len(),
                if silent > 0 {
                    format!(", {silent} up and silent")
                } else {
                    String::new()
                }
            ));
        }
        parts.join("; ")
    }
}

/// A replacement waited on: done when every old worker has exited and as
/// many new processes (not among the pids before) have answered.
struct Replacing<'a> {
    old: Vec<u32>,
    before: &'a [u32],
    answers: &'a Answers,
    /// The server marks answers; when not, a new process counts once alive.
    marked: bool,
    last_ask: Cell<Option<Instant>>,
}

impl<'a> Replacing<'a> {
    fn new(old: Vec<u32>, before: &'a [u32], answers: &'a Answers, marked: bool) -> Self {
        Replacing {
            old,
            before,
            answers,
            marked,
            last_ask: Cell::new(None),
        }
    }

    fn look(&self, candidates: &[u32]) -> Look {
        let running = self.old.iter().copied().filter(|&p| is_alive(p)).collect();
        let new: Vec<u32> = candidates
            .iter()
            .copied()
            .filter(|p| !self.before.contains(p) && is_alive(*p))
            .collect();
        let answered = new
            .iter()
            .copied()
            .filter(|&p| !self.marked || self.answers.answered(p))
            .collect();
        Look {
            running,
            new,
            answered,
        }
    }

    fn done(&self, look: &Look) -> bool {
        look.running.is_empty() && look.answered.len() >= self.old.len()
    }

    /// Asks the server once (at most every [`NUDGE`]) while a new worker
    /// is up and silent after the old ones have gone: under a closed
    /// loop's kept-alive connections nothing else may ever reach it.
    fn nudge(&self, look: &Look) {
        let silent = look.new.len() > look.answered.len();
        let due = self.last_ask.get().is_none_or(|t| t.elapsed() >= NUDGE);
        if self.marked && look.running.is_empty() && silent && due {
            self.last_ask.set(Some(Instant::now()));
            self.answers.ask();
        }
    }

    /// Waits until done, `also` holding too; the new workers that answered,
    /// or why not with what was missing.
    fn wait(
        &self,
        what: &str,
        waited: &Waited,
        mut candidates: impl FnMut() -> Vec<u32>,
        mut also: impl FnMut(&[u32]) -> bool,
    ) -> Result<Vec<u32>, String> {
        let mut last = Look::default();
        let r = waited.until(what, || {
            let now = sorted(candidates());
            last = self.look(&now);
            let also = also(&now);
            if self.done(&last) && also {
                return true;
            }
            self.nudge(&last);
            false
        });
        match r {
            Ok(()) => Ok(last.answered),
            Err(why) if self.done(&last) => Err(why),
            Err(why) => Err(format!("{why} ({})", last.missing(self.old.len()))),
        }
    }
}

/// Performs the kind and waits for it to be done: the old workers gone
/// and as many new ones answering, the new master up and the old one
/// gone, or the command finished and the server's processes changed.
fn perform(
    plan: &Plan,
    before: &[u32],
    waited: &Waited,
    workers: &mut Workers,
) -> Result<(), String> {
    let master = plan.masters.lock().expect("not poisoned")[0];
    let children = sorted(crate::sampler::direct_children(master));
    let marked = workers.answered;
    if let Some(cmd) = &plan.command {
        run_command(cmd, waited)?;
        // The app's processes: those that had answered.
        workers.old = before
            .iter()
            .copied()
            .filter(|&p| marked && plan.answers.answered(p))
            .collect();
        let r = Replacing::new(workers.old.clone(), before, &plan.answers, marked);
        workers.new = after_command(plan, before, &r, waited)?;
        return Ok(());
    }
    let signal_name = plan.kind.signal.as_deref().unwrap_or("TERM");
    let signal = RestartKind::signal_number(signal_name).expect("checked when parsed");
    if signal == libc::SIGKILL {
        let Some(&victim) = children.first() else {
            return Err(format!(
                "no worker to kill: the main process {master} has no child process"
            ));
        };
        workers.old = vec![victim];
        send(victim, libc::SIGKILL)?;
        let r = Replacing::new(workers.old.clone(), before, &plan.answers, marked);
        let what = format!("a worker to replace {victim} and answer");
        let children = || crate::sampler::direct_children(master);
        workers.new = r.wait(&what, waited, children, |_| true)?;
        return Ok(());
    }
    send(master, signal)?;
    workers.old = children.clone();
    let r = Replacing::new(children.clone(), before, &plan.answers, marked);
    if plan.kind.then.as_deref() == Some(QUIT_OLD_MASTER) {
        let new = quit_old_master(plan, master, children.len(), waited)?;
        let what = format!("the new master {new}'s workers to answer");
        let children = || crate::sampler::direct_children(new);
        workers.new = r.wait(&what, waited, children, |_| true)?;
        return Ok(());
    }
    if children.is_empty() {
        // Nothing to watch being replaced: some process must change.
        let changed = || {
            let now = sorted(plan.scope.pids());
            now.len() >= before.len() && now != before
        };
        return waited.until("a process of the server to change", changed);
    }
    let what = format!(
        "workers {} to be replaced after SIG{}",
        list(&children),
        signal_name.trim_start_matches("SIG")
    );
    let children = || crate::sampler::direct_children(master);
    workers.new = r.wait(&what, waited, children, |_| true)?;
    Ok(())
}

/// A command's restart goes on after it returns (passenger's old
/// processes leave, new ones are spawned): done once the server's
/// processes have changed, the old app processes are gone and as many
/// new ones answer, and the processes have then held still for a second.
fn after_command(
    plan: &Plan,
    before: &[u32],
    r: &Replacing,
    waited: &Waited,
) -> Result<Vec<u32>, String> {
    let mut last = (sorted(plan.scope.pids()), Instant::now());
    r.wait(
        "the server's processes to change and settle after the command",
        waited,
        || plan.scope.pids(),
        |now| {
            if now != last.0 {
                last = (now.to_vec(), Instant::now());
                return false;
            }
            now.len() >= before.len() && now != before && last.1.elapsed() >= SETTLE
        },
    )
}

/// unicorn's sequence: after USR2, the new master writes the pid file
/// (the old one's becomes `.oldbin`) and forks its workers; then the old
/// master gets QUIT. The trial's watcher follows the new master from
/// before the QUIT, so the old one's exit is not taken for a death.
/// Returns the new master.
fn quit_old_master(plan: &Plan, old: u32, workers: usize, waited: &Waited) -> Result<u32, String> {
    let mut new = None;
    waited.until(
        &format!(
            "a new master to write {} and start {workers} workers",
            plan.pidfile.display()
        ),
        || {
            let pid = std::fs::read_to_string(&plan.pidfile)
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok())
                .filter(|&p| p != old && is_alive(p))
                // Ours: born of the old master, so in the server's scope.
                .filter(|p| plan.scope.pids().contains(p));
            new = pid;
            pid.is_some_and(|p| crate::sampler::direct_children(p).len() >= workers)
        },
    )?;
    let new = new.expect("found");
    for m in plan.masters.lock().expect("not poisoned").iter_mut() {
        if *m == old {
            *m = new;
        }
    }
    send(old, libc::SIGQUIT)?;
    waited.until(&format!("the old master {old} to exit after QUIT"), || {
        !is_alive(old)
    })?;
    Ok(new)
}

/// Runs a command kind with the server's environment, its output in a log
/// of its own; exit 0 within the bound is success.
fn run_command((command, env, cwd, log): &RestartCommand, waited: &Waited) -> Result<(), String> {
    let out = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let mut child = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .envs(env.iter().cloned())
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot run '{command}': {e}"))?;
    let mut status = None;
    let r = waited.until(&format!("'{command}' to finish"), || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    if let Err(why) = r {
        let _ = child.kill();
        let _ = child.wait();
        return Err(why);
    }
    let status = status.expect("finished");
    if status.success() {
        return Ok(());
    }
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    Err(format!(
        "'{command}' {status}{}",
        if last.is_empty() {
            String::new()
        } else {
            format!(": {}", last.trim())
        }
    ))
}

fn send(pid: u32, signal: i32) -> Result<(), String> {
    // SAFETY: kill() on one pid of the server's own scope.
    if unsafe { libc::kill(pid as i32, signal) } != 0 {
        return Err(format!(
            "cannot signal {pid}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// The live ones (a master that just exited stays a zombie until reaped),
/// sorted.
fn sorted(mut pids: Vec<u32>) -> Vec<u32> {
    pids.retain(|&p| is_alive(p));
    pids.sort_unstable();
    pids.dedup();
    pids
}

fn list(pids: &[u32]) -> String {
    pids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The per-second histograms of OK latencies the load hands over, kept
/// (bounded) for the seconds a restart's figures are merged from.
#[derive(Default)]
pub(super) struct SecondsKept {
    seconds: BTreeMap<u64, Histogram<u64>>,
}

/// At most this many seconds are kept: a window longer than that keeps
/// its last ones (a restart's figures come from around its instant).
const KEPT_SECONDS: usize = 900;

impl SecondsKept {
    pub(super) fn keep(&mut self, row: &TimelineRow, latency: &Histogram<u64>) {
        self.seconds.insert(row.t_s, latency.clone());
        while self.seconds.len() > KEPT_SECONDS {
            self.seconds.pop_first();
        }
    }
}

/// Everything the record's `restart` is computed from, after the load.
pub(super) struct Outcome<'a> {
    pub(super) kind: &'a str,
    pub(super) at: Duration,
    pub(super) performed: Performed,
    /// When the counted window started (None: it never did).
    pub(super) window_start: Option<Instant>,
    /// The window's start in seconds since the load's start (its t_s).
    pub(super) warmup_s: f64,
    pub(super) timeline: &'a [TimelineRow],
    pub(super) seconds: &'a SecondsKept,
}

/// The record's `restart`: where it happened in the timeline, the errors
/// and latency of the seconds from it until recovery, and the verdict.
pub(super) fn summarize(o: Outcome) -> RestartRecord {
    let p = &o.performed;
    let started_s = match (p.started, o.window_start) {
        (Some(s), Some(w)) => s.saturating_duration_since(w).as_secs_f64(),
        _ => o.at.as_secs_f64(),
    };
    let took_s = match (p.started, p.done) {
        (Some(s), Some(d)) => Some(d.saturating_duration_since(s).as_secs_f64()),
        _ => None,
    };
    let mut rec = RestartRecord {
        kind: o.kind.to_string(),
        at_s: round3(started_s),
        outcome: if p.why_failed.is_some() {
            "failed"
        } else {
            "done"
        }
        .into(),
        why: p.why_failed.clone(),
        took_ms: took_s.map(|t| (t * 1000.0).round() as u64),
        errors_during: RestartErrors::default(),
        requests_lost: 0,
        latency_during_us: None,
        p99_before_us: None,
        rps_before: None,
        rps_min_during: None,
        during_s: None,
        recovered_after_ms: None,
        resolution_ms: RESOLUTION_MS,
        pids_before: p.pids_before.clone(),
        pids_after: p.pids_after.clone(),
        old_workers: p.workers.old.clone(),
        new_workers: p.workers.new.clone(),
        new_workers_answered: p.workers.answered && !p.workers.new.is_empty(),
        zero_downtime: false,
        verdict: String::new(),
    };
    if p.started.is_some() {
        let at = o.warmup_s + started_s;
        let s = around(o.timeline, at, took_s.map(|t| at + t));
        rec.p99_before_us = s.p99_before_us;
        rec.rps_before = s.rps_before.map(|r| (r * 10.0).round() / 10.0);
        rec.recovered_after_ms = s.recovered_after_ms;
        let rows = || {
            o.timeline
                .iter()
                .filter(|r| (s.from..=s.to).contains(&r.t_s))
        };
        for r in rows() {
            rec.errors_during.add(r);
        }
        rec.rps_min_during = rows()
            .filter(|r| r.span_s >= 0.999)
            .map(|r| r.rps)
            .min_by(f64::total_cmp);
        rec.requests_lost = rec.errors_during.reset + rec.errors_during.timeout;
        let mut merged: Option<Histogram<u64>> = None;
        for h in (s.from..=s.to).filter_map(|t| o.seconds.seconds.get(&t)) {
            match merged.as_mut() {
                Some(m) => m.add(h).expect("same bounds"),
                None => merged = Some(h.clone()),
            }
        }
        rec.latency_during_us = merged
            .filter(|h| !h.is_empty())
            .map(|h| LatencySummary::from_histogram(&h));
        let w = o.warmup_s;
        rec.during_s = Some([round3(s.from as f64 - w), round3(s.to as f64 + 1.0 - w)]);
    }
    rec.zero_downtime = rec.outcome == "done" && rec.errors_during.total() == 0;
    rec.verdict = verdict(&rec);
    rec
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The seconds a restart is judged by, in the timeline's own seconds.
#[derive(Debug, PartialEq)]
struct Around {
    /// The second the restart began in, and the last before recovery (or
    /// the timeline's last: a restart never done never recovered).
    from: u64,
    to: u64,
    rps_before: Option<f64>,
    p99_before_us: Option<u64>,
    recovered_after_ms: Option<u64>,
}

/// How many full seconds before the restart make its baseline.
const BEFORE: usize = 5;

/// The seconds around a restart that began `at` and was done `until`
/// (seconds since the load's start; None: never): the baseline is the
/// mean throughput and median p99 of up to five full counted seconds
/// before the one it began in (warm-up seconds ramp up, so they are left
/// out); recovery is the first full second that starts once it was done
/// (a second with old workers still serving in it is not one), with no
/// errors, throughput at least 90% of the baseline's and p99 at most 110%
/// of it. Recovery time is from the restart to that second's start
/// (resolution: one second).
fn around(timeline: &[TimelineRow], at: f64, until: Option<f64>) -> Around {
    let from = at.floor().max(0.0) as u64;
    let before: Vec<&TimelineRow> = timeline
        .iter()
        .filter(|r| r.t_s < from && r.span_s >= 0.999 && !r.warmup)
        .collect();
    let before = &before[before.len().saturating_sub(BEFORE)..];
    let rps_before = (!before.is_empty())
        .then(|| before.iter().map(|r| r.rps).sum::<f64>() / before.len() as f64);
    let p99_before_us = (!before.is_empty()).then(|| {
        let mut p: Vec<u64> = before.iter().map(|r| r.p99_us).collect();
        p.sort_unstable();
        p[p.len() / 2]
    });
    let last = timeline.last().map_or(from, |r| r.t_s.max(from));
    let recovered = match (rps_before, p99_before_us, until) {
        (Some(rps), Some(p99), Some(done)) => timeline.iter().find(|r| {
            r.t_s > from
                && r.t_s as f64 >= done
                && r.span_s >= 0.999
                && r.errors == 0
                && r.rps >= rps * (1.0 - WITHIN)
                && r.p99_us as f64 <= p99 as f64 * (1.0 + WITHIN)
        }),
        _ => None,
    };
    Around {
        from,
        to: recovered.map_or(last, |r| (r.t_s - 1).max(from)),
        rps_before,
        p99_before_us,
        recovered_after_ms: recovered
            .map(|r| ((r.t_s as f64 - at).max(0.0) * 1000.0).round() as u64),
    }
}

/// The verdict in words: "zero-downtime: 0 errors, p99 rose from 4 ms to
/// 310 ms for 2 s", "not zero-downtime: 37 connections refused", or
/// "restart failed: why".
pub fn verdict(r: &RestartRecord) -> String {
    if r.outcome != "done" {
        return format!(
            "restart failed: {}",
            r.why.as_deref().unwrap_or("no reason given")
        );
    }
    let latency = latency_words(r);
    if r.errors_during.total() == 0 {
        return format!("zero-downtime: 0 errors, {latency}");
    }
    format!("not zero-downtime: {}; {latency}", r.errors_during.words())
}

/// What latency and throughput did: "p99 rose from 4 ms to 310 ms for
/// 1.7 s", "p99 stayed near 4 ms, throughput fell 26% for 1.0 s".
fn latency_words(r: &RestartRecord) -> String {
    let Some(during) = r.latency_during_us.as_ref().map(|l| l.p99) else {
        return "no request answered around it".into();
    };
    let Some(before) = r.p99_before_us else {
        return format!(
            "p99 {} around it (no counted second before it to compare)",
            fmt_us(during)
        );
    };
    let rose = during as f64 > before as f64 * (1.0 + WITHIN);
    let mut words = if rose {
        format!("p99 rose from {} to {}", fmt_us(before), fmt_us(during))
    } else {
        format!("p99 stayed near {}", fmt_us(before))
    };
    let fell = match (r.rps_before, r.rps_min_during) {
        (Some(b), Some(m)) if b > 0.0 && m < b * (1.0 - WITHIN) => Some((1.0 - m / b) * 100.0),
        _ => None,
    };
    if let Some(pct) = fell {
        words += &format!(", throughput fell {pct:.0}%");
    }
    match r.recovered_after_ms {
        Some(ms) if rose || fell.is_some() => words += &format!(" for {}", fmt_secs(ms)),
        Some(_) => {}
        None => words += ", not back within 10% of before by the window's end",
    }
    words
}

fn fmt_secs(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

/// A latency as the verdict says it: "0.35 ms", "4 ms", "4.5 ms", "310 ms",
/// "1.2 s".
fn fmt_us(us: u64) -> String {
    let ms = us as f64 / 1000.0;
    let trim = |t: String| {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t
        }
    };
    if ms >= 1000.0 {
        format!("{} s", trim(format!("{:.1}", ms / 1000.0)))
    } else if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{} ms", trim(format!("{ms:.1}")))
    } else {
        format!("{} ms", trim(format!("{ms:.2}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t_s: u64, rps: f64, p99_us: u64, errors: u64) -> TimelineRow {
        TimelineRow {
            t_s,
            ok: rps as u64,
            errors,
            p50_us: p99_us / 4,
            p99_us,
            rps,
            warmup: t_s < 1,
            span_s: 1.0,
            error_kinds: (errors > 0).then(|| crate::load::recorder::ErrorCounts {
                connect: errors,
                ..Default::default()
            }),
            status_5xx: 0,
        }
    }

    /// The seconds from 4 on that are not like the others: (p99, errors).
    type Bad = &'static [(u64, u64)];

    /// 1 s of warm-up, then 1000 rps at p99 4 ms; `bad` seconds from 4 on
    /// at the given p99 and errors.
    fn timeline(bad: &[(u64, u64)]) -> Vec<TimelineRow> {
        (0..10u64)
            .map(
                |t| match t.checked_sub(4).and_then(|i| bad.get(i as usize)) {
                    Some(&(p99, errors)) => row(t, 900.0, p99, errors),
                    None => row(t, 1000.0, 4000, 0),
                },
            )
            .collect()
    }

    /// Table: the restart at 4.3 s (since the load's start), done `took`
    /// later (None: never), over a timeline whose seconds from 4 on are
    /// `bad`.
    #[test]
    fn recovery_is_the_first_clean_second_within_ten_percent_after_the_restart() {
        // (bad seconds (p99, errors) from 4, took s, from, to, recovered ms)
        type Row = (Bad, Option<f64>, u64, u64, Option<u64>);
        let rows: &[Row] = &[
            // Untouched: back at once, in the next second.
            (&[], Some(0.1), 4, 4, Some(700)),
            // p99 310 ms for two seconds: back at 6.
            (&[(310_000, 0), (310_000, 0)], Some(0.2), 4, 5, Some(1700)),
            // Within 10% (4.4 ms) counts as back; 4.5 ms does not.
            (&[(4_400, 0)], Some(0.1), 4, 4, Some(700)),
            (&[(4_500, 0), (4_500, 0)], Some(0.1), 4, 5, Some(1700)),
            // Errors keep a second out even with a good p99.
            (&[(4_000, 3), (4_000, 1)], Some(0.1), 4, 5, Some(1700)),
            // Done at 7.3 s: second 7 still had old workers in it, so
            // recovery is second 8, the first that starts once done.
            (&[], Some(3.0), 4, 7, Some(3700)),
            // Done exactly as second 6 starts: second 6 counts.
            (&[], Some(1.7), 4, 5, Some(1700)),
            // Never back: to the timeline's end.
            (&[(9_000, 0); 6], Some(0.1), 4, 9, None),
            // Never done (a phased restart whose old workers kept serving
            // to the end): clean seconds are no recovery.
            (&[], None, 4, 9, None),
        ];
        for (i, (bad, took, from, to, rec)) in rows.iter().enumerate() {
            let tl: Vec<TimelineRow> = timeline(bad);
            let a = around(&tl, 4.3, took.map(|t| 4.3 + t));
            assert_eq!(
                (a.from, a.to, a.recovered_after_ms),
                (*from, *to, *rec),
                "row {i}"
            );
            assert_eq!(a.rps_before, Some(1000.0), "row {i}");
            assert_eq!(a.p99_before_us, Some(4000), "row {i}");
        }
        // A restart in the first second has no baseline: no recovery.
        let a = around(&timeline(&[]), 0.2, Some(0.3));
        assert_eq!((a.rps_before, a.recovered_after_ms), (None, None));
    }

    #[test]
    fn verdict_latencies_read_as_people_say_them() {
        let rows = [
            (350, "0.35 ms"),
            (4_000, "4 ms"),
            (4_460, "4.5 ms"),
            (310_400, "310 ms"),
            (1_240_000, "1.2 s"),
            (2_000_000, "2 s"),
        ];
        for (us, want) in rows {
            assert_eq!(fmt_us(us), want, "{us}");
        }
    }

    /// Each second's histogram: its OK responses all at its p99.
    fn kept_of(tl: &[TimelineRow]) -> SecondsKept {
        let mut kept = SecondsKept::default();
        for r in tl {
            let mut h = crate::load::recorder::new_histogram(2);
            h.record_n(r.p99_us, 100).unwrap();
            kept.keep(r, &h);
        }
        kept
    }

    fn performed(ok: bool) -> Performed {
        let t = Instant::now();
        Performed {
            started: Some(t),
            done: ok.then(|| t + Duration::from_millis(200)),
            why_failed: (!ok)
                .then(|| "timed out waiting for workers 7, 8 to be replaced after SIGUSR1".into()),
            pids_before: vec![1, 7, 8],
            pids_after: if ok { vec![1, 9, 10] } else { vec![1, 7, 8] },
            workers: Workers {
                old: vec![7, 8],
                new: if ok { vec![9, 10] } else { Vec::new() },
                answered: true,
            },
        }
    }

    #[test]
    fn the_verdict_says_zero_downtime_only_for_a_restart_done_without_errors() {
        // (bad seconds, done, the verdict)
        let rows: &[(Bad, bool, &str)] = &[
            // The seconds' histograms hold 310 ms; 2 significant digits
            // read it back as 311 ms.
            (
                &[(310_000, 0), (310_000, 0)],
                true,
                "zero-downtime: 0 errors, p99 rose from 4 ms to 311 ms for 1.7 s",
            ),
            (&[], true, "zero-downtime: 0 errors, p99 stayed near 4 ms"),
            // The seconds' histograms merged, not their p99s averaged.
            (
                &[(4_000, 0), (9_000, 0)],
                true,
                "zero-downtime: 0 errors, p99 rose from 4 ms to 9 ms for 1.7 s",
            ),
            (
                &[(310_000, 37)],
                true,
                "not zero-downtime: 37 connections refused; p99 rose from 4 ms to 311 ms for 0.7 s",
            ),
            (
                &[],
                false,
                "restart failed: timed out waiting for workers 7, 8 to be replaced after SIGUSR1",
            ),
        ];
        let seconds = SecondsKept::default();
        for (bad, ok, want) in rows {
            let tl = timeline(bad);
            let kept = kept_of(&tl);
            let p = performed(*ok);
            let w = p.started.unwrap() - Duration::from_millis(3300);
            let rec = summarize(Outcome {
                kind: "phased",
                at: Duration::from_secs(3),
                performed: p,
                window_start: Some(w),
                warmup_s: 1.0,
                timeline: &tl,
                seconds: if *ok { &kept } else { &seconds },
            });
            assert_eq!(rec.verdict, *want);
            assert_eq!(rec.zero_downtime, want.starts_with("zero-downtime"));
            assert_eq!(rec.at_s, 3.3);
            if *ok {
                assert_eq!(rec.during_s.unwrap()[0], 3.0);
                assert_eq!(rec.errors_during.refused, bad.first().map_or(0, |b| b.1));
                assert_eq!(
                    (rec.old_workers, rec.new_workers),
                    (vec![7, 8], vec![9, 10])
                );
            }
        }
    }

    /// The phased restart whose record listed the same pids before and
    /// after with "recovered after 998 ms": its old workers still served
    /// when the load ended, so it has no time taken, no recovery, and its
    /// seconds run to the window's end, whatever those seconds looked like.
    #[test]
    fn a_restart_never_done_has_no_recovery_and_is_judged_to_the_end() {
        let tl = timeline(&[]);
        let kept = kept_of(&tl);
        let p = performed(false);
        let w = p.started.unwrap() - Duration::from_millis(3300);
        let rec = summarize(Outcome {
            kind: "phased",
            at: Duration::from_secs(3),
            performed: p,
            window_start: Some(w),
            warmup_s: 1.0,
            timeline: &tl,
            seconds: &kept,
        });
        assert_eq!(rec.outcome, "failed");
        assert_eq!((rec.took_ms, rec.recovered_after_ms), (None, None));
        assert_eq!(rec.during_s, Some([3.0, 9.0]));
        assert_eq!(rec.pids_before, rec.pids_after);
        assert!(rec.new_workers.is_empty() && !rec.new_workers_answered);
        assert!(!rec.zero_downtime);
    }

    #[test]
    fn what_a_restart_still_waits_for_is_said_in_words() {
        let look = |running: &[u32], new: &[u32], answered: &[u32]| Look {
            running: running.to_vec(),
            new: new.to_vec(),
            answered: answered.to_vec(),
        };
        let rows = [
            (
                look(&[7], &[9], &[9]),
                2,
                "7 still running; 1 of 2 new workers answered",
            ),
            (
                look(&[], &[9, 10], &[9]),
                2,
                "1 of 2 new workers answered, 1 up and silent",
            ),
            (
                look(&[7, 8], &[], &[]),
                2,
                "7, 8 still running; 0 of 2 new workers answered",
            ),
            (look(&[], &[9, 10], &[9, 10]), 2, ""),
        ];
        for (l, old, want) in rows {
            assert_eq!(l.missing(old), want, "{l:?}");
        }
    }

    #[test]
    fn throughput_that_fell_with_p99_unmoved_is_said_with_its_length() {
        // Throughput halved for a second, p99 unmoved.
        let mut tl = timeline(&[]);
        tl[4].rps = 500.0;
        let kept = kept_of(&tl);
        let p = performed(true);
        let w = p.started.unwrap() - Duration::from_millis(3300);
        let rec = summarize(Outcome {
            kind: "kill-worker",
            at: Duration::from_secs(3),
            performed: p,
            window_start: Some(w),
            warmup_s: 1.0,
            timeline: &tl,
            seconds: &kept,
        });
        assert_eq!(rec.recovered_after_ms, Some(700));
        assert_eq!(rec.rps_min_during, Some(500.0));
        assert_eq!(
            rec.verdict,
            "zero-downtime: 0 errors, p99 stayed near 4 ms, throughput fell 50% for 0.7 s"
        );
    }
}
