//! `rackbench serve-test`: the built-in test server in the foreground.
//! Hidden: it exists for rackbench's own benchmarks, e.g. holding the
//! generator's p50 against the server's own service time and wrk's.

use super::parse;
use crate::load::Endpoint;
use crate::testserver::{
    serve_forever_recording, serve_with_connection_limit, Fault, TestServerConfig,
};
use anyhow::Result;
use clap::Args;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct ServeTestArgs {
    /// Listen address.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Service time added to every request, e.g. 1ms.
    #[arg(long, value_parser = parse::duration, default_value = "0s")]
    pub delay: Duration,
    /// Answer 503 on connections beyond this many open at once (0 = no limit).
    #[arg(long, default_value_t = 0)]
    pub max_connections: usize,
    /// Answer 503 to a request arriving while this many are in progress
    /// (0 = no limit); admitted requests take --delay even if their client
    /// left.
    #[arg(long, default_value_t = 0, conflicts_with = "max_connections")]
    pub max_in_progress: usize,
    /// Work on at most this many admitted requests at once, the others
    /// queued in order (0 = all at once).
    #[arg(long, default_value_t = 0, conflicts_with = "max_connections")]
    pub workers: usize,
    /// Reset the connection instead of answering every Nth request (0 =
    /// never): a server that drops connections, e.g. behind nginx.
    #[arg(long, default_value_t = 0, conflicts_with = "max_connections")]
    pub reset_every: u64,
    /// At the end, write each request's arrival (unix µs, one per line).
    #[arg(long, conflicts_with = "max_connections")]
    pub arrivals_out: Option<std::path::PathBuf>,
    /// Service time of the requests whose path starts with PREFIX, in
    /// place of --delay, e.g. /slow=20ms (repeatable; the first that
    /// matches wins).
    #[arg(long, value_name = "PREFIX=DURATION", value_parser = path_delay, conflicts_with = "max_connections")]
    pub path_delay: Vec<(String, Duration)>,
}

/// `/slow=20ms` → ("/slow", 20 ms).
fn path_delay(text: &str) -> Result<(String, Duration), String> {
    let (prefix, d) = text
        .split_once('=')
        .filter(|(p, _)| p.starts_with('/'))
        .ok_or_else(|| format!("--path-delay '{text}': write it as /path=20ms"))?;
    Ok((prefix.to_string(), parse::duration(d)?))
}

pub fn run(args: ServeTestArgs) -> Result<ExitCode> {
    crate::load::raise_open_files_limit();
    if args.max_connections > 0 {
        // The epoll server: exact at thousands of connections.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for sig in [libc::SIGINT, libc::SIGTERM] {
            signal_hook::flag::register(sig, std::sync::Arc::clone(&stop))?;
        }
        let answered =
            serve_with_connection_limit(args.listen, args.max_connections, &stop, |addr| {
                println!("http://{addr}/");
                let _ = std::io::Write::flush(&mut std::io::stdout());
            })?;
        eprintln!("{{\"answered\":{answered}}}");
        return Ok(ExitCode::SUCCESS);
    }
    serve_forever_recording(
        TestServerConfig {
            bind: Endpoint::Tcp(args.listen),
            delay: args.delay,
            max_connections: args.max_connections,
            max_in_progress: args.max_in_progress,
            workers: args.workers,
            fault: if args.reset_every > 0 {
                Fault::Reset
            } else {
                Fault::None
            },
            fault_every: args.reset_every.max(1),
            path_delays: args.path_delay,
            ..Default::default()
        },
        args.arrivals_out.as_deref(),
    )?;
    Ok(ExitCode::SUCCESS)
}
