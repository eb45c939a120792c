//! The connection loop's one seam to the kernel: io_uring or epoll, chosen
//! once per thread (`--io`, or what the kernel has), so that `worker/`
//! is one loop that asks this for what it needs: watch a connect, start a
//! connection's receives, end them, move the timer, wait, and read the
//! events a wait brought.
//!
//! The two differ in kind, not only in calls: io_uring completes receives
//! and sends (the bytes are in a provided buffer, the send is done), epoll
//! says a socket is ready and the loop then reads and writes it itself.
//! So an event is one of the [`Happened`]s: the timer, a socket ready (or
//! a connect's poll done), a receive or a send completed. The ring's tags
//! (which operation a completion ends) and its provided buffers stay on
//! this side: the loop sees a slot's token and the bytes
//! ([`Io::take_received`]), as it sees epoll's tokens. The loop's sends on
//! the ring ([`Io::ring`]) are its own. Why each waits as it does is in
//! `uring/` and `epoll.rs`, and in the loop's `wait_until`.
//!
//! The seam never decides when to send, frames a response, or counts.

use super::epoll::{Epoll, Ready, Timer};
use super::uring::{Event, Uring, OP_MASK, OP_POLL, OP_RECV, OP_SEND, TIMER_TAG};
use super::IoMode;
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// The timer's token: no connection slot reaches this index.
pub(super) const TIMER_TOKEN: u64 = TIMER_TAG;

// One per thread, so its size does not matter; boxing the ring would put
// a pointer between the loop and every entry it queues.
#[allow(clippy::large_enum_variant)]
pub(super) enum Io {
    /// Receives, sends and connect polls as ring entries, batched waits
    /// and the ring's own timers (see `uring/`).
    Uring(Uring),
    /// Edge-triggered readiness, plain calls by the loop, and (for a
    /// closed loop, which waits without a timeout) a timerfd.
    Epoll { epoll: Epoll, timer: Option<Timer> },
}

/// One event of a wait. A token is the slot's (`conn::token`), without
/// the ring's operation tag.
pub(super) enum Happened {
    /// The timer fired (io_uring's, or the timerfd).
    Timer,
    /// epoll: a socket is ready; io_uring: a connect's poll ended.
    Ready(u64, Ready),
    /// io_uring: a receive completed (its bytes through
    /// [`Io::take_received`]).
    Received(Received),
    /// io_uring: a send completed: `res` bytes written, or -errno.
    Sent { token: u64, res: i32 },
}

/// A receive's completion, as the ring reported it.
pub(super) struct Received {
    pub(super) token: u64,
    /// The result: above 0 when bytes came (with the header and stamp in
    /// the buffer), 0 at EOF, or -errno.
    pub(super) res: i32,
    /// The provided buffer it filled, which [`Io::take_received`] gives
    /// back to the ring.
    buf: Option<u16>,
    /// The multishot receive ended: a live socket needs a new one.
    pub(super) ended: bool,
}

/// A ring completion as the loop's event: the operation tag decides the
/// kind and is taken off the token.
fn happened(ev: Event) -> Happened {
    if ev.token == TIMER_TOKEN {
        return Happened::Timer;
    }
    let token = ev.token & !OP_MASK;
    match ev.token & OP_MASK {
        OP_RECV => Happened::Received(Received {
            token,
            res: ev.res,
            buf: ev.buf,
            ended: ev.ended,
        }),
        OP_SEND => Happened::Sent { token, res: ev.res },
        OP_POLL => Happened::Ready(token, ev.ready),
        // No entry carries the fourth tag: nothing ready.
        _ => Happened::Ready(token, Ready::from_bits(0)),
    }
}

impl Io {
    /// The loop's I/O for `connections` sockets: io_uring where the mode
    /// and the kernel allow, else epoll (with a timerfd for a closed loop).
    pub(super) fn new(mode: IoMode, connections: usize, closed: bool) -> io::Result<Self> {
        let uring = match mode {
            IoMode::Auto => Uring::new(connections).ok(),
            IoMode::Uring => Some(Uring::new(connections)?),
            IoMode::Epoll => None,
        };
        if let Some(u) = uring {
            return Ok(Io::Uring(u));
        }
        let epoll = Epoll::new(connections.max(1) * 2)?;
        let timer = if closed {
            Some(epoll.timer(TIMER_TOKEN)?)
        } else {
            None
        };
        Ok(Io::Epoll { epoll, timer })
    }

