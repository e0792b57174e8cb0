//! kube-controller-manager's disruption controller, run synchronously: every
//! PodDisruptionBudget's `status` is recomputed in the transaction of each write to a Pod, a
//! PodDisruptionBudget or a workload whose scale it counts, so the eviction subresource sees
//! what it would see on a cluster once the controller caught up.
//!
//! As the real controller (`pkg/controller/disruption`): the selected Pods are those the
//! selector matches (a null selector matches none); `expectedPods` is their count for an
//! integer `minAvailable`, else the summed scale of their controllers (ReplicaSet, Deployment,
//! StatefulSet, ReplicationController; Pods without one are left out); healthy Pods are Ready,
//! not being deleted and not in `disruptedPods`; an entry of `disruptedPods` lasts until its
//! Pod is being deleted or two minutes passed (checked at the next recomputation: there is no
//! timer); a Pod whose controller cannot be found fails the sync, which keeps the old counts,
//! sets `disruptionsAllowed` to 0 and the `DisruptionAllowed` condition to `SyncFailed`.

use serde_json::{Map, Value, json};

use crate::builtin::selector;
use crate::ops::meta;
use crate::resources::ResKey;
use crate::store::{Txn, object_key};

/// How long an eviction's entry in `disruptedPods` keeps its Pod out of the healthy count
/// (the controller's `DeletionTimeout`).
const DELETION_TIMEOUT: jiff::SignedDuration = jiff::SignedDuration::from_secs(120);

/// The resources whose writes change what some budget counts.
fn counted(res: &ResKey) -> bool {
    matches!(
        (res.group.as_str(), res.plural.as_str()),
        ("", "pods" | "replicationcontrollers")
            | ("policy", "poddisruptionbudgets")
            | ("apps", "replicasets" | "deployments" | "statefulsets")
    )
}

/// The PodDisruptionBudget resource.
pub(crate) fn budgets() -> ResKey {
    ResKey {
        group: "policy".into(),
        plural: "poddisruptionbudgets".into(),
    }
}

/// Recomputes the status of every budget in `namespace` after a write to `res` there.
pub(super) fn refresh(txn: &mut Txn<'_>, res: &ResKey, namespace: &str) {
    if !counted(res) {
        return;
    }
    let res = budgets();
    for budget in txn.list(&res, Some(namespace)) {
        if meta::is_deleting(&budget) {
            continue;
        }
        let status = status_of(txn, &budget);
        if budget.get("status") == Some(&status) {
            continue;
        }
        let mut updated = (*budget).clone();
        updated["status"] = status;
        txn.replace(&res, object_key(&budget), updated);
    }
}

/// The Pods `budget`'s selector matches in its namespace, as the controller lists them.
pub(crate) fn pods_of(txn: &Txn<'_>, budget: &Value) -> Vec<std::sync::Arc<Value>> {
    let Some(sel) = budget.pointer("/spec/selector").filter(|s| !s.is_null()) else {
        return Vec::new();
    };
    let namespace = meta::meta_str(budget, "namespace").unwrap_or_default();
    txn.list(&pods(), Some(namespace))
        .into_iter()
        .filter(|p| selector::matches(sel, p.pointer("/metadata/labels")))
        .collect()
}

/// Whether the Pod's `Ready` condition is `True` (`podutil.IsPodReady`).
pub(crate) fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some("Ready")
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

/// The `DisruptionAllowed` condition for `allowed` disruptions (`UpdateDisruptionAllowedCondition`).
pub(crate) fn set_allowed_condition(status: &mut Value) {
    let allowed = status
        .get("disruptionsAllowed")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let (state, reason) = if allowed > 0 {
        ("True", "SufficientPods")
    } else {
        ("False", "InsufficientPods")
    };
    set_condition(status, state, reason, "");
}

