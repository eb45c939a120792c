//! The load engine: drives HTTP/1.1 requests at a server and records what
//! came back.
//!
//! `load` knows nothing about Rack servers, plans or disk: it takes a
//! [`LoadConfig`], runs worker threads (one epoll loop each, see
//! [`worker`]), collects their per-second reports for the timeline and
//! merges their histograms into a [`LoadReport`] — the `rackbench/load-v1`
//! document every other part of rackbench builds on.

pub mod caveats;
mod config;
mod conn;
pub mod cpus;
pub(crate) mod epoll;
mod io;
pub mod merge;
pub mod mix;
pub mod mixgen;
mod pacing;
pub mod recorded;
pub mod recorder;
pub mod report;
pub mod response;
pub mod schedule;
pub mod segment;
pub mod slow;
mod sys;
pub mod target;
mod text;
mod thread;
pub(crate) mod uring;
pub mod window;
mod worker;

pub use config::{installed_observer, observe_all, IoMode, LoadConfig, Observer, Pacing};
pub use recorder::{ErrorCounts, FirstFailure};
pub use report::LoadReport;
pub use response::ExpectStatus;
pub use sys::OpenFiles;
pub use target::{Endpoint, RequestSpec, Url};

use hdrhistogram::Histogram;
use recorder::{new_histogram, Recorder, SecondReport};
use report::{GeneratorCost, LatencySummary, TimelineRow};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use thread::{ThreadPlan, WorkerStats};
use window::Window;

/// Whether a closed loop can wait on io_uring here; the error says why not.
pub fn io_uring_available() -> Result<(), String> {
    uring::Uring::new(1).map(|_| ()).map_err(|e| e.to_string())
}

/// Splits `total` into `parts` shares that differ by at most one.
fn share(total: u64, parts: usize, i: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((i as u64) < total % parts)
}

/// Runs the load and returns the report. `on_second` sees each timeline row
/// as soon as every thread has finished that second (for a live display).
pub fn run(config: LoadConfig, on_second: impl FnMut(&TimelineRow)) -> std::io::Result<LoadReport> {
    run_observed(config, |_| {}, on_second)
}

/// [`run`], handing the counted window to `on_window` as soon as the load
/// starts, so a caller can measure over exactly the same interval (the
/// lab marks the server's sampler at `window.start()`, which under
/// `--warmup-until-steady` is only known mid-run).
///
pub fn run_observed(
    config: LoadConfig,
    on_window: impl FnOnce(Arc<Window>),
    mut on_second: impl FnMut(&TimelineRow),
) -> std::io::Result<LoadReport> {
    run_observed_seconds(config, on_window, |row, _| on_second(row))
}

