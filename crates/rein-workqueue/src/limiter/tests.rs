//! Tests for the token bucket: `golang.org/x/time/rate` semantics on tokio's paused clock.

use std::time::Duration;

use tokio::time::{Instant, timeout};

use super::*;

const SECOND: Duration = Duration::from_secs(1);

/// S11: `Limiter::new(1, 3)` lets 0, 1, 2 through at once, then one per second.
#[tokio::test(start_paused = true)]
async fn wait_lets_the_burst_through_then_one_per_second() {
    let limiter = Limiter::new(1.0, 3);
    let start = Instant::now();
    let mut times = Vec::new();
    for _ in 0..6 {
        limiter.wait().await;
        times.push(start.elapsed());
    }
    let expected = [0, 0, 0, 1, 2, 3].map(|s| s * SECOND);
    assert_eq!(times, expected);
}

#[tokio::test(start_paused = true)]
async fn reserve_gives_the_same_schedule() {
    let limiter = Limiter::new(1.0, 3);
    let delays: Vec<_> = (0..6).map(|_| limiter.reserve().delay()).collect();
    assert_eq!(delays, [0, 0, 0, 1, 2, 3].map(|s| s * SECOND));
    assert!(limiter.reserve().ok());
}

#[tokio::test(start_paused = true)]
async fn allow_never_waits() {
    let limiter = Limiter::new(10.0, 2);
    assert!(limiter.allow());
    assert!(limiter.allow());
    assert!(!limiter.allow());
    tokio::time::advance(Duration::from_millis(100)).await;
    assert!(limiter.allow());
    assert!(!limiter.allow());
    assert!(!limiter.allow_n(3));
}

#[tokio::test(start_paused = true)]
async fn tokens_refill_fractionally_and_cap_at_burst() {
    let limiter = Limiter::new(2.0, 4);
    assert!(limiter.allow_n(4));
    tokio::time::advance(Duration::from_millis(250)).await;
    assert!((limiter.tokens() - 0.5).abs() < 1e-9);
    tokio::time::advance(Duration::from_secs(100)).await;
    assert_eq!(limiter.tokens(), 4.0);
}

#[tokio::test(start_paused = true)]
async fn cancel_gives_tokens_back() {
    let limiter = Limiter::new(1.0, 1);
    assert_eq!(limiter.reserve().delay(), Duration::ZERO);
    let second = limiter.reserve();
    assert_eq!(second.delay(), SECOND);
    second.cancel();
    // The cancelled token is returned: the next reservation waits one second, not two.
    assert_eq!(limiter.reserve().delay(), SECOND);
}

