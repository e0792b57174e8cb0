//! The `Scheme`: the two maps GVK → Rust type and Rust type → GVK, with constructors,
//! decoders and static REST mappings for every registered kind.

pub mod builtins;
mod error;
mod object;
mod rest_mapper;
#[cfg(test)]
mod tests;

use std::any::{TypeId, type_name};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube_core::{DynamicObject, Resource, discovery::ApiResource};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use error::Error;
pub use object::{AnyObject, downcast};
pub use rest_mapper::{RestMapper, RestMapping};

use crate::{GroupVersionKind, GroupVersionResource};

/// Where objects of a kind live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// In a namespace (`/namespaces/{ns}/{resource}`).
    Namespaced,
    /// Cluster-wide.
    Cluster,
    /// Only as the body of a sub-resource of another kind (`Scale`, `Eviction`).
    Subresource,
}

impl Scope {
    /// The scope of a Rust resource type, from its `Resource::Scope` marker (a marker other
    /// than namespaced or cluster, such as the dynamic one, reads as `Subresource`).
    pub fn of<K>() -> Self
    where
        K: Resource,
        K::Scope: 'static,
    {
        let scope_id = TypeId::of::<K::Scope>();
        if scope_id == TypeId::of::<NamespaceResourceScope>() {
            Self::Namespaced
        } else if scope_id == TypeId::of::<ClusterResourceScope>() {
            Self::Cluster
        } else {
            Self::Subresource
        }
    }
}

/// What the scheme knows about one registered kind.
#[derive(Clone)]
pub struct TypeInfo {
    gvk: GroupVersionKind,
    plural: String,
    scope: Scope,
    type_id: TypeId,
    type_name: &'static str,
    new_object: Arc<dyn Fn() -> Box<dyn AnyObject> + Send + Sync>,
    from_json: fn(serde_json::Value) -> Result<Box<dyn AnyObject>, serde_json::Error>,
}

impl fmt::Debug for TypeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypeInfo")
            .field("gvk", &self.gvk)
            .field("plural", &self.plural)
            .field("scope", &self.scope)
            .field("type_name", &self.type_name)
            .finish_non_exhaustive()
    }
}

impl TypeInfo {
    /// The kind.
    pub fn gvk(&self) -> &GroupVersionKind {
        &self.gvk
    }

    /// The plural resource name.
    pub fn plural(&self) -> &str {
        &self.plural
    }

    /// Where objects of this kind live.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The Rust type's `TypeId`.
    pub fn type_id(&self) -> TypeId {
        self.type_id
    }

    /// The Rust type's name, e.g. `k8s_openapi::api::core::v1::Pod`.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// A new empty object of this type (its `Default`).
    pub fn new_object(&self) -> Box<dyn AnyObject> {
        (self.new_object)()
    }

    /// Decodes JSON into this type.
    pub fn decode(&self, value: serde_json::Value) -> Result<Box<dyn AnyObject>, Error> {
        (self.from_json)(value).map_err(|source| Error::Decode {
            gvk: self.gvk.clone(),
            source,
        })
    }

    /// The kind's REST mapping; sub-resource kinds have none.
    pub fn rest_mapping(&self) -> Result<RestMapping, Error> {
        if self.scope == Scope::Subresource {
            return Err(Error::SubresourceOnly {
                gvk: self.gvk.clone(),
            });
        }
        Ok(RestMapping {
            gvk: self.gvk.clone(),
            gvr: GroupVersionResource::new(&self.gvk.group, &self.gvk.version, &self.plural),
            scope: self.scope,
        })
    }
}

/// The registry of known kinds (apimachinery's `runtime.Scheme`).
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use rein_scheme::{GroupVersionKind, Scheme, builtins};
///
/// let mut scheme = Scheme::new();
/// builtins::core_v1::add_to_scheme(&mut scheme);
/// assert_eq!(scheme.gvk_for::<Pod>().unwrap(), GroupVersionKind::new("", "v1", "Pod"));
/// assert!(Scheme::with_builtins().all_known_types().len() > 80);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Scheme {
    by_gvk: HashMap<GroupVersionKind, TypeInfo>,
    by_type: HashMap<TypeId, Vec<GroupVersionKind>>,
}

