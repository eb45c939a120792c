//! The telemetry the server wrote, read back once it has stopped: the
//! wait for its last second to reach the files (the middleware's flush
//! interval), then the counted window's lines, timed from its start. It
//! never starts or stops a process and never writes telemetry itself
//! (crate::telemetry's middleware does, inside the server).

use super::prepare::Prepared;
use crate::telemetry::Telemetry;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

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
        Ok(t) => Some(t),
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
