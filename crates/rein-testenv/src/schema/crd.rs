//! The checks a CRD write makes on a version's `openAPIV3Schema`: the structural-schema
//! invariants apiextensions-apiserver enforces and CEL rules that do not compile, with its
//! field paths and messages.

use serde_json::Value;

use super::cause::{Cause, go_quote};
use super::node::MAX_DEPTH;
use super::rules::Rule;

/// Where a schema node sits, which decides the wording of a missing `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The structural-schema errors and CEL compile errors of `spec.versions[version_index]`'s
/// `schema.openAPIV3Schema`, with kube-apiserver's field paths
/// (`spec.versions[0].schema.openAPIV3Schema.properties[spec].type`).
pub(crate) fn crd_schema_causes(version_index: usize, schema: &Value) -> Vec<Cause> {
    let path = format!("spec.versions[{version_index}].schema.openAPIV3Schema");
    crd_schema_causes_at(&path, schema)
}

/// [`crd_schema_causes`] for a schema at `path` (`spec.validation.openAPIV3Schema` for the
/// schema all versions share).
pub(crate) fn crd_schema_causes_at(path: &str, schema: &Value) -> Vec<Cause> {
    let path = path.to_string();
    let mut out = Vec::new();
    if !schema.is_object() {
        out.push(Cause::required(
            &format!("{path}.type"),
            "must not be empty at the root",
        ));
        return out;
    }
    // Rules compile on a large stack (see `stack`).
    let checked = super::stack::with_large_stack(|| {
        let mut found = Vec::new();
        structural(schema, Level::Root, &path, &mut found, 0);
        found
    });
    match checked {
        Some(found) => out.extend(found),
        None => out.push(Cause::internal(&path, "the schema could not be checked")),
    }
    out
}

