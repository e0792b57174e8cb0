//! The ReplicaSet controller of the simulated cluster, as kube's
//! `pkg/controller/replicaset/replica_set.go` behaves: it claims the active Pods its selector
//! matches (adopting orphans, releasing Pods that stopped matching), creates Pods from the
//! template (`generateName: <rs>-`, a controller reference with `blockOwnerDeletion`) in
//! slow-start batches of at most 500, deletes the Pods earliest in their life first, and writes
//! `status.replicas`, `fullyLabeledReplicas`, `readyReplicas`, `availableReplicas` (with
//! `minReadySeconds`), `observedGeneration` and the `ReplicaFailure` condition. Events:
//! `SuccessfulCreate`, `FailedCreate`, `SuccessfulDelete`, `FailedDelete`.
//!
//! kube's creation and deletion "expectations" are not needed: the manager's client reads its
//! own writes, so the next reconcile lists the Pods this one created or deleted.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use rein_client::{Client, ListOptions, PostParams, ignore_not_found};
use rein_controller::handler::EnqueueRequestsFromAsyncMapFunc;
use rein_controller::{Action, BuildError, Context, ControllerManagedBy, Reconciler, Request};
use rein_manager::Manager;
use rein_scheme::ObjectKey;
use rein_scheme::labels::Selector;

use super::Error;
use super::claim::{Claim, describe};
use super::podcontrol::{PodControl, SLOW_START_INITIAL_BATCH_SIZE, slow_start_batch};
use super::pods::{self, controller_of, generate_name_prefix, is_active};

/// The controller's name (as kube-controller-manager names it).
pub const NAME: &str = "replicaset";

/// The component its events are recorded as.
const COMPONENT: &str = "replicaset-controller";

/// `BurstReplicas`: at most this many Pods are created or deleted in one sync.
const BURST_REPLICAS: usize = 500;

/// Adds the ReplicaSet controller to `mgr`.
pub fn add(mgr: &Manager) -> Result<(), BuildError> {
    let client = mgr.client();
    let orphans = {
        let client = client.clone();
        EnqueueRequestsFromAsyncMapFunc::new(move |pod: Arc<Pod>| {
            let client = client.clone();
            async move { selecting_replica_sets(&client, &pod).await }
        })
    };
    let controller = ReplicaSetController {
        pods: PodControl {
            client: client.clone(),
            recorder: mgr.event_recorder(COMPONENT),
        },
        client,
    };
    ControllerManagedBy::new(mgr)
        .for_::<ReplicaSet>()
        .owns::<Pod>()
        .watches::<Pod>(orphans)
        .named(NAME)
        .with_options(super::controller_options())
        .complete(controller)
        .map(|_| ())
}

/// `getPodReplicaSets`: for a Pod without a controller, the ReplicaSets whose selector matches
/// it (they may adopt it).
async fn selecting_replica_sets(client: &Client, pod: &Pod) -> Vec<Request> {
    if controller_of(&pod.metadata).is_some() {
        return Vec::new();
    }
    let Some(namespace) = pod.metadata.namespace.as_deref() else {
        return Vec::new();
    };
    let Ok(list) = client
        .list::<ReplicaSet>(&ListOptions::default().namespace(namespace))
        .await
    else {
        return Vec::new();
    };
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    list.items
        .iter()
        .filter(|rs| {
            rs.spec
                .as_ref()
                .and_then(|s| Selector::from_label_selector(&s.selector).ok())
                .is_some_and(|sel| !sel.is_everything() && sel.matches(&labels))
        })
        .map(|rs| Request::from_object(&**rs))
        .collect()
}

struct ReplicaSetController {
    client: Client,
    pods: PodControl,
}

#[async_trait]
impl Reconciler for ReplicaSetController {
    type Error = Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Error> {
        let Some(rs) = ignore_not_found(self.client.get::<ReplicaSet>(&req.key).await)? else {
            return Ok(Action::done());
        };
        self.sync(&rs).await
    }
}

