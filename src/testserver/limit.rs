//! A single-threaded epoll server with a connection limit, for break-point
//! benchmarks: separate from the thread-per-connection test server and
//! sharing nothing with it. It never fakes faults or delays.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A single-threaded epoll server for break-point benchmarks: it answers
/// "hello world" on its first `limit` open connections and 503 on any
/// beyond, so the highest clean concurrency is exactly `limit`. Unlike the
/// thread-per-connection server it stays responsive with thousands of
/// connections on one core. Runs until `stop` is set.
pub fn serve_with_connection_limit(
    listen: SocketAddr,
    limit: usize,
    stop: &AtomicBool,
    on_ready: impl FnOnce(SocketAddr),
) -> io::Result<u64> {
    use crate::load::epoll::Epoll;
    use std::collections::HashMap;
    use std::os::fd::AsRawFd;
    let sock = socket2::Socket::new(
        socket2::Domain::for_address(listen),
        socket2::Type::STREAM,
        None,
    )?;
    sock.set_reuse_address(true)?;
    sock.bind(&listen.into())?;
    sock.listen(4096)?;
    let listener: TcpListener = sock.into();
    listener.set_nonblocking(true)?;
    on_ready(listener.local_addr()?);
    let mut ep = Epoll::new(1024)?;
    const LISTENER: u64 = u64::MAX;
    ep.add(listener.as_raw_fd(), LISTENER)?;
    // token -> (stream, over the limit, unparsed bytes)
    let mut conns: HashMap<u64, (TcpStream, bool, Vec<u8>)> = HashMap::new();
    let mut next = 0u64;
    let mut answered = 0u64;
    let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world";
    let busy = b"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy";
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        let n = ep.wait(Some(Duration::from_millis(50)))?;
        for i in 0..n {
            let (token, _ready) = ep.event(i);
            if token == LISTENER {
                while let Ok((s, _)) = listener.accept() {
                    s.set_nonblocking(true)?;
                    s.set_nodelay(true)?;
                    let over = conns.len() >= limit;
                    ep.add(s.as_raw_fd(), next)?;
                    conns.insert(next, (s, over, Vec::new()));
                    next += 1;
                }
                continue;
            }
            let mut close = false;
            if let Some((s, over, pending)) = conns.get_mut(&token) {
                loop {
                    match s.read(&mut buf) {
                        Ok(0) => {
                            close = true;
                            break;
                        }
                        Ok(k) => pending.extend_from_slice(&buf[..k]),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(_) => {
                            close = true;
                            break;
                        }
                    }
                }
                // Answer every complete request head (GETs without bodies).
                let mut out = Vec::new();
                while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                    pending.drain(..end + 4);
                    out.extend_from_slice(if *over { busy } else { ok });
                    answered += 1;
                }
                if !out.is_empty() && s.write_all(&out).is_err() {
                    close = true;
                }
            }
            if close {
                conns.remove(&token);
                // Later connections keep their place: the limit counts
                // connections open at once, checked when each is accepted.
            }
        }
    }
    Ok(answered)
}
