//! The primary path: one HTTP/1.1 connection per client (hyper), each
//! request forwarded to the primary and its answer streamed back, with a
//! copy handed to the shadow queues and the record writer on the side.
//!
//! The client's answer is the primary's: status, headers (less the
//! hop-by-hop ones, which belong to each connection) and body, streamed
//! with backpressure. Nothing on this path waits on a shadow or the disk:
//! copies are offered with `try_send` and dropped (counted) when they do
//! not fit.

use super::record::{base64, RecordLine};
use super::shadow::{Job, QueueItem};
use super::stats::{Answer, Pair, Part};
use super::tee::{Captured, Tee};
use super::{ShadowSend, Shared};
use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::{Body, Incoming};
use hyper::header::{self, HeaderMap, HeaderName};
use hyper::http::request::Parts;
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

pub type ProxyBody = Either<Tee<Incoming>, Full<Bytes>>;

/// Headers that describe one connection, not the message (RFC 9110
/// §7.6.1), removed in both directions; so is every header the
/// `Connection` header names.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

pub fn strip_hop_by_hop(h: &mut HeaderMap) {
    let named: Vec<HeaderName> = h
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    for n in named {
        h.remove(n);
    }
    for n in HOP_BY_HOP {
        h.remove(*n);
    }
}

/// Marks the primary's part of a pair done once, with None if the request
/// ended some other way (an error, the client gone).
struct PrimaryPart(Option<Arc<Pair>>);

impl PrimaryPart {
    fn finish(&mut self, answer: Option<Answer>) {
        if let Some(p) = self.0.take() {
            p.finish(Part::Primary, answer);
        }
    }
}

impl Drop for PrimaryPart {
    fn drop(&mut self) {
        self.finish(None);
    }
}

type Dispatch = Box<dyn FnOnce() + Send>;

/// Holds a request's shadow copies until the client has its answer
/// (`--shadow-send answered`): the copies are handed to the shadow queues
/// when both the copies are made (the request body was read) and the
/// primary's answer has been passed on (or abandoned), whichever comes
/// second. Why: on a machine whose cores the primary and the shadows
/// share, a copy sent at arrival makes the shadow's connect, send and
/// server work compete with the very request the client is waiting for.
/// Never loses a copy: dropped unopened, it hands them over anyway.
#[derive(Default)]
pub struct Handoff {
    state: std::sync::Mutex<Gate>,
}

#[derive(Default)]
enum Gate {
    #[default]
    Waiting,
    Ready(Dispatch),
    Open,
    Done,
}

impl Handoff {
    /// The copies are made.
    fn ready(&self, f: Dispatch) {
        let mut st = self.state.lock().expect("handoff");
        match std::mem::take(&mut *st) {
            Gate::Open => {
                *st = Gate::Done;
                drop(st);
                later(f);
            }
            _ => *st = Gate::Ready(f),
        }
    }

    /// The client's answer is passed on (or abandoned).
    fn open(&self) {
        let mut st = self.state.lock().expect("handoff");
        match std::mem::take(&mut *st) {
            Gate::Ready(f) => {
                *st = Gate::Done;
                drop(st);
                later(f);
            }
            Gate::Done => *st = Gate::Done,
            _ => *st = Gate::Open,
        }
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        if let Ok(st) = self.state.get_mut() {
            if let Gate::Ready(f) = std::mem::take(st) {
                f();
            }
        }
    }
}

/// Runs `f` once the current task yields (after hyper has written what it
/// was writing), or at once outside a runtime; a task dropped unrun still
/// runs it, so the copies are always counted.
fn later(f: Dispatch) {
    struct RunOnDrop(Option<Dispatch>);
    impl Drop for RunOnDrop {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    let guard = RunOnDrop(Some(f));
    match tokio::runtime::Handle::try_current() {
        Ok(h) => {
            h.spawn(async move { drop(guard) });
        }
        Err(_) => drop(guard),
    }
}

fn plain(status: StatusCode, msg: &'static str) -> Response<ProxyBody> {
    let mut r = Response::new(Either::Right(Full::new(Bytes::from_static(msg.as_bytes()))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain"),
    );
    r
}

/// What the recorder keeps of a request's head, taken before the
/// hop-by-hop headers go: microseconds since the start, the HTTP version
/// and the headers it keeps. None when not recording.
type RecordHead = (u64, String, Vec<(String, String)>);

fn record_head(sh: &Shared, parts: &Parts, t0: Instant) -> Option<RecordHead> {
    sh.recorder.as_ref().map(|rec| {
        let headers: Vec<(String, String)> = parts
            .headers
            .iter()
            .filter(|(n, _)| rec.keeps(n.as_str()))
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into(),
                )
            })
            .collect();
        (
            t0.duration_since(sh.started).as_micros() as u64,
            format!("{:?}", parts.version),
            headers,
        )
    })
}

