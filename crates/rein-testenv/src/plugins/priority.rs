//! Priority: a new Pod's `priorityClassName` resolved into `spec.priority` and
//! `spec.preemptionPolicy` (the global default class, or priority 0, when it names none), and
//! at most one PriorityClass marked `globalDefault`.

use serde_json::{Value, json};

use super::Op;
use crate::resources::ResKey;
use crate::store::Txn;

/// The classes kube-apiserver creates on start: name, value and description.
pub(super) const SYSTEM_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The PriorityClass resource.
pub(super) fn classes() -> ResKey {
    ResKey {
        group: "scheduling.k8s.io".into(),
        plural: "priorityclasses".into(),
    }
}

/// The plugin on a Pod create; answers the reason when refused.
pub(super) fn admit_pod(txn: &Txn<'_>, pod: &mut Value) -> Result<(), String> {
    let named = pod
        .pointer("/spec/priorityClassName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    let (value, policy) = match &named {
        None => match default_class(txn) {
            Some(class) => {
                let name = class.pointer("/metadata/name").cloned().unwrap_or_default();
                pod["spec"]["priorityClassName"] = name;
                (value_of(&class), policy_of(&class))
            }
            None => (0, None),
        },
        Some(name) => match txn.get(&classes(), &(String::new(), name.clone())) {
            Some(class) => (value_of(&class), policy_of(&class)),
            None => match SYSTEM_CLASSES.iter().find(|(n, _, _)| n == name) {
                Some((_, value, _)) => (*value, Some("PreemptLowerPriority".to_string())),
                None => return Err(format!("no PriorityClass with name {name} was found")),
            },
        },
    };
    if let Some(given) = pod.pointer("/spec/priority").and_then(Value::as_i64)
        && given != value
    {
        return Err(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority \
             admission controller computed {value} from the given PriorityClass name"
        ));
    }
    pod["spec"]["priority"] = json!(value);
    if let Some(policy) = policy {
        if let Some(given) = pod
            .pointer("/spec/preemptionPolicy")
            .and_then(Value::as_str)
            && given != policy
        {
            return Err(format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod \
                 spec; priority admission controller computed {policy} from the given \
                 PriorityClass name"
            ));
        }
        pod["spec"]["preemptionPolicy"] = json!(policy);
    }
    Ok(())
}

/// A PriorityClass create or update: only one may be the global default.
pub(super) fn validate_class(txn: &Txn<'_>, op: Op, class: &Value) -> Result<(), String> {
    if class.get("globalDefault").and_then(Value::as_bool) != Some(true) {
        return Ok(());
    }
    let Some(current) = default_class(txn) else {
        return Ok(());
    };
    let current = current
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = class
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if op == Op::Create || current != name {
        return Err(format!(
            "PriorityClass {current} is already marked as default. Only one default can exist"
        ));
    }
    Ok(())
}

/// The global default class: of several (a race), the one with the lowest value.
fn default_class(txn: &Txn<'_>) -> Option<Value> {
    txn.list(&classes(), None)
        .into_iter()
        .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
        .min_by_key(|c| value_of(c))
        .map(|c| (*c).clone())
}

fn value_of(class: &Value) -> i64 {
    class.get("value").and_then(Value::as_i64).unwrap_or(0)
}

fn policy_of(class: &Value) -> Option<String> {
    Some(
        class
            .get("preemptionPolicy")
            .and_then(Value::as_str)
            .unwrap_or("PreemptLowerPriority")
            .to_string(),
    )
}
