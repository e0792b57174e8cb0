//! The CustomResourceDefinition object as kube-apiserver treats it: defaulting and
//! validation on writes (`defaults`, `validate`, `field`), the names a CRD is granted and its
//! `NamesAccepted`/`Established` conditions (`names`), serving its resource while it is
//! established, and the deletion life cycle with the clean-up finalizer (`lifecycle`).

mod defaults;
mod field;
mod lifecycle;
mod names;
#[cfg(test)]
mod tests;
mod validate;

use std::sync::Arc;

use serde_json::{Value, json};

use super::meta::{self, meta_str};
use crate::openapi::CrdSchema;
use crate::resources::{Catalogue, ResKey, ResourceDef, ScalePaths, compare_versions};
use crate::status::ApiError;
use crate::store::Txn;

pub(crate) use lifecycle::{
    after_instance_removal, begin_delete, check_create_allowed, cleanup_step,
};

/// The finalizer a CRD is deleted with: its instances go first.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The group of the CustomResourceDefinition kind.
const GROUP: &str = "apiextensions.k8s.io";

/// The CustomResourceDefinition resource.
pub(crate) fn crds() -> ResKey {
    ResKey {
        group: GROUP.to_string(),
        plural: "customresourcedefinitions".to_string(),
    }
}

/// What the strategy does to a new CRD (after the generic create preparation, which has
/// cleared `status`): v1 defaults, `status.storedVersions`, then validation.
pub(crate) fn prepare_create(crd: &mut Value) -> Result<(), ApiError> {
    defaults::apply(crd);
    defaults::record_storage_version(crd);
    let errs = validate::create(crd);
    if errs.is_empty() {
        return Ok(());
    }
    Err(invalid(crd, &errs))
}

/// What the strategy does to a CRD being replaced by `new`: on the main resource v1
/// defaults, the storage version added to `status.storedVersions`, then update validation;
/// on `/status` the accepted names are checked.
pub(crate) fn prepare_update(
    new: &mut Value,
    old: &Value,
    status_only: bool,
) -> Result<(), ApiError> {
    let errs = if status_only {
        validate::status_update(new)
    } else {
        defaults::apply(new);
        defaults::record_storage_version(new);
        validate::update(new, old)
    };
    if errs.is_empty() {
        return Ok(());
    }
    Err(invalid(new, &errs))
}

/// The 422 answer for `errs` about `crd`.
fn invalid(crd: &Value, errs: &[field::FieldError]) -> ApiError {
    let name = meta_str(crd, "name").unwrap_or_default();
    field::invalid(GROUP, "CustomResourceDefinition", name, errs)
}

/// Works out the CRD's accepted names and conditions (the naming and establishing
/// controllers, run inside the write), writes them if they changed, and serves its resource
/// under the accepted names while it is established. Answers the CRD as stored after the
/// status write, if one was needed.
pub(crate) fn on_write(
    txn: &mut Txn<'_>,
    catalogue: &Catalogue,
    crd: &Arc<Value>,
) -> Option<Arc<Value>> {
    if meta::is_deleting(crd) {
        return None;
    }
    let others = txn.list(&crds(), None);
    let naming = names::decide(crd, &others);
    let mut updated = (**crd).clone();
    if !updated.get("status").is_some_and(Value::is_object) {
        updated["status"] = json!({});
    }
    updated["status"]["acceptedNames"] = naming.accepted.clone();
    let (status, reason, message) = &naming.names_accepted;
    names::set_condition(&mut updated, "NamesAccepted", status, reason, message);
    let (status, reason, message) = &naming.established;
    names::set_condition(&mut updated, "Established", status, reason, message);
    let stored = if updated == **crd {
        None
    } else {
        let key = (String::new(), meta_str(crd, "name")?.to_string());
        Some(txn.replace(&crds(), key, updated))
    };
    let current = stored.clone().unwrap_or_else(|| crd.clone());
    if naming.established.0 == "True"
        && let Some(def) = resource_def(&current)
    {
        catalogue.insert_custom(def);
    }
    stored
}

