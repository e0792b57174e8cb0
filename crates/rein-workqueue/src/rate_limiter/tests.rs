//! Tests for the rate limiters: client-go's `default_rate_limiters_test.go` formulas.

use std::time::Duration;

use super::*;

const MS: Duration = Duration::from_millis(1);

#[test]
fn exponential_doubles_per_item_and_forget_resets() {
    let limiter = ExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
    for expected in [1, 2, 4, 8, 16] {
        assert_eq!(limiter.when(&"one"), expected * MS);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), MS);
    assert_eq!(limiter.when(&"two"), 2 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), MS);
}

#[test]
fn exponential_stops_at_max() {
    let limiter = ExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
    for _ in 0..10 {
        limiter.when(&1);
    }
    assert_eq!(limiter.when(&1), Duration::from_secs(1));
}

#[test]
fn exponential_never_overflows() {
    let limiter = ExponentialFailureRateLimiter::new(MS, Duration::from_secs(1000));
    for _ in 0..5 {
        limiter.when(&"one");
    }
    assert_eq!(limiter.when(&"one"), 32 * MS);
    for _ in 0..1000 {
        limiter.when(&"overflow1");
    }
    assert_eq!(limiter.when(&"overflow1"), Duration::from_secs(1000));

    let limiter = ExponentialFailureRateLimiter::new(
        Duration::from_secs(60),
        Duration::from_secs(1000 * 3600),
    );
    for _ in 0..2 {
        limiter.when(&"two");
    }
    assert_eq!(limiter.when(&"two"), Duration::from_secs(4 * 60));
    for _ in 0..1000 {
        limiter.when(&"overflow2");
    }
    assert_eq!(limiter.when(&"overflow2"), Duration::from_secs(1000 * 3600));
}

#[test]
fn backoff_formula_is_exact_at_the_edges() {
    let max = Duration::from_secs(1000);
    assert_eq!(
        exponential::backoff(5 * MS, max, 17),
        Duration::from_millis(655_360)
    );
    assert_eq!(exponential::backoff(5 * MS, max, 18), max);
    assert_eq!(exponential::backoff(MS, Duration::MAX, 63), Duration::MAX);
    assert_eq!(exponential::backoff(MS, max, u32::MAX), max);
    assert_eq!(
        exponential::backoff(Duration::ZERO, max, 40),
        Duration::ZERO
    );
}

#[test]
fn fast_slow_counts_first_then_switches() {
    let limiter = ItemFastSlowRateLimiter::new(5 * MS, 10 * Duration::from_secs(1), 3);
    assert_eq!(limiter.when(&"one"), 5 * MS);
    assert_eq!(limiter.when(&"one"), 5 * MS);
    assert_eq!(limiter.when(&"one"), 5 * MS);
    assert_eq!(limiter.when(&"one"), Duration::from_secs(10));
    assert_eq!(limiter.when(&"one"), Duration::from_secs(10));
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 1);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), 5 * MS);
}

#[test]
fn max_of_asks_every_limiter() {
    let limiter = MaxOfRateLimiter::new(vec![
        Box::new(ItemFastSlowRateLimiter::new(
            5 * MS,
            Duration::from_secs(3),
            3,
        )),
        Box::new(ExponentialFailureRateLimiter::new(
            MS,
            Duration::from_secs(1),
        )),
    ]);
    assert_eq!(limiter.when(&"one"), 5 * MS);
    assert_eq!(limiter.when(&"one"), 5 * MS);
    assert_eq!(limiter.when(&"one"), 5 * MS);
    assert_eq!(limiter.when(&"one"), Duration::from_secs(3));
    assert_eq!(limiter.when(&"one"), Duration::from_secs(3));
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), 5 * MS);
}

#[test]
fn max_of_nothing_never_waits() {
    let limiter: MaxOfRateLimiter<u8> = MaxOfRateLimiter::new(Vec::new());
    assert_eq!(limiter.when(&1), Duration::ZERO);
    assert_eq!(limiter.num_requeues(&1), 0);
}

#[test]
fn max_wait_caps_the_delay() {
    let limiter = WithMaxWaitRateLimiter::new(
        Box::new(ExponentialFailureRateLimiter::new(
            Duration::from_secs(1),
            Duration::from_secs(100),
        )),
        Duration::from_secs(3),
    );
    assert_eq!(limiter.when(&"a"), Duration::from_secs(1));
    assert_eq!(limiter.when(&"a"), Duration::from_secs(2));
    assert_eq!(limiter.when(&"a"), Duration::from_secs(3));
    assert_eq!(limiter.when(&"a"), Duration::from_secs(3));
    assert_eq!(limiter.num_requeues(&"a"), 4);
    limiter.forget(&"a");
    assert_eq!(limiter.when(&"a"), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn bucket_is_global_and_tracks_nothing_per_item() {
    let limiter = BucketRateLimiter::new(Limiter::new(1.0, 1));
    assert_eq!(RateLimiter::<&str>::when(&limiter, &"a"), Duration::ZERO);
    assert_eq!(
        RateLimiter::<&str>::when(&limiter, &"b"),
        Duration::from_secs(1)
    );
    assert_eq!(
        RateLimiter::<&str>::when(&limiter, &"a"),
        Duration::from_secs(2)
    );
    assert_eq!(RateLimiter::<&str>::num_requeues(&limiter, &"a"), 0);
    RateLimiter::<&str>::forget(&limiter, &"a");
    assert_eq!(
        RateLimiter::<&str>::when(&limiter, &"c"),
        Duration::from_secs(3)
    );
}

#[tokio::test(start_paused = true)]
async fn default_controller_limiter_combines_backoff_and_bucket() {
    let limiter = default_controller_rate_limiter::<u32>();
    // The bucket starts with 100 tokens: the exponential part decides the first 100 calls.
    for item in 0..100 {
        assert_eq!(limiter.when(&item), 5 * MS);
    }
    // Beyond the burst the k-th call waits k × 100 ms.
    for k in 1..=5 {
        assert_eq!(limiter.when(&(1000 + k)), k * 100 * MS);
    }
    // One item's exponential part hits the 1000 s cap at its 19th failure.
    let limiter = default_controller_rate_limiter::<u32>();
    let mut last = Duration::ZERO;
    for _ in 0..19 {
        last = limiter.when(&7);
    }
    assert_eq!(last, Duration::from_secs(1000));
    assert_eq!(limiter.num_requeues(&7), 19);
    limiter.forget(&7);
    assert_eq!(limiter.num_requeues(&7), 0);
}

#[test]
fn default_item_based_limiter_is_one_ms_to_1000_s() {
    let limiter = default_item_based_rate_limiter::<u8>();
    assert_eq!(limiter.when(&1), MS);
    assert_eq!(limiter.when(&1), 2 * MS);
}

#[test]
fn shared_limiters_work_through_arc_and_box() {
    let limiter: Arc<dyn RateLimiter<u8>> = Arc::new(ExponentialFailureRateLimiter::new(
        MS,
        Duration::from_secs(1),
    ));
    let boxed: Box<dyn RateLimiter<u8>> = Box::new(limiter.clone());
    assert_eq!(boxed.when(&1), MS);
    assert_eq!(limiter.when(&1), 2 * MS);
    assert_eq!(boxed.num_requeues(&1), 2);
}
