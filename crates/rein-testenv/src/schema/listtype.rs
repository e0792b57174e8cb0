//! `x-kubernetes-list-type: set` and `map`: items (or map keys) must be unique, as
//! apiextensions-apiserver's `listtype` validation reports with `Duplicate value` causes.

use serde_json::{Map, Value};

use super::cause::{Cause, child, index, key};
use super::node::{MAX_DEPTH, Node};

/// The duplicate items of every set and map list under `node`.
pub(crate) fn validate(node: &Node, value: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    walk(node, value, path, &mut out, 0);
    out
}

fn walk(node: &Node, value: &Value, path: &str, out: &mut Vec<Cause>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(additional) = &node.additional {
                for (k, v) in map {
                    walk(additional, v, &key(path, k), out, depth + 1);
                }
            }
            for (k, v) in map {
                if let Some(sub) = node.properties.get(k) {
                    walk(sub, v, &child(path, k), out, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            match node
                .raw
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
            {
                Some("set") => {
                    for i in first_repeats(items.iter()) {
                        out.push(Cause::duplicate(&index(path, i), &items[i]));
                    }
                }
                Some("map") => map_list(node, items, path, out),
                _ => {}
            }
            if let Some(item) = &node.items {
                for (i, v) in items.iter().enumerate() {
                    walk(item, v, &index(path, i), out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

fn map_list(node: &Node, items: &[Value], path: &str, out: &mut Vec<Cause>) {
    if let Some(i) = items.iter().position(|x| !x.is_null() && !x.is_object()) {
        out.push(Cause::invalid(
            &index(path, i),
            &items[i],
            "must be an object for an array of list-type map",
        ));
        return;
    }
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let mut k = Map::new();
            for field in &node.map_keys {
                if let Some(v) = x.get(field) {
                    k.insert(field.clone(), v.clone());
                }
            }
            Value::Object(k)
        })
        .collect();
    for i in first_repeats(keys.iter()) {
        out.push(Cause::duplicate(&index(path, i), &keys[i]));
    }
}

/// The index of the second occurrence of each repeated value (later repeats are not
/// reported again), as `validateListSet` finds them.
fn first_repeats<'a>(values: impl Iterator<Item = &'a Value>) -> Vec<usize> {
    let mut seen: Vec<(&Value, usize)> = Vec::new();
    let mut out = Vec::new();
    for (i, v) in values.enumerate() {
        match seen.iter_mut().find(|(s, _)| *s == v) {
            Some((_, times)) => {
                *times += 1;
                if *times == 2 {
                    out.push(i);
                }
            }
            None => seen.push((v, 1)),
        }
    }
    out
}
