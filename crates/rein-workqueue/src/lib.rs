//! Work queues and rate limiters for controllers: client-go's `util/workqueue` and a token
//! bucket like Go's `golang.org/x/time/rate`.
//!
//! This is the bottom of the rein stack. Informers and event handlers put keys into a queue;
//! controller workers take them out, reconcile, and mark them done, re-queueing failures
//! through a rate limiter. The crate knows nothing of Kubernetes, HTTP or serde: items are any
//! `Eq + Hash + Clone + Send + Sync + 'static` type, and the only runtime dependencies are tokio
//! and foldhash (to hash items).
//!
//! * [`Queue`]: fair, de-duplicating, never hands an item to two workers at once;
//! * [`DelayingQueue`]: plus `add_after`, one timer task per queue;
//! * [`RateLimitingQueue`]: plus `add_rate_limited`, `forget`, `num_requeues` over a
//!   [`RateLimiter`] ([`default_controller_rate_limiter`] and the client-go limiters);
//! * [`PriorityQueue`]: controller-runtime's priority queue (priorities, delays, rate limits);
//! * [`Limiter`]: a token bucket with reservations;
//! * [`MetricsProvider`]: hooks for the client-go workqueue metrics, no-op by default.
//!
//! All queues are cheap to clone; clones share one queue.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use rein_workqueue::{RateLimitingQueue, default_controller_rate_limiter};
//!
//! let queue = RateLimitingQueue::new(default_controller_rate_limiter());
//! let worker = {
//!     let queue = queue.clone();
//!     tokio::spawn(async move {
//!         let mut seen = Vec::new();
//!         while let Some(key) = queue.get().await {
//!             seen.push(key);
//!             queue.forget(&key);
//!             queue.done(&key);
//!         }
//!         seen
//!     })
//! };
//! queue.add("default/web");
//! queue.add("default/web"); // de-duplicated
//! queue.add("default/db");
//! queue.shut_down_with_drain().await;
//! assert_eq!(worker.await.unwrap(), ["default/web", "default/db"]);
//! # }
//! ```

mod delaying;
mod getters;
mod key;
mod limiter;
mod metrics;
mod priority;
mod queue;
mod rate_limiter;
mod rate_limiting;
mod sync;
mod timer;

use std::hash::Hash;

pub use delaying::DelayingQueue;
pub use limiter::{ExceedsBurstError, Limiter, Reservation};
pub use metrics::{
    CounterMetric, DepthMetricWithPriority, GaugeMetric, HistogramMetric, MetricsProvider,
    NoopMetricsProvider, SettableGaugeMetric, global_metrics_provider, set_global_metrics_provider,
};
pub use priority::{AddOptions, ItemSnapshot, ItemState, PriorityQueue, PriorityQueueConfig};
pub use queue::{Queue, QueueConfig};
pub use rate_limiter::{
    BucketRateLimiter, ExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter,
    RateLimiter, WithMaxWaitRateLimiter, default_controller_rate_limiter,
    default_item_based_rate_limiter,
};
pub use rate_limiting::RateLimitingQueue;

/// What a queue can hold: `Eq + Hash + Clone + Send + Sync + 'static` (implemented for every
/// such type).
pub trait Item: Eq + Hash + Clone + Send + Sync + 'static {}

impl<T: Eq + Hash + Clone + Send + Sync + 'static> Item for T {}
