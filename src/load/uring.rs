//! io_uring as the closed loop's source of readiness, for waits that batch
//! their wake-ups.
//!
//! Only readiness moves here: each socket gets one multishot poll (the
//! counterpart of an edge-triggered epoll registration), and the loop still
//! reads and writes with plain `recv`/`send`. What io_uring adds is the
//! wait. An epoll waiter is woken by the first event, and on loopback that
//! wake-up is paid by the server: its `send` runs our socket's receive path
//! and, finding us asleep, sends an inter-processor interrupt. A fast
//! client sleeps between almost every pair of responses, so a saturated
//! server spends a visible share of its CPU waking it (measured on a 2-core
//! VM: nginx spent 10.8% of its time in that wake-up under rackbench on
//! epoll, 7.9% under the slower wrk, and served 4-5% fewer requests).
//!
//! With `DEFER_TASKRUN` the kernel queues poll events as task work and
//! wakes the waiter only once as many are queued as it asked for. The loop
//! asks for about as many responses as should arrive within a small share
//! of the latency, so it wakes once per few responses instead of once per
//! response. What bounds a wait is a timer the loop sets once and moves
//! rarely, never a timeout per wait: on a VM, starting and cancelling a
//! kernel timer per wait (as the minimum wait of Linux 6.12 does) cost more
//! than the batching saved (measured: 6.7 against 5.7 us of generator CPU
//! per request). A guard timer re-armed every [`GUARD`] ends a wait whose
//! responses stopped coming.
//!
//! [`Uring::new`] fails on kernels without deferred task work (before
//! Linux 6.1), or where io_uring is disabled, as some container runtimes
//! do; the loop then uses epoll.

use super::epoll::Ready;
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// Tag of the completions of poll removals: no connection token has it
/// (slot indexes stay far below 2^32 - 2).
const REMOVE_TAG: u64 = u64::MAX - 1;

/// Tag of the timer's completion (see [`Uring::arm_timer`]).
pub const TIMER_TAG: u64 = u64::MAX;
/// Tag of the guard's completions, which only end waits.
const GUARD_TAG: u64 = u64::MAX - 2;

/// How long a wait for several events may sleep when they stop coming.
pub const GUARD: Duration = Duration::from_millis(1);

/// What a registration reports: read, write, and the peer's hang-up.
const POLL_MASK: u32 = (libc::POLLIN | libc::POLLOUT | libc::POLLRDHUP) as u32;

/// One readiness report.
#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub token: u64,
    pub ready: Ready,
    /// The multishot poll ended (the kernel may end one, e.g. when the
    /// completion queue overflowed): a live socket must be registered again.
    pub ended: bool,
}

pub struct Uring {
    ring: IoUring,
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
    /// deferred task work.
    pub fn new(connections: usize) -> io::Result<Self> {
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
        Ok(Uring {
            ring,
            events: Vec::with_capacity(entries as usize),
            timer: Timer::new(),
            guard: Timer::new(),
        })
    }