/// The controller's status of `budget` now.
fn status_of(txn: &Txn<'_>, budget: &Value) -> Value {
    let old = budget.get("status").cloned().unwrap_or_else(|| json!({}));
    let generation = budget
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let pods = pods_of(txn, budget);
    let (expected, desired) = match expected_and_desired(txn, budget, &pods) {
        Ok(counts) => counts,
        Err(message) => {
            // failSafe: the old status, no disruption allowed.
            let mut status = old;
            if !status.is_object() {
                status = json!({});
            }
            for field in [
                "disruptionsAllowed",
                "currentHealthy",
                "desiredHealthy",
                "expectedPods",
            ] {
                if status.get(field).is_none() {
                    status[field] = json!(0);
                }
            }
            status["disruptionsAllowed"] = json!(0);
            set_condition(&mut status, "False", "SyncFailed", &message);
            return status;
        }
    };
    let now = jiff::Timestamp::now();
    let disrupted = disrupted_pods(&old, &pods, now);
    let healthy = pods
        .iter()
        .filter(|p| !meta::is_deleting(p))
        .filter(|p| {
            let name = meta::meta_str(p, "name").unwrap_or_default();
            !disrupted.contains_key(name)
        })
        .filter(|p| is_ready(p))
        .count() as i64;
    let mut allowed = healthy - desired;
    if expected <= 0 || allowed <= 0 {
        allowed = 0;
    }
    let mut status = json!({"observedGeneration": generation});
    if !disrupted.is_empty() {
        status["disruptedPods"] = Value::Object(disrupted);
    }
    status["disruptionsAllowed"] = json!(allowed);
    status["currentHealthy"] = json!(healthy);
    status["desiredHealthy"] = json!(desired);
    status["expectedPods"] = json!(expected);
    if let Some(conditions) = old.get("conditions") {
        status["conditions"] = conditions.clone();
    }
    set_allowed_condition(&mut status);
    status
}

/// The entries of `disruptedPods` still standing: their Pod exists, is not being deleted, and
/// was evicted less than two minutes ago.
fn disrupted_pods(
    old: &Value,
    pods: &[std::sync::Arc<Value>],
    now: jiff::Timestamp,
) -> Map<String, Value> {
    let mut kept = Map::new();
    let Some(Value::Object(before)) = old.get("disruptedPods") else {
        return kept;
    };
    for pod in pods {
        if meta::is_deleting(pod) {
            continue;
        }
        let name = meta::meta_str(pod, "name").unwrap_or_default();
        let Some(at) = before.get(name) else {
            continue;
        };
        let fresh = at
            .as_str()
            .and_then(|s| s.parse::<jiff::Timestamp>().ok())
            .and_then(|t| t.checked_add(DELETION_TIMEOUT).ok())
            .is_some_and(|deadline| deadline > now);
        if fresh {
            kept.insert(name.to_string(), at.clone());
        }
    }
    kept
}

/// `getExpectedPodCount`: the expected Pods and the healthy ones the budget wants.
fn expected_and_desired(
    txn: &Txn<'_>,
    budget: &Value,
    pods: &[std::sync::Arc<Value>],
) -> Result<(i64, i64), String> {
    if let Some(max) = budget
        .pointer("/spec/maxUnavailable")
        .filter(|v| !v.is_null())
    {
        let expected = expected_scale(txn, pods)?;
        let max = scaled(max, expected)?;
        return Ok((expected, (expected - max).max(0)));
    }
    match budget
        .pointer("/spec/minAvailable")
        .filter(|v| !v.is_null())
    {
        Some(Value::Number(n)) => Ok((pods.len() as i64, n.as_i64().unwrap_or(0))),
        Some(min) => {
            let expected = expected_scale(txn, pods)?;
            Ok((expected, scaled(min, expected)?))
        }
        None => Ok((0, 0)),
    }
}

/// `intstr.GetScaledValueFromIntOrPercent` rounding up.
fn scaled(value: &Value, total: i64) -> Result<i64, String> {
    match value {
        Value::Number(n) => Ok(n.as_i64().unwrap_or(0)),
        Value::String(s) => {
            let percent = s
                .strip_suffix('%')
                .and_then(|p| p.parse::<i64>().ok())
                .ok_or_else(|| format!("invalid value for IntOrString: invalid value {s:?}"))?;
            Ok((percent * total + 99) / 100)
        }
        _ => Ok(0),
    }
}