#[tokio::test(start_paused = true)]
async fn cancel_after_time_to_act_changes_nothing() {
    let limiter = Limiter::new(1.0, 1);
    let first = limiter.reserve();
    tokio::time::advance(SECOND).await;
    first.cancel();
    assert_eq!(limiter.tokens(), 1.0);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_waiting_wait_gives_its_token_back() {
    let limiter = Limiter::new(1.0, 1);
    limiter.wait().await;
    assert!(
        timeout(Duration::from_millis(500), limiter.wait())
            .await
            .is_err()
    );
    // Half a second has passed and the abandoned wait returned its token.
    assert_eq!(limiter.reserve().delay(), Duration::from_millis(500));
}

#[tokio::test(start_paused = true)]
async fn wait_n_refuses_more_than_the_burst() {
    let limiter = Limiter::new(1.0, 3);
    let error = limiter.wait_n(4).await.unwrap_err();
    assert_eq!(error, ExceedsBurstError { n: 4, burst: 3 });
    assert!(error.to_string().contains("burst is 3"));
    assert!(!limiter.reserve_n(4).ok());
    assert_eq!(limiter.reserve_n(4).delay(), Duration::MAX);
    let start = Instant::now();
    limiter.wait_n(3).await.unwrap();
    limiter.wait_n(2).await.unwrap();
    assert_eq!(start.elapsed(), 2 * SECOND);
}

#[tokio::test(start_paused = true)]
async fn infinite_limit_allows_everything() {
    let limiter = Limiter::new(Limiter::INF, 0);
    for _ in 0..1000 {
        assert!(limiter.allow());
    }
    assert_eq!(limiter.reserve_n(1_000_000).delay(), Duration::ZERO);
    limiter.wait_n(5).await.unwrap();
    limiter.wait().await;
}

#[tokio::test(start_paused = true)]
async fn zero_limit_allows_the_burst_in_total() {
    let limiter = Limiter::new(0.0, 2);
    assert!(limiter.allow());
    assert!(limiter.allow());
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert!(!limiter.allow());
}

/// x/time/rate `TestSetAfterZeroLimit`: at a zero limit the first `allow` takes the token the
/// bucket starts with and the second is refused, but the burst stays 1, so once the limit is
/// raised to 10/s a `wait` gets the next token 100 ms later.
#[tokio::test(start_paused = true)]
async fn set_after_zero_limit() {
    let limiter = Limiter::new(0.0, 1);
    assert!(limiter.allow(), "Limit(0, 1) allows the first use");
    assert!(!limiter.allow(), "Limit(0, 1) refuses once used");
    assert_eq!(limiter.burst(), 1);
    limiter.set_limit(10.0);
    let start = Instant::now();
    limiter.wait_n(1).await.expect("the burst is still 1");
    assert_eq!(start.elapsed(), Duration::from_millis(100));
}

#[tokio::test(start_paused = true)]
async fn limit_and_burst_change_at_run_time() {
    let limiter = Limiter::new(1.0, 1);
    assert!(limiter.allow());
    limiter.set_limit(10.0);
    assert_eq!(limiter.limit(), 10.0);
    assert_eq!(limiter.reserve().delay(), Duration::from_millis(100));
    limiter.set_burst(5);
    assert_eq!(limiter.burst(), 5);
    tokio::time::advance(SECOND).await;
    assert!(limiter.allow_n(5));
    limiter.set_limit(Limiter::INF);
    assert!(limiter.allow_n(100));
    limiter.set_limit(-1.0);
    assert_eq!(limiter.limit(), 0.0);
}

#[tokio::test(start_paused = true)]
async fn clones_share_one_bucket() {
    let limiter = Limiter::new(1.0, 1);
    let clone = limiter.clone();
    assert!(limiter.allow());
    assert!(!clone.allow());
    assert!(format!("{clone:?}").contains("burst: 1"));
}

#[test]
fn duration_conversions_match_go() {
    assert_eq!(
        duration_from_tokens(3.0, 1.0),
        Duration::from_nanos(333_333_333)
    );
    assert_eq!(duration_from_tokens(0.0, 1.0), Duration::MAX);
    assert_eq!(duration_from_tokens(1e-30, 1.0), Duration::MAX);
    assert_eq!(tokens_from_duration(0.0, SECOND), 0.0);
    assert_eq!(tokens_from_duration(2.0, Duration::from_millis(1500)), 3.0);
}

#[tokio::test(start_paused = true)]
async fn cancel_restores_only_tokens_not_used_by_later_reservations() {
    let limiter = Limiter::new(1.0, 2);
    assert!(limiter.allow_n(2));
    let first = limiter.reserve(); // acts at 1 s
    let second = limiter.reserve(); // acts at 2 s
    assert_eq!(first.delay(), SECOND);
    assert_eq!(second.delay(), 2 * SECOND);
    // The second reservation was counted after the first: cancelling the first restores
    // nothing (its token is already promised onward), as in x/time/rate.
    first.cancel();
    assert_eq!(limiter.reserve().delay(), 3 * SECOND);
    // Cancelling the latest one gives its token back and moves the last event back.
    let fourth = limiter.reserve();
    assert_eq!(fourth.delay(), 4 * SECOND);
    fourth.cancel();
    assert_eq!(limiter.reserve().delay(), 4 * SECOND);
}

#[tokio::test(start_paused = true)]
async fn not_ok_reservation_cancels_harmlessly() {
    let limiter = Limiter::new(1.0, 1);
    let refused = limiter.reserve_n(2);
    assert!(!refused.ok());
    refused.cancel();
    assert!(limiter.allow());
    assert_eq!(refused.time_to_act(), refused.time_to_act());
}
