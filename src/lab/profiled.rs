//! `--profile` in a trial: rbspy started on every copy of the server the
//! moment the load opens its counted window (never over the warm-up), and
//! stopped when the load ends; the record's `profile` (or, when it could
//! not be made, `profile_error` in words: the load's figures are kept
//! either way).
//!
//! One thread waits for the window, starts the recording, and stops it
//! when told: the load's own threads are never held up by rbspy, and the
//! thread that started rbspy lives as long as it (rbspy dies with the
//! thread that forked it: `PR_SET_PDEATHSIG` follows the thread, not the
//! process, and a thread that returned at once killed every rbspy before
//! its first sample).

use super::spec::ProfileAsk;
use crate::load::window::Window;
use crate::profile::{Profile, ProfileSpec, Recording};
use crate::sampler::{direct_children, Scope};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the thread looks for the window's start: the profile starts
/// at most this late.
const POLL: Duration = Duration::from_millis(20);

/// How long rbspy may take to write its file once asked to stop.
const GRACE: Duration = Duration::from_secs(10);

/// The recording, started or waiting for the window.
pub(super) struct ProfileWatch {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Result<Profile, String>>,
}

impl ProfileWatch {
    /// Waits (on a thread) for `window` to open, then profiles the trees
    /// of `scope` as they are then.
    pub(super) fn start(
        ask: &ProfileAsk,
        scope: Scope,
        window: Arc<OnceLock<Arc<Window>>>,
    ) -> ProfileWatch {
        let mut spec = ProfileSpec {
            roots: Vec::new(),
            rate_hz: ask.rate_hz,
            results_dir: ask.results_dir.clone(),
            subdir: ask.subdir.clone(),
            grace: GRACE,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let stopped = || flag.load(Ordering::Relaxed);
            // Waits as the samplers' mark does: a fixed window knows its
            // start from the load's first moment.
            let opened = || window.get().is_some_and(|w| w.opened_by(Instant::now()));
            while !opened() {
                if stopped() {
                    return Err("nothing profiled: the load never opened its counted window".into());
                }
                std::thread::sleep(POLL);
            }
            spec.roots = tops(&scope);
            let recording = Recording::start(spec).map_err(|e| e.to_string())?;
            while !stopped() {
                std::thread::sleep(POLL);
            }
            recording.finish().map_err(|e| e.to_string())
        });
        ProfileWatch { stop, handle }
    }

    /// Stops the recording (the load has ended) and reads it: the profile,
    /// or why there is none.
    pub(super) fn finish(self) -> Result<Profile, String> {
        self.stop.store(true, Ordering::Relaxed);
        (self.handle.join()).unwrap_or_else(|_| Err("the profiler's thread failed".into()))
    }
}

/// The top of each tree of the server's scope, now: its root, and each
/// process rackbench adopted for it (another instance; a helper the server
/// daemonized: Passenger's watchdog, whose core spawns the app's Ruby
/// processes, lands there, outside the root's tree).
fn tops(scope: &Scope) -> Vec<u32> {
    let mut out = vec![scope.root];
    if let Some(parent) = scope.adopted_by {
        out.extend(
            (direct_children(parent).into_iter())
                .filter(|&p| p != scope.root && !scope.exclude.contains(&p)),
        );
    }
    out
}