/// [`run_observed`], handing `on_second` each second's histogram of OK
/// latencies beside its row, so a caller can merge the seconds it cares
/// about (a restart's) rather than average their percentiles.
///
/// In steps: refuse what cannot run, spawn the workers, gather their
/// seconds into the timeline while they run, join them, add up what each
/// measured, and build the report.
pub fn run_observed_seconds(
    config: LoadConfig,
    on_window: impl FnOnce(Arc<Window>),
    on_second: impl FnMut(&TimelineRow, &Histogram<u64>),
) -> std::io::Result<LoadReport> {
    let threads = config.threads.clamp(1, config.connections.max(1));
    check_runnable(&config)?;
    let config = Arc::new(config);
    let usage_before = report::process_usage();
    let (tx, rx) = mpsc::channel::<(usize, SecondReport)>();
    let clock = StartClock::at(config.start_at);
    let t0 = clock.t0;
    let window = Arc::new(if config.warmup_until_steady && !config.warmup.is_zero() {
        Window::until_steady(t0, config.warmup, config.duration)
    } else {
        Window::fixed(t0, config.warmup, config.duration)
    });
    on_window(Arc::clone(&window));
    let slow = match &config.slow {
        Some(s) => Some(slow::start(
            s,
            &config.endpoint,
            &config.request,
            t0,
            Arc::clone(&config.interrupt),
        )?),
        None => None,
    };
    let handles = spawn_workers(&config, threads, t0, &window, tx)?;
    let (timeline, seconds) = collect_timeline(
        rx,
        threads,
        &window,
        config.warmup_until_steady,
        config.keep_histograms,
        config.observer.as_deref(),
        on_second,
    );
    let mut results = Vec::with_capacity(threads);
    for h in handles {
        let r = h
            .join()
            .map_err(|_| std::io::Error::other("a load thread panicked"))??;
        results.push(r);
    }
    let ended = Instant::now();
    let slow_clients = slow.map(slow::SlowRun::finish);
    let usage_after = report::process_usage();
    let sum = Sum::of(&results);

    window.tick(ended);
    let window_start = window.start_or_ceiling();
    let window_stop = window.end().map_or(ended, |e| e.min(ended));
    let duration_s = window_stop
        .saturating_duration_since(window_start)
        .as_secs_f64();
    let (headline, lower_bound) = report::headline(
        &sum.latency,
        &sum.censored,
        &sum.unanswered,
        sum.errors.status + sum.errors.body,
    );
    let summary = |h: &Histogram<u64>| (!h.is_empty()).then(|| LatencySummary::from_histogram(h));
    let (segment, histograms) = if config.keep_histograms {
        let info = clock.info(&config, window_start);
        (Some(info), Some(sum.histograms(seconds)))
    } else {
        (None, None)
    };
    let mut stats = sum.stats;
    let mut generator = GeneratorCost::between(&usage_before, &usage_after, sum.busiest, stats.io);
    generator.wakeups = stats.wakeups;
    let mut report = report::build(report::Parts {
        config: &config,
        threads,
        warmup_s: window_start.saturating_duration_since(t0).as_secs_f64(),
        warmup_steady: config.warmup_until_steady.then(|| window.reached_steady()),
        ok: sum.ok,
        ok_in_window: sum.ok_in_window,
        errors: sum.errors,
        status_codes: sum.status_codes,
        first_failure: sum.first_failure,
        unfinished: sum.unfinished,
        unsent: sum.unsent,
        duration_s,
        latency: LatencySummary::from_histogram(&headline),
        latency_lower_bound: lower_bound,
        latency_failed: summary(&sum.failed),
        latency_unfinished: summary(&sum.unfinished_ages),
        latency_uncorrected: sum.uncorrected.as_ref().map(LatencySummary::from_histogram),
        connections_opened: stats.connections_opened,
        connect_failures: stats.connect_failures,
        never_answered: stats.never_answered,
        window_answers: std::mem::take(&mut stats.window_answers),
        late_sends: stats.late_sends,
        sends: stats.sends,
        max_lag: stats.max_lag,
        interrupted: stats.interrupted && !stats.stopped_on_error,
        stopped_on_error: stats.stopped_on_error,
        elapsed_s: ended.saturating_duration_since(t0).as_secs_f64(),
        timeline,
        generator,
        histogram: &headline,
        segment,
        histograms,
    });
    report.slow_clients = slow_clients;
    if let Some(mix) = &config.mix {
        report.endpoints = mix
            .endpoints
            .iter()
            .zip(&sum.endpoints)
            .map(|(e, t)| report::EndpointReport::of(e, t, duration_s))
            .collect();
    }
    Ok(report)
}

/// Where the run starts: on the monotonic clock (`t0`) and on the wall
/// clock, and how late that is after `--start-at`.
struct StartClock {
    t0: Instant,
    t0_wall: SystemTime,
    start_at: Option<SystemTime>,
    late: Duration,
}

impl StartClock {
    /// Now, or `start_at` if it is still ahead (the workers wait for it);
    /// a `start_at` already past starts now, that much late.
    fn at(start_at: Option<SystemTime>) -> StartClock {
        let (now, now_wall) = (Instant::now(), SystemTime::now());
        let (t0, t0_wall, late) = match start_at.map(|at| at.duration_since(now_wall)) {
            Some(Ok(ahead)) => (now + ahead, now_wall + ahead, Duration::ZERO),
            Some(Err(behind)) => (now, now_wall, behind.duration()),
            None => (now, now_wall, Duration::ZERO),
        };
        StartClock {
            t0,
            t0_wall,
            start_at,
            late,
        }
    }

    /// The report's `segment` object (a run that is no segment is segment
    /// 0 of 1).
    fn info(&self, config: &LoadConfig, window_start: Instant) -> segment::SegmentInfo {
        let seg = config.segment.unwrap_or(segment::Segment::WHOLE);
        let run_start_unix_ms = segment::unix_ms(self.t0_wall);
        segment::SegmentInfo {
            index: seg.index,
            count: seg.count,
            start_at: self.start_at.map(segment::rfc3339_ms),
            late_ms: self.late.as_secs_f64() * 1000.0,
            run_start_unix_ms,
            window_start_unix_ms: run_start_unix_ms
                + window_start
                    .saturating_duration_since(self.t0)
                    .as_secs_f64()
                    * 1000.0,
        }
    }
}

