//! `AnyObject`: a type-erased Kubernetes object the scheme can construct, decode and encode.

use std::any::Any;
use std::fmt::Debug;

use kube_core::{DynamicObject, ObjectMeta, Resource};
use serde::Serialize;

use crate::GroupVersionKind;

/// Any Kubernetes object behind a `Box<dyn AnyObject>`: typed k8s-openapi structs, registered
/// custom resources and `DynamicObject`s alike. Downcast with [`downcast`] or
/// [`AnyObject::as_any`].
pub trait AnyObject: Any + Debug + Send + Sync {
    /// The object's metadata.
    fn meta(&self) -> &ObjectMeta;
    /// The object's metadata, mutably.
    fn meta_mut(&mut self) -> &mut ObjectMeta;
    /// The object as JSON.
    fn to_json(&self) -> Result<serde_json::Value, serde_json::Error>;
    /// The kind the object says it is, for objects that carry it (dynamic objects).
    fn own_gvk(&self) -> Option<GroupVersionKind>;
    /// Borrow as `Any` for downcasting.
    fn as_any(&self) -> &dyn Any;
    /// Convert into `Box<dyn Any>` for downcasting by value.
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send + Sync>;
}

impl<T> AnyObject for T
where
    T: Resource + Serialize + Debug + Send + Sync + 'static,
{
    fn meta(&self) -> &ObjectMeta {
        Resource::meta(self)
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        Resource::meta_mut(self)
    }

    fn to_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }

    fn own_gvk(&self) -> Option<GroupVersionKind> {
        let dynamic = (self as &dyn Any).downcast_ref::<DynamicObject>()?;
        let types = dynamic.types.as_ref()?;
        Some(GroupVersionKind::from_api_version_kind(
            &types.api_version,
            &types.kind,
        ))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any + Send + Sync> {
        self
    }
}

/// Downcasts a boxed object to a concrete type; `None` if it is another type (check with
/// `obj.as_any().is::<T>()` first to keep the object on a mismatch).
pub fn downcast<T: AnyObject>(obj: Box<dyn AnyObject>) -> Option<Box<T>> {
    obj.into_any().downcast::<T>().ok()
}
