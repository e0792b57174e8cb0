//! A rate-limited queue over a token bucket of 1 per second, burst 1: ten `add_rate_limited` calls hand out one item per second (Go original: workqueue.NewTypedRateLimitingQueue with &workqueue.TypedBucketRateLimiter{Limiter: rate.NewLimiter(1, 1)}).
// smoke-args: --quick
// smoke-expect: item 0 after 0.0 periods
// smoke-expect: 10 items, one per period, none early
// smoke-expect: rate_limited_queue finished

use std::time::Instant;

use rein::workqueue::{BucketRateLimiter, Limiter, RateLimitingQueue};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Quick mode runs the same schedule five times faster.
    let rate = if rein_examples::quick_mode() {
        5.0
    } else {
        1.0
    };
    let queue = RateLimitingQueue::new(BucketRateLimiter::new(Limiter::new(rate, 1)));
    let start = Instant::now();
    for item in 0..10 {
        queue.add_rate_limited(item);
    }
    let mut early = 0;
    for _ in 0..10 {
        let item = queue.get().await.expect("queue is open");
        let periods = start.elapsed().as_secs_f64() * rate;
        if periods < f64::from(item) {
            early += 1;
        }
        println!("item {item} after {:.1} periods", periods.floor());
        queue.forget(&item);
        queue.done(&item);
    }
    queue.shut_down();
    if early == 0 {
        println!("10 items, one per period, none early");
    }
    println!("rate_limited_queue finished");
    Ok(())
}
