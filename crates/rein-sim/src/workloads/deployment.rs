//! The Deployment controller of the simulated cluster, as kube's `pkg/controller/deployment`
//! behaves: a Deployment owns ReplicaSets named `<deployment>-<pod-template-hash>` (the hash
//! also a label of the ReplicaSet, its selector and its Pods), numbered by the
//! `deployment.kubernetes.io/revision` annotation and sized with `desired-replicas` and
//! `max-replicas`; it rolls out a new template by `RollingUpdate` (within `maxSurge` and
//! `maxUnavailable`, ints or percentages with kube's rounding) or `Recreate`, scales
//! proportionally when resized mid-rollout, stays put while `paused`, rolls back (a rollback
//! is a template change: `kubectl rollout undo` writes an old ReplicaSet's template back, and
//! the controller then raises that ReplicaSet's revision), deletes ReplicaSets beyond
//! `revisionHistoryLimit`, and writes `status` (replicas, updated, ready, available,
//! unavailable, `observedGeneration`, `collisionCount`) with the `Available` and `Progressing`
//! conditions and `ScalingReplicaSet` events, so `kubectl rollout status` follows it.
//!
//! The `pod-template-hash` is FNV-32a over the template as kube computes it, but of the
//! template's JSON rather than of Go's struct dump: deterministic, but not the value
//! kube-controller-manager would compute (see the `hash` module).

mod hash;
mod progress;
mod recreate;
mod rollback;
mod rolling;
mod sync;
mod util;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use rein_client::{Client, ListOptions, ignore_not_found};
use rein_controller::event::{CreateEvent, UpdateEvent};
use rein_controller::handler::EnqueueRequestsFromAsyncMapFunc;
use rein_controller::predicate::Predicate;
use rein_controller::recorder::EventRecorder;
use rein_controller::{Action, BuildError, Context, ControllerManagedBy, Reconciler, Request};
use rein_manager::Manager;
use rein_scheme::ObjectKey;
use rein_scheme::labels::Selector;

pub use util::{
    DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, POD_TEMPLATE_HASH_LABEL,
    REVISION_ANNOTATION, REVISION_HISTORY_ANNOTATION, ROLLBACK_TO_ANNOTATION,
};

use super::Error;
use super::claim::{Claim, describe};
use super::pods::controller_of;

/// The controller's name (as kube-controller-manager names it).
pub const NAME: &str = "deployment";

/// The component its events are recorded as.
const COMPONENT: &str = "deployment-controller";

/// Adds the Deployment controller to `mgr`.
pub fn add(mgr: &Manager) -> Result<(), BuildError> {
    let client = mgr.client();
    let orphans = {
        let client = client.clone();
        EnqueueRequestsFromAsyncMapFunc::new(move |rs: Arc<ReplicaSet>| {
            let client = client.clone();
            async move { selecting_deployments(&client, &rs).await }
        })
    };
    let deleted_pods = {
        let client = client.clone();
        EnqueueRequestsFromAsyncMapFunc::new(move |pod: Arc<Pod>| {
            let client = client.clone();
            async move { deployment_of_pod(&client, &pod).await }
        })
    };
    let controller = DeploymentController {
        recorder: mgr.event_recorder(COMPONENT),
        client,
    };
    ControllerManagedBy::new(mgr)
        .for_::<Deployment>()
        .owns::<ReplicaSet>()
        .watches::<ReplicaSet>(orphans)
        .watches_with::<Pod>(deleted_pods, vec![Arc::new(DeletesOnly)])
        .named(NAME)
        .with_options(super::controller_options())
        .complete(controller)
        .map(|_| ())
}

/// Passes only deletions (kube's Deployment controller handles Pod deletions only: a
/// Recreate rollout waits for the old Pods to be gone).
struct DeletesOnly;

impl Predicate<Pod> for DeletesOnly {
    fn create(&self, _: &CreateEvent<Pod>) -> bool {
        false
    }
    fn update(&self, _: &UpdateEvent<Pod>) -> bool {
        false
    }
}

/// `getDeploymentsForReplicaSet`: for a ReplicaSet without a controller, the Deployments whose
/// selector matches it.
async fn selecting_deployments(client: &Client, rs: &ReplicaSet) -> Vec<Request> {
    if controller_of(&rs.metadata).is_some() {
        return Vec::new();
    }
    let Some(namespace) = rs.metadata.namespace.as_deref() else {
        return Vec::new();
    };
    let Ok(list) = client
        .list::<Deployment>(&ListOptions::default().namespace(namespace))
        .await
    else {
        return Vec::new();
    };
    let labels = rs.metadata.labels.clone().unwrap_or_default();
    list.items
        .iter()
        .filter(|d| {
            d.spec
                .as_ref()
                .and_then(|s| Selector::from_label_selector(&s.selector).ok())
                .is_some_and(|sel| !sel.is_everything() && sel.matches(&labels))
        })
        .map(|d| Request::from_object(&**d))
        .collect()
}

