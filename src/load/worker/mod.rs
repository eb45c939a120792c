//! The connection loop: one thread, many connections, few syscalls.
//!
//! This is the part of rackbench that decides how much of the machine the
//! generator steals from the server under test, so it is written for few
//! syscalls per request:
//!
//! - every socket is registered once for read and write (edge-triggered
//!   epoll, or one multishot poll on io_uring); there is no `epoll_ctl` per
//!   request;
//! - a response is read with one `recvmsg` when it fits the buffer (a short
//!   read means the socket is drained, so there is no extra read that
//!   returns EAGAIN), and the next request is written straight away with
//!   one `send`;
//! - the request bytes are rendered once and shared.
//!
//! Where the kernel allows, the loop runs on io_uring instead (see
//! `uring/`; the choice is made once per thread, in `io.rs`, the loop's
//! one seam to the kernel): receives and sends are ring entries, one system call
//! submits a batch of them, and a closed loop sleeps until several
//! responses are in instead of being woken (by the server, at the server's
//! expense) for each one ([`batch_plan`]); an open loop sleeps from one due
//! time to the next and reads what came in meanwhile then. Otherwise it
//! waits on epoll (the open loop with microsecond timeouts) and reads and
//! writes with the calls above.
//!
//! A response ends when its bytes reached the socket: the kernel stamps
//! each packet (`SO_TIMESTAMPNS`) and the stamp, not the moment the loop got
//! round to reading it, closes the latency. Batched wake-ups and a busy
//! loop therefore add nothing to the figures.
//!
//! Pacing is data, not a second loop: in a closed loop a connection issues
//! its next request when the last one ends; under `--rate` requests fall due
//! on a fixed schedule and go to whichever connection is free, their latency
//! counted from when they were due (so a stall cannot hide behind the
//! generator waiting politely; the "coordinated omission" correction).
//! A replay (`Pacing::Schedule`) is the same open loop with the due times
//! and each request's bytes taken from a [`super::schedule::Schedule`].
//!
//! This file holds the loop itself: its state, its turns, its waits (how
//! long, and on what), the timeout scan and the run's end. A turn's events
//! come through `io.rs` in one form whichever the kernel's interface, and
//! go to `connect.rs` (a slot's socket from connect to close, and a
//! socket's readiness), `receive.rs` (bytes in, responses framed and
//! recorded) and `send.rs` (requests issued and written).
//!
//! A worker never spawns servers, touches disk or prints.

mod connect;
mod receive;
mod send;

