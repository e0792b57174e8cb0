//! What stands in for the kubelet: rein-testenv runs no nodes, so a Pod bound to one is kept
//! after a graceful delete until something finishes it.

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
}
