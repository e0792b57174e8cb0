//! Sets of field paths in kube-apiserver's `FieldsV1` shape (`f:`, `k:`, `v:` and `.` keys).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::Gvk;
use super::strategy::{self, ListKind};

/// One path: the `FieldsV1` keys from the root, e.g. `["f:spec", "f:replicas"]`.
pub(super) type FieldPath = Vec<String>;

/// Marks that a list element itself (not only some of its fields) is in the set.
const SELF: &str = ".";

/// Metadata the server owns; never part of a manager's field set.
const IGNORED_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// A set of field paths, stored as the `FieldsV1` tree: leaves are empty nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct FieldSet {
    children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    /// Reads a `fieldsV1` value; anything that is not an object reads as empty.
    pub(super) fn from_fields_v1(value: &Value) -> FieldSet {
        let mut set = FieldSet::default();
        if let Value::Object(map) = value {
            for (key, child) in map {
                set.children
                    .insert(key.clone(), FieldSet::from_fields_v1(child));
            }
        }
        set
    }

    /// The `fieldsV1` value (consumes the set: its keys move into the value uncopied).
    pub(super) fn into_fields_v1(self) -> Value {
        Value::Object(
            self.children
                .into_iter()
                .map(|(key, child)| (key, child.into_fields_v1()))
                .collect(),
        )
    }

    /// The leaves of this set that `old_set` lacks as leaves or whose value differs between
    /// `old` and `new`, found in one walk of both objects (each list-element key is resolved
    /// once per node, not once per leaf below it).
    pub(super) fn changed_leaves(
        &self,
        old_set: &FieldSet,
        old: Option<&Value>,
        new: Option<&Value>,
    ) -> Vec<FieldPath> {
        let mut out = Vec::new();
        self.collect_changed(Some(old_set), old, new, &mut Vec::new(), &mut out);
        out
    }

    fn collect_changed(
        &self,
        old_set: Option<&FieldSet>,
        old: Option<&Value>,
        new: Option<&Value>,
        prefix: &mut FieldPath,
        out: &mut Vec<FieldPath>,
    ) {
        for (key, child) in &self.children {
            let old_child_set = old_set.and_then(|s| s.children.get(key));
            // Both objects are whole (defaulted) objects: key fields match as they are.
            let old_value = old.and_then(|v| step_exact(v, key));
            let new_value = new.and_then(|v| step_exact(v, key));
            prefix.push(key.clone());
            if child.children.is_empty() {
                let was_leaf = old_child_set.is_some_and(|s| s.children.is_empty());
                if !was_leaf || old_value != new_value {
                    out.push(prefix.clone());
                }
            } else {
                child.collect_changed(old_child_set, old_value, new_value, prefix, out);
            }
            prefix.pop();
        }
    }

    /// The fields an object sets, with list semantics of `gvk` (server-owned metadata left out).
    pub(super) fn from_object(object: &Value, gvk: &Gvk) -> FieldSet {
        let mut set = FieldSet::default();
        let Value::Object(map) = object else {
            return set;
        };
        for (key, value) in map {
            if key == "apiVersion" || key == "kind" {
                continue;
            }
            let mut path = vec![key.as_str()];
            if key == "metadata" {
                let Value::Object(meta) = value else { continue };
                let mut meta_set = FieldSet::default();
                for (meta_key, meta_value) in meta {
                    if IGNORED_METADATA.contains(&meta_key.as_str()) {
                        continue;
                    }
                    path.push(meta_key);
                    meta_set.add_value(meta_key, meta_value, gvk, &mut path);
                    path.pop();
                }
                if !meta_set.children.is_empty() {
                    set.children.insert("f:metadata".to_string(), meta_set);
                }
                continue;
            }
            set.add_value(key, value, gvk, &mut path);
        }
        set
    }

    fn add_value<'a>(&mut self, key: &str, value: &'a Value, gvk: &Gvk, path: &mut Vec<&'a str>) {
        if value.is_null() {
            return;
        }
        let node = self.children.entry(format!("f:{key}")).or_default();
        if value.is_object() && strategy::map_is_atomic(gvk, path) {
            // An atomic map or struct is one field: its owner owns it whole.
            return;
        }
        node.add_children(value, gvk, path);
    }

    fn add_children<'a>(&mut self, value: &'a Value, gvk: &Gvk, path: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    path.push(key);
                    self.add_value(key, child, gvk, path);
                    path.pop();
                }
            }
            Value::Array(items) => match strategy::list_kind(gvk, path) {
                ListKind::Atomic => {}
                ListKind::Set => {
                    for item in items {
                        self.children
                            .insert(format!("v:{item}"), FieldSet::default());
                    }
                }
                kind @ ListKind::Map { .. } => {
                    for item in items {
                        let Some(key) = element_key(item, &kind) else {
                            continue;
                        };
                        let element = self.children.entry(key).or_default();
                        element
                            .children
                            .insert(SELF.to_string(), FieldSet::default());
                        element.add_children(item, gvk, path);
                    }
                }
            },
            _ => {}
        }
    }

    /// Whether the set has no paths.
    pub(super) fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// Every leaf path.
    pub(super) fn leaves(&self) -> Vec<FieldPath> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect_leaves(&mut prefix, &mut out);
        out
    }

    fn collect_leaves(&self, prefix: &mut FieldPath, out: &mut Vec<FieldPath>) {
        for (key, child) in &self.children {
            prefix.push(key.clone());
            if child.children.is_empty() {
                out.push(prefix.clone());
            } else {
                child.collect_leaves(prefix, out);
            }
            prefix.pop();
        }
    }

    /// Whether `path` is a leaf of the set.
    pub(super) fn contains(&self, path: &[String]) -> bool {
        self.node(path).is_some_and(|node| node.children.is_empty())
    }

    /// Whether the set has `path` or anything below it.
    pub(super) fn contains_prefix(&self, path: &[String]) -> bool {
        self.node(path).is_some()
    }

    fn node(&self, path: &[String]) -> Option<&FieldSet> {
        let mut node = self;
        for key in path {
            node = node.children.get(key)?;
        }
        Some(node)
    }

    /// Adds the leaf `path`.
    pub(super) fn insert(&mut self, path: &[String]) {
        let mut node = self;
        for key in path {
            node = node.children.entry(key.clone()).or_default();
        }
    }

    /// Removes the leaf `path` and any parents it leaves empty.
    pub(super) fn remove(&mut self, path: &[String]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        if rest.is_empty() {
            self.children.remove(first);
            return;
        }
        if let Some(child) = self.children.get_mut(first) {
            child.remove(rest);
            if child.children.is_empty() {
                self.children.remove(first);
            }
        }
    }
}

