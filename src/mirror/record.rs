//! The record writer: each request the proxy saw, one JSON line each,
//! written by its own thread from a bounded queue (docs/RECORD_FORMAT.md).
//!
//! The proxy never waits on the disk: a line that does not fit the queue
//! is dropped and counted (`dropped`), never buffered without bound.
//! Sensitive headers are left out unless kept by name.

use serde::Serialize;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub const FORMAT: &str = "rackbench/record-v1";

/// Headers left out of a record unless `--keep-headers` names them.
pub const SENSITIVE: &[&str] = &["authorization", "cookie", "proxy-authorization"];

/// The first line of a record file.
#[derive(Debug, Serialize)]
struct FileHead<'a> {
    format: &'a str,
    rackbench_version: &'a str,
    started_unix_ms: u128,
    dropped_headers: Vec<String>,
}

/// One request, as a line.
#[derive(Debug, Serialize)]
pub struct RecordLine {
    /// Sequence number of the request at the proxy (from 1).
    pub seq: u64,
    /// Arrival of the request head, microseconds after `started_unix_ms`.
    pub t_us: u64,
    pub method: String,
    /// Path and query as the client sent them.
    pub target: String,
    pub version: String,
    /// In arrival order; names as the client spelled them.
    pub headers: Vec<(String, String)>,
    /// The body, base64 (standard alphabet, padded); empty for none.
    pub body_b64: String,
    /// The body was longer than the body limit and is cut at it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub body_truncated: bool,
    /// Length of the body as received, bytes (before any cut).
    pub body_bytes: u64,
}

#[derive(Debug, Default)]
pub struct RecordStats {
    pub written: AtomicU64,
    pub dropped: AtomicU64,
    pub write_errors: AtomicU64,
}

/// The sending side, shared by the proxy's tasks.
pub struct Recorder {
    tx: Mutex<Option<SyncSender<RecordLine>>>,
    pub stats: Arc<RecordStats>,
    pub path: PathBuf,
    keep: Vec<String>,
    thread: Mutex<Option<JoinHandle<std::io::Result<()>>>>,
}

impl Recorder {
    /// Creates `path` and writes its head line; `queue` lines may wait for
    /// the disk before new ones are dropped.
    pub fn create(
        path: &Path,
        keep_headers: &[String],
        queue: usize,
        started_unix_ms: u128,
    ) -> std::io::Result<Recorder> {
        let file = std::fs::File::create(path)?;
        let mut out = BufWriter::with_capacity(256 * 1024, file);
        let keep: Vec<String> = keep_headers
            .iter()
            .map(|h| h.to_ascii_lowercase())
            .collect();
        let head = FileHead {
            format: FORMAT,
            rackbench_version: env!("CARGO_PKG_VERSION"),
            started_unix_ms,
            dropped_headers: SENSITIVE
                .iter()
                .filter(|h| !keep.iter().any(|k| k == *h))
                .map(|h| h.to_string())
                .collect(),
        };
        serde_json::to_writer(&mut out, &head)?;
        out.write_all(b"\n")?;
        out.flush()?;
        let (tx, rx) = sync_channel::<RecordLine>(queue.max(1));
        let stats = Arc::new(RecordStats::default());
        let st = Arc::clone(&stats);
        let thread = std::thread::Builder::new()
            .name("mirror-record".into())
            .spawn(move || {
                for line in rx {
                    let r = serde_json::to_writer(&mut out, &line)
                        .map_err(std::io::Error::from)
                        .and_then(|_| out.write_all(b"\n"));
                    match r {
                        Ok(()) => st.written.fetch_add(1, Ordering::Relaxed),
                        Err(_) => st.write_errors.fetch_add(1, Ordering::Relaxed),
                    };
                }
                out.flush()
            })?;
        Ok(Recorder {
            tx: Mutex::new(Some(tx)),
            stats,
            path: path.to_path_buf(),
            keep,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Whether a header goes into the record.
    pub fn keeps(&self, name: &str) -> bool {
        let lower = name.to_ascii_lowercase();
        !SENSITIVE.contains(&lower.as_str()) || self.keep.contains(&lower)
    }

    /// Queues a line; drops and counts it if the writer is behind.
    pub fn push(&self, line: RecordLine) {
        let guard = self.tx.lock().expect("record queue");
        let Some(tx) = guard.as_ref() else {
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        match tx.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.stats.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Writes what is queued and closes the file.
    pub fn finish(&self) -> std::io::Result<()> {
        self.tx.lock().expect("record queue").take();
        let thread = self.thread.lock().expect("record thread").take();
        match thread {
            Some(t) => t.join().unwrap_or(Ok(())),
            None => Ok(()),
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Standard base64 with padding (RFC 4648 §4).
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        out.push(A[(n >> 18) as usize & 63] as char);
        out.push(A[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 {
            A[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if c.len() > 2 {
            A[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (raw, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(raw.as_bytes()), enc);
        }
    }
}
