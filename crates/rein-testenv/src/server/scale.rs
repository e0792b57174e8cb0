//! The `scale` subresource: an `autoscaling/v1` Scale view of a workload's replicas, and
//! writes through it (update, patch, apply) with managedFields mapped between the Scale and
//! its parent as kube-apiserver's `ScaleHandler` maps them.

use serde_json::{Map, Value, json};

use crate::patch::{self, Gvk};
use crate::resources::ResourceDef;
use crate::status::ApiError;

/// The GVK every Scale is served as.
pub(crate) fn scale_gvk() -> Gvk {
    Gvk::new("autoscaling", "v1", "Scale")
}

/// The Scale of `parent` with the managedFields a write to it starts from: the parent's
/// entries that own the replicas, as owners of `spec.replicas`.
pub(crate) fn view(def: &ResourceDef, parent: &Value) -> Result<Value, ApiError> {
    let paths = def.scale.as_ref().ok_or_else(ApiError::no_route)?;
    let (mut scale, found) = scale_of(def, parent)?;
    if def.custom && !found {
        scale["spec"]["replicas"] = json!(UNSET_REPLICAS);
    }
    let entries = patch::scale_entries(parent, &patch::scale_pointer_path(&paths.spec_replicas));
    if entries.as_array().is_some_and(|e| !e.is_empty()) {
        scale["metadata"]["managedFields"] = entries;
    }
    Ok(scale)
}

/// `parent` after the write `written` (a Scale carrying the managedFields the write left):
/// the new replicas, the Scale's resourceVersion precondition, and the replicas' ownership
/// carried back to the parent's entries (recorded at `api_version`).
pub(crate) fn write_back(
    def: &ResourceDef,
    parent: &Value,
    written: &Value,
    api_version: &str,
) -> Result<Value, ApiError> {
    let paths = def.scale.as_ref().ok_or_else(ApiError::no_route)?;
    let replicas = patch::scale_pointer_path(&paths.spec_replicas);
    let mut updated = apply_scale(def, parent, written)?;
    let entries = patch::scale_parent_entries(parent, written, &replicas, api_version);
    if let Some(meta) = updated.get_mut("metadata").and_then(Value::as_object_mut) {
        if entries.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".to_string(), Value::Array(entries));
        }
    }
    Ok(updated)
}

/// What an unset desired replica count reads as in the Scale a write starts from: the
/// smallest int32, kube-apiserver's marker for "the parent had none".
const UNSET_REPLICAS: i64 = i32::MIN as i64;

/// The Scale object for `obj`. A custom resource without a value at its `specReplicasPath`
/// has no Scale to read: 500, as kube-apiserver answers.
pub(crate) fn to_scale(def: &ResourceDef, obj: &Value) -> Result<Value, ApiError> {
    let (scale, found) = scale_of(def, obj)?;
    if def.custom && !found {
        let paths = def.scale.as_ref().ok_or_else(ApiError::no_route)?;
        let message = format!(
            "the spec replicas field {:?} does not exist",
            json_path(&paths.spec_replicas)
        );
        return Err(ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
        .with_details(json!({"causes": [{"message": message}]})));
    }
    Ok(scale)
}

/// The Scale of `obj` and whether its desired replicas were set (unset reads as 0 for a
/// custom resource, as 1 for a built-in workload, whose defaulting always sets it).
fn scale_of(def: &ResourceDef, obj: &Value) -> Result<(Value, bool), ApiError> {
    let paths = def.scale.as_ref().ok_or_else(ApiError::no_route)?;
    let meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut scale_meta = Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(field) {
            scale_meta.insert(field.to_string(), v.clone());
        }
    }
    let desired = obj.pointer(&paths.spec_replicas).and_then(Value::as_i64);
    let replicas = desired.unwrap_or(if def.custom { 0 } else { 1 });
    let status_replicas = obj
        .pointer(&paths.status_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut status = json!({"replicas": status_replicas});
    if let Some(sel_path) = &paths.label_selector
        && let Some(selector) = obj.pointer(sel_path)
    {
        let text = match selector {
            Value::String(s) => s.clone(),
            other => selector_string(other),
        };
        if !text.is_empty() {
            status["selector"] = json!(text);
        }
    }
    let scale = json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": replicas},
        "status": status,
    });
    Ok((scale, desired.is_some()))
}

