//! What comes back: bytes from the ring's completed receives or read from
//! a ready socket, framed into responses, each judged against what the
//! run expects and recorded with the kernel's stamp of its arrival; an
//! EOF, a reset or bytes nobody asked for end the exchange.
//!
//! It never writes a request (an answered connection asks `send.rs` for
//! the next) and never opens a socket.

use super::Worker;
use crate::load::config::LoadConfig;
use crate::load::conn::{absorb, Conn, READ_BUF, READ_BUF_FIRST};
use crate::load::io::Received;
use crate::load::recorder::{Failure, Outcome};
use crate::load::response::{ExpectStatus, Needle, ParseError, Progress, Response};
use crate::load::sys::{arrival, recv_stamped};
use crate::load::window::Window;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Worker {
    /// A receive completed: the bytes (if any) go to the slot's buffer and
    /// are framed; EOF, errors and an ended receive are dealt with.
    pub(super) fn on_received(&mut self, r: Received, now: Instant) -> io::Result<()> {
        let token = r.token;
        let live = self.live_slot(token);
        let mut arrived = None;
        // A receive into a buffer that got no bytes met the EOF (the
        // buffer still holds the message header).
        let mut eof = r.res == 0;
        // Every buffer goes back, whoever it was for.
        let conns = &mut self.conns;
        self.io.take_received(&r, |payload, stamp| {
            let Some(i) = live else { return };
            eof = payload.is_empty();
            absorb(&mut conns[i], payload);
            // A fresh clock for what this sets off (the next request),
            // and the kernel's for when the bytes arrived.
            let now = Instant::now();
            arrived = Some((now, stamp.map_or(now, arrival)));
        });
        let Some(i) = live else { return Ok(()) };
        if eof {
            self.on_eof(i, now);
            return Ok(());
        }
        if let Some((now, arrived)) = arrived {
            if !self.parse_available(i, now, arrived) {
                return Ok(()); // The connection was closed while parsing.
            }
        } else if r.res < 0 && r.res != -libc::ENOBUFS && r.res != -libc::ECANCELED {
            self.fail_exchange(i, now, Failure::Reset);
            return Ok(());
        }
        // Out of buffers (they are back now), or the kernel ended the
        // receive for its own reasons (an overflowing completion queue): a
        // live socket gets a new one, which picks up what is waiting.
        if r.ended && self.live_slot(token) == Some(i) {
            let fd = self.conns[i].sock.as_ref().map(|s| s.as_raw_fd());
            if let Some(fd) = fd {
                self.io.receive(fd, token)?;
            }
        }
        Ok(())
    }

    /// Reads and frames what arrived. A short read means the socket is
    /// drained, unless the peer also hung up: then read on to the EOF, or
    /// the close (which ends close-delimited bodies) would go unseen under
    /// edge triggering.
    pub(super) fn on_readable(&mut self, i: usize, now: Instant, hangup: bool) {
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
    pub(super) fn parse_available(&mut self, i: usize, now: Instant, arrived: Instant) -> bool {
        let cfg = self.plan.config.clone();
        let needles = Arc::clone(&self.needles);
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
            let (expect_status, expect_body, head) = expectations(&cfg, &needles, req);
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
                    count_answer(&self.window, c, p.sent.unwrap_or(p.sched), ended);
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
    pub(super) fn after_response(&mut self, i: usize, now: Instant) {
        if self.conns[i].queue.is_empty() {
            self.issue_closed(i, now);
            self.push_writes(i, now);
        }
        if self.conns[i].queue.len() < self.depth {
            self.mark_free(i);
        }
    }

    pub(super) fn on_eof(&mut self, i: usize, now: Instant) {
        let cfg = Arc::clone(&self.plan.config);
        let needles = Arc::clone(&self.needles);
        let c = &mut self.conns[i];
        let req = c.queue.front().map_or(0, |p| p.req);
        let (expect_status, needle, _) = expectations(&cfg, &needles, req);
        match c.parser.finish_at_eof(needle) {
            Ok(Some(response)) => {
                if let Some(p) = c.queue.pop_front() {
                    self.queued -= 1;
                    if c.written_reqs > 0 {
                        c.written_reqs -= 1;
                        self.inflight -= 1;
                    }
                    let outcome = judge(expect_status, &response);
                    count_answer(&self.window, c, p.sent.unwrap_or(p.sched), now);
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
    pub(super) fn fail_exchange(&mut self, i: usize, now: Instant, kind: Failure) {
        let c = &mut self.conns[i];
        if c.written_reqs > 0 {
            if let Some(p) = c.queue.pop_front() {
                self.queued -= 1;
                if let Some(sent) = p.sent {
                    c.window_carried |= self.window.meets(sent, now);
                }
                self.rec
                    .record(now, p.sched, p.sent, Outcome::Failed(kind), p.req);
            }
        }
        self.close(i, now, Duration::ZERO);
    }
}

/// What a good answer to request `req` is: the statuses expected, the
/// text its body must hold (from `needles`, the worker's, built once per
/// run in the same order), and whether it was a HEAD (no body). A mix's
/// endpoint says it for its own requests; otherwise the run's config
/// (a replayed HEAD's answer has no body, whatever the others do).
#[inline]
fn expectations<'a>(
    cfg: &'a LoadConfig,
    needles: &'a [Needle],
    req: u32,
) -> (&'a ExpectStatus, &'a Needle, bool) {
    if let Some(mix) = cfg.mix.as_deref() {
        let e = &mix.endpoints[req as usize];
        return (&e.expect_status, &needles[req as usize], e.is_head());
    }
    let head = cfg.head_request || cfg.schedule.as_deref().is_some_and(|s| s.is_head(req));
    (&cfg.expect_status, &needles[0], head)
}

/// Holds a complete response to the checks.
fn judge(expect: &ExpectStatus, response: &Response) -> Outcome {
    if !expect.matches(response.status) {
        Outcome::Failed(Failure::Status)
    } else if !response.body_matched {
        Outcome::Failed(Failure::Body)
    } else {
        Outcome::Ok
    }
}

/// Who got served (issue 39): an answer that ended in the counted window
/// counts for its connection slot, and one whose exchange overlapped the
/// window marks the slot as having carried a request in it. Every way a
/// response completes (its length, or the server closing after it)
/// counts the same.
fn count_answer(window: &Window, c: &mut Conn, sent: Instant, ended: Instant) {
    if window.counts(ended) {
        c.window_answers += 1;
        c.window_carried = true;
    } else if !c.window_carried {
        c.window_carried = window.meets(sent, ended);
    }
}
