//! Owner and controller references, filled from the scheme; see the `mapping_handlers` example.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_client::Resource;
use rein_scheme::{AnyObject, GroupVersion, GroupVersionKind, Scheme};

use crate::Error;

/// Options for [`set_controller_reference_with`].
#[derive(Debug, Clone, Copy)]
pub struct ControllerReferenceOptions {
    /// Set `blockOwnerDeletion` (default true).
    pub block_owner_deletion: bool,
}

impl Default for ControllerReferenceOptions {
    fn default() -> Self {
        Self {
            block_owner_deletion: true,
        }
    }
}

/// Adds (or replaces) an owner reference to `owner` on `obj`, its kind taken from the scheme.
pub fn set_owner_reference<O: AnyObject, K: Resource>(
    owner: &O,
    obj: &mut K,
    scheme: &Scheme,
) -> Result<(), Error> {
    let reference = reference_to(owner, obj, scheme, "setting an owner reference")?;
    upsert(obj, reference);
    Ok(())
}

/// Makes `owner` the controller of `obj` (`controller: true`, `blockOwnerDeletion: true`).
///
/// Fails with [`Error::AlreadyOwned`] if another object already controls `obj`.
pub fn set_controller_reference<O: AnyObject, K: Resource>(
    owner: &O,
    obj: &mut K,
    scheme: &Scheme,
) -> Result<(), Error> {
    set_controller_reference_with(owner, obj, scheme, ControllerReferenceOptions::default())
}

/// [`set_controller_reference`] with options.
pub fn set_controller_reference_with<O: AnyObject, K: Resource>(
    owner: &O,
    obj: &mut K,
    scheme: &Scheme,
    options: ControllerReferenceOptions,
) -> Result<(), Error> {
    let mut reference = reference_to(owner, obj, scheme, "setting the controller reference")?;
    reference.controller = Some(true);
    reference.block_owner_deletion = Some(options.block_owner_deletion);
    if let Some(existing) = obj
        .meta()
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        && !same_object(existing, &reference)
    {
        return Err(Error::AlreadyOwned {
            object: object_name(obj),
            owner_kind: existing.kind.clone(),
            owner_name: existing.name.clone(),
        });
    }
    upsert(obj, reference);
    Ok(())
}

/// Removes the owner reference to `owner`; returns whether one was removed.
pub fn remove_owner_reference<O: AnyObject, K: Resource>(
    owner: &O,
    obj: &mut K,
    scheme: &Scheme,
) -> Result<bool, Error> {
    let gvk = scheme
        .gvk_for_object(owner)
        .map_err(|source| Error::Scheme {
            action: "removing an owner reference".into(),
            source,
        })?;
    let name = owner.meta().name.clone().unwrap_or_default();
    let Some(refs) = obj.meta_mut().owner_references.as_mut() else {
        return Ok(false);
    };
    let before = refs.len();
    refs.retain(|r| !refers_to(r, &gvk, &name));
    Ok(refs.len() != before)
}

/// Removes the controller reference, whoever it points at; returns whether one was removed.
pub fn remove_controller_reference<K: Resource>(obj: &mut K) -> bool {
    let Some(refs) = obj.meta_mut().owner_references.as_mut() else {
        return false;
    };
    let before = refs.len();
    refs.retain(|r| r.controller != Some(true));
    refs.len() != before
}

/// Whether `obj` has a controller reference.
pub fn has_controller_reference<K: Resource>(obj: &K) -> bool {
    obj.meta()
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true))
}

/// Whether `obj` has an owner reference to `owner`.
pub fn has_owner_reference<O: AnyObject, K: Resource>(
    owner: &O,
    obj: &K,
    scheme: &Scheme,
) -> Result<bool, Error> {
    let gvk = scheme
        .gvk_for_object(owner)
        .map_err(|source| Error::Scheme {
            action: "looking for an owner reference".into(),
            source,
        })?;
    let name = owner.meta().name.clone().unwrap_or_default();
    Ok(obj
        .meta()
        .owner_references
        .iter()
        .flatten()
        .any(|r| refers_to(r, &gvk, &name)))
}

fn object_name<K: Resource>(obj: &K) -> String {
    let meta = obj.meta();
    match (&meta.namespace, &meta.name) {
        (Some(ns), Some(n)) => format!("{ns}/{n}"),
        (None, Some(n)) => n.clone(),
        _ => "(unnamed object)".into(),
    }
}

