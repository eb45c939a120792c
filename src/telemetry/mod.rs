//! Where the time goes inside the server (issue 15): the figures rackbench's
//! Rack middleware (`ruby/telemetry/rackbench_telemetry.rb`) writes from
//! inside each app process, read back and merged, plus the kernel's
//! accept queue ([`accept_queue`]).
//!
//! The middleware appends one JSON line a second per process to
//! `<dir>/telemetry-<pid>.jsonl`, each line the figures since the
//! previous one: request count, histogram buckets of app time and nginx
//! queue time (values kept to two significant digits), GC runs, GC time,
//! allocated objects and RSS (format: docs/TELEMETRY.md). [`read`] merges
//! the lines per process and overall into [`Telemetry`], which serializes to
//! the `server_metrics.telemetry` contract. [`write_wrapper`] writes the
//! rackup file that puts the middleware around a user's app unchanged.
//!
//! This module knows nothing about trials, servers or records: the lab
//! decides where the files go and when to read them.

pub mod accept_queue;
pub mod gc;
mod wrapper;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

pub use accept_queue::{
    accept_queue_len, listen_endpoint, AcceptQueue, AcceptQueueRecorder, AcceptQueueSampler,
    AcceptQueueSecond,
};
pub use gc::GcDetail;
pub use wrapper::{write_wrapper, Wrapper};

/// The variable the middleware reads for its output directory; it wins
/// over the directory written into the wrapper.
pub const DIR_ENV: &str = "RACKBENCH_TELEMETRY_DIR";
/// Seconds between flushes (default 1).
pub const FLUSH_ENV: &str = "RACKBENCH_TELEMETRY_FLUSH_S";

/// The middleware's source, written next to each wrapper.
pub const MIDDLEWARE_RB: &str = include_str!("../../ruby/telemetry/rackbench_telemetry.rb");

/// The line format version this reader understands.
pub const FORMAT_VERSION: u64 = 1;

/// Percentiles and mean of a distribution, in the unit its field names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Quantiles {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub mean: f64,
}

/// `server_metrics.telemetry`: figures from inside the app processes over
/// the lines read. Field names are a contract.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Telemetry {
    /// Requests the app answered (all processes).
    pub requests: u64,
    /// Time in the app's `call`, microseconds.
    pub app_us: Quantiles,
    /// Wait from nginx's stamp (X-Request-Start) to the app, microseconds;
    /// only when requests carried the header (behind nginx).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_us: Option<Quantiles>,
    /// Requests that carried X-Request-Start.
    #[serde(default)]
    pub queue_requests: u64,
    /// GC runs in the processes while they served requests.
    pub gc_runs: u64,
    pub gc_major_runs: u64,
    pub gc_minor_runs: u64,
    /// GC time, milliseconds; null when the Ruby has no `GC.stat(:time)`.
    pub gc_time_ms: Option<f64>,
    pub gc_runs_per_1k_requests: f64,
    /// GC time over app time (0..1, can exceed 1 with threads, where GC
    /// stops every thread in a request); null without GC time.
    pub gc_time_share: Option<f64>,
    /// Objects allocated in the processes per request (the server's own
    /// parsing and writing included).
    pub allocated_objects_per_request: f64,
    /// App processes that served requests.
    pub processes: u64,
    /// Processes that wrote their final line (left through at_exit).
    pub processes_exited_cleanly: u64,
    pub per_worker: Vec<WorkerTelemetry>,
    /// Per second from the origin given to [`read`].
    pub timeline: Vec<TelemetrySecond>,
    /// Requests timed with ActiveRecord loaded (0 for an app without it).
    #[serde(default)]
    pub db_requests: u64,
    /// Time a request's thread spent in SQL (`sql.active_record`),
    /// microseconds; only with ActiveRecord.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_us: Option<Quantiles>,
    /// Time a request waited for a pool connection
    /// (`ConnectionPool#checkout`), microseconds; only with ActiveRecord.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_wait_us: Option<Quantiles>,
    /// SQL time over app time of those requests (0..1); only with
    /// ActiveRecord.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_time_share: Option<f64>,
    /// Per endpoint of a mix (the requests' `X-Rackbench-Endpoint`), by
    /// name; absent without one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, EndpointTelemetry>,
    /// The GC's heap, limits and triggers ([`gc`]); absent from records
    /// made before issue 41.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc: Option<GcDetail>,
}

