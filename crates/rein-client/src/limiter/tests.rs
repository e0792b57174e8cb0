//! Tests for the request limiter, on tokio's paused clock.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::{Request, Response};
use tokio::time::Instant;
use tower::{Layer, ServiceExt, service_fn};

use super::*;

fn counting() -> (
    Arc<AtomicUsize>,
    impl tower::Service<Request<()>, Response = Response<()>, Error = Infallible, Future: Send>
    + Clone
    + Send
    + 'static,
) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let svc = service_fn(move |_req: Request<()>| {
        seen.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, Infallible>(Response::new(())) }
    });
    (calls, svc)
}

fn get(uri: &str) -> Request<()> {
    Request::get(uri).body(()).unwrap()
}

#[tokio::test(start_paused = true)]
async fn requests_beyond_the_burst_wait_for_tokens() {
    let (calls, svc) = counting();
    let svc = RateLimitLayer::new(RateLimitConfig::new(1.0, 2)).layer(svc);
    let start = Instant::now();
    for _ in 0..4 {
        svc.clone().oneshot(get("/api/v1/pods")).await.unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    // Two from the burst at once, then one per second.
    assert_eq!(start.elapsed(), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn watches_are_not_counted() {
    let (calls, svc) = counting();
    let svc = RateLimitLayer::new(RateLimitConfig::new(1.0, 1)).layer(svc);
    let start = Instant::now();
    for _ in 0..5 {
        svc.clone()
            .oneshot(get("/api/v1/pods?watch=true&resourceVersion=1"))
            .await
            .unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    assert_eq!(start.elapsed(), Duration::ZERO);
    // The one token is still there for a normal request.
    svc.clone().oneshot(get("/api/v1/pods")).await.unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn disabled_limiter_never_waits() {
    let (calls, svc) = counting();
    let svc = RateLimitLayer::new(RateLimitConfig::disabled()).layer(svc);
    let start = Instant::now();
    for _ in 0..100 {
        svc.clone().oneshot(get("/api/v1/pods")).await.unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 100);
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[test]
fn defaults_are_controller_runtime_s() {
    let config = RateLimitConfig::default();
    assert_eq!((config.qps, config.burst, config.enabled), (20.0, 30, true));
    assert!(is_watch(&get("/api/v1/pods?watch=1")));
    assert!(!is_watch(&get("/api/v1/pods?watchy=true")));
    assert!(!is_watch(&get("/api/v1/pods")));
}
