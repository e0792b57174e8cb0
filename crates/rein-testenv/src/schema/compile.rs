//! Compiling CEL rules as kube-apiserver's compiler would be asked to: cel-go's size and
//! nesting limits, and the variables (`self`, `oldSelf`) and functions the Kubernetes CEL
//! environment declares; anything else is a compile error, never a panic. cel-go's optional
//! types library is cel-rust's own (`optional.of`, `hasValue`, `optMap`, `a.?b`, `m[?k]`,
//! `[?x]`, `{?k: v}`); namespaced functions are looked up by their qualified name.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use cel::common::ast::{EntryExpr, Expr};
use cel::{Env, IdedExpr, Program};

/// cel-go's limit on a rule's size.
const MAX_SOURCE_CODE_POINTS: usize = 100_000;

/// How deep a compiled expression may nest (cel-go's parser stops at 250 levels; chains of
/// operators nest too, and the interpreter recurses once per level).
const MAX_DEPTH: usize = 250;

/// The shared environment: the CEL standard library and macros plus the strings extension.
pub(crate) fn env() -> &'static Arc<Env> {
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
            // A namespaced function (`optional.of(x)`, also what the `optMap`/`optFlatMap`
            // macros expand to) parses as a call of `of` on the identifier `optional`: as
            // cel-go's checker, the qualified name is looked up first.
            if let Some(qualified) = call
                .target
                .as_deref()
                .and_then(qualified_name)
                .map(|namespace| format!("{namespace}.{}", call.func_name))
                && FUNCTIONS.contains(&qualified.as_str())
            {
                for arg in &call.args {
                    find_undeclared(arg, scope, found);
                }
                return;
            }
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

/// The dotted name an identifier or a chain of field selections spells (`a.b.c`).
fn qualified_name(expr: &IdedExpr) -> Option<String> {
    match &expr.expr {
        Expr::Ident(name) => Some(name.clone()),
        Expr::Select(select) if !select.test => {
            qualified_name(&select.operand).map(|operand| format!("{operand}.{}", select.field))
        }
        _ => None,
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
            | "optional_type"
            | "type"
    )
}

/// The variables an expression reads that no comprehension binds.
pub(crate) fn free_variables(expr: &IdedExpr) -> HashSet<String> {
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
