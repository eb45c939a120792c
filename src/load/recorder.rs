//! Per-thread tallies: totals and latency histograms for the counted window,
//! and one small histogram per second for the timeline.
//!
//! Nothing here is shared between threads while the run is on. A worker
//! hands each finished second to the collector over a channel and keeps
//! only the second it is in, so memory stays flat however long the run.

use super::response::ResponseParser;
use super::window::Window;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Highest latency the histograms resolve: one hour, in microseconds.
/// Longer values are clamped rather than dropped.
pub const MAX_LATENCY_US: u64 = 3_600_000_000;

pub fn new_histogram(sigfig: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, sigfig)
        .expect("static histogram bounds are valid")
}

/// Failures by kind. Field names are part of the load-v1 JSON contract.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ErrorCounts {
    /// The connection could not be made (refused, unreachable, timed out).
    pub connect: u64,
    /// No complete response within `--timeout`.
    pub timeout: u64,
    /// The connection was closed or reset in the middle of an exchange.
    pub reset: u64,
    /// The response was not valid HTTP/1.x.
    pub parse: u64,
    /// The status was not one of those expected.
    pub status: u64,
    /// The body lacked the expected substring.
    pub body: u64,
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        self.connect + self.timeout + self.reset + self.parse + self.status + self.body
    }
    /// The kinds with any failure, by their field names, in field order.
    pub fn by_kind(&self) -> Vec<(String, u64)> {
        [
            ("connect", self.connect),
            ("timeout", self.timeout),
            ("reset", self.reset),
            ("parse", self.parse),
            ("status", self.status),
            ("body", self.body),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| (k.to_string(), n))
        .collect()
    }
    pub fn add(&mut self, o: &ErrorCounts) {
        self.connect += o.connect;
        self.timeout += o.timeout;
        self.reset += o.reset;
        self.parse += o.parse;
        self.status += o.status;
        self.body += o.body;
    }
    fn bump(&mut self, kind: Failure) {
        match kind {
            Failure::Connect => self.connect += 1,
            Failure::Timeout => self.timeout += 1,
            Failure::Reset => self.reset += 1,
            Failure::Parse => self.parse += 1,
            Failure::Status => self.status += 1,
            Failure::Body => self.body += 1,
        }
    }
}

impl Failure {
    /// The `ErrorCounts` field this failure is counted under.
    pub fn name(self) -> &'static str {
        match self {
            Failure::Connect => "connect",
            Failure::Timeout => "timeout",
            Failure::Reset => "reset",
            Failure::Parse => "parse",
            Failure::Status => "status",
            Failure::Body => "body",
        }
    }

    /// What the kind means, in a few words.
    pub fn detail(self) -> &'static str {
        match self {
            Failure::Connect => "the connection could not be made",
            Failure::Timeout => "no complete response within the timeout",
            Failure::Reset => "the connection was closed or reset mid-exchange",
            Failure::Parse => "the response was not valid HTTP/1.x",
            Failure::Status => "the status was not one of those expected",
            Failure::Body => "the body lacked the expected text",
        }
    }
}

/// The first request that failed in a run, warm-up included: what a
/// break-point step reports as the reason its level failed. Field names
/// are part of the load-v1 JSON contract.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct FirstFailure {
    /// The `errors` field it was counted under: "connect", "timeout",
    /// "reset", "parse", "status" or "body".
    pub kind: String,
    /// The response's status, when there was a response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The response's status line, e.g. "HTTP/1.1 503 Service Unavailable".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_line: Option<String>,
    /// What the kind means, in a few words.
    pub detail: String,
    /// Seconds from the start of the run (warm-up included).
    pub at_s: f64,
    /// The matching line of a front end's error log (set by the lab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_line: Option<String>,
    /// Why, in words, when a known pattern explains it (set by the lab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How one request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Failed(Failure),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Connect,
    Timeout,
    Reset,
    Parse,
    Status,
    Body,
}

/// One second of one thread, sent to the collector.
pub struct SecondReport {
    pub sec: u64,
    /// Length of the second actually covered (the last one may be short).
    pub span: Duration,
    pub ok: u64,
    pub errors: u64,
    /// Latency of the OK responses that ended in this second.
    pub latency: Histogram<u64>,
    /// This second's failures by kind (their sum is `errors`).
    pub error_kinds: ErrorCounts,
    /// Of the status failures, those answered 500 or above.
    pub status_5xx: u64,
}

