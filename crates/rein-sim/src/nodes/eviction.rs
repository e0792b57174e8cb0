//! The node lifecycle controller's work on the simulated nodes' Pods. Pods of an unreachable
//! node (`Ready=Unknown`) are marked not Ready (`MarkPodsNotReady`). Taint-based eviction, as
//! kube-controller-manager's `tainteviction` controller does it: a Pod bound to a node with a `NoExecute` taint it does not tolerate is
//! deleted at once; one that tolerates every such taint is deleted once the shortest
//! `tolerationSeconds` of the tolerations used has passed since the latest taint was added
//! (never, when none of them has a limit). Before the delete the Pod gets the
//! `DisruptionTarget` condition (reason `DeletionByTaintManager`) and a
//! `TaintManagerEviction` event is recorded.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};
use k8s_openapi::jiff::Timestamp;
use rein_client::{Client, DeleteParams, Patch, PatchParams, Preconditions};
use rein_controller::event::UpdateEvent;
use rein_controller::handler::EnqueueRequestsFromAsyncMapFunc;
use rein_controller::predicate::Predicate;
use rein_controller::recorder::EventRecorder;
use rein_controller::{
    Action, BuildError, Context, ControllerManagedBy, ControllerOptions, Reconciler, Request,
};
use rein_manager::Manager;
use rein_scheme::ObjectKey;

use super::Nodes;
use crate::scheduler::{is_terminal, tolerates};

/// Adds the taint-eviction controller for the simulated nodes to `mgr`.
pub(crate) fn add(mgr: &Manager, nodes: Nodes) -> Result<(), BuildError> {
    let client = mgr.client();
    let map_client = client.clone();
    ControllerManagedBy::new(mgr)
        .for_::<Pod>()
        .watches_with::<Node>(
            EnqueueRequestsFromAsyncMapFunc::new(move |node: Arc<Node>| {
                let client = map_client.clone();
                async move { super::pods_on(&client, node.metadata.name.as_deref()).await }
            }),
            vec![Arc::new(TaintsChanged)],
        )
        .named("taint-eviction-controller")
        .with_options(ControllerOptions {
            max_concurrent_reconciles: 4,
            need_leader_election: false,
            ..ControllerOptions::default()
        })
        .complete(TaintEviction {
            client,
            recorder: mgr.event_recorder("taint-eviction-controller"),
            nodes,
        })
        .map(|_| ())
}

/// Node updates that change its taints.
struct TaintsChanged;

impl Predicate<Node> for TaintsChanged {
    fn update(&self, e: &UpdateEvent<Node>) -> bool {
        let taints = |n: &Node| n.spec.as_ref().and_then(|s| s.taints.clone());
        taints(&e.object_old) != taints(&e.object_new)
    }
}

/// Whether the node's `Ready` condition is `Unknown` (its kubelet stopped reporting).
fn node_ready_unknown(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "Unknown")
}

/// `MarkPodsNotReady`: sets the Pod's `Ready` condition to `False` if it is not already;
/// `true` when it wrote (the write's event brings the Pod back for eviction).
async fn mark_not_ready(client: &Client, pod: &Pod) -> Result<bool, rein_client::Error> {
    let ready = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    if ready.is_none_or(|c| c.status == "False") {
        return Ok(false);
    }
    let patch = serde_json::json!({
        "status": {"conditions": [{
            "type": "Ready",
            "status": "False",
            "lastTransitionTime": super::now(),
        }]}
    });
    let key = ObjectKey::from_object(pod);
    match client
        .status()
        .patch::<Pod, _>(&key, &Patch::Strategic(patch), &PatchParams::default())
        .await
    {
        Ok(_) => Ok(true),
        Err(err) if err.is_not_found() => Ok(false),
        Err(err) => Err(err),
    }
}

/// When a Pod must go, given the node's `NoExecute` taints and its tolerations.
#[derive(Debug, PartialEq, Eq)]
enum Eviction {
    /// No taint, or every taint tolerated without a limit.
    Never,
    /// Once this instant has passed.
    At(Timestamp),
}

/// kube's `processPodOnNode`: an untolerated taint evicts at once; otherwise the shortest
/// `tolerationSeconds` of the first toleration matching each taint (no limit: forever),
/// counted from the latest taint's `timeAdded`.
fn eviction(taints: &[&Taint], tolerations: &[Toleration], now: Timestamp) -> Eviction {
    if taints.is_empty() {
        return Eviction::Never;
    }
    let mut shortest: Option<i64> = None;
    for taint in taints {
        let Some(used) = tolerations.iter().find(|t| tolerates(t, taint)) else {
            return Eviction::At(now);
        };
        if let Some(seconds) = used.toleration_seconds {
            shortest = Some(shortest.map_or(seconds, |s| s.min(seconds)));
        }
    }
    let Some(seconds) = shortest else {
        return Eviction::Never;
    };
    let since = taints
        .iter()
        .filter_map(|t| t.time_added.as_ref().map(|t| t.0))
        .max()
        .unwrap_or(now);
    let due = since
        .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(seconds.max(0)))
        .unwrap_or(since);
    Eviction::At(due)
}

