//! io_uring as the connection loop's I/O: the receives and sends
//! themselves go through the ring, many per system call.
//!
//! Each open socket has one multishot `recvmsg` that runs whenever data
//! arrives and lands it, with the packet's kernel receive stamp
//! (`SO_TIMESTAMPNS`), in a buffer the kernel takes from a ring of
//! provided buffers ([`BufRing`]); the loop copies the bytes out and gives
//! the buffer straight back. Each request batch is one `send` entry. A
//! connect waits on a one-shot poll. None of these is a system call of its
//! own: the loop queues entries while it handles a batch of completions,
//! and one `io_uring_enter` submits them all and waits for the next batch.
//! Against nginx here that took the loop from about 2.1 system calls per
//! request (one `sendto`, one `recvmsg`, a share of a wait) to a share of
//! one (docs/BENCHMARKS.md has the measurements).
//!
//! The wait batches wake-ups. An epoll waiter is woken by the first event,
//! and on loopback that wake-up is paid by the server: its `send` runs our
//! socket's receive path and, finding us asleep, sends an inter-processor
//! interrupt. With `DEFER_TASKRUN` the kernel queues completions as task
//! work that runs only when the loop enters the ring, and wakes the waiter
//! only once as many are queued as it asked for. The loop asks for about as
//! many responses as should arrive within a small share of the latency.
//! In a closed loop, what bounds a wait is a timer the loop sets once and
//! moves rarely, never a timeout per wait: on a VM, starting and cancelling a kernel timer per
//! wait (as the minimum wait of Linux 6.12 does) cost more than the
//! batching saved (measured: 6.7 against 5.7 us of generator CPU per
//! request). A guard timer re-armed every [`GUARD`] ends a wait whose
//! responses stopped coming. An open loop [`Uring::sleep`]s to each due
//! time: a timeout per wait, as it needs one anyway, and the responses
//! that come in meanwhile do not wake it.
//!
//! [`Uring::new`] is the one place that decides whether the kernel has
//! what this needs: deferred task work (Linux 6.1, which implies multishot
//! `recvmsg`, 6.0, and provided buffer rings, 5.19) and the registration
//! of the buffer ring. It fails otherwise, or where io_uring is disabled,
//! as some container runtimes do; the loop then uses epoll.

use super::epoll::Ready;
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

mod buffers;
use buffers::{stamp_in, BufRing, BGID, CONTROL_LEN};

/// Tag of the completions of cancellations and timer moves: no connection
/// token has it (slot indexes stay below 2^30).
const REMOVE_TAG: u64 = u64::MAX - 1;

/// Tag of the timer's completion (see [`Uring::arm_timer`]).
pub const TIMER_TAG: u64 = u64::MAX;
/// Tag of the guard's completions, which only end waits.
const GUARD_TAG: u64 = u64::MAX - 2;

/// How long a wait for several events may sleep when they stop coming.
pub const GUARD: Duration = Duration::from_millis(1);

/// A connection's token carries the operation in bits 30-31 of its low
/// word (the slot index is below them, the socket's generation above).
pub const OP_MASK: u64 = 3 << 30;
/// A connect's one-shot poll.
pub const OP_POLL: u64 = 0;
/// The socket's multishot receive.
pub const OP_RECV: u64 = 1 << 30;
/// A send.
pub const OP_SEND: u64 = 2 << 30;

/// What a connect's poll waits for: writable (connected or failed).
const CONNECT_MASK: u32 = libc::POLLOUT as u32;

/// One completion, as the loop sees it.
#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub token: u64,
    /// A connect poll's readiness (empty for other operations).
    pub ready: Ready,
    /// The result: bytes received or sent, 0 at EOF, or -errno.
    pub res: i32,
    /// The provided buffer a receive filled; the loop must give it back
    /// with [`Uring::recycle`] whatever it does with the event.
    pub buf: Option<u16>,
    /// The operation ended: a multishot receive will report no more and a
    /// live socket needs a new one.
    pub ended: bool,
}
pub struct Uring {
    ring: IoUring,
    bufs: BufRing,
    /// The receives' message header: the kernel reads only its name and
    /// control lengths, when each receive is submitted; boxed to stay put.
    msg: Box<libc::msghdr>,
    events: Vec<Event>,
    timer: Timer,
    guard: Timer,
}

