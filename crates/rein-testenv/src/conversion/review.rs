//! The checks kube-apiserver makes of a conversion webhook's answer
//! (`getConvertedObjectsFromResponse`, `validateConvertedObject`, `restoreObjectMeta`).

use serde_json::{Map, Value};

/// The converted objects of a ConversionReview answer, or why the answer is refused.
pub(super) fn converted_objects(
    answer: &Value,
    review_version: &str,
    uid: &str,
) -> Result<Vec<Value>, String> {
    let expected = format!("apiextensions.k8s.io/{review_version}");
    let api_version = text(answer, "apiVersion");
    let kind = text(answer, "kind");
    if api_version != expected || kind != "ConversionReview" {
        return Err(format!(
            "expected webhook response of {expected}, Kind=ConversionReview, got {}",
            gvk_string(api_version, kind)
        ));
    }
    let response = answer
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("no response provided")?;
    let got_uid = text(response, "uid");
    if got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let result = response.get("result");
    let status = result
        .and_then(|r| r.get("status"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if status != "Success" {
        let message = result
            .and_then(|r| r.get("message"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !message.is_empty() {
            return Err(message.to_string());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    match response.get("convertedObjects") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(objects)) => Ok(objects.clone()),
        Some(_) => Err("response.convertedObjects is not a list".to_string()),
    }
}

/// `converted` checked against `original` and with `original`'s metadata restored (only
/// labels and annotations come from the webhook); the error is the text after
/// `conversion webhook for <gvk> ` (`index` is the position in a list's converted objects).
pub(super) fn check_converted(
    original: &Value,
    mut converted: Value,
    desired: &str,
    index: Option<usize>,
) -> Result<Value, String> {
    let (object_at, metadata_at) = match index {
        Some(i) => (
            format!("returned invalid converted object at index {i}"),
            format!("returned invalid metadata in object at index {i}"),
        ),
        None => (
            "returned invalid object at index 0".to_string(),
            "returned invalid metadata".to_string(),
        ),
    };
    if !converted.is_object() {
        return Err(format!(
            "{object_at}: Object 'Kind' is missing in '{converted}'"
        ));
    }
    let got = text(&converted, "apiVersion");
    if got != desired {
        return Err(format!(
            "{object_at}: invalid groupVersion (expected {desired}, received {got})"
        ));
    }
    let (want_kind, got_kind) = (text(original, "kind"), text(&converted, "kind"));
    if want_kind != got_kind {
        return Err(format!(
            "{object_at}: invalid kind (expected {want_kind}, received {got_kind})"
        ));
    }
    let object_invalid = match index {
        Some(i) => format!("returned invalid converted object at index {i}"),
        None => "returned invalid object".to_string(),
    };
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (want, got) = (meta_text(original, field), meta_text(&converted, field));
        if want != got {
            return Err(format!(
                "{object_invalid}: must have the same {what}: {want} != {got}"
            ));
        }
    }
    restore_metadata(original, &mut converted).map_err(|why| format!("{metadata_at}: {why}"))?;
    Ok(converted)
}

/// Puts `original`'s metadata into `converted`, keeping the labels and annotations the
/// webhook answered.
fn restore_metadata(original: &Value, converted: &mut Value) -> Result<(), String> {
    let answered = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".to_string()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ));
        }
    };
    let mut restored: Map<String, Value> = match original.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for field in ["labels", "annotations"] {
        match answered.get(field) {
            None | Some(Value::Null) => {
                restored.remove(field);
            }
            Some(Value::Object(map)) => {
                if let Some((k, v)) = map.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!(
                        "metadata.{field}[{k}] must be a string, but is {} in converted object",
                        go_type(v)
                    ));
                }
                restored.insert(field.to_string(), Value::Object(map.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ));
            }
        }
    }
    converted["metadata"] = Value::Object(restored);
    Ok(())
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn meta_text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get("metadata")
        .and_then(|m| m.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Go's `schema.GroupVersionKind.String()`: `group/version, Kind=kind`.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

/// The Go type a JSON value decodes to, for error messages.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}
