//! What the generator itself cost (`GeneratorCost`, the document's
//! `generator` object): this process's CPU and peak memory from
//! getrusage between two moments. It never measures the server.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What the generator itself cost.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GeneratorCost {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    pub peak_rss_bytes: u64,
    /// CPU time of the busiest load thread over its wall time (1.0 = saturated).
    pub busiest_thread_utilization: f64,
    /// What the connection loop waited on: "io_uring" or "epoll" (empty
    /// in records made before this field existed).
    #[serde(default)]
    pub io: String,
    /// Times the load threads came back from waiting for sockets or
    /// timers, all threads together: a loop with nothing it can do sleeps,
    /// so this stays near the responses' count plus a few per second, and
    /// a figure far above that means the generator spins (0 in records
    /// made before this field existed).
    #[serde(default)]
    pub wakeups: u64,
}

pub(crate) struct Usage {
    user: Duration,
    sys: Duration,
    max_rss_bytes: u64,
}

pub(crate) fn process_usage() -> Usage {
    // SAFETY: getrusage fills the zeroed struct.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    Usage {
        user: tv(ru.ru_utime),
        sys: tv(ru.ru_stime),
        max_rss_bytes: ru.ru_maxrss as u64 * 1024,
    }
}

impl GeneratorCost {
    pub(crate) fn between(a: &Usage, b: &Usage, busiest: f64, io: &str) -> Self {
        GeneratorCost {
            cpu_user_s: b.user.saturating_sub(a.user).as_secs_f64(),
            cpu_sys_s: b.sys.saturating_sub(a.sys).as_secs_f64(),
            peak_rss_bytes: b.max_rss_bytes,
            busiest_thread_utilization: busiest,
            io: io.to_string(),
            wakeups: 0,
        }
    }
}