    /// The name the report gives the loop's I/O.
    pub(super) fn name(&self) -> &'static str {
        match self {
            Io::Uring(_) => "io_uring",
            Io::Epoll { .. } => "epoll",
        }
    }

    /// The ring, when the loop runs on one: its sends and receives are
    /// completions the loop handles itself.
    pub(super) fn ring(&mut self) -> Option<&mut Uring> {
        match self {
            Io::Uring(u) => Some(u),
            Io::Epoll { .. } => None,
        }
    }

    /// The `e`-th event of the last wait.
    pub(super) fn event(&self, e: usize) -> Happened {
        match self {
            Io::Uring(u) => happened(u.event(e)),
            Io::Epoll { epoll, .. } => match epoll.event(e) {
                (TIMER_TOKEN, _) => Happened::Timer,
                (token, ready) => Happened::Ready(token, ready),
            },
        }
    }

    /// A receive's bytes and the kernel's receive stamp of its last packet
    /// go to `take`, and its buffer back to the ring, whoever it was for.
    /// Without a buffer (an error, an ended receive) `take` is not called.
    pub(super) fn take_received(
        &mut self,
        r: &Received,
        take: impl FnOnce(&[u8], Option<libc::timespec>),
    ) {
        if let (Some(bid), Io::Uring(u)) = (r.buf, self) {
            let (payload, stamp) = u.received(bid, r.res);
            take(payload, stamp);
            u.recycle(bid);
        }
    }

    /// Watches a connecting socket: a one-shot poll in the ring, or its one
    /// registration for read and write on epoll.
    pub(super) fn watch_connect(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        match self {
            Io::Uring(u) => u.poll_connect(fd, token),
            Io::Epoll { epoll, .. } => epoll.add(fd, token),
        }
    }

    /// A connection is open (or its receive ended): io_uring gets it a
    /// multishot receive; epoll's registration already covers reads.
    pub(super) fn receive(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        match self {
            Io::Uring(u) => u.recv(fd, token),
            Io::Epoll { .. } => Ok(()),
        }
    }

    /// A socket is about to close: on io_uring its receive (or, while
    /// `connecting`, its connect poll), under `token`, holds it open, so
    /// it is cancelled, and the entries naming the descriptor go in before
    /// its number can be reused. An error here means a broken ring; the
    /// socket then lingers until the ring is dropped at the end of the
    /// run. Returns whether a send of it may still be in the kernel
    /// (io_uring).
    pub(super) fn release(&mut self, token: u64, connecting: bool) -> bool {
        match self {
            Io::Uring(u) => {
                let op = if connecting { OP_POLL } else { OP_RECV };
                let _ = u.cancel(token | op);
                let _ = u.flush();
                true
            }
            Io::Epoll { .. } => false,
        }
    }

    /// Hands the entries queued since the last wait to the kernel: at the
    /// end of a run, so that a send the loop queued (and counted as sent)
    /// leaves before its socket closes. epoll's sends were calls made at
    /// once, so it has nothing queued.
    pub(super) fn hand_over(&mut self) -> io::Result<()> {
        match self {
            Io::Uring(u) => u.flush(),
            Io::Epoll { .. } => Ok(()),
        }
    }

    /// Sets the timer to fire `after` from now. Returns false when there is
    /// none (an open loop on epoll sleeps by its waits' timeouts).
    pub(super) fn arm_timer(&mut self, after: Duration) -> io::Result<bool> {
        match self {
            Io::Uring(u) => u.arm_timer(after)?,
            Io::Epoll {
                timer: Some(timer), ..
            } => timer.arm(after)?,
            Io::Epoll { timer: None, .. } => return Ok(false),
        }
        Ok(true)
    }

    /// The timer fired: a timerfd is read so it can fire again.
    pub(super) fn clear_timer(&self) {
        if let Io::Epoll {
            timer: Some(timer), ..
        } = self
        {
            timer.clear();
        }
    }

    /// Waits for one event at least, `until` at the longest.
    pub(super) fn wait_for_event(&mut self, until: Duration) -> io::Result<usize> {
        match self {
            Io::Uring(u) => u.wait(1, Some(until)),
            Io::Epoll { epoll, .. } => epoll.wait(Some(until)),
        }
    }

    /// A closed loop's wait, with no timeout of its own (the timer carries
    /// the loop's next deadline): on io_uring for `want()` completions,
    /// with the guard timer when that is more than one; on epoll for the
    /// first event.
    pub(super) fn wait_closed(&mut self, want: impl FnOnce() -> usize) -> io::Result<usize> {
        match self {
            Io::Uring(u) => {
                let want = want();
                if want > 1 {
                    u.arm_guard()?;
                }
                u.wait(want, None)
            }
            Io::Epoll { epoll, .. } => epoll.wait(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loop sees the kind of a ring completion and its slot's token,
    /// never the ring's tag: a tag left on would name no slot.
    #[test]
    fn a_ring_completion_becomes_its_kind_with_the_slot_token() {
        let slot = 5 | (9u64 << 32);
        let ev = |token, res, buf| Event {
            token,
            ready: Ready::from_bits(libc::POLLOUT as u32),
            res,
            buf,
            ended: false,
        };
        let cases = [
            (ev(TIMER_TAG, 0, None), "timer"),
            (ev(slot | OP_POLL, 4, None), "ready"),
            (ev(slot | OP_RECV, 100, Some(3)), "received"),
            (ev(slot | OP_SEND, 18, None), "sent"),
        ];
        for (event, want) in cases {
            let (kind, token) = match happened(event) {
                Happened::Timer => ("timer", slot),
                Happened::Ready(t, ready) => {
                    assert!(ready.writable(), "a connect poll keeps its readiness");
                    ("ready", t)
                }
                Happened::Received(r) => {
                    assert_eq!((r.res, r.buf), (100, Some(3)));
                    ("received", r.token)
                }
                Happened::Sent { token, res } => {
                    assert_eq!(res, 18);
                    ("sent", token)
                }
            };
            assert_eq!((kind, token), (want, slot), "{want}");
        }
    }
}
