//! What a priority queue holds right now, item by item: for debug endpoints and tests
//! (controller-runtime has no such view; client-go exposes only lengths).

use std::time::Duration;

/// Where one item is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemState {
    /// Ready to be handed out.
    Ready,
    /// Waiting for its ready time (a delayed add, or a rate-limited one: then it backs off
    /// after [`ItemSnapshot::failures`] failures).
    Waiting {
        /// How long until it becomes ready.
        ready_in: Duration,
    },
    /// Handed out to a worker and not yet done.
    InFlight {
        /// How long since it was handed out.
        for_: Duration,
        /// Whether it was added again meanwhile (it comes back once done).
        requeued: bool,
    },
}

/// One item of a [`PriorityQueue`](super::PriorityQueue) and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemSnapshot<T> {
    /// The item.
    pub item: T,
    /// Ready, waiting or in flight.
    pub state: ItemState,
    /// The priority it is queued with (`None` when in flight and not re-added).
    pub priority: Option<i32>,
    /// The failures the rate limiter remembers for it (its backoff step).
    pub failures: u32,
}
