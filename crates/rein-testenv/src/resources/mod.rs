//! The catalogue of served resources: built-in kinds from k8s-openapi plus CRD-defined kinds.

mod builtin;
mod custom;
mod shared;
mod tables;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::schema::VersionSchema;

pub(crate) use builtin::{builtin_resources, with_builtin_types};
pub(crate) use custom::{CustomVersion, PrinterColumn, custom_versions};
pub(crate) use shared::{to_storage, to_view};

/// Where a stored object lives: its API group and plural resource name (all versions share it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ResKey {
    /// API group, empty for the core group.
    pub(crate) group: String,
    /// Plural resource name, e.g. `pods`.
    pub(crate) plural: String,
}

/// The paths of a scale subresource's fields inside the parent object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScalePaths {
    /// JSON pointer to the desired replicas, e.g. `/spec/replicas`.
    pub(crate) spec_replicas: String,
    /// JSON pointer to the observed replicas, e.g. `/status/replicas`.
    pub(crate) status_replicas: String,
    /// JSON pointer to the label selector string, if any.
    pub(crate) label_selector: Option<String>,
}

/// One served resource (all its versions).
#[derive(Debug, Clone)]
pub(crate) struct ResourceDef {
    /// API group, empty for the core group.
    pub(crate) group: String,
    /// Served versions, preferred first.
    pub(crate) versions: Vec<String>,
    /// Kind, e.g. `Pod`.
    pub(crate) kind: String,
    /// Plural resource name, e.g. `pods`.
    pub(crate) plural: String,
    /// Singular resource name, e.g. `pod`.
    pub(crate) singular: String,
    /// Whether objects live in namespaces.
    pub(crate) namespaced: bool,
    /// Short names for kubectl, e.g. `po`.
    pub(crate) short_names: Vec<String>,
    /// Categories, e.g. `all`.
    pub(crate) categories: Vec<String>,
    /// Whether the `status` subresource is served.
    pub(crate) status: bool,
    /// The `scale` subresource, when served.
    pub(crate) scale: Option<ScalePaths>,
    /// Whether a CustomResourceDefinition defines it.
    pub(crate) custom: bool,
    /// For a custom resource, what its CRD says about each served version (schema, printer
    /// columns, deprecation); empty for built-ins.
    pub(crate) custom_versions: BTreeMap<String, Arc<CustomVersion>>,
    /// A custom resource's compiled structural schema per served version (empty for
    /// built-ins and versions without a schema).
    pub(crate) schemas: BTreeMap<String, Arc<VersionSchema>>,
    /// A custom resource's conversion webhook (`spec.conversion.strategy: Webhook`); `None`
    /// for built-ins and `None` conversion.
    pub(crate) conversion: Option<Arc<crate::conversion::WebhookConversion>>,
    /// A custom resource's storage version (`storage: true`); `None` for built-ins.
    pub(crate) storage_version: Option<String>,
}

impl ResourceDef {
    /// The storage key: the resource's own, or for a view of another resource's storage
    /// (events.k8s.io Events) that resource's.
    pub(crate) fn key(&self) -> ResKey {
        shared::storage_of(&self.group, &self.plural).unwrap_or_else(|| self.id())
    }

    /// The catalogue key: the resource's own group and plural.
    pub(crate) fn id(&self) -> ResKey {
        ResKey {
            group: self.group.clone(),
            plural: self.plural.clone(),
        }
    }

    /// Whether the resource serves another resource's storage (events.k8s.io Events).
    pub(crate) fn is_view(&self) -> bool {
        shared::storage_of(&self.group, &self.plural).is_some()
    }

    /// The `apiVersion` for `version` of this resource.
    pub(crate) fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    /// The kind of a list of these objects.
    pub(crate) fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// `plural.group` (or `plural` in the core group), as kube-apiserver names it in errors.
    pub(crate) fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// What the CRD says about serving `version` (`None` for built-ins).
    pub(crate) fn custom_version(&self, version: &str) -> Option<&CustomVersion> {
        self.custom_versions.get(version).map(Arc::as_ref)
    }

