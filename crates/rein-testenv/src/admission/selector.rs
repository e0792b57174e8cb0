//! `metav1.LabelSelector` (matchLabels and matchExpressions) evaluated against a label map,
//! as a webhook's `namespaceSelector` and `objectSelector` are.

use serde_json::{Map, Value};

/// Whether `selector` (a `LabelSelector` object; absent or `{}` selects everything) selects
/// `labels`. A selector kube-apiserver would refuse (an unknown operator) selects nothing.
pub(super) fn matches(selector: Option<&Value>, labels: &Map<String, Value>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    let label = |key: &str| labels.get(key).and_then(Value::as_str);
    if let Some(wanted) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in wanted {
            if label(key) != value.as_str() {
                return false;
            }
        }
    }
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    expressions.iter().all(|e| {
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        match e.get("operator").and_then(Value::as_str) {
            Some("In") => label(key).is_some_and(|v| values.contains(&v)),
            Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
            Some("Exists") => label(key).is_some(),
            Some("DoesNotExist") => label(key).is_none(),
            _ => false,
        }
    })
}

/// Whether `selector` is absent or empty (selects everything without looking).
pub(super) fn is_empty(selector: Option<&Value>) -> bool {
    selector.is_none_or(|s| {
        s.get("matchLabels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
            && s.get("matchExpressions")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
    })
}

/// The labels of `obj` (none when it has none).
pub(super) fn labels_of(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}
