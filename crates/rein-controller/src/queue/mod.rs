//! The controller's work queue: [`RequestQueue`], a handle on rein-workqueue's priority queue
//! of requests (controller-runtime's default controller queue), which event handlers and user
//! code write to.

#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
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
    inner: Arc<Inner>,
}

struct Inner {
    queue: PriorityQueue<Request>,
    in_flight: AtomicUsize,
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
            inner: Arc::new(Inner {
                queue: PriorityQueue::with_config(config),
                in_flight: AtomicUsize::new(0),
            }),
        }
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        self.inner.queue.name()
    }

    /// Adds a request, ready now, at default priority.
    pub fn add(&self, req: Request) {
        self.inner.queue.add(req);
    }

    /// Adds a request ready now at `priority`.
    pub fn add_with_priority(&self, req: Request, priority: i32) {
        self.inner
            .queue
            .add_with_opts(AddOptions::priority(priority), req);
    }

    /// Adds a request that becomes ready after `after`.
    pub fn add_after(&self, req: Request, after: Duration) {
        self.inner.queue.add_after(req, after);
    }

    /// Adds a request after its backoff (which grows with every rate-limited add until
    /// [`RequestQueue::forget`]).
    pub fn add_rate_limited(&self, req: Request) {
        self.inner.queue.add_rate_limited(req);
    }

    /// Adds a request with explicit options.
    pub fn add_with_options(&self, req: Request, opts: AddOptions) {
        self.inner.queue.add_with_opts(opts, req);
    }

    /// Waits for the next ready request not being reconciled, with its priority; `None` once
    /// shut down. The caller must call [`RequestQueue::done`] when finished with it.
    pub async fn get(&self) -> Option<(Request, i32)> {
        let got = self.inner.queue.get_with_priority().await;
        if got.is_some() {
            self.inner.in_flight.fetch_add(1, Ordering::SeqCst);
        }
        got
    }

    /// Marks a request handed out by [`RequestQueue::get`] as finished.
    pub fn done(&self, req: &Request) {
        self.inner.queue.done(req);
        let _ = self
            .inner
            .in_flight
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    /// Resets the request's backoff.
    pub fn forget(&self, req: &Request) {
        self.inner.queue.forget(req);
    }

    /// How many rate-limited adds the request has had since it was last forgotten.
    pub fn num_requeues(&self, req: &Request) -> u32 {
        self.inner.queue.num_requeues(req)
    }

    /// Ready requests (including ready ones whose earlier copy is still being reconciled);
    /// delayed requests are not counted.
    pub fn len(&self) -> usize {
        self.inner.queue.len()
    }

    /// Whether no request is ready.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Requests currently handed out and not yet done.
    pub fn in_flight(&self) -> usize {
        self.inner.in_flight.load(Ordering::SeqCst)
    }

    /// Every request the queue holds and where it is (ready, in flight, waiting), with its
    /// priority and failure count; see [`rein_workqueue::PriorityQueue::snapshot`].
    pub fn snapshot(&self) -> Vec<rein_workqueue::ItemSnapshot<Request>> {
        self.inner.queue.snapshot()
    }

    /// Stops the queue: waiting `get`s return `None` at once; later adds are ignored.
    pub fn shut_down(&self) {
        self.inner.queue.shut_down();
    }

    /// Whether the queue was shut down.
    pub fn is_shut_down(&self) -> bool {
        self.inner.queue.shutting_down()
    }
}
