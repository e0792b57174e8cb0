//! The ClusterRole aggregation controller: a ClusterRole with an `aggregationRule` gets the
//! rules of every other ClusterRole its `clusterRoleSelectors` select (in name order, without
//! duplicates), kept up to date as ClusterRoles come, change and go, as
//! kube-controller-manager's `ClusterRoleAggregationController` does.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::rbac_key;
use crate::server::State;
use crate::store::{WatchStart, object_key};

/// Runs until shutdown: reconciles every aggregated ClusterRole after each ClusterRole change.
/// When its watch ends (`Faults::close_watches`, `fail_watches`), it watches again and
/// reconciles, as the real controller's informer re-lists: no change is missed for good.
pub(crate) async fn run(state: Arc<State>) {
    let key = rbac_key("clusterroles");
    loop {
        let subscription = state.store.lock().subscribe(&key, WatchStart::Now, None);
        let Ok(mut subscription) = subscription else {
            return;
        };
        loop {
            state.faults.inner.wait_unpaused().await;
            reconcile(&state);
            tokio::select! {
                () = state.shutdown.cancelled() => return,
                event = subscription.rx.recv() => {
                    if event.is_none() {
                        break;
                    }
                }
            }
            // One pass covers every change queued so far.
            while subscription.rx.try_recv().is_ok() {}
        }
    }
}

/// Brings the rules of every aggregated ClusterRole up to date (one write per role whose
/// rules change; those writes wake the loop again, so chains of aggregation settle).
fn reconcile(state: &State) {
    let key = rbac_key("clusterroles");
    let mut txn = state.store.lock();
    let roles = txn.list(&key, None);
    for role in &roles {
        let Some(selectors) = role
            .pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
        else {
            continue;
        };
        let name = role.pointer("/metadata/name").and_then(Value::as_str);
        let mut rules: Vec<Value> = Vec::new();
        for other in &roles {
            if other.pointer("/metadata/name").and_then(Value::as_str) == name {
                continue;
            }
            let labels = other
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if !selectors.iter().any(|s| selects(s, &labels)) {
                continue;
            }
            for rule in other
                .get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
        let current = role
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if current != rules {
            let mut updated = (**role).clone();
            updated["rules"] = Value::Array(rules);
            txn.replace(&key, object_key(role), updated);
        }
    }
}

/// Whether the `LabelSelector` `selector` selects `labels` (an empty one selects all).
fn selects(selector: &Value, labels: &Map<String, Value>) -> bool {
    let label = |key: &str| labels.get(key).and_then(Value::as_str);
    let match_labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match e.get("operator").and_then(Value::as_str) {
                Some("In") => label(key).is_some_and(|v| values.contains(&v)),
                Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
                Some("Exists") => label(key).is_some(),
                Some("DoesNotExist") => label(key).is_none(),
                _ => false,
            }
        });
    match_labels && expressions
}
