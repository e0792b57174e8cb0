//! `EventSink`: where a source delivers events — predicates, then the handler, then the queue.

use std::fmt;
use std::sync::Arc;

use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::handler::{BoxEventHandler, EventHandler};
use crate::predicate::{BoxPredicate, Predicate};
use crate::queue::RequestQueue;

/// A watch's predicates and handler bound to a controller's queue. Predicates run in order and
/// the first `false` drops the event.
pub struct EventSink<K> {
    handler: BoxEventHandler<K>,
    predicates: Arc<[BoxPredicate<K>]>,
    queue: RequestQueue,
}

impl<K> Clone for EventSink<K> {
    fn clone(&self) -> Self {
        EventSink {
            handler: self.handler.clone(),
            predicates: self.predicates.clone(),
            queue: self.queue.clone(),
        }
    }
}

impl<K> fmt::Debug for EventSink<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSink")
            .field("predicates", &self.predicates.len())
            .field("queue", &self.queue)
            .finish()
    }
}

impl<K: 'static> EventSink<K> {
    /// A sink applying `predicates` then `handler`, writing to `queue`.
    pub fn new(
        handler: BoxEventHandler<K>,
        predicates: Vec<BoxPredicate<K>>,
        queue: RequestQueue,
    ) -> Self {
        EventSink {
            handler,
            predicates: predicates.into(),
            queue,
        }
    }

    /// The queue events end up in.
    pub fn queue(&self) -> &RequestQueue {
        &self.queue
    }

    /// Delivers a create event.
    pub fn create(&self, e: &CreateEvent<K>) {
        if self.predicates.iter().all(|p| p.create(e)) {
            self.handler.create(e, &self.queue);
        }
    }

    /// Delivers an update event.
    pub fn update(&self, e: &UpdateEvent<K>) {
        if self.predicates.iter().all(|p| p.update(e)) {
            self.handler.update(e, &self.queue);
        }
    }

    /// Delivers a delete event.
    pub fn delete(&self, e: &DeleteEvent<K>) {
        if self.predicates.iter().all(|p| p.delete(e)) {
            self.handler.delete(e, &self.queue);
        }
    }

    /// Delivers a generic event.
    pub fn generic(&self, e: &GenericEvent<K>) {
        if self.predicates.iter().all(|p| p.generic(e)) {
            self.handler.generic(e, &self.queue);
        }
    }
}
