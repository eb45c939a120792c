//! The board: what the live endpoint shows, fed while the work goes on
//! (the engine's seconds, the lab's trial, its samplers, the mirror's
//! shadows) and read whole, under its one lock, by each request.

use super::snapshot::{
    bucket_of, Counts, LatencyNow, Phase, Proxy, Second, Series, ServerNow, Shadow, Snapshot,
    TelemetryNow, TrialLabels,
};
use crate::load::recorder::new_histogram;
use crate::load::report::TimelineRow;
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// The most seconds `/live.json` carries: five minutes.
pub const SECONDS_KEPT: usize = 300;

/// The live state of this process's work, shared by whoever measures and
/// the endpoint that shows it.
#[derive(Debug)]
pub struct Board {
    started: Instant,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    command: String,
    seq: u64,
    done: bool,
    labels: Option<TrialLabels>,
    phase: Phase,
    trials_done: u64,
    trials_total: Option<u64>,
    series: BTreeMap<Option<TrialLabels>, Series>,
    /// The current trial's counts since it began.
    trial: Counts,
    /// The current trial's OK latencies (every second's, warm-up left out).
    trial_latency: Histogram<u64>,
    seconds: VecDeque<Second>,
    server: Option<ServerNow>,
    /// The server's CPU seconds at the last sample and when, for its %.
    cpu_seen: Option<(f64, Instant)>,
    /// What the current labels' CPU counter held when the trial began.
    cpu_base: f64,
    telemetry: Option<TelemetryNow>,
    shadows: BTreeMap<String, Shadow>,
    proxy: Option<Proxy>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

impl Board {
    /// An empty board for `command` (load, trial, run, ...).
    pub fn new(command: &str) -> Board {
        Board {
            started: Instant::now(),
            state: Mutex::new(State {
                command: command.to_string(),
                seq: 0,
                done: false,
                labels: None,
                phase: Phase::Between,
                trials_done: 0,
                trials_total: None,
                series: BTreeMap::new(),
                trial: Counts::default(),
                trial_latency: new_histogram(2),
                seconds: VecDeque::new(),
                server: None,
                cpu_seen: None,
                cpu_base: 0.0,
                telemetry: None,
                shadows: BTreeMap::new(),
                proxy: None,
            }),
        }
    }

    /// Changes the state under the lock and counts one update.
    fn update(&self, change: impl FnOnce(&mut State)) {
        let mut st = lock(&self.state);
        change(&mut st);
        st.seq += 1;
    }

    /// A plan's size: how many trials it will run (None when unknown).
    pub fn plan(&self, trials_total: Option<u64>) {
        self.update(|st| st.trials_total = trials_total);
    }

    /// A trial begins: its labels go on every series from now on; its
    /// counts, latency and server figures start afresh.
    pub fn trial_started(&self, labels: TrialLabels) {
        self.update(|st| {
            let key = Some(labels.clone());
            st.cpu_base = st.series.entry(key).or_default().cpu_s;
            st.labels = Some(labels);
            st.phase = Phase::Warmup;
            st.trial = Counts::default();
            st.trial_latency = new_histogram(2);
            st.server = None;
            st.cpu_seen = None;
            st.telemetry = None;
        });
    }

    /// The current trial has ended (its record is written).
    pub fn trial_ended(&self) {
        self.update(|st| {
            st.trials_done += 1;
            st.phase = Phase::Between;
        });
    }

    /// The work is over: nothing more will change.
    pub fn finish(&self) {
        self.update(|st| {
            st.done = true;
            st.phase = Phase::Done;
        });
    }

    /// One second of load: counted under the current labels.
    pub fn add_second(&self, row: &TimelineRow, ok_latency: &Histogram<u64>) {
        let t_s = self.started.elapsed().as_secs_f64();
        self.update(|st| {
            let series = st.series.entry(st.labels.clone()).or_default();
            series.ok += row.ok;
            series.errors.add(&row.error_kinds.unwrap_or_default());
            for v in ok_latency.iter_recorded() {
                let n = v.count_at_value();
                series.buckets[bucket_of(v.value_iterated_to())] += n;
                series.latency_sum_s += v.value_iterated_to() as f64 / 1e6 * n as f64;
            }
            st.trial.ok += row.ok;
            st.trial.errors += row.errors;
            st.trial.requests += row.ok + row.errors;
            if !row.warmup {
                st.trial_latency
                    .add(ok_latency)
                    .expect("same histogram bounds");
            }
            if !st.done {
                st.phase = if row.warmup {
                    Phase::Warmup
                } else {
                    Phase::Counted
                };
            }
            let (p50, p99) = if ok_latency.is_empty() {
                (None, None)
            } else {
                (
                    Some(ms(ok_latency.value_at_quantile(0.5))),
                    Some(ms(ok_latency.value_at_quantile(0.99))),
                )
            };
            // A sliver of a last second counts, but would chart as a
            // wild rate: the timeline leaves it out, and so does the page.
            if row.span_s < 0.25 {
                return;
            }
            st.seconds.push_back(Second {
                t_s,
                rps: row.rps,
                ok: row.ok,
                errors: row.errors,
                p50_ms: p50,
                p99_ms: p99,
            });
            while st.seconds.len() > SECONDS_KEPT {
                st.seconds.pop_front();
            }
        });
    }