impl ReplicaSetController {
    /// `syncReplicaSet`.
    async fn sync(&self, rs: &ReplicaSet) -> Result<Action, Error> {
        let spec = rs.spec.clone().unwrap_or_default();
        let selector = match Selector::from_label_selector(&spec.selector) {
            Ok(selector) => selector,
            Err(source) => {
                // kube logs this and waits for the object to change.
                let err = Error::Selector {
                    object: describe(rs),
                    source,
                };
                tracing::warn!(error = %err, "not syncing ReplicaSet");
                return Ok(Action::done());
            }
        };
        let namespace = rs.metadata.namespace.clone().unwrap_or_default();
        // Every Pod, to find those with a stale controller reference as well.
        let all = self
            .client
            .list::<Pod>(&ListOptions::default().namespace(&namespace))
            .await?;
        let active: Vec<Arc<Pod>> = all.items.into_iter().filter(|p| is_active(p)).collect();
        let claimed = Claim {
            client: &self.client,
            owner: rs,
            selector: &selector,
            finalizers: &[],
        }
        .run(active)
        .await?;

        let mut deleted = HashSet::new();
        let manage_error = if rs.metadata.deletion_timestamp.is_none() {
            self.manage_replicas(&claimed, rs, &mut deleted).await.err()
        } else {
            None
        };
        // kube counts the Pods as listed, deleted ones included, until the next sync; these
        // counts leave out the Pods this sync deleted, so a Deployment reading them never
        // sees Pods available that are already going.
        let counted: Vec<Arc<Pod>> = claimed
            .iter()
            .filter(|p| !deleted.contains(&p.metadata.name))
            .cloned()
            .collect();
        let status = calculate_status(rs, &counted, claimed.len(), manage_error.as_ref());
        let updated = update_status(&self.client, rs, status).await?;
        if let Some(err) = manage_error {
            return Err(err);
        }
        Ok(requeue_for_availability(&updated, &claimed))
    }

    /// `manageReplicas`: creates or deletes Pods to match `spec.replicas`.
    async fn manage_replicas(
        &self,
        pods: &[Arc<Pod>],
        rs: &ReplicaSet,
        deleted: &mut HashSet<Option<String>>,
    ) -> Result<(), Error> {
        let spec = rs.spec.clone().unwrap_or_default();
        let want = usize::try_from(spec.replicas.unwrap_or(1)).unwrap_or(0);
        let have = pods.len();
        if have < want {
            let diff = (want - have).min(BURST_REPLICAS);
            let template = spec.template.unwrap_or_default();
            let prefix = generate_name_prefix(rs.metadata.name.as_deref().unwrap_or_default());
            tracing::debug!(replica_set = %describe(rs), need = want, creating = diff, "too few replicas");
            let (_, err) = slow_start_batch(diff, SLOW_START_INITIAL_BATCH_SIZE, || {
                self.pods.create(&template, rs, prefix.clone())
            })
            .await;
            return err.map_or(Ok(()), Err);
        }
        if have > want {
            let diff = (have - want).min(BURST_REPLICAS);
            tracing::debug!(replica_set = %describe(rs), need = want, deleting = diff, "too many replicas");
            let related = self.indirectly_related_pods(rs).await?;
            let mut candidates = pods.to_vec();
            if diff < candidates.len() {
                pods::sort_for_deletion(&mut candidates, &related);
            }
            let deletes = candidates.iter().take(diff).map(|pod| async move {
                let name = pod.metadata.name.as_deref().unwrap_or_default();
                match self.pods.delete(name, rs).await {
                    Ok(()) => Ok(pod.metadata.name.clone()),
                    Err(err) if err.is_not_found() => Ok(pod.metadata.name.clone()),
                    Err(err) => Err(Error::from(err)),
                }
            });
            let mut first_error = None;
            for result in futures::future::join_all(deletes).await {
                match result {
                    Ok(name) => {
                        deleted.insert(name);
                    }
                    Err(err) => {
                        first_error.get_or_insert(err);
                    }
                }
            }
            return first_error.map_or(Ok(()), Err);
        }
        Ok(())
    }

    /// `getIndirectlyRelatedPods`: the Pods of every ReplicaSet with the same controller as
    /// `rs` (only `rs` itself when it has none), each once.
    async fn indirectly_related_pods(&self, rs: &ReplicaSet) -> Result<Vec<Arc<Pod>>, Error> {
        let namespace = rs.metadata.namespace.clone().unwrap_or_default();
        let owner = controller_of(&rs.metadata).map(|r| r.uid.clone());
        let siblings: Vec<Arc<ReplicaSet>> = match &owner {
            Some(uid) => self
                .client
                .list::<ReplicaSet>(&ListOptions::default().namespace(&namespace))
                .await?
                .items
                .into_iter()
                .filter(|other| controller_of(&other.metadata).is_some_and(|r| &r.uid == uid))
                .collect(),
            None => vec![Arc::new(rs.clone())],
        };
        let mut seen = HashSet::new();
        let mut related = Vec::new();
        for sibling in siblings {
            let Some(selector) = sibling
                .spec
                .as_ref()
                .and_then(|s| Selector::from_label_selector(&s.selector).ok())
            else {
                continue;
            };
            let pods = self
                .client
                .list::<Pod>(
                    &ListOptions::default()
                        .namespace(&namespace)
                        .labels(selector),
                )
                .await?;
            for pod in pods.items {
                if seen.insert(pod.metadata.uid.clone()) {
                    related.push(pod);
                }
            }
        }
        Ok(related)
    }
}

