//! `ObjectKey`: the namespace/name pair that identifies an object (the reconcile request key).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The namespace and name of an object: how clients, caches and reconcilers address it.
///
/// Namespaced objects display as `"ns/name"`, cluster-scoped ones as `"name"`; [`FromStr`]
/// parses both forms back.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectKey {
    /// The namespace, or `None` for a cluster-scoped object.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

impl ObjectKey {
    /// A key for a namespaced object. An empty namespace makes a cluster-scoped key.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        let namespace = namespace.into();
        Self {
            namespace: (!namespace.is_empty()).then_some(namespace),
            name: name.into(),
        }
    }

    /// A key for a cluster-scoped object.
    pub fn cluster_scoped(name: impl Into<String>) -> Self {
        Self {
            namespace: None,
            name: name.into(),
        }
    }

    /// The key of an existing object, read from its metadata (missing name → empty name).
    pub fn from_object<K: kube_core::Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        Self::new(
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        )
    }

    /// The namespace as a string slice, `""` when cluster-scoped.
    pub fn namespace_str(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }

    /// Writes a key in the one key format, without building an `ObjectKey`: `"namespace/name"`,
    /// or `"name"` when `namespace` is empty (cluster-scoped). [`Display`](fmt::Display) and
    /// rein-informer's store keys both use it.
    pub fn write_parts(namespace: &str, name: &str, out: &mut impl fmt::Write) -> fmt::Result {
        if !namespace.is_empty() {
            out.write_str(namespace)?;
            out.write_char('/')?;
        }
        out.write_str(name)
    }

    /// Splits a key string into `(namespace, name)` without allocating, as client-go's
    /// `SplitMetaNamespaceKey` does: the namespace is `""` for a key without `/`; `None` for
    /// more than one `/`. Parts may be empty here; [`FromStr`] also requires them non-empty.
    pub fn split(key: &str) -> Option<(&str, &str)> {
        match key.split_once('/') {
            None => Some(("", key)),
            Some((namespace, name)) if !name.contains('/') => Some((namespace, name)),
            Some(_) => None,
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Self::write_parts(self.namespace_str(), &self.name, f)
    }
}

/// Why a string is not an object key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "parsing object key {input:?}: expected \"namespace/name\" or \"name\" with non-empty parts"
)]
pub struct ParseObjectKeyError {
    /// The rejected input.
    pub input: String,
}

impl FromStr for ObjectKey {
    type Err = ParseObjectKeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseObjectKeyError {
            input: s.to_owned(),
        };
        let (namespace, name) = Self::split(s).ok_or_else(err)?;
        if name.is_empty() || (namespace.is_empty() && s.contains('/')) {
            return Err(err());
        }
        Ok(Self::new(namespace, name))
    }
}

impl From<(&str, &str)> for ObjectKey {
    fn from((namespace, name): (&str, &str)) -> Self {
        Self::new(namespace, name)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use kube_core::ObjectMeta;

    use super::*;

    #[test]
    fn display_and_parse_round_trip() {
        for text in ["default/gateway", "node-1"] {
            let key: ObjectKey = text.parse().unwrap();
            assert_eq!(key.to_string(), text);
        }
        assert_eq!(
            "default/gateway".parse::<ObjectKey>().unwrap(),
            ObjectKey::new("default", "gateway")
        );
    }

    #[test]
    fn malformed_keys_are_rejected() {
        for bad in ["", "/", "a/", "/b", "a/b/c"] {
            assert!(
                bad.parse::<ObjectKey>().is_err(),
                "{bad:?} should not parse"
            );
        }
    }

    /// `split` is client-go's lenient split (empty parts allowed); parsing is the strict one.
    #[test]
    fn split_is_lenient_and_writes_match_display() {
        assert_eq!(ObjectKey::split("a/b"), Some(("a", "b")));
        assert_eq!(ObjectKey::split("b"), Some(("", "b")));
        assert_eq!(ObjectKey::split("a/"), Some(("a", "")));
        assert_eq!(ObjectKey::split("/b"), Some(("", "b")));
        assert_eq!(ObjectKey::split("a/b/c"), None);
        for key in [ObjectKey::new("ns", "p"), ObjectKey::cluster_scoped("n")] {
            let mut written = String::new();
            ObjectKey::write_parts(key.namespace_str(), &key.name, &mut written).unwrap();
            assert_eq!(written, key.to_string());
        }
    }

    #[test]
    fn empty_namespace_is_cluster_scoped() {
        assert_eq!(ObjectKey::new("", "x"), ObjectKey::cluster_scoped("x"));
    }

    #[test]
    fn from_object_reads_metadata() {
        let pod = Pod {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some("p".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(ObjectKey::from_object(&pod), ObjectKey::new("ns", "p"));
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some("kube-system".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(ObjectKey::from_object(&ns).to_string(), "kube-system");
    }
}