/// The `k:` key of a list element: its key fields, sorted, as compact JSON.
fn element_key(item: &Value, kind: &ListKind) -> Option<String> {
    let ListKind::Map { keys, .. } = kind else {
        return None;
    };
    let mut present: Vec<(&str, &Value)> = keys
        .iter()
        .filter_map(|key| kind.key_value(item, key).map(|value| (key.as_str(), value)))
        .collect();
    if present.is_empty() {
        return None;
    }
    present.sort_by(|a, b| a.0.cmp(b.0));
    let parts: Vec<String> = present
        .iter()
        .map(|(key, value)| format!("{}:{value}", Value::String((*key).to_string())))
        .collect();
    Some(format!("k:{{{}}}", parts.join(",")))
}

/// The value at `path` in `object` (`.` names the list element itself). List elements are
/// found by their key fields, a key field the element leaves out taking its schema default.
pub(super) fn get<'a>(object: &'a Value, path: &[String], gvk: &Gvk) -> Option<&'a Value> {
    let mut current = object;
    let mut names: Vec<&str> = Vec::new();
    for key in path {
        current = step(current, key, gvk, &mut names)?;
    }
    Some(current)
}

fn step<'a, 'p>(
    value: &'a Value,
    key: &'p str,
    gvk: &Gvk,
    names: &mut Vec<&'p str>,
) -> Option<&'a Value> {
    if key == SELF {
        return Some(value);
    }
    if let Some(field) = key.strip_prefix("f:") {
        names.push(field);
        return value.get(field);
    }
    let kind = strategy::list_kind(gvk, names);
    let items = value.as_array()?;
    items.iter().find(|item| element_matches(item, key, &kind))
}

/// One step of a path in an object whose list elements carry every key field.
fn step_exact<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    step(value, key, &Gvk::new("", "", ""), &mut Vec::new())
}

fn element_matches(item: &Value, key: &str, kind: &ListKind) -> bool {
    if let Some(json) = key.strip_prefix("k:") {
        let Ok(Value::Object(wanted)) = serde_json::from_str::<Value>(json) else {
            return false;
        };
        return wanted
            .iter()
            .all(|(k, v)| kind.key_value(item, k) == Some(v));
    }
    if let Some(json) = key.strip_prefix("v:") {
        return serde_json::from_str::<Value>(json).is_ok_and(|wanted| &wanted == item);
    }
    false
}

/// Removes the field or list element at `path` from `object`; false when it was not there.
pub(super) fn remove(object: &mut Value, path: &[String], gvk: &Gvk) -> bool {
    let path = match path.split_last() {
        Some((last, rest)) if last == SELF => rest,
        _ => path,
    };
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut current = object;
    let mut names: Vec<&str> = Vec::new();
    for key in parents {
        let next = if key == SELF {
            Some(current)
        } else if let Some(field) = key.strip_prefix("f:") {
            names.push(field);
            current.get_mut(field)
        } else {
            let kind = strategy::list_kind(gvk, &names);
            current.as_array_mut().and_then(|items| {
                items
                    .iter_mut()
                    .find(|item| element_matches(item, key, &kind))
            })
        };
        let Some(next) = next else { return false };
        current = next;
    }
    if let Some(field) = last.strip_prefix("f:") {
        return current
            .as_object_mut()
            .is_some_and(|map: &mut Map<String, Value>| map.remove(field).is_some());
    }
    let Some(items) = current.as_array_mut() else {
        return false;
    };
    let kind = strategy::list_kind(gvk, &names);
    let before = items.len();
    items.retain(|item| !element_matches(item, last, &kind));
    items.len() != before
}

/// A path in kube-apiserver's error notation: `.spec.containers[name="app"].image`.
pub(super) fn display(path: &[String]) -> String {
    let mut out = String::new();
    for key in path {
        if let Some(field) = key.strip_prefix("f:") {
            out.push('.');
            out.push_str(field);
        } else if let Some(json) = key.strip_prefix("k:") {
            let parts: Vec<String> = match serde_json::from_str::<Value>(json) {
                Ok(Value::Object(map)) => map.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                _ => vec![json.to_string()],
            };
            out.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(json) = key.strip_prefix("v:") {
            out.push_str(&format!("[={json}]"));
        }
    }
    out
}
