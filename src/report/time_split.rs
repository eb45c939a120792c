//! "Where the time goes": a group's mean latency split by telemetry
//! (queue, pool wait, SQL, app, GC, the rest), the one figure the
//! Markdown table (markdown.rs) and the HTML bars (html_bars.rs) both
//! read.
//!
//! It never renders anything: it only computes the split from a group's
//! summary.

use crate::store::summary::GroupSummary;

/// The client's mean latency split by telemetry, µs. Means add up where
/// percentiles do not.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeSplit {
    /// Between nginx and the app (0 without nginx).
    pub queue_us: f64,
    /// The app's own time, GC, SQL and pool wait included.
    pub app_us: f64,
    /// The GC part of `app_us`.
    pub gc_us: f64,
    /// The parts of `app_us` waiting for a pool connection and in SQL
    /// (0 for an app without ActiveRecord).
    pub pool_us: f64,
    pub db_us: f64,
    /// The rest: the server's parsing and writing, nginx, the network and
    /// the client.
    pub rest_us: f64,
}

impl TimeSplit {
    /// The bar's parts in order, each at least 0, adding up to the mean:
    /// queue, pool wait, SQL, the app's other time, GC, the rest. GC
    /// during a query is also SQL time; the GC part is what the app time
    /// has left after the pool wait and SQL, so nothing counts twice.
    pub fn parts(&self) -> [(&'static str, f64); 6] {
        let pool = self.pool_us.min(self.app_us);
        let db = self.db_us.min(self.app_us - pool);
        let gc = self.gc_us.min(self.app_us - pool - db);
        [
            ("queue", self.queue_us),
            ("pool wait", pool),
            ("SQL", db),
            ("app", self.app_us - pool - db - gc),
            ("GC", gc),
            ("rest", self.rest_us),
        ]
    }
}

pub(crate) fn time_split(sum: &GroupSummary) -> Option<TimeSplit> {
    let t = sum.telemetry.as_ref()?;
    let queue_us = t.queue_mean_us.map_or(0.0, |q| q.median);
    let app_us = t.app_mean_us.median;
    let median = |s: Option<crate::stats::spread::Spread>| s.map_or(0.0, |s| s.median);
    Some(TimeSplit {
        queue_us,
        app_us,
        gc_us: median(t.gc_mean_us).min(app_us),
        pool_us: median(t.pool_wait_mean_us),
        db_us: median(t.db_mean_us),
        rest_us: (sum.latency_mean_us?.median - queue_us - app_us).max(0.0),
    })
}
