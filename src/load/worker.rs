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
//! `uring.rs`; the choice is made once per thread, in `io.rs`, the loop's
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
//! A worker never spawns servers, touches disk or prints.

use super::config::{LoadConfig, Pacing};
use super::conn::{absorb, token, Conn, Pending, State, READ_BUF, READ_BUF_FIRST};
use super::epoll::Ready;
use super::io::{Happened, Io, TIMER_TOKEN};
use super::mix::{Draw, Mix};
use super::pacing::{batch_plan, Clock};
use super::recorder::{Failure, Outcome, Recorder, Tally};
use super::response::ExpectStatus;
use super::response::{ParseError, Progress};
use super::sys::{
    arrival, cheapest_congestion_control, enable_rx_timestamps, recv_stamped, send_raw, thread_cpu,
};
use super::target::Endpoint;
use super::thread::{ThreadPlan, WorkerStats};
use super::uring::{Event, OP_MASK, OP_POLL, OP_RECV, OP_SEND};
use super::window::Window;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::os::fd::AsRawFd;
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
        Ok(Worker {
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
                match self.io.event(e) {
                    Happened::Done(ev) => self.on_completion(ev, now)?,
                    Happened::Ready(TIMER_TOKEN, _) => self.on_timer(),
                    Happened::Ready(token, ready) => self.on_event(token, ready, now),
                }
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
        let i = (token & 0xffff_ffff & !OP_MASK) as usize;
        let c = self.conns.get(i)?;
        (c.generation == (token >> 32) as u32 && c.sock.is_some()).then_some(i)
    }

    /// One io_uring completion: a connect's poll, a receive, a send, or
    /// the timer.
    fn on_completion(&mut self, ev: Event, now: Instant) -> io::Result<()> {
        if ev.token == TIMER_TOKEN {
            self.on_timer();
            return Ok(());
        }
        match ev.token & OP_MASK {
            OP_POLL => self.on_event(ev.token & !OP_MASK, ev.ready, now),
            OP_RECV => self.on_received(ev, now)?,
            OP_SEND => self.on_sent(ev, now),
            _ => {}
        }
        Ok(())
    }

    /// A receive completed: the bytes (if any) go to the slot's buffer and
    /// are framed; EOF, errors and an ended receive are dealt with.
    fn on_received(&mut self, ev: Event, now: Instant) -> io::Result<()> {
        let token = ev.token & !OP_MASK;
        let live = self.live_slot(token);
        let mut arrived = None;
        // A receive into a buffer that got no bytes met the EOF (the
        // buffer still holds the message header).
        let mut eof = ev.res == 0;
        if let (Some(bid), Some(u)) = (ev.buf, self.io.ring()) {
            if let Some(i) = live {
                let (payload, stamp) = u.received(bid, ev.res);
                eof = payload.is_empty();
                absorb(&mut self.conns[i], payload);
                // A fresh clock for what this sets off (the next request),
                // and the kernel's for when the bytes arrived.
                let now = Instant::now();
                arrived = Some((now, stamp.map_or(now, arrival)));
            }
            // Every buffer goes back, whoever it was for.
            u.recycle(bid);
        }
        let Some(i) = live else { return Ok(()) };
        if eof {
            self.on_eof(i, now);
            return Ok(());
        }
        if let Some((now, arrived)) = arrived {
            if !self.parse_available(i, now, arrived) {
                return Ok(()); // The connection was closed while parsing.
            }
        } else if ev.res < 0 && ev.res != -libc::ENOBUFS && ev.res != -libc::ECANCELED {
            self.fail_exchange(i, now, Failure::Reset);
            return Ok(());
        }
        // Out of buffers (they are back now), or the kernel ended the
        // receive for its own reasons (an overflowing completion queue): a
        // live socket gets a new one, which picks up what is waiting.
        if ev.ended && self.live_slot(token) == Some(i) {
            let fd = self.conns[i].sock.as_ref().map(|s| s.as_raw_fd());
            if let Some(fd) = fd {
                self.io.receive(fd, token)?;
            }
        }
        Ok(())
    }

    /// A send completed: the rest of the batch, or the next one, goes out.
    fn on_sent(&mut self, ev: Event, now: Instant) {
        let Some(i) = self.live_slot(ev.token & !OP_MASK) else {
            return; // A send on a socket this slot no longer has.
        };
        let c = &mut self.conns[i];
        c.sending = false;
        if ev.res <= 0 {
            self.fail_exchange(i, now, Failure::Reset);
            return;
        }
        c.batch_pos += ev.res as usize;
        self.push_writes(i, now);
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

    /// Open loop: hands every request now due to a free connection.
    fn dispatch_due(&mut self, now: Instant) {
        self.dispatched_at = now;
        loop {
            let due = self.due_at(self.next_due);
            if due > now || !self.may_issue(due) {
                return;
            }
            let Some(i) = self.free.pop() else {
                // Every connection is busy: the request waits, its clock
                // already running. It is counted behind schedule when sent.
                return;
            };
            let i = i as usize;
            self.conns[i].in_free = false;
            if self.conns[i].queue.len() >= self.depth {
                continue;
            }
            let req = match self.draw.as_mut() {
                Some(d) => d.mix.pick(&mut d.pick),
                None => self.request_of(self.next_due),
            };
            self.next_due += 1;
            self.take_quota(due);
            let late = now.saturating_duration_since(due);
            if late > self.plan.config.slack + LATE_THRESHOLD {
                self.stats.late_sends += 1;
            }
            self.stats.sends += 1;
            self.stats.max_lag = self.stats.max_lag.max(late);
            self.queued += 1;
            self.conns[i].queue.push_back(Pending {
                sched: due,
                sent: None,
                req,
            });
            if self.conns[i].queue.len() < self.depth {
                self.mark_free(i);
            }
            self.push_writes(i, now);
        }
    }

    fn mark_free(&mut self, i: usize) {
        let c = &self.conns[i];
        if !c.in_free && c.queue.len() < self.depth && self.plan.pacing.is_open() {
            self.conns[i].in_free = true;
            self.free.push(i as u32);
        }
    }

    /// Closed loop: fills the connection's pipeline with fresh requests.
    fn issue_closed(&mut self, i: usize, now: Instant) {
        if !matches!(self.plan.pacing, Pacing::Closed) || !self.conns[i].queue.is_empty() {
            return;
        }
        if self.conns[i].answered
            && self.plan.config.connections > RAMP_CONNECTS
            && self.plan.ramp_left.load(Ordering::Relaxed) > 0
        {
            // Until every thread's every connection is through (never
            // with fewer connections than a wave: a server that leaves
            // some unaccepted must not hold the others back).
            self.parked.push(i as u32);
            return;
        }
        for _ in 0..self.depth {
            if !self.may_issue(now) {
                break;
            }
            self.take_quota(now);
            self.queued += 1;
            let req = self.draw.as_mut().map_or(0, |d| d.mix.pick(&mut d.pick));
            self.conns[i].queue.push_back(Pending {
                sched: now,
                sent: None,
                req,
            });
        }
    }

    /// Starts the first connection of the next slots, while fewer than
    /// `ramp_max` are not through their first exchange: connections open
    /// in waves the server's listen backlog can take.
    fn ramp(&mut self, now: Instant) {
        while self.ramping < self.ramp_max && self.ramp_next < self.conns.len() {
            let i = self.ramp_next;
            self.ramp_next += 1;
            self.ramping += 1;
            self.conns[i].ramping = true;
            self.start_connect(i, now);
        }
    }

    /// The ramp is over: the parked connections start their closed loop.
    fn unpark(&mut self, now: Instant) {
        for i in std::mem::take(&mut self.parked) {
            self.issue_closed(i as usize, now);
            self.push_writes(i as usize, now);
        }
    }

    /// Slot `i`'s first connection is through (or failed): the loop's next
    /// turn starts another (not from here: a connect that fails at once
    /// would recurse through every slot).
    fn ramped(&mut self, i: usize) {
        if std::mem::take(&mut self.conns[i].ramping) {
            self.ramping -= 1;
            self.plan.ramp_left.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn start_connect(&mut self, i: usize, now: Instant) {
        match self.conns[i].state {
            State::Closed { retry_at } if retry_at <= now => {}
            _ => return,
        }
        let endpoint = &self.plan.config.endpoint;
        let result = (|| -> io::Result<Socket> {
            let (domain, addr, proto) = match endpoint {
                Endpoint::Tcp(a) => (
                    Domain::for_address(*a),
                    SockAddr::from(*a),
                    Some(Protocol::TCP),
                ),
                Endpoint::Unix(p) => (Domain::UNIX, SockAddr::unix(p)?, None),
            };
            let sock = Socket::new(domain, Type::STREAM.nonblocking().cloexec(), proto)?;
            enable_rx_timestamps(&sock);
            if let Endpoint::Tcp(a) = endpoint {
                sock.set_nodelay(true)?;
                if a.ip().is_loopback() {
                    cheapest_congestion_control(&sock);
                }
            }
            match sock.connect(&addr) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
                Err(e) => return Err(e),
            }
            Ok(sock)
        })();
        let c = &mut self.conns[i];
        match result {
            Ok(sock) => {
                c.generation = c.generation.wrapping_add(1);
                let token = token(i, c.generation);
                let added = self.io.watch_connect(sock.as_raw_fd(), token);
                if let Err(e) = added {
                    // Out of descriptors or similar: a connect failure too.
                    drop(e);
                    self.fail_connect(i, now);
                    return;
                }
                c.sock = Some(sock);
                c.state = State::Connecting { since: now };
                self.stats.connections_opened += 1;
                self.issue_closed(i, now);
                self.mark_free(i);
            }
            Err(_) => self.fail_connect(i, now),
        }
    }

    /// A connect failed: the requests waiting for it fail with it.
    fn fail_connect(&mut self, i: usize, now: Instant) {
        self.stats.connect_failures += 1;
        self.issue_closed(i, now);
        // Under --rate a connection may fail with nothing due on it yet: that
        // is counted in the connection figures, not as a failed request.
        while let Some(p) = self.conns[i].queue.pop_front() {
            self.queued -= 1;
            self.rec
                .record(now, p.sched, None, Outcome::Failed(Failure::Connect), p.req);
        }
        self.close(i, now, CONNECT_BACKOFF);
    }

    /// Drops the socket; requests not yet answered wait for the next one.
    fn close(&mut self, i: usize, now: Instant, backoff: Duration) {
        let c = &mut self.conns[i];
        if let Some(sock) = c.sock.take() {
            if c.sent_any && !c.answered {
                self.stats.never_answered += 1;
            }
            // On io_uring the receive (or the connect's poll) holds the
            // socket open; ending it lets it close (see `Io::release`).
            let op = match c.state {
                State::Open => OP_RECV,
                _ => OP_POLL,
            };
            if self.io.release(token(i, c.generation) | op) && c.sending && !c.wbuf.is_empty() {
                // The kernel may still read the old batch.
                self.retired.push(std::mem::take(&mut c.wbuf));
            }
            drop(sock);
        }
        self.inflight -= c.written_reqs;
        let ramping = c.ramping;
        c.state = State::Closed {
            retry_at: now + backoff,
        };
        c.parser.reset();
        c.rstart = 0;
        c.rend = 0;
        c.written_reqs = 0;
        c.sending = false;
        c.batch_pos = 0;
        c.batch_end = 0;
        c.sent_any = false;
        c.answered = false;
        c.first_sent = None;
        for p in c.queue.iter_mut() {
            p.sent = None;
        }
        if ramping {
            // Failed or closed before its first answer: the next slot's turn
            // (this one retries on its own).
            self.ramped(i);
        }
        if backoff.is_zero() {
            self.start_connect(i, now);
        }
    }

    fn on_event(&mut self, token: u64, ready: Ready, now: Instant) {
        let Some(i) = self.live_slot(token) else {
            return; // An event for a socket this slot no longer has.
        };
        if let State::Connecting { .. } = self.conns[i].state {
            if !ready.writable() {
                return;
            }
            let err = self.conns[i]
                .sock
                .as_ref()
                .and_then(|s| s.take_error().ok().flatten());
            if err.is_some() {
                self.fail_connect(i, now);
                return;
            }
            self.conns[i].state = State::Open;
            let fd = self.conns[i].sock.as_ref().map(|s| s.as_raw_fd());
            if fd.is_none_or(|fd| self.io.receive(fd, token).is_err()) {
                self.fail_connect(i, now);
                return;
            }
            if self.plan.pacing.is_open() {
                // An open loop's connection may idle: connected is through.
                self.ramped(i);
            }
            self.issue_closed(i, now);
            self.push_writes(i, now);
            // Fall through: data may already be waiting.
        }
        if ready.readable() {
            self.on_readable(i, now, ready.hangup());
        }
        if ready.writable() && self.conns[i].state == State::Open {
            self.push_writes(i, now);
        }
    }

    /// Writes every queued request not yet on the wire.
    fn push_writes(&mut self, i: usize, now: Instant) {
        if self.conns[i].state != State::Open {
            if let State::Closed { .. } = self.conns[i].state {
                self.start_connect(i, now);
            }
            return;
        }
        if self.conns[i].sending {
            if !(self.depth == 1 && self.conns[i].written_reqs == 0) {
                return; // Its completion sends the rest.
            }
            // A quiet send (see below) whose request was answered: it
            // wrote every byte.
            let c = &mut self.conns[i];
            c.sending = false;
            c.batch_pos = c.batch_end;
        }
        loop {
            let c = &mut self.conns[i];
            if c.batch_pos == c.batch_end {
                let unsent = c.queue.len() - c.written_reqs;
                if unsent == 0 {
                    return;
                }
                let k = unsent.min(self.depth);
                c.batch_pos = 0;
                c.batch_end = k * self.req_len;
                for p in c.queue.iter_mut().skip(c.written_reqs).take(k) {
                    p.sent = Some(now);
                }
                if let Some(schedule) = self.plan.config.schedule.as_deref() {
                    // Each replayed request has its own bytes.
                    c.wbuf.clear();
                    for p in c.queue.iter().skip(c.written_reqs).take(k) {
                        c.wbuf.extend_from_slice(schedule.request(p.req));
                    }
                    c.batch_end = c.wbuf.len();
                } else if let Some(d) = self.draw.as_mut() {
                    // A mix's: its endpoint's fixed bytes, the drawn
                    // integers between them, in a buffer kept from the
                    // last batch.
                    c.wbuf.clear();
                    for p in c.queue.iter().skip(c.written_reqs).take(k) {
                        d.mix.write(p.req, &mut d.values, &mut c.wbuf);
                    }
                    c.batch_end = c.wbuf.len();
                }
                c.written_reqs += k;
                self.inflight += k;
                c.sent_any = true;
                c.first_sent.get_or_insert(now);
            }
            let fd = c
                .sock
                .as_ref()
                .expect("open connection has a socket")
                .as_raw_fd();
            if let Some(u) = self.io.ring() {
                let buf = if self.own_bytes {
                    &c.wbuf[c.batch_pos..c.batch_end]
                } else {
                    &self.batch[c.batch_pos..c.batch_end]
                };
                let token = token(i, c.generation);
                // One request at a time per connection (no pipelining): its
                // answer says the send wrote every byte, so a send that
                // did reports nothing and does not end a wait for a batch
                // of responses (each would otherwise count as one).
                let quiet = self.depth == 1;
                // SAFETY: the shared batch lives as long as the worker, which
                // drops the ring first; `wbuf` is not touched while
                // `sending`, and is retired, not freed, if the connection
                // closes first (see `close`).
                if unsafe { u.send(fd, buf.as_ptr(), buf.len(), token, quiet) }.is_err() {
                    self.fail_exchange(i, now, Failure::Reset);
                    return;
                }
                c.sending = true;
                return;
            }
            while c.batch_pos < c.batch_end {
                let buf = if self.own_bytes {
                    &c.wbuf[c.batch_pos..c.batch_end]
                } else {
                    &self.batch[c.batch_pos..c.batch_end]
                };
                let n = send_raw(fd, buf);
                if n >= 0 {
                    c.batch_pos += n as usize;
                    continue;
                }
                let err = io::Error::last_os_error();
                match err.kind() {
                    io::ErrorKind::WouldBlock => return, // EPOLLOUT will resume it.
                    io::ErrorKind::Interrupted => continue,
                    _ => {
                        self.fail_exchange(i, now, Failure::Reset);
                        return;
                    }
                }
            }
        }
    }

    /// Reads and frames what arrived. A short read means the socket is
    /// drained, unless the peer also hung up: then read on to the EOF, or
    /// the close (which ends close-delimited bodies) would go unseen under
    /// edge triggering.
    fn on_readable(&mut self, i: usize, now: Instant, hangup: bool) {
        loop {
            let c = &mut self.conns[i];
            let Some(sock) = c.sock.as_ref() else { return };
            if c.rbuf.is_empty() {
                c.rbuf = vec![0; READ_BUF_FIRST];
            }
            if c.rend == c.rbuf.len() {
                if c.rstart > 0 {
                    c.rbuf.copy_within(c.rstart..c.rend, 0);
                    c.rend -= c.rstart;
                    c.rstart = 0;
                } else {
                    let len = c.rbuf.len();
                    c.rbuf.resize(len * 2, 0);
                }
            }
            let space = c.rbuf.len() - c.rend;
            let fd = sock.as_raw_fd();
            let (n, stamp) = recv_stamped(fd, &mut c.rbuf[c.rend..]);
            if n > 0 {
                c.rend += n as usize;
                // A fresh clock for what this read sets off (the next
                // request), and the kernel's for when the bytes arrived.
                let now = Instant::now();
                let arrived = stamp.map_or(now, arrival);
                if !self.parse_available(i, now, arrived) {
                    return; // The connection was closed while parsing.
                }
                if (n as usize) < space && !hangup {
                    return; // A short read drained the socket.
                }
                // A full read: a small buffer grows, so that large
                // responses take few reads.
                let c = &mut self.conns[i];
                if (n as usize) == space && c.rbuf.len() < READ_BUF {
                    let len = c.rbuf.len();
                    c.rbuf.resize((len * 2).min(READ_BUF), 0);
                }
                continue;
            }
            if n == 0 {
                self.on_eof(i, now);
                return;
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::WouldBlock => return,
                io::ErrorKind::Interrupted => continue,
                _ => {
                    self.fail_exchange(i, now, Failure::Reset);
                    return;
                }
            }
        }
    }

    /// Frames every complete response in the buffer. Returns false if the
    /// connection was closed meanwhile.
    ///
    /// `arrived` is when the bytes reached the socket, which is when the
    /// responses they complete ended: a response read late (the loop was
    /// busy with others, or batching its wake-ups) keeps its true latency.
    fn parse_available(&mut self, i: usize, now: Instant, arrived: Instant) -> bool {
        let cfg = self.plan.config.clone();
        loop {
            let c = &mut self.conns[i];
            if c.rstart == c.rend {
                c.rstart = 0;
                c.rend = 0;
                return true;
            }
            if c.queue.is_empty() || c.written_reqs == 0 {
                // Bytes nobody asked for.
                self.fail_exchange(i, now, Failure::Parse);
                return false;
            }
            c.answered = true;
            if c.ramping {
                self.ramped(i);
            }
            let c = &mut self.conns[i];
            let req = c.queue.front().expect("checked non-empty").req;
            let (expect_status, expect_body, head) = expectations(&cfg, req);
            match c.parser.feed(&c.rbuf[c.rstart..c.rend], head, expect_body) {
                Ok(Progress::Partial { consumed }) => {
                    c.rstart += consumed;
                    if c.rstart == c.rend {
                        c.rstart = 0;
                        c.rend = 0;
                    }
                    return true;
                }
                Ok(Progress::Complete { consumed, response }) => {
                    c.rstart += consumed;
                    let p = c.queue.pop_front().expect("checked non-empty");
                    self.queued -= 1;
                    c.written_reqs -= 1;
                    self.inflight -= 1;
                    let outcome = judge(expect_status, &response);
                    // Never before the request left (a clock step could say so).
                    let ended = arrived.max(p.sent.unwrap_or(p.sched));
                    let lat = ended.saturating_duration_since(p.sched).as_secs_f64() * 1e6;
                    self.recent_latency_us += (lat - self.recent_latency_us) / 32.0;
                    self.rec.record_response(
                        ended,
                        p.sched,
                        p.sent,
                        outcome,
                        (response.status, &c.parser),
                        p.req,
                    );
                    if !response.keep_alive || !cfg.keep_alive {
                        self.close(i, now, Duration::ZERO);
                        return false;
                    }
                    self.after_response(i, now);
                }
                Err(e) => {
                    let kind = if e == ParseError::Truncated {
                        Failure::Reset
                    } else {
                        Failure::Parse
                    };
                    self.fail_exchange(i, now, kind);
                    return false;
                }
            }
        }
    }

    /// A response ended on a connection that stays open.
    fn after_response(&mut self, i: usize, now: Instant) {
        if self.conns[i].queue.is_empty() {
            self.issue_closed(i, now);
            self.push_writes(i, now);
        }
        if self.conns[i].queue.len() < self.depth {
            self.mark_free(i);
        }
    }

    fn on_eof(&mut self, i: usize, now: Instant) {
        let cfg = Arc::clone(&self.plan.config);
        let c = &mut self.conns[i];
        let req = c.queue.front().map_or(0, |p| p.req);
        let (expect_status, needle, _) = expectations(&cfg, req);
        match c.parser.finish_at_eof(needle) {
            Ok(Some(response)) => {
                if let Some(p) = c.queue.pop_front() {
                    self.queued -= 1;
                    if c.written_reqs > 0 {
                        c.written_reqs -= 1;
                        self.inflight -= 1;
                    }
                    let outcome = judge(expect_status, &response);
                    self.rec.record_response(
                        now,
                        p.sched,
                        p.sent,
                        outcome,
                        (response.status, &c.parser),
                        p.req,
                    );
                }
                self.close(i, now, Duration::ZERO);
            }
            Ok(None) if c.written_reqs == 0 => {
                // The server closed an idle connection: not an error.
                self.close(i, now, Duration::ZERO);
            }
            Ok(None) | Err(ParseError::Truncated) => self.fail_exchange(i, now, Failure::Reset),
            Err(_) => self.fail_exchange(i, now, Failure::Parse),
        }
    }

    /// The request at the head of the queue failed; the connection is
    /// dropped and the requests behind it are retried on a new one.
    fn fail_exchange(&mut self, i: usize, now: Instant, kind: Failure) {
        let c = &mut self.conns[i];
        if c.written_reqs > 0 {
            if let Some(p) = c.queue.pop_front() {
                self.queued -= 1;
                self.rec
                    .record(now, p.sched, p.sent, Outcome::Failed(kind), p.req);
            }
        }
        self.close(i, now, Duration::ZERO);
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

/// What a good answer to request `req` is: the statuses expected, the
/// text its body must hold, and whether it was a HEAD (no body). A mix's
/// endpoint says it for its own requests; otherwise the run's config
/// (a replayed HEAD's answer has no body, whatever the others do).
#[inline]
fn expectations(cfg: &LoadConfig, req: u32) -> (&ExpectStatus, &[u8], bool) {
    if let Some(mix) = cfg.mix.as_deref() {
        let e = &mix.endpoints[req as usize];
        return (&e.expect_status, &e.expect_body, e.is_head());
    }
    let head = cfg.head_request || cfg.schedule.as_deref().is_some_and(|s| s.is_head(req));
    (&cfg.expect_status, &cfg.expect_body, head)
}

/// Holds a complete response to the checks.
fn judge(expect: &ExpectStatus, response: &super::response::Response) -> Outcome {
    if !expect.matches(response.status) {
        Outcome::Failed(Failure::Status)
    } else if !response.body_matched {
        Outcome::Failed(Failure::Body)
    } else {
        Outcome::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wall_ago(ago: Duration) -> libc::timespec {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid out-pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
        let ns = now.tv_sec as i128 * 1_000_000_000 + now.tv_nsec as i128 - ago.as_nanos() as i128;
        libc::timespec {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        }
    }

    #[test]
    fn a_stamp_lands_on_the_monotonic_clock_by_its_age() {
        let at = arrival(wall_ago(Duration::from_millis(3)));
        let age = Instant::now() - at;
        // Read a moment after the stamp was made: a hair older, never younger.
        assert!(age >= Duration::from_millis(3), "{age:?}");
        assert!(age < Duration::from_millis(4), "{age:?}");
    }

    #[test]
    fn a_stamp_from_the_future_counts_as_now() {
        let now = Instant::now();
        let future = wall_ago(Duration::ZERO);
        let future = libc::timespec {
            tv_sec: future.tv_sec + 60,
            ..future
        };
        let at = arrival(future);
        assert!(at >= now && at <= Instant::now(), "{at:?} vs {now:?}");
    }

    #[test]
    fn loopback_sockets_use_reno() {
        let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        cheapest_congestion_control(&sock);
        let mut name = [0u8; 16];
        let mut len = name.len() as libc::socklen_t;
        // SAFETY: valid socket and out-buffers.
        let rc = unsafe {
            libc::getsockopt(
                sock.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_CONGESTION,
                name.as_mut_ptr().cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        let name = &name[..len as usize];
        let name = name.split(|&b| b == 0).next().unwrap();
        assert_eq!(name, b"reno");
    }

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
                if let Happened::Done(ev) = w.io.event(e) {
                    w.on_completion(ev, Instant::now()).unwrap();
                }
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

    #[test]
    fn received_bytes_carry_the_kernel_stamp() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        enable_rx_timestamps(&client);
        client
            .connect(&SockAddr::from(listener.local_addr().unwrap()))
            .unwrap();
        let (mut server, _) = listener.accept().unwrap();
        // The kernel turns stamping on a moment after the first socket asks
        // (a deferred static key); packets before that carry no stamp.
        std::thread::sleep(Duration::from_millis(50));
        server.write_all(b"hello").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let mut buf = [0u8; 16];
        let (n, stamp) = recv_stamped(client.as_raw_fd(), &mut buf);
        let now = Instant::now();
        assert_eq!(n, 5);
        let at = arrival(stamp.expect("loopback TCP is stamped"));
        // Read 20 ms after it arrived: the stamp says so.
        assert!(now - at >= Duration::from_millis(19), "{:?}", now - at);
    }
}
