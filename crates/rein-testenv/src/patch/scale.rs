//! managedFields across the `scale` subresource, as kube-apiserver's `ScaleHandler` maps
//! them: a Scale shows who owns the parent's replicas (as `spec.replicas`), and what an apply
//! to the Scale changes about that ownership is carried back to the parent's entries.

use serde_json::{Value, json};

use super::fieldset::{FieldPath, FieldSet};

/// `spec.replicas` inside a Scale.
fn scale_replicas() -> FieldPath {
    vec!["f:spec".to_string(), "f:replicas".to_string()]
}

/// The `FieldsV1` path of a JSON pointer (`/spec/replicas` → `f:spec`, `f:replicas`).
pub(crate) fn pointer_path(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .filter(|p| !p.is_empty())
        .map(|p| format!("f:{p}"))
        .collect()
}

/// The managedFields of the Scale view of `parent`: each parent entry owning `replicas` (the
/// parent's replicas path), reduced to `spec.replicas` at `autoscaling/v1`.
pub(crate) fn scale_entries(parent: &Value, replicas: &[String]) -> Value {
    let entries = parent
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|entry| fields(entry).contains(replicas))
        .map(|entry| {
            let mut scaled = entry.clone();
            let mut set = FieldSet::default();
            set.insert(&scale_replicas());
            scaled["apiVersion"] = json!("autoscaling/v1");
            scaled["fieldsV1"] = set.into_fields_v1();
            scaled
        })
        .collect();
    Value::Array(entries)
}

/// The parent's managedFields after a write to its Scale: a parent entry that owned the
/// replicas and is gone from the Scale's entries loses them (and goes if nothing is left);
/// a Scale entry owning `spec.replicas` that the parent did not have becomes a parent entry
/// owning the replicas path at `api_version`.
pub(crate) fn parent_entries(
    parent: &Value,
    scale: &Value,
    replicas: &[String],
    api_version: &str,
) -> Vec<Value> {
    let parent_list: Vec<&Value> = list(parent);
    let mut scale_list: Vec<&Value> = list(scale);
    let mut out = Vec::new();
    for entry in parent_list {
        let mut set = fields(entry);
        if !set.contains(replicas) {
            out.push(entry.clone());
            continue;
        }
        match scale_list.iter().position(|s| same_manager(s, entry)) {
            Some(index) => {
                scale_list.remove(index);
                out.push(entry.clone());
            }
            None => {
                set.remove(replicas);
                if !set.is_empty() {
                    let mut kept = entry.clone();
                    kept["fieldsV1"] = set.into_fields_v1();
                    out.push(kept);
                }
            }
        }
    }
    for entry in scale_list {
        if !fields(entry).contains(&scale_replicas()) {
            continue;
        }
        let mut set = FieldSet::default();
        set.insert(replicas);
        let mut moved = entry.clone();
        moved["apiVersion"] = json!(api_version);
        moved["fieldsV1"] = set.into_fields_v1();
        out.push(moved);
    }
    out
}

fn list(object: &Value) -> Vec<&Value> {
    object
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|items| items.iter().collect())
        .unwrap_or_default()
}

fn fields(entry: &Value) -> FieldSet {
    entry
        .get("fieldsV1")
        .map(FieldSet::from_fields_v1)
        .unwrap_or_default()
}

/// kube-apiserver's manager identity: manager, operation and subresource.
fn same_manager(a: &Value, b: &Value) -> bool {
    ["manager", "operation", "subresource"]
        .iter()
        .all(|field| a.get(field) == b.get(field))
}
