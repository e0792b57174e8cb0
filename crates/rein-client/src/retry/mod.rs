//! client-go's retry of throttled requests: a response of 429 or 5xx that carries a
//! `Retry-After` header is retried after exactly that many seconds, at most
//! [`DEFAULT_MAX_RETRIES`] times; every other response, and an error without `Retry-After`, goes
//! back to the caller at once (the caller's own backoff, such as a controller's rate-limited
//! requeue or an informer's backoff, decides when to try again).
//!
//! kube-client's default (`RetryPolicy::server_retry`) instead retries 429/503/504 up to 15
//! times with an exponential backoff that grows to 1,000 s: one request can sleep inside the
//! client for many minutes while its caller sees nothing. [`crate::kube_client()`] turns that off
//! and installs this layer under the request timeout.

#[cfg(test)]
mod tests;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube_client::client::Body;
use tower::{BoxError, Layer, Service, ServiceExt};

/// client-go's `maxRetries` for throttled requests.
pub const DEFAULT_MAX_RETRIES: u32 = 10;

/// A tower layer retrying throttled requests the way client-go does (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct RetryAfterLayer {
    max_retries: u32,
}

impl RetryAfterLayer {
    /// Retries a throttled request at most `max_retries` times.
    pub fn new(max_retries: u32) -> Self {
        RetryAfterLayer { max_retries }
    }
}

impl Default for RetryAfterLayer {
    fn default() -> Self {
        RetryAfterLayer::new(DEFAULT_MAX_RETRIES)
    }
}

impl<S> Layer<S> for RetryAfterLayer {
    type Service = RetryAfter<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RetryAfter {
            inner,
            max_retries: self.max_retries,
        }
    }
}

/// The service made by [`RetryAfterLayer`].
#[derive(Debug, Clone)]
pub struct RetryAfter<S> {
    inner: S,
    max_retries: u32,
}

/// The seconds a throttling response asks the client to wait: `Some` only for 429 and 5xx
/// answers with an integer `Retry-After`.
fn retry_after<B>(response: &Response<B>) -> Option<Duration> {
    let status = response.status();
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let value = response.headers().get(http::header::RETRY_AFTER)?;
    let secs: u64 = value.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(secs))
}

impl<S, B> Service<Request<Body>> for RetryAfter<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<B>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The clone answers the readiness this call consumed; retries wait for their own.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let max_retries = self.max_retries;
        Box::pin(async move {
            let mut request = request;
            let mut retries = 0;
            let mut ready = true;
            loop {
                let next = (retries < max_retries)
                    .then(|| clone_request(&request))
                    .flatten();
                if !ready {
                    inner = inner.ready_oneshot().await.map_err(Into::into)?;
                }
                let response = inner.call(request).await.map_err(Into::into)?;
                let (Some(wait), Some(next)) = (retry_after(&response), next) else {
                    return Ok(response);
                };
                drop(response);
                retries += 1;
                tracing::debug!(
                    retries,
                    ?wait,
                    "throttled; retrying after the server's Retry-After"
                );
                tokio::time::sleep(wait).await;
                request = next;
                ready = false;
            }
        })
    }
}

/// A copy of `request` for a retry; `None` for a streamed body, which cannot be sent twice.
fn clone_request(request: &Request<Body>) -> Option<Request<Body>> {
    let body = request.body().try_clone()?;
    let mut copy = Request::new(body);
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    *copy.extensions_mut() = request.extensions().clone();
    Some(copy)
}
