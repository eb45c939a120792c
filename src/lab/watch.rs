//! What watches a trial's processes while the load runs: the samplers of
//! the server's tree (and nginx's), the accept queue of the server's own
//! listening sockets, the server's own stats endpoint, and a watcher that
//! marks the counted window, passes Ctrl-C on and ends the load if a
//! server process dies.
//!
//! Each polling thread is one [`Poller`]: a closure run every interval on
//! a thread of its own until stopped, handing back what it collected.
//! Starts and stops no process, and drives no load.

use super::spec::TrialSpec;
use super::start::Servers;
use crate::load::window::Window;
use crate::load::{self, Endpoint};
use crate::sampler::{Disturbance, DisturbanceWatch, Exit, ExitWatch, Sampler, SamplerReport};
use crate::server::spec::ServerSpec;
use crate::server::supervisor;
use crate::telemetry::{AcceptQueue, AcceptQueueRecorder};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Runs a closure every `interval` on a thread of its own until
/// [`Poller::finish`], and hands back what it collected. The closure adds
/// to the collection (a `Vec`, or any state it starts with) and may end
/// the polling early (`ControlFlow::Break`).
pub(super) struct Poller<S> {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<S>,
}

impl<T: Send + 'static> Poller<Vec<T>> {
    pub(super) fn start(
        interval: Duration,
        poll: impl FnMut(&mut Vec<T>) -> ControlFlow<()> + Send + 'static,
    ) -> Poller<Vec<T>> {
        Poller::start_with(interval, Vec::new(), poll)
    }
}