    /// The compiled schema of `version`, for custom resources that have one.
    pub(crate) fn schema(&self, version: &str) -> Option<&VersionSchema> {
        self.schemas.get(version).map(Arc::as_ref)
    }

    /// Whether `version` is served.
    pub(crate) fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }
}

/// All served resources; CRDs come and go at run time.
#[derive(Debug)]
pub(crate) struct Catalogue {
    inner: RwLock<HashMap<ResKey, Arc<ResourceDef>>>,
}

impl Catalogue {
    /// A catalogue of the built-in resources.
    pub(crate) fn new() -> Catalogue {
        let mut map = HashMap::new();
        for def in builtin_resources() {
            map.insert(def.id(), Arc::new(def));
        }
        Catalogue {
            inner: RwLock::new(map),
        }
    }

    /// The resource `plural` in `group` served at `version`.
    pub(crate) fn lookup(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<Arc<ResourceDef>> {
        let key = ResKey {
            group: group.to_string(),
            plural: plural.to_string(),
        };
        let def = self.inner.read().get(&key).cloned()?;
        def.serves(version).then_some(def)
    }

    /// The resource whose catalogue key is `key`, whatever its versions (a storage key
    /// names the resource that owns the storage, never a view of it).
    pub(crate) fn get(&self, key: &ResKey) -> Option<Arc<ResourceDef>> {
        self.inner.read().get(key).cloned()
    }

    /// Every served resource, sorted by group then plural.
    pub(crate) fn all(&self) -> Vec<Arc<ResourceDef>> {
        let mut out: Vec<Arc<ResourceDef>> = self.inner.read().values().cloned().collect();
        out.sort_by(|a, b| (&a.group, &a.plural).cmp(&(&b.group, &b.plural)));
        out
    }

    /// Adds or replaces a custom resource.
    pub(crate) fn insert_custom(&self, def: ResourceDef) {
        self.inner.write().insert(def.id(), Arc::new(def));
    }

    /// Removes a custom resource; built-ins are never removed.
    pub(crate) fn remove_custom(&self, key: &ResKey) {
        let mut inner = self.inner.write();
        if inner.get(key).is_some_and(|d| d.custom) {
            inner.remove(key);
        }
    }
}

/// Kubernetes version priority: GA before beta before alpha, higher numbers first, then others.
pub(crate) fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    version_rank(b).cmp(&version_rank(a)).then_with(|| a.cmp(b))
}

/// A sortable rank: (stability, major, minor); larger is preferred.
fn version_rank(v: &str) -> (u8, u32, u32) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let Ok(major) = digits.parse::<u32>() else {
        return (0, 0, 0);
    };
    let tail = &rest[digits.len()..];
    if tail.is_empty() {
        return (3, major, 0);
    }
    for (prefix, stability) in [("beta", 2u8), ("alpha", 1u8)] {
        if let Some(n) = tail.strip_prefix(prefix)
            && let Ok(minor) = n.parse::<u32>()
        {
            return (stability, major, minor);
        }
    }
    (0, 0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec!["v1alpha1", "v1", "v2beta1", "v1beta2", "v2", "foo"];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(v, ["v2", "v1", "v2beta1", "v1beta2", "v1alpha1", "foo"]);
    }

    #[test]
    fn catalogue_serves_core_and_apps() {
        let c = Catalogue::new();
        let pods = c.lookup("", "v1", "pods").expect("pods");
        assert!(pods.namespaced && pods.status);
        assert_eq!(pods.short_names, ["po"]);
        let deploy = c.lookup("apps", "v1", "deployments").expect("deployments");
        assert!(deploy.scale.is_some());
        assert!(!c.lookup("", "v1", "namespaces").expect("ns").namespaced);
        let hpa = c
            .lookup("autoscaling", "v1", "horizontalpodautoscalers")
            .expect("hpa");
        assert_eq!(hpa.versions[0], "v2");
        assert!(c.lookup("", "v2", "pods").is_none());
    }
}
