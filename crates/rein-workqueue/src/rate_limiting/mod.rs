//! The rate-limited queue: a delaying queue whose retries wait as long as a [`RateLimiter`]
//! says (client-go's `workqueue.TypedRateLimitingInterface`).

#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::{DelayingQueue, Item, QueueConfig, RateLimiter};

/// A [`DelayingQueue`] plus per-item retry bookkeeping through a [`RateLimiter`].
///
/// `add_rate_limited(item)` is `add_after(item, limiter.when(item))`; `forget` and
/// `num_requeues` go to the limiter. `forget` only clears the limiter's memory: the worker
/// still calls `done`. The canonical worker loop:
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// use rein_workqueue::{RateLimitingQueue, default_controller_rate_limiter};
///
/// let queue = RateLimitingQueue::new(default_controller_rate_limiter());
/// queue.add("ns/name".to_string());
/// let mut attempts = 0;
/// while let Some(key) = queue.get().await {
///     attempts += 1;
///     let failed = attempts < 3; // pretend the first two attempts fail
///     if !failed {
///         queue.forget(&key);
///     } else if queue.num_requeues(&key) < 5 {
///         queue.add_rate_limited(key.clone());
///     } else {
///         queue.forget(&key);
///     }
///     queue.done(&key);
///     if !failed {
///         queue.shut_down();
///     }
/// }
/// assert_eq!(attempts, 3);
/// # }
/// ```
pub struct RateLimitingQueue<T> {
    queue: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T: Item> RateLimitingQueue<T> {
    /// An unnamed queue over `limiter`.
    pub fn new(limiter: impl RateLimiter<T> + 'static) -> Self {
        Self::with_config(limiter, QueueConfig::default())
    }

    /// A queue over `limiter` with a metrics name and provider.
    pub fn with_config(limiter: impl RateLimiter<T> + 'static, config: QueueConfig) -> Self {
        Self::from_parts(Arc::new(limiter), DelayingQueue::with_config(config))
    }

    /// A queue over a shared limiter and an existing delaying queue.
    pub fn from_parts(limiter: Arc<dyn RateLimiter<T>>, queue: DelayingQueue<T>) -> Self {
        Self { queue, limiter }
    }

    /// Adds `item` after the delay the rate limiter gives it (recording a failure).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.limiter.when(&item);
        self.queue.add_after(item, delay);
    }

    /// Clears the limiter's memory of `item` (its next failure starts from scratch). The item
    /// must still be marked [`done`](Self::done).
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    /// How many failures of `item` the limiter tracks.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }

    /// Adds `item` after `delay` (see [`DelayingQueue::add_after`]).
    pub fn add_after(&self, item: T, delay: Duration) {
        self.queue.add_after(item, delay);
    }

    /// Marks `item` as needing processing now (see [`Queue::add`](crate::Queue::add)).
    pub fn add(&self, item: T) {
        self.queue.add(item);
    }

    /// Items ready to hand out.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no item is ready to hand out.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Waits for the next item (see [`Queue::get`](crate::Queue::get)).
    pub async fn get(&self) -> Option<T> {
        self.queue.get().await
    }

    /// Marks `item` as done (see [`Queue::done`](crate::Queue::done)).
    pub fn done(&self, item: &T) {
        self.queue.done(item);
    }

    /// Shuts down without waiting (see [`DelayingQueue::shut_down`]).
    pub fn shut_down(&self) {
        self.queue.shut_down();
    }

    /// Shuts down and waits for the items in flight (see
    /// [`DelayingQueue::shut_down_with_drain`]).
    pub async fn shut_down_with_drain(&self) {
        self.queue.shut_down_with_drain().await;
    }

    /// Whether the queue is shutting down.
    pub fn shutting_down(&self) -> bool {
        self.queue.shutting_down()
    }

    /// The delaying queue underneath.
    pub fn delaying_queue(&self) -> &DelayingQueue<T> {
        &self.queue
    }

    /// The rate limiter.
    pub fn rate_limiter(&self) -> &Arc<dyn RateLimiter<T>> {
        &self.limiter
    }
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            limiter: self.limiter.clone(),
        }
    }
}

impl<T> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}
