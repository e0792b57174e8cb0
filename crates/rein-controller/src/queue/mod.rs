//! The controller's work queue: [`RequestQueue`], a handle on rein-workqueue's priority queue
//! of requests (controller-runtime's default controller queue), which event handlers and user
//! code write to. It holds no state of its own: it names the queue's operations as a
//! controller uses them (a `get` that hands out the priority, adds by priority for handlers)
//! and builds the queue with the controller's name, rate limiter and metrics.

#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rein_workqueue::{MetricsProvider, PriorityQueue, PriorityQueueConfig};

use crate::reconcile::Request;

pub(crate) use rein_workqueue::{AddOptions, RateLimiter};

/// Priority for events that are probably nothing new (initial-list adds, resyncs).
pub const LOW_PRIORITY: i32 = -100;

/// A handle to a controller's queue of requests; cheap to clone.
///
/// Adding a request that is already queued merges the two (earliest ready time, highest
/// priority), so a burst of events for one key gives one reconcile. A request being reconciled
/// is never handed out again until its reconcile finishes. Rate-limited adds wait as long as
/// the controller's rate limiter says (default: 5 ms doubling per failure up to 1000 s).
#[derive(Clone)]
pub struct RequestQueue {
    queue: PriorityQueue<Request>,
}

impl fmt::Debug for RequestQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestQueue")
            .field("name", &self.name())
            .field("len", &self.len())
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

impl RequestQueue {
    /// A queue named `name` with the default rate limiter and no metrics.
    pub fn new(name: impl Into<String>) -> Self {
        Self::with_config(PriorityQueueConfig {
            name: name.into(),
            metrics_provider: Some(Arc::new(rein_workqueue::NoopMetricsProvider)),
            rate_limiter: None,
        })
    }

    /// A queue named `name` whose rate-limited adds use `limiter`.
    pub fn with_rate_limiter(
        name: impl Into<String>,
        limiter: Arc<dyn RateLimiter<Request>>,
    ) -> Self {
        Self::with_config(PriorityQueueConfig {
            name: name.into(),
            metrics_provider: Some(Arc::new(rein_workqueue::NoopMetricsProvider)),
            rate_limiter: Some(limiter),
        })
    }

    pub(crate) fn for_controller(
        name: &str,
        limiter: Option<Arc<dyn RateLimiter<Request>>>,
        metrics: Arc<dyn MetricsProvider>,
    ) -> Self {
        Self::with_config(PriorityQueueConfig {
            name: name.to_owned(),
            metrics_provider: Some(metrics),
            rate_limiter: limiter,
        })
    }

    fn with_config(config: PriorityQueueConfig<Request>) -> Self {
        RequestQueue {
            queue: PriorityQueue::with_config(config),
        }
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        self.queue.name()
    }

    /// Adds a request, ready now, at default priority.
    pub fn add(&self, req: Request) {
        self.queue.add(req);
    }

    /// Adds a request ready now at `priority`.
    pub fn add_with_priority(&self, req: Request, priority: i32) {
        self.queue
            .add_with_opts(AddOptions::priority(priority), req);
    }

    /// Adds a request that becomes ready after `after`.
    pub fn add_after(&self, req: Request, after: Duration) {
        self.queue.add_after(req, after);
    }

    /// Adds a request after its backoff (which grows with every rate-limited add until
    /// [`RequestQueue::forget`]).
    pub fn add_rate_limited(&self, req: Request) {
        self.queue.add_rate_limited(req);
    }

    /// Adds a request with explicit options.
    pub fn add_with_options(&self, req: Request, opts: AddOptions) {
        self.queue.add_with_opts(opts, req);
    }

    /// Waits for the next ready request not being reconciled, with its priority; `None` once
    /// shut down. The caller must call [`RequestQueue::done`] when finished with it.
    pub async fn get(&self) -> Option<(Request, i32)> {
        self.queue.get_with_priority().await
    }

    /// Marks a request handed out by [`RequestQueue::get`] as finished.
    pub fn done(&self, req: &Request) {
        self.queue.done(req);
    }

    /// Resets the request's backoff.
    pub fn forget(&self, req: &Request) {
        self.queue.forget(req);
    }

    /// How many rate-limited adds the request has had since it was last forgotten.
    pub fn num_requeues(&self, req: &Request) -> u32 {
        self.queue.num_requeues(req)
    }

    /// Ready requests (including ready ones whose earlier copy is still being reconciled);
    /// delayed requests are not counted.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no request is ready.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Requests currently handed out and not yet done.
    pub fn in_flight(&self) -> usize {
        self.queue.in_flight_len()
    }

    /// Every request the queue holds and where it is (ready, in flight, waiting), with its
    /// priority and failure count; see [`rein_workqueue::PriorityQueue::snapshot`].
    pub fn snapshot(&self) -> Vec<rein_workqueue::ItemSnapshot<Request>> {
        self.queue.snapshot()
    }

    /// Stops the queue: waiting `get`s return `None` at once; later adds are ignored.
    pub fn shut_down(&self) {
        self.queue.shut_down();
    }

    /// Whether the queue was shut down.
    pub fn is_shut_down(&self) -> bool {
        self.queue.shutting_down()
    }
}
