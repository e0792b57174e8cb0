//! Event handlers: turn events into requests on the controller's queue (controller-runtime's
//! `pkg/handler`).
//!
//! Events that are probably nothing new — adds from the initial list and resyncs (updates with
//! an unchanged resource version) — are queued at [`crate::LOW_PRIORITY`],
//! so fresh changes are reconciled first after a restart.

mod enqueue;
mod funcs;
mod mapped;
mod owner;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use kube_client::Resource;

use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::queue::{LOW_PRIORITY, RequestQueue};
use crate::reconcile::Request;

pub use enqueue::EnqueueRequestForObject;
pub use funcs::Funcs;
pub use mapped::{EnqueueRequestsFromAsyncMapFunc, EnqueueRequestsFromMapFunc};
pub use owner::EnqueueRequestForOwner;

/// Receives events (after predicates) and adds requests to the queue. Every method defaults to
/// doing nothing. Handlers must not block: the queue's adds never do.
pub trait EventHandler<K>: Send + Sync + 'static {
    /// An object was created.
    fn create(&self, _event: &CreateEvent<K>, _queue: &RequestQueue) {}
    /// An object changed.
    fn update(&self, _event: &UpdateEvent<K>, _queue: &RequestQueue) {}
    /// An object was deleted.
    fn delete(&self, _event: &DeleteEvent<K>, _queue: &RequestQueue) {}
    /// A generic event arrived.
    fn generic(&self, _event: &GenericEvent<K>, _queue: &RequestQueue) {}
}

/// A shared, type-erased handler.
pub type BoxEventHandler<K> = Arc<dyn EventHandler<K>>;

impl<K: 'static> EventHandler<K> for BoxEventHandler<K> {
    fn create(&self, e: &CreateEvent<K>, q: &RequestQueue) {
        (**self).create(e, q);
    }
    fn update(&self, e: &UpdateEvent<K>, q: &RequestQueue) {
        (**self).update(e, q);
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &RequestQueue) {
        (**self).delete(e, q);
    }
    fn generic(&self, e: &GenericEvent<K>, q: &RequestQueue) {
        (**self).generic(e, q);
    }
}

/// The priority for a create event: low for the initial list.
pub(crate) fn create_priority<K>(e: &CreateEvent<K>) -> i32 {
    if e.is_in_initial_list {
        LOW_PRIORITY
    } else {
        0
    }
}

/// The priority for an update event: low for resyncs (unchanged resource version).
pub(crate) fn update_priority<K: Resource>(e: &UpdateEvent<K>) -> i32 {
    let old = &e.object_old.meta().resource_version;
    if old.is_some() && *old == e.object_new.meta().resource_version {
        LOW_PRIORITY
    } else {
        0
    }
}

/// Adds each distinct request once, at `priority`.
pub(crate) fn add_all(
    queue: &RequestQueue,
    reqs: impl IntoIterator<Item = Request>,
    priority: i32,
) {
    let mut seen: Vec<Request> = Vec::new();
    for req in reqs {
        if !seen.contains(&req) {
            queue.add_with_priority(req.clone(), priority);
            seen.push(req);
        }
    }
}
