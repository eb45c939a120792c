//! A slot's socket, from connect to close: the ramp that opens them in
//! waves a listen backlog can take, the connect watched through the seam,
//! its failure and back-off, the close that hands the socket back to the
//! kernel (cancelling its ring entries first), and a socket's readiness
//! (a connect done, or epoll's read and write).
//!
//! It never frames a response or decides when a request is due.

use super::{Worker, CONNECT_BACKOFF};
use crate::load::conn::{token, State};
use crate::load::epoll::Ready;
use crate::load::recorder::{Failure, Outcome};
use crate::load::sys::{cheapest_congestion_control, enable_rx_timestamps};
use crate::load::target::Endpoint;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl Worker {
    /// Starts the first connection of the next slots, while fewer than
    /// `ramp_max` are not through their first exchange: connections open
    /// in waves the server's listen backlog can take.
    pub(super) fn ramp(&mut self, now: Instant) {
        while self.ramping < self.ramp_max && self.ramp_next < self.conns.len() {
            let i = self.ramp_next;
            self.ramp_next += 1;
            self.ramping += 1;
            self.conns[i].ramping = true;
            self.start_connect(i, now);
        }
    }

    /// The ramp is over: the parked connections start their closed loop.
    pub(super) fn unpark(&mut self, now: Instant) {
        for i in std::mem::take(&mut self.parked) {
            self.issue_closed(i as usize, now);
            self.push_writes(i as usize, now);
        }
    }

    /// Slot `i`'s first connection is through (or failed): the loop's next
    /// turn starts another (not from here: a connect that fails at once
    /// would recurse through every slot).
    pub(super) fn ramped(&mut self, i: usize) {
        if std::mem::take(&mut self.conns[i].ramping) {
            self.ramping -= 1;
            self.plan.ramp_left.fetch_sub(1, Ordering::Relaxed);
        }
    }

    pub(super) fn start_connect(&mut self, i: usize, now: Instant) {
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
    pub(super) fn fail_connect(&mut self, i: usize, now: Instant) {
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
    pub(super) fn close(&mut self, i: usize, now: Instant, backoff: Duration) {
        let c = &mut self.conns[i];
        if let Some(sock) = c.sock.take() {
            if c.sent_any && !c.answered {
                self.stats.never_answered += 1;
            }
            // On io_uring the receive (or the connect's poll) holds the
            // socket open; ending it lets it close (see `Io::release`).
            let connecting = c.state != State::Open;
            if self.io.release(token(i, c.generation), connecting)
                && c.sending
                && !c.wbuf.is_empty()
            {
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
            // A request given back to the queue was in flight until now.
            if let Some(sent) = p.sent.take() {
                c.window_carried |= self.window.meets(sent, now);
            }
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

    pub(super) fn on_event(&mut self, token: u64, ready: Ready, now: Instant) {
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
}