/// One endpoint's share of [`Telemetry`]: app, SQL and pool-wait time of
/// the requests that named it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointTelemetry {
    pub requests: u64,
    pub app_us: Quantiles,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_us: Option<Quantiles>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_wait_us: Option<Quantiles>,
}

/// An endpoint's figures in one flush line.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct EndpointLine {
    pub requests: u64,
    pub app_us: Vec<(u64, u64)>,
    pub app_us_sum: u64,
    #[serde(default)]
    pub db_us: Vec<(u64, u64)>,
    #[serde(default)]
    pub db_us_sum: u64,
    #[serde(default)]
    pub pool_wait_us: Vec<(u64, u64)>,
    #[serde(default)]
    pub pool_wait_us_sum: u64,
}

/// One app process's share of [`Telemetry`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerTelemetry {
    pub pid: u32,
    pub ppid: u32,
    pub requests: u64,
    /// Its share of all processes' requests (puma's "% deviation": share × processes − 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    pub app_us: Quantiles,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_us: Option<Quantiles>,
    pub gc_runs: u64,
    pub gc_major_runs: u64,
    pub gc_minor_runs: u64,
    pub gc_time_ms: Option<f64>,
    pub gc_runs_per_1k_requests: f64,
    pub allocated_objects_per_request: f64,
    /// Resident set size at the last flush, and the most seen.
    pub rss_bytes: Option<u64>,
    pub rss_max_bytes: Option<u64>,
    /// Whether it wrote its final line.
    pub exited_cleanly: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc: Option<GcDetail>,
}

/// One second of [`Telemetry::timeline`]: the flush lines that ended in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySecond {
    pub t_s: u64,
    pub requests: u64,
    pub gc_runs: u64,
    pub gc_time_ms: Option<f64>,
    pub app_us_mean: f64,
}

/// One flush line as the middleware writes it.
#[derive(Debug, Clone, Deserialize)]
pub struct Line {
    pub v: u64,
    pub pid: u32,
    #[serde(default)]
    pub ppid: u32,
    pub t_unix_s: f64,
    #[serde(default)]
    pub r#final: bool,
    pub requests: u64,
    pub app_us: Vec<(u64, u64)>,
    pub app_us_sum: u64,
    #[serde(default)]
    pub queue_requests: u64,
    #[serde(default)]
    pub queue_us: Vec<(u64, u64)>,
    #[serde(default)]
    pub queue_us_sum: u64,
    pub gc_runs: u64,
    #[serde(default)]
    pub gc_major_runs: u64,
    #[serde(default)]
    pub gc_minor_runs: u64,
    pub gc_time_ms: Option<f64>,
    pub allocated_objects: u64,
    pub rss_bytes: Option<u64>,
    #[serde(default)]
    pub db_requests: u64,
    #[serde(default)]
    pub db_us: Vec<(u64, u64)>,
    #[serde(default)]
    pub db_us_sum: u64,
    #[serde(default)]
    pub pool_wait_us: Vec<(u64, u64)>,
    #[serde(default)]
    pub pool_wait_us_sum: u64,
    #[serde(default)]
    pub endpoints: BTreeMap<String, EndpointLine>,
    #[serde(default)]
    pub gc: Option<gc::GcLine>,
}