/// A one-shot kernel timer of the ring.
struct Timer {
    /// The duration, read by the kernel when the entry that sets or moves
    /// the timer is submitted; boxed so its address stays put.
    ts: Box<types::Timespec>,
    /// Set and not yet fired.
    live: bool,
}

impl Timer {
    fn new() -> Self {
        Timer {
            ts: Box::new(types::Timespec::new()),
            live: false,
        }
    }

    /// The entry that sets the timer tagged `tag` to fire `after` from now,
    /// or moves it there if it is set. A move of a timer that fired
    /// meanwhile fails harmlessly (ENOENT): its event is on the way.
    fn set(&mut self, tag: u64, after: Duration) -> squeue::Entry {
        *self.ts = types::Timespec::from(after);
        let ts: *const types::Timespec = &*self.ts;
        let entry = if self.live {
            opcode::TimeoutUpdate::new(tag, ts)
                .build()
                .user_data(REMOVE_TAG)
        } else {
            opcode::Timeout::new(ts).build().user_data(tag)
        };
        self.live = true;
        entry
    }
}

impl Uring {
    /// A ring for about `connections` sockets. Fails when the kernel lacks
    /// deferred task work (Linux 6.1) or the buffer ring cannot be set up.
    pub fn new(connections: usize) -> io::Result<Self> {
        let entries = (connections.max(16) as u32).next_power_of_two().min(4096);
        Self::with_buffers(connections, (entries as u16).max(256))
    }

