//! `metav1.LabelSelector`: its validation (`ValidateLabelSelector`) and whether it matches a
//! set of labels.

use serde_json::Value;

use super::field::{FieldError, Path};
use super::meta;
use super::names;

/// `ValidateLabelSelector` of the selector at `path`.
pub(crate) fn validate(selector: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    meta::labels(
        selector.get("matchLabels"),
        &path.child("matchLabels"),
        errs,
    );
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    for (i, expr) in expressions.into_iter().flatten().enumerate() {
        let at = path.child("matchExpressions").index(i);
        let values = expr
            .get("values")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        match expr
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
                at.child("values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
                at.child("values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::invalid_str(
                at.child("operator"),
                other,
                "not a valid selector operator",
            )),
        }
        let key = expr.get("key").and_then(Value::as_str).unwrap_or_default();
        for msg in names::qualified_name(key) {
            errs.push(FieldError::invalid_str(at.child("key"), key, msg));
        }
        for (j, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or_default();
            for msg in names::label_value(v) {
                errs.push(FieldError::invalid_str(at.child("values").index(j), v, msg));
            }
        }
    }
}

/// Whether the selector selects nothing in particular (no labels, no expressions).
pub(crate) fn is_empty(selector: &Value) -> bool {
    let count = |f: &str| match selector.get(f) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    };
    count("matchLabels") + count("matchExpressions") == 0
}

/// Whether `selector` matches `labels` (a JSON map, or null).
pub(crate) fn matches(selector: &Value, labels: Option<&Value>) -> bool {
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(Value::Object(want)) = selector.get("matchLabels") {
        for (k, v) in want {
            if label(k) != v.as_str() {
                return false;
            }
        }
    }
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    expressions.into_iter().flatten().all(|expr| {
        let key = expr.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> = expr
            .get("values")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let have = label(key);
        match expr
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "In" => have.is_some_and(|h| values.contains(&h)),
            "NotIn" => !have.is_some_and(|h| values.contains(&h)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            _ => false,
        }
    })
}