/// Which lines [`read`] takes, and where its timeline starts.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions {
    /// Unix time (seconds) the timeline counts from; the first line's
    /// second when None.
    pub origin_unix_s: Option<f64>,
    /// Drop lines written before this unix time (a warm-up's, say). A line
    /// covers about the second before it, so the cut is that coarse.
    pub since_unix_s: Option<f64>,
}

/// A histogram of microsecond values in the middleware's buckets: key is
/// the value kept to two significant digits.
#[derive(Debug, Clone, Default)]
struct Buckets {
    counts: BTreeMap<u64, u64>,
    sum: u64,
    n: u64,
}

impl Buckets {
    fn add(&mut self, buckets: &[(u64, u64)], sum: u64) {
        for &(k, c) in buckets {
            *self.counts.entry(k).or_default() += c;
            self.n += c;
        }
        self.sum += sum;
    }

    fn merge(&mut self, o: &Buckets) {
        for (&k, &c) in &o.counts {
            *self.counts.entry(k).or_default() += c;
        }
        self.n += o.n;
        self.sum += o.sum;
    }

    /// The middle of the bucket holding the q-quantile.
    fn quantile(&self, q: f64) -> f64 {
        let rank = ((q * self.n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (&k, &c) in &self.counts {
            seen += c;
            if seen >= rank {
                return bucket_mid(k);
            }
        }
        0.0
    }

    fn quantiles(&self) -> Option<Quantiles> {
        (self.n > 0).then(|| Quantiles {
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            mean: self.sum as f64 / self.n as f64,
        })
    }
}

/// The width of the bucket whose lower bound is `key` (two significant
/// digits: 1 below 100, 10 below 1000, ...), and its middle.
fn bucket_mid(key: u64) -> f64 {
    if key < 100 {
        return key as f64;
    }
    let width = 10u64.pow(key.ilog10() - 1);
    key as f64 + (width - 1) as f64 / 2.0
}

#[derive(Debug, Default)]
struct Worker {
    pid: u32,
    ppid: u32,
    requests: u64,
    app: Buckets,
    queue: Buckets,
    gc_runs: u64,
    gc_major: u64,
    gc_minor: u64,
    gc_time_ms: Option<f64>,
    allocated: u64,
    rss_last: Option<(f64, u64)>,
    rss_max: Option<u64>,
    exited: bool,
    db: Buckets,
    pool: Buckets,
    /// App time of the requests timed with ActiveRecord (db_time_share's
    /// denominator).
    db_app_us: u64,
    endpoints: BTreeMap<String, EndpointBuckets>,
}

/// An endpoint's histograms, merged across lines and processes.
#[derive(Debug, Default, Clone)]
struct EndpointBuckets {
    app: Buckets,
    db: Buckets,
    pool: Buckets,
}

impl EndpointBuckets {
    fn add(&mut self, l: &EndpointLine) {
        self.app.add(&l.app_us, l.app_us_sum);
        self.db.add(&l.db_us, l.db_us_sum);
        self.pool.add(&l.pool_wait_us, l.pool_wait_us_sum);
    }

    fn merge(&mut self, o: &EndpointBuckets) {
        self.app.merge(&o.app);
        self.db.merge(&o.db);
        self.pool.merge(&o.pool);
    }

    fn figures(&self) -> EndpointTelemetry {
        EndpointTelemetry {
            requests: self.app.n,
            app_us: self.app.quantiles().unwrap_or_default(),
            db_us: self.db.quantiles(),
            pool_wait_us: self.pool.quantiles(),
        }
    }
}

impl Worker {
    fn add(&mut self, l: &Line) {
        self.pid = l.pid;
        self.ppid = l.ppid;
        self.requests += l.requests;
        self.app.add(&l.app_us, l.app_us_sum);
        self.queue.add(&l.queue_us, l.queue_us_sum);
        self.gc_runs += l.gc_runs;
        self.gc_major += l.gc_major_runs;
        self.gc_minor += l.gc_minor_runs;
        self.gc_time_ms = add_opt(self.gc_time_ms, l.gc_time_ms);
        self.allocated += l.allocated_objects;
        if let Some(rss) = l.rss_bytes {
            if self.rss_last.is_none_or(|(t, _)| l.t_unix_s >= t) {
                self.rss_last = Some((l.t_unix_s, rss));
            }
            self.rss_max = Some(self.rss_max.unwrap_or(0).max(rss));
        }
        self.exited |= l.r#final;
        self.db.add(&l.db_us, l.db_us_sum);
        self.pool.add(&l.pool_wait_us, l.pool_wait_us_sum);
        if l.db_requests > 0 {
            // The line's app time is all requests'; with ActiveRecord
            // loaded every request of the process is timed (the hooks go
            // in before the first request of an app that loads it).
            self.db_app_us += l.app_us_sum;
        }
        for (name, e) in &l.endpoints {
            self.endpoints.entry(name.clone()).or_default().add(e);
        }
    }
}

fn add_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

fn per_1k(runs: u64, requests: u64) -> f64 {
    if requests == 0 {
        0.0
    } else {
        runs as f64 * 1000.0 / requests as f64
    }
}

fn per_request(n: u64, requests: u64) -> f64 {
    if requests == 0 {
        0.0
    } else {
        n as f64 / requests as f64
    }
}

/// Reads every `telemetry-*.jsonl` in `dir` and merges them. A missing or
/// empty directory gives zero requests (the caller knows telemetry was on
/// and can say nothing came); a line that is not the format is an error
/// naming the file. A torn last line (a process killed mid-write) is
/// skipped.
pub fn read(dir: &Path, opts: ReadOptions) -> Result<Telemetry> {
    let mut lines = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(merge(&[], opts)),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("telemetry-") && n.ends_with(".jsonl"))
        })
        .collect();
    files.sort();
    for f in files {
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        let complete = text.ends_with('\n');
        let all: Vec<&str> = text.lines().collect();
        for (i, raw) in all.iter().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let line: Line = match serde_json::from_str(raw) {
                Ok(l) => l,
                Err(_) if i + 1 == all.len() && !complete => continue,
                Err(e) => bail!("{}:{}: not a telemetry line: {e}", f.display(), i + 1),
            };
            if line.v != FORMAT_VERSION {
                bail!(
                    "{}:{}: telemetry format {} (this rackbench reads {FORMAT_VERSION}): rerun with the wrapper this rackbench writes",
                    f.display(),
                    i + 1,
                    line.v
                );
            }
            lines.push(line);
        }
    }
    Ok(merge(&lines, opts))
}