struct TaintEviction {
    client: Client,
    recorder: EventRecorder,
    nodes: Nodes,
}

#[async_trait]
impl Reconciler for TaintEviction {
    type Error = rein_client::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Self::Error> {
        let pod = match self.client.get::<Pod>(&req.key).await {
            Ok(pod) => pod,
            Err(err) if err.is_not_found() => return Ok(Action::done()),
            Err(err) => return Err(err),
        };
        let Some(node_name) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
            return Ok(Action::done());
        };
        if self.nodes.get(&node_name).is_none()
            || pod.metadata.deletion_timestamp.is_some()
            || is_terminal(&pod)
        {
            return Ok(Action::done());
        }
        let node = match self
            .client
            .get::<Node>(&ObjectKey::cluster_scoped(&node_name))
            .await
        {
            Ok(node) => node,
            Err(err) if err.is_not_found() => return Ok(Action::done()),
            Err(err) => return Err(err),
        };
        if node_ready_unknown(&node) && mark_not_ready(&self.client, &pod).await? {
            return Ok(Action::done());
        }
        let taints: Vec<&Taint> = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .filter(|t| t.effect == "NoExecute")
            .collect();
        let tolerations = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.clone())
            .unwrap_or_default();
        let now = Timestamp::now();
        let due = match eviction(&taints, &tolerations, now) {
            Eviction::Never => return Ok(Action::done()),
            Eviction::At(due) => due,
        };
        if due > now {
            let wait = now.duration_until(due).unsigned_abs();
            // Whole seconds are what tolerations count in; never busy-loop.
            return Ok(Action::requeue_after(wait.max(Duration::from_millis(100))));
        }
        let condition = serde_json::json!({
            "status": {"conditions": [{
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "DeletionByTaintManager",
                "message": "Taint manager: deleting due to NoExecute taint",
                "lastTransitionTime": super::now(),
            }]}
        });
        match self
            .client
            .status()
            .patch::<Pod, _>(
                &req.key,
                &Patch::Strategic(condition),
                &PatchParams::default(),
            )
            .await
        {
            Ok(_) => {}
            Err(err) if err.is_not_found() => return Ok(Action::done()),
            Err(err) => return Err(err),
        }
        self.recorder.normal(
            pod.as_ref(),
            "TaintManagerEviction",
            &format!("Marking for deletion Pod {}", req.key),
        );
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match self.client.delete::<Pod>(&req.key, &params).await {
            Ok(()) => Ok(Action::done()),
            Err(err) if err.is_not_found() || err.is_conflict() => Ok(Action::done()),
            Err(err) => Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    fn taint(key: &str, added: Option<Timestamp>) -> Taint {
        Taint {
            key: key.into(),
            value: None,
            effect: "NoExecute".into(),
            time_added: added.map(Time),
        }
    }

    fn toleration(key: &str, seconds: Option<i64>) -> Toleration {
        Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            toleration_seconds: seconds,
            value: None,
        }
    }

    #[test]
    fn eviction_follows_the_taint_manager() {
        let now = Timestamp::from_second(1_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
        let earlier = Timestamp::from_second(999_990).unwrap_or(Timestamp::UNIX_EPOCH);
        let not_ready = taint("node.kubernetes.io/not-ready", Some(earlier));
        assert_eq!(eviction(&[], &[], now), Eviction::Never);
        assert_eq!(eviction(&[&not_ready], &[], now), Eviction::At(now));
        assert_eq!(
            eviction(
                &[&not_ready],
                &[toleration("node.kubernetes.io/not-ready", None)],
                now
            ),
            Eviction::Never
        );
        let at = eviction(
            &[&not_ready],
            &[toleration("node.kubernetes.io/not-ready", Some(300))],
            now,
        );
        assert_eq!(
            at,
            Eviction::At(Timestamp::from_second(1_000_290).unwrap_or(now))
        );
        let other = taint("other", None);
        assert_eq!(
            eviction(
                &[&not_ready, &other],
                &[toleration("node.kubernetes.io/not-ready", Some(300))],
                now
            ),
            Eviction::At(now)
        );
    }
}
