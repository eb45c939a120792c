//! A connection slot's state: its socket, the requests queued on it, its
//! write batch and its read buffer. The loop in `worker/` drives it;
//! this file holds only the data and the byte handling that needs no I/O.
//!
//! A connection never does I/O, counts, or decides when a request is due.

use super::response::ResponseParser;
use socket2::Socket;
use std::collections::VecDeque;
use std::time::Instant;

/// A connection's read buffer grows to this size when reads fill it...
pub(super) const READ_BUF: usize = 16 * 1024;
/// ...from this one, allocated at its first read: ten thousand connections
/// with small responses then hold about 10 MiB of buffers, not 160.
pub(super) const READ_BUF_FIRST: usize = 1024;

#[derive(Clone, Copy)]
pub(super) struct Pending {
    /// When the request was due (closed loop: when it was issued).
    pub(super) sched: Instant,
    /// When it was written; None while waiting for a connection.
    pub(super) sent: Option<Instant>,
    /// Under a schedule: the request's position in it (its bytes).
    pub(super) req: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum State {
    /// No socket. `retry_at` is when a new connect may start.
    Closed {
        retry_at: Instant,
    },
    Connecting {
        since: Instant,
    },
    Open,
}

pub(super) struct Conn {
    pub(super) sock: Option<Socket>,
    pub(super) generation: u32,
    pub(super) state: State,
    pub(super) queue: VecDeque<Pending>,
    /// Requests in `queue` already written (a prefix of it).
    pub(super) written_reqs: usize,
    /// Bytes of the current write batch still to go, from `batch_pos`.
    pub(super) batch_pos: usize,
    pub(super) batch_end: usize,
    /// Under a schedule: the current batch's bytes (each request has its
    /// own); otherwise the batch is the shared `Worker::batch`.
    pub(super) wbuf: Vec<u8>,
    pub(super) parser: ResponseParser,
    pub(super) rbuf: Vec<u8>,
    pub(super) rstart: usize,
    pub(super) rend: usize,
    /// This socket carried a request / got any answer: for the count of
    /// connections that never got a single answer.
    pub(super) sent_any: bool,
    pub(super) answered: bool,
    /// The slot's (every socket's, reconnects included) answers completed
    /// in the counted window, and whether one of its requests was in
    /// flight in it: for `fairness` (issue 39).
    pub(super) window_answers: u64,
    pub(super) window_carried: bool,
    /// When this socket's first request went out.
    pub(super) first_sent: Option<Instant>,
    /// Whether the connection sits in the open loop's free list.
    pub(super) in_free: bool,
    /// On io_uring: a send of the current batch is in the ring.
    pub(super) sending: bool,
    /// The slot's first connection has not yet been answered (closed
    /// loop) or connected (open loop): it counts against the ramp.
    pub(super) ramping: bool,
}

impl Conn {
    pub(super) fn new(now: Instant) -> Self {
        Conn {
            sock: None,
            generation: 0,
            state: State::Closed { retry_at: now },
            queue: VecDeque::new(),
            written_reqs: 0,
            batch_pos: 0,
            batch_end: 0,
            wbuf: Vec::new(),
            parser: ResponseParser::default(),
            rbuf: Vec::new(),
            rstart: 0,
            rend: 0,
            sent_any: false,
            answered: false,
            window_answers: 0,
            window_carried: false,
            first_sent: None,
            in_free: false,
            sending: false,
            ramping: false,
        }
    }
}

/// The token a registration of slot `i`'s socket number `generation`
/// carries, so that an event for a socket the slot no longer has is known.
pub(super) fn token(i: usize, generation: u32) -> u64 {
    (i as u64) | ((generation as u64) << 32)
}

/// Appends received bytes to a connection's read buffer, making room.
pub(super) fn absorb(c: &mut Conn, bytes: &[u8]) {
    if c.rstart == c.rend {
        c.rstart = 0;
        c.rend = 0;
    }
    if c.rend + bytes.len() > c.rbuf.len() {
        if c.rstart > 0 {
            c.rbuf.copy_within(c.rstart..c.rend, 0);
            c.rend -= c.rstart;
            c.rstart = 0;
        }
        let need = c.rend + bytes.len();
        if need > c.rbuf.len() {
            c.rbuf.resize(need.max(c.rbuf.len() * 2), 0);
        }
    }
    c.rbuf[c.rend..c.rend + bytes.len()].copy_from_slice(bytes);
    c.rend += bytes.len();
}
