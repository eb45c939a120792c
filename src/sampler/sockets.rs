//! Who holds a listening TCP port: the server under test, or a stranger.
//!
//! A trial tells its server which port to listen on, and the readiness
//! probe accepts any answer there. If something else already listens on
//! that port (another benchmark left running, a template that ignores
//! `{{port}}` while an old server still holds the port), the trial would
//! measure that process instead. So before loading, the lab matches the
//! listening socket's inode in `/proc/net/tcp` and `/proc/net/tcp6`
//! (state 0A) against the `socket:[INODE]` links in `/proc/PID/fd` of every
//! process in the server's scope — the whole tree, so a server started
//! behind `sh -c`, re-exec'd, or with forked workers still matches.
//!
//! `/proc/net/tcp{,6}` is read here and nowhere else: [`parse_net_tcp`]
//! gives its rows typed ([`TcpRow`]); the break-point search's settling
//! (`search::settle`) reads the server's open connections from them.
//!
//! Like the rest of the sampler it only reads /proc.

use super::procfs::Scope;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum PortError {
    #[error("port {port} is served by another process ({holder}), not by {server}: stop it, or make the server's command listen on {{{{port}}}} (or {{{{listen}}}})")]
    Stranger {
        port: u16,
        server: String,
        /// "pid 123, ruby", or why it is unknown.
        holder: String,
    },
}

/// A socket's state in `/proc/net/tcp` (the kernel's `TCP_*` numbers,
/// include/net/tcp_states.h). Only the states someone here asks about have
/// a name; the rest keep their number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpState {
    Established,
    TimeWait,
    Close,
    /// The peer has closed; the socket has not.
    CloseWait,
    Listen,
    Other(u8),
}

impl TcpState {
    fn from_hex(s: &str) -> Option<TcpState> {
        Some(match u8::from_str_radix(s, 16).ok()? {
            0x01 => TcpState::Established,
            0x06 => TcpState::TimeWait,
            0x07 => TcpState::Close,
            0x08 => TcpState::CloseWait,
            0x0A => TcpState::Listen,
            n => TcpState::Other(n),
        })
    }
}

/// One row of `/proc/net/tcp` or `/proc/net/tcp6`: the one reading of that
/// table (the lab's port check and the search's settling both ask it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpRow {
    /// This end; a v4 address of a dual-stack socket (`::ffff:a.b.c.d`)
    /// reads as the v4 address.
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub state: TcpState,
    /// Bytes not yet acknowledged by the peer; for a listener, 0.
    pub tx_queue_bytes: u32,
    /// Bytes not yet read by the process; for a listener, the connections
    /// waiting in its accept queue.
    pub rx_queue: u32,
    /// The socket's inode (`socket:[INODE]` in /proc/PID/fd); 0 while a
    /// connection waits in the accept queue or lingers in TIME_WAIT.
    pub inode: u64,
}

impl TcpRow {
    /// Whether a connection to 127.0.0.1 reaches this socket's address
    /// (127.0.0.1, 0.0.0.0, ::, ::ffff:127.0.0.1 or ::ffff:0.0.0.0; not
    /// ::1, not 127.0.0.2).
    pub fn takes_loopback_v4(&self) -> bool {
        let ip = self.local.ip();
        ip == IpAddr::V4(Ipv4Addr::LOCALHOST) || ip.is_unspecified()
    }
}

/// Every row of a `/proc/net/tcp` or tcp6 table, the header and lines that
/// do not parse left out.
pub fn parse_net_tcp(text: &str) -> Vec<TcpRow> {
    text.lines().skip(1).filter_map(parse_row).collect()
}

/// `sl local remote st tx:rx tr:when retrnsmt uid timeout inode ...`
fn parse_row(line: &str) -> Option<TcpRow> {
    let f: Vec<&str> = line.split_whitespace().take(10).collect();
    let [_, local, remote, state, queues, _, _, _, _, inode] = f[..] else {
        return None;
    };
    let (tx, rx) = queues.split_once(':')?;
    Some(TcpRow {
        local: parse_addr(local)?,
        remote: parse_addr(remote)?,
        state: TcpState::from_hex(state)?,
        tx_queue_bytes: u32::from_str_radix(tx, 16).ok()?,
        rx_queue: u32::from_str_radix(rx, 16).ok()?,
        inode: inode.parse().ok()?,
    })
}

