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
//! wakes the waiter only once as many are queued as it asked for, and
//! since Linux 6.12 a wait can also say "but after `min_wait`, one will
//! do". The loop asks for a share of the requests it has in flight, with a
//! short `min_wait`, so it wakes a few times per batch of responses instead
//! of once per response, and a response waits at most `min_wait` before it
//! is read.
//!
//! [`Uring::new`] fails on kernels without those features (or where
//! io_uring is disabled, as some container runtimes do); the loop then uses
//! epoll.

use super::epoll::Ready;
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// Tag of the completions of poll removals: no connection token has it
/// (slot indexes stay far below 2^32 - 2).
const REMOVE_TAG: u64 = u64::MAX - 1;

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
}

impl Uring {
    /// A ring for about `connections` sockets. Fails when the kernel lacks
    /// deferred task work, extended wait arguments or the minimum wait.
    pub fn new(connections: usize) -> io::Result<Self> {
        let entries = (connections.max(16) as u32).next_power_of_two().min(4096);
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_taskrun_flag()
            .setup_cqsize(entries * 4)
            .build(entries)?;
        let p = ring.params();
        if !(p.is_feature_ext_arg() && p.is_feature_min_timeout() && p.is_feature_nodrop()) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "io_uring lacks the minimum wait (Linux 6.12+)",
            ));
        }
        Ok(Uring {
            ring,
            events: Vec::with_capacity(entries as usize),
        })
    }

    fn push(&mut self, entry: squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: poll entries point at no user memory.
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

    /// Submits what is queued and waits until `want` events are ready, or
    /// at least one once `min_wait` has passed, or `timeout` ends the wait
    /// (`None`: no end). Returns the number of events, read through
    /// [`Uring::event`].
    pub fn wait(
        &mut self,
        want: usize,
        min_wait: Duration,
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        let ts = timeout.map(types::Timespec::from);
        // Events that came in while the loop was busy are taken at once:
        // only a loop that would sleep anyway waits for a batch.
        let want = if self.ring.submission().taskrun() {
            1
        } else {
            want
        };
        let mut args = types::SubmitArgs::new();
        if want > 1 {
            args = args.min_wait_usec(min_wait.as_micros().clamp(1, u32::MAX as u128) as u32);
        }
        let result = match &ts {
            Some(ts) => self
                .ring
                .submitter()
                .submit_with_args(want.max(1), &args.timespec(ts)),
            None => self.ring.submitter().submit_with_args(want.max(1), &args),
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
        match Uring::new(8) {
            Ok(u) => Some(u),
            Err(e) => {
                eprintln!("io_uring unavailable here ({e}); epoll covers this machine");
                None
            }
        }
    }

    #[test]
    fn a_registration_reports_each_arrival_until_removed() {
        let Some(mut u) = ring() else { return };
        let (mut a, mut b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        u.add(b.as_raw_fd(), 42).unwrap();
        // Writable at once.
        let n = u
            .wait(1, Duration::ZERO, Some(Duration::from_secs(5)))
            .unwrap();
        assert!(n >= 1);
        assert_eq!(u.event(0).token, 42);
        assert!(u.event(0).ready.writable());
        for round in 0..3 {
            a.write_all(b"ping").unwrap();
            let n = u
                .wait(1, Duration::ZERO, Some(Duration::from_secs(5)))
                .unwrap();
            assert!(n >= 1, "round {round}");
            let ev = u.event(n - 1);
            assert!(ev.ready.readable() && !ev.ended, "round {round}: {ev:?}");
            let mut buf = [0u8; 8];
            assert_eq!(b.read(&mut buf).unwrap(), 4);
        }
        u.remove(42).unwrap();
        // The removal ends the poll: its last report says so.
        let n = u
            .wait(1, Duration::ZERO, Some(Duration::from_secs(5)))
            .unwrap();
        assert!((0..n).any(|i| u.event(i).ended && u.event(i).token == 42));
        a.write_all(b"late").unwrap();
        assert_eq!(
            u.wait(1, Duration::ZERO, Some(Duration::from_millis(20)))
                .unwrap(),
            0
        );
    }

    /// A ring watching one end of a socket pair, its first report (the
    /// socket is writable) already taken; and the other end, to write to.
    /// The watched end is returned too, to keep it open.
    fn watched_pair() -> Option<(Uring, UnixStream, UnixStream)> {
        let mut u = ring()?;
        let (a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        u.add(b.as_raw_fd(), 1).unwrap();
        u.wait(1, Duration::ZERO, Some(Duration::from_secs(5)))
            .unwrap();
        Some((u, a, b))
    }

    /// Writes one byte to `a` after `delay`, from another thread.
    fn write_after(mut a: UnixStream, delay: Duration) -> std::thread::JoinHandle<UnixStream> {
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            a.write_all(b"x").unwrap();
            a
        })
    }

    #[test]
    fn a_wait_for_many_returns_with_fewer_after_the_minimum_wait() {
        let Some((mut u, mut a, _b)) = watched_pair() else {
            return;
        };
        a.write_all(b"x").unwrap();
        let t = Instant::now();
        // Asks for 8, gets 1: back after the 2 ms minimum, not the 5 s timeout.
        let n = u
            .wait(8, Duration::from_millis(2), Some(Duration::from_secs(5)))
            .unwrap();
        assert_eq!(n, 1);
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }

    #[test]
    fn an_arrival_during_the_wait_is_reported_once_the_minimum_wait_is_over() {
        let Some((mut u, a, _b)) = watched_pair() else {
            return;
        };
        let writer = write_after(a, Duration::from_millis(5));
        let t = Instant::now();
        let n = u
            .wait(8, Duration::from_millis(20), Some(Duration::from_secs(2)))
            .unwrap();
        let waited = t.elapsed();
        let _a = writer.join().unwrap();
        assert_eq!(n, 1);
        assert!(waited >= Duration::from_millis(20), "{waited:?}");
        assert!(waited < Duration::from_secs(1), "{waited:?}");
    }

    #[test]
    fn an_arrival_after_the_minimum_wait_ends_the_wait_at_once() {
        let Some((mut u, a, _b)) = watched_pair() else {
            return;
        };
        let writer = write_after(a, Duration::from_millis(30));
        let t = Instant::now();
        let n = u
            .wait(8, Duration::from_micros(100), Some(Duration::from_secs(3)))
            .unwrap();
        let waited = t.elapsed();
        let _a = writer.join().unwrap();
        assert_eq!(n, 1, "waited {waited:?}");
        assert!(waited < Duration::from_millis(500), "{waited:?}");
    }

    #[test]
    fn a_wait_with_nothing_ready_ends_at_its_timeout() {
        let Some(mut u) = ring() else { return };
        let t = Instant::now();
        assert_eq!(
            u.wait(
                4,
                Duration::from_micros(50),
                Some(Duration::from_millis(20))
            )
            .unwrap(),
            0
        );
        assert!(t.elapsed() >= Duration::from_millis(20));
    }
}
