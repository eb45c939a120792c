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
//! Like the rest of the sampler it only reads /proc.

use super::procfs::Scope;
use std::collections::HashSet;
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

/// One listening socket from /proc/net/tcp or tcp6.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub port: u16,
    pub inode: u64,
    /// Whether a connection to 127.0.0.1 can reach it (bound to
    /// 127.0.0.1, 0.0.0.0, :: or ::ffff:127.0.0.1).
    pub loopback: bool,
}

const LISTEN: &str = "0A";

/// The LISTEN entries of a /proc/net/tcp or tcp6 table.
pub fn parse_net_tcp(text: &str) -> Vec<Listener> {
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 || f[3] != LISTEN {
            continue;
        }
        let Some((addr, port)) = f[1].split_once(':') else {
            continue;
        };
        let (Ok(port), Ok(inode)) = (u16::from_str_radix(port, 16), f[9].parse::<u64>()) else {
            continue;
        };
        // Addresses are the kernel's words in host order (little-endian here).
        let loopback = matches!(
            addr,
            "0100007F"
                | "00000000"
                | "00000000000000000000000000000000"
                | "0000000000000000FFFF00000100007F"
                | "0000000000000000FFFF000000000000"
        );
        out.push(Listener {
            port,
            inode,
            loopback,
        });
    }
    out
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

/// Loopback listeners on `port` now.
pub fn listeners_on(port: u16) -> Vec<Listener> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|t| parse_net_tcp(&t))
        .filter(|l| l.port == port && l.loopback)
        .collect()
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

    #[test]
    fn parses_listeners_from_proc_net_tcp_and_tcp6() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 5151 1 0000000000000000 20 4 30 10 -1
   2: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 17 1 0000000000000000 100 0 0 10 0
   3: 0200007F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 18 1 0000000000000000 100 0 0 10 0
   4: garbage
";
        assert_eq!(
            parse_net_tcp(tcp),
            vec![
                Listener {
                    port: 8080,
                    inode: 4242,
                    loopback: true
                },
                Listener {
                    port: 22,
                    inode: 17,
                    loopback: true
                },
                Listener {
                    port: 80,
                    inode: 18,
                    loopback: false
                },
            ],
            "established connections (01) are no listeners; 127.0.0.2 is not 127.0.0.1"
        );
        let tcp6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 99 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 98 1 0000000000000000 100 0 0 10 0
";
        assert_eq!(
            parse_net_tcp(tcp6),
            vec![
                Listener {
                    port: 8080,
                    inode: 99,
                    loopback: true
                },
                Listener {
                    port: 80,
                    inode: 98,
                    loopback: false
                },
            ],
            ":: takes 127.0.0.1's connections, ::1 does not"
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