/// `calculateStatus`: counts from the claimed Pods and the `ReplicaFailure` condition.
fn calculate_status(
    rs: &ReplicaSet,
    pods: &[Arc<Pod>],
    claimed: usize,
    manage_error: Option<&Error>,
) -> ReplicaSetStatus {
    let spec = rs.spec.clone().unwrap_or_default();
    let mut status = rs.status.clone().unwrap_or_default();
    let template_labels = spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let now = Timestamp::now();
    let (mut fully_labeled, mut ready, mut available) = (0, 0, 0);
    for pod in pods {
        let labels = pod.metadata.labels.as_ref();
        if template_labels
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        {
            fully_labeled += 1;
        }
        if pods::is_ready(pod) {
            ready += 1;
            if pods::is_available(pod, spec.min_ready_seconds.unwrap_or(0), now) {
                available += 1;
            }
        }
    }
    let conditions = status.conditions.take().unwrap_or_default();
    let has_failure = conditions.iter().any(|c| c.type_ == "ReplicaFailure");
    let mut conditions = conditions;
    match manage_error {
        Some(err) if !has_failure => {
            let want = i64::from(spec.replicas.unwrap_or(1));
            let diff = i64::try_from(claimed).unwrap_or(i64::MAX) - want;
            let reason = match diff.cmp(&0) {
                std::cmp::Ordering::Less => "FailedCreate",
                std::cmp::Ordering::Greater => "FailedDelete",
                std::cmp::Ordering::Equal => "",
            };
            conditions.push(ReplicaSetCondition {
                type_: "ReplicaFailure".into(),
                status: "True".into(),
                reason: Some(reason.into()),
                message: Some(err.to_string()),
                last_transition_time: Some(pods::now()),
            });
        }
        None if has_failure => conditions.retain(|c| c.type_ != "ReplicaFailure"),
        _ => {}
    }
    status.conditions = (!conditions.is_empty()).then_some(conditions);
    status.replicas = i32::try_from(pods.len()).unwrap_or(i32::MAX);
    status.fully_labeled_replicas = nonzero(fully_labeled);
    status.ready_replicas = nonzero(ready);
    status.available_replicas = nonzero(available);
    status
}

/// A count as the API server stores it: zero is omitted.
pub(crate) fn nonzero(n: i32) -> Option<i32> {
    (n != 0).then_some(n)
}

/// `updateReplicaSetStatus`: writes `status` (with `observedGeneration`) unless nothing
/// changed, retrying once on a conflict with the object read from the server.
async fn update_status(
    client: &Client,
    rs: &ReplicaSet,
    mut status: ReplicaSetStatus,
) -> Result<ReplicaSet, Error> {
    let current = rs.status.clone().unwrap_or_default();
    if current.replicas == status.replicas
        && current.fully_labeled_replicas == status.fully_labeled_replicas
        && current.ready_replicas == status.ready_replicas
        && current.available_replicas == status.available_replicas
        && rs.metadata.generation == current.observed_generation
        && current.conditions == status.conditions
    {
        return Ok(rs.clone());
    }
    status.observed_generation = rs.metadata.generation;
    let mut obj = rs.clone();
    obj.status = Some(status.clone());
    match client.status().update(&obj, &PostParams::default()).await {
        Ok(updated) => Ok(updated),
        Err(err) if err.is_conflict() => {
            let fresh = client
                .api_reader()
                .get::<ReplicaSet>(&ObjectKey::from_object(rs))
                .await?;
            let mut obj = Arc::unwrap_or_clone(fresh);
            status.observed_generation = rs.metadata.generation;
            obj.status = Some(status);
            Ok(client.status().update(&obj, &PostParams::default()).await?)
        }
        Err(err) => Err(err.into()),
    }
}

/// Comes back when the next ready Pod has been ready for `minReadySeconds`, so it is counted
/// available (kube requeues after `minReadySeconds` when a Pod turns ready).
fn requeue_for_availability(rs: &ReplicaSet, pods: &[Arc<Pod>]) -> Action {
    let min_ready = rs
        .spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0);
    if min_ready <= 0 {
        return Action::done();
    }
    let now = Timestamp::now();
    let next = pods
        .iter()
        .filter(|p| !pods::is_available(p, min_ready, now))
        .filter_map(|p| pods::available_at(p, min_ready))
        .min();
    match next {
        Some(at) => {
            let wait = Duration::try_from(at.duration_since(now)).unwrap_or_default();
            // A second more, as kube does, against clock skew and rounding.
            Action::requeue_after(wait + Duration::from_secs(1))
        }
        None => Action::done(),
    }
}
