//! What one load run is told: the request, the connections and threads,
//! the pacing, the stop rule, what counts as a good answer. Plain data,
//! built by the CLI or the lab; the engine's files read it and it reads
//! none of them but the types it holds (an endpoint, a schedule, a
//! segment). A schedule's set-up of a config is here too, beside the
//! fields it sets, so schedule/ need not know the config.

use super::mix::Mix;
use super::report::TimelineRow;
use super::response::ExpectStatus;
use super::schedule::Schedule;
use super::segment::Segment;
use super::slow::SlowClients;
use super::target::{self, Endpoint, RequestSpec, Url};
use hdrhistogram::Histogram;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

/// Sees a run's seconds as the collector completes them: the live
/// endpoint's board (`live::Board`), which sits above the engine and so
/// comes in as a trait object. Every second is handed over, the sliver of
/// a last second the timeline leaves out included, so what an observer
/// adds up is every request that ended, warm-up included.
pub trait Observer: std::fmt::Debug + Send + Sync {
    /// A run is starting (its counters can show 0 from here).
    fn started(&self);
    /// One second of the run, all threads added, and its OK latencies.
    fn second(&self, row: &TimelineRow, ok_latency: &Histogram<u64>);
    /// The run has ended (every second was handed over).
    fn ended(&self);
}

/// The process's observer, set once by the command line before any work
/// (`--metrics-listen`): the one door through which every run of the
/// engine (load, trial, a plan's trials, sweep, ab, breakpoint, fit,
/// replay) feeds the live endpoint, each config taking it when it is made.
static OBSERVER: OnceLock<Arc<dyn Observer>> = OnceLock::new();

/// Makes `observer` every later config's (a second call is ignored: one
/// process serves one endpoint).
pub fn observe_all(observer: Arc<dyn Observer>) {
    let _ = OBSERVER.set(observer);
}

/// The process's observer, if one was set.
pub fn installed_observer() -> Option<Arc<dyn Observer>> {
    OBSERVER.get().cloned()
}

/// How requests are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// Closed loop: each connection sends its next request as soon as the
    /// last one is answered.
    Closed,
    /// Open loop: this many requests per second on a fixed schedule.
    Rate(f64),
    /// Open loop: the requests and due times of `LoadConfig::schedule`
    /// (a replay), each with its own bytes.
    Schedule,
}

impl Pacing {
    /// Requests fall due on a schedule, whatever the server does.
    pub fn is_open(self) -> bool {
        !matches!(self, Pacing::Closed)
    }
}