impl Scheme {
    /// An empty scheme.
    pub fn new() -> Self {
        Self::default()
    }

    /// A scheme holding every built-in k8s-openapi kind (what a manager uses when given none).
    pub fn with_builtins() -> Self {
        let mut scheme = Self::new();
        builtins::add_all_to_scheme(&mut scheme);
        scheme
    }

    /// Registers a Rust type under its own group/version/kind: any k8s-openapi type, or a
    /// custom resource type (`#[derive(CustomResource)]` with `#[kube(derive = "Default")]`).
    pub fn register<T>(&mut self) -> &mut Self
    where
        T: Resource<DynamicType = ()>
            + Default
            + Serialize
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
        T::Scope: 'static,
    {
        self.register_with_constructor::<T>(T::default)
    }

    /// Registers a Rust type that has no `Default`; `new` builds the empty object
    /// [`Scheme::new_object`] returns for its kind.
    pub fn register_with_constructor<T>(
        &mut self,
        new: impl Fn() -> T + Send + Sync + 'static,
    ) -> &mut Self
    where
        T: Resource<DynamicType = ()>
            + Serialize
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
        T::Scope: 'static,
    {
        let scope = Scope::of::<T>();
        let gvk = GroupVersionKind::new(T::group(&()), T::version(&()), T::kind(&()));
        let info = TypeInfo {
            gvk: gvk.clone(),
            plural: T::plural(&()).into_owned(),
            scope,
            type_id: TypeId::of::<T>(),
            type_name: type_name::<T>(),
            new_object: Arc::new(move || Box::new(new())),
            from_json: |value| Ok(Box::new(serde_json::from_value::<T>(value)?)),
        };
        self.insert(info);
        self
    }

    fn insert(&mut self, info: TypeInfo) {
        let gvk = info.gvk.clone();
        if let Some(old) = self.by_gvk.insert(gvk.clone(), info.clone())
            && let Some(gvks) = self.by_type.get_mut(&old.type_id)
        {
            gvks.retain(|g| g != &gvk);
        }
        let gvks = self.by_type.entry(info.type_id).or_default();
        if !gvks.contains(&gvk) {
            gvks.push(gvk);
        }
    }

    /// Adds every type another scheme knows (scheme composition, like `AddToScheme` chains).
    pub fn merge(&mut self, other: &Scheme) -> &mut Self {
        for info in other.by_gvk.values() {
            self.insert(info.clone());
        }
        self
    }