/// What a worker hands back when it ends.
pub struct Tally {
    pub ok: u64,
    /// OK responses that arrived inside the counted window, whenever they
    /// were sent: what throughput is made of.
    pub ok_in_window: u64,
    pub errors: ErrorCounts,
    /// Counted requests still waiting for an answer when the run ended.
    pub unfinished: u64,
    /// Counted requests due under `--rate` that no connection was free to send.
    pub unsent: u64,
    /// Latency of OK responses from the scheduled start (closed loop:
    /// from the send).
    pub latency: Histogram<u64>,
    /// Latency of OK responses from the actual send, kept under `--rate`
    /// only.
    pub latency_uncorrected: Option<Histogram<u64>>,
    /// Latency of failed requests that got an ending (every failure but a
    /// refused connection; timeouts count at their timeout).
    pub latency_failed: Histogram<u64>,
    /// Ages of unfinished requests older than the median OK latency: lower
    /// bounds that join the headline so a stall at the end is not hidden.
    pub censored: Histogram<u64>,
    /// Ages of every counted unfinished (and unsent) request: the headline
    /// when few or no requests completed.
    pub unfinished_ages: Histogram<u64>,
    /// Timed-out requests at their timeout: unanswered too, only given up
    /// on earlier. They join the unfinished ages when few completed.
    pub timeout_ages: Histogram<u64>,
    /// Counted responses with an unexpected status, by status.
    pub status_codes: BTreeMap<u16, u64>,
    /// The first failure this thread saw, warm-up included.
    pub first_failure: Option<FirstFailure>,
    /// Under a mix, per endpoint in the mix's order; empty otherwise.
    pub endpoints: Vec<EndpointTally>,
}

/// One endpoint's counted requests on one thread (a mix's): what its
/// `endpoints[]` entry is made of once every thread's are added.
pub struct EndpointTally {
    pub ok: u64,
    /// OK responses that arrived inside the counted window.
    pub ok_in_window: u64,
    pub errors: ErrorCounts,
    /// Counted requests unanswered (or, under `--rate`, unsent) at the end.
    pub unfinished: u64,
    /// Latency of its OK responses, as the run's `latency`.
    pub latency: Histogram<u64>,
}

impl EndpointTally {
    pub fn new() -> Self {
        EndpointTally {
            ok: 0,
            ok_in_window: 0,
            errors: ErrorCounts::default(),
            unfinished: 0,
            latency: new_histogram(3),
        }
    }

    /// Adds another thread's tally of the same endpoint.
    pub fn add(&mut self, o: &EndpointTally) {
        self.ok += o.ok;
        self.ok_in_window += o.ok_in_window;
        self.errors.add(&o.errors);
        self.unfinished += o.unfinished;
        self.latency.add(&o.latency).expect("same histogram bounds");
    }
}

impl Default for EndpointTally {
    fn default() -> Self {
        Self::new()
    }
}

pub struct Recorder {
    t0: Instant,
    window: Arc<Window>,
    tally: Tally,
    sec: u64,
    sec_ok: u64,
    sec_errors: u64,
    sec_kinds: ErrorCounts,
    sec_5xx: u64,
    sec_hist: Histogram<u64>,
    tx: Sender<(usize, SecondReport)>,
    thread: usize,
    /// Median of the completed requests, fixed at the first unfinished one.
    typical_us: Option<u64>,
    /// Failures recorded so far, counted or not.
    errors_seen: u64,
}

fn micros(d: Duration) -> u64 {
    d.as_micros().clamp(1, MAX_LATENCY_US as u128) as u64
}

impl Recorder {
    pub fn new(
        thread: usize,
        t0: Instant,
        window: Arc<Window>,
        open_loop: bool,
        endpoints: usize,
        tx: Sender<(usize, SecondReport)>,
    ) -> Self {
        Recorder {
            t0,
            window,
            tally: Tally {
                ok: 0,
                ok_in_window: 0,
                errors: ErrorCounts::default(),
                unfinished: 0,
                unsent: 0,
                latency: new_histogram(3),
                latency_uncorrected: open_loop.then(|| new_histogram(3)),
                latency_failed: new_histogram(3),
                censored: new_histogram(3),
                unfinished_ages: new_histogram(3),
                timeout_ages: new_histogram(3),
                status_codes: BTreeMap::new(),
                first_failure: None,
                endpoints: (0..endpoints).map(|_| EndpointTally::new()).collect(),
            },
            sec: 0,
            sec_ok: 0,
            sec_errors: 0,
            sec_kinds: ErrorCounts::default(),
            sec_5xx: 0,
            sec_hist: new_histogram(2),
            tx,
            thread,
            typical_us: None,
            errors_seen: 0,
        }
    }