impl<S: Send + Default + 'static> Poller<S> {
    /// Like [`Poller::start`], collecting into `collected`.
    pub(super) fn start_with(
        interval: Duration,
        mut collected: S,
        mut poll: impl FnMut(&mut S) -> ControlFlow<()> + Send + 'static,
    ) -> Poller<S> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                if poll(&mut collected).is_break() {
                    break;
                }
                std::thread::sleep(interval);
            }
            collected
        });
        Poller { stop, handle }
    }

    /// Stops the polling (after the current sleep) and returns what was
    /// collected; nothing if the closure panicked.
    pub(super) fn finish(self) -> S {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// Readings of one or more figures (the accept queue; each stats field)
/// as a poller takes them, bounded however long the load runs: kept one
/// by one until the counted window opens (the warm-up), then folded at
/// once, with every later reading, into a recorder per figure timed from
/// the window's start (per-second rows, at most an hour's: see
/// `AcceptQueueRecorder`). They were all kept until the load ended, 24
/// bytes a reading ten times a second for the queue: over a soak of
/// hours, rackbench's own memory grew with time.
#[derive(Default)]
pub(super) struct Readings {
    /// Where the load puts its counted window.
    window: Arc<OnceLock<Arc<Window>>>,
    figures: usize,
    before: Vec<(Instant, Vec<Option<u32>>)>,
    since: Option<(Instant, Vec<AcceptQueueRecorder>)>,
}

impl Readings {
    fn new(window: Arc<OnceLock<Arc<Window>>>, figures: usize) -> Readings {
        Readings {
            window,
            figures,
            ..Readings::default()
        }
    }

    /// One reading of every figure (None: not read this time).
    fn push(&mut self, at: Instant, values: Vec<Option<u32>>) {
        if self.since.is_none() {
            if let Some(origin) = self.window.get().and_then(|w| w.start()) {
                self.fold_from(origin);
            }
        }
        match &mut self.since {
            Some((origin, recs)) => record(recs, *origin, at, &values),
            None => self.before.push((at, values)),
        }
    }

    /// Folds the kept readings into recorders timed from `origin`.
    fn fold_from(&mut self, origin: Instant) {
        let mut recs = vec![AcceptQueueRecorder::new(); self.figures];
        for (at, values) in self.before.drain(..) {
            record(&mut recs, origin, at, &values);
        }
        self.before = Vec::new();
        self.since = Some((origin, recs));
    }

    /// Per figure, what was read from the window's start on (from the
    /// first reading when the load never opened its window); None for a
    /// figure with no reading there.
    fn finish(mut self) -> Vec<Option<AcceptQueue>> {
        if self.since.is_none() {
            let origin = (self.window.get().and_then(|w| w.start()))
                .or_else(|| self.before.first().map(|r| r.0));
            match origin {
                Some(o) => self.fold_from(o),
                None => return vec![None; self.figures],
            }
        }
        let (_, recs) = self.since.expect("folded");
        recs.iter()
            .map(|r| Some(r.summary()).filter(|q| q.samples > 0))
            .collect()
    }
}

/// Each figure read into its recorder, at its time from `origin` (none
/// before it).
fn record(recs: &mut [AcceptQueueRecorder], origin: Instant, at: Instant, values: &[Option<u32>]) {
    let Some(t) = at.checked_duration_since(origin) else {
        return;
    };
    for (r, v) in recs.iter_mut().zip(values) {
        if let Some(v) = v {
            r.record(t.as_secs_f64(), *v);
        }
    }
}

/// How often the watcher looks: well within one sample interval, so the
/// samplers' window starts where the load's does.
const WATCH_INTERVAL: Duration = Duration::from_millis(20);

/// How often the accept queue is read: often enough to see a queue that
/// fills and drains within a second, and cheap (one netlink read per
/// instance).
const QUEUE_INTERVAL: Duration = Duration::from_millis(100);

/// How often the server's own stats endpoint is read.
const STATS_INTERVAL: Duration = Duration::from_millis(250);

/// Every watcher of one trial, started before the load.
pub(super) struct Watchers {
    sampler: Arc<Sampler>,
    nginx_sampler: Option<Arc<Sampler>>,
    database_sampler: Option<Arc<Sampler>>,
    queue: Poller<Readings>,
    stats: Option<StatsWatch>,
    /// The PID of a server process that died, if one did.
    watcher: Poller<Vec<u32>>,
    /// Where the load puts its counted window once it knows it.
    window: Arc<OnceLock<Arc<Window>>>,
    disturbance: Arc<OnceLock<DisturbanceWatch>>,
    /// The main processes the watcher follows (see [`Watchers::masters`]).
    masters: Arc<Mutex<Vec<u32>>>,
    /// The kernel's exit events, for why a worker died (None where the
    /// kernel gives none: not root).
    exits: Option<ExitWatch>,
}

/// What the watchers saw, once the load is over.
pub(super) struct Seen {
    pub(super) samples: SamplerReport,
    pub(super) nginx_samples: Option<SamplerReport>,
    /// The database server's tree (PostgreSQL), apart from the server's.
    pub(super) database_samples: Option<SamplerReport>,
    pub(super) accept_queue: Option<AcceptQueue>,
    pub(super) server_stats: Option<BTreeMap<String, AcceptQueue>>,
    pub(super) disturbance: Option<Disturbance>,
    pub(super) server_died: bool,
    /// The counted window's start, when the load opened it.
    pub(super) window_start: Option<Instant>,
    /// The exits of rackbench's descendants the kernel reported.
    pub(super) exits: Vec<Exit>,
}

impl Watchers {
    /// Starts sampling the server (every instance's tree) and nginx, and
    /// the watcher, which sets `load_interrupt` on Ctrl-C (the trial's
    /// flag) or when a server process dies.
    pub(super) fn start(
        spec: &TrialSpec,
        servers: &Servers,
        load_cpus: &[usize],
        load_interrupt: Arc<AtomicBool>,
    ) -> Watchers {
        // Listening before the first sample, so no worker's exit is missed.
        // Not in a soak: with the kernel's exit events subscribed, a soak of
        // an app keeping nothing saw a puma worker's USS grow 120-630
        // MiB/hour where it grows under 30 without (tests/soak.rs, five
        // runs each way; why is not known yet). A soak's worker deaths are
        // still counted, their cause then unknown.
        let exits = if spec.soak.is_some() {
            None
        } else {
            ExitWatch::start()
        };
        let sampler = Arc::new(
            Sampler::start_soak(
                servers.server_scope(),
                spec.sample_interval,
                spec.soak.map(|_| super::soak::STEP),
            )
            .live(),
        );
        let window: Arc<OnceLock<Arc<Window>>> = Arc::new(OnceLock::new());
        let queue = watch_queue(servers.started.endpoints.clone(), Arc::clone(&window));
        let stats = StatsWatch::start(&servers.started.stats, &spec.server, &window);
        let nginx_sampler = servers
            .nginx
            .as_ref()
            .map(|n| Arc::new(Sampler::start(n.pid, spec.sample_interval)));
        let database_sampler = servers
            .database_pid
            .map(|pid| Arc::new(Sampler::start(pid, spec.sample_interval)));
        let disturbance = Arc::new(OnceLock::new());
        let mark = WindowMark {
            window: Arc::clone(&window),
            samplers: std::iter::once(Arc::clone(&sampler))
                .chain(nginx_sampler.clone())
                .chain(database_sampler.clone())
                .collect(),
            marked: false,
            disturbance: (
                measured_cpus(&spec.server_cpus, load_cpus),
                Arc::clone(&disturbance),
            ),
        };
        let masters = Arc::new(Mutex::new(servers.started.pids()));
        let watcher = watch_trial(
            mark,
            Arc::clone(&masters),
            load_interrupt,
            Arc::clone(&spec.interrupt),
        );
        Watchers {
            sampler,
            nginx_sampler,
            database_sampler,
            queue,
            stats,
            watcher,
            window,
            disturbance,
            masters,
            exits,
        }
    }

    /// The server's main processes the watcher follows: a restart that
    /// replaces one (unicorn's re-exec) puts the new one in its place
    /// before the old one exits.
    pub(super) fn masters(&self) -> Arc<Mutex<Vec<u32>>> {
        Arc::clone(&self.masters)
    }

    /// Where the load hands over its counted window
    /// (`load::run_observed`'s `on_window`).
    pub(super) fn window(&self) -> Arc<OnceLock<Arc<Window>>> {
        Arc::clone(&self.window)
    }

    /// Stops every watcher (the load has ended) and returns what each saw
    /// over the counted window.
    pub(super) fn finish(self) -> Seen {
        let server_died = !self.watcher.finish().is_empty();
        let disturbance = Arc::into_inner(self.disturbance)
            .and_then(OnceLock::into_inner)
            .and_then(DisturbanceWatch::finish);
        let samples = Arc::try_unwrap(self.sampler)
            .ok()
            .expect("watcher joined")
            .stop();
        let nginx_samples = self
            .nginx_sampler
            .map(|n| Arc::try_unwrap(n).ok().expect("watcher joined").stop());
        let database_samples = self
            .database_sampler
            .map(|n| Arc::try_unwrap(n).ok().expect("watcher joined").stop());
        let window_start = self.window.get().and_then(|w| w.start());
        Seen {
            samples,
            nginx_samples,
            database_samples,
            accept_queue: self.queue.finish().finish().pop().flatten(),
            server_stats: self.stats.and_then(StatsWatch::finish),
            disturbance,
            server_died,
            window_start,
            exits: self.exits.map(ExitWatch::finish).unwrap_or_default(),
        }
    }
}

/// The watcher: every 20 ms marks the counted window for the samplers,
/// passes Ctrl-C (`user_stop`) on to the load, and ends the load when a
/// server process dies, collecting its PID. The processes watched are
/// read each time: a restart may replace one.
fn watch_trial(
    mut mark: WindowMark,
    pids: Arc<Mutex<Vec<u32>>>,
    load_interrupt: Arc<AtomicBool>,
    user_stop: Arc<AtomicBool>,
) -> Poller<Vec<u32>> {
    Poller::start(WATCH_INTERVAL, move |died| {
        mark.poll(Instant::now());
        if user_stop.load(Ordering::Relaxed) {
            load_interrupt.store(true, Ordering::Relaxed);
        }
        let dead = pids
            .lock()
            .expect("not poisoned")
            .iter()
            .copied()
            .find(|&p| !supervisor::is_alive(p));
        match dead {
            Some(pid) => {
                died.push(pid);
                load_interrupt.store(true, Ordering::Relaxed);
                ControlFlow::Break(())
            }
            None => ControlFlow::Continue(()),
        }
    })
}

/// Samples the accept queue of the server's own listening sockets (not
/// nginx's) from the servers' start until the load ends, summed over the
/// instances: the connections waiting for any copy of the server, which is
/// what the load feels. Timed from the counted window's start (from the
/// first sample when the load never opened one).
fn watch_queue(endpoints: Vec<Endpoint>, window: Arc<OnceLock<Arc<Window>>>) -> Poller<Readings> {
    Poller::start_with(QUEUE_INTERVAL, Readings::new(window, 1), move |readings| {
        let mut sum = None;
        for e in &endpoints {
            match crate::telemetry::accept_queue_len(e) {
                Ok(Some(n)) => *sum.get_or_insert(0) += n,
                Ok(None) => {}
                // Unreadable here (netlink refused): the record has no
                // accept queue rather than a wrong one.
                Err(_) => {
                    *readings = Readings::new(Arc::new(OnceLock::new()), 1);
                    return ControlFlow::Break(());
                }
            }
        }
        if let Some(n) = sum {
            if let Some(board) = crate::live::board() {
                board.accept_queue(n);
            }
            readings.push(Instant::now(), vec![Some(n)]);
        }
        ControlFlow::Continue(())
    })
}

/// Reads the server's own stats endpoint(s) four times a second until the
/// load ends (see `server::spec::StatsSource`): per field, the sum over
/// instances (None when no instance gave it).
struct StatsWatch {
    fields: Vec<String>,
    poller: Poller<Readings>,
}

impl StatsWatch {
    fn start(
        endpoints: &[(Endpoint, Vec<u8>)],
        server: &ServerSpec,
        window: &Arc<OnceLock<Arc<Window>>>,
    ) -> Option<StatsWatch> {
        let fields = server.stats.as_ref()?.fields.clone();
        if endpoints.is_empty() {
            return None;
        }
        let endpoints = endpoints.to_vec();
        let names = fields.clone();
        let readings = Readings::new(Arc::clone(window), fields.len());
        let poller = Poller::start_with(STATS_INTERVAL, readings, move |readings| {
            let sums = read_stats(&endpoints, &names)
                .into_iter()
                .map(|v| v.map(|v| v.max(0.0).round() as u32))
                .collect();
            readings.push(Instant::now(), sums);
            ControlFlow::Continue(())
        });
        Some(StatsWatch { fields, poller })
    }

    /// Per field, what was read from the window's start on; None when
    /// nothing was.
    fn finish(self) -> Option<BTreeMap<String, AcceptQueue>> {
        let out: BTreeMap<String, AcceptQueue> = self
            .fields
            .into_iter()
            .zip(self.poller.finish().finish())
            .filter_map(|(name, q)| Some((name, q?)))
            .collect();
        (!out.is_empty()).then_some(out)
    }
}

/// One reading of every instance's stats endpoint: per field in `names`,
/// the sum over the instances that answered with it.
fn read_stats(endpoints: &[(Endpoint, Vec<u8>)], names: &[String]) -> Vec<Option<f64>> {
    let mut sums: Vec<Option<f64>> = vec![None; names.len()];
    for (endpoint, request) in endpoints {
        let Ok(answer) = crate::server::probe::send(endpoint, request, Duration::from_millis(500))
        else {
            continue;
        };
        let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&answer.body) else {
            continue;
        };
        for (sum, name) in sums.iter_mut().zip(names) {
            if let Some(v) = sum_field(&doc, name) {
                *sum = Some(sum.unwrap_or(0.0) + v);
            }
        }
    }
    sums
}

