//! The telemetry the server wrote, read back once it has stopped: the
//! wait for its last second to reach the files (the middleware's flush
//! interval), then the counted window's lines, timed from its start. It
//! never starts or stops a process and never writes telemetry itself
//! (crate::telemetry's middleware does, inside the server). With the
//! live endpoint on, it is also read while the load runs, for the board.

use super::prepare::Prepared;
use super::watch::Poller;
use crate::load::window::Window;
use crate::telemetry::Telemetry;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How often the telemetry is read for the live endpoint while the load
/// runs (the middleware writes a line a second).
const LIVE_INTERVAL: Duration = Duration::from_secs(1);

impl Prepared {
    /// With telemetry on, waits until every process's last second has
    /// reached its file, so it can be stopped: uWSGI's INT skips at_exit,
    /// and a killed worker writes nothing.
    pub(super) fn wait_for_telemetry_flush(&self) {
        if self.telemetry.is_some() {
            std::thread::sleep(Duration::from_secs_f64(flush_s(&self.launch_env()) + 0.2));
        }
    }

    /// What the telemetry middleware wrote from `since` on, timed from it
    /// (None with telemetry off).
    pub(super) fn read_telemetry(&self, since: Option<Instant>) -> Option<Telemetry> {
        let w = self.telemetry.as_ref()?;
        read_telemetry(&w.data_dir, since)
    }

    /// With telemetry on and a live endpoint (`--metrics-listen`), reads
    /// what the middleware wrote each second while the load runs (the
    /// counted window's lines once it opened) onto the board.
    pub(super) fn watch_telemetry_live(
        &self,
        window: Arc<OnceLock<Arc<Window>>>,
    ) -> Option<Poller<Vec<()>>> {
        let board = crate::live::board()?;
        let dir: PathBuf = self.telemetry.as_ref()?.data_dir.clone();
        Some(Poller::start(LIVE_INTERVAL, move |_| {
            let start = window.get().and_then(|w| w.start()).map(unix_time_of);
            let opts = crate::telemetry::ReadOptions {
                origin_unix_s: start,
                since_unix_s: start,
            };
            if let Ok(t) = crate::telemetry::read(&dir, opts) {
                board.telemetry(live_figures(&t));
            }
            ControlFlow::Continue(())
        }))
    }
}

/// Telemetry's mean time per request by where it went, for the board.
fn live_figures(t: &Telemetry) -> crate::live::TelemetryNow {
    let per_request = |ms: f64| (t.requests > 0).then(|| ms / t.requests as f64);
    crate::live::TelemetryNow {
        queue_ms: t.queue_us.as_ref().map(|q| q.mean / 1e3),
        app_ms: (t.requests > 0).then(|| t.app_us.mean / 1e3),
        gc_ms: t.gc_time_ms.and_then(per_request),
        db_ms: t.db_us.as_ref().map(|q| q.mean / 1e3),
    }
}

/// The middleware's flush interval the server runs with
/// (`RACKBENCH_TELEMETRY_FLUSH_S` in its environment or ours, default 1 s,
/// kept to the 0.05..60 the middleware accepts).
fn flush_s(env: &BTreeMap<String, String>) -> f64 {
    let key = crate::telemetry::FLUSH_ENV;
    env.get(key)
        .cloned()
        .or_else(|| std::env::var(key).ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .map_or(1.0, |v| v.clamp(0.05, 60.0))
}

/// The telemetry of the counted window: lines written from its start on,
/// timed from it. A directory that cannot be read is warned about, and the
/// record then says telemetry was on with no figures.
fn read_telemetry(data_dir: &Path, window_start: Option<Instant>) -> Option<Telemetry> {
    let start = window_start.map(unix_time_of);
    let opts = crate::telemetry::ReadOptions {
        origin_unix_s: start,
        since_unix_s: start,
    };
    match crate::telemetry::read(data_dir, opts) {
        Ok(t) => {
            if let Some(board) = crate::live::board() {
                board.telemetry(live_figures(&t));
            }
            Some(t)
        }
        Err(e) => {
            eprintln!("warning: telemetry in {}: {e:#}", data_dir.display());
            None
        }
    }
}

/// The real-time clock's reading (seconds since the epoch) at `at`.
fn unix_time_of(at: Instant) -> f64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    now - Instant::now().saturating_duration_since(at).as_secs_f64()
}
