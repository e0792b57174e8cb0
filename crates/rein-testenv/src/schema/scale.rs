//! The checks a custom resource with a `scale` subresource gets on every write: the
//! replicas at `specReplicasPath` and `statusReplicasPath` are non-negative int32s and the
//! label selector a string, worded as apiextensions-apiserver's validator words them.

use serde_json::Value;

use super::cause::Cause;
use crate::resources::ScalePaths;

/// The scale causes of `obj` (field paths are the subresource's JSON paths, leading dot
/// included, as kube-apiserver prints them).
pub(crate) fn causes(paths: &ScalePaths, obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    for pointer in [&paths.spec_replicas, &paths.status_replicas] {
        replicas(pointer, obj, &mut out);
    }
    if let Some(pointer) = &paths.label_selector
        && let Some(v) = obj
            .pointer(pointer)
            .filter(|v| !v.is_null() && !v.is_string())
    {
        let path = json_path(pointer);
        out.push(Cause::invalid(
            &path,
            &Value::String(String::new()),
            &format!(
                "{path} accessor error: {} is of the type {}, expected string",
                go_v(v),
                go_type(v)
            ),
        ));
    }
    out
}

fn replicas(pointer: &str, obj: &Value, out: &mut Vec<Cause>) {
    let Some(v) = obj.pointer(pointer).filter(|v| !v.is_null()) else {
        return;
    };
    let path = json_path(pointer);
    let Some(n) = v.as_i64() else {
        out.push(Cause::invalid(
            &path,
            &Value::from(0),
            &format!(
                "{path} accessor error: {} is of the type {}, expected int64",
                go_v(v),
                go_type(v)
            ),
        ));
        return;
    };
    let why = if n < 0 {
        "should be a non-negative integer".to_string()
    } else if n > i64::from(i32::MAX) {
        format!("should be less than or equal to {}", i32::MAX)
    } else {
        return;
    };
    out.push(Cause::invalid(&path, v, &why));
}

/// `/spec/replicas` → `.spec.replicas`.
fn json_path(pointer: &str) -> String {
    pointer.replace('/', ".")
}

/// Go's `%v` of a decoded JSON value.
fn go_v(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => super::cause::go_number(n),
        other => other.to_string(),
    }
}

/// Go's `%T` of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::Bool(_) => "bool",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
        Value::Null => "<nil>",
    }
}
