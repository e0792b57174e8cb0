//! A global token bucket as a rate limiter: every retry, of any item, takes one token.

use std::time::Duration;

use super::RateLimiter;
use crate::Limiter;

/// One token bucket shared by all items (client-go's `BucketRateLimiter`): `when` reserves a
/// token and returns the reservation's delay; it tracks no per-item state.
#[derive(Debug, Clone)]
pub struct BucketRateLimiter {
    limiter: Limiter,
}

impl BucketRateLimiter {
    /// A rate limiter taking its tokens from `limiter`.
    pub fn new(limiter: Limiter) -> Self {
        Self { limiter }
    }

    /// The underlying token bucket (to change its limit or burst at run time).
    pub fn limiter(&self) -> &Limiter {
        &self.limiter
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.limiter.reserve().delay()
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}
