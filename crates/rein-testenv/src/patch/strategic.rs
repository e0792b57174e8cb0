//! Strategic merge patch: JSON merge patch plus per-field list semantics and `$` directives.

use serde_json::{Map, Value};

use super::strategy::{self, ListKind};
use super::{Gvk, PatchError};

/// Applies the strategic merge patch `patch` to `current`.
pub(super) fn apply(current: &Value, patch: &Value, gvk: &Gvk) -> Result<Value, PatchError> {
    let Value::Object(patch) = patch else {
        return Err(PatchError::Malformed(
            "a strategic merge patch must be a JSON object".to_string(),
        ));
    };
    let mut doc = current.clone();
    let Value::Object(map) = &mut doc else {
        return Err(PatchError::Invalid(
            "the object being patched is not a JSON object".to_string(),
        ));
    };
    let mut path = Vec::new();
    merge_map(map, patch, gvk, &mut path)?;
    Ok(doc)
}

fn merge_map(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    gvk: &Gvk,
    path: &mut Vec<String>,
) -> Result<(), PatchError> {
    match patch.get("$patch") {
        None => {}
        Some(Value::String(directive)) if directive == "merge" => {}
        Some(Value::String(directive)) if directive == "replace" => {
            *original = strip_map(patch);
            return Ok(());
        }
        Some(Value::String(directive)) if directive == "delete" => {
            original.clear();
            return Ok(());
        }
        Some(other) => {
            return Err(PatchError::Malformed(format!(
                "unknown $patch directive {other} at {}",
                display_path(path)
            )));
        }
    }
    // apimachinery's mergepatch errors, which kube-apiserver answers with 400 BadRequest.
    if patch
        .iter()
        .any(|(k, v)| k.starts_with("$setElementOrder/") && !v.is_array())
    {
        return Err(PatchError::BadRequest(
            "invalid patch format of setElementOrder list".to_string(),
        ));
    }
    if let Some(retain) = patch.get("$retainKeys") {
        let Value::Array(retain) = retain else {
            return Err(PatchError::BadRequest(
                "invalid patch format of retainKeys".to_string(),
            ));
        };
        original.retain(|key, _| retain.iter().any(|k| k.as_str() == Some(key)));
    }
    for (key, value) in patch {
        if key == "$patch" || key == "$retainKeys" || key.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            let Value::Array(remove) = value else {
                return Err(PatchError::BadRequest(
                    "invalid patch format of primitive list".to_string(),
                ));
            };
            if let Some(Value::Array(list)) = original.get_mut(field) {
                list.retain(|item| !remove.contains(item));
            }
            continue;
        }
        if key.starts_with('$') {
            return Err(PatchError::Malformed(format!(
                "unknown directive {key} at {}",
                display_path(path)
            )));
        }
        match value {
            Value::Null => {
                original.remove(key);
            }
            Value::Object(child_patch) => {
                if child_patch.get("$patch").and_then(Value::as_str) == Some("delete") {
                    original.remove(key);
                    continue;
                }
                path.push(key.clone());
                match original.get_mut(key) {
                    Some(Value::Object(child)) => merge_map(child, child_patch, gvk, path)?,
                    _ => {
                        original.insert(key.clone(), Value::Object(strip_map(child_patch)));
                    }
                }
                path.pop();
            }
            Value::Array(items) => {
                path.push(key.clone());
                let segments: Vec<&str> = path.iter().map(String::as_str).collect();
                let kind = strategy::list_kind(gvk, &segments);
                let mut merged = merge_list(original.remove(key), items, kind.clone(), gvk, path)?;
                path.pop();
                if let Some(Value::Array(order)) = patch.get(&format!("$setElementOrder/{key}")) {
                    reorder(&mut merged, order, &kind);
                }
                original.insert(key.clone(), Value::Array(merged));
            }
            scalar => {
                original.insert(key.clone(), scalar.clone());
            }
        }
    }
    Ok(())
}

fn merge_list(
    original: Option<Value>,
    patch: &[Value],
    kind: ListKind,
    gvk: &Gvk,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, PatchError> {
    let is_directive =
        |item: &Value, name: &str| item.get("$patch").and_then(Value::as_str) == Some(name);
    if patch.iter().any(|item| is_directive(item, "replace")) {
        return Ok(patch
            .iter()
            .filter(|item| !is_directive(item, "replace"))
            .map(strip)
            .collect());
    }
    let mut list = match original {
        Some(Value::Array(list)) => list,
        _ => Vec::new(),
    };
    match kind {
        ListKind::Atomic => Ok(patch.iter().map(strip).collect()),
        ListKind::Set => {
            for item in patch {
                if !list.contains(item) {
                    list.push(item.clone());
                }
            }
            Ok(list)
        }
        ListKind::Map { merge_key, .. } => {
            for item in patch {
                let Value::Object(item_patch) = item else {
                    return Err(PatchError::Malformed(format!(
                        "{} is merged by {merge_key:?}, but an element is not an object",
                        display_path(path)
                    )));
                };
                let Some(key) = item_patch.get(merge_key) else {
                    return Err(PatchError::Malformed(format!(
                        "an element of {} does not contain the merge key {merge_key:?}",
                        display_path(path)
                    )));
                };
                let position = list.iter().position(|e| e.get(merge_key) == Some(key));
                if is_directive(item, "delete") {
                    list.retain(|e| e.get(merge_key) != Some(key));
                    continue;
                }
                match position.map(|i| &mut list[i]) {
                    Some(Value::Object(existing)) => merge_map(existing, item_patch, gvk, path)?,
                    _ => list.push(Value::Object(strip_map(item_patch))),
                }
            }
            Ok(list)
        }
    }
}

/// Applies `$setElementOrder`: listed elements first, in the given order, then the rest.
fn reorder(list: &mut Vec<Value>, order: &[Value], kind: &ListKind) {
    let matches = |item: &Value, wanted: &Value| match kind {
        ListKind::Map { merge_key, .. } => {
            item.get(*merge_key).is_some() && item.get(*merge_key) == wanted.get(*merge_key)
        }
        _ => item == wanted,
    };
    let mut rest = std::mem::take(list);
    for wanted in order {
        if let Some(i) = rest.iter().position(|item| matches(item, wanted)) {
            list.push(rest.remove(i));
        }
    }
    list.append(&mut rest);
}

/// A patch fragment as plain data: directives and nulls removed.
fn strip(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(strip_map(map)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|item| item.get("$patch").is_none())
                .map(strip)
                .collect(),
        ),
        other => other.clone(),
    }
}

fn strip_map(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .filter(|(key, value)| !key.starts_with('$') && !value.is_null())
        .map(|(key, value)| (key.clone(), strip(value)))
        .collect()
}

fn display_path(path: &[String]) -> String {
    if path.is_empty() {
        "the object".to_string()
    } else {
        format!(".{}", path.join("."))
    }
}
