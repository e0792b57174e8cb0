//! Metadata predicates: filters that look only at `ObjectMeta`, so one value applies to every
//! kind a controller watches (what the builder's `with_event_filter` takes).

use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::Resource;

use super::{
    AnnotationChanged, GenerationChanged, LabelChanged, LabelSelectorPredicate, Predicate,
    ResourceVersionChanged,
};
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};

/// A predicate over object metadata; every method defaults to `true`.
pub trait MetaPredicate: Send + Sync + 'static {
    /// Filters create events.
    fn create(&self, _obj: &ObjectMeta, _is_in_initial_list: bool) -> bool {
        true
    }
    /// Filters update events.
    fn update(&self, _old: &ObjectMeta, _new: &ObjectMeta) -> bool {
        true
    }
    /// Filters delete events.
    fn delete(&self, _obj: &ObjectMeta, _delete_state_unknown: bool) -> bool {
        true
    }
    /// Filters generic events.
    fn generic(&self, _obj: &ObjectMeta) -> bool {
        true
    }
}

/// Uses a metadata predicate as a [`Predicate`] of any kind.
pub struct ForAnyKind(pub Arc<dyn MetaPredicate>);

impl fmt::Debug for ForAnyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ForAnyKind(..)")
    }
}

impl<K: Resource + 'static> Predicate<K> for ForAnyKind {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        self.0.create(e.object.meta(), e.is_in_initial_list)
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        self.0.update(e.object_old.meta(), e.object_new.meta())
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        self.0.delete(e.object.meta(), e.delete_state_unknown)
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        self.0.generic(e.object.meta())
    }
}

/// Wraps a built-in predicate that only needs metadata, evaluating it on a metadata-only
/// stand-in object.
macro_rules! meta_via_typed {
    ($ty:ty) => {
        impl MetaPredicate for $ty {
            fn create(&self, obj: &ObjectMeta, is_in_initial_list: bool) -> bool {
                Predicate::<MetaOnly>::create(
                    self,
                    &CreateEvent {
                        object: Arc::new(MetaOnly(obj.clone())),
                        is_in_initial_list,
                    },
                )
            }
            fn update(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
                Predicate::<MetaOnly>::update(
                    self,
                    &UpdateEvent {
                        object_old: Arc::new(MetaOnly(old.clone())),
                        object_new: Arc::new(MetaOnly(new.clone())),
                    },
                )
            }
            fn delete(&self, obj: &ObjectMeta, delete_state_unknown: bool) -> bool {
                Predicate::<MetaOnly>::delete(
                    self,
                    &DeleteEvent {
                        object: Arc::new(MetaOnly(obj.clone())),
                        delete_state_unknown,
                    },
                )
            }
            fn generic(&self, obj: &ObjectMeta) -> bool {
                Predicate::<MetaOnly>::generic(
                    self,
                    &GenericEvent {
                        object: Arc::new(MetaOnly(obj.clone())),
                    },
                )
            }
        }
    };
}

meta_via_typed!(ResourceVersionChanged);
meta_via_typed!(GenerationChanged);
meta_via_typed!(LabelChanged);
meta_via_typed!(AnnotationChanged);
meta_via_typed!(LabelSelectorPredicate);

/// Metadata alone, as a resource (for evaluating typed predicates on metadata).
#[derive(Debug, Clone)]
struct MetaOnly(ObjectMeta);

impl Resource for MetaOnly {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        "".into()
    }
    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        "".into()
    }
    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        "".into()
    }
    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        "".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.0
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0
    }
}

type CreateFn = Box<dyn Fn(&ObjectMeta, bool) -> bool + Send + Sync>;
type UpdateFn = Box<dyn Fn(&ObjectMeta, &ObjectMeta) -> bool + Send + Sync>;
type DeleteFn = Box<dyn Fn(&ObjectMeta, bool) -> bool + Send + Sync>;
type GenericFn = Box<dyn Fn(&ObjectMeta) -> bool + Send + Sync>;

/// A metadata predicate from closures; a missing closure passes the event.
#[derive(Default)]
pub struct MetaFuncs {
    create: Option<CreateFn>,
    update: Option<UpdateFn>,
    delete: Option<DeleteFn>,
    generic: Option<GenericFn>,
}

impl fmt::Debug for MetaFuncs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetaFuncs")
            .field("create", &self.create.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .field("generic", &self.generic.is_some())
            .finish()
    }
}

impl MetaFuncs {
    /// Passes everything until closures are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the create filter (`meta`, `is_in_initial_list`).
    pub fn on_create(
        mut self,
        f: impl Fn(&ObjectMeta, bool) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.create = Some(Box::new(f));
        self
    }

    /// Sets the update filter (`old`, `new`).
    pub fn on_update(
        mut self,
        f: impl Fn(&ObjectMeta, &ObjectMeta) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Sets the delete filter (`meta`, `delete_state_unknown`).
    pub fn on_delete(
        mut self,
        f: impl Fn(&ObjectMeta, bool) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.delete = Some(Box::new(f));
        self
    }

    /// Sets the generic filter.
    pub fn on_generic(mut self, f: impl Fn(&ObjectMeta) -> bool + Send + Sync + 'static) -> Self {
        self.generic = Some(Box::new(f));
        self
    }

    /// Drops create, update and delete events and keeps generic ones (the `channel_source`
    /// example uses it).
    pub fn generic_only() -> Self {
        Self::new()
            .on_create(|_, _| false)
            .on_update(|_, _| false)
            .on_delete(|_, _| false)
    }
}

impl MetaPredicate for MetaFuncs {
    fn create(&self, obj: &ObjectMeta, initial: bool) -> bool {
        self.create.as_ref().is_none_or(|f| f(obj, initial))
    }
    fn update(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        self.update.as_ref().is_none_or(|f| f(old, new))
    }
    fn delete(&self, obj: &ObjectMeta, unknown: bool) -> bool {
        self.delete.as_ref().is_none_or(|f| f(obj, unknown))
    }
    fn generic(&self, obj: &ObjectMeta) -> bool {
        self.generic.as_ref().is_none_or(|f| f(obj))
    }
}
