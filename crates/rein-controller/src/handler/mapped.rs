//! `EnqueueRequestsFromMapFunc`: enqueue whatever requests a function maps the object to.

use std::fmt;

use kube_client::Resource;

use super::{EventHandler, add_all, create_priority, update_priority};
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::queue::RequestQueue;
use crate::reconcile::Request;

type MapFn<K> = Box<dyn Fn(&K) -> Vec<Request> + Send + Sync>;

/// Enqueues the requests `f(object)` returns; for updates, those of the old and the new object,
/// de-duplicated.
pub struct EnqueueRequestsFromMapFunc<K> {
    f: MapFn<K>,
}

impl<K> fmt::Debug for EnqueueRequestsFromMapFunc<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnqueueRequestsFromMapFunc")
            .finish_non_exhaustive()
    }
}

impl<K> EnqueueRequestsFromMapFunc<K> {
    /// A handler mapping each object with `f`.
    pub fn new(f: impl Fn(&K) -> Vec<Request> + Send + Sync + 'static) -> Self {
        EnqueueRequestsFromMapFunc { f: Box::new(f) }
    }
}

impl<K: Resource + Send + Sync + 'static> EventHandler<K> for EnqueueRequestsFromMapFunc<K> {
    fn create(&self, e: &CreateEvent<K>, q: &RequestQueue) {
        add_all(q, (self.f)(&e.object), create_priority(e));
    }
    fn update(&self, e: &UpdateEvent<K>, q: &RequestQueue) {
        let mut reqs = (self.f)(&e.object_old);
        reqs.extend((self.f)(&e.object_new));
        add_all(q, reqs, update_priority(e));
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &RequestQueue) {
        add_all(q, (self.f)(&e.object), 0);
    }
    fn generic(&self, e: &GenericEvent<K>, q: &RequestQueue) {
        add_all(q, (self.f)(&e.object), 0);
    }
}
