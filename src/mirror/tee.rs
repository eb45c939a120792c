//! A body that passes every frame through untouched and keeps a copy of
//! the first `limit` bytes on the side, handing the copy over once the
//! body has ended (or was abandoned).
//!
//! The copy never holds the stream back: frames go on whether or not they
//! fit, and a body longer than the limit is only marked `truncated`.

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};

/// What a tee saw of a body.
#[derive(Debug, Default)]
pub struct Captured {
    /// The first `limit` bytes.
    pub body: Vec<u8>,
    /// Bytes seen in all.
    pub total: u64,
    pub truncated: bool,
    /// The body reached its end (false: an error, or dropped midway).
    pub complete: bool,
}

type OnDone = Box<dyn FnOnce(Captured) + Send>;

struct Capture {
    seen: Captured,
    limit: usize,
    on_done: OnDone,
}

pub struct Tee<B> {
    inner: B,
    capture: Option<Capture>,
}

impl<B: Body<Data = Bytes> + Unpin> Tee<B> {
    /// A plain pass-through.
    pub fn plain(inner: B) -> Tee<B> {
        Tee {
            inner,
            capture: None,
        }
    }

    /// Keeps the first `limit` bytes and calls `on_done` once, at the end.
    pub fn capture(inner: B, limit: usize, on_done: OnDone) -> Tee<B> {
        Tee {
            inner,
            capture: Some(Capture {
                seen: Captured::default(),
                limit,
                on_done,
            }),
        }
    }

    fn done(&mut self, complete: bool) {
        if let Some(c) = self.capture.take() {
            let mut seen = c.seen;
            seen.complete = complete;
            (c.on_done)(seen);
        }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Body for Tee<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        let r = match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(r) => r,
        };
        match &r {
            Some(Ok(frame)) => {
                if let (Some(c), Some(d)) = (this.capture.as_mut(), frame.data_ref()) {
                    c.seen.total += d.len() as u64;
                    let room = c.limit.saturating_sub(c.seen.body.len());
                    if d.len() > room {
                        c.seen.truncated = true;
                    }
                    c.seen.body.extend_from_slice(&d[..d.len().min(room)]);
                }
                // The caller may stop polling once the body says it ended.
                if this.inner.is_end_stream() {
                    this.done(true);
                }
            }
            Some(Err(_)) => this.done(false),
            None => this.done(true),
        }
        Poll::Ready(r)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> Drop for Tee<B> {
    fn drop(&mut self) {
        if let Some(c) = self.capture.take() {
            let mut seen = c.seen;
            seen.complete = false;
            (c.on_done)(seen);
        }
    }
}