/// What to do with the request body once it has been seen in full: write
/// the record line (when recording) and offer a copy to every shadow queue
/// (when mirrored: `pair` is Some). None when neither is wanted.
fn body_copies(
    sh: &Arc<Shared>,
    parts: &Parts,
    seq: u64,
    target: &str,
    pair: &Option<Arc<Pair>>,
    record_head: Option<RecordHead>,
    gate: Option<Arc<Handoff>>,
) -> Option<impl FnOnce(Captured) + Send + 'static> {
    let mirror = pair.is_some();
    (mirror || record_head.is_some()).then(|| {
        let sh = Arc::clone(sh);
        let method = parts.method.clone();
        let headers = parts.headers.clone();
        let target = target.to_string();
        let pair = pair.clone();
        move |seen: Captured| {
            if let (Some(rec), Some((t_us, version, headers))) = (&sh.recorder, record_head) {
                if seen.complete {
                    rec.push(RecordLine {
                        seq,
                        t_us,
                        method: method.to_string(),
                        target: target.clone(),
                        version,
                        headers,
                        body_b64: base64(&seen.body),
                        body_truncated: seen.truncated,
                        body_bytes: seen.total,
                    });
                }
            }
            if !mirror {
                return;
            }
            let fits = seen.complete && !seen.truncated;
            let job = Arc::new(Job {
                method,
                target,
                headers,
                body: Bytes::from(if fits { seen.body } else { Vec::new() }),
            });
            let dispatch = move || offer(&sh, job, pair, fits, seen.complete);
            match gate {
                Some(g) => g.ready(Box::new(dispatch)),
                None => dispatch(),
            }
        }
    })
}

/// Offers one copy of the job to every shadow queue, never waiting: a
/// copy that does not fit, or whose shadow is backed off, is dropped and
/// counted.
fn offer(sh: &Shared, job: Arc<Job>, pair: Option<Arc<Pair>>, fits: bool, complete: bool) {
    let now_us = sh.started.elapsed().as_micros() as u64;
    for (i, tx) in sh.shadow_tx.iter().enumerate() {
        let stats = Arc::clone(&sh.judge.shadows[i]);
        let backed_off = stats.breaker.backed_off(now_us);
        let item = QueueItem::new(Arc::clone(&job), pair.clone(), i, stats);
        if !fits {
            if complete {
                sh.judge.shadows[i]
                    .dropped_body
                    .fetch_add(1, Ordering::Relaxed);
            }
            drop(item); // counts itself dropped
            continue;
        }
        if backed_off {
            item.back_off();
            continue;
        }
        // Full or closed: the item comes back and is dropped, counting
        // itself.
        let _ = tx.try_send(item);
    }
}

pub async fn handle(
    sh: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    let t0 = Instant::now();
    let seq = sh.primary.requests.fetch_add(1, Ordering::Relaxed) + 1;
    let (mut parts, body) = req.into_parts();
    let target = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let mirror = !sh.shadow_tx.is_empty() && sh.cfg.mirror_methods.contains(&parts.method);
    let pair = if mirror {
        sh.primary.mirrored.fetch_add(1, Ordering::Relaxed);
        let path = parts.uri.path().to_string();
        Some(Pair::new(path, Arc::clone(&sh.judge)))
    } else {
        None
    };
    let mut primary_part = PrimaryPart(pair.clone());

    let record_head = record_head(&sh, &parts, t0);
    strip_hop_by_hop(&mut parts.headers);

    let gate = (mirror && sh.cfg.shadow_send == ShadowSend::Answered)
        .then(|| Arc::new(Handoff::default()));
    let copies = body_copies(&sh, &parts, seq, &target, &pair, record_head, gate.clone());
    let up_body = match copies {
        Some(f) if body.is_end_stream() => {
            f(Captured {
                complete: true,
                ..Default::default()
            });
            Tee::plain(body)
        }
        Some(f) => Tee::capture(body, sh.cfg.body_limit, Box::new(f)),
        None => Tee::plain(body),
    };

    let uri = format!("http://{}{}", sh.cfg.primary.authority, target);
    let Ok(uri) = uri.parse() else {
        sh.primary.errors.fetch_add(1, Ordering::Relaxed);
        return Ok(plain(StatusCode::BAD_REQUEST, "bad request target\n"));
    };
    parts.uri = uri;
    parts.version = hyper::Version::HTTP_11;
    let up = Request::from_parts(parts, up_body);

    let resp =
        match tokio::time::timeout(sh.cfg.primary_timeout, sh.primary_client.request(up)).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => {
                sh.primary.errors.fetch_add(1, Ordering::Relaxed);
                return Ok(plain(StatusCode::BAD_GATEWAY, "primary failed\n"));
            }
            Err(_) => {
                sh.primary.errors.fetch_add(1, Ordering::Relaxed);
                sh.primary.timeouts.fetch_add(1, Ordering::Relaxed);
                return Ok(plain(StatusCode::GATEWAY_TIMEOUT, "primary timed out\n"));
            }
        };
    let latency_us = t0.elapsed().as_micros().max(1) as u64;
    sh.primary
        .latency_us
        .lock()
        .expect("primary histogram")
        .saturating_record(latency_us);
    let status = resp.status().as_u16();
    let (mut rparts, rbody) = resp.into_parts();
    strip_hop_by_hop(&mut rparts.headers);
    let rbody = if pair.is_some() && sh.cfg.diff_bodies {
        Tee::capture(
            rbody,
            sh.cfg.body_limit,
            Box::new(move |seen: Captured| {
                let whole = seen.complete && !seen.truncated;
                primary_part.finish(Some(Answer {
                    latency_us,
                    status,
                    body: whole.then_some(seen.body),
                }));
                if let Some(g) = gate {
                    g.open();
                }
            }),
        )
    } else {
        primary_part.finish(Some(Answer {
            latency_us,
            status,
            body: None,
        }));
        match gate {
            Some(g) => Tee::capture(rbody, 0, Box::new(move |_| g.open())),
            None => Tee::plain(rbody),
        }
    };
    Ok(Response::from_parts(rparts, Either::Left(rbody)))
}
