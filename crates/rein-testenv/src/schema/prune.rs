//! Pruning of fields a structural schema does not declare (kept under
//! `x-kubernetes-preserve-unknown-fields`), `metadata` of the root and of embedded resources
//! cut down to ObjectMeta's fields, and the embedded resources' own checks.

use serde_json::Value;

use super::cause::{Cause, child, index};
use super::node::{MAX_DEPTH, Node};

/// The fields of `metav1.ObjectMeta`; anything else under a resource's `metadata` is dropped.
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Prunes `obj` (a whole custom resource) against `root`; answers the pruned paths.
pub(crate) fn prune(root: &Node, obj: &mut Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(root, obj, "", true, &mut out, 0);
    out
}

fn walk(
    node: &Node,
    value: &mut Value,
    path: &str,
    resource: bool,
    out: &mut Vec<String>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            let keep_all = node.preserve_unknown
                || node.raw.get("additionalProperties") == Some(&Value::Bool(true));
            let mut removed = Vec::new();
            for (key, v) in map.iter_mut() {
                if resource && (key == "apiVersion" || key == "kind") {
                    continue;
                }
                if resource && key == "metadata" {
                    prune_meta(v, &child(path, key), out);
                    continue;
                }
                let p = child(path, key);
                if let Some(sub) = node.properties.get(key) {
                    walk(sub, v, &p, sub.embedded, out, depth + 1);
                } else if let Some(additional) = &node.additional {
                    walk(additional, v, &p, additional.embedded, out, depth + 1);
                } else if !keep_all {
                    removed.push(key.clone());
                }
            }
            for key in removed {
                map.remove(&key);
                out.push(child(path, &key));
            }
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                for (i, v) in items.iter_mut().enumerate() {
                    walk(item, v, &index(path, i), item.embedded, out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Drops what is not an ObjectMeta field.
fn prune_meta(meta: &mut Value, path: &str, out: &mut Vec<String>) {
    let Value::Object(map) = meta else { return };
    let unknown: Vec<String> = map
        .keys()
        .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in unknown {
        map.remove(&key);
        out.push(child(path, &key));
    }
}

/// Embedded resources must name their `apiVersion` and `kind`.
pub(crate) fn check_embedded(node: &Node, value: &Value, path: &str, out: &mut Vec<Cause>) {
    check_at(node, value, path, out, 0);
}

fn check_at(node: &Node, value: &Value, path: &str, out: &mut Vec<Cause>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            if node.embedded && depth > 0 {
                check_type_meta(map, path, out);
            }
            for (key, v) in map {
                let sub = node.properties.get(key).or(node.additional.as_deref());
                if let Some(sub) = sub {
                    check_at(sub, v, &child(path, key), out, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                for (i, v) in items.iter().enumerate() {
                    check_at(item, v, &index(path, i), out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// `apiVersion` and `kind` of an embedded resource, as apiextensions-apiserver's
/// `validateEmbeddedResource` checks them.
fn check_type_meta(map: &serde_json::Map<String, Value>, path: &str, out: &mut Vec<Cause>) {
    for field in ["apiVersion", "kind"] {
        let p = child(path, field);
        match map.get(field) {
            None => out.push(Cause::required(&p, "must not be empty")),
            Some(Value::String(s)) if s.is_empty() => {
                out.push(Cause::invalid(
                    &p,
                    &Value::String(String::new()),
                    "must not be empty",
                ));
            }
            Some(Value::String(s)) => {
                if let Some(why) = type_meta_error(field, s) {
                    out.push(Cause::invalid(&p, &Value::String(s.clone()), &why));
                }
            }
            Some(other) => out.push(Cause::invalid(&p, other, "must be a string")),
        }
    }
}

/// apimachinery's check of an embedded `apiVersion` (`ParseGroupVersion`) or `kind` (a
/// DNS-1035 label once lower-cased).
fn type_meta_error(field: &str, value: &str) -> Option<String> {
    if field == "apiVersion" {
        return (value.matches('/').count() > 1)
            .then(|| format!("unexpected GroupVersion string: {value}"));
    }
    let lower = value.to_ascii_lowercase();
    let mut errs = Vec::new();
    if lower.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let bytes = lower.as_bytes();
    let shape_ok = bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    if !shape_ok {
        errs.push(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start \
             with an alphabetic character, and end with an alphanumeric character (e.g. \
             'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
                .to_string(),
        );
    }
    (!errs.is_empty()).then(|| {
        format!(
            "may have mixed case, but should otherwise match: {}",
            errs.join(",")
        )
    })
}