/// `current` with the replicas from the Scale `scale`, carrying its resourceVersion. A Scale
/// without `spec.replicas` asks for 0 (the field's zero value), as kube-apiserver decodes it.
pub(crate) fn apply_scale(
    def: &ResourceDef,
    current: &Value,
    scale: &Value,
) -> Result<Value, ApiError> {
    let paths = def.scale.as_ref().ok_or_else(ApiError::no_route)?;
    let replicas = match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(value) => value.as_i64().ok_or_else(|| {
            ApiError::bad_request(format!(
                "decoding the Scale: spec.replicas: expected an integer, got {value}"
            ))
        })?,
    };
    if replicas == UNSET_REPLICAS {
        return Err(ApiError::bad_request(format!(
            "the spec replicas field {:?} cannot be empty",
            json_path(&paths.spec_replicas)
        )));
    }
    if !(0..=i64::from(i32::MAX)).contains(&replicas) {
        let name = scale
            .pointer("/metadata/name")
            .or_else(|| current.pointer("/metadata/name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Err(invalid_scale(name, replicas));
    }
    let mut updated = current.clone();
    let pointer = paths.spec_replicas.trim_start_matches('/');
    let mut cursor = &mut updated;
    let parts: Vec<&str> = pointer.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        if !cursor.is_object() {
            *cursor = json!({});
        }
        let Some(obj) = cursor.as_object_mut() else {
            break;
        };
        if i + 1 == parts.len() {
            obj.insert(part.to_string(), json!(replicas));
            break;
        }
        cursor = obj.entry(part.to_string()).or_insert_with(|| json!({}));
    }
    if let Some(rv) = scale.pointer("/metadata/resourceVersion") {
        updated["metadata"]["resourceVersion"] = rv.clone();
    }
    Ok(updated)
}

/// kube-apiserver's answer to a Scale asking for negative (or more than int32) replicas.
fn invalid_scale(name: &str, replicas: i64) -> ApiError {
    let why = if replicas < 0 {
        format!("Invalid value: {replicas}: must be greater than or equal to 0")
    } else {
        format!("Invalid value: {replicas}: must be no more than 2147483647")
    };
    ApiError::new(
        422,
        "Invalid",
        format!("Scale.autoscaling {name:?} is invalid: spec.replicas: {why}"),
    )
    .with_details(json!({
        "name": name,
        "group": "autoscaling",
        "kind": "Scale",
        "causes": [{"reason": "FieldValueInvalid", "message": why, "field": "spec.replicas"}],
    }))
}

/// `/spec/replicas` → `.spec.replicas`, the CRD's notation.
fn json_path(pointer: &str) -> String {
    pointer.replace('/', ".")
}

/// A `LabelSelector` object as selector text (`a=b,c in (d)`).
fn selector_string(selector: &Value) -> String {
    let mut terms = Vec::new();
    let structured =
        selector.get("matchLabels").is_some() || selector.get("matchExpressions").is_some();
    if !structured && let Some(labels) = selector.as_object() {
        for (k, v) in labels {
            terms.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
        return terms.join(",");
    }
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            terms.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    if let Some(exprs) = selector.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|vs| vs.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default()
            {
                "In" => terms.push(format!("{key} in ({})", values.join(","))),
                "NotIn" => terms.push(format!("{key} notin ({})", values.join(","))),
                "Exists" => terms.push(key.to_string()),
                "DoesNotExist" => terms.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    terms.join(",")
}
