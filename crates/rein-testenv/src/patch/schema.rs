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
                let properties = element(schema).get("properties");
                let key_defaults = keys
                    .iter()
                    .filter_map(|k| {
                        let default = properties?.get(k)?.get("default")?;
                        Some((k.clone(), default.clone()))
                    })
                    .collect();
                ListKind::Map {
                    merge_key: "",
                    keys,
                    key_defaults,
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

/// The errors structured-merge-diff finds turning an apply configuration into a typed value
/// under the structural schema `root`: a field the schema does not declare, an element of a
/// `map` list without one of its keys, and duplicate elements in a `set` or `map` list. Each
/// reads `<path>: <problem>`, the path in kube-apiserver's notation
/// (`.spec.ports[name="http"].hosts`). `metadata` is ObjectMeta's and not checked here.
pub(super) fn config_errors(root: &Value, config: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    if let Value::Object(fields) = config {
        for (name, value) in fields {
            if name == "metadata" || name == "apiVersion" || name == "kind" {
                continue;
            }
            match field_schema(root, name) {
                Some(schema) => check(schema, value, &format!(".{name}"), &mut errors, 0),
                None if !flag(root, "x-kubernetes-preserve-unknown-fields") => {
                    errors.push(format!(".{name}: field not declared in schema"));
                }
                None => {}
            }
        }
    }
    errors
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

fn field_schema<'a>(schema: &'a Value, name: &str) -> Option<&'a Value> {
    match schema.get("properties").and_then(|p| p.get(name)) {
        Some(child) => Some(child),
        None => match schema.get("additionalProperties") {
            Some(child @ Value::Object(_)) => Some(child),
            _ => None,
        },
    }
}

fn check(schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(fields) => {
            if flag(schema, "x-kubernetes-int-or-string") {
                return;
            }
            let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
            let embedded = flag(schema, "x-kubernetes-embedded-resource");
            for (name, child) in fields {
                match field_schema(schema, name) {
                    Some(child_schema) => {
                        check(
                            child_schema,
                            child,
                            &format!("{path}.{name}"),
                            errors,
                            depth + 1,
                        );
                    }
                    None if preserve
                        || (embedded
                            && matches!(name.as_str(), "apiVersion" | "kind" | "metadata")) => {}
                    None => errors.push(format!("{path}.{name}: field not declared in schema")),
                }
            }
        }
        Value::Array(items) => {
            let element = schema.get("items").unwrap_or(&Value::Null);
            let keys: Vec<&str> = match list_kind_of(schema) {
                ListKind::Atomic => return,
                ListKind::Set => Vec::new(),
                ListKind::Map { .. } => schema
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|keys| keys.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default(),
            };
            let mut seen: Vec<String> = Vec::new();
            for (index, item) in items.iter().enumerate() {
                let element_path = if keys.is_empty() {
                    format!("[={item}]")
                } else {
                    let has_default = |k: &str| {
                        element
                            .get("properties")
                            .and_then(|p| p.get(k))
                            .and_then(|field| field.get("default"))
                            .is_some()
                    };
                    let missing = keys
                        .iter()
                        .find(|k| item.get(**k).is_none_or(Value::is_null) && !has_default(k));
                    if let Some(missing) = missing {
                        errors.push(format!(
                            "{path}: element {index}: associative list with keys has an element \
                             that omits key field {missing:?} (and doesn't have default value)"
                        ));
                        continue;
                    }
                    let mut sorted = keys.clone();
                    sorted.sort_unstable();
                    let parts: Vec<String> = sorted
                        .iter()
                        .map(|k| format!("{k}={}", item.get(*k).unwrap_or(&Value::Null)))
                        .collect();
                    format!("[{}]", parts.join(","))
                };
                if seen.contains(&element_path) {
                    errors.push(format!("{path}: duplicate entries for key {element_path}"));
                }
                if !keys.is_empty() {
                    check(
                        element,
                        item,
                        &format!("{path}{element_path}"),
                        errors,
                        depth + 1,
                    );
                }
                seen.push(element_path);
            }
        }
        _ => {}
    }
}

/// The list type a list schema declares.
fn list_kind_of(schema: &Value) -> ListKind {
    match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListKind::Set,
        Some("map") => ListKind::Map {
            merge_key: "",
            keys: Vec::new(),
            key_defaults: Vec::new(),
        },
        _ => ListKind::Atomic,
    }
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
                              "name": {"type": "string"},
                              "protocol": {"type": "string"},
                              "hosts": {"type": "array", "x-kubernetes-list-type": "set",
                                        "items": {"type": "string"}},
                          }}},
                "plain": {"type": "array", "items": {"type": "string"}},
                "defaulted": {"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["name", "protocol"],
                              "items": {"type": "object", "properties": {
                                  "name": {"type": "string"},
                                  "protocol": {"type": "string", "default": "TCP"},
                              }}},
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
                key_defaults: Vec::new(),
            }
        );
        // Through the list's items to a list inside its elements.
        assert_eq!(list_kind(&root, &["spec", "ports", "hosts"]), ListKind::Set);
        assert_eq!(list_kind(&root, &["spec", "plain"]), ListKind::Atomic);
        assert_eq!(list_kind(&root, &["spec", "keyless"]), ListKind::Atomic);
        assert_eq!(list_kind(&root, &["spec", "missing"]), ListKind::Atomic);
    }

    #[test]
    fn configurations_with_keyless_or_duplicate_elements_are_refused() {
        let root = schema();
        let config = json!({"spec": {
            "tags": ["a", "b", "a"],
            "ports": [
                {"name": "http", "protocol": "TCP", "hosts": ["x", "x"]},
                {"name": "dns"},
                {"name": "http", "protocol": "TCP"},
            ],
            "plain": ["same", "same"],
        }});
        assert_eq!(
            config_errors(&root, &config),
            [
                ".spec.ports[name=\"http\",protocol=\"TCP\"].hosts: duplicate entries for key [=\"x\"]",
                ".spec.ports: element 1: associative list with keys has an element that omits \
                 key field \"protocol\" (and doesn't have default value)",
                ".spec.ports: duplicate entries for key [name=\"http\",protocol=\"TCP\"]",
                ".spec.tags: duplicate entries for key [=\"a\"]",
            ]
        );
        assert!(config_errors(&root, &json!({"spec": {"tags": ["a"]}})).is_empty());
        // A key field with a schema default may be left out.
        assert!(config_errors(&root, &json!({"spec": {"defaulted": [{"name": "a"}]}})).is_empty());
        assert_eq!(
            config_errors(&root, &json!({"spec": {"colour": "red"}, "extra": 1})),
            [
                ".extra: field not declared in schema",
                ".spec.colour: field not declared in schema",
            ]
        );
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
