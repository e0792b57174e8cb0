//! Object keys: client-go's `MetaNamespaceKeyFunc`, `SplitMetaNamespaceKey` and the
//! tombstone-aware variant, as strings in [`ObjectKey`]'s one format.

use std::cell::RefCell;
use std::sync::Arc;

use kube_client::Resource;
use rein_scheme::ObjectKey;

use crate::{DeletedObject, Error, KeyFunc};

/// The store key of an object: `"namespace/name"`, or `"name"` for cluster-scoped objects.
///
/// The format is [`ObjectKey`]'s (its `Display` and `FromStr`), written here without
/// building one.
pub fn meta_namespace_key<K: Resource>(obj: &K) -> String {
    let meta = obj.meta();
    let (namespace, name) = (
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    );
    let mut key = String::with_capacity(namespace.len() + 1 + name.len());
    // Writing to a `String` cannot fail.
    let _ = ObjectKey::write_parts(namespace, name, &mut key);
    key
}

/// Appends `obj`'s [`meta_namespace_key`] to `buf`.
fn write_meta_namespace_key<K: Resource>(obj: &K, buf: &mut String) {
    let meta = obj.meta();
    let _ = ObjectKey::write_parts(
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
        buf,
    );
}

thread_local! {
    /// Scratch space for building default keys without allocating.
    static KEY_BUF: RefCell<String> = RefCell::new(String::with_capacity(128));
}

/// How a store or queue computes object keys: the built-in `namespace/name`, written into a
/// reused per-thread buffer (a key costs one allocation when it is kept, none when it is only
/// looked up), or a caller's key function.
pub(crate) enum KeyMaker<K> {
    NamespaceName(fn(&K, &mut String)),
    Custom(KeyFunc<K>),
}

impl<K> Clone for KeyMaker<K> {
    fn clone(&self) -> Self {
        match self {
            KeyMaker::NamespaceName(f) => KeyMaker::NamespaceName(*f),
            KeyMaker::Custom(f) => KeyMaker::Custom(f.clone()),
        }
    }
}

impl<K> KeyMaker<K> {
    /// The built-in `namespace/name` key.
    pub(crate) fn namespace_name() -> Self
    where
        K: Resource,
    {
        KeyMaker::NamespaceName(write_meta_namespace_key::<K>)
    }

    /// An owned key.
    pub(crate) fn key(&self, obj: &K) -> String {
        match self {
            KeyMaker::NamespaceName(write) => {
                let mut key = String::new();
                write(obj, &mut key);
                key
            }
            KeyMaker::Custom(f) => f(obj),
        }
    }

    /// Runs `f` on the key without allocating it (for the built-in key).
    pub(crate) fn with_key<R>(&self, obj: &K, f: impl FnOnce(&str) -> R) -> R {
        match self {
            KeyMaker::NamespaceName(write) => KEY_BUF.with(|buf| match buf.try_borrow_mut() {
                Ok(mut buf) => {
                    buf.clear();
                    write(obj, &mut buf);
                    f(&buf)
                }
                // Re-entered from inside `f`: fall back to a fresh string.
                Err(_) => f(&self.key(obj)),
            }),
            KeyMaker::Custom(key_fn) => f(&key_fn(obj)),
        }
    }

    /// The key as a shared string (one allocation).
    pub(crate) fn arc_key(&self, obj: &K) -> Arc<str> {
        self.with_key(obj, |key| Arc::from(key))
    }
}

/// The key of a deleted object: the tombstone's recorded key, or [`meta_namespace_key`].
pub fn deletion_handling_key<K: Resource>(obj: &DeletedObject<K>) -> String {
    match obj {
        DeletedObject::Object(o) => meta_namespace_key(o.as_ref()),
        DeletedObject::Tombstone { key, .. } => key.clone(),
    }
}

/// Splits a key into `(namespace, name)`; the namespace is empty for cluster-scoped keys
/// ([`ObjectKey::split`], with this crate's error).
pub fn split_meta_namespace_key(key: &str) -> Result<(&str, &str), Error> {
    ObjectKey::split(key).ok_or_else(|| Error::InvalidKey {
        key: key.to_string(),
    })
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
        for key in [meta_namespace_key(&pod), meta_namespace_key(&ns)] {
            let (namespace, name) = split_meta_namespace_key(&key).unwrap();
            assert_eq!(
                key,
                ObjectKey::new(namespace, name).to_string(),
                "one format"
            );
        }
        assert_eq!(split_meta_namespace_key("a/b").unwrap(), ("a", "b"));
        assert_eq!(split_meta_namespace_key("b").unwrap(), ("", "b"));
        assert!(split_meta_namespace_key("a/b/c").is_err());
        let maker = KeyMaker::<Pod>::namespace_name();
        assert_eq!(maker.key(&pod), "ns/p");
        assert_eq!(&*maker.arc_key(&pod), "ns/p");
        let nested = maker.with_key(&pod, |outer| {
            format!(
                "{outer}+{}",
                maker.with_key(&pod, |inner| inner.to_string())
            )
        });
        assert_eq!(nested, "ns/p+ns/p");
        assert_eq!(KeyMaker::<Namespace>::namespace_name().key(&ns), "n");
    }
}
