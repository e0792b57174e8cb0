//! `x-kubernetes-validations`: compiled CEL rules evaluated with `self` (and `oldSelf` for
//! transition rules) on every node of an object, answering apiextensions-apiserver's causes.

use std::sync::Arc;

use cel::{Context, Program};
use serde_json::Value;

use super::cause::{Cause, child};
use super::compile::{compile, env, free_variables};
use super::convert::to_cel;
use super::node::Node;

/// The longest message a `messageExpression` may produce (celconfig's limit).
const MAX_MESSAGE_BYTES: usize = 5120;

/// One compiled rule.
#[derive(Debug)]
pub(crate) struct Rule {
    /// `rule`.
    pub(crate) text: String,
    /// The compiled rule, or the compile error's detail.
    program: Result<Arc<Program>, String>,
    /// `message`.
    message: Option<String>,
    /// `messageExpression`, compiled (or its compile error).
    message_expression: Option<Result<Arc<Program>, String>>,
    /// `reason`.
    reason: Option<String>,
    /// `fieldPath`, relative to the schema node.
    field_path: Option<String>,
    /// Whether the rule reads `oldSelf` (a transition rule).
    uses_old_self: bool,
    /// `optionalOldSelf`: the rule also runs without an old value, `oldSelf` an optional.
    optional_old_self: bool,
}

impl Rule {
    /// Compiles one `x-kubernetes-validations` entry (never fails: the error is kept).
    pub(crate) fn compile(raw: &Value) -> Rule {
        let text = raw
            .get("rule")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let program = compile(&text);
        let uses_old_self = program
            .as_ref()
            .is_ok_and(|p| free_variables(p.expression()).contains("oldSelf"));
        let string = |name: &str| raw.get(name).and_then(Value::as_str).map(str::to_string);
        Rule {
            program: program.map(Arc::new),
            message: string("message").filter(|m| !m.trim().is_empty()),
            message_expression: string("messageExpression")
                .filter(|m| !m.trim().is_empty())
                .map(|m| compile(&m).map(Arc::new)),
            reason: string("reason"),
            field_path: string("fieldPath"),
            uses_old_self,
            optional_old_self: raw.get("optionalOldSelf").and_then(Value::as_bool) == Some(true),
            text,
        }
    }

    /// The rule's compile error, if it does not compile (`compilation failed: ...`).
    pub(crate) fn compile_error(&self) -> Option<&str> {
        self.program.as_ref().err().map(String::as_str)
    }

    /// Whether the rule compiled and reads `oldSelf` (a transition rule).
    pub(crate) fn uses_old_self(&self) -> bool {
        self.uses_old_self
    }

    /// The `messageExpression`'s compile error, if any.
    pub(crate) fn message_expression_error(&self) -> Option<&str> {
        match &self.message_expression {
            Some(Err(e)) => Some(e),
            _ => None,
        }
    }

    /// `message`, else the rule, trimmed (`ruleErrorString`).
    fn error_string(&self) -> String {
        self.message
            .as_deref()
            .unwrap_or(&self.text)
            .trim()
            .to_string()
    }
}

/// Evaluates every rule under `node` against `value` (and `old`, for transition rules),
/// appending one cause per failing rule. `path` is the field path of `value` (empty: root).
pub(crate) fn evaluate(
    node: &Node,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<Cause>,
) {
    walk(node, value, old, path, out, 0);
}

fn walk(
    node: &Node,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<Cause>,
    depth: usize,
) {
    if value.is_null() || depth > super::node::MAX_DEPTH {
        return;
    }
    for rule in &node.rules {
        run(rule, node, value, old, path, out);
    }
    match value {
        Value::Object(map) => {
            for (name, sub) in &node.properties {
                if let Some(v) = map.get(name) {
                    let old_v = old.and_then(|o| o.get(name));
                    walk(sub, v, old_v, &child(path, name), out, depth + 1);
                }
            }
            if let Some(additional) = &node.additional {
                for (key, v) in map {
                    let old_v = old.and_then(|o| o.get(key));
                    let p = super::cause::key(path, key);
                    walk(additional, v, old_v, &p, out, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                let old_items = old.and_then(Value::as_array);
                for (i, v) in items.iter().enumerate() {
                    let old_v = old_items.and_then(|olds| correlate(node, v, olds));
                    walk(
                        item,
                        v,
                        old_v,
                        &super::cause::index(path, i),
                        out,
                        depth + 1,
                    );
                }
            }
        }
        _ => {}
    }
}

/// The old item an item corresponds to: by key for `listType: map`, by value for `set`;
/// atomic lists do not correlate.
fn correlate<'a>(node: &Node, item: &Value, olds: &'a [Value]) -> Option<&'a Value> {
    if !node.map_keys.is_empty() {
        return olds.iter().find(|o| {
            node.map_keys
                .iter()
                .all(|k| o.get(k).is_some() && o.get(k) == item.get(k))
        });
    }
    if node
        .raw
        .get("x-kubernetes-list-type")
        .and_then(Value::as_str)
        == Some("set")
    {
        return olds.iter().find(|o| *o == item);
    }
    None
}

