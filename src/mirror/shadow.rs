//! Shadow queues: each shadow has a bounded queue of request copies and a
//! bounded number of requests in flight, each under a timeout.
//!
//! The primary path only ever calls `try_send` here: a copy that does not
//! fit the queue is dropped and counted on the spot. A shadow that hangs
//! holds at most `concurrency` requests for at most `timeout` each; a
//! shadow that is dead or resets fails fast and is counted, and after a
//! few failures in a row it is backed off (backoff.rs): its copies are
//! dropped and counted without a connect until a probe gets an answer.
//! Connections to a shadow are pooled and reused. Nothing here
//! can slow or fail the client's answer.

use super::backoff::Admit;
use super::stats::{Answer, Pair, Part, ShadowStats};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{HeaderMap, Method, Request};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Semaphore};

/// One request, as every shadow gets it.
pub struct Job {
    pub method: Method,
    /// Path and query.
    pub target: String,
    /// Hop-by-hop headers already removed.
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// One shadow's copy of a job. Dropped unsent (queue full, body too
/// large, shutdown), it counts itself dropped and tells the pair.
pub struct QueueItem {
    pub job: Arc<Job>,
    pub pair: Option<Arc<Pair>>,
    pub index: usize,
    pub stats: Arc<ShadowStats>,
    sent: bool,
    /// Sent as the probe of a backed-off shadow.
    probe: bool,
    finished: bool,
}

impl QueueItem {
    pub fn new(
        job: Arc<Job>,
        pair: Option<Arc<Pair>>,
        index: usize,
        stats: Arc<ShadowStats>,
    ) -> QueueItem {
        stats.offered.fetch_add(1, Ordering::Relaxed);
        QueueItem {
            job,
            pair,
            index,
            stats,
            sent: false,
            probe: false,
            finished: false,
        }
    }

    /// Drops the copy unsent because the shadow is backed off, counted.
    pub fn back_off(self) {
        self.stats.backed_off.fetch_add(1, Ordering::Relaxed);
        // Drop counts it dropped and tells the pair.
    }

    fn finish(&mut self, answer: Option<Answer>) {
        self.finished = true;
        if let Some(p) = &self.pair {
            p.finish(Part::Shadow(self.index), answer);
        }
    }
}

impl Drop for QueueItem {
    fn drop(&mut self) {
        if !self.sent {
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
        }
        if !self.finished {
            self.finish(None);
        }
    }
}

/// How one shadow is reached and bounded.
#[derive(Debug, Clone)]
pub struct ShadowTarget {
    /// `host:port`.
    pub authority: String,
    pub concurrency: usize,
    pub timeout: Duration,
    /// The mirror's start: the breaker's clock.
    pub epoch: Instant,
    /// Keep up to this many bytes of each answer's body (0: none, the
    /// body is read and thrown away).
    pub keep_body: usize,
}

pub type ShadowClient = Client<HttpConnector, Full<Bytes>>;

/// Takes copies off the queue as permits allow and sends each under the
/// timeout. Ends when every sender is gone and the queue is empty.
pub async fn run(
    mut rx: mpsc::Receiver<QueueItem>,
    client: ShadowClient,
    target: ShadowTarget,
    busy: Arc<Semaphore>,
) {
    let target = Arc::new(target);
    while let Some(mut item) = rx.recv().await {
        // A backed-off shadow's copies go no further, without waiting for
        // a permit: the queue drains at once.
        match item
            .stats
            .breaker
            .admit(now_us(&target), target.timeout.as_micros() as u64)
        {
            Admit::BackedOff => {
                item.back_off();
                continue;
            }
            Admit::Probe => item.probe = true,
            Admit::Send => {}
        }
        // Waiting here is what bounds the shadow: while every permit is
        // out, the queue fills and the proxy's try_send drops copies.
        let Ok(permit) = Arc::clone(&busy).acquire_owned().await else {
            break;
        };
        let client = client.clone();
        let target = Arc::clone(&target);
        tokio::spawn(async move {
            send(item, &client, &target).await;
            drop(permit);
        });
    }
}

fn now_us(target: &ShadowTarget) -> u64 {
    target.epoch.elapsed().as_micros() as u64
}

async fn send(mut item: QueueItem, client: &ShadowClient, target: &ShadowTarget) {
    item.sent = true;
    item.stats.sent.fetch_add(1, Ordering::Relaxed);
    let job = Arc::clone(&item.job);
    let uri = format!("http://{}{}", target.authority, job.target);
    let mut req = Request::builder()
        .method(job.method.clone())
        .uri(uri)
        .body(Full::new(job.body.clone()))
        .expect("a request built from a parsed one");
    *req.headers_mut() = job.headers.clone();
    let keep = target.keep_body;
    let t0 = Instant::now();
    let exchange = async {
        let resp = client.request(req).await?;
        let latency_us = t0.elapsed().as_micros().max(1) as u64;
        let status = resp.status().as_u16();
        // Read the whole body, so the connection can be used again, but
        // keep no more than `keep` bytes of it.
        let mut body = resp.into_body();
        let mut kept: Vec<u8> = Vec::new();
        let mut whole = true;
        while let Some(frame) = body.frame().await {
            let frame =
                frame.map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?;
            if let Some(d) = frame.data_ref() {
                let room = keep.saturating_sub(kept.len());
                if d.len() > room {
                    whole = false;
                }
                kept.extend_from_slice(&d[..d.len().min(room)]);
            }
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(Answer {
            latency_us,
            status,
            body: (keep > 0 && whole).then_some(kept),
        })
    };
    match tokio::time::timeout(target.timeout, exchange).await {
        // The pair is judged first, so a copy counted as ended has its
        // comparison in the figures too.
        Ok(Ok(answer)) => {
            item.stats
                .slow
                .lock()
                .expect("shadow stats")
                .latency_us
                .saturating_record(answer.latency_us);
            item.stats.breaker.answered();
            item.finish(Some(answer));
            item.stats.answered.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Err(_)) => {
            item.stats.breaker.failed(now_us(target), item.probe);
            item.finish(None);
            item.stats.errors.fetch_add(1, Ordering::Relaxed);
        }
        Err(_) => {
            item.stats.breaker.failed(now_us(target), item.probe);
            item.finish(None);
            item.stats.timeouts.fetch_add(1, Ordering::Relaxed);
        }
    }
}
