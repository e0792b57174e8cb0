//! Per-item fast-then-slow retries: a fixed short delay for the first attempts, then a long one.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use super::RateLimiter;
use crate::Item;
use crate::sync::lock;

/// Retries an item quickly `max_fast_attempts` times, then slowly (client-go's
/// `ItemFastSlowRateLimiter`). The attempt is counted first: attempts 1..=max_fast_attempts
/// wait `fast`, later ones `slow`.
pub struct ItemFastSlowRateLimiter<T> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
    attempts: Mutex<HashMap<T, u32>>,
}

impl<T: Item> ItemFastSlowRateLimiter<T> {
    /// `fast` for the first `max_fast_attempts` failures of an item, `slow` after that.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self {
            fast,
            slow,
            max_fast_attempts,
            attempts: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Item> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let attempts = {
            let mut map = lock(&self.attempts);
            match map.get_mut(item) {
                Some(count) => {
                    *count = count.saturating_add(1);
                    *count
                }
                None => {
                    map.insert(item.clone(), 1);
                    1
                }
            }
        };
        if attempts <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, item: &T) {
        lock(&self.attempts).remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        lock(&self.attempts).get(item).copied().unwrap_or(0)
    }
}

impl<T> fmt::Debug for ItemFastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .finish()
    }
}
