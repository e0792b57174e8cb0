//! Graceful deletion of Pods, as kube-apiserver's `rest.BeforeDelete` with the pod strategy's
//! `CheckGracefulDelete`: a Pod bound to a node and not terminal is kept on delete with
//! `deletionTimestamp` (now + grace) and `deletionGracePeriodSeconds`, for the kubelet to stop
//! it and finish with a grace-0 delete; a second delete may only shorten the grace; unbound and
//! terminal Pods go at once (stored once marked, then removed, as the real registry's update
//! then delete).

use serde_json::{Value, json};

use super::meta::{self, meta_mut};
use crate::resources::{ResKey, ResourceDef};
use crate::store::Txn;

/// Whether `def` is the core Pod resource (the one graceful strategy rein-testenv serves).
pub(crate) fn is_pod(def: &ResourceDef) -> bool {
    def.group.is_empty() && def.plural == "pods" && !def.custom
}

/// What `BeforeDelete` decided for one Pod.
#[derive(Debug)]
pub(crate) enum Grace {
    /// Deletion is under way and the request does not shorten it: answer the Pod as it is.
    Pending,
    /// Not graceful (already marked with a zero grace): finalizers decide, else remove.
    Now,
    /// The Pod marked (first delete, or a shorter grace): `period` seconds from now.
    Marked {
        /// The Pod with `deletionTimestamp`, `deletionGracePeriodSeconds` (and generation).
        obj: Value,
        /// The grace period, in seconds.
        period: i64,
    },
}

/// kube-apiserver's `BeforeDelete` for `pod` and the request's `gracePeriodSeconds`.
pub(crate) fn before_delete(pod: &Value, requested: Option<i64>) -> Grace {
    // Negative values are treated as one second on the delete path.
    let requested = requested.map(|g| if g < 0 { 1 } else { g });
    if meta::is_deleting(pod) {
        let current = pod
            .pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64);
        let Some(current) = current.filter(|g| *g != 0) else {
            return Grace::Now;
        };
        let current = current.max(1);
        return match requested {
            Some(period) if period < current => {
                let stamp = meta::meta_str(pod, "deletionTimestamp")
                    .and_then(|s| s.parse::<jiff::Timestamp>().ok())
                    .unwrap_or_else(jiff::Timestamp::now);
                let shifted = stamp
                    .checked_add(jiff::SignedDuration::from_secs(period - current))
                    .unwrap_or(stamp);
                let mut obj = pod.clone();
                let m = meta_mut(&mut obj);
                m.insert("deletionTimestamp".into(), json!(format_time(shifted)));
                m.insert("deletionGracePeriodSeconds".into(), json!(period));
                Grace::Marked { obj, period }
            }
            _ => Grace::Pending,
        };
    }
    let mut period = requested.unwrap_or_else(|| {
        pod.pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    });
    if !is_bound(pod) || is_terminal(pod) {
        period = 0;
    }
    if period < 0 {
        period = 1;
    }
    let stamp = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(period))
        .unwrap_or_else(|_| jiff::Timestamp::now());
    let mut obj = pod.clone();
    let generation = obj.pointer("/metadata/generation").and_then(Value::as_i64);
    let m = meta_mut(&mut obj);
    m.insert("deletionTimestamp".into(), json!(format_time(stamp)));
    m.insert("deletionGracePeriodSeconds".into(), json!(period));
    if let Some(g) = generation.filter(|g| *g > 0) {
        m.insert("generation".into(), json!(g + 1));
    }
    Grace::Marked { obj, period }
}

/// What a kubelet that stops containers at once does with a Pod marked for graceful
/// deletion: its grace-0 delete (the grace cut to 0, then the Pod removed once no finalizer
/// holds it). Does nothing to a Pod not waiting for its grace.
pub(crate) fn finish_by_kubelet(txn: &mut Txn<'_>, res: &ResKey, pod: &Value) {
    if !meta::is_deleting(pod) || grace_is_over(pod) {
        return;
    }
    let key = crate::store::object_key(pod);
    let mut finished = pod.clone();
    meta_mut(&mut finished).insert("deletionGracePeriodSeconds".into(), json!(0));
    let finished = txn.replace(res, key.clone(), finished);
    if meta::finalizers(&finished).is_empty()
        && let Some(last) = txn.remove(res, &key)
    {
        super::gc::after_removal(txn, &last);
    }
}

/// Whether the Pod is scheduled (`spec.nodeName` set).
pub(crate) fn is_bound(pod: &Value) -> bool {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty())
}

/// Whether the Pod has finished (`Succeeded` or `Failed`).
pub(crate) fn is_terminal(pod: &Value) -> bool {
    matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

/// Whether an object marked for deletion has no grace left to wait for: no
/// `deletionGracePeriodSeconds`, or zero (kube-apiserver's `shouldDeleteDuringUpdate`
/// removes an object whose last finalizer goes only then).
pub(crate) fn grace_is_over(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .is_none_or(|g| g == 0)
}

fn format_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
