//! `x-kubernetes-validations`: CEL rules compiled with the cel-rust interpreter and evaluated
//! with `self` (and `oldSelf` for transition rules), answering apiextensions-apiserver's causes.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use cel::common::ast::{EntryExpr, Expr};
use cel::{Context, Env, IdedExpr, Program};
use serde_json::Value;

use super::cause::{Cause, child};
use super::node::Node;

/// cel-go's limit on a rule's size.
const MAX_SOURCE_CODE_POINTS: usize = 100_000;

/// How deep a compiled expression may nest (cel-go's parser stops at 250 levels; chains of
/// operators nest too, and the interpreter recurses once per level).
const MAX_DEPTH: usize = 250;

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
            let text = lower_first(&e.to_string());
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

/// The shared environment: the CEL standard library and macros plus the strings extension.
fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // The extension only declares new overloads on a fresh standard environment.
        let _ = env.add_extension(cel::extensions::strings);
        super::library::register(&mut env);
        Arc::new(env)
    })
}

/// Functions (besides operators) the environment provides, as kube-apiserver's CEL
/// environment names them; anything else is an undeclared reference at compile time.
const FUNCTIONS: &[&str] = &[
    "size",
    "has",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
    "matches",
    "startsWith",
    "endsWith",
    "contains",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    "hasValue",
    "value",
    "orValue",
    "or",
    "optional.of",
    "optional.none",
    "optional.ofNonZeroValue",
    "duration",
    "timestamp",
    "getDate",
    "getDayOfMonth",
    "getDayOfWeek",
    "getDayOfYear",
    "getFullYear",
    "getHours",
    "getMilliseconds",
    "getMinutes",
    "getMonth",
    "getSeconds",
];

/// Compiles `source` like kube-apiserver's CEL compiler would be asked to: a parse error or
/// an undeclared variable or function is a compile error (`compilation failed: ERROR: ...`).
pub(crate) fn compile(source: &str) -> Result<Program, String> {
    let size = source.chars().count();
    if size > MAX_SOURCE_CODE_POINTS {
        return Err(format!(
            "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds limit: \
             size: {size}, limit {MAX_SOURCE_CODE_POINTS}"
        ));
    }
    let program = env()
        .compile(source)
        .map_err(|e| format!("compilation failed: {}", parse_error_text(&e.to_string())))?;
    if depth(program.expression(), 0) > MAX_DEPTH {
        return Err(format!(
            "compilation failed: ERROR: <input>:1:1: max recursion depth exceeded: {MAX_DEPTH}"
        ));
    }
    let mut undeclared = None;
    find_undeclared(program.expression(), &mut HashSet::new(), &mut undeclared);
    if let Some((name, id)) = undeclared {
        // cel-rust knows the node's byte offsets; cel-go prints a 1-based line and column.
        let start = program
            .source_info()
            .offset_for(id)
            .map_or(0, |(start, _)| usize::try_from(start).unwrap_or(0))
            .min(source.len());
        let before = source.get(..start).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before.get(line_start..).unwrap_or_default().chars().count();
        let src_line = source.lines().nth(line - 1).unwrap_or(source);
        let caret = format!("{}^", ".".repeat(col));
        let col = col + 1;
        return Err(format!(
            "compilation failed: ERROR: <input>:{line}:{col}: undeclared reference to '{name}' \
             (in container '')\n | {src_line}\n | {caret}"
        ));
    }
    Ok(program)
}

fn parse_error_text(text: &str) -> String {
    if text.starts_with("ERROR") {
        text.to_string()
    } else {
        format!("ERROR: <input>: {text}")
    }
}

/// The first variable other than `self`/`oldSelf` (and comprehension variables in scope) or
/// unknown function the expression uses, with the node id.
fn find_undeclared(
    expr: &IdedExpr,
    scope: &mut HashSet<String>,
    found: &mut Option<(String, u64)>,
) {
    if found.is_some() {
        return;
    }
    match &expr.expr {
        Expr::Ident(name)
            if !name.starts_with('@')
                && name != "self"
                && name != "oldSelf"
                && !scope.contains(name)
                && !is_type_name(name) =>
        {
            *found = Some((name.clone(), expr.id));
        }
        Expr::Call(call) => {
            let name = call.func_name.as_str();
            let operator = name.starts_with('_') || name.starts_with('@') || name.starts_with('!');
            if !operator && !FUNCTIONS.contains(&name) && !super::library::NAMES.contains(&name) {
                *found = Some((name.to_string(), expr.id));
                return;
            }
            if let Some(target) = &call.target {
                find_undeclared(target, scope, found);
            }
            for arg in &call.args {
                find_undeclared(arg, scope, found);
            }
        }
        Expr::Comprehension(comp) => {
            find_undeclared(&comp.iter_range, scope, found);
            find_undeclared(&comp.accu_init, scope, found);
            let mut inner = scope.clone();
            inner.insert(comp.iter_var.clone());
            if let Some(v) = &comp.iter_var2 {
                inner.insert(v.clone());
            }
            inner.insert(comp.accu_var.clone());
            find_undeclared(&comp.loop_cond, &mut inner, found);
            find_undeclared(&comp.loop_step, &mut inner, found);
            find_undeclared(&comp.result, &mut inner, found);
        }
        Expr::List(list) => {
            for e in &list.elements {
                find_undeclared(e, scope, found);
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                match &entry.expr {
                    EntryExpr::StructField(f) => find_undeclared(&f.value, scope, found),
                    EntryExpr::MapEntry(e) => {
                        find_undeclared(&e.key, scope, found);
                        find_undeclared(&e.value, scope, found);
                    }
                }
            }
        }
        Expr::Select(select) => find_undeclared(&select.operand, scope, found),
        _ => {}
    }
}

