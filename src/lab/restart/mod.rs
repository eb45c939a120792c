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
//!
//! This file performs the restart and waits for it; summary.rs beside it
//! turns what happened and the timeline into the record's `restart`.

use crate::load::window::Window;
use crate::sampler::Scope;
use crate::server::spec::{RestartKind, QUIT_OLD_MASTER};
use crate::server::supervisor::{is_alive, Probe};
use std::cell::Cell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod summary;

pub(super) use summary::{summarize, Outcome, SecondsKept};
pub use summary::{verdict, RESOLUTION_MS};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
