//! Object keys: client-go's `MetaNamespaceKeyFunc`, `SplitMetaNamespaceKey` and the tombstone-aware variant.

use kube_client::Resource;

use crate::{DeletedObject, Error};

/// The store key of an object: `"namespace/name"`, or `"name"` for cluster-scoped objects.
pub fn meta_namespace_key<K: Resource>(obj: &K) -> String {
    let meta = obj.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => {
            let mut key = String::with_capacity(ns.len() + 1 + name.len());
            key.push_str(ns);
            key.push('/');
            key.push_str(name);
            key
        }
        _ => name.to_string(),
    }
}

/// The key of a deleted object: the tombstone's recorded key, or [`meta_namespace_key`].
pub fn deletion_handling_key<K: Resource>(obj: &DeletedObject<K>) -> String {
    match obj {
        DeletedObject::Object(o) => meta_namespace_key(o.as_ref()),
        DeletedObject::Tombstone { key, .. } => key.clone(),
    }
}

/// Splits a key into `(namespace, name)`; the namespace is empty for cluster-scoped keys.
pub fn split_meta_namespace_key(key: &str) -> Result<(&str, &str), Error> {
    let mut parts = key.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => Ok(("", name)),
        (Some(ns), Some(name), None) => Ok((ns, name)),
        _ => Err(Error::InvalidKey {
            key: key.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use kube_client::core::ObjectMeta;

    use super::*;

    #[test]
    fn keys_and_splitting() {
        let pod = Pod {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some("p".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(meta_namespace_key(&pod), "ns/p");
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some("n".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(meta_namespace_key(&ns), "n");
        assert_eq!(split_meta_namespace_key("a/b").unwrap(), ("a", "b"));
        assert_eq!(split_meta_namespace_key("b").unwrap(), ("", "b"));
        assert!(split_meta_namespace_key("a/b/c").is_err());
    }
}