fn structural(s: &Value, level: Level, path: &str, out: &mut Vec<Cause>, depth: usize) {
    if depth > MAX_DEPTH || !s.is_object() {
        return;
    }
    let ty = s.get("type").and_then(Value::as_str).unwrap_or("");
    let flag = |name: &str| s.get(name).and_then(Value::as_bool) == Some(true);
    let embedded = flag("x-kubernetes-embedded-resource");
    let int_or_string = flag("x-kubernetes-int-or-string");
    let preserve = flag("x-kubernetes-preserve-unknown-fields");
    if ty == "array" && s.get("items").is_none() {
        out.push(Cause::required(
            &format!("{path}.items"),
            "must be specified",
        ));
    }
    if let Some(items) = s.get("items") {
        structural(items, Level::Item, &format!("{path}.items"), out, depth + 1);
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            let child = format!("{path}.properties[{k}]");
            structural(v, Level::Field, &child, out, depth + 1);
        }
    }
    if let Some(additional) = s.get("additionalProperties") {
        if level == Level::Root {
            out.push(Cause::forbidden(
                &format!("{path}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        if s.get("properties").is_some() && additional != &Value::Bool(false) {
            out.push(Cause::forbidden(
                &format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if additional.is_object() {
            structural(
                additional,
                Level::Field,
                &format!("{path}.additionalProperties"),
                out,
                depth + 1,
            );
        }
    }
    if embedded && ty != "object" {
        if ty.is_empty() {
            out.push(Cause::required(
                &format!("{path}.type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            out.push(Cause::invalid(
                &format!("{path}.type"),
                &Value::String(ty.to_string()),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if ty.is_empty() && !int_or_string && !preserve {
        let why = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(Cause::required(&format!("{path}.type"), why));
    }
    if embedded && s.get("additionalProperties").is_some() {
        out.push(Cause::forbidden(
            &format!("{path}.additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        out.push(Cause::invalid(
            &format!("{path}.type"),
            &Value::String(ty.to_string()),
            "must be object at the root",
        ));
    }
    if let Some(p) = s.get("x-kubernetes-preserve-unknown-fields")
        && p != &Value::Bool(true)
    {
        out.push(Cause::invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            p,
            "must be true or undefined",
        ));
    }
    if int_or_string && preserve {
        out.push(Cause::invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        out.push(Cause::invalid(
            &format!("{path}.x-kubernetes-embedded-resource"),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    pattern(s, path, out);
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (i, sub) in s
            .get(junctor)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            nested(sub, &format!("{path}.{junctor}[{i}]"), out, depth + 1);
        }
    }
    if let Some(not) = s.get("not") {
        nested(not, &format!("{path}.not"), out, depth + 1);
    }
    rules(s, path, out);
}

/// Value validations under a junctor may not carry structural keywords.
fn nested(s: &Value, path: &str, out: &mut Vec<Cause>, depth: usize) {
    if depth > MAX_DEPTH || !s.is_object() {
        return;
    }
    let forbidden: [(&str, &str); 12] = [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        ),
        (
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        ),
        ("x-kubernetes-validations", "must be empty to be structural"),
    ];
    for (key, why) in forbidden {
        let present = match s.get(key) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::String(v)) => !v.is_empty(),
            Some(Value::Array(v)) => !v.is_empty(),
            Some(_) => true,
        };
        if present {
            out.push(Cause::forbidden(&format!("{path}.{key}"), why));
        }
    }
    pattern(s, path, out);
    if let Some(items) = s.get("items") {
        nested(items, &format!("{path}.items"), out, depth + 1);
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            nested(v, &format!("{path}.properties[{k}]"), out, depth + 1);
        }
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (i, sub) in s
            .get(junctor)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            nested(sub, &format!("{path}.{junctor}[{i}]"), out, depth + 1);
        }
    }
    if let Some(not) = s.get("not") {
        nested(not, &format!("{path}.not"), out, depth + 1);
    }
}

fn pattern(s: &Value, path: &str, out: &mut Vec<Cause>) {
    if let Some(p) = s.get("pattern").and_then(Value::as_str)
        && let Err(e) = regex::Regex::new(p)
    {
        let first = e.to_string();
        let first = first.lines().last().unwrap_or_default().trim().to_string();
        out.push(Cause::invalid(
            &format!("{path}.pattern"),
            &Value::String(p.to_string()),
            &format!("must be a valid regular expression, but isn't: {first}"),
        ));
    }
}

/// `x-kubernetes-validations`: a rule must be given and compile; a multi-line rule needs a
/// message; a `messageExpression` must compile; `optionalOldSelf` needs a rule reading
/// `oldSelf`.
fn rules(s: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(list) = s.get("x-kubernetes-validations").and_then(Value::as_array) else {
        return;
    };
    for (i, raw) in list.iter().enumerate() {
        let base = format!("{path}.x-kubernetes-validations[{i}]");
        let text = raw.get("rule").and_then(Value::as_str).unwrap_or_default();
        if text.trim().is_empty() {
            out.push(Cause::required(
                &format!("{base}.rule"),
                "rule is not specified",
            ));
            continue;
        }
        let message = raw
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if text.contains('\n') && message.is_empty() {
            out.push(Cause::required(
                &format!("{base}.message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if let Some(expr) = raw.get("messageExpression").and_then(Value::as_str)
            && expr.trim().is_empty()
        {
            out.push(Cause::required(
                &format!("{base}.messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = raw.get("reason").and_then(Value::as_str)
            && !matches!(
                reason,
                "FieldValueInvalid"
                    | "FieldValueForbidden"
                    | "FieldValueRequired"
                    | "FieldValueDuplicate"
            )
        {
            out.push(Cause::not_supported(
                &format!("{base}.reason"),
                &Value::String(reason.to_string()),
                &[
                    "FieldValueDuplicate".to_string(),
                    "FieldValueForbidden".to_string(),
                    "FieldValueInvalid".to_string(),
                    "FieldValueRequired".to_string(),
                ],
            ));
        }
        let rule = Rule::compile(raw);
        let printed = printed_rule(raw);
        if let Some(err) = rule.compile_error() {
            out.push(Cause::invalid_printed(
                &format!("{base}.rule"),
                &printed,
                err,
            ));
        }
        if let Some(err) = rule.message_expression_error() {
            out.push(Cause::invalid_printed(
                &format!("{base}.messageExpression"),
                &printed,
                &format!("messageExpression {err}"),
            ));
        }
        // A rule that does not compile does not read oldSelf either, as in kube.
        if !rule.uses_old_self()
            && let Some(optional) = raw.get("optionalOldSelf").filter(|v| v.is_boolean())
        {
            out.push(Cause::invalid(
                &format!("{base}.optionalOldSelf"),
                optional,
                "may not be set if oldSelf is not used in rule",
            ));
        }
    }
}

/// A rule as kube-apiserver prints the bad value (`%#v` of its internal `ValidationRule`).
fn printed_rule(raw: &Value) -> String {
    let text = |name: &str| go_quote(raw.get(name).and_then(Value::as_str).unwrap_or_default());
    let reason = if raw.get("reason").is_some_and(Value::is_string) {
        "(*apiextensions.FieldValueErrorReason)(0xc000000000)"
    } else {
        "(*apiextensions.FieldValueErrorReason)(nil)"
    };
    let optional = if raw.get("optionalOldSelf").is_some_and(Value::is_boolean) {
        "(*bool)(0xc000000000)"
    } else {
        "(*bool)(nil)"
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, \
         FieldPath:{}, OptionalOldSelf:{optional}}}",
        text("rule"),
        text("message"),
        text("messageExpression"),
        text("fieldPath"),
    )
}
