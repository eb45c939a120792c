//! Why a server's process ended: the kernel's exit events (the proc
//! connector, netlink `NETLINK_CONNECTOR` / `CN_IDX_PROC`), each with the
//! pid, its parent and the status its parent's `waitpid` will see (killed
//! by signal 9, exited with 1).
//!
//! rackbench is not the parent of a server's workers, so it cannot wait
//! for one; once a worker is gone /proc has nothing of it; and the servers
//! do not all log a worker's death (puma 5 logs only the replacement's
//! boot). The exit event is the one account that holds for every server.
//! The kernel sends it only to a listener with CAP_NET_ADMIN (root): as
//! another user [`ExitWatch::start`] returns None and a death's cause is
//! reported as unknown, never guessed.
//!
//! Only exits of rackbench's own descendants are kept (a server, its
//! workers, nginx): each event's parent is followed up /proc until this
//! process or init. At most [`EXITS_CAP`] are kept. It never signals,
//! spawns or waits for a process.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// The most exits one watch keeps.
pub const EXITS_CAP: usize = 4096;

/// How a process ended, as `waitpid`'s status says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCause {
    /// Killed by this signal.
    Signal(i32),
    /// Exited with this status.
    Status(i32),
}

impl ExitCause {
    /// From a wait status (`WIFSIGNALED`, `WTERMSIG`, `WEXITSTATUS`).
    pub fn of_wait_status(status: u32) -> ExitCause {
        let signal = (status & 0x7f) as i32;
        if signal != 0 && signal != 0x7f {
            ExitCause::Signal(signal)
        } else {
            ExitCause::Status(((status >> 8) & 0xff) as i32)
        }
    }
}

/// One process's exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    pub pid: u32,
    pub ppid: u32,
    /// When the event was read (within a millisecond or so of the exit).
    pub at: Instant,
    pub cause: ExitCause,
}

/// The event's fields rackbench reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RawExit {
    pid: u32,
    tgid: u32,
    status: u32,
    parent_tgid: u32,
}

const NETLINK_CONNECTOR: i32 = 11;
const CN_IDX_PROC: u32 = 1;
const CN_VAL_PROC: u32 = 1;
const PROC_CN_MCAST_LISTEN: u32 = 1;
const PROC_EVENT_EXIT: u32 = 0x8000_0000;
const NLMSG_HDR: usize = 16;
const CN_MSG: usize = 20;
/// `what`, `cpu`, `timestamp_ns` before the event's data.
const EVENT_HEAD: usize = 16;

/// The exit events of one trial, read on a thread of their own.
pub struct ExitWatch {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Exit>>,
}

impl ExitWatch {
    /// Subscribes to the kernel's exit events; None when it refuses (not
    /// root, no proc connector).
    pub fn start() -> Option<ExitWatch> {
        let fd = subscribe()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("rackbench-exits".into())
            .spawn(move || listen(&fd, &flag))
            .ok()?;
        Some(ExitWatch { stop, handle })
    }

    /// Stops listening (within 100 ms) and returns the exits seen.
    pub fn finish(self) -> Vec<Exit> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// A netlink socket bound to the proc connector's group, told to listen,
/// with a 100 ms receive timeout so its thread sees its stop flag.
fn subscribe() -> Option<OwnedFd> {
    // SAFETY: plain system calls on a socket this function owns; every
    // struct passed is initialised and sized as the kernel reads it.
    unsafe {
        let raw = libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            NETLINK_CONNECTOR,
        );
        if raw < 0 {
            return None;
        }
        let fd = OwnedFd::from_raw_fd(raw);
        let mut addr: libc::sockaddr_nl = std::mem::zeroed();
        addr.nl_family = libc::AF_NETLINK as u16;
        addr.nl_groups = CN_IDX_PROC;
        let len = std::mem::size_of::<libc::sockaddr_nl>() as u32;
        if libc::bind(raw, std::ptr::addr_of!(addr).cast(), len) != 0 {
            return None;
        }
        let timeout = libc::timeval {
            tv_sec: 0,
            tv_usec: 100_000,
        };
        let tlen = std::mem::size_of::<libc::timeval>() as u32;
        let set = libc::setsockopt(
            raw,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            std::ptr::addr_of!(timeout).cast(),
            tlen,
        );
        if set != 0 {
            return None;
        }
        let msg = listen_message();
        let sent = libc::send(raw, msg.as_ptr().cast(), msg.len(), 0);
        (sent == msg.len() as isize).then_some(fd)
    }
}

/// nlmsghdr + cn_msg + PROC_CN_MCAST_LISTEN.
fn listen_message() -> Vec<u8> {
    let total = (NLMSG_HDR + CN_MSG + 4) as u32;
    let mut m = Vec::with_capacity(total as usize);
    m.extend(total.to_ne_bytes());
    m.extend((libc::NLMSG_DONE as u16).to_ne_bytes());
    m.extend(0u16.to_ne_bytes());
    m.extend(0u32.to_ne_bytes());
    m.extend(std::process::id().to_ne_bytes());
    m.extend(CN_IDX_PROC.to_ne_bytes());
    m.extend(CN_VAL_PROC.to_ne_bytes());
    m.extend(0u32.to_ne_bytes());
    m.extend(0u32.to_ne_bytes());
    m.extend(4u16.to_ne_bytes());
    m.extend(0u16.to_ne_bytes());
    m.extend(PROC_CN_MCAST_LISTEN.to_ne_bytes());
    m
}

