//! The raw socket and thread system calls the connection loop makes:
//! kernel receive stamps (`SO_TIMESTAMPNS`) and the stamped `recvmsg`, the
//! bare `send`, loopback's cheapest congestion control, and the thread's
//! CPU clock. Kept apart from `worker/` so the loop reads as a loop; the
//! calls are bare (not glibc's wrappers, which are cancellation points) and
//! each says why it exists.

use socket2::Socket;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Asks the kernel to stamp each received packet (`SO_TIMESTAMPNS`), read
/// back by [`recv_stamped`]. Best effort: without stamps, a response ends
/// when it is read.
pub(super) fn enable_rx_timestamps(sock: &Socket) {
    let on: libc::c_int = 1;
    // SAFETY: valid socket; `on` outlives the call.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

/// Loopback has no congestion to control, and reno, which every kernel has
/// and lets any user choose, does the least work per acknowledgement.
/// Machines that default to BBR (the VM rackbench is measured on does) pay
/// for its model on every response otherwise (about 2% of the generator's
/// CPU there). Only the generator's own sockets change; the server keeps
/// its own choice.
pub(super) fn cheapest_congestion_control(sock: &Socket) {
    let name = b"reno";
    // SAFETY: valid socket; `name` outlives the call. A failure leaves the
    // default in place, which is only slower.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
}

/// `send` with MSG_NOSIGNAL (a write to a closed peer is EPIPE, not
/// SIGPIPE), as the bare system call (see `recv_stamped`). Returns bytes
/// written, or -1 with errno set.
pub(super) fn send_raw(fd: libc::c_int, buf: &[u8]) -> isize {
    // Every argument as a long, as the variadic `syscall` reads them.
    // SAFETY: fd is a socket; buf is valid for its length; no address.
    (unsafe {
        libc::syscall(
            libc::SYS_sendto,
            fd as libc::c_long,
            buf.as_ptr(),
            buf.len(),
            libc::MSG_NOSIGNAL as libc::c_long,
            std::ptr::null::<libc::sockaddr>(),
            0 as libc::c_long,
        )
    }) as isize
}

/// `recv` that also returns the kernel's receive timestamp of the data read
/// (CLOCK_REALTIME; for TCP, that of the last segment read), if stamped.
/// Returns what `recv` returns: bytes read, 0 at EOF, -1 with errno set.
pub(super) fn recv_stamped(fd: libc::c_int, buf: &mut [u8]) -> (isize, Option<libc::timespec>) {
    // u64s keep the control buffer aligned for cmsghdr.
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero msghdr is valid (no name, no control).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: msg points at live iov, buf and control for the whole call.
    // The bare system call: glibc's `recvmsg` is a cancellation point, which
    // costs two calls around every read (1-2% of the generator's CPU).
    let n = unsafe {
        libc::syscall(
            libc::SYS_recvmsg,
            fd as libc::c_long,
            &mut msg as *mut libc::msghdr,
            0 as libc::c_long,
        )
    } as isize;
    if n <= 0 || msg.msg_controllen == 0 {
        return (n, None);
    }
    // SAFETY: the kernel filled `control` with msg_controllen bytes of
    // well-formed cmsgs; CMSG_* walk only within them.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
            {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                return (n, Some(ts));
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    (n, None)
}

/// Places a CLOCK_REALTIME stamp on the monotonic clock, by its age against
/// the wall clock read now. A stamp from the future (the wall clock was
/// stepped) counts as now.
///
/// The wall clock is read first, the monotonic one after it: a pause
/// between the two (the thread preempted) places the arrival later than it
/// was, so a latency may read long by the pause, never short. Read the
/// other way round, a busy machine made a response end 60 us before the
/// server had even finished it.
pub(super) fn arrival(stamp: libc::timespec) -> Instant {
    let mut wall = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: wall is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut wall) };
    let now = Instant::now();
    let ns = |t: libc::timespec| t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128;
    let age = ns(wall) - ns(stamp);
    if age <= 0 {
        return now;
    }
    now.checked_sub(Duration::from_nanos(age.min(u64::MAX as i128) as u64))
        .unwrap_or(now)
}

/// CPU time of the calling thread.
pub(super) fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The open-files limit (`RLIMIT_NOFILE`) as (soft, hard).
pub(super) fn open_files_limit() -> std::io::Result<(u64, u64)> {
    // SAFETY: getrlimit fills the zeroed struct.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((lim.rlim_cur as u64, lim.rlim_max as u64))
}

/// What [`ensure_open_files`] found or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenFiles {
    /// The soft limit was already enough.
    Enough,
    /// The soft limit was raised from the first figure to the second.
    Raised(u64, u64),
}

/// Makes sure this process may hold `needed` descriptors: raises the soft
/// open-files limit (to the hard limit, which any process may do) when it
/// is lower. Fails, with the limits, when even the hard limit is lower: a
/// run would otherwise fail connect after connect with EMFILE, counted as
/// connect errors of a server that did nothing wrong.
pub fn ensure_open_files(needed: u64) -> Result<OpenFiles, (u64, u64)> {
    let Ok((soft, hard)) = open_files_limit() else {
        return Ok(OpenFiles::Enough); // Unknown here: let the run tell.
    };
    if soft >= needed {
        return Ok(OpenFiles::Enough);
    }
    if hard < needed {
        return Err((soft, hard));
    }
    let lim = libc::rlimit {
        rlim_cur: hard as libc::rlim_t,
        rlim_max: hard as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the local struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        return Err((soft, hard));
    }
    Ok(OpenFiles::Raised(soft, hard))
}

#[cfg(test)]
mod tests {
    use super::*;
    use socket2::{Domain, Protocol, SockAddr, Type};

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
