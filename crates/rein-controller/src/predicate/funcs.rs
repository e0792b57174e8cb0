//! Predicates built from closures: one per event type, or one filter on the object.

use std::fmt;
use std::sync::Arc;

use super::Predicate;
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};

type CreateFn<K> = Box<dyn Fn(&CreateEvent<K>) -> bool + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&UpdateEvent<K>) -> bool + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&DeleteEvent<K>) -> bool + Send + Sync>;
type GenericFn<K> = Box<dyn Fn(&GenericEvent<K>) -> bool + Send + Sync>;

/// A predicate from closures per event type; a missing closure passes the event.
pub struct Funcs<K> {
    create: Option<CreateFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
    generic: Option<GenericFn<K>>,
}

impl<K> fmt::Debug for Funcs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("predicate::Funcs")
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
    /// A predicate that passes everything until closures are set.
    pub fn new() -> Self {
        Funcs {
            create: None,
            update: None,
            delete: None,
            generic: None,
        }
    }

    /// Sets the create filter.
    pub fn on_create(
        mut self,
        f: impl Fn(&CreateEvent<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.create = Some(Box::new(f));
        self
    }

    /// Sets the update filter.
    pub fn on_update(
        mut self,
        f: impl Fn(&UpdateEvent<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Sets the delete filter.
    pub fn on_delete(
        mut self,
        f: impl Fn(&DeleteEvent<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.delete = Some(Box::new(f));
        self
    }

    /// Sets the generic filter.
    pub fn on_generic(
        mut self,
        f: impl Fn(&GenericEvent<K>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.generic = Some(Box::new(f));
        self
    }
}

impl<K: 'static> Predicate<K> for Funcs<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        self.create.as_ref().is_none_or(|f| f(e))
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        self.update.as_ref().is_none_or(|f| f(e))
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        self.delete.as_ref().is_none_or(|f| f(e))
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        self.generic.as_ref().is_none_or(|f| f(e))
    }
}

/// A predicate filtering on the object (for updates: the new object) — controller-runtime's
/// `NewPredicateFuncs`.
pub fn filter<K: Send + Sync + 'static>(
    f: impl Fn(&K) -> bool + Send + Sync + 'static,
) -> Funcs<K> {
    let f = Arc::new(f);
    let (f1, f2, f3, f4) = (f.clone(), f.clone(), f.clone(), f);
    Funcs::new()
        .on_create(move |e| f1(&e.object))
        .on_update(move |e| f2(&e.object_new))
        .on_delete(move |e| f3(&e.object))
        .on_generic(move |e| f4(&e.object))
}