    /// [`Uring::new`] with `buffers` provided buffers (a power of two).
    pub fn with_buffers(connections: usize, buffers: u16) -> io::Result<Self> {
        let entries = (connections.max(16) as u32).next_power_of_two().min(4096);
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_taskrun_flag()
            .setup_cqsize(entries * 4)
            .build(entries)?;
        let p = ring.params();
        if !(p.is_feature_ext_arg() && p.is_feature_nodrop()) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "io_uring lacks extended wait arguments (Linux 5.11+)",
            ));
        }
        let bufs = BufRing::new(&ring, buffers)?;
        // SAFETY: an all-zero msghdr is valid (no name, no control).
        let mut msg: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        msg.msg_controllen = CONTROL_LEN as _;
        Ok(Uring {
            ring,
            bufs,
            msg,
            events: Vec::with_capacity(entries as usize),
            timer: Timer::new(),
            guard: Timer::new(),
        })
    }

    fn push(&mut self, entry: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every entry points at memory that outlives its
            // operation: timers at a `Timer`'s boxed timespec, receives at
            // the boxed `msg`, sends at what [`Uring::send`]'s caller vouched for.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return Ok(());
            }
            // The submission queue is full: hand it to the kernel.
            self.ring.submit()?;
        }
    }

    /// Hands queued entries to the kernel now. Before a descriptor is
    /// closed, so that no entry naming its number reaches a new socket
    /// that reuses it.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.ring.submission().is_empty() {
            self.ring.submit()?;
        }
        Ok(())
    }

    /// Reports when `fd`, connecting, becomes writable (connected or failed).
    pub fn poll_connect(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        let entry = opcode::PollAdd::new(types::Fd(fd), CONNECT_MASK)
            .build()
            .user_data(token | OP_POLL);
        self.push(entry)
    }

    /// Starts `fd`'s multishot receive, reported with `token`. It holds the
    /// socket open until it ends or [`Uring::cancel`] ends it.
    pub fn recv(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        let entry = opcode::RecvMsgMulti::new(types::Fd(fd), &*self.msg, BGID)
            .build()
            .user_data(token | OP_RECV);
        self.push(entry)
    }

    /// Queues a send of `len` bytes at `buf` on `fd`, reported with `token`.
    ///
    /// The kernel sends all of it (`MSG_WAITALL`: a full socket buffer is
    /// waited out inside the ring). With `quiet`, a send that wrote every
    /// byte reports nothing (`CQE_SKIP_SUCCESS`), so that a wait for a
    /// batch of responses is not ended by the sends; one that failed, or
    /// wrote only part before failing, still reports, with the bytes it
    /// wrote or the error.
    ///
    /// # Safety
    /// The bytes must stay valid and unchanged until the send is done:
    /// reported, or (`quiet`) answered, or the ring dropped.
    pub unsafe fn send(
        &mut self,
        fd: RawFd,
        buf: *const u8,
        len: usize,
        token: u64,
        quiet: bool,
    ) -> io::Result<()> {
        let mut entry = opcode::Send::new(types::Fd(fd), buf, len.min(u32::MAX as usize) as u32)
            .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
            .build()
            .user_data(token | OP_SEND);
        if quiet {
            entry = entry.flags(squeue::Flags::SKIP_SUCCESS);
        }
        self.push(entry)
    }

    /// Ends the operation tagged `user_data` (a receive or a poll), which
    /// lets the kernel release its socket once the descriptor is closed too.
    pub fn cancel(&mut self, user_data: u64) -> io::Result<()> {
        let entry = opcode::AsyncCancel::new(user_data)
            .build()
            .user_data(REMOVE_TAG);
        self.push(entry)
    }

    /// The bytes a receive put in buffer `bid` (its result `res`) and the
    /// kernel's receive stamp of the last packet read, if stamped.
    pub fn received(&self, bid: u16, res: i32) -> (&[u8], Option<libc::timespec>) {
        // `res` counts the whole buffer used: header, control, payload.
        let buf = self.bufs.get(bid, res.max(0) as usize);
        let Ok(out) = types::RecvMsgOut::parse(buf, &self.msg) else {
            return (&[], None);
        };
        let stamp = stamp_in(out.control_data());
        // The payload ends the buffer (a `RecvMsgOut` lends it out only for
        // its own lifetime).
        let len = out.payload_data().len();
        (&buf[buf.len() - len..], stamp)
    }

    /// Gives buffer `bid` back to the kernel.
    pub fn recycle(&mut self, bid: u16) {
        self.bufs.push(bid);
        self.bufs.publish();
    }

    /// Sets the timer to fire `after` from now (moving it if it is set),
    /// which ends a wait with an event tagged [`TIMER_TAG`]. The loop moves
    /// it only when its own next deadline moves.
    pub fn arm_timer(&mut self, after: Duration) -> io::Result<()> {
        let entry = self.timer.set(TIMER_TAG, after);
        self.push(entry)
    }

    /// Makes sure a wait for several events ends within [`GUARD`] (give or
    /// take one period) if they stop coming. The guard reports no event.
    pub fn arm_guard(&mut self) -> io::Result<()> {
        if self.guard.live {
            return Ok(());
        }
        let entry = self.guard.set(GUARD_TAG, GUARD);
        self.push(entry)
    }

    /// Submits what is queued and waits until `want` events are ready, or
    /// a timer fires, or `timeout` ends the wait (`None`: no end). Returns
    /// the number of events, read through [`Uring::event`].
    pub fn wait(&mut self, want: usize, timeout: Option<Duration>) -> io::Result<usize> {
        // Events that came in while the loop was busy are taken at once:
        // only a loop that would sleep anyway waits for a batch.
        let want = if self.ring.submission().taskrun() {
            1
        } else {
            want.max(1)
        };
        self.enter(want, timeout)
    }

    /// Submits, waits for `want` events or a timer or `timeout`, and reaps.
    fn enter(&mut self, want: usize, timeout: Option<Duration>) -> io::Result<usize> {
        let result = match timeout {
            Some(t) => {
                let ts = types::Timespec::from(t);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(want, &args)
            }
            None => self.ring.submit_and_wait(want),
        };
        if let Err(e) = result {
            match e.raw_os_error() {
                // Timed out, interrupted, or completions to reap first.
                Some(libc::ETIME | libc::EINTR | libc::EBUSY) => {}
                _ => return Err(e),
            }
        }
        self.events.clear();
        for cqe in self.ring.completion() {
            let token = cqe.user_data();
            let ev = match token {
                REMOVE_TAG => continue,
                GUARD_TAG => {
                    self.guard.live = false;
                    continue;
                }
                TIMER_TAG => {
                    self.timer.live = false;
                    Event {
                        token,
                        ready: Ready::from_bits(0),
                        res: 0,
                        buf: None,
                        ended: true,
                    }
                }
                _ => {
                    let res = cqe.result();
                    let ready = if token & OP_MASK == OP_POLL {
                        Ready::from_bits(res.max(0) as u32)
                    } else {
                        Ready::from_bits(0)
                    };
                    Event {
                        token,
                        ready,
                        res,
                        buf: cqueue::buffer_select(cqe.flags()),
                        ended: !cqueue::more(cqe.flags()),
                    }
                }
            };
            self.events.push(ev);
        }
        Ok(self.events.len())
    }

    /// Submits what is queued and sleeps for `until`, however many other
    /// events come in meanwhile (they are returned then; the sleep ends
    /// early only if so many come that the completion queue would fill).
    /// With deferred task work the kernel does not wake the loop for them:
    /// they are queued until the wait ends.
    pub fn sleep(&mut self, until: Duration) -> io::Result<usize> {
        let want = self.ring.params().cq_entries() as usize / 2;
        self.enter(want, Some(until))
    }

    pub fn event(&self, i: usize) -> Event {
        self.events[i]
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        // The ring's teardown may finish after this returns: make sure it
        // can no longer write into the buffers about to be freed.
        let _ = self.ring.submitter().unregister_buf_ring(BGID);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::time::Instant;

    fn ring_with(buffers: u16) -> Option<Uring> {
        let u = Uring::with_buffers(8, buffers);
        let how = format!(
            "{}; a kernel of 6.1 or later with /proc/sys/kernel/io_uring_disabled at 0",
            u.as_ref().err().map_or(String::new(), ToString::to_string)
        );
        crate::require::require("io_uring", u.is_ok(), &how).then(|| u.unwrap())
    }

    fn ring() -> Option<Uring> {
        ring_with(16)
    }

    /// Waits for the next completion of a receive.
    fn next(u: &mut Uring) -> Event {
        let n = u.wait(1, Some(Duration::from_secs(5))).unwrap();
        assert!(n >= 1, "no completion within 5 s");
        u.event(0)
    }

    #[test]
    fn one_receive_lands_several_responses_with_their_kernel_stamp() {
        let Some(mut u) = ring() else { return };
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let on: libc::c_int = 1;
        // SAFETY: valid socket; `on` outlives the call.
        unsafe {
            libc::setsockopt(
                client.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                4,
            )
        };
        let (mut server, _) = listener.accept().unwrap();
        // The kernel turns stamping on a moment after the first socket asks.
        std::thread::sleep(Duration::from_millis(50));
        // Three responses, written before the receive starts: one buffer.
        for _ in 0..3 {
            server.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
        u.recv(client.as_raw_fd(), 7).unwrap();
        let ev = next(&mut u);
        let now = Instant::now();
        assert_eq!(ev.token, 7 | OP_RECV);
        assert!(!ev.ended, "{ev:?}");
        let bid = ev.buf.expect("a receive fills a provided buffer");
        let (bytes, stamp) = u.received(bid, ev.res);
        assert_eq!(bytes, b"HTTP/1.1 200 OK\r\n\r\n".repeat(3));
        let at = super::super::sys::arrival(stamp.expect("loopback TCP is stamped"));
        // Received 20 ms after it arrived: the stamp says so.
        assert!(now - at >= Duration::from_millis(19), "{:?}", now - at);
        u.recycle(bid);
    }

    #[test]
    fn an_empty_buffer_ring_ends_the_receive_until_buffers_come_back() {
        let Some(mut u) = ring_with(2) else { return };
        let (mut a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        u.recv(b.as_raw_fd(), 3).unwrap();
        let mut held = Vec::new();
        // Two messages take both buffers (kept, not given back).
        for msg in [b"one", b"two"] {
            a.write_all(msg).unwrap();
            let ev = next(&mut u);
            assert_eq!(u.received(ev.buf.unwrap(), ev.res).0, msg);
            held.push(ev.buf.unwrap());
        }
        // The third finds none: the receive ends, its bytes stay queued.
        a.write_all(b"three").unwrap();
        let ev = next(&mut u);
        assert_eq!((ev.res, ev.buf, ev.ended), (-libc::ENOBUFS, None, true));
        for bid in held {
            u.recycle(bid);
        }
        // Buffers back and a new receive: the bytes come through.
        u.recv(b.as_raw_fd(), 3).unwrap();
        let ev = next(&mut u);
        assert_eq!(u.received(ev.buf.unwrap(), ev.res).0, b"three");
    }

    #[test]
    fn the_peer_closing_ends_the_receive_with_no_bytes() {
        let Some(mut u) = ring() else { return };
        let (mut a, b) = UnixStream::pair().unwrap();
        u.recv(b.as_raw_fd(), 5).unwrap();
        a.write_all(b"last").unwrap();
        drop(a);
        let mut got = Vec::new();
        'wait: loop {
            let n = u.wait(1, Some(Duration::from_secs(5))).unwrap();
            assert!(n >= 1, "no completion within 5 s");
            for i in 0..n {
                let ev = u.event(i);
                let bid = ev.buf.expect("even the EOF fills a buffer (the header)");
                let bytes = u.received(bid, ev.res).0.to_vec();
                u.recycle(bid);
                if bytes.is_empty() {
                    assert!(ev.ended, "{ev:?}");
                    break 'wait;
                }
                got.extend(bytes);
            }
        }
        assert_eq!(got, b"last");
    }

    #[test]
    fn a_cancelled_receive_reports_no_more() {
        let Some(mut u) = ring() else { return };
        let (mut a, b) = UnixStream::pair().unwrap();
        u.recv(b.as_raw_fd(), 9).unwrap();
        u.cancel(9 | OP_RECV).unwrap();
        let ev = next(&mut u);
        assert_eq!((ev.res, ev.ended), (-libc::ECANCELED, true));
        a.write_all(b"late").unwrap();
        assert_eq!(u.wait(1, Some(Duration::from_millis(20))).unwrap(), 0);
    }

    #[test]
    fn sends_are_submitted_together_and_report_their_bytes() {
        let Some(mut u) = ring() else { return };
        let pairs: Vec<_> = (0..3).map(|_| UnixStream::pair().unwrap()).collect();
        let msg = b"GET / HTTP/1.1\r\n\r\n";
        for (k, (a, _)) in pairs.iter().enumerate() {
            // SAFETY: `msg` is static.
            unsafe { u.send(a.as_raw_fd(), msg.as_ptr(), msg.len(), k as u64, false) }.unwrap();
        }
        let mut seen = 0;
        while seen < 3 {
            let n = u.wait(3 - seen, Some(Duration::from_secs(5))).unwrap();
            for i in 0..n {
                let ev = u.event(i);
                assert_eq!(ev.token & OP_MASK, OP_SEND);
                assert_eq!(ev.res as usize, msg.len());
            }
            seen += n;
        }
        for (_, mut b) in pairs {
            let mut buf = [0u8; 64];
            let n = std::io::Read::read(&mut b, &mut buf).unwrap();
            assert_eq!(&buf[..n], msg);
        }
    }

    #[test]
    fn a_wait_for_several_sleeps_until_all_are_in() {
        let Some(mut u) = ring() else { return };
        let (mut writers, mut watched) = (Vec::new(), Vec::new());
        for token in 0..3u64 {
            let (a, b) = UnixStream::pair().unwrap();
            u.recv(b.as_raw_fd(), token).unwrap();
            writers.push(a);
            watched.push(b);
        }
        let t = Instant::now();
        let writer = std::thread::spawn(move || {
            for a in writers.iter_mut() {
                std::thread::sleep(Duration::from_millis(10));
                a.write_all(b"x").unwrap();
            }
            writers
        });
        let n = u.wait(3, Some(Duration::from_secs(5))).unwrap();
        let waited = t.elapsed();
        writer.join().unwrap();
        // One wake-up for three arrivals, the last 30 ms in.
        assert_eq!(n, 3, "waited {waited:?}");
        assert!(waited >= Duration::from_millis(30), "{waited:?}");
        assert!(waited < Duration::from_secs(4), "{waited:?}");
    }

    #[test]
    fn the_guard_ends_a_wait_for_more_than_will_come() {
        let Some(mut u) = ring() else { return };
        let (mut a, b) = UnixStream::pair().unwrap();
        u.recv(b.as_raw_fd(), 0).unwrap();
        let t = Instant::now();
        // If the guard never fired, the wait below would never end: after
        // 3 s a watchdog writes the rest, and the test fails instead of hanging.
        let (mut late, late_b) = UnixStream::pair().unwrap();
        u.recv(late_b.as_raw_fd(), 1).unwrap();
        let _watchdog = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(3));
            for _ in 0..8 {
                let _ = late.write_all(b"x");
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        a.write_all(b"x").unwrap();
        // Asks for 8 with no timeout: one arrives, then the guard (re-armed
        // as it fires) ends the wait, and only the arrival is reported.
        let mut n = 0;
        while n == 0 {
            u.arm_guard().unwrap();
            n = u.wait(8, None).unwrap();
        }
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        assert_eq!(n, 1);
        assert_eq!(u.event(0).token, OP_RECV);
        // Fired, it is armed again by the next call.
        assert!(!u.guard.live);
        u.arm_guard().unwrap();
        assert!(u.guard.live);
    }

    #[test]
    fn the_timer_ends_a_wait_and_moves_without_firing_twice() {
        let Some(mut u) = ring() else { return };
        u.arm_timer(Duration::from_millis(300)).unwrap();
        u.arm_timer(Duration::from_millis(10)).unwrap();
        let t = Instant::now();
        let n = u.wait(4, Some(Duration::from_secs(3))).unwrap();
        let waited = t.elapsed();
        assert_eq!(n, 1, "waited {waited:?}");
        assert_eq!(u.event(0).token, TIMER_TAG);
        assert!(waited < Duration::from_secs(2), "{waited:?}");
        // The 300 ms setting was moved, not added: nothing else fires.
        assert_eq!(u.wait(1, Some(Duration::from_millis(600))).unwrap(), 0);
    }

    #[test]
    fn a_sleep_lasts_its_time_and_returns_what_came_meanwhile() {
        let Some(mut u) = ring() else { return };
        let (mut a, b) = UnixStream::pair().unwrap();
        u.recv(b.as_raw_fd(), 0).unwrap();
        u.flush().unwrap();
        let writer = std::thread::spawn(move || {
            for _ in 0..5 {
                a.write_all(b"x").unwrap();
                std::thread::sleep(Duration::from_millis(10));
            }
            a
        });
        let t = Instant::now();
        let n = u.sleep(Duration::from_millis(200)).unwrap();
        let slept = t.elapsed();
        let _a = writer.join().unwrap();
        // Woken by the first arrival, it would be back after about 0 ms
        // with one event.
        assert!(slept >= Duration::from_millis(200), "{slept:?}");
        let bytes: i32 = (0..n).map(|i| u.event(i).res.max(0)).sum();
        assert!(n >= 1 && bytes > 0, "{n} events");
        for i in 0..n {
            if let Some(bid) = u.event(i).buf {
                u.recycle(bid);
            }
        }
    }

    #[test]
    fn a_sleep_shorter_than_its_submission_still_ends() {
        // A ring timer that fired while its entry was being submitted did
        // not end the wait that followed (the kernel counts a timeout that
        // ends a wait from the wait's start): the loop slept until the next
        // event, which never came. The sleep's own timeout cannot miss.
        if ring().is_none() {
            return;
        }
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // A ring is not Send: this thread makes its own.
            let mut u = Uring::with_buffers(8, 16).unwrap();
            for us in [0, 1, 2, 5, 10, 20, 50].repeat(20) {
                u.sleep(Duration::from_micros(us)).unwrap();
            }
            done.send(()).unwrap();
        });
        assert!(
            finished.recv_timeout(Duration::from_secs(10)).is_ok(),
            "a short sleep never ended"
        );
    }

    #[test]
    fn a_wait_with_nothing_ready_ends_at_its_timeout() {
        let Some(mut u) = ring() else { return };
        let t = Instant::now();
        assert_eq!(u.wait(4, Some(Duration::from_millis(20))).unwrap(), 0);
        assert!(t.elapsed() >= Duration::from_millis(20));
    }
}