/// `getExpectedScale`: the summed scale of the controllers of `pods` (each counted once).
fn expected_scale(txn: &Txn<'_>, pods: &[std::sync::Arc<Value>]) -> Result<i64, String> {
    let mut scales: std::collections::BTreeMap<String, i64> = Default::default();
    for pod in pods {
        let Some(owner) = controller_of(pod) else {
            continue;
        };
        let uid = owner.get("uid").and_then(Value::as_str).unwrap_or_default();
        if scales.contains_key(uid) {
            continue;
        }
        let namespace = meta::meta_str(pod, "namespace").unwrap_or_default();
        match scale_of(txn, owner, namespace) {
            Some((uid, scale)) => {
                scales.insert(uid, scale);
            }
            None => {
                let name = meta::meta_str(pod, "name").unwrap_or_default();
                return Err(format!("found no controllers for pod {name:?}"));
            }
        }
    }
    Ok(scales.values().sum())
}

/// The controller a reference names, with its scale, as the controller's finders look
/// them up (a ReplicaSet a Deployment controls counts as the Deployment).
fn scale_of(txn: &Txn<'_>, owner: &Value, namespace: &str) -> Option<(String, i64)> {
    let kind = owner.get("kind").and_then(Value::as_str)?;
    let group = owner
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.split_once('/').map(|(g, _)| g))
        .unwrap_or("");
    let plural = match (group, kind) {
        ("apps" | "extensions", "ReplicaSet") => ("apps", "replicasets"),
        ("apps", "StatefulSet") => ("apps", "statefulsets"),
        ("", "ReplicationController") => ("", "replicationcontrollers"),
        _ => return None,
    };
    let found = lookup(txn, plural, owner, namespace)?;
    if plural.1 == "replicasets"
        && let Some(parent) = controller_of(&found)
        && parent.get("kind").and_then(Value::as_str) == Some("Deployment")
    {
        let deployment = lookup(txn, ("apps", "deployments"), parent, namespace)?;
        return Some((uid_of(&deployment), replicas(&deployment)));
    }
    Some((uid_of(&found), replicas(&found)))
}

fn lookup(
    txn: &Txn<'_>,
    (group, plural): (&str, &str),
    owner: &Value,
    namespace: &str,
) -> Option<Value> {
    let name = owner.get("name").and_then(Value::as_str)?;
    let res = ResKey {
        group: group.into(),
        plural: plural.into(),
    };
    let found = txn.get(&res, &(namespace.to_string(), name.to_string()))?;
    (meta::meta_str(&found, "uid") == owner.get("uid").and_then(Value::as_str))
        .then(|| (*found).clone())
}

fn uid_of(obj: &Value) -> String {
    meta::meta_str(obj, "uid").unwrap_or_default().to_string()
}

fn replicas(obj: &Value) -> i64 {
    obj.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// The owner reference with `controller: true`.
fn controller_of(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

/// `meta.SetStatusCondition` for the `DisruptionAllowed` condition: the transition time
/// moves only when the status changes.
fn set_condition(status: &mut Value, state: &str, reason: &str, message: &str) {
    let generation = status
        .get("observedGeneration")
        .cloned()
        .unwrap_or(json!(0));
    if !status.get("conditions").is_some_and(Value::is_array) {
        status["conditions"] = json!([]);
    }
    let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) else {
        return;
    };
    let existing = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("DisruptionAllowed"));
    match existing {
        Some(c) => {
            if c.get("status").and_then(Value::as_str) != Some(state) {
                c["status"] = json!(state);
                c["lastTransitionTime"] = json!(meta::now());
            }
            c["observedGeneration"] = generation;
            c["reason"] = json!(reason);
            c["message"] = json!(message);
        }
        None => conditions.push(json!({
            "type": "DisruptionAllowed",
            "status": state,
            "observedGeneration": generation,
            "lastTransitionTime": meta::now(),
            "reason": reason,
            "message": message,
        })),
    }
}

fn pods() -> ResKey {
    ResKey {
        group: String::new(),
        plural: "pods".into(),
    }
}
