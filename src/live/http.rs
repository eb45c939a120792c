//! The endpoint's HTTP server: a thread on std's listener, each connection
//! answered on a short-lived thread of its own (a browser's idle
//! preconnection must not hold up a scrape), at most [`MAX_CLIENTS`] at
//! once; one request per connection (`Connection: close`), GET only (405
//! otherwise): `/metrics`, `/live.json`, the page at `/`, 404 otherwise.
//! Scrapers and a page or two are all it serves, so it needs no more.

use super::board::Board;
use super::exposition;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The largest request head read; a longer one is answered 431.
const MAX_HEAD: usize = 16 * 1024;

/// Connections answered at once; more are closed unanswered.
pub const MAX_CLIENTS: usize = 16;

/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// A running endpoint: stops when dropped.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// `ADDR` as `--metrics-listen` takes it: `PORT`, `:PORT`, `HOST:PORT`
/// or `[V6]:PORT`; the host is 127.0.0.1 when left out.
pub fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let full = if text.parse::<u16>().is_ok() {
        format!("127.0.0.1:{text}")
    } else if let Some(port) = text.strip_prefix(':') {
        format!("127.0.0.1:{port}")
    } else {
        text.to_string()
    };
    full.parse().map_err(|_| {
        format!("--metrics-listen {text}: not an address: give PORT, :PORT or HOST:PORT, e.g. 127.0.0.1:9464")
    })
}

impl Server {
    /// Listens on `addr` and serves `board` from a thread of its own. A
    /// port in use, or an address not this machine's, is an error that
    /// names the fix.
    pub fn start(addr: SocketAddr, board: Arc<Board>) -> Result<Server, String> {
        let listener = TcpListener::bind(addr).map_err(|e| match e.kind() {
            std::io::ErrorKind::AddrInUse => format!(
                "--metrics-listen {addr}: the port is in use: pick another one, or port 0 for any free port"
            ),
            _ => format!("--metrics-listen {addr}: cannot listen there ({e}): give an address of this machine, e.g. 127.0.0.1:9464"),
        })?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("--metrics-listen {addr}: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("rackbench-live".into())
            .spawn(move || accept_loop(&listener, board, &flag))
            .map_err(|e| format!("cannot start the metrics endpoint's thread: {e}"))?;
        Ok(Server {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens (the port chosen when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Accepts until stopped; the listener is non-blocking, so a stop is seen
/// within one nap.
fn accept_loop(listener: &TcpListener, board: Arc<Board>, stop: &AtomicBool) {
    let active = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((conn, _)) => {
                if active.fetch_add(1, Ordering::SeqCst) >= MAX_CLIENTS {
                    active.fetch_sub(1, Ordering::SeqCst);
                    continue; // dropped: closed unanswered
                }
                let (board, mine) = (Arc::clone(&board), Arc::clone(&active));
                let spawned = std::thread::Builder::new()
                    .name("rackbench-live-client".into())
                    .spawn(move || {
                        // One bad client costs its own answer, nothing more.
                        let _ = answer(conn, &board);
                        mine.fetch_sub(1, Ordering::SeqCst);
                    });
                if spawned.is_err() {
                    active.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Reads one request head and writes its answer.
fn answer(mut conn: TcpStream, board: &Board) -> std::io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(READ_TIMEOUT))?;
    conn.set_write_timeout(Some(READ_TIMEOUT))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 4096];
    let (status, ctype, body) = loop {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&head) {
            Ok(httparse::Status::Complete(_)) => break route(&req, board),
            Ok(httparse::Status::Partial) if head.len() < MAX_HEAD => continue,
            Ok(httparse::Status::Partial) => {
                break (431, "text/plain", "request head too large\n".into())
            }
            Err(_) => break (400, "text/plain", "bad request\n".into()),
        }
    };
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Bad Request",
    };
    let out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(out.as_bytes())?;
    conn.write_all(&body)?;
    conn.flush()
}

/// What a complete request gets: status, content type, body.
fn route(req: &httparse::Request, board: &Board) -> (u16, &'static str, Vec<u8>) {
    let method = req.method.unwrap_or("");
    if method != "GET" {
        return (405, "text/plain", b"GET only\n".to_vec());
    }
    let path = req.path.unwrap_or("/");
    let path = path.split('?').next().unwrap_or(path);
    match path {
        "/metrics" => {
            let accept = (req.headers.iter())
                .find(|h| h.name.eq_ignore_ascii_case("accept"))
                .and_then(|h| std::str::from_utf8(h.value).ok());
            let (text, ctype) =
                exposition::render(board.snapshot(), exposition::wants_openmetrics(accept));
            (200, ctype, text.into_bytes())
        }
        "/live.json" => {
            let doc = board.snapshot().to_json();
            let text = serde_json::to_vec(&doc).expect("a JSON value serializes");
            (200, "application/json", text)
        }
        "/" => (
            200,
            "text/html; charset=utf-8",
            super::page::html().as_bytes().to_vec(),
        ),
        _ => (
            404,
            "text/plain",
            b"not found: try /metrics, /live.json or /\n".to_vec(),
        ),
    }
}
