//! Priority queue configuration and per-add options.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::{MetricsProvider, RateLimiter};

/// Configuration of a [`PriorityQueue`](crate::PriorityQueue).
pub struct PriorityQueueConfig<T> {
    /// The queue's name in metrics ("" records none).
    pub name: String,
    /// Where the queue's metrics go (`None`: the process-wide provider).
    pub metrics_provider: Option<Arc<dyn MetricsProvider>>,
    /// The limiter behind rate-limited adds (`None`: exponential 5 ms to 1000 s, no bucket,
    /// as controller-runtime).
    pub rate_limiter: Option<Arc<dyn RateLimiter<T>>>,
}

impl<T> PriorityQueueConfig<T> {
    /// A configuration with the given metrics name and the defaults otherwise.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Uses `provider` for this queue's metrics.
    pub fn metrics_provider(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics_provider = Some(provider);
        self
    }

    /// Uses `limiter` for rate-limited adds.
    pub fn rate_limiter(mut self, limiter: Arc<dyn RateLimiter<T>>) -> Self {
        self.rate_limiter = Some(limiter);
        self
    }
}

impl<T> Default for PriorityQueueConfig<T> {
    fn default() -> Self {
        Self {
            name: String::new(),
            metrics_provider: None,
            rate_limiter: None,
        }
    }
}

impl<T> fmt::Debug for PriorityQueueConfig<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PriorityQueueConfig")
            .field("name", &self.name)
            .field("metrics_provider", &self.metrics_provider)
            .field("rate_limiter", &self.rate_limiter.is_some())
            .finish()
    }
}

/// How one item is added to a [`PriorityQueue`](crate::PriorityQueue) (controller-runtime's
/// `AddOpts`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddOptions {
    /// Wait this long before the item is ready.
    pub after: Option<Duration>,
    /// Ask the rate limiter for a delay; the shorter of it and `after` applies.
    pub rate_limited: bool,
    /// Higher is handed out first; `None` is 0.
    pub priority: Option<i32>,
}

impl AddOptions {
    /// Options with the given priority.
    pub fn priority(priority: i32) -> Self {
        Self {
            priority: Some(priority),
            ..Self::default()
        }
    }

    /// Also waits `after` before the item is ready.
    pub fn after(mut self, after: Duration) -> Self {
        self.after = Some(after);
        self
    }

    /// Also asks the rate limiter for a delay.
    pub fn rate_limited(mut self) -> Self {
        self.rate_limited = true;
        self
    }
}
