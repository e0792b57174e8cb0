//! DefaultTolerationSeconds: a new Pod that does not tolerate the `not-ready` and
//! `unreachable` NoExecute taints tolerates them for 300 seconds.

use serde_json::{Value, json};

/// kube-apiserver's `--default-not-ready-toleration-seconds` and
/// `--default-unreachable-toleration-seconds`.
const SECONDS: i64 = 300;

/// Adds the missing tolerations to a Pod.
pub(super) fn admit(pod: &mut Value) {
    let tolerates = |taint: &str, pod: &Value| {
        pod.pointer("/spec/tolerations")
            .and_then(Value::as_array)
            .is_some_and(|ts| {
                ts.iter().any(|t| {
                    let key = t.get("key").and_then(Value::as_str).unwrap_or_default();
                    let effect = t.get("effect").and_then(Value::as_str).unwrap_or_default();
                    (key == taint || key.is_empty()) && (effect == "NoExecute" || effect.is_empty())
                })
            })
    };
    let mut missing = Vec::new();
    for taint in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        if !tolerates(taint, pod) {
            missing.push(json!({
                "key": taint,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": SECONDS,
            }));
        }
    }
    if missing.is_empty() {
        return;
    }
    if !pod.get("spec").is_some_and(Value::is_object) {
        pod["spec"] = json!({});
    }
    if !pod["spec"].get("tolerations").is_some_and(Value::is_array) {
        pod["spec"]["tolerations"] = json!([]);
    }
    if let Some(ts) = pod["spec"]["tolerations"].as_array_mut() {
        ts.extend(missing);
    }
}
