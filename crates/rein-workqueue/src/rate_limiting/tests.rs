//! Tests for the rate-limited queue: client-go's `rate_limiting_queue_test.go` and S9.

use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::{BucketRateLimiter, ExponentialFailureRateLimiter, Limiter};

const MS: Duration = Duration::from_millis(1);

/// client-go `TestRateLimitingQueue`.
#[tokio::test(start_paused = true)]
async fn rate_limited_adds_wait_as_the_limiter_says() {
    let queue = RateLimitingQueue::new(ExponentialFailureRateLimiter::new(
        MS,
        Duration::from_secs(1),
    ));
    let start = Instant::now();
    queue.add_rate_limited("one");
    assert_eq!(queue.delaying_queue().waiting_len(), 1);
    queue.add_rate_limited("one");
    assert_eq!(queue.delaying_queue().waiting_len(), 1);
    assert_eq!(queue.num_requeues(&"one"), 2);
    queue.add_rate_limited("two");
    assert_eq!(queue.delaying_queue().waiting_len(), 2);
    queue.add_rate_limited("two");
    assert_eq!(queue.num_requeues(&"two"), 2);
    // The earlier ready time (1 ms) wins for both.
    assert_eq!(queue.get().await, Some("one"));
    assert_eq!(queue.get().await, Some("two"));
    assert_eq!(start.elapsed(), MS);
    queue.forget(&"one");
    assert_eq!(queue.num_requeues(&"one"), 0);
    queue.add_rate_limited("one");
    queue.done(&"one");
    assert_eq!(queue.get().await, Some("one"));
    assert_eq!(start.elapsed(), 2 * MS);
}

/// S9: a bucket of 1 per second with burst 1 hands out one item per second.
#[tokio::test(start_paused = true)]
async fn bucket_limited_queue_hands_out_one_per_second() {
    let queue = RateLimitingQueue::new(BucketRateLimiter::new(Limiter::new(1.0, 1)));
    let start = Instant::now();
    for i in 0..10 {
        queue.add_rate_limited(i);
    }
    for i in 0..10 {
        assert_eq!(queue.get().await, Some(i));
        assert_eq!(start.elapsed(), Duration::from_secs(i as u64));
        queue.done(&i);
    }
}

#[tokio::test(start_paused = true)]
async fn forwarded_queue_operations_behave_like_the_queue() {
    let queue = RateLimitingQueue::new(ExponentialFailureRateLimiter::new(MS, MS));
    queue.add("a");
    queue.add_after("b", 5 * MS);
    assert_eq!(queue.len(), 1);
    assert!(!queue.is_empty());
    assert_eq!(queue.get().await, Some("a"));
    assert_eq!(queue.get().await, Some("b"));
    assert_eq!(queue.rate_limiter().num_requeues(&"a"), 0);
    queue.shut_down();
    assert!(queue.shutting_down());
    queue.add_rate_limited("c");
    assert_eq!(queue.get().await, None);
    queue.done(&"a");
    queue.done(&"b");
    queue.shut_down_with_drain().await;
    assert!(format!("{queue:?}").starts_with("RateLimitingQueue"));
}
