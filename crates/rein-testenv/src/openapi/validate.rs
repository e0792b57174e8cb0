//! Strict field validation: the fields of an object that its schema does not declare.

use serde_json::{Map, Value};

use super::CrdSchema;
use super::builtin::builtins;
use super::document::{crd_definition, definition_for};
use crate::patch::Gvk;

/// The paths (`spec.containers[0].foo`) of fields in `obj` that the schema of `gvk` does not
/// declare, as `fieldValidation=Strict` reports them. Honours
/// `x-kubernetes-preserve-unknown-fields`, maps (`additionalProperties`) and, for custom
/// resources, prunes like a structural schema (undeclared object fields are unknown).
/// Empty when the kind has no schema.
pub(crate) fn unknown_fields(gvk: &Gvk, crds: &[CrdSchema], obj: &Value) -> Vec<String> {
    let crd = crds
        .iter()
        .find(|c| c.group == gvk.group && c.version == gvk.version && c.kind == gvk.kind);
    let definitions = &builtins().definitions;
    let root = match crd {
        Some(crd) => crd_definition(crd),
        None => match definition_for(gvk, crds).and_then(|name| definitions.get(&name)) {
            Some(schema) => schema.clone(),
            None => return Vec::new(),
        },
    };
    let mut walker = Walker {
        definitions,
        unknown: Vec::new(),
    };
    walker.walk(&root, obj, "", crd.is_some());
    walker.unknown
}

#[derive(Debug)]
struct Walker<'a> {
    definitions: &'a Map<String, Value>,
    unknown: Vec<String>,
}

/// Follows `$ref` (and a single-element `allOf` wrapping one) to the referenced definition.
fn resolve<'s>(definitions: &'s Map<String, Value>, mut schema: &'s Value) -> &'s Value {
    for _ in 0..8 {
        let reference = schema.get("$ref").and_then(Value::as_str).or_else(|| {
            match schema
                .get("allOf")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
            {
                Some([only]) => only.get("$ref").and_then(Value::as_str),
                _ => None,
            }
        });
        let Some(name) = reference.and_then(|r| r.rsplit('/').next()) else {
            break;
        };
        match definitions.get(name) {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

impl Walker<'_> {
    /// Walks `value` against `schema`. `structural` holds inside a custom resource's own
    /// schema, where an object schema without properties declares no fields; it ends at a
    /// `$ref` into the built-in definitions (`metadata` is ObjectMeta, whose `fieldsV1` and
    /// the like are free-form objects).
    fn walk(&mut self, schema: &Value, value: &Value, path: &str, structural: bool) {
        let resolved = resolve(self.definitions, schema);
        let structural = structural && std::ptr::eq(resolved, schema);
        let schema = resolved;
        let flag = |name: &str| schema.get(name).and_then(Value::as_bool) == Some(true);
        let preserve = flag("x-kubernetes-preserve-unknown-fields");
        let embedded = flag("x-kubernetes-embedded-resource");
        if flag("x-kubernetes-int-or-string") {
            return;
        }
        match value {
            Value::Object(fields) => {
                let properties = schema.get("properties").and_then(Value::as_object);
                let additional = schema.get("additionalProperties");
                let declares_nothing = properties.is_none() && additional.is_none();
                if declares_nothing && !(structural && is_object(schema)) {
                    return;
                }
                for (key, child) in fields {
                    let child_path = join(path, key);
                    if let Some(child_schema) = properties.and_then(|p| p.get(key)) {
                        self.walk(child_schema, child, &child_path, structural);
                        continue;
                    }
                    match additional {
                        Some(Value::Bool(true)) => {}
                        Some(additional @ Value::Object(_)) => {
                            self.walk(additional, child, &child_path, structural);
                        }
                        _ if preserve => {}
                        _ if embedded
                            && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") => {}
                        _ => self.unknown.push(child_path),
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (index, item) in items.iter().enumerate() {
                        self.walk(item_schema, item, &format!("{path}[{index}]"), structural);
                    }
                }
            }
            _ => {}
        }
    }
}

fn is_object(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}
