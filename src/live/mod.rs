//! The live endpoint (`--metrics-listen ADDR`): while a command works, an
//! HTTP server shows what it measures so far: `/metrics` for Prometheus
//! (OpenMetrics or the 0.0.4 text), `/live.json` (rackbench/live-v1) and
//! the page at `/` (docs/LIVE.md).
//!
//! One [`Board`] per process holds it. The load engine feeds it through
//! `load::Observer` (the engine sits below this module), the lab, the
//! plan runner and the mirror through [`board`]; each figure is published
//! from the one place it is measured.

mod board;
mod exposition;
mod http;
pub mod page;
mod snapshot;
#[cfg(test)]
mod tests;

pub use board::{Board, SECONDS_KEPT};
pub use exposition::{render, wants_openmetrics, OPENMETRICS, PROMETHEUS_TEXT};
pub use http::{parse_addr, Server};
pub use snapshot::{
    Counts, LatencyNow, Phase, Proxy, Second, ServerNow, Shadow, Snapshot, TelemetryNow,
    TrialLabels, BUCKETS_S,
};

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

static BOARD: OnceLock<Arc<Board>> = OnceLock::new();

/// This process's board, once a command started the endpoint.
pub fn board() -> Option<&'static Board> {
    BOARD.get().map(|b| &**b)
}

/// A command's endpoint: its board (this process's) and its server.
#[derive(Debug)]
pub struct Live {
    board: Arc<Board>,
    server: Server,
    linger: Duration,
}

impl Live {
    /// Starts the endpoint for `command` at `addr` and makes its board the
    /// process's, which every later load run and trial feeds. Says where
    /// on stderr, with a warning when the address is not loopback.
    pub fn start(command: &str, addr: SocketAddr, linger: Duration) -> Result<Live, String> {
        let board = Arc::new(Board::new(command));
        let server = Server::start(addr, Arc::clone(&board))?;
        if !addr.ip().is_loopback() {
            eprintln!(
                "warning: --metrics-listen {addr} serves this run's figures beyond this machine, to anyone who can reach it"
            );
        }
        let _ = BOARD.set(Arc::clone(&board));
        crate::load::observe_all(Arc::clone(&board) as Arc<dyn crate::load::Observer>);
        let shown = server.addr();
        let host = if shown.ip().is_unspecified() {
            SocketAddr::new([127, 0, 0, 1].into(), shown.port())
        } else {
            shown
        };
        eprintln!(
            "live: http://{host}/metrics, http://{host}/live.json, the page at http://{host}/"
        );
        Ok(Live {
            board,
            server,
            linger,
        })
    }

    /// The board this endpoint shows.
    pub fn board(&self) -> &Arc<Board> {
        &self.board
    }

    /// Where the server listens.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// The work has ended: the board says so, and the endpoint keeps
    /// serving the final figures for the linger (`--metrics-linger`), or
    /// until SIGINT or SIGTERM, so a scraper gets the last counts.
    pub fn finish(self) {
        self.board.finish();
        if self.linger.is_zero() {
            return;
        }
        eprintln!(
            "live: serving the final figures for {} more (Ctrl-C ends it)",
            crate::units::fmt_us(self.linger.as_micros() as f64)
        );
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
        }
        let until = Instant::now() + self.linger;
        while !stop.load(Ordering::Relaxed) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // An early return (an error) still ends the board's story.
        self.board.finish();
    }
}
