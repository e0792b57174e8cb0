//! List and map semantics read from a custom resource's structural schema, as
//! structured-merge-diff reads them: `x-kubernetes-list-type` (`atomic`, the default, `set`,
//! `map` with `x-kubernetes-list-map-keys`) and `x-kubernetes-map-type` (`granular`, the
//! default, or `atomic`).

use serde_json::Value;

use super::strategy::ListKind;

/// How deep a field path may go before the walk gives up (schemas are finite; this only
/// bounds work on hostile input).
const MAX_DEPTH: usize = 256;

/// The semantics of the list at `path` (field names from the object root, no indexes) under
/// the schema `root`. Unknown paths and lists without a list type are atomic.
pub(super) fn list_kind(root: &Value, path: &[&str]) -> ListKind {
    let Some(schema) = at(root, path) else {
        return ListKind::Atomic;
    };
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListKind::Set,
        Some("map") => {
            let keys: Vec<String> = schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(|k| k.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            if keys.is_empty() {
                ListKind::Atomic
            } else {
                ListKind::Map {
                    merge_key: "",
                    keys,
                }
            }
        }
        _ => ListKind::Atomic,
    }
}

/// Whether the object at `path` is declared `x-kubernetes-map-type: atomic`.
pub(super) fn map_is_atomic(root: &Value, path: &[&str]) -> bool {
    at(root, path).is_some_and(|schema| {
        schema.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
    })
}

/// The schema of the field at `path`: each name steps into `properties` (or
/// `additionalProperties`, for maps), passing through the `items` of any list on the way (a
/// path names no list indexes).
fn at<'a>(root: &'a Value, path: &[&str]) -> Option<&'a Value> {
    if path.len() > MAX_DEPTH {
        return None;
    }
    let mut schema = root;
    for name in path {
        schema = element(schema);
        schema = match schema.get("properties").and_then(|p| p.get(*name)) {
            Some(child) => child,
            None => match schema.get("additionalProperties") {
                Some(child @ Value::Object(_)) => child,
                _ => return None,
            },
        };
    }
    Some(schema)
}

/// Through the `items` of (nested) list schemas to the element schema.
fn element(mut schema: &Value) -> &Value {
    for _ in 0..MAX_DEPTH {
        match schema.get("items") {
            Some(items @ Value::Object(_))
                if schema.get("type").and_then(Value::as_str) == Some("array") =>
            {
                schema = items;
            }
            _ => break,
        }
    }
    schema
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "tags": {"type": "array", "x-kubernetes-list-type": "set",
                         "items": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name", "protocol"],
                          "items": {"type": "object", "properties": {
                              "hosts": {"type": "array", "x-kubernetes-list-type": "set",
                                        "items": {"type": "string"}},
                          }}},
                "plain": {"type": "array", "items": {"type": "string"}},
                "keyless": {"type": "array", "x-kubernetes-list-type": "map",
                            "items": {"type": "object"}},
                "byName": {"type": "object", "additionalProperties": {
                    "type": "object", "x-kubernetes-map-type": "atomic",
                }},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic"},
            }}},
        })
    }

    #[test]
    fn list_types_come_from_the_schema() {
        let root = schema();
        assert_eq!(list_kind(&root, &["spec", "tags"]), ListKind::Set);
        assert_eq!(
            list_kind(&root, &["spec", "ports"]),
            ListKind::Map {
                merge_key: "",
                keys: vec!["name".to_string(), "protocol".to_string()],
            }
        );
        // Through the list's items to a list inside its elements.
        assert_eq!(list_kind(&root, &["spec", "ports", "hosts"]), ListKind::Set);
        assert_eq!(list_kind(&root, &["spec", "plain"]), ListKind::Atomic);
        assert_eq!(list_kind(&root, &["spec", "keyless"]), ListKind::Atomic);
        assert_eq!(list_kind(&root, &["spec", "missing"]), ListKind::Atomic);
    }

    #[test]
    fn map_types_come_from_the_schema() {
        let root = schema();
        assert!(map_is_atomic(&root, &["spec", "selector"]));
        assert!(map_is_atomic(&root, &["spec", "byName", "any-key"]));
        assert!(!map_is_atomic(&root, &["spec", "byName"]));
        assert!(!map_is_atomic(&root, &["spec"]));
    }
}
