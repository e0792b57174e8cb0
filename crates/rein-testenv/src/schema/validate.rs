//! Value validation against an OpenAPI v3 schema, as kube-openapi's validator does it for
//! custom resources: types, enums, bounds, lengths, patterns, formats, items, properties,
//! `allOf`/`anyOf`/`oneOf`/`not`, each failure mapped to apiextensions-apiserver's cause.

use std::collections::HashMap;

use regex::Regex;
use serde_json::Value;

use super::cause::{Cause, child, go_float, index};
use super::format;
use super::node::MAX_DEPTH;

/// Where composite (`anyOf`, ...) errors land: apiextensions-apiserver reports them on a nil
/// field path.
const NIL_PATH: &str = "<nil>";

/// Validates `value` against `schema`; answers one cause per failure, in schema order.
pub(crate) fn validate(
    schema: &Value,
    value: &Value,
    patterns: &HashMap<String, Option<Regex>>,
) -> Vec<Cause> {
    let mut v = Validator {
        patterns,
        out: Vec::new(),
    };
    v.node(schema, value, "", 0);
    v.out
}

struct Validator<'a> {
    patterns: &'a HashMap<String, Option<Regex>>,
    out: Vec<Cause>,
}

impl Validator<'_> {
    fn node(&mut self, schema: &Value, value: &Value, path: &str, depth: usize) {
        if depth > MAX_DEPTH * 2 || !schema.is_object() {
            return;
        }
        let flag = |name: &str| schema.get(name).and_then(Value::as_bool) == Some(true);
        // apiextensions-apiserver validates int-or-string as `type: [integer, string]`.
        let ty = if flag("x-kubernetes-int-or-string") {
            "integer,string"
        } else {
            schema.get("type").and_then(Value::as_str).unwrap_or("")
        };
        if value.is_null() {
            if !ty.is_empty() && !flag("nullable") {
                self.type_error(path, ty, "null");
            }
            return;
        }
        if !ty.is_empty() && !type_matches(ty, value) {
            self.type_error(path, ty, json_type(value));
            return;
        }
        self.composites(schema, value, path, depth);
        match value {
            Value::String(s) => self.string(schema, value, s, path),
            Value::Number(_) => self.number(schema, value, path),
            _ => {}
        }
        self.enumeration(schema, value, path);
        match value {
            Value::Array(items) => self.array(schema, items, path, depth),
            Value::Object(map) => self.object(schema, map, path, depth),
            _ => {}
        }
    }

    fn type_error(&mut self, path: &str, expected: &str, actual: &str) {
        let actual_value = Value::String(actual.to_string());
        self.out.push(Cause::type_invalid(
            path,
            &actual_value,
            &format!("{path} in body must be of type {expected}: \"{actual}\""),
        ));
    }

    fn string(&mut self, schema: &Value, value: &Value, s: &str, path: &str) {
        let chars = s.chars().count() as i64;
        if let Some(max) = int_keyword(schema, "maxLength")
            && chars > max
        {
            self.out.push(Cause::too_long(path, max));
        }
        if let Some(min) = int_keyword(schema, "minLength")
            && chars < min
        {
            self.out.push(Cause::invalid(
                path,
                value,
                &format!("{path} in body should be at least {min} chars long"),
            ));
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
            let compiled = match self.patterns.get(pattern) {
                Some(compiled) => compiled.clone(),
                None => Regex::new(pattern).ok(),
            };
            if let Some(re) = compiled
                && !re.is_match(s)
            {
                self.out.push(Cause::invalid(
                    path,
                    value,
                    &format!("{path} in body should match '{pattern}'"),
                ));
            }
        }
        if let Some(fmt) = schema.get("format").and_then(Value::as_str)
            && format::known(fmt)
            && !format::valid(fmt, s)
        {
            self.out.push(Cause::type_invalid(
                path,
                value,
                &format!(
                    "{path} in body must be of type {fmt}: {}",
                    super::cause::go_quote(s)
                ),
            ));
        }
    }

    fn number(&mut self, schema: &Value, value: &Value, path: &str) {
        let Some(x) = value.as_f64() else { return };
        if let Some(factor) = schema.get("multipleOf").and_then(Value::as_f64)
            && factor > 0.0
        {
            let q = x / factor;
            if (q - q.round()).abs() > 1e-9 {
                self.out.push(Cause::invalid(
                    path,
                    value,
                    &format!(
                        "{path} in body should be a multiple of {}",
                        go_float(factor)
                    ),
                ));
            }
        }
        let flag = |name: &str| schema.get(name).and_then(Value::as_bool) == Some(true);
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
            let exclusive = flag("exclusiveMaximum");
            if x > max || (exclusive && x >= max) {
                let how = if exclusive {
                    "less than"
                } else {
                    "less than or equal to"
                };
                self.out.push(Cause::invalid(
                    path,
                    value,
                    &format!("{path} in body should be {how} {}", go_float(max)),
                ));
            }
        }
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
            let exclusive = flag("exclusiveMinimum");
            if x < min || (exclusive && x <= min) {
                let how = if exclusive {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                self.out.push(Cause::invalid(
                    path,
                    value,
                    &format!("{path} in body should be {how} {}", go_float(min)),
                ));
            }
        }
    }

    fn enumeration(&mut self, schema: &Value, value: &Value, path: &str) {
        let Some(allowed) = schema.get("enum").and_then(Value::as_array) else {
            return;
        };
        if allowed.iter().any(|a| json_equal(a, value)) {
            return;
        }
        let supported: Vec<String> = allowed
            .iter()
            .map(|a| match a {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        self.out.push(Cause::not_supported(path, value, &supported));
    }

    fn array(&mut self, schema: &Value, items: &[Value], path: &str, depth: usize) {
        if let Some(item_schema) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                self.node(item_schema, item, &index(path, i), depth + 1);
            }
        }
        let len = items.len() as i64;
        if let Some(min) = int_keyword(schema, "minItems")
            && len < min
        {
            self.out.push(Cause::invalid(
                path,
                &Value::from(len),
                &format!("{path} in body should have at least {min} items"),
            ));
        }
        if let Some(max) = int_keyword(schema, "maxItems")
            && len > max
        {
            self.out.push(Cause::too_many(path, len, max));
        }
        if schema.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
            let duplicate = items
                .iter()
                .enumerate()
                .any(|(i, a)| items[i + 1..].iter().any(|b| json_equal(a, b)));
            if duplicate {
                // kube-openapi's duplicate-items error carries no value.
                self.out.push(Cause::invalid(
                    path,
                    &Value::String(String::new()),
                    &format!("{path} in body shouldn't contain duplicates"),
                ));
            }
        }
    }

    fn object(
        &mut self,
        schema: &Value,
        map: &serde_json::Map<String, Value>,
        path: &str,
        depth: usize,
    ) {
        let count = map.len() as i64;
        if let Some(min) = int_keyword(schema, "minProperties")
            && count < min
        {
            self.out.push(Cause::invalid(
                path,
                &Value::from(count),
                &format!("{path} in body should have at least {min} properties"),
            ));
        }
        if let Some(max) = int_keyword(schema, "maxProperties")
            && count > max
        {
            self.out.push(Cause::too_many(path, count, max));
        }
        let props = schema.get("properties").and_then(Value::as_object);
        if let Some(props) = props {
            for (name, sub) in props {
                if let Some(v) = map.get(name) {
                    self.node(sub, v, &child(path, name), depth + 1);
                }
            }
        }
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !map.contains_key(name) {
                self.out.push(Cause::required(&child(path, name), ""));
            }
        }
        if let Some(additional @ Value::Object(_)) = schema.get("additionalProperties") {
            for (name, v) in map {
                if props.is_some_and(|p| p.contains_key(name)) {
                    continue;
                }
                self.node(additional, v, &child(path, name), depth + 1);
            }
        }
    }

    /// `allOf`, `anyOf`, `oneOf` and `not`: the failures of the alternatives plus
    /// kube-openapi's composite message on the nil path.
    fn composites(&mut self, schema: &Value, value: &Value, path: &str, depth: usize) {
        let quoted = super::cause::go_quote(path);
        let empty = Value::String(String::new());
        let run = |this: &mut Self, sub: &Value| -> Vec<Cause> {
            let mut inner = Validator {
                patterns: this.patterns,
                out: Vec::new(),
            };
            inner.node(sub, value, path, depth + 1);
            inner.out
        };
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            let mut failed = false;
            for sub in all {
                let errs = run(self, sub);
                failed |= !errs.is_empty();
                self.out.extend(errs);
            }
            if failed {
                self.out.push(Cause::invalid(
                    NIL_PATH,
                    &empty,
                    &format!("{quoted} must validate all the schemas (allOf)"),
                ));
            }
        }
        if let Some(any) = schema.get("anyOf").and_then(Value::as_array)
            && !any.is_empty()
        {
            let results: Vec<Vec<Cause>> = any.iter().map(|sub| run(self, sub)).collect();
            if results.iter().all(|r| !r.is_empty()) {
                self.out.push(Cause::invalid(
                    NIL_PATH,
                    &empty,
                    &format!("{quoted} must validate at least one schema (anyOf)"),
                ));
                if let Some(first) = results.into_iter().next() {
                    self.out.extend(first);
                }
            }
        }
        if let Some(one) = schema.get("oneOf").and_then(Value::as_array)
            && !one.is_empty()
        {
            let results: Vec<Vec<Cause>> = one.iter().map(|sub| run(self, sub)).collect();
            let valid = results.iter().filter(|r| r.is_empty()).count();
            if valid != 1 {
                let more = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                self.out.push(Cause::invalid(
                    NIL_PATH,
                    &empty,
                    &format!("{quoted} must validate one and only one schema (oneOf). {more}"),
                ));
                if valid == 0
                    && let Some(first) = results.into_iter().next()
                {
                    self.out.extend(first);
                }
            }
        }
        if let Some(not) = schema.get("not")
            && not.is_object()
            && run(self, not).is_empty()
        {
            self.out.push(Cause::invalid(
                NIL_PATH,
                &empty,
                &format!("{quoted} must not validate the schema (not)"),
            ));
        }
    }
}

/// Whether `value` has the OpenAPI `type` (an integral float is an integer, an integer is
/// a number, as kube-openapi's type validator allows).
fn type_matches(ty: &str, value: &Value) -> bool {
    match ty {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => is_integer(value),
        "integer,string" => is_integer(value) || value.is_string(),
        _ => true,
    }
}

/// An integer, or a float without a fraction.
pub(crate) fn is_integer(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

/// The JSON type name kube-openapi infers for `value`.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn int_keyword(schema: &Value, name: &str) -> Option<i64> {
    let v = schema.get(name)?;
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}
