//! `Funcs`: a handler from closures per event type; user code enqueues directly.

use std::fmt;

use super::EventHandler;
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::queue::RequestQueue;

type CreateFn<K> = Box<dyn Fn(&CreateEvent<K>, &RequestQueue) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&UpdateEvent<K>, &RequestQueue) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&DeleteEvent<K>, &RequestQueue) + Send + Sync>;
type GenericFn<K> = Box<dyn Fn(&GenericEvent<K>, &RequestQueue) + Send + Sync>;

/// A handler from closures; missing closures ignore their events.
pub struct Funcs<K> {
    create: Option<CreateFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
    generic: Option<GenericFn<K>>,
}

impl<K> fmt::Debug for Funcs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("handler::Funcs")
            .field("create", &self.create.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .field("generic", &self.generic.is_some())
            .finish()
    }
}

impl<K> Default for Funcs<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> Funcs<K> {
    /// A handler that ignores everything until closures are set.
    pub fn new() -> Self {
        Funcs {
            create: None,
            update: None,
            delete: None,
            generic: None,
        }
    }

    /// Sets the create callback.
    pub fn on_create(
        mut self,
        f: impl Fn(&CreateEvent<K>, &RequestQueue) + Send + Sync + 'static,
    ) -> Self {
        self.create = Some(Box::new(f));
        self
    }

    /// Sets the update callback.
    pub fn on_update(
        mut self,
        f: impl Fn(&UpdateEvent<K>, &RequestQueue) + Send + Sync + 'static,
    ) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Sets the delete callback.
    pub fn on_delete(
        mut self,
        f: impl Fn(&DeleteEvent<K>, &RequestQueue) + Send + Sync + 'static,
    ) -> Self {
        self.delete = Some(Box::new(f));
        self
    }

    /// Sets the generic callback.
    pub fn on_generic(
        mut self,
        f: impl Fn(&GenericEvent<K>, &RequestQueue) + Send + Sync + 'static,
    ) -> Self {
        self.generic = Some(Box::new(f));
        self
    }
}

impl<K: 'static> EventHandler<K> for Funcs<K> {
    fn create(&self, e: &CreateEvent<K>, q: &RequestQueue) {
        if let Some(f) = &self.create {
            f(e, q);
        }
    }
    fn update(&self, e: &UpdateEvent<K>, q: &RequestQueue) {
        if let Some(f) = &self.update {
            f(e, q);
        }
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &RequestQueue) {
        if let Some(f) = &self.delete {
            f(e, q);
        }
    }
    fn generic(&self, e: &GenericEvent<K>, q: &RequestQueue) {
        if let Some(f) = &self.generic {
            f(e, q);
        }
    }
}
