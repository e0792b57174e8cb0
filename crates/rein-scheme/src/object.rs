//! The `Object` bound: a Kubernetes type known at compile time, as typed clients, informers and
//! controllers accept it.

use std::fmt::Debug;

use kube_core::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A Kubernetes object type with static type information (`DynamicType = ()`): any
/// k8s-openapi type, or a custom resource type. The one bound the typed client, the informer
/// factory and the controller builder share.
///
/// Implemented automatically; never implement it by hand.
pub trait Object:
    Resource<DynamicType = (), Scope: 'static>
    + Clone
    + Serialize
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Object for K where
    K: Resource<DynamicType = (), Scope: 'static>
        + Clone
        + Serialize
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static
{
}