fn reference_to<O: AnyObject, K: Resource>(
    owner: &O,
    obj: &K,
    scheme: &Scheme,
    action: &str,
) -> Result<OwnerReference, Error> {
    let invalid = |problem: &str| Error::InvalidInput {
        action: format!("{action} on {}", object_name(obj)),
        problem: problem.to_owned(),
    };
    let owner_ns = owner.meta().namespace.clone().unwrap_or_default();
    if !owner_ns.is_empty() {
        let obj_ns = obj.meta().namespace.clone().unwrap_or_default();
        if obj_ns.is_empty() {
            return Err(invalid(
                "a cluster-scoped object must not have a namespace-scoped owner",
            ));
        }
        if obj_ns != owner_ns {
            return Err(invalid("cross-namespace owner references are disallowed"));
        }
    }
    let gvk = scheme
        .gvk_for_object(owner)
        .map_err(|source| Error::Scheme {
            action: format!("{action} on {}", object_name(obj)),
            source,
        })?;
    let name = owner.meta().name.clone().unwrap_or_default();
    let uid = owner.meta().uid.clone().unwrap_or_default();
    if name.is_empty() || uid.is_empty() {
        return Err(invalid(
            "the owner has no name or uid yet (create it first)",
        ));
    }
    Ok(OwnerReference {
        api_version: gvk.api_version(),
        kind: gvk.kind,
        name,
        uid,
        controller: None,
        block_owner_deletion: None,
    })
}

/// Same group, kind and name (the version is ignored, as in controller-runtime).
fn same_object(a: &OwnerReference, b: &OwnerReference) -> bool {
    GroupVersion::parse_api_version(&a.api_version).group
        == GroupVersion::parse_api_version(&b.api_version).group
        && a.kind == b.kind
        && a.name == b.name
}

fn refers_to(r: &OwnerReference, gvk: &GroupVersionKind, name: &str) -> bool {
    GroupVersion::parse_api_version(&r.api_version).group == gvk.group
        && r.kind == gvk.kind
        && r.name == name
}

fn upsert<K: Resource>(obj: &mut K, reference: OwnerReference) {
    let refs = obj.meta_mut().owner_references.get_or_insert_with(Vec::new);
    match refs.iter_mut().find(|r| same_object(r, &reference)) {
        Some(existing) => *existing = reference,
        None => refs.push(reference),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use kube_client::core::ObjectMeta;

    use super::*;

    fn meta(ns: Option<&str>, name: &str, uid: &str) -> ObjectMeta {
        ObjectMeta {
            namespace: ns.map(str::to_owned),
            name: Some(name.into()),
            uid: Some(uid.into()),
            ..Default::default()
        }
    }

    #[test]
    fn controller_reference_is_filled_from_the_scheme() {
        let scheme = Scheme::with_builtins();
        let owner = Deployment {
            metadata: meta(Some("ns"), "web", "u1"),
            ..Default::default()
        };
        let mut rs = ReplicaSet {
            metadata: meta(Some("ns"), "web-1", "u2"),
            ..Default::default()
        };
        set_controller_reference(&owner, &mut rs, &scheme).unwrap();
        let refs = rs.metadata.owner_references.clone().unwrap();
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].api_version, "apps/v1");
        assert_eq!(refs[0].kind, "Deployment");
        assert_eq!(refs[0].uid, "u1");
        assert_eq!(refs[0].controller, Some(true));
        assert_eq!(refs[0].block_owner_deletion, Some(true));
        // Idempotent upsert.
        set_controller_reference(&owner, &mut rs, &scheme).unwrap();
        assert_eq!(rs.metadata.owner_references.as_ref().unwrap().len(), 1);
        assert!(has_controller_reference(&rs));
        assert!(has_owner_reference(&owner, &rs, &scheme).unwrap());

        let other = Deployment {
            metadata: meta(Some("ns"), "other", "u3"),
            ..Default::default()
        };
        let err = set_controller_reference(&other, &mut rs, &scheme).unwrap_err();
        assert!(matches!(err, Error::AlreadyOwned { ref owner_name, .. } if owner_name == "web"));
        // A plain owner reference is still allowed.
        set_owner_reference(&other, &mut rs, &scheme).unwrap();
        assert_eq!(rs.metadata.owner_references.as_ref().unwrap().len(), 2);
        assert!(remove_owner_reference(&other, &mut rs, &scheme).unwrap());
        assert!(remove_controller_reference(&mut rs));
        assert!(!has_controller_reference(&rs));
    }

    #[test]
    fn namespace_rules_and_unregistered_owners() {
        let scheme = Scheme::with_builtins();
        let owner = Pod {
            metadata: meta(Some("a"), "p", "u"),
            ..Default::default()
        };
        let mut other_ns = Pod {
            metadata: meta(Some("b"), "q", "v"),
            ..Default::default()
        };
        assert!(matches!(
            set_owner_reference(&owner, &mut other_ns, &scheme),
            Err(Error::InvalidInput { .. })
        ));
        let mut cluster = Namespace {
            metadata: meta(None, "n", "w"),
            ..Default::default()
        };
        assert!(matches!(
            set_owner_reference(&owner, &mut cluster, &scheme),
            Err(Error::InvalidInput { .. })
        ));
        // A cluster-scoped owner may own a namespaced object.
        let ns_owner = Namespace {
            metadata: meta(None, "n", "w"),
            ..Default::default()
        };
        set_owner_reference(&ns_owner, &mut other_ns, &scheme).unwrap();

        let empty = Scheme::new();
        let mut same_ns = Pod {
            metadata: meta(Some("a"), "q", "v"),
            ..Default::default()
        };
        assert!(matches!(
            set_owner_reference(&owner, &mut same_ns, &empty),
            Err(Error::Scheme { .. })
        ));
    }
}