use super::config::Pacing;
use super::conn::{Conn, State};
use super::io::{Happened, Io};
use super::mix::{Draw, Mix};
use super::pacing::{batch_plan, Clock};
use super::recorder::{Failure, Outcome, Recorder, Tally};
use super::response::Needle;
use super::sys::thread_cpu;
use super::thread::{ThreadPlan, WorkerStats};
use super::window::Window;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A connection waits this long after a failed connect before it retries,
/// so a dead port is counted, not hammered at full CPU.
const CONNECT_BACKOFF: Duration = Duration::from_millis(10);
/// A connect pending this long at the end of a run counts as failed.
const CONNECT_STALL: Duration = Duration::from_secs(1);
/// A send this late against its schedule (past the slack) counts as behind schedule.
const LATE_THRESHOLD: Duration = Duration::from_millis(1);
/// New connections opened and not yet through their first exchange, per
/// run, at most (shared among the threads). A listen backlog takes what
/// has not been accepted yet; one that overflows drops the SYN and the
/// client's kernel retries a second later, so ten thousand connects at once
/// against a backlog of 511 (nginx's default) would stall for seconds.
pub(super) const RAMP_CONNECTS: usize = 256;
/// A connection still unanswered this long after its first request, when
/// the run ends, counts as never answered.
const NEVER_ANSWERED_AFTER: Duration = Duration::from_secs(1);
pub struct Worker {
    /// The loop's I/O and waits: io_uring on a kernel that has it, else
    /// epoll and plain calls (see `io.rs`). First, so that a ring is
    /// dropped before the buffers its sends read from.
    io: Io,
    /// Batch buffers of closed connections whose send was still in the
    /// ring: kept until the end, as the kernel may still read them.
    retired: Vec<Vec<u8>>,
    plan: ThreadPlan,
    conns: Vec<Conn>,
    rec: Recorder,
    stats: WorkerStats,
    /// `pipeline` copies of the request, so a batch is one write.
    batch: Arc<[u8]>,
    /// Each request has bytes of its own (a replay's or a mix's), written
    /// into its connection's `wbuf`; otherwise every batch is `batch`.
    own_bytes: bool,
    /// Under a mix: the mix and this thread's draws.
    draw: Option<MixDraw>,
    /// The text each answer's body must hold, its searcher built once
    /// here rather than per response: one per mix endpoint (in the mix's
    /// order), else the run's one.
    needles: Arc<[Needle]>,
    req_len: usize,
    depth: usize,
    /// End of the run: no request scheduled at or after it is issued, and
    /// the loop ends there. (A separate "issue until" once sat beside it,
    /// always equal to it.)
    deadline: Instant,
    /// Counted requests this thread may still issue (`-n`); None = no limit.
    quota: Option<u64>,
    /// Open loop: index of the next request due, and the free connections.
    next_due: u64,
    free: Vec<u32>,
    /// Open loop: when the loop last handed out the requests then due.
    /// A run cut short (Ctrl-C, an error) counts as never sent only the
    /// requests due by then: those due after it fell in the loop's last
    /// wait, and the interrupt, not a lack of connections, kept them.
    dispatched_at: Instant,
    t0: Instant,
    window: Arc<Window>,
    /// When the closed loop's timer (which wakes its untimed wait for the
    /// loop's own deadlines) is set to fire; None when it is not armed.
    timer_at: Option<Instant>,
    /// Requests written and not yet answered, on all connections.
    inflight: usize,
    /// Requests in the connections' queues, written or not: more than
    /// `inflight` means some wait to be written.
    queued: usize,
    /// Moving average of response latency, in microseconds.
    recent_latency_us: f64,
    /// The ramp: slots below `ramp_next` have started connecting; of them,
    /// `ramping` are not through their first exchange yet (at most
    /// `ramp_max`).
    ramp_next: usize,
    ramping: usize,
    ramp_max: usize,
    /// Closed loop: connections answered once that wait for the ramp to
    /// end before their next request. A server busy with the connections
    /// already open accepts new ones slowly (nginx takes one per pass of
    /// its event loop), so loading them during the ramp would stall it.
    parked: Vec<u32>,
}

/// A thread's draws from a mix: which endpoint each request goes to (in
/// the order they are issued) and the integers of its placeholders (in
/// the order they are written), as two streams so that neither order
/// depends on the other's timing.
struct MixDraw {
    mix: Arc<Mix>,
    pick: Draw,
    values: Draw,
}

enum Stopping {
    No,
    /// No new requests; wait for the ones in flight.
    Draining,
}

impl Worker {
    pub fn new(
        plan: ThreadPlan,
        rec: Recorder,
        t0: Instant,
        window: Arc<Window>,
    ) -> io::Result<Self> {
        let cfg = &plan.config;
        let depth = if cfg.keep_alive {
            cfg.pipeline.max(1)
        } else {
            1
        };
        let req_len = cfg.request.len();
        let batch: Arc<[u8]> = cfg.request.repeat(depth).into();
        let deadline = window.deadline();
        let conns = (0..plan.connections).map(|_| Conn::new(t0)).collect();
        let closed = matches!(plan.pacing, Pacing::Closed);
        let io = Io::new(cfg.io, plan.connections, closed)?;
        let own_bytes = cfg.schedule.is_some() || cfg.mix.is_some();
        let draw = cfg.mix.as_ref().map(|mix| MixDraw {
            mix: Arc::clone(mix),
            pick: Draw::new(mix.seed, plan.lane.0, 0),
            values: Draw::new(mix.seed, plan.lane.0, 1),
        });
        let needles = match cfg.mix.as_deref() {
            Some(mix) => mix
                .endpoints
                .iter()
                .map(|e| Needle::new(&e.expect_body))
                .collect(),
            None => [Needle::new(&cfg.expect_body)].into(),
        };
        Ok(Worker {
            needles,
            own_bytes,
            draw,
            io,
            timer_at: None,
            retired: Vec::new(),
            inflight: 0,
            queued: 0,
            recent_latency_us: 0.0,
            conns,
            rec,
            stats: WorkerStats::default(),
            batch,
            req_len,
            depth,
            deadline,
            quota: plan.requests,
            next_due: 0,
            dispatched_at: t0,
            free: Vec::with_capacity(plan.connections),
            t0,
            ramp_next: 0,
            ramping: 0,
            ramp_max: (RAMP_CONNECTS / plan.lane.1.max(1) as usize).max(16),
            parked: Vec::new(),
            plan,
            window,
        })
    }