fn is_type_name(name: &str) -> bool {
    matches!(
        name,
        "int"
            | "uint"
            | "double"
            | "string"
            | "bytes"
            | "bool"
            | "list"
            | "map"
            | "null_type"
            | "type"
    )
}

/// The variables an expression reads that no comprehension binds.
fn free_variables(expr: &IdedExpr) -> HashSet<String> {
    fn go(expr: &IdedExpr, scope: &HashSet<String>, out: &mut HashSet<String>) {
        match &expr.expr {
            Expr::Ident(name) if !scope.contains(name) => {
                out.insert(name.clone());
            }
            Expr::Call(call) => {
                if let Some(t) = &call.target {
                    go(t, scope, out);
                }
                for a in &call.args {
                    go(a, scope, out);
                }
            }
            Expr::Comprehension(comp) => {
                go(&comp.iter_range, scope, out);
                go(&comp.accu_init, scope, out);
                let mut inner = scope.clone();
                inner.insert(comp.iter_var.clone());
                inner.insert(comp.accu_var.clone());
                if let Some(v) = &comp.iter_var2 {
                    inner.insert(v.clone());
                }
                go(&comp.loop_cond, &inner, out);
                go(&comp.loop_step, &inner, out);
                go(&comp.result, &inner, out);
            }
            Expr::List(list) => list.elements.iter().for_each(|e| go(e, scope, out)),
            Expr::Map(map) => {
                for entry in &map.entries {
                    match &entry.expr {
                        EntryExpr::StructField(f) => go(&f.value, scope, out),
                        EntryExpr::MapEntry(e) => {
                            go(&e.key, scope, out);
                            go(&e.value, scope, out);
                        }
                    }
                }
            }
            Expr::Select(select) => go(&select.operand, scope, out),
            _ => {}
        }
    }
    let mut out = HashSet::new();
    go(expr, &HashSet::new(), &mut out);
    out
}

/// JSON → CEL, typed by the schema where it says more than JSON does (`number` fields hold
/// doubles even when written as integers).
pub(crate) fn to_cel(value: &Value, node: Option<&Node>) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => {
            if node.is_some_and(|n| n.ty == "number") {
                cel::Value::Float(n.as_f64().unwrap_or_default())
            } else if let Some(i) = n.as_i64() {
                cel::Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                cel::Value::UInt(u)
            } else {
                cel::Value::Float(n.as_f64().unwrap_or_default())
            }
        }
        Value::String(s) => typed_string(s, node),
        Value::Array(items) => {
            let item = node.and_then(|n| n.items.as_deref());
            cel::Value::List(Arc::new(items.iter().map(|v| to_cel(v, item)).collect()))
        }
        Value::Object(map) => {
            let entries: HashMap<String, cel::Value> = map
                .iter()
                .map(|(k, v)| {
                    let sub = node.and_then(|n| n.properties.get(k).or(n.additional.as_deref()));
                    (k.clone(), to_cel(v, sub))
                })
                .collect();
            cel::Value::from(entries)
        }
    }
}

/// The nesting depth of an expression, counted up to just past [`MAX_DEPTH`].
fn depth(expr: &IdedExpr, level: usize) -> usize {
    if level > MAX_DEPTH {
        return level;
    }
    let below = |e: &IdedExpr| depth(e, level + 1);
    match &expr.expr {
        Expr::Call(call) => call
            .target
            .iter()
            .map(|t| below(t))
            .chain(call.args.iter().map(below))
            .max()
            .unwrap_or(level),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .map(below)
        .max()
        .unwrap_or(level),
        Expr::List(list) => list.elements.iter().map(below).max().unwrap_or(level),
        Expr::Map(map) => map
            .entries
            .iter()
            .map(|entry| match &entry.expr {
                EntryExpr::StructField(f) => below(&f.value),
                EntryExpr::MapEntry(e) => below(&e.key).max(below(&e.value)),
            })
            .max()
            .unwrap_or(level),
        Expr::Select(select) => below(&select.operand),
        _ => level,
    }
}

/// A string as Kubernetes' CEL types it by its `format`: `date-time` and `date` are
/// timestamps, `duration` a duration, `byte` bytes (a value that does not parse stays a
/// string; schema validation reports it).
fn typed_string(s: &str, node: Option<&Node>) -> cel::Value {
    let format = node
        .and_then(|n| n.raw.get("format"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let typed = match format {
        "date-time" | "datetime" => chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .map(cel::Value::Timestamp),
        "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| cel::Value::Timestamp(t.and_utc().fixed_offset())),
        "duration" => go_duration(s).map(cel::Value::Duration),
        "byte" => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .ok()
                .map(|b| cel::Value::Bytes(Arc::new(b)))
        }
        _ => None,
    };
    typed.unwrap_or_else(|| cel::Value::String(Arc::new(s.to_string())))
}

/// A Go duration (`1h30m`, `-1.5s`, `250ms`).
fn go_duration(s: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    let mut nanos: f64 = 0.0;
    let mut any = false;
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..number_end].parse().ok()?;
        let unit_rest = &rest[number_end..];
        let unit_end = unit_rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(unit_rest.len());
        let scale = match &unit_rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        nanos += number * scale;
        any = true;
        rest = &unit_rest[unit_end..];
    }
    if !any || !nanos.is_finite() || nanos.abs() > i64::MAX as f64 {
        return None;
    }
    let nanos = nanos as i64;
    Some(chrono::Duration::nanoseconds(if negative {
        -nanos
    } else {
        nanos
    }))
}
