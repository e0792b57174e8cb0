//! Predicates: filters applied to events before handlers see them (controller-runtime's
//! `pkg/predicate`). Predicates never change what the cache stores.

mod funcs;
mod meta;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_client::Resource;
use rein_scheme::labels::{ParseError, Selector};

use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};

pub use funcs::{Funcs, filter};
pub use meta::{ForAnyKind, MetaFuncs, MetaPredicate};

/// Decides, per event type, whether an event reaches the handler. Every method defaults to
/// `true` (let the event through).
pub trait Predicate<K>: Send + Sync + 'static {
    /// Filters create events.
    fn create(&self, _event: &CreateEvent<K>) -> bool {
        true
    }
    /// Filters update events.
    fn update(&self, _event: &UpdateEvent<K>) -> bool {
        true
    }
    /// Filters delete events.
    fn delete(&self, _event: &DeleteEvent<K>) -> bool {
        true
    }
    /// Filters generic events.
    fn generic(&self, _event: &GenericEvent<K>) -> bool {
        true
    }
}

/// A shared, type-erased predicate, as sources and the builder hold them.
pub type BoxPredicate<K> = Arc<dyn Predicate<K>>;

impl<K: 'static> Predicate<K> for BoxPredicate<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        (**self).create(e)
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        (**self).update(e)
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        (**self).delete(e)
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        (**self).generic(e)
    }
}

/// Passes updates whose `metadata.resourceVersion` changed (drops resyncs); passes all other
/// events.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResourceVersionChanged;

impl<K: Resource + 'static> Predicate<K> for ResourceVersionChanged {
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        e.object_old.meta().resource_version != e.object_new.meta().resource_version
    }
}

/// Passes updates whose `metadata.generation` changed: spec changes, not status- or
/// metadata-only updates, not resyncs. Passes all other events.
#[derive(Debug, Clone, Copy, Default)]
pub struct GenerationChanged;

impl<K: Resource + 'static> Predicate<K> for GenerationChanged {
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        e.object_old.meta().generation != e.object_new.meta().generation
    }
}

/// Passes updates whose labels changed (a missing map equals an empty one); passes all other
/// events.
#[derive(Debug, Clone, Copy, Default)]
pub struct LabelChanged;

impl<K: Resource + 'static> Predicate<K> for LabelChanged {
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        maps_differ(&e.object_old.meta().labels, &e.object_new.meta().labels)
    }
}

/// Passes updates whose annotations changed (a missing map equals an empty one); passes all
/// other events.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnnotationChanged;

impl<K: Resource + 'static> Predicate<K> for AnnotationChanged {
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        maps_differ(
            &e.object_old.meta().annotations,
            &e.object_new.meta().annotations,
        )
    }
}

fn maps_differ(a: &Option<BTreeMap<String, String>>, b: &Option<BTreeMap<String, String>>) -> bool {
    let empty = BTreeMap::new();
    a.as_ref().unwrap_or(&empty) != b.as_ref().unwrap_or(&empty)
}

/// Passes events whose object's labels match a selector (for updates: the new object).
#[derive(Debug, Clone)]
pub struct LabelSelectorPredicate {
    selector: Selector,
}

impl LabelSelectorPredicate {
    /// From a `metav1.LabelSelector`; an invalid selector is an error.
    pub fn new(selector: &LabelSelector) -> Result<Self, ParseError> {
        Ok(LabelSelectorPredicate {
            selector: Selector::from_label_selector(selector)?,
        })
    }

    /// From an already parsed selector.
    pub fn from_selector(selector: Selector) -> Self {
        LabelSelectorPredicate { selector }
    }

    fn matches<K: Resource>(&self, obj: &K) -> bool {
        let empty = BTreeMap::new();
        self.selector
            .matches(obj.meta().labels.as_ref().unwrap_or(&empty))
    }
}

impl<K: Resource + 'static> Predicate<K> for LabelSelectorPredicate {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        self.matches(&*e.object)
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        self.matches(&*e.object_new)
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        self.matches(&*e.object)
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        self.matches(&*e.object)
    }
}

/// All predicates must pass, checked in order, stopping at the first `false`; an empty `And`
/// passes everything.
pub struct And<K>(pub Vec<BoxPredicate<K>>);

/// Any predicate may pass, checked in order, stopping at the first `true`; an empty `Or`
/// passes nothing.
pub struct Or<K>(pub Vec<BoxPredicate<K>>);

/// Inverts a predicate.
pub struct Not<K>(pub BoxPredicate<K>);

/// `And` of the given predicates.
pub fn and<K>(predicates: Vec<BoxPredicate<K>>) -> And<K> {
    And(predicates)
}

/// `Or` of the given predicates.
pub fn or<K>(predicates: Vec<BoxPredicate<K>>) -> Or<K> {
    Or(predicates)
}

/// `Not` of the given predicate.
pub fn not<K>(predicate: impl Predicate<K>) -> Not<K> {
    Not(Arc::new(predicate))
}

impl<K> fmt::Debug for And<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "And({} predicates)", self.0.len())
    }
}

impl<K> fmt::Debug for Or<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Or({} predicates)", self.0.len())
    }
}

impl<K> fmt::Debug for Not<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Not(..)")
    }
}

impl<K: 'static> Predicate<K> for And<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        self.0.iter().all(|p| p.create(e))
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        self.0.iter().all(|p| p.update(e))
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        self.0.iter().all(|p| p.delete(e))
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        self.0.iter().all(|p| p.generic(e))
    }
}

impl<K: 'static> Predicate<K> for Or<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        self.0.iter().any(|p| p.create(e))
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        self.0.iter().any(|p| p.update(e))
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        self.0.iter().any(|p| p.delete(e))
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        self.0.iter().any(|p| p.generic(e))
    }
}

impl<K: 'static> Predicate<K> for Not<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        !self.0.create(e)
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        !self.0.update(e)
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        !self.0.delete(e)
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        !self.0.generic(e)
    }
}