    /// A load run starts: its label set's counters exist from now on, at
    /// 0 if new.
    pub fn load_started(&self) {
        self.update(|st| {
            st.series.entry(st.labels.clone()).or_default();
        });
    }

    /// A load run ended: between runs until the next second or trial.
    pub fn load_ended(&self) {
        self.update(|st| {
            if !st.done {
                st.phase = Phase::Between;
            }
        });
    }

    /// The server tree's sample: CPU seconds since the trial's sampler
    /// began, resident and proportional memory.
    pub fn server_sample(&self, cpu_s: f64, rss_bytes: u64, pss_bytes: Option<u64>) {
        let now = Instant::now();
        self.update(|st| {
            let cpu_pct = st.cpu_seen.and_then(|(cpu0, t0)| {
                let wall = now.saturating_duration_since(t0).as_secs_f64();
                (wall > 0.0).then(|| (cpu_s - cpu0).max(0.0) / wall * 100.0)
            });
            st.cpu_seen = Some((cpu_s, now));
            let base = st.cpu_base;
            let series = st.series.entry(st.labels.clone()).or_default();
            // A counter never goes back, even if a sample reads less.
            series.cpu_s = series.cpu_s.max(base + cpu_s.max(0.0));
            let s = st.server.get_or_insert_with(ServerNow::default);
            s.cpu_seconds = cpu_s;
            s.cpu_pct = cpu_pct.or(s.cpu_pct);
            s.rss_bytes = Some(rss_bytes);
            s.pss_bytes = pss_bytes;
        });
    }

    /// Connections waiting in the server's accept queue now.
    pub fn accept_queue(&self, waiting: u32) {
        self.update(|st| {
            st.server
                .get_or_insert_with(ServerNow::default)
                .accept_queue = Some(waiting);
        });
    }

    /// The telemetry's time per request for the current trial.
    pub fn telemetry(&self, t: TelemetryNow) {
        self.update(|st| st.telemetry = Some(t));
    }

    /// A mirror's shadow, its counts so far (they never go back here).
    pub fn shadow(&self, now: Shadow) {
        self.update(|st| {
            let s = st
                .shadows
                .entry(now.name.clone())
                .or_insert_with(|| Shadow {
                    name: now.name.clone(),
                    ..Shadow::default()
                });
            s.requests = s.requests.max(now.requests);
            s.ok = s.ok.max(now.ok);
            s.errors = s.errors.max(now.errors);
            s.p50_ms = now.p50_ms;
            s.p99_ms = now.p99_ms;
            s.paired_median_ms = now.paired_median_ms;
        });
    }

    /// The mirror's (or record's) own traffic so far; its counts never go
    /// back here.
    pub fn proxy(&self, now: Proxy) {
        self.update(|st| {
            let p = st.proxy.get_or_insert(now);
            p.requests = p.requests.max(now.requests);
            p.errors = p.errors.max(now.errors);
            p.recorded = p.recorded.max(now.recorded);
            p.p50_ms = now.p50_ms;
            p.p99_ms = now.p99_ms;
        });
    }

    /// Everything, read under the one lock: `/live.json` and `/metrics`
    /// are each made from one snapshot, so they agree with themselves.
    pub fn snapshot(&self) -> Snapshot {
        let st = lock(&self.state);
        let h = &st.trial_latency;
        let latency = (!h.is_empty()).then(|| LatencyNow {
            p50_ms: ms(h.value_at_quantile(0.5)),
            p90_ms: ms(h.value_at_quantile(0.9)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
        });
        Snapshot {
            seq: st.seq,
            elapsed_s: self.started.elapsed().as_secs_f64(),
            command: st.command.clone(),
            done: st.done,
            labels: st.labels.clone(),
            phase: st.phase,
            trials_done: st.trials_done,
            trials_total: st.trials_total,
            series: st.series.clone(),
            trial: st.trial,
            seconds: st.seconds.iter().cloned().collect(),
            latency,
            server: st.server.clone(),
            telemetry: st.telemetry,
            shadows: st.shadows.values().cloned().collect(),
            proxy: st.proxy,
        }
    }
}

impl crate::load::Observer for Board {
    fn started(&self) {
        self.load_started();
    }

    fn second(&self, row: &TimelineRow, ok_latency: &Histogram<u64>) {
        self.add_second(row, ok_latency);
    }

    fn ended(&self) {
        self.load_ended();
    }
}