fn run(
    rule: &Rule,
    node: &Node,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let field = if path.is_empty() { "<nil>" } else { path };
    let type_value = Value::String(if node.ty.is_empty() {
        "object".to_string()
    } else {
        node.ty.clone()
    });
    let program = match &rule.program {
        Ok(p) => p,
        Err(e) => {
            out.push(Cause::invalid(
                field,
                &type_value,
                &format!("rule compile error: {e}"),
            ));
            return;
        }
    };
    if rule.uses_old_self && old.is_none() && !rule.optional_old_self {
        return;
    }
    // Ratcheting: a rule that does not read oldSelf does not fail a value the write left
    // unchanged (kube-apiserver turns that failure into a warning).
    if !rule.uses_old_self && old == Some(value) {
        return;
    }
    let mut ctx = Context::with_env(env().clone());
    ctx.add_variable_from_value("self", to_cel(value, Some(node)));
    if rule.optional_old_self {
        let optional = match old {
            Some(old) => cel::objects::OptionalValue::of(to_cel(old, Some(node))),
            None => cel::objects::OptionalValue::none(),
        };
        ctx.add_variable_from_value("oldSelf", cel::Value::Opaque(Arc::new(optional)));
    } else if let Some(old) = old {
        ctx.add_variable_from_value("oldSelf", to_cel(old, Some(node)));
    }
    let result = program.execute(&ctx);
    match result {
        Ok(cel::Value::Bool(true)) => return,
        Ok(cel::Value::Bool(false)) => {}
        Ok(_) => {
            out.push(Cause::invalid(
                field,
                &type_value,
                &format!(
                    "'no such overload': call arguments did not match a supported operator, \
                     function or macro signature for rule: {}",
                    rule.error_string()
                ),
            ));
            return;
        }
        Err(e) => {
            let text = match &e {
                // cel-go's error is the bare message.
                cel::ExecutionError::FunctionError { message, .. }
                    if message == "optional.none() dereference" =>
                {
                    message.clone()
                }
                _ => lower_first(&e.to_string()),
            };
            let detail = if is_overload_error(&text) {
                format!(
                    "'no such overload': call arguments did not match a supported operator, \
                     function or macro signature for rule: {}",
                    rule.error_string()
                )
            } else {
                format!("{text} evaluating rule: {}", rule.error_string())
            };
            out.push(Cause::invalid(field, &type_value, &detail));
            return;
        }
    }
    let failing_field = match rule.field_path.as_deref().map(normalize_field_path) {
        Some(fp) if !fp.is_empty() => child(path, &fp),
        _ => field.to_string(),
    };
    let detail = message_from_expression(rule, &ctx).unwrap_or_else(|| match &rule.message {
        Some(m) => m.trim().to_string(),
        None => format!("failed rule: {}", rule.error_string()),
    });
    let cause = match rule.reason.as_deref() {
        Some("FieldValueForbidden") => Cause::forbidden(&failing_field, &detail),
        Some("FieldValueRequired") => Cause::required(&failing_field, &detail),
        Some("FieldValueDuplicate") if value.is_object() || value.is_array() => {
            Cause::duplicate_omitted(&failing_field)
        }
        Some("FieldValueDuplicate") => Cause::duplicate(&failing_field, value),
        _ if value.is_object() || value.is_array() => {
            Cause::invalid_omitted(&failing_field, &detail)
        }
        _ => Cause::invalid(&failing_field, value, &detail),
    };
    out.push(cause);
}

/// The `messageExpression`'s message, when it evaluates to a usable one.
fn message_from_expression(rule: &Rule, ctx: &Context<'_, '_>) -> Option<String> {
    let program = rule.message_expression.as_ref()?.as_ref().ok()?;
    match program.execute(ctx) {
        Ok(cel::Value::String(s)) => {
            let trimmed = s.trim();
            (!trimmed.is_empty() && trimmed.len() <= MAX_MESSAGE_BYTES && !trimmed.contains('\n'))
                .then(|| trimmed.to_string())
        }
        _ => None,
    }
}

/// `.spec.x` / `['x']` → `x` segments joined by `.`.
fn normalize_field_path(fp: &str) -> String {
    let mut out = Vec::new();
    let mut rest = fp.trim();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            out.push(r[..end].to_string());
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']").unwrap_or(r.len());
            out.push(r[..end].to_string());
            rest = r.get(end + 2..).unwrap_or("");
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').unwrap_or(r.len());
            if let Some(last) = out.last_mut() {
                last.push_str(&format!("[{}]", &r[..end]));
            }
            rest = r.get(end + 1..).unwrap_or("");
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            out.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    out.join(".")
}

fn is_overload_error(text: &str) -> bool {
    [
        "no such overload",
        "unsupported binary operator",
        "unsupported unary operator",
        "invalid argument type",
        "unexpected type",
        "can not be compared",
    ]
    .iter()
    .any(|p| text.starts_with(p) || text.contains(p))
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