    /// Failed requests so far, warm-up included.
    #[inline]
    pub fn errors_seen(&self) -> u64 {
        self.errors_seen
    }

    /// Whether a request scheduled at `sched` falls in the counted window.
    #[inline]
    pub fn counts(&self, sched: Instant) -> bool {
        self.window.counts(sched)
    }

    /// Records a finished request. `sched` is when it was due, `sent` when
    /// it went on the wire (None if it never did), `now` when it ended;
    /// `endpoint` is its endpoint of a mix (ignored without one).
    #[inline]
    pub fn record(
        &mut self,
        now: Instant,
        sched: Instant,
        sent: Option<Instant>,
        outcome: Outcome,
        endpoint: u32,
    ) {
        self.advance(now);
        if !self.tally.endpoints.is_empty() {
            self.record_endpoint(endpoint, now, sched, outcome);
        }
        // Connect failures have no meaningful latency; every other ending,
        // timeouts included, is a latency the user's client would have seen.
        let has_latency = outcome != Outcome::Failed(Failure::Connect);
        let lat = micros(now.saturating_duration_since(sched));
        match outcome {
            Outcome::Ok => self.sec_ok += 1,
            Outcome::Failed(kind) => {
                self.sec_errors += 1;
                self.sec_kinds.bump(kind);
                self.errors_seen += 1;
                if self.tally.first_failure.is_none() {
                    self.note_first_failure(now, kind);
                }
            }
        }
        // The timeline's latency is the OK responses', like the headline:
        // a second of instant 503s must not dip to look fast (its errors
        // are counted beside it).
        if outcome == Outcome::Ok {
            self.sec_hist.saturating_record(lat);
        }
        if outcome == Outcome::Ok && self.window.counts(now) {
            self.tally.ok_in_window += 1;
        }
        if !self.counts(sched) {
            return;
        }
        match outcome {
            Outcome::Ok => self.tally.ok += 1,
            Outcome::Failed(kind) => self.tally.errors.bump(kind),
        }
        // OK responses are the headline; failures (a full queue's instant
        // 503s, timeouts) have their own histogram so they never pass for
        // fast answers.
        match outcome {
            Outcome::Ok => {
                self.tally.latency.saturating_record(lat);
                if let (Some(h), Some(sent)) = (self.tally.latency_uncorrected.as_mut(), sent) {
                    h.saturating_record(micros(now.saturating_duration_since(sent)));
                }
            }
            Outcome::Failed(kind) if has_latency => {
                self.tally.latency_failed.saturating_record(lat);
                if kind == Failure::Timeout {
                    self.tally.timeout_ages.saturating_record(lat);
                }
            }
            Outcome::Failed(_) => {}
        }
    }

    /// A mix's request, counted by its endpoint as `record` counts it in
    /// the totals.
    fn record_endpoint(&mut self, endpoint: u32, now: Instant, sched: Instant, outcome: Outcome) {
        let ok_in_window = outcome == Outcome::Ok && self.window.counts(now);
        let counted = self.counts(sched);
        let Some(e) = self.tally.endpoints.get_mut(endpoint as usize) else {
            return;
        };
        e.ok_in_window += u64::from(ok_in_window);
        if !counted {
            return;
        }
        match outcome {
            Outcome::Ok => {
                e.ok += 1;
                e.latency
                    .saturating_record(micros(now.saturating_duration_since(sched)));
            }
            Outcome::Failed(kind) => e.errors.bump(kind),
        }
    }