/// How long before a start ahead an open loop opens its connections:
/// enough for a connect across a network, short enough that no server's
/// keep-alive timeout closes them idle (puma's is 20 s, nginx's 75 s).
const CONNECT_LEAD: Duration = Duration::from_secs(1);

/// Waits until `t0` (a `--start-at` ahead), or until the run is stopped.
fn wait_for_start(t0: Instant, interrupt: &AtomicBool) {
    loop {
        let left = t0.saturating_duration_since(Instant::now());
        if left.is_zero() || interrupt.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

/// Refuses a run that cannot be what was asked, before any load: an I/O
/// mode missing here, a CPU pin that
/// cannot be made (an unpinned generator would compete with the server it
/// measures).
fn check_runnable(config: &LoadConfig) -> std::io::Result<()> {
    if (config.pacing == Pacing::Schedule) != config.schedule.is_some() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a replay needs both Pacing::Schedule and a schedule",
        ));
    }
    if let Some(mix) = &config.mix {
        let why = if config.schedule.is_some() {
            Some("a replay and a mix are two sources of requests: give one")
        } else if !mix.is_rendered() {
            Some("the mix was not rendered for the target's host (Mix::render)")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why));
        }
    }
    if config.io == IoMode::Uring {
        if let Err(why) = io_uring_available() {
            return Err(std::io::Error::other(format!(
                "io_uring is not available here ({why}): use --io auto or --io epoll"
            )));
        }
    }
    cpus::check(&config.cpus, "--load-cpus")
        .map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why))?;
    if let Some(slow) = &config.slow {
        slow.check()
            .and_then(|()| slow::check_target(&config.endpoint))
            .map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why))?;
    }
    ensure_open_files(config)
        .map(|_| ())
        .map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidInput, why))
}

/// Descriptors a run beyond its connections may hold: each thread's epoll
/// or io_uring and timer, the standard streams, a sampler's /proc files
/// and a lab's server pipes.
const SPARE_FILES: u64 = 64;

/// Descriptors a run of `config` holds at most: one per connection, a few
/// per thread, and [`SPARE_FILES`].
pub fn open_files_needed(config: &LoadConfig) -> u64 {
    let slow = config.slow.as_ref().map_or(0, |s| s.count);
    open_files_for(config.connections + slow, config.threads)
}

/// Descriptors a run of `connections` on `threads` threads holds at most.
pub fn open_files_for(connections: usize, threads: usize) -> u64 {
    connections as u64 + 4 * threads.max(1) as u64 + SPARE_FILES
}

/// This process's open-files limit (`RLIMIT_NOFILE`) as (soft, hard).
pub fn open_files_limit() -> std::io::Result<(u64, u64)> {
    sys::open_files_limit()
}

/// New connections a run opens at once, at most (shared among its
/// threads): a server's listen backlog, capped by `net.core.somaxconn`,
/// should hold that many, or the kernel drops SYNs and the connects wait a
/// second for their retry.
pub const CONNECTS_AT_ONCE: usize = worker::RAMP_CONNECTS;

/// Raises this process's open-files soft limit to its hard limit when the
/// run needs more descriptors than the soft limit allows (ten thousand
/// connections need more than the usual 1024); when even the hard limit is
/// too low, says so and what to do, before any load.
pub fn ensure_open_files(config: &LoadConfig) -> Result<OpenFiles, String> {
    let needed = open_files_needed(config);
    sys::ensure_open_files(needed).map_err(|(soft, hard)| {
        format!(
            "-c {} needs about {needed} open files, but this process may open at most \
             {hard} (RLIMIT_NOFILE soft {soft}, hard {hard}): raise the hard limit \
             (`ulimit -Hn {needed}` as root, or LimitNOFILE={needed} in a systemd unit) \
             or use fewer connections",
            config.connections
        )
    })
}

/// Raises this process's open-files soft limit to its hard limit, for
/// commands that hold many sockets without knowing how many beforehand
/// (the test server, the mirror, a lab's front).
pub fn raise_open_files_limit() {
    if let Ok((_, hard)) = sys::open_files_limit() {
        // Asking for the hard limit itself cannot fail for want of room.
        let _ = sys::ensure_open_files(hard);
    }
}

type WorkerHandle = std::thread::JoinHandle<std::io::Result<(recorder::Tally, WorkerStats)>>;