    /// Runs until the stop rule says so, then returns the tallies.
    pub fn run(mut self) -> io::Result<(Tally, WorkerStats)> {
        let started = Instant::now();
        let timeout = self.plan.config.timeout;
        let scan_every = (timeout / 20).clamp(Duration::from_millis(1), Duration::from_millis(100));
        let mut next_scan = started + scan_every;
        let mut stopping = Stopping::No;
        loop {
            let now = Instant::now();
            if self.ramp_next < self.conns.len() {
                self.ramp(now);
            } else if !self.parked.is_empty() && self.plan.ramp_left.load(Ordering::Relaxed) == 0 {
                self.unpark(now);
            }
            self.rec.advance(now);
            // A steady-state warm-up moves the end of the run when it ends.
            self.window.tick(now);
            self.deadline = self.window.deadline();
            if self.plan.config.stop_on_error && self.rec.errors_seen() > 0 {
                // Every thread stops: the others see the shared flag.
                self.stats.stopped_on_error = true;
                self.plan.config.interrupt.store(true, Ordering::Relaxed);
            }
            if self.plan.config.interrupt.load(Ordering::Relaxed) {
                self.stats.interrupted = true;
                break;
            }
            if now >= self.deadline {
                break;
            }
            if matches!(stopping, Stopping::No) && (self.quota == Some(0) || now >= self.deadline) {
                stopping = Stopping::Draining;
            }
            if matches!(stopping, Stopping::Draining)
                && self.conns.iter().all(|c| c.queue.is_empty())
            {
                break;
            }
            if now >= next_scan {
                self.scan(now);
                next_scan = now + scan_every;
            }
            if matches!(stopping, Stopping::No) && self.plan.pacing.is_open() {
                self.dispatch_due(now);
            }
            let mut wake = next_scan.min(self.deadline);
            if let (true, Stopping::No) = (self.plan.pacing.is_open(), &stopping) {
                if let Some(due) = self.clock().next_send_at(self.next_due, now) {
                    wake = wake.min(due);
                }
            }
            // Wake for the next second's boundary so the timeline keeps time.
            let next_sec =
                self.t0 + Duration::from_secs(now.saturating_duration_since(self.t0).as_secs() + 1);
            wake = wake.min(next_sec);
            let draining = matches!(stopping, Stopping::Draining);
            let n = self.wait_until(wake, now, draining)?;
            self.stats.wakeups += 1;
            if n == 0 {
                continue;
            }
            let now = Instant::now();
            for e in 0..n {
                let happened = self.io.event(e);
                self.on_happened(happened, now)?;
            }
        }
        let end = Instant::now();
        self.finish(end);
        self.stats.cpu = thread_cpu();
        self.stats.io = self.io.name();
        self.stats.wall = end.saturating_duration_since(started);
        let tally = self.rec.finish(end);
        Ok((tally, self.stats))
    }

    /// One event of a wait, by its kind (see `io.rs`).
    fn on_happened(&mut self, happened: Happened, now: Instant) -> io::Result<()> {
        match happened {
            Happened::Timer => self.on_timer(),
            Happened::Ready(token, ready) => self.on_event(token, ready, now),
            Happened::Received(r) => self.on_received(r, now)?,
            Happened::Sent { token, res } => self.on_sent(token, res, now),
        }
        Ok(())
    }

