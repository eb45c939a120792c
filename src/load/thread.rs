//! One worker thread's share of a run (what mod.rs hands it) and what it
//! measured about itself (what it hands back). Apart from mod.rs, which
//! splits the run, and worker/, which runs a share, so the two need not
//! import each other.

use super::config::{LoadConfig, Pacing};
use std::sync::Arc;
use std::time::Duration;

/// One thread's share of the run.
pub(crate) struct ThreadPlan {
    pub(super) config: Arc<LoadConfig>,
    pub(super) connections: usize,
    pub(super) pacing: Pacing,
    pub(super) requests: Option<u64>,
    /// This thread's lane and the lane count over every segment's
    /// threads: under a schedule, lane l sends requests l, l + lanes, ...
    pub(super) lane: (u64, u64),
    /// Under `--rate`: when this lane's first request falls due after the
    /// start (lane / whole rate), so the lanes interleave into one
    /// schedule instead of sending together.
    pub(super) phase: Duration,
    /// Connection slots of all threads not yet through their first
    /// exchange: a closed loop with more connections than one wave holds
    /// its answered connections back until it is 0 (see `worker::ramp`).
    pub(super) ramp_left: Arc<std::sync::atomic::AtomicUsize>,
}

/// What a worker measured about itself.
#[derive(Debug, Default, Clone)]
pub(crate) struct WorkerStats {
    pub(super) cpu: Duration,
    pub(super) wall: Duration,
    pub(super) connections_opened: u64,
    pub(super) connect_failures: u64,
    pub(super) never_answered: u64,
    /// The answers in the counted window of each connection slot that
    /// carried a request in it (for `fairness`; filled at the end).
    pub(super) window_answers: Vec<u64>,
    pub(super) late_sends: u64,
    /// Open loop: requests handed to a connection (for the share on time).
    pub(super) sends: u64,
    pub(super) max_lag: Duration,
    /// Times the loop came back from waiting (see `GeneratorCost::wakeups`).
    pub(super) wakeups: u64,
    pub(super) interrupted: bool,
    pub(super) stopped_on_error: bool,
    /// "io_uring" or "epoll": what the loop waited on.
    pub(super) io: &'static str,
}

impl WorkerStats {
    /// Adds another thread's counts: sums, both threads' connections, the
    /// largest lag, either's interruption, and the I/O both used ("mixed"
    /// if they differ).
    pub(super) fn add(&mut self, s: &WorkerStats) {
        self.connections_opened += s.connections_opened;
        self.connect_failures += s.connect_failures;
        self.never_answered += s.never_answered;
        self.window_answers.extend_from_slice(&s.window_answers);
        self.late_sends += s.late_sends;
        self.sends += s.sends;
        self.wakeups += s.wakeups;
        self.max_lag = self.max_lag.max(s.max_lag);
        self.interrupted |= s.interrupted;
        self.stopped_on_error |= s.stopped_on_error;
        self.io = match (self.io, s.io) {
            ("", io) => io,
            (a, b) if a == b => a,
            _ => "mixed",
        };
    }
}