/// The CRD is gone: its resource is no longer served (instances left behind, as when its
/// finalizer was removed by hand, are deleted: watchers see DELETED events), and the other
/// CRDs of its group get another chance at the names it held.
pub(crate) fn on_remove(txn: &mut Txn<'_>, catalogue: &Catalogue, crd: &Value) {
    if let Some(def) = lifecycle::served_def(catalogue, crd) {
        let res = def.key();
        for obj in txn.list(&res, None) {
            let key = crate::store::object_key(&obj);
            txn.remove(&res, &key);
        }
        txn.drop_resource(&res);
        catalogue.remove_custom(&res);
    }
    let group = crd.pointer("/spec/group").and_then(Value::as_str);
    for other in txn.list(&crds(), None) {
        if other.pointer("/spec/group").and_then(Value::as_str) == group
            && !names::condition_true(&other, "NamesAccepted")
        {
            on_write(txn, catalogue, &other);
        }
    }
}

/// The OpenAPI schemas of every served CRD version, for the OpenAPI documents and validation.
pub(crate) fn crd_schemas(txn: &Txn<'_>) -> Vec<CrdSchema> {
    let mut out = Vec::new();
    for crd in txn.list(&crds(), None) {
        if !names::condition_true(&crd, "Established") {
            continue;
        }
        let Some(def) = resource_def(&crd) else {
            continue;
        };
        for version in crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if version.get("served").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            let Some(name) = version.get("name").and_then(Value::as_str) else {
                continue;
            };
            out.push(CrdSchema {
                group: def.group.clone(),
                version: name.to_string(),
                kind: def.kind.clone(),
                plural: def.plural.clone(),
                namespaced: def.namespaced,
                schema: version
                    .pointer("/schema/openAPIV3Schema")
                    .cloned()
                    .unwrap_or_else(
                        || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                    ),
                status: version.pointer("/subresources/status").is_some(),
                scale: version.pointer("/subresources/scale").is_some(),
            });
        }
    }
    out
}

/// The resource a CRD defines.
fn resource_def(crd: &Value) -> Option<ResourceDef> {
    let spec = crd.get("spec")?;
    let group = spec.get("group")?.as_str()?.to_string();
    let names = crd.pointer("/status/acceptedNames")?;
    let kind = names.get("kind")?.as_str()?.to_string();
    let plural = names.get("plural")?.as_str()?.to_string();
    let strings = |field: &str| -> Vec<String> {
        names
            .get(field)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let versions: Vec<&Value> = spec
        .get("versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
                .collect()
        })
        .unwrap_or_default();
    let mut version_names: Vec<String> = versions
        .iter()
        .filter_map(|v| v.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    version_names.sort_by(|a, b| compare_versions(a, b));
    let subresources = versions.first().and_then(|v| v.get("subresources"));
    let scale = subresources
        .and_then(|s| s.get("scale"))
        .map(|scale| ScalePaths {
            spec_replicas: json_path_to_pointer(
                scale
                    .get("specReplicasPath")
                    .and_then(Value::as_str)
                    .unwrap_or(".spec.replicas"),
            ),
            status_replicas: json_path_to_pointer(
                scale
                    .get("statusReplicasPath")
                    .and_then(Value::as_str)
                    .unwrap_or(".status.replicas"),
            ),
            label_selector: scale
                .get("labelSelectorPath")
                .and_then(Value::as_str)
                .map(json_path_to_pointer),
        });
    let conversion =
        crate::conversion::WebhookConversion::from_crd(&format!("{plural}.{group}"), spec);
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .map(str::to_string);
    Some(ResourceDef {
        conversion,
        storage_version,
        group,
        versions: version_names,
        singular: names
            .get("singular")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| kind.to_ascii_lowercase()),
        kind,
        plural,
        namespaced: spec.get("scope").and_then(Value::as_str) != Some("Cluster"),
        short_names: strings("shortNames"),
        categories: strings("categories"),
        status: subresources.and_then(|s| s.get("status")).is_some(),
        scale,
        custom: true,
        custom_versions: crate::resources::custom_versions(spec),
        schemas: versions
            .iter()
            .filter_map(|v| {
                let name = v.get("name").and_then(Value::as_str)?;
                let schema = v.pointer("/schema/openAPIV3Schema")?;
                Some((
                    name.to_string(),
                    Arc::new(crate::schema::VersionSchema::compile(schema)),
                ))
            })
            .collect(),
    })
}

/// `.spec.replicas` → `/spec/replicas`.
fn json_path_to_pointer(path: &str) -> String {
    path.split('.')
        .filter(|p| !p.is_empty())
        .fold(String::new(), |mut acc, p| {
            acc.push('/');
            acc.push_str(p);
            acc
        })
}
