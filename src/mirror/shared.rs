//! What the proxy's tasks share: the configuration, the clocks, the
//! counters and the queues to the shadows. Apart from mod.rs, which starts
//! the mirror, so the files that use it (proxy, doc) and the one that
//! builds it do not import each other.

use super::record::Recorder;
use super::shadow::QueueItem;
use super::stats::{Judge, PrimaryStats};
use super::tee::Tee;
use super::MirrorConfig;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// What the proxy's tasks share.
pub struct Shared {
    pub cfg: MirrorConfig,
    pub started: Instant,
    pub started_unix_ms: u128,
    pub primary: PrimaryStats,
    pub judge: Arc<Judge>,
    /// One per shadow, the second primary last.
    pub shadow_tx: Vec<mpsc::Sender<QueueItem>>,
    pub primary_client: Client<HttpConnector, Tee<hyper::body::Incoming>>,
    pub recorder: Option<Recorder>,
}