/// Starts `threads` workers, each with its share of the connections, rate
/// and requests, pinned to its CPU if asked; each sends its seconds on
/// `tx` (dropped here with the last clone, so the collector ends when the
/// last worker does).
fn spawn_workers(
    config: &Arc<LoadConfig>,
    threads: usize,
    t0: Instant,
    window: &Arc<Window>,
    tx: mpsc::Sender<(usize, SecondReport)>,
) -> std::io::Result<Vec<WorkerHandle>> {
    let mut handles = Vec::with_capacity(threads);
    let seg = config.segment.unwrap_or(segment::Segment::WHOLE);
    // An open loop connects before a start ahead (`--start-at`), so its
    // first request leaves on time; a closed loop's first request goes
    // out as its connection opens, so it connects at the start.
    let lead = if config.pacing.is_open() {
        CONNECT_LEAD
    } else {
        Duration::ZERO
    };
    let ramp_left = Arc::new(std::sync::atomic::AtomicUsize::new(config.connections));
    for i in 0..threads {
        let lane = seg.lane(i, threads);
        let plan = ThreadPlan {
            config: Arc::clone(config),
            connections: share(config.connections as u64, threads, i) as usize,
            pacing: match config.pacing {
                Pacing::Closed => Pacing::Closed,
                Pacing::Rate(r) => Pacing::Rate(r / threads as f64),
                Pacing::Schedule => Pacing::Schedule,
            },
            requests: config.requests.map(|n| share(n, threads, i)),
            lane,
            // The rate given is this segment's; the whole schedule's is N
            // times it, and lane l's first request falls at l over that.
            phase: match config.pacing {
                Pacing::Rate(r) => {
                    Duration::from_secs_f64(lane.0 as f64 / (r * f64::from(seg.count)))
                }
                _ => Duration::ZERO,
            },
            ramp_left: Arc::clone(&ramp_left),
        };
        let window = Arc::clone(window);
        let rec = Recorder::new(
            i,
            t0,
            Arc::clone(&window),
            config.pacing.is_open(),
            config.mix.as_ref().map_or(0, |m| m.endpoints.len()),
            tx.clone(),
        );
        let cpu = (!config.cpus.is_empty()).then(|| config.cpus[i % config.cpus.len()]);
        let stop_all = Arc::clone(&config.interrupt);
        let handle = std::thread::Builder::new()
            .name(format!("rackbench-load-{i}"))
            .spawn(move || {
                if let Some(cpu) = cpu {
                    cpus::pin_current_thread(&[cpu]).map_err(|e| {
                        // The other threads stop too: the run is void.
                        stop_all.store(true, std::sync::atomic::Ordering::Relaxed);
                        std::io::Error::other(format!(
                            "cannot pin load thread {i} to CPU {cpu} ({e}): use --load-cpus \
                             with CPUs from {}, or leave it out",
                            cpus::format_list(&cpus::allowed())
                        ))
                    })?;
                }
                wait_for_start(t0.checked_sub(lead).unwrap_or(t0), &stop_all);
                worker::Worker::new(plan, rec, t0, window)?.run()
            })?;
        handles.push(handle);
    }
    Ok(handles)
}

