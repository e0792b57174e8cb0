//! Validation ratcheting (`CRDValidationRatcheting`, on in v1.33): on update, a schema error
//! on a value the write did not change is not an error, so objects stored before a schema
//! was tightened can still be updated elsewhere.

use serde_json::Value;

use super::cause::Cause;

/// Whether `cause` is about a value `old` already had unchanged (a `Required` error is about
/// its parent object).
pub(crate) fn unchanged(cause: &Cause, new: &Value, old: &Value) -> bool {
    let path = if cause.reason == "FieldValueRequired" {
        match cause.field.rfind(['.', '[']) {
            Some(i) => &cause.field[..i],
            None => "",
        }
    } else {
        cause.field.as_str()
    };
    if path == "<nil>" {
        return false;
    }
    if !lists_correlate(new, old, path) {
        return false;
    }
    match (resolve(new, path), resolve(old, path)) {
        (Some(n), Some(o)) => n == o,
        _ => false,
    }
}

/// The value at a field path (`spec.items[0].name`).
fn resolve<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = root;
    if path.is_empty() {
        return Some(current);
    }
    for segment in path.split('.') {
        let (name, indexes) = match segment.find('[') {
            Some(i) => (&segment[..i], &segment[i..]),
            None => (segment, ""),
        };
        if !name.is_empty() {
            current = current.get(name)?;
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            let index: usize = index.trim_end_matches(']').parse().ok()?;
            current = current.get(index)?;
        }
    }
    Some(current)
}

/// Whether every list along `path` is the same in both objects (items of a changed list do
/// not correlate).
fn lists_correlate(new: &Value, old: &Value, path: &str) -> bool {
    let mut prefix = String::new();
    for (i, ch) in path.char_indices() {
        if ch == '[' {
            prefix.clear();
            prefix.push_str(&path[..i]);
            if resolve(new, &prefix) != resolve(old, &prefix) {
                return false;
            }
        }
    }
    true
}
