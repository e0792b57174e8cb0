//! What stands in for the kubelet: rein-testenv runs no nodes, so a Pod bound to one is kept
//! after a graceful delete until something finishes it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::resources::ResKey;
use crate::store::Store;

/// What finishes the graceful deletion of Pods bound to a node
/// ([`TestEnvBuilder::kubelet`](crate::TestEnvBuilder::kubelet)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Kubelet {
    /// No kubelet answers, as on a cluster whose nodes are gone (the default): a Pod with
    /// `spec.nodeName` is kept on delete with `deletionTimestamp` and
    /// `deletionGracePeriodSeconds` until a delete with `gracePeriodSeconds: 0` (what the
    /// kubelet sends once the containers stopped, or `kubectl delete --force --grace-period=0`).
    #[default]
    Absent,
    /// Every kubelet stops its Pods at once: in the transaction of the graceful delete, the
    /// grace is cut to 0 and the Pod removed once no finalizer holds it, as the kubelet's own
    /// grace-0 delete would (watchers see the Pod marked, then gone).
    StopsAtOnce,
    /// Every kubelet stops its Pods when their grace period ends: a Pod marked for graceful
    /// deletion is finished (grace cut to 0, removed once no finalizer holds it) once its
    /// `deletionTimestamp` has passed, by a task woken by the store's writes and the next
    /// deadline.
    StopsAfterGrace,
}

/// The [`Kubelet::StopsAfterGrace`] task: finishes the Pods whose grace has run out, then
/// waits for the next deadline or write, until `shutdown`.
pub(crate) async fn run(store: Arc<Store>, shutdown: CancellationToken) {
    let pods = ResKey {
        group: String::new(),
        plural: "pods".into(),
    };
    loop {
        let rv = store.current_rv();
        let next = finish_expired(&store, &pods);
        // With nothing waiting, a write is what can start a grace period.
        let wait = next.unwrap_or(Duration::from_secs(3600));
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = store.written_after(rv, wait) => {}
        }
    }
}

/// Finishes every Pod whose grace has run out; answers how long until the next one does.
fn finish_expired(store: &Store, pods: &ResKey) -> Option<Duration> {
    let now = jiff::Timestamp::now();
    let mut txn = store.lock();
    let mut next: Option<Duration> = None;
    for pod in txn.list(pods, None) {
        if !crate::ops::meta::is_deleting(&pod) || crate::ops::graceful::grace_is_over(&pod) {
            continue;
        }
        let deadline = pod
            .pointer("/metadata/deletionTimestamp")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .unwrap_or(now);
        if deadline <= now {
            crate::ops::graceful::finish_by_kubelet(&mut txn, pods, &pod);
            continue;
        }
        let left = Duration::try_from(deadline.duration_since(now)).unwrap_or_default();
        next = Some(next.map_or(left, |n| n.min(left)));
    }
    next
}