/// Collects per-second reports until every worker has hung up: a second
/// becomes a timeline row (handed to `on_second`) once all `threads` have
/// sent it. With `steady_rule`, decides the window the moment the last
/// seconds' throughput agrees. The `observer` sees the start, every
/// second and the end.
fn collect_timeline(
    rx: mpsc::Receiver<(usize, SecondReport)>,
    threads: usize,
    window: &Window,
    steady_rule: bool,
    keep_histograms: bool,
    observer: Option<&dyn Observer>,
    mut on_second: impl FnMut(&TimelineRow, &Histogram<u64>),
) -> (Vec<TimelineRow>, Vec<segment::SecondHistogram>) {
    if let Some(o) = observer {
        o.started();
    }
    let mut pending: BTreeMap<u64, (usize, SecondReport)> = BTreeMap::new();
    let mut timeline = Vec::new();
    let mut seconds = Vec::new();
    let mut next_sec = 0u64;
    let mut rates: Vec<f64> = Vec::new();
    let mut emit = |sec_report: SecondReport, timeline: &mut Vec<TimelineRow>| {
        let row = TimelineRow::from_second(&sec_report, window.is_warmup_second(sec_report.sec));
        if keep_histograms {
            if let Some(ok_us) = crate::stats::histogram::encode(&sec_report.latency) {
                seconds.push(segment::SecondHistogram {
                    t_s: sec_report.sec,
                    ok_us,
                });
            }
        }
        // The steady-state rule: the warm-up ends the moment the last
        // seconds' throughput agrees; the workers see it at once.
        if steady_rule && window.start().is_none() && row.span_s >= 0.999 {
            rates.push(row.rps);
            if window::is_steady(&rates) {
                window.decide(Instant::now(), true);
            }
        }
        on_second(&row, &sec_report.latency);
        if let Some(o) = observer {
            o.second(&row, &sec_report.latency);
        }
        timeline.push(row);
        report::coarsen_timeline(timeline);
    };
    for (_thread, r) in rx {
        let sec = r.sec;
        match pending.get_mut(&sec) {
            Some((n, acc)) => {
                *n += 1;
                acc.ok += r.ok;
                acc.errors += r.errors;
                acc.error_kinds.add(&r.error_kinds);
                acc.status_5xx += r.status_5xx;
                acc.span = acc.span.max(r.span);
                acc.latency.add(&r.latency).expect("same histogram bounds");
            }
            None => {
                pending.insert(sec, (1, r));
            }
        }
        while pending.get(&next_sec).is_some_and(|(n, _)| *n == threads) {
            let (_, r) = pending.remove(&next_sec).expect("present");
            emit(r, &mut timeline);
            next_sec += 1;
        }
    }
    for (_, (_, r)) in std::mem::take(&mut pending) {
        // A sliver of a last second (the run ended just after a boundary)
        // would show as a wild per-second rate; its requests are in the
        // totals all the same.
        // Errors are never dropped that way.
        if r.span < Duration::from_millis(250) && r.ok + r.errors < 1000 && r.errors == 0 {
            if let Some(o) = observer {
                let row = TimelineRow::from_second(&r, window.is_warmup_second(r.sec));
                o.second(&row, &r.latency);
            }
            continue;
        }
        emit(r, &mut timeline);
    }
    if let Some(o) = observer {
        o.ended();
    }
    (timeline, seconds)
}

/// Every worker's tally and stats added up.
struct Sum {
    latency: Histogram<u64>,
    failed: Histogram<u64>,
    censored: Histogram<u64>,
    unfinished_ages: Histogram<u64>,
    /// Unfinished and timed-out ages together: the headline's fallback.
    unanswered: Histogram<u64>,
    uncorrected: Option<Histogram<u64>>,
    errors: ErrorCounts,
    status_codes: BTreeMap<u16, u64>,
    /// The earliest first failure of any thread.
    first_failure: Option<FirstFailure>,
    ok: u64,
    ok_in_window: u64,
    unfinished: u64,
    unsent: u64,
    stats: WorkerStats,
    /// The busiest thread's CPU over its wall time (0 to 1).
    busiest: f64,
    /// Under a mix, per endpoint; empty otherwise.
    endpoints: Vec<recorder::EndpointTally>,
}

impl Sum {
    fn of(results: &[(recorder::Tally, WorkerStats)]) -> Sum {
        let mut sum = Sum {
            latency: new_histogram(3),
            failed: new_histogram(3),
            censored: new_histogram(3),
            unfinished_ages: new_histogram(3),
            unanswered: new_histogram(3),
            uncorrected: None,
            errors: ErrorCounts::default(),
            status_codes: BTreeMap::new(),
            first_failure: None,
            ok: 0,
            ok_in_window: 0,
            unfinished: 0,
            unsent: 0,
            stats: WorkerStats::default(),
            busiest: 0.0,
            endpoints: Vec::new(),
        };
        for (tally, s) in results {
            sum.add_tally(tally);
            sum.stats.add(s);
            if !s.wall.is_zero() {
                sum.busiest = sum.busiest.max(s.cpu.as_secs_f64() / s.wall.as_secs_f64());
            }
        }
        sum
    }

