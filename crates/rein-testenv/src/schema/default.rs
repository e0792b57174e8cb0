//! Structural defaulting: `default` values filled in where a field is missing (or null but
//! not nullable), and nulls the schema does not allow dropped, as on decoding.

use serde_json::Value;

use super::node::{MAX_DEPTH, Node};

/// Applies the defaults of `root` to `obj`.
pub(crate) fn apply(root: &Node, obj: &mut Value) {
    walk(root, obj, 0);
}

fn walk(node: &Node, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            for (name, sub) in &node.properties {
                match map.get(name) {
                    None => {
                        if let Some(d) = &sub.default {
                            map.insert(name.clone(), d.clone());
                        }
                    }
                    Some(Value::Null) if !sub.nullable => match &sub.default {
                        Some(d) => {
                            map.insert(name.clone(), d.clone());
                        }
                        None => {
                            map.remove(name);
                        }
                    },
                    Some(_) => {}
                }
            }
            for (key, v) in map.iter_mut() {
                if let Some(sub) = node.properties.get(key) {
                    walk(sub, v, depth + 1);
                } else if let Some(additional) = &node.additional {
                    walk(additional, v, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                for v in items.iter_mut() {
                    if v.is_null()
                        && !item.nullable
                        && let Some(d) = &item.default
                    {
                        *v = d.clone();
                    }
                    walk(item, v, depth + 1);
                }
            }
        }
        _ => {}
    }
}
