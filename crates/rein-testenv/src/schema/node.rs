//! A CRD version's `openAPIV3Schema` compiled once: the structural tree (types, properties,
//! items, extensions, defaults, CEL rules) that pruning, defaulting and rules walk, plus every
//! `pattern` compiled to a regex.

use std::collections::{BTreeMap, HashMap};

use regex::Regex;
use serde_json::Value;

use super::rules::Rule;

/// How deep a schema may nest before the rest is treated as opaque (a malformed or hostile
/// schema must not overflow the stack).
pub(crate) const MAX_DEPTH: usize = 64;

/// One node of a structural schema.
#[derive(Debug)]
pub(crate) struct Node {
    /// The schema as written (value validations read it directly).
    pub(crate) raw: Value,
    /// `type`, empty when not set.
    pub(crate) ty: String,
    /// `nullable`.
    pub(crate) nullable: bool,
    /// `properties`.
    pub(crate) properties: BTreeMap<String, Node>,
    /// `additionalProperties` as a schema (a map's values).
    pub(crate) additional: Option<Box<Node>>,
    /// `items`.
    pub(crate) items: Option<Box<Node>>,
    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub(crate) preserve_unknown: bool,
    /// `x-kubernetes-embedded-resource: true`.
    pub(crate) embedded: bool,
    /// `default`.
    pub(crate) default: Option<Value>,
    /// `x-kubernetes-validations`, compiled.
    pub(crate) rules: Vec<Rule>,
    /// `x-kubernetes-list-map-keys` when `x-kubernetes-list-type: map`.
    pub(crate) map_keys: Vec<String>,
}

impl Node {
    /// Compiles `raw` (never fails: what cannot be understood is left opaque, and rules that
    /// do not compile answer their compile error when evaluated).
    pub(crate) fn compile(raw: &Value, patterns: &mut HashMap<String, Option<Regex>>) -> Node {
        Node::compile_at(raw, patterns, 0)
    }

    /// Whether this node or any below it has a `default`.
    pub(crate) fn has_defaults(&self) -> bool {
        self.default.is_some()
            || self.properties.values().any(Node::has_defaults)
            || self.additional.as_deref().is_some_and(Node::has_defaults)
            || self.items.as_deref().is_some_and(Node::has_defaults)
    }

    /// Whether this node or any below it has `x-kubernetes-validations`.
    pub(crate) fn has_rules(&self) -> bool {
        !self.rules.is_empty()
            || self.properties.values().any(Node::has_rules)
            || self.additional.as_deref().is_some_and(Node::has_rules)
            || self.items.as_deref().is_some_and(Node::has_rules)
    }

    fn compile_at(
        raw: &Value,
        patterns: &mut HashMap<String, Option<Regex>>,
        depth: usize,
    ) -> Node {
        collect_patterns(raw, patterns, depth);
        let flag = |name: &str| raw.get(name).and_then(Value::as_bool) == Some(true);
        let deeper = depth < MAX_DEPTH;
        let properties = match raw.get("properties").and_then(Value::as_object) {
            Some(props) if deeper => props
                .iter()
                .map(|(k, v)| (k.clone(), Node::compile_at(v, patterns, depth + 1)))
                .collect(),
            _ => BTreeMap::new(),
        };
        let additional = match raw.get("additionalProperties") {
            Some(v @ Value::Object(_)) if deeper => {
                Some(Box::new(Node::compile_at(v, patterns, depth + 1)))
            }
            _ => None,
        };
        let items = match raw.get("items") {
            Some(v @ Value::Object(_)) if deeper => {
                Some(Box::new(Node::compile_at(v, patterns, depth + 1)))
            }
            _ => None,
        };
        let list_type = raw.get("x-kubernetes-list-type").and_then(Value::as_str);
        let map_keys = if list_type == Some("map") {
            raw.get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(|k| k.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let rules = raw
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(Rule::compile).collect())
            .unwrap_or_default();
        Node {
            ty: raw
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            nullable: flag("nullable"),
            properties,
            additional,
            items,
            preserve_unknown: flag("x-kubernetes-preserve-unknown-fields")
                || !deeper && raw.get("properties").is_some(),
            embedded: flag("x-kubernetes-embedded-resource"),
            default: raw.get("default").cloned(),
            rules,
            map_keys,
            raw: raw.clone(),
        }
    }
}

/// Compiles every `pattern` in this node's own keywords and its value validations
/// (`allOf`/`anyOf`/`oneOf`/`not`, which the structural tree does not hold).
fn collect_patterns(raw: &Value, patterns: &mut HashMap<String, Option<Regex>>, depth: usize) {
    if depth > MAX_DEPTH * 2 {
        return;
    }
    if let Some(p) = raw.get("pattern").and_then(Value::as_str)
        && !patterns.contains_key(p)
    {
        patterns.insert(p.to_string(), Regex::new(p).ok());
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for sub in raw.get(key).and_then(Value::as_array).into_iter().flatten() {
            collect_all_patterns(sub, patterns, depth + 1);
        }
    }
    if let Some(not) = raw.get("not") {
        collect_all_patterns(not, patterns, depth + 1);
    }
}

/// Every `pattern` anywhere under a value-validation schema.
fn collect_all_patterns(raw: &Value, patterns: &mut HashMap<String, Option<Regex>>, depth: usize) {
    if depth > MAX_DEPTH * 2 {
        return;
    }
    collect_patterns(raw, patterns, depth);
    for sub in raw
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|p| p.values())
        .chain(raw.get("items"))
        .chain(raw.get("additionalProperties"))
    {
        collect_all_patterns(sub, patterns, depth + 1);
    }
}