    fn add_tally(&mut self, tally: &recorder::Tally) {
        self.ok += tally.ok;
        self.ok_in_window += tally.ok_in_window;
        self.unfinished += tally.unfinished;
        self.unsent += tally.unsent;
        self.errors.add(&tally.errors);
        for (sum, h) in [
            (&mut self.latency, &tally.latency),
            (&mut self.failed, &tally.latency_failed),
            (&mut self.censored, &tally.censored),
            (&mut self.unfinished_ages, &tally.unfinished_ages),
        ] {
            sum.add(h).expect("same histogram bounds");
        }
        for h in [&tally.unfinished_ages, &tally.timeout_ages] {
            self.unanswered.add(h).expect("same histogram bounds");
        }
        self.endpoints.resize_with(
            tally.endpoints.len().max(self.endpoints.len()),
            Default::default,
        );
        for (sum, t) in self.endpoints.iter_mut().zip(&tally.endpoints) {
            sum.add(t);
        }
        for (code, n) in &tally.status_codes {
            *self.status_codes.entry(*code).or_default() += n;
        }
        if let Some(f) = &tally.first_failure {
            if self.first_failure.as_ref().is_none_or(|e| f.at_s < e.at_s) {
                self.first_failure = Some(f.clone());
            }
        }
        if let Some(h) = &tally.latency_uncorrected {
            self.uncorrected
                .get_or_insert_with(|| new_histogram(3))
                .add(h)
                .expect("same histogram bounds");
        }
    }
}

impl Sum {
    /// The histograms a merge needs, encoded (see `segment::Histograms`).
    fn histograms(&self, seconds: Vec<segment::SecondHistogram>) -> segment::Histograms {
        use crate::stats::histogram::encode;
        segment::Histograms {
            ok: encode(&self.latency),
            censored: encode(&self.censored),
            unanswered: encode(&self.unanswered),
            failed: encode(&self.failed),
            unfinished: encode(&self.unfinished_ages),
            uncorrected: self.uncorrected.as_ref().and_then(encode),
            seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_differ_by_at_most_one() {
        for (total, parts) in [(10, 3), (0, 2), (7, 7), (5, 8), (1_000_001, 2)] {
            let s: Vec<u64> = (0..parts).map(|i| share(total, parts, i)).collect();
            assert_eq!(s.iter().sum::<u64>(), total);
            assert!(s.iter().max().unwrap() - s.iter().min().unwrap() <= 1);
        }
    }

    /// What an observer saw: the start, (ok, errors, span) a second, the end.
    #[derive(Debug, Default)]
    struct Saw {
        started: bool,
        seconds: Vec<(u64, u64, f64)>,
        ended: bool,
    }

    #[derive(Debug, Default)]
    struct Seen(std::sync::Mutex<Saw>);

    impl Observer for Seen {
        fn started(&self) {
            self.0.lock().unwrap().started = true;
        }
        fn second(&self, row: &TimelineRow, _: &Histogram<u64>) {
            (self.0.lock().unwrap().seconds).push((row.ok, row.errors, row.span_s));
        }
        fn ended(&self) {
            self.0.lock().unwrap().ended = true;
        }
    }

    fn second(sec: u64, span_ms: u64, ok: u64, reset: u64, status: u64) -> SecondReport {
        SecondReport {
            sec,
            span: Duration::from_millis(span_ms),
            ok,
            errors: reset + status,
            latency: new_histogram(2),
            error_kinds: ErrorCounts {
                reset,
                status,
                ..ErrorCounts::default()
            },
            status_5xx: status,
        }
    }

    #[test]
    fn a_rows_error_kinds_are_every_threads_and_the_observer_sees_every_second() {
        let (tx, rx) = mpsc::channel();
        tx.send((0, second(0, 1000, 10, 1, 0))).unwrap();
        tx.send((1, second(0, 1000, 20, 0, 2))).unwrap();
        // A sliver of a last second: left out of the timeline, not the
        // observer's count.
        tx.send((0, second(1, 100, 3, 0, 0))).unwrap();
        drop(tx);
        let window = Window::fixed(Instant::now(), Duration::ZERO, None);
        let seen = Seen::default();
        let (timeline, _) = collect_timeline(rx, 2, &window, false, false, Some(&seen), |_, _| {});
        assert_eq!(timeline.len(), 1);
        let kinds = timeline[0].error_kinds.unwrap();
        assert_eq!((kinds.reset, kinds.status, kinds.total()), (1, 2, 3));
        assert_eq!(timeline[0].status_5xx, 2);
        let saw = seen.0.lock().unwrap();
        assert!(saw.started && saw.ended);
        assert_eq!(saw.seconds[..], [(30, 3, 1.0), (3, 0, 0.1)]);
    }

    #[test]
    fn expect_status_defaults_to_2xx_and_3xx() {
        let d = ExpectStatus::Success;
        assert!(
            d.matches(200)
                && d.matches(302)
                && !d.matches(404)
                && !d.matches(500)
                && !d.matches(101)
        );
        let c = ExpectStatus::Codes(vec![404]);
        assert!(c.matches(404) && !c.matches(200));
    }
}
