//! Per-item exponential backoff: `base · 2^failures`, capped at `max`, without overflow.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use super::RateLimiter;
use crate::Item;
use crate::sync::lock;

/// Per-item exponential backoff (client-go's `ItemExponentialFailureRateLimiter`): the n-th
/// failure of an item (counting from 0) waits `base · 2^n`, at most `max`.
///
/// The product is computed in floating point as client-go does, so any failure count is safe:
/// a result beyond what a duration can hold is `max`.
pub struct ExponentialFailureRateLimiter<T> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T: Item> ExponentialFailureRateLimiter<T> {
    /// Backoff from `base` doubling up to `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Item> RateLimiter<T> for ExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let exponent = {
            let mut failures = lock(&self.failures);
            match failures.get_mut(item) {
                Some(count) => {
                    let exponent = *count;
                    *count = count.saturating_add(1);
                    exponent
                }
                None => {
                    failures.insert(item.clone(), 1);
                    0
                }
            }
        };
        backoff(self.base, self.max, exponent)
    }

    fn forget(&self, item: &T) {
        lock(&self.failures).remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        lock(&self.failures).get(item).copied().unwrap_or(0)
    }
}

/// `min(base · 2^exponent, max)`, computed in nanoseconds as a float like client-go; anything
/// beyond `i64::MAX` nanoseconds (Go's duration range) is `max`.
pub(crate) fn backoff(base: Duration, max: Duration, exponent: u32) -> Duration {
    let nanos = base.as_nanos() as f64 * 2f64.powi(exponent.min(i32::MAX as u32) as i32);
    if nanos.is_nan() || nanos > i64::MAX as f64 {
        return max;
    }
    Duration::from_nanos(nanos as u64).min(max)
}

impl<T> fmt::Debug for ExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExponentialFailureRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("tracked_items", &lock(&self.failures).len())
            .finish()
    }
}