/// The sum of every number under key `name` anywhere in `doc`: puma's
/// single mode has `backlog` at the top, cluster mode once per worker
/// under `worker_status[].last_status`.
fn sum_field(doc: &serde_json::Value, name: &str) -> Option<f64> {
    use serde_json::Value;
    match doc {
        Value::Object(map) => {
            let mut total = map.get(name).and_then(Value::as_f64);
            for (k, v) in map {
                if k != name {
                    if let Some(x) = sum_field(v, name) {
                        total = Some(total.unwrap_or(0.0) + x);
                    }
                }
            }
            total
        }
        Value::Array(items) => items
            .iter()
            .filter_map(|v| sum_field(v, name))
            .fold(None, |acc, x| Some(acc.unwrap_or(0.0) + x)),
        _ => None,
    }
}

/// The CPUs the disturbance record measures: the server's pin set and the
/// generator's, or every CPU this process may use when either runs
/// unpinned (it may then run anywhere).
fn measured_cpus(server_cpus: &[usize], load_cpus: &[usize]) -> Vec<usize> {
    if server_cpus.is_empty() || load_cpus.is_empty() {
        return load::cpus::allowed();
    }
    let mut cpus: Vec<usize> = server_cpus.iter().chain(load_cpus).copied().collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// Marks the samplers the moment the load's counted window starts, so
/// server CPU per request and memory peaks cover the same interval as the
/// load's figures.
///
/// The start is the load's to decide: the warm-up's end, or, under
/// `--warmup-until-steady`, the moment throughput settled, known only
/// mid-run. A clock of the trial's own (start + warm-up ceiling) measured
/// the server over the wrong interval whenever the warm-up ended early.
/// Polled every 20 ms, it marks well within one sample interval.
struct WindowMark {
    window: Arc<OnceLock<Arc<Window>>>,
    samplers: Vec<Arc<Sampler>>,
    marked: bool,
    /// The CPUs the disturbance record measures, and where its start
    /// readings go, taken right after the samplers' marks.
    disturbance: (Vec<usize>, Arc<OnceLock<DisturbanceWatch>>),
}

impl WindowMark {
    fn poll(&mut self, now: Instant) {
        if self.marked {
            return;
        }
        if self.window.get().is_some_and(|w| w.opened_by(now)) {
            for s in &self.samplers {
                s.mark();
            }
            self.marked = true;
            let (cpus, watch) = &self.disturbance;
            if let Some(w) = DisturbanceWatch::start(cpus.clone(), std::process::id()) {
                let _ = watch.set(w);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poller_collects_until_finished_and_a_break_ends_it_early() {
        let counting = Poller::start(Duration::from_millis(5), |seen: &mut Vec<u32>| {
            seen.push(seen.len() as u32);
            ControlFlow::Continue(())
        });
        std::thread::sleep(Duration::from_millis(60));
        let seen = counting.finish();
        assert!(seen.len() >= 2, "{seen:?}");
        assert_eq!(seen, (0..seen.len() as u32).collect::<Vec<_>>());

        let once = Poller::start(Duration::from_millis(5), |seen: &mut Vec<u32>| {
            seen.push(7);
            ControlFlow::Break(())
        });
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(once.finish(), vec![7], "polled after its break");
    }

    /// The accept queue is timed from the counted window's start, or from
    /// the first sample when the load never opened its window; readings
    /// taken once the window is open are folded at once (nothing kept per
    /// reading over a soak).
    #[test]
    fn queue_samples_before_the_window_are_left_out() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let samples = [(at(0), 9), (at(1500), 2), (at(2600), 4)];
        let opened = |start_ms: u64| {
            let cell = Arc::new(OnceLock::new());
            let _ = cell.set(Arc::new(Window::fixed(
                t0,
                Duration::from_millis(start_ms),
                None,
            )));
            cell
        };
        let read = |window: Arc<OnceLock<Arc<Window>>>, samples: &[(Instant, u32)]| {
            let mut r = Readings::new(window, 1);
            for (t, n) in samples {
                r.push(*t, vec![Some(*n)]);
            }
            (r.before.len(), r.finish().pop().flatten())
        };
        let (kept, q) = read(opened(1000), &samples);
        assert_eq!(kept, 0, "readings in the window are folded, not kept");
        let q = q.unwrap();
        assert_eq!((q.max, q.samples), (4, 2));
        let secs: Vec<u64> = q.timeline.iter().map(|s| s.t_s).collect();
        assert_eq!(secs, vec![0, 1]);
        let (kept, all) = read(Arc::new(OnceLock::new()), &samples);
        assert_eq!(kept, 3, "no window yet: kept until it opens");
        assert_eq!(all.map(|q| (q.max, q.samples)), Some((9, 3)));
        assert!(read(Arc::new(OnceLock::new()), &[]).1.is_none());
        assert!(read(opened(10), &[(at(0), 1)]).1.is_none());
    }

    /// puma's stats: single mode at the top, cluster mode per worker.
    #[test]
    fn a_stats_field_is_summed_wherever_it_occurs() {
        let single = serde_json::json!({"backlog": 3, "running": 5});
        let cluster = serde_json::json!({"workers": 2, "worker_status": [
            {"pid": 1, "last_status": {"backlog": 2, "running": 5}},
            {"pid": 2, "last_status": {"backlog": 4, "running": 5}}
        ]});
        assert_eq!(sum_field(&single, "backlog"), Some(3.0));
        assert_eq!(sum_field(&cluster, "backlog"), Some(6.0));
        assert_eq!(sum_field(&cluster, "running"), Some(10.0));
        assert_eq!(sum_field(&cluster, "nope"), None);
        assert_eq!(sum_field(&serde_json::json!([]), "backlog"), None);
    }

    /// Regression: under --warmup-until-steady the sampler was marked at
    /// the warm-up ceiling, not where the counted window began.
    #[test]
    fn the_sampler_window_starts_where_the_load_window_starts() {
        let t0 = Instant::now();
        let w = Arc::new(Window::until_steady(
            t0,
            Duration::from_secs(60),
            Some(Duration::from_secs(5)),
        ));
        let cell = Arc::new(OnceLock::new());
        let sampler = Arc::new(Sampler::start(
            std::process::id(),
            crate::sampler::MIN_INTERVAL,
        ));
        let watch = Arc::new(OnceLock::new());
        let mut mark = WindowMark {
            window: Arc::clone(&cell),
            samplers: vec![Arc::clone(&sampler)],
            marked: false,
            disturbance: (Vec::new(), Arc::clone(&watch)),
        };
        mark.poll(Instant::now());
        assert!(sampler.marked_at().is_none(), "no window yet");
        let _ = cell.set(Arc::clone(&w));
        mark.poll(Instant::now());
        assert!(sampler.marked_at().is_none(), "the window is not decided");
        assert!(
            watch.get().is_none(),
            "no disturbance reading before the window"
        );
        std::thread::sleep(Duration::from_millis(300));
        // Throughput settled 300 ms in, far before the 60 s ceiling.
        w.decide(Instant::now(), true);
        mark.poll(Instant::now());
        let start = w.start().expect("decided");
        let marked = sampler.marked_at().expect("marked at the window's start");
        assert!(
            marked >= start && marked - start < crate::sampler::MIN_INTERVAL,
            "sampler window {:?} after the load window",
            marked - start
        );
        let watched = watch
            .get()
            .expect("the disturbance's start reading")
            .started;
        assert!(
            watched >= marked && watched - marked < crate::sampler::MIN_INTERVAL,
            "disturbance window {:?} after the sampler's",
            watched - marked
        );
        drop(mark);
        let r = Arc::try_unwrap(sampler).ok().expect("one owner").stop();
        let at = r.window_start_ms.expect("window recorded");
        assert!((250..2000).contains(&at), "{at} ms");
    }
}
