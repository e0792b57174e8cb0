//! Events delivered from sources through predicates to handlers (controller-runtime's `pkg/event`).

use std::sync::Arc;

/// An object was created (or listed at start-up: `is_in_initial_list`).
#[derive(Debug)]
pub struct CreateEvent<K> {
    /// The new object.
    pub object: Arc<K>,
    /// True for objects of the informer's initial list (queued at low priority).
    pub is_in_initial_list: bool,
}

/// An object changed; equal resource versions mean a periodic resync.
#[derive(Debug)]
pub struct UpdateEvent<K> {
    /// The object before the change.
    pub object_old: Arc<K>,
    /// The object after the change.
    pub object_new: Arc<K>,
}

/// An object was deleted.
#[derive(Debug)]
pub struct DeleteEvent<K> {
    /// The last known state of the object.
    pub object: Arc<K>,
    /// True when the deletion was discovered by a relist (a tombstone): the object may be stale.
    pub delete_state_unknown: bool,
}

/// An event from outside the cluster (a channel source, a timer, a webhook).
#[derive(Debug)]
pub struct GenericEvent<K> {
    /// The object the event is about.
    pub object: Arc<K>,
}

impl<K> Clone for CreateEvent<K> {
    fn clone(&self) -> Self {
        CreateEvent {
            object: self.object.clone(),
            is_in_initial_list: self.is_in_initial_list,
        }
    }
}

impl<K> Clone for UpdateEvent<K> {
    fn clone(&self) -> Self {
        UpdateEvent {
            object_old: self.object_old.clone(),
            object_new: self.object_new.clone(),
        }
    }
}

impl<K> Clone for DeleteEvent<K> {
    fn clone(&self) -> Self {
        DeleteEvent {
            object: self.object.clone(),
            delete_state_unknown: self.delete_state_unknown,
        }
    }
}

impl<K> Clone for GenericEvent<K> {
    fn clone(&self) -> Self {
        GenericEvent {
            object: self.object.clone(),
        }
    }
}

impl<K> GenericEvent<K> {
    /// A generic event for `object`.
    pub fn new(object: impl Into<Arc<K>>) -> Self {
        GenericEvent {
            object: object.into(),
        }
    }
}