/// "0100007F:1F90": the address as the kernel's 32-bit words in host
/// order, the port big-endian, both in hex.
fn parse_addr(s: &str) -> Option<SocketAddr> {
    let (ip, port) = s.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |h: &str| u32::from_str_radix(h, 16).ok().map(u32::to_ne_bytes);
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(ip)?)),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[i * 4..i * 4 + 4].copy_from_slice(&word(&ip[i * 8..i * 8 + 8])?);
            }
            let v6 = Ipv6Addr::from(b);
            // A v4 end of a dual-stack socket shows as ::ffff:a.b.c.d.
            v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// Every row of `/proc/net/tcp` and `/proc/net/tcp6` now; None when
/// neither can be read.
pub fn read_net_tcp() -> Option<Vec<TcpRow>> {
    let mut rows = Vec::new();
    let mut read_any = false;
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(file) {
            read_any = true;
            rows.extend(parse_net_tcp(&text));
        }
    }
    read_any.then_some(rows)
}

/// The inode of a `/proc/PID/fd/N` link that is a socket.
pub fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The socket inodes `pid` holds, or None when its fds cannot be read.
fn sockets_of(pid: u32) -> Option<HashSet<u64>> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(
        dir.flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter_map(|l| socket_inode(&l.to_string_lossy()))
            .collect(),
    )
}

/// Listeners on `port` now that a connection to 127.0.0.1 reaches.
pub fn listeners_on(port: u16) -> Vec<TcpRow> {
    read_net_tcp()
        .unwrap_or_default()
        .into_iter()
        .filter(|r| listens_on_loopback(r, port))
        .collect()
}

fn listens_on_loopback(r: &TcpRow, port: u16) -> bool {
    r.state == TcpState::Listen && r.local.port() == port && r.takes_loopback_v4()
}

/// Fails when a process outside `scope` listens on `port`. Passes when
/// nothing can be told: no listener visible (another network namespace)
/// or a process of the scope whose fds this user cannot read.
pub fn check_port_owner(port: u16, scope: &Scope, server: &str) -> Result<(), PortError> {
    let listeners = listeners_on(port);
    if listeners.is_empty() {
        return Ok(());
    }
    let mut ours = HashSet::new();
    for pid in scope.pids() {
        match sockets_of(pid) {
            Some(s) => ours.extend(s),
            None if super::procfs::read_process(pid).is_some() => return Ok(()),
            None => {} // gone meanwhile
        }
    }
    let Some(stranger) = listeners.iter().find(|l| !ours.contains(&l.inode)) else {
        return Ok(());
    };
    Err(PortError::Stranger {
        port,
        server: server.to_string(),
        holder: holder_of(stranger.inode),
    })
}