    /// Waits for events until `wake` at the latest. A closed loop's timer
    /// (io_uring's, or a timerfd on epoll) carries `wake` and the wait has
    /// no timeout of its own: it moves only when `wake` moves, a few times
    /// a second. An open loop sleeps to each send's due time.
    fn wait_until(&mut self, wake: Instant, now: Instant, draining: bool) -> io::Result<usize> {
        if self.plan.pacing.is_open() {
            // The open loop sleeps from one due time to the next, and the
            // responses that come in meanwhile wait for that wake-up: their
            // latency ends at their kernel stamp, not when they are read,
            // and a connection they free is needed only at the next due
            // time. So it wakes once per due time (or per batch of them),
            // as a closed loop wakes once per response, instead of twice
            // per request. It wakes for an event only when something
            // waits for one: a request due with no connection free, one
            // queued on a connection still connecting or with a send not
            // yet through, or the last responses of a run that is ending.
            //
            // The wait's own timeout, not the ring's timer, ends it: a
            // timer that fires between the submission and the start of the
            // wait (a due time microseconds away) would not end it, and
            // the loop would sleep until the next event, which in this
            // wait may never come.
            let due = self.due_at(self.next_due);
            let backlog = due <= now && self.may_issue(due);
            let wait_for_event = backlog || self.queued > self.inflight || draining;
            let until = wake.saturating_duration_since(now);
            if wait_for_event {
                return self.io.wait_for_event(until);
            }
            let Some(u) = self.io.ring() else {
                // On epoll the sleep is the thread's own, and one look
                // without waiting takes what came in meanwhile. What is
                // due goes out first (each send a system call of its
                // own): reading the responses first would make the sends
                // late, and the responses' latency ends at their kernel
                // stamps anyway. Not once the run is interrupted: what
                // falls due then is not sent.
                std::thread::sleep(until);
                if !self.plan.config.interrupt.load(Ordering::Relaxed) {
                    self.dispatch_due(Instant::now());
                }
                return self.io.wait_for_event(Duration::ZERO);
            };
            return u.sleep(until);
        }
        self.move_timer(wake, now)?;
        let (inflight, recent_latency_us) = (self.inflight, self.recent_latency_us);
        self.io
            .wait_closed(|| batch_plan(inflight, recent_latency_us))
    }

    /// Sets the closed loop's timer (io_uring's or the timerfd) to fire at
    /// `wake`, unless it is set for then already.
    fn move_timer(&mut self, wake: Instant, now: Instant) -> io::Result<()> {
        if self.timer_at == Some(wake) {
            return Ok(());
        }
        if self.io.arm_timer(wake.saturating_duration_since(now))? {
            self.timer_at = Some(wake);
        }
        Ok(())
    }

    /// The slot whose current socket `token` names; None when the slot has
    /// moved on to another socket, or has none.
    fn live_slot(&self, token: u64) -> Option<usize> {
        let i = (token & 0xffff_ffff) as usize;
        let c = self.conns.get(i)?;
        (c.generation == (token >> 32) as u32 && c.sock.is_some()).then_some(i)
    }

    fn on_timer(&mut self) {
        self.io.clear_timer();
        self.timer_at = None;
    }