    fn push(&mut self, entry: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: poll entries point at no user memory; timer entries at
            // a `Timer`'s boxed timespec, which lives as long as the ring.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return Ok(());
            }
            // The submission queue is full: hand it to the kernel.
            self.ring.submit()?;
        }
    }

    /// Registers `fd` for read, write and hang-up, reported with `token`.
    /// The registration holds the socket open until [`Uring::remove`].
    pub fn add(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        let entry = opcode::PollAdd::new(types::Fd(fd), POLL_MASK)
            .multi(true)
            .build()
            .user_data(token);
        self.push(entry)
    }

    /// Ends the registration made with `token`, which lets the kernel
    /// release its socket once the descriptor is closed too.
    pub fn remove(&mut self, token: u64) -> io::Result<()> {
        let entry = opcode::PollRemove::new(token).build().user_data(REMOVE_TAG);
        self.push(entry)
    }

    /// Sets the timer to fire `after` from now (moving it if it is set),
    /// which ends a wait with an event tagged [`TIMER_TAG`]. The loop moves
    /// it only when its own next deadline moves, a few times a second.
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
            if token == REMOVE_TAG {
                continue;
            }
            if token == GUARD_TAG {
                self.guard.live = false;
                continue;
            }
            if token == TIMER_TAG {
                self.timer.live = false;
                self.events.push(Event {
                    token,
                    ready: Ready::from_bits(0),
                    ended: false,
                });
                continue;
            }
            let ended = !cqueue::more(cqe.flags());
            let res = cqe.result();
            if res > 0 || ended {
                self.events.push(Event {
                    token,
                    ready: Ready::from_bits(res.max(0) as u32),
                    ended,
                });
            }
        }
        Ok(self.events.len())
    }

    pub fn event(&self, i: usize) -> Event {
        self.events[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::time::Instant;

    fn ring() -> Option<Uring> {
        let u = Uring::new(8);
        let how = format!(
            "{}; a kernel of 5.6 or later with /proc/sys/kernel/io_uring_disabled at 0",
            u.as_ref().err().map_or(String::new(), ToString::to_string)
        );
        crate::require::require("io_uring", u.is_ok(), &how).then(|| u.unwrap())
    }

    #[test]
    fn a_registration_reports_each_arrival_until_removed() {
        let Some(mut u) = ring() else { return };
        let (mut a, mut b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        u.add(b.as_raw_fd(), 42).unwrap();
        // Writable at once.
        let n = u.wait(1, Some(Duration::from_secs(5))).unwrap();
        assert!(n >= 1);
        assert_eq!(u.event(0).token, 42);
        assert!(u.event(0).ready.writable());
        for round in 0..3 {
            a.write_all(b"ping").unwrap();
            let n = u.wait(1, Some(Duration::from_secs(5))).unwrap();
            assert!(n >= 1, "round {round}");
            let ev = u.event(n - 1);
            assert!(ev.ready.readable() && !ev.ended, "round {round}: {ev:?}");
            let mut buf = [0u8; 8];
            assert_eq!(b.read(&mut buf).unwrap(), 4);
        }
        u.remove(42).unwrap();
        // The removal ends the poll: its last report says so.
        let n = u.wait(1, Some(Duration::from_secs(5))).unwrap();
        assert!((0..n).any(|i| u.event(i).ended && u.event(i).token == 42));
        a.write_all(b"late").unwrap();
        assert_eq!(u.wait(1, Some(Duration::from_millis(20))).unwrap(), 0);
    }

    /// A ring watching one end of each of `n` socket pairs (tokens 0..n),
    /// their first reports (writable) already taken; and the other ends, to
    /// write to. The watched ends are returned too, to keep them open.
    fn watched_pairs(n: usize) -> Option<(Uring, Vec<UnixStream>, Vec<UnixStream>)> {
        let mut u = ring()?;
        let (mut writers, mut watched) = (Vec::new(), Vec::new());
        for token in 0..n {
            let (a, b) = UnixStream::pair().unwrap();
            b.set_nonblocking(true).unwrap();
            u.add(b.as_raw_fd(), token as u64).unwrap();
            writers.push(a);
            watched.push(b);
        }
        let mut seen = 0;
        while seen < n {
            seen += u.wait(n - seen, Some(Duration::from_secs(5))).unwrap();
        }
        Some((u, writers, watched))
    }

    /// Writes one byte to each of `writers`, `gap` apart, from another thread.
    fn write_each_after(
        mut writers: Vec<UnixStream>,
        gap: Duration,
    ) -> std::thread::JoinHandle<Vec<UnixStream>> {
        std::thread::spawn(move || {
            for a in writers.iter_mut() {
                std::thread::sleep(gap);
                a.write_all(b"x").unwrap();
            }
            writers
        })
    }

    #[test]
    fn a_wait_for_several_sleeps_until_all_are_in() {
        let Some((mut u, writers, _watched)) = watched_pairs(3) else {
            return;
        };
        let t = Instant::now();
        let writer = write_each_after(writers, Duration::from_millis(10));
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
        let Some((mut u, mut writers, _watched)) = watched_pairs(8) else {
            return;
        };
        let t = Instant::now();
        // If the guard never fired, the wait below would never end: after
        // 3 s the other seven arrive, and the test fails instead of hanging.
        let rest = writers.split_off(1);
        let _watchdog = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(3));
            for mut a in rest {
                let _ = a.write_all(b"x");
            }
        });
        let writer = write_each_after(writers, Duration::from_millis(10));
        // Asks for 8 with no timeout: one arrives, then the guard (re-armed
        // as it fires) ends the wait, and only the arrival is reported.
        let mut n = 0;
        while n == 0 {
            u.arm_guard().unwrap();
            n = u.wait(8, None).unwrap();
        }
        writer.join().unwrap();
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        assert_eq!(n, 1);
        assert_eq!(u.event(0).token, 0);
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
    fn a_wait_with_nothing_ready_ends_at_its_timeout() {
        let Some(mut u) = ring() else { return };
        let t = Instant::now();
        assert_eq!(u.wait(4, Some(Duration::from_millis(20))).unwrap(), 0);
        assert!(t.elapsed() >= Duration::from_millis(20));
    }
}
