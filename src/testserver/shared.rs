//! What the test server's threads share: its configuration, its counters
//! and histograms, and the admission of requests under `max_in_progress`
//! and `workers` (a `Permit` held while a request is worked on). It never
//! touches a socket.

use super::config::TestServerConfig;
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

pub(super) struct Shared {
    pub(super) cfg: TestServerConfig,
    pub(super) started: Instant,
    pub(super) stop: AtomicBool,
    pub(super) answered: AtomicU64,
    pub(super) seen: AtomicU64,
    pub(super) accepted: AtomicU64,
    pub(super) open: AtomicU64,
    pub(super) service: Mutex<Histogram<u64>>,
    /// `SlowSeen`'s figures, each a count or a maximum.
    pub(super) slow_heads: AtomicU64,
    pub(super) longest_head_us: AtomicU64,
    pub(super) head_bytes_max: AtomicU64,
    pub(super) slow_bodies: AtomicU64,
    pub(super) body_declared_max: AtomicU64,
    pub(super) body_received_max: AtomicU64,
    pub(super) blocked_writes: AtomicU64,
    /// Arrival of each request, unix µs (with `record_arrivals`).
    pub(super) arrivals: Mutex<Vec<u64>>,
    /// Requests seen by path (with `count_paths`).
    pub(super) per_path: Mutex<std::collections::BTreeMap<String, u64>>,
    /// (requests admitted, of which being worked on), with `turn`.
    pub(super) pool: Mutex<(usize, usize)>,
    pub(super) turn: Condvar,
}

/// An admitted request's place: in progress until dropped.
pub(super) struct Permit<'a> {
    sh: &'a Shared,
}

impl Shared {
    /// A request's service time: a faulty answer's, else its path's
    /// (`path_delays`, query left out), else `delay`; its path counted
    /// with `count_paths`.
    pub(super) fn service_time(&self, path: &str, faulty: bool) -> Duration {
        let cfg = &self.cfg;
        let bare = path.split('?').next().unwrap_or("/");
        if cfg.count_paths {
            *self
                .per_path
                .lock()
                .expect("per path")
                .entry(bare.to_string())
                .or_default() += 1;
        }
        match (faulty, cfg.fault_delay) {
            (true, Some(d)) => d,
            _ => cfg
                .path_delays
                .iter()
                .find(|(prefix, _)| bare.starts_with(prefix.as_str()))
                .map_or(cfg.delay, |(_, d)| *d),
        }
    }

    /// Admits a request under `max_in_progress` and waits for a worker
    /// under `workers`; None when it is to be refused.
    pub(super) fn admit(&self) -> Option<Permit<'_>> {
        let (limit, workers) = (self.cfg.max_in_progress, self.cfg.workers);
        if limit == 0 && workers == 0 {
            return Some(Permit { sh: self });
        }
        let mut p = self.pool.lock().expect("pool");
        if limit > 0 && p.0 >= limit {
            return None;
        }
        p.0 += 1;
        while workers > 0 && p.1 >= workers {
            p = self.turn.wait(p).expect("pool");
        }
        p.1 += 1;
        Some(Permit { sh: self })
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let (limit, workers) = (self.sh.cfg.max_in_progress, self.sh.cfg.workers);
        if limit == 0 && workers == 0 {
            return;
        }
        let mut p = self.sh.pool.lock().expect("pool");
        p.0 -= 1;
        p.1 -= 1;
        drop(p);
        self.sh.turn.notify_one();
    }
}