fn listen(fd: &OwnedFd, stop: &AtomicBool) -> Vec<Exit> {
    let me = std::process::id();
    let mut exits = Vec::new();
    let mut buf = vec![0u8; 8192];
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: reads into a buffer this function owns, of its length.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            // The timeout, or an overrun (ENOBUFS): listen on.
            continue;
        }
        let at = Instant::now();
        for e in parse_exits(&buf[..n as usize]) {
            if e.pid == e.tgid && exits.len() < EXITS_CAP && descends_from(e.parent_tgid, me) {
                exits.push(Exit {
                    pid: e.pid,
                    ppid: e.parent_tgid,
                    at,
                    cause: ExitCause::of_wait_status(e.status),
                });
            }
        }
    }
    exits
}

/// Whether `pid` is `ancestor` or one of its descendants, by /proc's ppid
/// links (at most 32 steps).
fn descends_from(mut pid: u32, ancestor: u32) -> bool {
    for _ in 0..32 {
        if pid == ancestor {
            return true;
        }
        if pid <= 1 {
            return false;
        }
        // The stat line only: never smaps_rollup, which walks the
        // process's memory under its lock.
        let stat = std::fs::read(format!("/proc/{pid}/stat")).ok();
        let Some(st) = stat.and_then(super::parse_stat) else {
            return false;
        };
        pid = st.ppid;
    }
    false
}

/// The exit events in one datagram (one netlink message or more).
fn parse_exits(mut data: &[u8]) -> Vec<RawExit> {
    let u32_at = |d: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(d.get(at..at + 4)?.try_into().ok()?))
    };
    let mut out = Vec::new();
    while let Some(len) = u32_at(data, 0) {
        let len = len as usize;
        if len < NLMSG_HDR || len > data.len() {
            break;
        }
        let msg = &data[..len];
        let event = NLMSG_HDR + CN_MSG;
        let at = event + EVENT_HEAD;
        if u32_at(msg, event) == Some(PROC_EVENT_EXIT) {
            if let (Some(pid), Some(tgid), Some(status), Some(parent_tgid)) = (
                u32_at(msg, at),
                u32_at(msg, at + 4),
                u32_at(msg, at + 8),
                u32_at(msg, at + 20),
            ) {
                out.push(RawExit {
                    pid,
                    tgid,
                    status,
                    parent_tgid,
                });
            }
        }
        // Messages are aligned to 4 bytes.
        let next = (len + 3) & !3;
        data = data.get(next..).unwrap_or_default();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (wait status, cause)
    #[test]
    fn a_wait_status_reads_as_a_signal_or_an_exit_status() {
        let rows = [
            (9, ExitCause::Signal(9)),
            (0x8b, ExitCause::Signal(11)), // SIGSEGV with a core dump
            (15, ExitCause::Signal(15)),
            (0, ExitCause::Status(0)),
            (1 << 8, ExitCause::Status(1)),
            (0x7f | (19 << 8), ExitCause::Status(19)), // stopped: no signal death
        ];
        for (status, want) in rows {
            assert_eq!(ExitCause::of_wait_status(status), want, "{status:#x}");
        }
    }

    fn event(what: u32, fields: [u32; 6]) -> Vec<u8> {
        let len = NLMSG_HDR + CN_MSG + EVENT_HEAD + 24;
        let mut m = vec![0u8; len];
        m[..4].copy_from_slice(&(len as u32).to_ne_bytes());
        let at = NLMSG_HDR + CN_MSG;
        m[at..at + 4].copy_from_slice(&what.to_ne_bytes());
        for (i, f) in fields.iter().enumerate() {
            let o = at + EVENT_HEAD + 4 * i;
            m[o..o + 4].copy_from_slice(&f.to_ne_bytes());
        }
        m
    }

    #[test]
    fn exit_events_are_read_and_other_events_and_truncations_skipped() {
        let mut two = event(PROC_EVENT_EXIT, [21, 21, 9, 9, 20, 20]);
        two.extend(event(0x1, [1, 1, 1, 1, 1, 1])); // a fork
        two.extend(event(PROC_EVENT_EXIT, [23, 22, 0, 17, 20, 20]));
        let got = parse_exits(&two);
        let want = [
            RawExit {
                pid: 21,
                tgid: 21,
                status: 9,
                parent_tgid: 20,
            },
            RawExit {
                pid: 23,
                tgid: 22,
                status: 0,
                parent_tgid: 20,
            },
        ];
        assert_eq!(got, want);
        let whole = event(PROC_EVENT_EXIT, [21, 21, 9, 9, 20, 20]);
        assert!(parse_exits(&whole[..whole.len() - 1]).is_empty());
        assert!(parse_exits(&[]).is_empty());
        assert!(parse_exits(&[0, 0, 0, 0]).is_empty());
    }

    /// As root, a child killed with SIGKILL is seen with its signal.
    #[test]
    fn a_killed_child_is_seen_with_its_signal_when_the_kernel_allows() {
        let Some(watch) = ExitWatch::start() else {
            eprintln!("SKIP: the proc connector needs root");
            return;
        };
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        std::thread::sleep(std::time::Duration::from_millis(100));
        child.kill().unwrap();
        child.wait().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let exits = watch.finish();
        let e = exits.iter().find(|e| e.pid == pid).expect("its exit");
        assert_eq!(
            (e.ppid, e.cause),
            (std::process::id(), ExitCause::Signal(9))
        );
    }
}
