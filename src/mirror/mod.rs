//! `mirror`: a traffic-duplicating HTTP/1.1 proxy, safe to put in front of
//! production. The client always gets the primary's answer; each request
//! (GET and HEAD unless told otherwise) is copied to every shadow through a
//! bounded queue, and the shadows' answers are paired with the primary's to
//! measure the latency difference and count mismatches. It can also write
//! every request to a record file.
//!
//! The primary path never waits on a shadow or on the disk: queues,
//! in-flight requests, timeouts, header sizes and body copies are all
//! bounded, and whatever does not fit is dropped and counted. It never
//! spawns servers or drives load of its own; it relays what arrives.
//!
//! - [`config`]: what a mirror is told (MirrorConfig, Upstream, ShadowSend).
//! - [`shared`]: what the proxy's tasks share.
//! - [`proxy`]: the primary path (hyper server and client).
//! - [`tee`]: a body that streams through and keeps a bounded copy.
//! - [`shadow`]: shadow queues and senders, on a thread of their own.
//! - [`backoff`]: the circuit breaker that backs off a failing shadow.
//! - [`stats`]: counters, pairing, the median's confidence interval,
//!   body diffs with the second primary's noise filter.
//! - [`record`]: the record writer (docs/RECORD_FORMAT.md).
//! - [`doc`]: the `rackbench/mirror-v1` document (its HTML page is
//!   `report::mirror`).

pub mod backoff;
pub mod config;
pub mod doc;
pub mod proxy;
pub mod record;
pub mod shadow;
pub mod shared;
pub mod stats;
pub mod tee;

pub use config::{MirrorConfig, ShadowSend, Upstream};
pub use shared::Shared;

use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use record::Recorder;
use shadow::{QueueItem, ShadowTarget};
use stats::{Judge, PrimaryStats, ShadowStats};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, watch, Semaphore};

/// A running mirror: its address, live figures, and `stop`.
pub struct Mirror {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The primary path's runtime: one thread by default, so a request's
/// server side, client side and the primary's connection are tasks on the
/// same thread and hand over without waking another (a cross-thread wake
/// costs tens of µs on a busy machine, more than the proxy's own work).
/// `threads` > 1 (`--proxy-threads`) gives a multi-thread runtime for rates one
/// core cannot relay.
fn primary_runtime(threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("mirror")
            .enable_all()
            .build()
    }
}

/// The shadows run on a runtime and thread of their own: their sends,
/// connects, failures and answers never queue behind or ahead of a
/// primary request in one scheduler. Returns the stop signal and the
/// thread; the runtime ends (dropping what is left) when stop is sent.
fn start_shadows(
    workers: Vec<(mpsc::Receiver<QueueItem>, ShadowTarget)>,
) -> std::io::Result<(watch::Sender<bool>, std::thread::JoinHandle<()>)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (stop, mut stop_rx) = watch::channel(false);
    let thread = std::thread::Builder::new()
        .name("mirror-shadows".into())
        .spawn(move || {
            rt.block_on(async move {
                for (rx, target) in workers {
                    let client: shadow::ShadowClient = Client::builder(TokioExecutor::new())
                        .pool_idle_timeout(Duration::from_secs(60))
                        .pool_max_idle_per_host(target.concurrency)
                        .build(connector());
                    let sem = Arc::new(Semaphore::new(target.concurrency));
                    tokio::spawn(shadow::run(rx, client, target, sem));
                }
                while !*stop_rx.borrow_and_update() {
                    if stop_rx.changed().await.is_err() {
                        break;
                    }
                }
            });
            rt.shutdown_timeout(Duration::from_millis(500));
        })?;
    Ok((stop, thread))
}

fn connector() -> HttpConnector {
    let mut c = HttpConnector::new();
    c.set_nodelay(true);
    c.set_connect_timeout(Some(Duration::from_secs(5)));
    c
}