    /// The single kind `T` is registered as.
    pub fn gvk_for<T: 'static>(&self) -> Result<GroupVersionKind, Error> {
        let gvks = self.gvks_for::<T>();
        match gvks {
            [one] => Ok(one.clone()),
            [] => Err(Error::NotRegistered {
                type_name: type_name::<T>(),
            }),
            many => Err(Error::Ambiguous {
                type_name: type_name::<T>(),
                gvks: many.to_vec(),
            }),
        }
    }

    /// Every kind `T` is registered as.
    pub fn gvks_for<T: 'static>(&self) -> &[GroupVersionKind] {
        self.by_type
            .get(&TypeId::of::<T>())
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// The kind of an object: its own type information for dynamic objects, else the scheme's
    /// single registration of its Rust type.
    pub fn gvk_for_object(&self, obj: &dyn AnyObject) -> Result<GroupVersionKind, Error> {
        if let Some(gvk) = obj.own_gvk() {
            return Ok(gvk);
        }
        if obj.as_any().is::<DynamicObject>() {
            return Err(Error::MissingTypeMeta);
        }
        let id = obj.as_any().type_id();
        match self.by_type.get(&id).map(Vec::as_slice).unwrap_or_default() {
            [one] => Ok(one.clone()),
            [] => Err(Error::NotRegistered {
                type_name: "<unregistered object type>",
            }),
            many => Err(Error::Ambiguous {
                type_name: self
                    .by_gvk
                    .get(&many[0])
                    .map(|i| i.type_name)
                    .unwrap_or_default(),
                gvks: many.to_vec(),
            }),
        }
    }

    /// Whether `T` is registered.
    pub fn is_registered<T: 'static>(&self) -> bool {
        !self.gvks_for::<T>().is_empty()
    }

    /// Whether the kind has a registered Rust type.
    pub fn recognizes(&self, gvk: &GroupVersionKind) -> bool {
        self.by_gvk.contains_key(gvk)
    }

    /// What is known about a kind.
    pub fn type_info(&self, gvk: &GroupVersionKind) -> Result<&TypeInfo, Error> {
        self.by_gvk
            .get(gvk)
            .ok_or_else(|| Error::UnknownKind { gvk: gvk.clone() })
    }

    /// What is known about `T` (its single registration).
    pub fn type_info_for<T: 'static>(&self) -> Result<&TypeInfo, Error> {
        let gvk = self.gvk_for::<T>()?;
        self.type_info(&gvk)
    }

    /// Every registered kind, sorted by group, version and kind.
    pub fn all_known_types(&self) -> Vec<&TypeInfo> {
        let mut all: Vec<&TypeInfo> = self.by_gvk.values().collect();
        all.sort_by(|a, b| a.gvk.cmp(&b.gvk));
        all
    }

    /// A new empty object of a kind: the registered type when known, otherwise a
    /// `DynamicObject` carrying the kind.
    pub fn new_object(&self, gvk: &GroupVersionKind) -> Result<Box<dyn AnyObject>, Error> {
        if gvk.version.is_empty() || gvk.kind.is_empty() {
            return Err(Error::IncompleteKind { gvk: gvk.clone() });
        }
        if let Some(info) = self.by_gvk.get(gvk) {
            return Ok(info.new_object());
        }
        let resource = ApiResource::from_gvk(&gvk.clone().into());
        Ok(Box::new(DynamicObject::new("", &resource)))
    }

    /// Decodes JSON by its `apiVersion` and `kind`: typed when registered, else a
    /// `DynamicObject`.
    pub fn decode(&self, value: serde_json::Value) -> Result<Box<dyn AnyObject>, Error> {
        let api_version = value.get("apiVersion").and_then(|v| v.as_str());
        let kind = value.get("kind").and_then(|v| v.as_str());
        let (Some(api_version), Some(kind)) = (api_version, kind) else {
            return Err(Error::MissingTypeMeta);
        };
        let gvk = GroupVersionKind::from_api_version_kind(api_version, kind);
        if let Some(info) = self.by_gvk.get(&gvk) {
            return info.decode(value);
        }
        let obj: DynamicObject = serde_json::from_value(value).map_err(|source| Error::Decode {
            gvk: gvk.clone(),
            source,
        })?;
        Ok(Box::new(obj))
    }

    /// Decodes JSON bytes; malformed JSON is an [`Error::Decode`].
    pub fn decode_bytes(&self, bytes: &[u8]) -> Result<Box<dyn AnyObject>, Error> {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|source| Error::Decode {
                gvk: GroupVersionKind::default(),
                source,
            })?;
        self.decode(value)
    }

    /// The static REST mapping of a registered kind.
    pub fn rest_mapping(&self, gvk: &GroupVersionKind) -> Result<RestMapping, Error> {
        self.type_info(gvk)?.rest_mapping()
    }

    /// Whether objects of type `T` live in namespaces.
    pub fn is_namespaced<T: 'static>(&self) -> Result<bool, Error> {
        Ok(self.type_info_for::<T>()?.scope == Scope::Namespaced)
    }

    /// A REST mapper seeded with this scheme's mappings.
    pub fn rest_mapper(&self) -> RestMapper {
        RestMapper::from_scheme(self)
    }
}