/// "pid 123, ruby" for the process holding socket `inode`, if this user
/// can see it.
fn holder_of(inode: u64) -> String {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return "its pid is unknown".into();
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if sockets_of(pid).is_some_and(|s| s.contains(&inode)) {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            return format!("pid {pid}, {}", comm.trim());
        }
    }
    "a process this user cannot see; try `ss -ltnp`".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";

    fn row(local: &str, remote: &str, state: TcpState, tx: u32, rx: u32, inode: u64) -> TcpRow {
        TcpRow {
            local: local.parse().unwrap(),
            remote: remote.parse().unwrap(),
            state,
            tx_queue_bytes: tx,
            rx_queue: rx,
            inode,
        }
    }

    #[test]
    fn each_proc_net_tcp_line_reads_as_its_row_or_none() {
        use TcpState::*;
        let cases: &[(&str, &str, Option<TcpRow>)] = &[
            (
                "v4 LISTEN with 3 in its accept queue",
                "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0",
                Some(row("127.0.0.1:8080", "0.0.0.0:0", Listen, 0, 3, 4242)),
            ),
            (
                "v4 ESTABLISHED with bytes both ways",
                "   1: 0100007F:1F90 0100007F:9C40 01 0000002A:00000010 00:00000000 00000000  1000        0 5151 1 0000000000000000 20 4 30 10 -1",
                Some(row("127.0.0.1:8080", "127.0.0.1:40000", Established, 42, 16, 5151)),
            ),
            (
                "v4 TIME_WAIT: no inode any more",
                "   2: 0100007F:D433 0100007F:1F90 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000",
                Some(row("127.0.0.1:54323", "127.0.0.1:8080", TimeWait, 0, 0, 0)),
            ),
            (
                "v4 CLOSE_WAIT and a state without a name",
                "   3: 0100007F:1F90 0100007F:D432 08 00000000:00000000 00:00000000 00000000  1000        0 3 1 0 20 4 30 10 -1",
                Some(row("127.0.0.1:8080", "127.0.0.1:54322", CloseWait, 0, 0, 3)),
            ),
            (
                "SYN_SENT keeps its number",
                "   4: 0100007F:D434 0100007F:1F90 02 00000001:00000000 00:00000000 00000000  1000        0 7 1 0 20 4 30 10 -1",
                Some(row("127.0.0.1:54324", "127.0.0.1:8080", Other(2), 1, 0, 7)),
            ),
            (
                "v6 LISTEN on ::",
                "   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 99 1 0000000000000000 100 0 0 10 0",
                Some(row("[::]:8080", "[::]:0", Listen, 0, 0, 99)),
            ),
            (
                "v6 ESTABLISHED on ::1",
                "   1: 00000000000000000000000001000000:0050 00000000000000000000000001000000:C350 01 00000000:00000000 00:00000000 00000000  1000        0 98 1 0000000000000000 20 4 30 10 -1",
                Some(row("[::1]:80", "[::1]:50000", Established, 0, 0, 98)),
            ),
            (
                "v6 TIME_WAIT of a v4 client of a dual-stack socket reads as v4",
                "   2: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:D431 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000",
                Some(row("127.0.0.1:8080", "127.0.0.1:54321", TimeWait, 0, 0, 0)),
            ),
            ("garbage", "   4: garbage", None),
            (
                "an address that is not hex",
                "   5: zz:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0",
                None,
            ),
            (
                "an address of neither length",
                "   6: 0100:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0",
                None,
            ),
            (
                "a line cut short",
                "   7: 0100007F:1F90 00000000:0000 0A 00000000:00000000",
                None,
            ),
        ];
        for (what, line, want) in cases {
            assert_eq!(parse_row(line), *want, "{what}: {line}");
            let table = format!("{HEAD}{line}\n");
            assert_eq!(
                parse_net_tcp(&table),
                want.iter().copied().collect::<Vec<_>>(),
                "{what}: the table"
            );
        }
        assert!(parse_net_tcp(HEAD).is_empty(), "the header is no row");
    }

    #[test]
    fn parses_listeners_from_proc_net_tcp_and_tcp6() {
        let tcp = format!("{HEAD}   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 5151 1 0000000000000000 20 4 30 10 -1
   2: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 0000000000000000 100 0 0 10 0
   3: 0200007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 18 1 0000000000000000 100 0 0 10 0
   4: 0100007F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 19 1 0000000000000000 100 0 0 10 0
");
        let on_8080 = |t: &str| -> Vec<u64> {
            parse_net_tcp(t)
                .iter()
                .filter(|r| listens_on_loopback(r, 8080))
                .map(|r| r.inode)
                .collect()
        };
        assert_eq!(
            on_8080(&tcp),
            [4242, 17],
            "established connections (01) are no listeners; 127.0.0.2 is not 127.0.0.1; port 80 is another port"
        );
        let tcp6 = format!("{HEAD}   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 99 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 98 1 0000000000000000 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 97 1 0000000000000000 100 0 0 10 0
");
        assert_eq!(
            on_8080(&tcp6),
            [99, 97],
            ":: and ::ffff:127.0.0.1 take 127.0.0.1's connections, ::1 does not"
        );
    }

    #[test]
    fn reads_socket_links() {
        assert_eq!(socket_inode("socket:[12345]"), Some(12345));
        assert_eq!(socket_inode("pipe:[12345]"), None);
        assert_eq!(socket_inode("/dev/null"), None);
    }

    #[test]
    fn a_port_held_outside_the_tree_is_refused_and_inside_it_passes() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // This test process holds the port: in its own tree it passes.
        let me = std::process::id();
        check_port_owner(port, &Scope::tree(me), "self").unwrap();
        // A child that holds nothing is not the server answering there.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let err = check_port_owner(port, &Scope::tree(child.id()), "sleepy").unwrap_err();
        let _ = child.kill();
        let _ = child.wait();
        let msg = err.to_string();
        assert!(
            msg.contains(&format!(
                "port {port} is served by another process (pid {me},"
            )) && msg.contains("not by sleepy")
                && msg.contains("{{port}}"),
            "{msg}"
        );
        // A port nobody listens on tells nothing and passes.
        drop(listener);
        check_port_owner(port, &Scope::tree(me), "self").unwrap();
    }
}
