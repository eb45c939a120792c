//! The loop's requests, issued and written: a closed loop fills a
//! connection's pipeline when its last answer ends, an open loop hands
//! each request that falls due to a free connection, and the queued ones
//! go out as one batch per connection (a ring entry on io_uring, `send`
//! calls on epoll), resumed when a send completes or a socket is writable.
//!
//! It never reads a response or opens a socket (a closed slot asks
//! `connect.rs` for one).

use super::{Worker, LATE_THRESHOLD, RAMP_CONNECTS};
use crate::load::config::Pacing;
use crate::load::conn::{token, Pending, State};
use crate::load::recorder::Failure;
use crate::load::sys::send_raw;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

impl Worker {
    /// Open loop: hands every request now due to a free connection.
    pub(super) fn dispatch_due(&mut self, now: Instant) {
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

    pub(super) fn mark_free(&mut self, i: usize) {
        let c = &self.conns[i];
        if !c.in_free && c.queue.len() < self.depth && self.plan.pacing.is_open() {
            self.conns[i].in_free = true;
            self.free.push(i as u32);
        }
    }

    /// Closed loop: fills the connection's pipeline with fresh requests.
    pub(super) fn issue_closed(&mut self, i: usize, now: Instant) {
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

    /// Writes every queued request not yet on the wire.
    pub(super) fn push_writes(&mut self, i: usize, now: Instant) {
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

    /// A send completed: the rest of the batch, or the next one, goes out.
    pub(super) fn on_sent(&mut self, token: u64, res: i32, now: Instant) {
        let Some(i) = self.live_slot(token) else {
            return; // A send on a socket this slot no longer has.
        };
        let c = &mut self.conns[i];
        c.sending = false;
        if res <= 0 {
            self.fail_exchange(i, now, Failure::Reset);
            return;
        }
        c.batch_pos += res as usize;
        self.push_writes(i, now);
    }
}
