//! Rate limiters for re-queued items: how long an item waits before it is retried
//! (client-go's `default_rate_limiters.go`).
//!
//! Per-item limiters count each item's failures until [`RateLimiter::forget`]; the bucket
//! limiter is one global token bucket. Combine them with [`MaxOfRateLimiter`] and
//! [`WithMaxWaitRateLimiter`]; [`default_controller_rate_limiter`] is client-go's default.

mod bucket;
mod combinators;
mod exponential;
mod fast_slow;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

pub use bucket::BucketRateLimiter;
pub use combinators::{MaxOfRateLimiter, WithMaxWaitRateLimiter};
pub use exponential::ExponentialFailureRateLimiter;
pub use fast_slow::ItemFastSlowRateLimiter;

use crate::{Item, Limiter};

/// Decides how long an item waits before it is retried (client-go's `TypedRateLimiter`).
/// Implementations are safe for concurrent use.
pub trait RateLimiter<T>: Send + Sync {
    /// Records a failure of `item` and returns how long it should wait.
    fn when(&self, item: &T) -> Duration;
    /// Stops tracking `item`: its next failure starts from scratch.
    fn forget(&self, item: &T);
    /// How many failures of `item` are being tracked.
    fn num_requeues(&self, item: &T) -> u32;
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Arc<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }
    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }
    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

/// client-go's `DefaultControllerRateLimiter`: the maximum of a per-item exponential backoff
/// from 5 ms to 1000 s and a global bucket of 10 per second with a burst of 100.
pub fn default_controller_rate_limiter<T: Item>() -> MaxOfRateLimiter<T> {
    MaxOfRateLimiter::new(vec![
        Box::new(ExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(Limiter::new(10.0, 100))),
    ])
}

/// client-go's `DefaultItemBasedRateLimiter`: per-item exponential backoff from 1 ms to
/// 1000 s.
pub fn default_item_based_rate_limiter<T: Item>() -> ExponentialFailureRateLimiter<T> {
    ExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1000))
}
