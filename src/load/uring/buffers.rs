//! The ring of provided buffers the receives land in, and what lands in
//! them besides the bytes: the packet's kernel receive stamp among the
//! control messages.
//!
//! It submits nothing and waits for nothing: mod.rs beside it registers
//! the ring with its `IoUring`, queues the receives and hands each buffer
//! back.

use io_uring::{types, IoUring};
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

/// The one buffer group.
pub(super) const BGID: u16 = 0;
/// Bytes of each provided buffer (the receive header and the stamp's
/// control message take the first 48 of them).
pub const BUF_SIZE: usize = 4096;
/// Room for one `SCM_TIMESTAMPNS` control message: CMSG_SPACE(16).
pub(super) const CONTROL_LEN: usize = 32;

/// A ring of provided buffers (Linux 5.19+): the kernel takes one for each
/// receive, the loop hands it back when it has copied the bytes out.
pub(super) struct BufRing {
    /// The entries, shared with the kernel (page-aligned, as it requires).
    entries: *mut types::BufRingEntry,
    map_len: usize,
    count: u16,
    /// The tail the loop has filled up to (published to the kernel by
    /// [`BufRing::publish`]).
    tail: u16,
    data: Vec<u8>,
}

impl BufRing {
    /// Maps `count` entries (a power of two) and registers them with `ring`.
    pub(super) fn new(ring: &IoUring, count: u16) -> io::Result<Self> {
        assert!(count.is_power_of_two());
        let map_len = count as usize * std::mem::size_of::<types::BufRingEntry>();
        // SAFETY: an anonymous private mapping; checked for failure.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut b = BufRing {
            entries: addr.cast(),
            map_len,
            count,
            tail: 0,
            data: vec![0; count as usize * BUF_SIZE],
        };
        // SAFETY: the mapping lives until `b` drops, after the ring has
        // forgotten it (see `Uring`'s Drop).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(addr as u64, count, BGID, 0)?
        };
        for bid in 0..count {
            b.push(bid);
        }
        b.publish();
        Ok(b)
    }

    /// Queues buffer `bid` for the kernel (seen after [`BufRing::publish`]).
    pub(super) fn push(&mut self, bid: u16) {
        let slot = (self.tail & (self.count - 1)) as usize;
        // SAFETY: slot < count entries of the live mapping; the kernel
        // reads only entries below the published tail, and this one is
        // above it.
        let e = unsafe { &mut *self.entries.add(slot) };
        e.set_addr(self.data[bid as usize * BUF_SIZE..].as_ptr() as u64);
        e.set_len(BUF_SIZE as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    pub(super) fn publish(&self) {
        // SAFETY: the tail field of the live mapping's first entry, which
        // the kernel reads concurrently: hence the atomic release store.
        unsafe {
            let tail = types::BufRingEntry::tail(self.entries) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }

    pub(super) fn get(&self, bid: u16, len: usize) -> &[u8] {
        let at = bid as usize * BUF_SIZE;
        &self.data[at..at + len.min(BUF_SIZE)]
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once.
        unsafe { libc::munmap(self.entries.cast(), self.map_len) };
    }
}

/// The `SCM_TIMESTAMPNS` stamp among a receive's control messages.
pub(super) fn stamp_in(control: &[u8]) -> Option<libc::timespec> {
    let head = std::mem::size_of::<libc::cmsghdr>();
    let mut at = 0;
    while at + head <= control.len() {
        // SAFETY: `head` bytes are in bounds; read unaligned.
        let h = unsafe {
            control
                .as_ptr()
                .add(at)
                .cast::<libc::cmsghdr>()
                .read_unaligned()
        };
        #[allow(clippy::unnecessary_cast)] // u32 on some targets
        let len = h.cmsg_len as usize;
        if len < head || at + len > control.len() {
            return None;
        }
        let data = at + head;
        if h.cmsg_level == libc::SOL_SOCKET
            && h.cmsg_type == libc::SCM_TIMESTAMPNS
            && data + std::mem::size_of::<libc::timespec>() <= control.len()
        {
            // SAFETY: in bounds, checked above; read unaligned.
            return Some(unsafe {
                control
                    .as_ptr()
                    .add(data)
                    .cast::<libc::timespec>()
                    .read_unaligned()
            });
        }
        // Each message is padded to the alignment of a `size_t`.
        at += (len + 7) & !7;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_messages_other_than_the_stamp_are_skipped() {
        // A 20-byte message of another kind (padded to 24), then the stamp.
        let head = std::mem::size_of::<libc::cmsghdr>();
        let mut control = vec![0u8; 24 + head + 16];
        let other = libc::cmsghdr {
            cmsg_len: (head + 4) as _,
            cmsg_level: libc::SOL_SOCKET,
            cmsg_type: libc::SCM_RIGHTS,
        };
        let stamp = libc::cmsghdr {
            cmsg_len: (head + 16) as _,
            cmsg_level: libc::SOL_SOCKET,
            cmsg_type: libc::SCM_TIMESTAMPNS,
        };
        let ts = libc::timespec {
            tv_sec: 12,
            tv_nsec: 34,
        };
        // SAFETY: every write is within `control`.
        unsafe {
            let p = control.as_mut_ptr();
            p.cast::<libc::cmsghdr>().write_unaligned(other);
            p.add(24).cast::<libc::cmsghdr>().write_unaligned(stamp);
            p.add(24 + head)
                .cast::<libc::timespec>()
                .write_unaligned(ts);
        }
        let got = stamp_in(&control).expect("the stamp is found");
        assert_eq!((got.tv_sec, got.tv_nsec), (12, 34));
        assert!(stamp_in(&control[..24]).is_none());
    }
}
