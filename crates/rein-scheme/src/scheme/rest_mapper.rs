//! `RestMapper`: GVK → GVR and scope, seeded from a scheme and extended from discovery.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use super::{Error, Scheme, Scope};
use crate::{GroupVersionKind, GroupVersionResource};

/// How one kind is served over REST.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RestMapping {
    /// The kind.
    pub gvk: GroupVersionKind,
    /// The resource collection serving it.
    pub gvr: GroupVersionResource,
    /// Whether it lives in namespaces.
    pub scope: Scope,
}

impl RestMapping {
    /// Whether objects of this kind live in namespaces.
    pub fn is_namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    /// This mapping as kube-core's `ApiResource`, for dynamic API calls.
    pub fn api_resource(&self) -> kube_core::discovery::ApiResource {
        kube_core::discovery::ApiResource {
            group: self.gvk.group.clone(),
            version: self.gvk.version.clone(),
            api_version: self.gvk.api_version(),
            kind: self.gvk.kind.clone(),
            plural: self.gvr.resource.clone(),
        }
    }
}

/// A shared, growable table of REST mappings (apimachinery's `RESTMapper`).
///
/// Mappings for the scheme's types are known statically; a discovery client adds the rest with
/// [`RestMapper::add`] (rein-client's discovery-backed mapper does this on a miss).
#[derive(Debug, Clone, Default)]
pub struct RestMapper {
    inner: Arc<RwLock<Mappings>>,
}

#[derive(Debug, Default)]
struct Mappings {
    by_gvk: HashMap<GroupVersionKind, RestMapping>,
    by_gvr: HashMap<GroupVersionResource, GroupVersionKind>,
}

impl RestMapper {
    /// An empty mapper.
    pub fn new() -> Self {
        Self::default()
    }

    /// A mapper holding a mapping for every REST-served kind in the scheme.
    pub fn from_scheme(scheme: &Scheme) -> Self {
        let mapper = Self::new();
        for info in scheme.all_known_types() {
            if let Ok(mapping) = info.rest_mapping() {
                mapper.add(mapping);
            }
        }
        mapper
    }

    /// Adds or replaces a mapping.
    pub fn add(&self, mapping: RestMapping) {
        let mut inner = self.inner.write();
        inner
            .by_gvr
            .insert(mapping.gvr.clone(), mapping.gvk.clone());
        inner.by_gvk.insert(mapping.gvk.clone(), mapping);
    }

    /// The mapping for a kind.
    pub fn mapping(&self, gvk: &GroupVersionKind) -> Result<RestMapping, Error> {
        self.inner
            .read()
            .by_gvk
            .get(gvk)
            .cloned()
            .ok_or_else(|| Error::UnknownKind { gvk: gvk.clone() })
    }

    /// The kind served by a resource collection.
    pub fn kind_for(&self, gvr: &GroupVersionResource) -> Option<GroupVersionKind> {
        self.inner.read().by_gvr.get(gvr).cloned()
    }

    /// Every mapping, sorted by kind.
    pub fn mappings(&self) -> Vec<RestMapping> {
        let mut all: Vec<_> = self.inner.read().by_gvk.values().cloned().collect();
        all.sort_by(|a, b| a.gvk.cmp(&b.gvk));
        all
    }
}