    /// Records a finished request that got a complete response: as
    /// `record`, and for a failed one also its status (counted by code)
    /// and, for the run's first failure, the status line.
    #[inline]
    pub fn record_response(
        &mut self,
        now: Instant,
        sched: Instant,
        sent: Option<Instant>,
        outcome: Outcome,
        (status, parser): (u16, &ResponseParser),
        endpoint: u32,
    ) {
        let first = self.tally.first_failure.is_none();
        self.record(now, sched, sent, outcome, endpoint);
        if let Outcome::Failed(kind) = outcome {
            self.note_failed_response(first, sched, kind, status, parser);
        }
    }

    #[cold]
    fn note_first_failure(&mut self, now: Instant, kind: Failure) {
        self.tally.first_failure = Some(FirstFailure {
            kind: kind.name().into(),
            status: None,
            status_line: None,
            detail: kind.detail().into(),
            at_s: now.saturating_duration_since(self.t0).as_secs_f64(),
            log_line: None,
            reason: None,
        });
    }

    #[cold]
    fn note_failed_response(
        &mut self,
        first: bool,
        sched: Instant,
        kind: Failure,
        status: u16,
        parser: &ResponseParser,
    ) {
        if kind == Failure::Status && status >= 500 {
            self.sec_5xx += 1;
        }
        if kind == Failure::Status && self.counts(sched) {
            *self.tally.status_codes.entry(status).or_default() += 1;
        }
        if let (true, Some(f)) = (first, self.tally.first_failure.as_mut()) {
            f.status = Some(status);
            f.status_line = parser.status_line();
        }
    }

    /// Records a counted request that was still waiting when the run ended.
    ///
    /// Its age so far is a lower bound of its latency. Ages above the
    /// median of the OK responses are kept apart (`censored`) and join the
    /// latency figures, so a stall at the very end is not hidden; younger
    /// ones would only drag the low percentiles down with numbers that are
    /// not latencies. Every age is kept in `unfinished_ages`, which becomes
    /// the headline when few or no requests completed (see
    /// `report::headline`). Call after every completion has been recorded.
    pub fn record_unfinished(
        &mut self,
        now: Instant,
        sched: Instant,
        sent: Option<Instant>,
        endpoint: u32,
    ) {
        if !self.counts(sched) {
            return;
        }
        if let Some(e) = self.tally.endpoints.get_mut(endpoint as usize) {
            e.unfinished += 1;
        }
        let lat = micros(now.saturating_duration_since(sched));
        let completed = &self.tally.latency;
        let typical = *self.typical_us.get_or_insert_with(|| {
            if completed.is_empty() {
                0
            } else {
                completed.value_at_quantile(0.5)
            }
        });
        let censored = lat >= typical;
        if censored {
            self.tally.censored.saturating_record(lat);
        }
        self.tally.unfinished_ages.saturating_record(lat);
        // Under --rate a request never sent was due with no connection
        // free; in a closed loop it was waiting for its connection to open,
        // which is just another way of being in flight.
        let open_loop = self.tally.latency_uncorrected.is_some();
        match sent {
            None if open_loop => self.tally.unsent += 1,
            _ => {
                self.tally.unfinished += 1;
                if let (Some(h), Some(sent), true) =
                    (self.tally.latency_uncorrected.as_mut(), sent, censored)
                {
                    h.saturating_record(micros(now.saturating_duration_since(sent)));
                }
            }
        }
    }

    /// Sends every second that has fully passed before `now`.
    #[inline]
    pub fn advance(&mut self, now: Instant) {
        let sec = now.saturating_duration_since(self.t0).as_secs();
        while self.sec < sec {
            self.flush(Duration::from_secs(1));
        }
    }

    fn flush(&mut self, span: Duration) {
        let hist = std::mem::replace(&mut self.sec_hist, new_histogram(2));
        let report = SecondReport {
            sec: self.sec,
            span,
            ok: std::mem::take(&mut self.sec_ok),
            errors: std::mem::take(&mut self.sec_errors),
            latency: hist,
            error_kinds: std::mem::take(&mut self.sec_kinds),
            status_5xx: std::mem::take(&mut self.sec_5xx),
        };
        // The collector only goes away once every worker is done.
        let _ = self.tx.send((self.thread, report));
        self.sec += 1;
    }

    /// Sends the last, possibly partial, second and returns the totals.
    pub fn finish(mut self, now: Instant) -> Tally {
        self.advance(now);
        let span = now.saturating_duration_since(self.t0) - Duration::from_secs(self.sec);
        if !span.is_zero() {
            self.flush(span);
        }
        self.tally
    }
}
