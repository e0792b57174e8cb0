//! Ready-made transforms for [`SharedIndexInformer::set_transform`](crate::SharedIndexInformer::set_transform).

use kube_client::Resource;

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