    /// The pacing's view of this thread: its plan, start and end.
    fn clock(&self) -> Clock<'_> {
        Clock {
            plan: &self.plan,
            t0: self.t0,
            deadline: self.deadline,
        }
    }

    fn due_at(&self, k: u64) -> Instant {
        self.clock().due_at(k)
    }

    fn request_of(&self, k: u64) -> u32 {
        self.clock().request_of(k)
    }

    fn may_issue(&self, sched: Instant) -> bool {
        sched < self.deadline && self.quota != Some(0)
    }

    /// Takes one request from the `-n` quota if it falls in the counted window.
    fn take_quota(&mut self, sched: Instant) {
        if self.rec.counts(sched) {
            if let Some(q) = self.quota.as_mut() {
                *q -= 1;
            }
        }
    }

    /// Finds requests and connects older than `--timeout`.
    fn scan(&mut self, now: Instant) {
        let timeout = self.plan.config.timeout;
        for i in 0..self.conns.len() {
            match self.conns[i].state {
                State::Connecting { since } if now.saturating_duration_since(since) > timeout => {
                    self.fail_connect(i, now);
                }
                State::Open => {
                    let head_sent = self.conns[i].queue.front().and_then(|p| p.sent);
                    if head_sent.is_some_and(|s| now.saturating_duration_since(s) > timeout) {
                        self.fail_exchange(i, now, Failure::Timeout);
                    }
                }
                State::Closed { retry_at } if retry_at <= now && i < self.ramp_next => {
                    self.start_connect(i, now)
                }
                _ => {}
            }
        }
    }

    /// The run is over: whatever is still waiting is recorded as unfinished
    /// (or, under `--rate`, unsent) with its age so far.
    ///
    /// On io_uring the sends queued since the last wait go to the kernel
    /// first: `push_writes` stamped them sent, and an unfinished request
    /// is one that left. Dropping the ring with them still queued kept
    /// them from the server while the report counted them in flight
    /// (tests/slow_clients.rs once saw 277,509 requests OK or unfinished
    /// against the server's 277,508 answers). A ring too broken to take
    /// them sent none of them either; they stay counted as they were.
    fn finish(&mut self, now: Instant) {
        let _ = self.io.hand_over();
        for i in 0..self.conns.len() {
            let c = &mut self.conns[i];
            // A connect still pending after the kernel's first SYN
            // retransmission (1 s) had its SYN dropped: the server's accept
            // queue is full. That is a failure to connect, not a request in
            // flight, or a run cut short would hide a server that stopped
            // taking connections.
            let stalled = matches!(c.state, State::Connecting { since } if now.saturating_duration_since(since) >= CONNECT_STALL);
            for p in c.queue.drain(..) {
                if let Some(sent) = p.sent {
                    c.window_carried |= self.window.meets(sent, now);
                }
                if stalled {
                    self.rec
                        .record(now, p.sched, None, Outcome::Failed(Failure::Connect), p.req);
                } else {
                    self.rec.record_unfinished(now, p.sched, p.sent, p.req);
                }
            }
            // A socket opened just before the end has had no chance to be
            // answered; only one kept waiting a while counts.
            let waited = c
                .first_sent
                .is_some_and(|t| now.saturating_duration_since(t) >= NEVER_ANSWERED_AFTER);
            if c.sock.take().is_some() && c.sent_any && !c.answered && waited {
                self.stats.never_answered += 1;
            }
            if c.window_carried {
                self.stats.window_answers.push(c.window_answers);
            }
        }
        if self.plan.pacing.is_open() {
            // Requests that fell due but found no free connection.
            let cut_short = self.stats.interrupted || self.stats.stopped_on_error;
            let end = if cut_short { self.dispatched_at } else { now };
            let stop = end.min(self.deadline);
            while self.due_at(self.next_due) < stop && self.quota != Some(0) {
                let due = self.due_at(self.next_due);
                self.take_quota(due);
                // Under a mix, the endpoint it would have gone to.
                let req = self.draw.as_mut().map_or(0, |d| d.mix.pick(&mut d.pick));
                self.rec.record_unfinished(now, due, None, req);
                self.next_due += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::config::LoadConfig;

    /// Regression: a closed loop on io_uring queued its next send in the
    /// last turn before the deadline, and the run ended without a wait to
    /// submit it. The report counted the request unfinished (in flight);
    /// the server never saw it. Here the loop's turns are taken by hand,
    /// and the run ends right after the turn that queued the first send.
    #[test]
    fn a_send_queued_in_the_last_turn_reaches_the_server() {
        use super::super::window::Window;
        use std::io::Read;
        use std::sync::atomic::AtomicUsize;
        let ring = crate::load::io_uring_available();
        let how = format!(
            "{}; a kernel of 6.1 or later with /proc/sys/kernel/io_uring_disabled at 0",
            ring.as_ref().err().map_or("", String::as_str)
        );
        if !crate::require::require("io_uring", ring.is_ok(), &how) {
            return;
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let mut cfg = LoadConfig::get(&url).unwrap();
        cfg.connections = 1;
        cfg.io = super::super::IoMode::Uring;
        let request = cfg.request.clone();
        let t0 = Instant::now();
        let window = Arc::new(Window::fixed(
            t0,
            Duration::ZERO,
            Some(Duration::from_secs(60)),
        ));
        let (tx, _rx) = std::sync::mpsc::channel();
        let rec = Recorder::new(0, t0, Arc::clone(&window), false, 0, tx);
        let plan = ThreadPlan {
            config: Arc::new(cfg),
            connections: 1,
            pacing: Pacing::Closed,
            requests: None,
            lane: (0, 1),
            phase: Duration::ZERO,
            ramp_left: Arc::new(AtomicUsize::new(1)),
        };
        let mut w = Worker::new(plan, rec, t0, window).unwrap();
        w.start_connect(0, Instant::now());
        let (mut server, _) = listener.accept().unwrap();
        // The connect's poll completes: the connection opens and queues
        // the send of its first request (stamped sent), unsubmitted.
        let waited = Instant::now();
        while w.conns[0].state != State::Open {
            assert!(waited.elapsed() < Duration::from_secs(5), "never opened");
            let n = w.io.wait_for_event(Duration::from_millis(100)).unwrap();
            for e in 0..n {
                let happened = w.io.event(e);
                w.on_happened(happened, Instant::now()).unwrap();
            }
        }
        let first = w.conns[0].queue.front().expect("a request queued");
        assert!(first.sent.is_some(), "the request counts as sent");
        w.finish(Instant::now());
        drop(w);
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut got = Vec::new();
        let _ = server.read_to_end(&mut got);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&request),
            "what the server received of the request counted unfinished"
        );
    }
}
