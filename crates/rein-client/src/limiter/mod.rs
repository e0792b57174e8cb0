//! The client-side request limiter: a tower layer that makes each non-watch request wait for a
//! token from `rein_workqueue::Limiter` (client-go's rest config QPS/burst).

#[cfg(test)]
mod tests;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::Request;
use rein_workqueue::Limiter;
use tower::{BoxError, Layer, Service, ServiceExt};

/// Request rate limits. controller-runtime's defaults are 20 QPS with a burst of 30.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimitConfig {
    /// Sustained requests per second.
    pub qps: f64,
    /// Requests allowed at once before the rate applies.
    pub burst: u32,
    /// `false` turns the limiter off.
    pub enabled: bool,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        Self {
            qps: 20.0,
            burst: 30,
            enabled: true,
        }
    }
}

impl RateLimitConfig {
    /// Limits of `qps` per second with `burst`.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst,
            enabled: true,
        }
    }

    /// No limiting at all.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }
}

/// A tower layer applying a [`RateLimitConfig`] to every request except watches.
///
/// The wrapped service must be `Clone` (put a `tower::buffer::Buffer` under it if it is not;
/// [`crate::kube_client()`] does this).
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    limiter: Option<Limiter>,
}

impl RateLimitLayer {
    /// A layer for the config; all services made by this layer share one token bucket.
    pub fn new(config: RateLimitConfig) -> Self {
        let usable = config.enabled && config.qps > 0.0 && config.qps.is_finite();
        Self {
            limiter: usable.then(|| Limiter::new(config.qps, config.burst.max(1) as usize)),
        }
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit {
            inner,
            limiter: self.limiter.clone(),
        }
    }
}

/// The service made by [`RateLimitLayer`].
#[derive(Debug, Clone)]
pub struct RateLimit<S> {
    inner: S,
    limiter: Option<Limiter>,
}

/// Whether a request is a watch (`?watch=true|1`), which the limiter does not count.
pub fn is_watch<B>(request: &Request<B>) -> bool {
    request.uri().query().is_some_and(|q| {
        q.split('&')
            .any(|pair| pair == "watch=true" || pair == "watch=1")
    })
}

impl<S, B> Service<Request<B>> for RateLimit<S>
where
    S: Service<Request<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Readiness of the inner service is awaited in `call`, after the token.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let limiter = self.limiter.clone().filter(|_| !is_watch(&request));
        Box::pin(async move {
            if let Some(limiter) = limiter {
                limiter.wait().await;
            }
            inner.oneshot(request).await.map_err(Into::into)
        })
    }
}