/// The Deployment controlling the ReplicaSet controlling `pod`.
async fn deployment_of_pod(client: &Client, pod: &Pod) -> Vec<Request> {
    let (Some(namespace), Some(owner)) = (
        pod.metadata.namespace.as_deref(),
        controller_of(&pod.metadata),
    ) else {
        return Vec::new();
    };
    if owner.kind != "ReplicaSet" {
        return Vec::new();
    }
    let key = ObjectKey::new(namespace, owner.name.clone());
    let Ok(rs) = client.get::<ReplicaSet>(&key).await else {
        return Vec::new();
    };
    if rs.metadata.uid.as_deref() != Some(owner.uid.as_str()) {
        return Vec::new();
    }
    match controller_of(&rs.metadata) {
        Some(d) if d.kind == "Deployment" => vec![Request::new(namespace, d.name.clone())],
        _ => Vec::new(),
    }
}

/// The Deployment controller's reconciler.
struct DeploymentController {
    client: Client,
    recorder: EventRecorder,
}

/// The Pods of each of a Deployment's ReplicaSets, by ReplicaSet uid.
type PodMap = BTreeMap<String, Vec<Arc<Pod>>>;

#[async_trait]
impl Reconciler for DeploymentController {
    type Error = Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Error> {
        let Some(d) = ignore_not_found(self.client.get::<Deployment>(&req.key).await)? else {
            return Ok(Action::done());
        };
        let mut d = Arc::unwrap_or_clone(d);
        match self.sync_deployment(&mut d).await? {
            Requeue::No => Ok(Action::done()),
            Requeue::RateLimited => Ok(Action::requeue()),
            Requeue::After(after) => Ok(Action::requeue_after(after)),
        }
    }
}

/// When a Deployment is synced again without an event (a progress check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Requeue {
    /// Only on the next event.
    No,
    /// Soon, through the rate limiter.
    RateLimited,
    /// After this long.
    After(std::time::Duration),
}

impl DeploymentController {
    /// `syncDeployment`.
    async fn sync_deployment(&self, d: &mut Deployment) -> Result<Requeue, Error> {
        let selector = util::spec(d).selector;
        if is_empty_selector(&selector) {
            self.recorder.warning(
                &*d,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            );
            let observed = d.status.as_ref().and_then(|s| s.observed_generation);
            if observed.unwrap_or(0) < d.metadata.generation.unwrap_or(0) {
                d.status
                    .get_or_insert_with(Default::default)
                    .observed_generation = d.metadata.generation;
                self.update_status(d).await?;
            }
            return Ok(Requeue::No);
        }
        let rs_list = self.replica_sets_for(d).await?;
        let pod_map = self.pod_map(d, &rs_list).await?;

        if d.metadata.deletion_timestamp.is_some() {
            self.sync_status_only(d, &rs_list).await?;
            return Ok(Requeue::No);
        }
        self.check_paused_conditions(d).await?;
        if util::spec(d).paused == Some(true) {
            self.sync(d, &rs_list).await?;
            return Ok(Requeue::No);
        }
        if rollback::rollback_to(d).is_some() {
            self.rollback(d, &rs_list).await?;
            return Ok(Requeue::No);
        }
        if self.is_scaling_event(d, &rs_list).await? {
            self.sync(d, &rs_list).await?;
            return Ok(Requeue::No);
        }
        match util::strategy_type(d).as_str() {
            "Recreate" => self.rollout_recreate(d, &rs_list, &pod_map).await,
            "RollingUpdate" => self.rollout_rolling(d, &rs_list).await,
            other => Err(Error::Invalid {
                object: describe(&*d),
                problem: format!("unexpected deployment strategy type: {other}"),
            }),
        }
    }

    /// `getReplicaSetsForDeployment`: the ReplicaSets the Deployment controls, after adopting
    /// and releasing by its selector.
    async fn replica_sets_for(&self, d: &Deployment) -> Result<Vec<ReplicaSet>, Error> {
        let namespace = d.metadata.namespace.clone().unwrap_or_default();
        let selector = self.selector(d)?;
        let all = self
            .client
            .list::<ReplicaSet>(&ListOptions::default().namespace(&namespace))
            .await?;
        let claimed = Claim {
            client: &self.client,
            owner: d,
            selector: &selector,
            finalizers: &[],
        }
        .run(all.items)
        .await?;
        Ok(claimed.into_iter().map(Arc::unwrap_or_clone).collect())
    }

    /// `getPodMapForDeployment`: the Pods the selector matches, by the ReplicaSet controlling
    /// them (each of `rs_list` has an entry).
    async fn pod_map(&self, d: &Deployment, rs_list: &[ReplicaSet]) -> Result<PodMap, Error> {
        let namespace = d.metadata.namespace.clone().unwrap_or_default();
        let selector = self.selector(d)?;
        let pods = self
            .client
            .list::<Pod>(
                &ListOptions::default()
                    .namespace(&namespace)
                    .labels(selector),
            )
            .await?;
        let mut map: PodMap = rs_list
            .iter()
            .filter_map(|rs| rs.metadata.uid.clone())
            .map(|uid| (uid, Vec::new()))
            .collect();
        for pod in pods.items {
            if let Some(owner) = controller_of(&pod.metadata)
                && let Some(list) = map.get_mut(&owner.uid)
            {
                list.push(pod);
            }
        }
        Ok(map)
    }

    fn selector(&self, d: &Deployment) -> Result<Selector, Error> {
        Selector::from_label_selector(&util::spec(d).selector).map_err(|source| Error::Selector {
            object: describe(d),
            source,
        })
    }
}

fn is_empty_selector(selector: &LabelSelector) -> bool {
    selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty())
}
