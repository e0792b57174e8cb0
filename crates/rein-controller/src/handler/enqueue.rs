//! `EnqueueRequestForObject`: enqueue the key of the object the event is about.

use kube_client::Resource;

use super::{EventHandler, create_priority, update_priority};
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::queue::RequestQueue;
use crate::reconcile::Request;

/// Enqueues `{namespace, name}` of the event's object (for updates: the new object).
#[derive(Debug, Clone, Copy, Default)]
pub struct EnqueueRequestForObject;

impl<K: Resource + Send + Sync + 'static> EventHandler<K> for EnqueueRequestForObject {
    fn create(&self, e: &CreateEvent<K>, q: &RequestQueue) {
        q.add_with_priority(Request::from_object(&*e.object), create_priority(e));
    }
    fn update(&self, e: &UpdateEvent<K>, q: &RequestQueue) {
        q.add_with_priority(Request::from_object(&*e.object_new), update_priority(e));
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &RequestQueue) {
        q.add(Request::from_object(&*e.object));
    }
    fn generic(&self, e: &GenericEvent<K>, q: &RequestQueue) {
        q.add(Request::from_object(&*e.object));
    }
}