/// Merges flush lines (from any processes) into the contract's figures.
pub fn merge(lines: &[Line], opts: ReadOptions) -> Telemetry {
    let lines: Vec<&Line> = lines
        .iter()
        .filter(|l| opts.since_unix_s.is_none_or(|s| l.t_unix_s >= s))
        .collect();
    let mut workers: BTreeMap<u32, Worker> = BTreeMap::new();
    for l in &lines {
        workers.entry(l.pid).or_default().add(l);
    }
    let origin = opts.origin_unix_s.unwrap_or_else(|| {
        lines
            .iter()
            .map(|l| l.t_unix_s)
            .fold(f64::INFINITY, f64::min)
            .floor()
    });
    let mut seconds: BTreeMap<u64, (TelemetrySecond, u64)> = BTreeMap::new();
    for l in &lines {
        let s = (l.t_unix_s - origin).max(0.0).floor() as u64;
        let (sec, app_sum) = seconds.entry(s).or_default();
        sec.t_s = s;
        sec.requests += l.requests;
        sec.gc_runs += l.gc_runs;
        sec.gc_time_ms = add_opt(sec.gc_time_ms, l.gc_time_ms);
        *app_sum += l.app_us_sum;
    }
    let timeline = seconds
        .into_values()
        .map(|(mut s, app_sum)| {
            s.app_us_mean = per_request(app_sum, s.requests);
            s
        })
        .collect();

    let (gc, mut gc_per) = gc::details(lines.iter().filter_map(|l| Some((l.pid, l.gc.as_ref()?))));
    let mut all = Worker::default();
    let total: u64 = workers.values().map(|w| w.requests).sum();
    let mut per_worker = Vec::new();
    let mut served = 0;
    let mut exited = 0;
    for w in workers.values() {
        all.requests += w.requests;
        all.app.merge(&w.app);
        all.queue.merge(&w.queue);
        all.gc_runs += w.gc_runs;
        all.gc_major += w.gc_major;
        all.gc_minor += w.gc_minor;
        all.gc_time_ms = add_opt(all.gc_time_ms, w.gc_time_ms);
        all.allocated += w.allocated;
        all.db.merge(&w.db);
        all.pool.merge(&w.pool);
        all.db_app_us += w.db_app_us;
        for (name, e) in &w.endpoints {
            all.endpoints.entry(name.clone()).or_default().merge(e);
        }
        served += u64::from(w.requests > 0);
        exited += u64::from(w.exited);
        per_worker.push(WorkerTelemetry {
            pid: w.pid,
            ppid: w.ppid,
            requests: w.requests,
            share: (total > 0).then(|| w.requests as f64 / total as f64),
            app_us: w.app.quantiles().unwrap_or_default(),
            queue_us: w.queue.quantiles(),
            gc_runs: w.gc_runs,
            gc_major_runs: w.gc_major,
            gc_minor_runs: w.gc_minor,
            gc_time_ms: w.gc_time_ms,
            gc_runs_per_1k_requests: per_1k(w.gc_runs, w.requests),
            allocated_objects_per_request: per_request(w.allocated, w.requests),
            rss_bytes: w.rss_last.map(|(_, r)| r),
            rss_max_bytes: w.rss_max,
            exited_cleanly: w.exited,
            gc: gc_per.remove(&w.pid),
        });
    }
    let app_ms = all.app.sum as f64 / 1000.0;
    Telemetry {
        requests: all.requests,
        app_us: all.app.quantiles().unwrap_or_default(),
        queue_us: all.queue.quantiles(),
        queue_requests: all.queue.n,
        gc_runs: all.gc_runs,
        gc_major_runs: all.gc_major,
        gc_minor_runs: all.gc_minor,
        gc_time_ms: all.gc_time_ms,
        gc_runs_per_1k_requests: per_1k(all.gc_runs, all.requests),
        gc_time_share: all
            .gc_time_ms
            .map(|gc| if app_ms > 0.0 { gc / app_ms } else { 0.0 }),
        allocated_objects_per_request: per_request(all.allocated, all.requests),
        processes: served,
        processes_exited_cleanly: exited,
        per_worker,
        timeline,
        db_requests: all.db.n,
        db_us: all.db.quantiles(),
        pool_wait_us: all.pool.quantiles(),
        db_time_share: (all.db.n > 0 && all.db_app_us > 0)
            .then(|| all.db.sum as f64 / all.db_app_us as f64),
        endpoints: all
            .endpoints
            .iter()
            .map(|(k, e)| (k.clone(), e.figures()))
            .collect(),
        gc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(pid: u32, t: f64, app: &[(u64, u64)], gc: u64) -> Line {
        let requests = app.iter().map(|b| b.1).sum();
        Line {
            v: 1,
            pid,
            ppid: 1,
            t_unix_s: t,
            r#final: false,
            requests,
            app_us: app.to_vec(),
            app_us_sum: app.iter().map(|b| b.0 * b.1).sum(),
            queue_requests: 0,
            queue_us: vec![],
            queue_us_sum: 0,
            gc_runs: gc,
            gc_major_runs: 0,
            gc_minor_runs: gc,
            gc_time_ms: Some(gc as f64 * 2.0),
            allocated_objects: requests * 100,
            rss_bytes: Some(1000 + t as u64),
            db_requests: 0,
            db_us: vec![],
            db_us_sum: 0,
            pool_wait_us: vec![],
            pool_wait_us_sum: 0,
            endpoints: BTreeMap::new(),
            gc: None,
        }
    }

    #[test]
    fn database_time_and_pool_wait_merge_overall_and_per_endpoint() {
        // Two processes of a mix: "show" spends 2 ms of its 10 ms in SQL
        // and waits 5 ms for a connection in one process; "external"
        // touches no database.
        let endpoint = |app: u64, db: u64, pool: u64, n: u64| EndpointLine {
            requests: n,
            app_us: vec![(app, n)],
            app_us_sum: app * n,
            db_us: vec![(db, n)],
            db_us_sum: db * n,
            pool_wait_us: vec![(pool, n)],
            pool_wait_us_sum: pool * n,
        };
        let mut a = line(20, 100.5, &[(10_000, 4), (20_000, 4)], 0);
        (a.db_requests, a.db_us, a.db_us_sum) = (8, vec![(2_000, 4), (0, 4)], 8_000);
        (a.pool_wait_us, a.pool_wait_us_sum) = (vec![(5_000, 4), (0, 4)], 20_000);
        a.endpoints
            .insert("show".into(), endpoint(10_000, 2_000, 5_000, 4));
        a.endpoints
            .insert("external".into(), endpoint(20_000, 0, 0, 4));
        let mut b = line(21, 100.7, &[(10_000, 2)], 0);
        (b.db_requests, b.db_us, b.db_us_sum) = (2, vec![(2_000, 2)], 4_000);
        (b.pool_wait_us, b.pool_wait_us_sum) = (vec![(0, 2)], 0);
        b.endpoints
            .insert("show".into(), endpoint(10_000, 2_000, 0, 2));
        let t = merge(&[a, b], ReadOptions::default());
        assert_eq!(t.db_requests, 10);
        assert_eq!(t.db_us.unwrap().mean, 1_200.0);
        assert_eq!(t.pool_wait_us.unwrap().mean, 2_000.0);
        assert!((t.db_time_share.unwrap() - 12_000.0 / 140_000.0).abs() < 1e-12);
        let show = &t.endpoints["show"];
        assert_eq!(show.requests, 6);
        assert_eq!(show.app_us.p50, 10_499.5);
        assert_eq!(show.db_us.unwrap().mean, 2_000.0);
        assert!((show.pool_wait_us.unwrap().mean - 20_000.0 / 6.0).abs() < 1e-9);
        assert_eq!(t.endpoints["external"].pool_wait_us.unwrap().p99, 0.0);
        let v = serde_json::to_value(&t).unwrap();
        for k in ["db_us", "pool_wait_us", "db_time_share", "endpoints"] {
            assert!(v.get(k).is_some(), "{k} missing");
        }
        // An app without ActiveRecord and a load without a mix add none.
        let plain = merge(&[line(5, 1.0, &[(100, 1)], 0)], ReadOptions::default());
        let v = serde_json::to_value(&plain).unwrap();
        for k in ["db_us", "pool_wait_us", "db_time_share", "endpoints"] {
            assert!(v.get(k).is_none(), "{k} without ActiveRecord or a mix");
        }
    }

    #[test]
    fn buckets_keep_two_significant_digits_and_report_their_middle() {
        assert_eq!(bucket_mid(42), 42.0);
        assert_eq!(bucket_mid(20_000), 20_499.5);
        assert_eq!(bucket_mid(990), 994.5);
    }

    #[test]
    fn lines_merge_per_worker_and_overall_with_the_contract_names() {
        let lines = vec![
            line(10, 100.2, &[(20_000, 8), (21_000, 2)], 1),
            line(10, 101.2, &[(20_000, 10)], 0),
            line(11, 100.5, &[(20_000, 9), (90_000, 1)], 3),
        ];
        let t = merge(
            &lines,
            ReadOptions {
                origin_unix_s: Some(100.0),
                since_unix_s: None,
            },
        );
        assert_eq!(t.requests, 30);
        assert_eq!(t.processes, 2);
        assert!((t.app_us.p50 - 20_499.5).abs() < 1e-9, "{:?}", t.app_us);
        assert!((t.app_us.p99 - 90_499.5).abs() < 1e-9, "{:?}", t.app_us);
        assert_eq!(t.gc_runs, 4);
        assert!((t.gc_runs_per_1k_requests - 4000.0 / 30.0).abs() < 1e-9);
        assert_eq!(t.gc_time_ms, Some(8.0));
        let app_ms = 27.0 * 20.0 + 2.0 * 21.0 + 90.0;
        assert!((t.gc_time_share.unwrap() - 8.0 / app_ms).abs() < 1e-9);
        assert_eq!(t.allocated_objects_per_request, 100.0);
        assert!(t.queue_us.is_none());
        assert_eq!(t.per_worker.len(), 2);
        let w = &t.per_worker[0];
        assert_eq!((w.requests, w.share), (20, Some(20.0 / 30.0)));
        assert_eq!(t.per_worker[0].rss_bytes, Some(1101));
        let secs: Vec<(u64, u64, u64)> = t
            .timeline
            .iter()
            .map(|s| (s.t_s, s.requests, s.gc_runs))
            .collect();
        assert_eq!(secs, vec![(0, 20, 4), (1, 10, 0)]);
        let v = serde_json::to_value(&t).unwrap();
        for k in [
            "requests",
            "app_us",
            "gc_runs",
            "gc_time_ms",
            "gc_runs_per_1k_requests",
            "gc_time_share",
            "allocated_objects_per_request",
            "per_worker",
        ] {
            assert!(v.get(k).is_some(), "{k} missing");
        }
        for k in ["p50", "p90", "p99", "mean"] {
            assert!(v["app_us"].get(k).is_some(), "app_us.{k} missing");
        }
        assert!(v.get("queue_us").is_none(), "queue_us only behind nginx");

        let late = merge(
            &lines,
            ReadOptions {
                origin_unix_s: None,
                since_unix_s: Some(101.0),
            },
        );
        assert_eq!(late.requests, 10);
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_a_foreign_line_is_an_error() {
        let dir = std::env::temp_dir().join(format!("rb-tel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = r#"{"v":1,"pid":5,"ppid":1,"seq":1,"t_unix_s":10.5,"final":true,"requests":2,"app_us":[[150,2]],"app_us_sum":300,"queue_requests":2,"queue_us":[[7000,2]],"queue_us_sum":14000,"gc_runs":0,"gc_major_runs":0,"gc_minor_runs":0,"gc_time_ms":0,"allocated_objects":40,"rss_bytes":4096}"#;
        std::fs::write(
            dir.join("telemetry-5.jsonl"),
            format!("{good}\n{{\"v\":1,\"pid\""),
        )
        .unwrap();
        let t = read(&dir, ReadOptions::default()).unwrap();
        assert_eq!(t.requests, 2);
        assert_eq!(t.queue_us.unwrap().p50, 7049.5);
        assert_eq!(t.processes_exited_cleanly, 1);
        std::fs::write(dir.join("telemetry-6.jsonl"), "nonsense\n").unwrap();
        let e = read(&dir, ReadOptions::default()).unwrap_err().to_string();
        assert!(e.contains("telemetry-6.jsonl:1"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(read(&dir, ReadOptions::default()).unwrap().requests, 0);
    }

    #[test]
    fn the_wrapper_names_paths_as_literal_ruby_strings() {
        assert_eq!(
            wrapper::ruby_string(r#"/a/#{x}"q"\"#),
            r#""/a/\#{x}\"q\"\\""#
        );
    }
}