impl Mirror {
    /// Binds, starts the proxy on its own runtime, and returns at once.
    pub fn start(cfg: MirrorConfig) -> anyhow::Result<Mirror> {
        use anyhow::Context;
        let std_listener = std::net::TcpListener::bind(cfg.listen)
            .with_context(|| format!("cannot listen on {}; pick a free address", cfg.listen))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let started_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let recorder = match &cfg.record {
            Some(p) => Some(
                Recorder::create(p, &cfg.keep_headers, 65_536, started_unix_ms)
                    .with_context(|| format!("cannot write the record file {}", p.display()))?,
            ),
            None => None,
        };
        let rt = primary_runtime(cfg.threads)?;

        // Every shadow, then the second primary: it is queued and bounded
        // like a shadow, so it can never slow the client either.
        let upstreams: Vec<&Upstream> = cfg
            .shadows
            .iter()
            .map(|(_, u)| u)
            .chain(cfg.primary_b.as_ref())
            .collect();
        let keep_body = if cfg.diff_bodies { cfg.body_limit } else { 0 };
        let started = Instant::now();
        let mut shadow_tx = Vec::new();
        let mut workers = Vec::new();
        let mut stats = Vec::new();
        for u in &upstreams {
            let (tx, rx) = mpsc::channel::<QueueItem>(cfg.queue.max(1));
            shadow_tx.push(tx);
            stats.push(Arc::new(ShadowStats::default()));
            let target = ShadowTarget {
                authority: u.authority.clone(),
                concurrency: cfg.shadow_concurrency.max(1),
                timeout: cfg.shadow_timeout,
                epoch: started,
                keep_body,
            };
            workers.push((rx, target));
        }
        let judge = Arc::new(Judge {
            shadows: stats,
            has_primary_b: cfg.primary_b.is_some(),
            diff_bodies: cfg.diff_bodies,
        });
        let (stop, mut stop_rx) = watch::channel(false);
        let shared = {
            let _guard = rt.enter();
            let primary_client = Client::builder(TokioExecutor::new())
                .pool_idle_timeout(Duration::from_secs(60))
                .http1_preserve_header_case(true)
                .build(connector());
            Arc::new(Shared {
                cfg,
                started,
                started_unix_ms,
                primary: PrimaryStats::default(),
                judge,
                shadow_tx,
                primary_client,
                recorder,
            })
        };
        let (shadows_stop, shadows) = start_shadows(workers)?;
        let sh = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("mirror-main".into())
            .spawn(move || {
                rt.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(std_listener) {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("mirror: cannot listen: {e}");
                            return;
                        }
                    };
                    accept_loop(listener, Arc::clone(&sh), &mut stop_rx).await;
                    // Let the shadows finish what is queued and in flight,
                    // for at most one shadow timeout and a little.
                    let deadline =
                        Instant::now() + sh.cfg.shadow_timeout + Duration::from_millis(200);
                    while Instant::now() < deadline {
                        let idle = sh.judge.shadows.iter().all(|s| s.settled());
                        if idle {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                });
                rt.shutdown_timeout(Duration::from_millis(500));
                // Dropping the shadows' runtime drops whatever is left:
                // unsent copies count themselves dropped.
                let _ = shadows_stop.send(true);
                let _ = shadows.join();
            })?;
        Ok(Mirror {
            addr,
            shared,
            stop,
            thread: Some(thread),
        })
    }

    /// The figures so far.
    pub fn snapshot(&self) -> doc::MirrorDoc {
        doc::MirrorDoc::build(&self.shared, self.addr)
    }

    /// Stops accepting, lets the shadows finish (bounded by the shadow
    /// timeout), closes the record, and returns the final figures.
    pub fn stop(mut self) -> doc::MirrorDoc {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(r) = &self.shared.recorder {
            let _ = r.finish();
        }
        doc::MirrorDoc::build(&self.shared, self.addr)
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    sh: Arc<Shared>,
    stop: &mut watch::Receiver<bool>,
) {
    let conns = Arc::new(Semaphore::new(sh.cfg.max_connections.max(1)));
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&conns).acquire_owned() => p,
            _ = stop.changed() => return,
        };
        let Ok(permit) = permit else { return };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => return,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(_) => {
                // Out of descriptors, say: wait rather than spin.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let sh = Arc::clone(&sh);
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let svc_sh = Arc::clone(&sh);
            let svc =
                hyper::service::service_fn(move |req| proxy::handle(Arc::clone(&svc_sh), req));
            let conn = hyper::server::conn::http1::Builder::new()
                .preserve_header_case(true)
                // The client gets the primary's headers, not one more.
                .auto_date_header(false)
                .max_buf_size(sh.cfg.max_header_bytes.max(8192))
                .timer(TokioTimer::new())
                .header_read_timeout(sh.cfg.header_timeout)
                .serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop.changed() => {
                    // Finish the request in progress, then close.
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
                }
            }
            drop(permit);
        });
    }
}
