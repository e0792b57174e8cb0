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
    let mut scale = to_scale(def, parent)?;
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

/// The Scale object for `obj`.
pub(crate) fn to_scale(def: &ResourceDef, obj: &Value) -> Result<Value, ApiError> {
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
    let replicas = obj
        .pointer(&paths.spec_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(1);
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
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": replicas},
        "status": status,
    }))
}

/// `current` with the replicas from the Scale `scale`, carrying its resourceVersion.
pub(crate) fn apply_scale(
    def: &ResourceDef,
    current: &Value,
    scale: &Value,
) -> Result<Value, ApiError> {
    let paths = def.scale.as_ref().ok_or_else(ApiError::no_route)?;
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .ok_or_else(|| ApiError::invalid(def, "", "spec.replicas", "Required value"))?;
    if replicas < 0 {
        return Err(ApiError::invalid(
            def,
            "",
            "spec.replicas",
            &format!("Invalid value: {replicas}: must be greater than or equal to 0"),
        ));
    }
    let mut updated = current.clone();
    let pointer = paths.spec_replicas.trim_start_matches('/');
    let mut cursor = &mut updated;
    let parts: Vec<&str> = pointer.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        if !cursor.is_object() {
            *cursor = json!({});
        }
        let obj = cursor.as_object_mut().expect("made an object above");
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
