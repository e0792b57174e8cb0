//! Ready-made transforms for [`SharedIndexInformer::set_transform`](crate::SharedIndexInformer::set_transform).

use std::sync::{Arc, LazyLock};

use kube_client::Resource;
use kube_client::core::ObjectMeta;

use crate::MetaTransform;

/// The one [`drop_managed_fields`] transform, so a factory can recognise it.
static DROP_MANAGED_FIELDS: LazyLock<MetaTransform> =
    LazyLock::new(|| Arc::new(|meta: &mut ObjectMeta| meta.managed_fields = None));

/// A [`MetaTransform`] that drops `metadata.managedFields` (controller-runtime's
/// `TransformStripManagedFields`, the default of rein's cache).
///
/// A [`SharedInformerFactory`](crate::SharedInformerFactory) whose spec for a kind carries
/// this transform also skips managedFields while decoding
/// ([`ListWatchOptions::skip_managed_fields`](crate::ListWatchOptions)): they are passed over
/// in the JSON and never built, which saves the CPU of decoding them (about half a realistic
/// Pod's JSON) and the heap churn of building and dropping them. Any other transform sees
/// every object whole.
pub fn drop_managed_fields() -> MetaTransform {
    DROP_MANAGED_FIELDS.clone()
}

/// Whether `transform` is [`drop_managed_fields`] (the same function, not an equivalent one).
pub(crate) fn is_drop_managed_fields(transform: &MetaTransform) -> bool {
    Arc::ptr_eq(transform, &DROP_MANAGED_FIELDS)
}

/// Drops `metadata.managedFields` (client-go's `TransformStripManagedFields`).
///
/// Server-side-apply bookkeeping is often the largest part of an object held in memory (a
/// `FieldsV1` tree per field manager) and controllers rarely read it. Not a default: a cache
/// built with it no longer shows who owns which field, so an apply-based controller that
/// inspects managed fields must not use it.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kube_client::core::ObjectMeta;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
///
/// let pod = Pod {
///     metadata: ObjectMeta {
///         name: Some("p".into()),
///         managed_fields: Some(vec![ManagedFieldsEntry::default()]),
///         ..Default::default()
///     },
///     ..Default::default()
/// };
/// let pod = rein_informer::strip_managed_fields(pod);
/// assert!(pod.metadata.managed_fields.is_none());
/// assert_eq!(pod.metadata.name.as_deref(), Some("p"));
/// // On an informer: `informer.set_transform(rein_informer::strip_managed_fields::<Pod>)?;`
/// ```
pub fn strip_managed_fields<K: Resource>(mut obj: K) -> K {
    obj.meta_mut().managed_fields = None;
    obj
}
