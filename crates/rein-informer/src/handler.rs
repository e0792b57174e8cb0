//! Event handlers: the `ResourceEventHandler` trait and its closure adapter.

use std::fmt;
use std::sync::Arc;

use crate::DeletedObject;

/// Receives an informer's notifications. Handlers must not mutate the objects they receive.
///
/// Each registered handler is called sequentially from its own task, in event order, from a
/// buffer of 256 notifications: when a handler falls that far behind, the informer waits for it
/// before it reads more (nothing is dropped). So callbacks must return quickly — enqueue work,
/// do not do it — as controller-runtime's handlers do.
pub trait ResourceEventHandler<K>: Send + Sync + 'static {
    /// An object appeared; `is_in_initial_list` is true for objects of the initial list
    /// (and for the synthetic adds a late-registered handler receives).
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }
    /// An object changed (or, with equal resource versions, a periodic resync).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }
    /// An object was deleted; a tombstone if the deletion was discovered by a relist.
    fn on_delete(&self, obj: &DeletedObject<K>) {
        let _ = obj;
    }
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&DeletedObject<K>) + Send + Sync>;

/// A handler built from closures; missing closures are no-ops.
pub struct ResourceEventHandlerFuncs<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> fmt::Debug for ResourceEventHandlerFuncs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerFuncs")
            .field("on_add", &self.add.is_some())
            .field("on_update", &self.update.is_some())
            .field("on_delete", &self.delete.is_some())
            .finish()
    }
}

impl<K> Default for ResourceEventHandlerFuncs<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> ResourceEventHandlerFuncs<K> {
    /// A handler that ignores everything.
    pub fn new() -> Self {
        ResourceEventHandlerFuncs {
            add: None,
            update: None,
            delete: None,
        }
    }

    /// Sets the add callback.
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Sets the update callback.
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Sets the delete callback.
    pub fn on_delete(mut self, f: impl Fn(&DeletedObject<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> ResourceEventHandler<K> for ResourceEventHandlerFuncs<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list);
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }
    fn on_delete(&self, obj: &DeletedObject<K>) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }
}
