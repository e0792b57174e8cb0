//! Request timeouts: a tower layer that bounds every request, from sending it to the end of its
//! response body, so a server (or a connection) that stops answering fails the request with a
//! timeout instead of leaving its caller waiting forever.
//!
//! A non-watch request gets [`RequestTimeouts::request`] in all (kube-apiserver itself ends
//! non-long-running requests after 60 s). A watch must have its response headers within the same
//! time, and its stream ends at the latest [`RequestTimeouts::watch_grace`] after the
//! `timeoutSeconds` it asked the server for: the server ends it then; if it does not, the
//! client does, and the informer watches again. A watch that asks for no `timeoutSeconds` has
//! no limit on its stream, and neither has a request kube-apiserver serves for as long as it
//! lasts (a followed log, exec, attach, port-forward, proxy): only its response must come in
//! time.

#[cfg(test)]
mod tests;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};
use tower::{BoxError, Layer, Service};

use crate::limiter::is_watch;

/// How long requests may take. The default bounds a request at 60 s and a watch's stream at
/// its `timeoutSeconds` plus 30 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestTimeouts {
    /// The longest a non-watch request may take, response body included; also how long a
    /// watch may wait for its response headers. `None`: no limit.
    pub request: Option<Duration>,
    /// How long past its `timeoutSeconds` a watch stream may run before the client ends it.
    pub watch_grace: Duration,
}

impl Default for RequestTimeouts {
    fn default() -> Self {
        RequestTimeouts {
            request: Some(Duration::from_secs(60)),
            watch_grace: Duration::from_secs(30),
        }
    }
}

impl RequestTimeouts {
    /// No limits: requests wait as long as the server and the connection let them (what
    /// kube-client does by default).
    pub fn none() -> Self {
        RequestTimeouts {
            request: None,
            watch_grace: Duration::ZERO,
        }
    }

    /// The limits of one request, with their deadlines: for its response headers, and for
    /// the end of its body.
    fn limits<B>(&self, request: &Request<B>) -> (Option<Limit>, Option<Limit>) {
        let now = Instant::now();
        let limit = |after: Duration| now.checked_add(after).map(|at| Limit { at, after });
        let headers = self.request.and_then(limit);
        if is_long_running(request) {
            return (headers, None);
        }
        if !is_watch(request) {
            return (headers, headers);
        }
        let body = watch_timeout(request)
            .and_then(|t| t.checked_add(self.watch_grace))
            .and_then(limit);
        (headers, body)
    }
}

/// A deadline, and the limit it came from.
#[derive(Debug, Clone, Copy)]
struct Limit {
    at: Instant,
    after: Duration,
}

/// Whether a request is one kube-apiserver serves for as long as it lasts (its
/// `--request-timeout` does not apply): a followed log, exec, attach, port-forward, proxy. Only
/// their response must come within the request limit.
fn is_long_running<B>(request: &Request<B>) -> bool {
    let path = request.uri().path();
    let query = request.uri().query().unwrap_or("");
    path.ends_with("/exec")
        || path.ends_with("/attach")
        || path.ends_with("/portforward")
        || path.contains("/proxy")
        || (path.ends_with("/log")
            && query
                .split('&')
                .any(|pair| pair == "follow=true" || pair == "follow=1"))
}

/// The `timeoutSeconds` a request's query asks for.
fn watch_timeout<B>(request: &Request<B>) -> Option<Duration> {
    request.uri().query()?.split('&').find_map(|pair| {
        let value = pair.strip_prefix("timeoutSeconds=")?;
        value.parse::<u64>().ok().map(Duration::from_secs)
    })
}

/// The error a request that ran out of time fails with.
#[derive(Debug, thiserror::Error)]
#[error("the request to {path} timed out after {after:?} ({what})")]
pub struct RequestTimedOut {
    /// The request's path.
    pub path: String,
    /// The limit that passed.
    pub after: Duration,
    /// What had not arrived: the response, or the rest of its body.
    pub what: &'static str,
}

/// A tower layer applying [`RequestTimeouts`]; put it outermost, so it bounds retries too.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestTimeoutLayer {
    timeouts: RequestTimeouts,
}

impl RequestTimeoutLayer {
    /// A layer applying `timeouts`.
    pub fn new(timeouts: RequestTimeouts) -> Self {
        RequestTimeoutLayer { timeouts }
    }
}

impl<S> Layer<S> for RequestTimeoutLayer {
    type Service = RequestTimeout<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestTimeout {
            inner,
            timeouts: self.timeouts,
        }
    }
}

/// The service made by [`RequestTimeoutLayer`].
#[derive(Debug, Clone)]
pub struct RequestTimeout<S> {
    inner: S,
    timeouts: RequestTimeouts,
}

impl<S, ReqB, ResB> Service<Request<ReqB>> for RequestTimeout<S>
where
    S: Service<Request<ReqB>, Response = Response<ResB>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    ResB: Body<Data = Bytes> + Send + 'static,
    ResB::Error: Into<BoxError>,
{
    type Response = Response<TimeoutBody<ResB>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<ReqB>) -> Self::Future {
        let (headers_by, body_by) = self.timeouts.limits(&request);
        let path = request.uri().path().to_string();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = match headers_by {
                Some(limit) => tokio::time::timeout_at(limit.at, response)
                    .await
                    .map_err(|_| RequestTimedOut {
                        path: path.clone(),
                        after: limit.after,
                        what: "no response",
                    })?,
                None => response.await,
            }
            .map_err(Into::into)?;
            Ok(response.map(|body| TimeoutBody {
                inner: body,
                deadline: body_by
                    .map(|limit| (Box::pin(tokio::time::sleep_until(limit.at)), limit.after)),
                path,
            }))
        })
    }
}

pin_project_lite::pin_project! {
    /// A response body that fails with [`RequestTimedOut`] once its deadline passes.
    pub struct TimeoutBody<B> {
        #[pin]
        inner: B,
        deadline: Option<(Pin<Box<Sleep>>, Duration)>,
        path: String,
    }
}

impl<B> std::fmt::Debug for TimeoutBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimeoutBody")
            .field("path", &self.path)
            .field("limit", &self.deadline.as_ref().map(|d| d.1))
            .finish()
    }
}

impl<B> Body for TimeoutBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        if let Some((sleep, after)) = this.deadline
            && sleep.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Some(Err(Box::new(RequestTimedOut {
                path: this.path.clone(),
                after: *after,
                what: "the response body did not end",
            }))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
