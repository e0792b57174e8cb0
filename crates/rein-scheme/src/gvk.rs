//! Group/version/kind and group/version/resource identifiers.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An API group and version, e.g. `apps/v1`, or `v1` for the core group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupVersion {
    /// The API group (`""` for core).
    pub group: String,
    /// The version, e.g. `v1`.
    pub version: String,
}

impl GroupVersion {
    /// A group and version.
    pub fn new(group: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
        }
    }

    /// Splits an `apiVersion` string (`"apps/v1"` or `"v1"`).
    pub fn parse_api_version(api_version: &str) -> Self {
        match api_version.split_once('/') {
            Some((group, version)) => Self::new(group, version),
            None => Self::new("", api_version),
        }
    }

    /// The `apiVersion` string: `"group/version"`, or `"version"` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// This group/version with a kind.
    pub fn with_kind(&self, kind: impl Into<String>) -> GroupVersionKind {
        GroupVersionKind::new(&self.group, &self.version, kind)
    }

    /// This group/version with a resource.
    pub fn with_resource(&self, resource: impl Into<String>) -> GroupVersionResource {
        GroupVersionResource::new(&self.group, &self.version, resource)
    }
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.api_version())
    }
}

/// A group, version and kind: names a type of object, e.g. `apps/v1, Kind=Deployment`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// The API group (`""` for core).
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind, e.g. `Deployment`.
    pub kind: String,
}

impl GroupVersionKind {
    /// A group, version and kind.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// From an object's `apiVersion` and `kind` fields.
    pub fn from_api_version_kind(api_version: &str, kind: impl Into<String>) -> Self {
        GroupVersion::parse_api_version(api_version).with_kind(kind)
    }

    /// The GVK of a k8s-openapi (or `CustomResource`-derived) type.
    pub fn of<K: k8s_openapi::Resource>() -> Self {
        Self::new(K::GROUP, K::VERSION, K::KIND)
    }

    /// The group and version.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(&self.group, &self.version)
    }

    /// The `apiVersion` string.
    pub fn api_version(&self) -> String {
        self.group_version().api_version()
    }

    /// The same group and version with the kind's `List` suffix removed, if it has one.
    pub fn item_kind(&self) -> Option<Self> {
        self.kind
            .strip_suffix("List")
            .filter(|k| !k.is_empty())
            .map(|k| Self::new(&self.group, &self.version, k))
    }
}

impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, Kind={}", self.api_version(), self.kind)
    }
}

impl From<kube_core::GroupVersionKind> for GroupVersionKind {
    fn from(g: kube_core::GroupVersionKind) -> Self {
        Self::new(g.group, g.version, g.kind)
    }
}

impl From<GroupVersionKind> for kube_core::GroupVersionKind {
    fn from(g: GroupVersionKind) -> Self {
        kube_core::GroupVersionKind::gvk(&g.group, &g.version, &g.kind)
    }
}

/// A group, version and resource: names an HTTP collection, e.g. `apps/v1, Resource=deployments`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupVersionResource {
    /// The API group (`""` for core).
    pub group: String,
    /// The version.
    pub version: String,
    /// The plural resource name, e.g. `deployments`.
    pub resource: String,
}

impl GroupVersionResource {
    /// A group, version and resource.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    /// The GVR of a k8s-openapi (or `CustomResource`-derived) type.
    pub fn of<K: k8s_openapi::Resource>() -> Self {
        Self::new(K::GROUP, K::VERSION, K::URL_PATH_SEGMENT)
    }

    /// The group and version.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(&self.group, &self.version)
    }

    /// The `apiVersion` string.
    pub fn api_version(&self) -> String {
        self.group_version().api_version()
    }
}

impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, Resource={}", self.api_version(), self.resource)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};

    use super::*;

    #[test]
    fn api_versions() {
        assert_eq!(GroupVersionKind::of::<Pod>().api_version(), "v1");
        assert_eq!(
            GroupVersionKind::of::<Deployment>().to_string(),
            "apps/v1, Kind=Deployment"
        );
        assert_eq!(
            GroupVersionResource::of::<Deployment>().to_string(),
            "apps/v1, Resource=deployments"
        );
        let gv = GroupVersion::parse_api_version("apps/v1");
        assert_eq!(gv, GroupVersion::new("apps", "v1"));
        assert_eq!(GroupVersion::parse_api_version("v1").group, "");
    }

    #[test]
    fn list_kinds_strip_to_item_kinds() {
        let list = GroupVersionKind::new("", "v1", "PodList");
        assert_eq!(list.item_kind().unwrap().kind, "Pod");
        assert!(
            GroupVersionKind::new("", "v1", "List")
                .item_kind()
                .is_none()
        );
        assert!(GroupVersionKind::of::<Pod>().item_kind().is_none());
    }
}
