//! The `Object` bound: what a typed client call accepts.

use std::fmt::Debug;

use kube_client::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A Kubernetes object type the typed client can read and write: any k8s-openapi type, or a
/// custom resource type with static type information (`DynamicType = ()`).
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
