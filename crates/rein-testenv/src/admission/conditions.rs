//! `matchConditions`: CEL expressions over `object`, `oldObject` and `request`, evaluated as
//! kube-apiserver's `matchconditions` matcher does — any `false` skips the webhook; errors
//! (with no `false`) fail the request under `failurePolicy: Fail` and skip the webhook under
//! `Ignore`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

/// What the conditions decided.
#[derive(Debug, PartialEq)]
pub(super) enum Decision {
    /// Every condition is true (or there are none): call the webhook.
    Call,
    /// Some condition is false, or one failed under `Ignore`: skip it.
    Skip,
    /// Conditions failed under `Fail`: the errors, as kube-apiserver aggregates them.
    Fail(String),
}

/// Evaluates `conditions` (name, expression) against the request.
pub(super) fn decide(
    conditions: &[(String, String)],
    fail_open: bool,
    object: Option<&Value>,
    old: Option<&Value>,
    request: &Value,
) -> Decision {
    if conditions.is_empty() {
        return Decision::Call;
    }
    let mut ctx = cel::Context::default();
    ctx.add_variable_from_value("object", object.map_or(cel::Value::Null, to_cel));
    ctx.add_variable_from_value("oldObject", old.map_or(cel::Value::Null, to_cel));
    ctx.add_variable_from_value("request", to_cel(request));
    let mut errors = Vec::new();
    for (name, expression) in conditions {
        // The cel crate may panic on inputs it does not expect; a condition must never take
        // the request down with it.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cel::Program::compile(expression)
                .map_err(|e| format!("compilation failed: {e}"))
                .and_then(|p| p.execute(&ctx).map_err(|e| e.to_string()))
        }))
        .unwrap_or_else(|_| Err("evaluation panicked".to_string()));
        match outcome {
            Ok(cel::Value::Bool(false)) => return Decision::Skip,
            Ok(cel::Value::Bool(true)) => {}
            Ok(other) => errors.push(format!(
                "matchCondition {name:?} did not evaluate to a bool: {other:?}"
            )),
            Err(e) => errors.push(e),
        }
    }
    match errors.len() {
        0 => Decision::Call,
        _ if fail_open => Decision::Skip,
        1 => Decision::Fail(errors.remove(0)),
        _ => Decision::Fail(format!("[{}]", errors.join(", "))),
    }
}

/// JSON → CEL: integers stay integers, objects become maps keyed by string.
fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(map) => {
            let entries: HashMap<String, cel::Value> =
                map.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            cel::Value::from(entries)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Decision, decide};

    fn conditions(exprs: &[&str]) -> Vec<(String, String)> {
        exprs
            .iter()
            .enumerate()
            .map(|(i, e)| (format!("c{i}"), (*e).to_string()))
            .collect()
    }

    #[test]
    fn any_false_condition_skips_and_errors_follow_the_failure_policy() {
        let object = json!({"metadata": {"labels": {"app": "web"}}});
        let request = json!({"operation": "CREATE", "userInfo": {"username": "u"}});
        let run = |exprs: &[&str], fail_open| {
            decide(&conditions(exprs), fail_open, Some(&object), None, &request)
        };
        assert_eq!(
            run(&["object.metadata.labels.app == 'web'"], false),
            Decision::Call
        );
        assert_eq!(
            run(&["request.operation == 'UPDATE'"], false),
            Decision::Skip
        );
        assert_eq!(run(&["oldObject == null", "true"], false), Decision::Call);
        assert_eq!(run(&["object.nope.x == 1", "false"], false), Decision::Skip);
        assert!(matches!(
            run(&["object.nope.x == 1"], false),
            Decision::Fail(_)
        ));
        assert_eq!(run(&["object.nope.x == 1"], true), Decision::Skip);
        assert!(matches!(run(&["1 +"], false), Decision::Fail(_)));
    }
}
