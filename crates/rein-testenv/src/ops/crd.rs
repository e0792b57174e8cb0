//! The CustomResourceDefinition life cycle: serving a CRD's resources once it is written,
//! setting its `NamesAccepted`/`Established` conditions, and tearing it down on removal.

use std::sync::Arc;

use serde_json::{Value, json};

use super::meta::{self, meta_str};
use crate::openapi::CrdSchema;
use crate::resources::{Catalogue, ResKey, ResourceDef, ScalePaths, compare_versions};
use crate::store::Txn;

/// Registers (or re-registers) the CRD's resource and sets its status conditions.
/// Answers the CRD as stored after the status write, if one was needed.
pub(crate) fn on_write(
    txn: &mut Txn<'_>,
    catalogue: &Catalogue,
    crd: &Arc<Value>,
) -> Option<Arc<Value>> {
    if meta::is_deleting(crd) {
        return None;
    }
    let def = resource_def(crd)?;
    let storage_version = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .and_then(|v| v.get("name").and_then(Value::as_str))
        })
        .unwrap_or_else(|| def.versions.first().map(String::as_str).unwrap_or("v1"))
        .to_string();
    catalogue.insert_custom(def);
    let names = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut accepted = names.clone();
    if accepted.get("singular").is_none()
        && let Some(kind) = names.get("kind").and_then(Value::as_str)
    {
        accepted["singular"] = json!(kind.to_ascii_lowercase());
    }
    if accepted.get("listKind").is_none()
        && let Some(kind) = names.get("kind").and_then(Value::as_str)
    {
        accepted["listKind"] = json!(format!("{kind}List"));
    }
    let mut stored_versions: Vec<Value> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !stored_versions
        .iter()
        .any(|v| v.as_str() == Some(storage_version.as_str()))
    {
        stored_versions.push(json!(storage_version));
    }
    let already = crd.pointer("/status/acceptedNames") == Some(&accepted)
        && crd.pointer("/status/storedVersions") == Some(&Value::Array(stored_versions.clone()))
        && condition_true(crd, "Established");
    if already {
        return None;
    }
    let now = meta::now();
    let condition = |kind: &str, reason: &str, message: &str| {
        json!({
            "type": kind,
            "status": "True",
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        })
    };
    let mut updated = (**crd).clone();
    updated["status"] = json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": accepted,
        "storedVersions": stored_versions,
    });
    let key = (String::new(), meta_str(crd, "name")?.to_string());
    let res = ResKey {
        group: "apiextensions.k8s.io".to_string(),
        plural: "customresourcedefinitions".to_string(),
    };
    Some(txn.replace(&res, key, updated))
}

/// Stops serving the CRD's resource; its objects are deleted (watchers see DELETED events).
pub(crate) fn on_remove(txn: &mut Txn<'_>, catalogue: &Catalogue, crd: &Value) {
    let Some(def) = resource_def(crd) else { return };
    let res = def.key();
    if catalogue.get(&res).is_none_or(|d| !d.custom) {
        return;
    }
    for obj in txn.list(&res, None) {
        let key = crate::store::object_key(&obj);
        txn.remove(&res, &key);
    }
    txn.drop_resource(&res);
    catalogue.remove_custom(&res);
}

/// The OpenAPI schemas of every served CRD version, for the OpenAPI documents and validation.
pub(crate) fn crd_schemas(txn: &Txn<'_>) -> Vec<CrdSchema> {
    let res = ResKey {
        group: "apiextensions.k8s.io".to_string(),
        plural: "customresourcedefinitions".to_string(),
    };
    let mut out = Vec::new();
    for crd in txn.list(&res, None) {
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
    let names = spec.get("names")?;
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
    Some(ResourceDef {
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
    })
}

fn condition_true(obj: &Value, kind: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(kind)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
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