/// Everything one load run needs. Built by the CLI or by the lab.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// As given by the user, for the report.
    pub url: String,
    pub endpoint: Endpoint,
    /// The rendered request bytes.
    pub request: Vec<u8>,
    /// The request is HEAD: responses carry no body.
    pub head_request: bool,
    pub connections: usize,
    pub threads: usize,
    pub pacing: Pacing,
    /// Open loop: how late a request may be sent so that the requests due
    /// within one such span go out together, on one wake-up. Zero sends
    /// each at its due time. Latency still counts from the due time, so
    /// the lateness is in it; the server sees bursts one slack apart.
    pub slack: Duration,
    /// Counted window length; None with `requests` means "until done".
    pub duration: Option<Duration>,
    /// Counted requests to issue, across all threads.
    pub requests: Option<u64>,
    /// Load applied before the counted window, shown in the timeline only.
    /// With `warmup_until_steady`, the longest the warm-up may last.
    pub warmup: Duration,
    /// End the warm-up as soon as the per-second throughput is steady
    /// (three seconds within 5%), at the latest after `warmup`.
    pub warmup_until_steady: bool,
    pub pipeline: usize,
    pub keep_alive: bool,
    pub timeout: Duration,
    pub expect_status: ExpectStatus,
    /// Substring the body must contain; empty for no check.
    pub expect_body: Vec<u8>,
    /// Pin worker thread i to `cpus[i % len]`; empty for no pinning.
    pub cpus: Vec<usize>,
    /// Set to stop the run early (Ctrl-C); what was measured is kept.
    pub interrupt: Arc<AtomicBool>,
    /// End the run at its first error, warm-up included (a break-point
    /// step that fails needs no more load to say so).
    pub stop_on_error: bool,
    /// What the connection loop waits on.
    pub io: IoMode,
    /// The replayed requests under [`Pacing::Schedule`]; None otherwise.
    pub schedule: Option<Arc<Schedule>>,
    /// This run is one segment of a load several generators make together
    /// (see `segment.rs`): `connections`, `requests` and the `--rate` above
    /// are already its share; the segment sets the phase of its schedule.
    pub segment: Option<Segment>,
    /// Start the run (warm-up first) at this wall-clock instant rather
    /// than at once; a start already past begins at once and says how late.
    pub start_at: Option<SystemTime>,
    /// Embed what an exact merge needs in the report (`segment`,
    /// `histograms`); set with a segment or a start time, or when the
    /// histograms are wanted for their own sake (`--hist-out`).
    pub keep_histograms: bool,
    /// Slow clients beside the load (`slow.rs`), on the same endpoint;
    /// None for none.
    pub slow: Option<SlowClients>,
    /// A request mix (`--mix`, `mix.rs`), rendered for the target's host:
    /// each request is drawn from it and judged by its endpoint's
    /// expectations, and `request`, `expect_status` and `expect_body`
    /// above go unused by the loop. None sends `request`.
    pub mix: Option<Arc<Mix>>,
    /// Who sees the seconds as they pass (the live endpoint); the
    /// process's [`installed_observer`] when the config is made.
    pub observer: Option<Arc<dyn Observer>>,
}

/// The kernel interface a connection loop waits on (see `uring/`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IoMode {
    /// io_uring where the kernel has what it needs (Linux 6.1+, not
    /// disabled), epoll otherwise.
    #[default]
    Auto,
    Epoll,
    /// io_uring, or an error where it is unavailable.
    Uring,
}

impl LoadConfig {
    /// A closed-loop GET with the defaults of `rackbench load`.
    pub fn get(url: &str) -> Result<LoadConfig, target::TargetError> {
        let parsed = Url::parse(url)?;
        let endpoint = Endpoint::Tcp(parsed.resolve()?);
        let request = target::render_request(&parsed, &RequestSpec::default())?;
        Ok(LoadConfig {
            url: url.to_string(),
            endpoint,
            request,
            head_request: false,
            connections: 10,
            threads: 1,
            pacing: Pacing::Closed,
            slack: Duration::ZERO,
            duration: Some(Duration::from_secs(10)),
            requests: None,
            warmup: Duration::ZERO,
            warmup_until_steady: false,
            pipeline: 1,
            keep_alive: true,
            timeout: Duration::from_secs(10),
            expect_status: ExpectStatus::Success,
            expect_body: Vec::new(),
            cpus: Vec::new(),
            interrupt: Arc::new(AtomicBool::new(false)),
            stop_on_error: false,
            io: IoMode::Auto,
            schedule: None,
            segment: None,
            start_at: None,
            keep_histograms: false,
            slow: None,
            mix: None,
            observer: installed_observer(),
        })
    }
}

impl Schedule {
    /// Makes `cfg` replay this schedule: once (every request once, the run
    /// ends when the last is answered), or with `--loop` until `cfg`'s
    /// duration ends. Any status counts as an answer: a replay's answers
    /// are whatever the app returns (a caller may narrow it afterwards).
    pub fn drive(self: Arc<Self>, cfg: &mut LoadConfig) {
        cfg.pacing = Pacing::Schedule;
        if !self.repeat {
            cfg.requests = Some(self.len() as u64);
            cfg.duration = None;
        }
        cfg.warmup = Duration::ZERO;
        cfg.warmup_until_steady = false;
        cfg.expect_status = ExpectStatus::Codes((100..600).collect());
        cfg.head_request = false;
        cfg.io = IoMode::Epoll;
        cfg.schedule = Some(self);
    }
}
