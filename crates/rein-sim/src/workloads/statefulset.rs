//! The StatefulSet controller of the simulated cluster, as kube's `pkg/controller/statefulset`
//! behaves: Pods with stable names `<set>-<ordinal>` (labels
//! `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and
//! `controller-revision-hash: <revision>`, `hostname` and the service as `subdomain`), each
//! with the claims `<template>-<set>-<ordinal>` of the volume claim templates, created before
//! it and owned as `persistentVolumeClaimRetentionPolicy` says (`identity.rs`,
//! `podcontrol.rs`); `OrderedReady` creates them one at a time in ordinal order, each once
//! the ones before are Running and Ready, and deletes from the highest ordinal, `Parallel`
//! all at once (`control.rs`); the template's history is kept as ControllerRevisions
//! (`<set>-<hash>`, `status.currentRevision`/`updateRevision`, `collisionCount`, pruned to
//! `revisionHistoryLimit`); `RollingUpdate` replaces Pods from the highest ordinal down to the
//! `partition`, `OnDelete` only when they are deleted. The status has `replicas`,
//! `readyReplicas`, `currentReplicas`, `updatedReplicas`, `availableReplicas`,
//! `currentRevision`, `updateRevision`, `observedGeneration` and `collisionCount`, so
//! `kubectl rollout status statefulset/<name>` follows it.
//!
//! Not simulated: `maxUnavailable` (kube's `MaxUnavailableStatefulSet` alpha gate, off by
//! default); a Pod owned by the set whose name is not one of its ordinals is left alone
//! (kube releases it).

mod control;
mod identity;
mod podcontrol;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use rein_client::controllerutil::set_controller_reference;
use rein_client::{Client, ListOptions, PostParams, ignore_not_found};
use rein_controller::handler::EnqueueRequestsFromAsyncMapFunc;
use rein_controller::{Action, BuildError, Context, ControllerManagedBy, Reconciler, Request};
use rein_manager::Manager;
use rein_scheme::ObjectKey;
use rein_scheme::labels::Selector;

pub use identity::{POD_INDEX_LABEL, POD_NAME_LABEL};

use super::Error;
use super::claim::{Claim, describe};
use super::pods::controller_of;
use super::revision;
use control::Revisions;
use podcontrol::StatefulPodControl;

/// The controller's name (as kube-controller-manager names it).
pub const NAME: &str = "statefulset";

/// The component its events are recorded as.
const COMPONENT: &str = "statefulset-controller";

/// Adds the StatefulSet controller to `mgr`.
pub fn add(mgr: &Manager) -> Result<(), BuildError> {
    let client = mgr.client();
    let orphans = {
        let client = client.clone();
        EnqueueRequestsFromAsyncMapFunc::new(move |pod: Arc<Pod>| {
            let client = client.clone();
            async move { selecting_stateful_sets(&client, &pod).await }
        })
    };
    let controller = StatefulSetController {
        pods: StatefulPodControl {
            client: client.clone(),
            recorder: mgr.event_recorder(COMPONENT),
        },
        client,
    };
    ControllerManagedBy::new(mgr)
        .for_::<StatefulSet>()
        .owns::<Pod>()
        .watches::<Pod>(orphans)
        .owns::<ControllerRevision>()
        .named(NAME)
        .with_options(super::controller_options())
        .complete(controller)
        .map(|_| ())
}

/// `getStatefulSetsForPod`: for a Pod without a controller, the StatefulSets whose selector
/// matches it.
async fn selecting_stateful_sets(client: &Client, pod: &Pod) -> Vec<Request> {
    if controller_of(&pod.metadata).is_some() {
        return Vec::new();
    }
    let Some(namespace) = pod.metadata.namespace.as_deref() else {
        return Vec::new();
    };
    let Ok(list) = client
        .list::<StatefulSet>(&ListOptions::default().namespace(namespace))
        .await
    else {
        return Vec::new();
    };
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    list.items
        .iter()
        .filter(|set| {
            set.spec
                .as_ref()
                .and_then(|s| Selector::from_label_selector(&s.selector).ok())
                .is_some_and(|sel| !sel.is_everything() && sel.matches(&labels))
        })
        .map(|set| Request::from_object(&**set))
        .collect()
}

struct StatefulSetController {
    client: Client,
    pods: StatefulPodControl,
}

#[async_trait]
impl Reconciler for StatefulSetController {
    type Error = Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Error> {
        let Some(set) = ignore_not_found(self.client.get::<StatefulSet>(&req.key).await)? else {
            return Ok(Action::done());
        };
        self.sync(&set).await
    }
}

/// The set with `revision`'s template (`ApplyRevision`).
fn apply_revision(set: &StatefulSet, revision: &ControllerRevision) -> StatefulSet {
    let mut applied = set.clone();
    if let (Some(template), Some(spec)) = (revision::template_of(revision), applied.spec.as_mut()) {
        spec.template = template;
    }
    applied
}

impl StatefulSetController {
    /// `sync` and `syncStatefulSet`.
    async fn sync(&self, set: &StatefulSet) -> Result<Action, Error> {
        let spec = set.spec.clone().unwrap_or_default();
        let selector = match Selector::from_label_selector(&spec.selector) {
            Ok(selector) => selector,
            Err(source) => {
                let err = Error::Selector {
                    object: describe(set),
                    source,
                };
                tracing::warn!(error = %err, "not syncing StatefulSet");
                return Ok(Action::done());
            }
        };
        let reference = self.controller_reference(set)?;
        // `adoptOrphanRevisions` (and the claim of kube's ControllerRevision ref manager).
        let namespace = set.metadata.namespace.clone().unwrap_or_default();
        let all = self
            .client
            .list::<ControllerRevision>(&ListOptions::default().namespace(&namespace))
            .await?;
        Claim {
            client: &self.client,
            owner: set,
            selector: &selector,
            finalizers: &[],
        }
        .run(all.items)
        .await?;
        let pods = self.claim_pods(set, &selector).await?;

        let mut revisions = revision::list(&self.client, set, &selector).await?;
        revision::sort(&mut revisions);
        let (revisions_used, current, update) =
            self.revisions(set, &revisions, reference.clone()).await?;
        let sync = control::Sync {
            set,
            revisions: &revisions_used,
            control: &self.pods,
            reference,
        };
        let (status, err) = sync.run(&pods).await;
        let stored = self.update_status(set, status).await;
        // `truncateHistory`, also after a failed sync.
        let truncated = self
            .truncate_history(set, &pods, &revisions, &current, &update)
            .await;
        if let Some(err) = err {
            return Err(err);
        }
        let status = stored?;
        truncated?;
        let min_ready = spec.min_ready_seconds.unwrap_or(0);
        let replicas = spec.replicas.unwrap_or(1);
        if min_ready > 0 && status.available_replicas.unwrap_or(0) != replicas {
            let wait = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0));
            return Ok(Action::requeue_after(wait));
        }
        Ok(Action::done())
    }

    fn controller_reference(&self, set: &StatefulSet) -> Result<OwnerReference, Error> {
        let mut probe = Pod::default();
        probe.metadata.namespace = set.metadata.namespace.clone();
        set_controller_reference(set, &mut probe, self.client.scheme())?;
        controller_of(&probe.metadata)
            .cloned()
            .ok_or_else(|| Error::Invalid {
                object: describe(set),
                problem: "no controller reference could be made".into(),
            })
    }

    /// `getPodsForStatefulSet`: the set's members it claims (adopting orphans it selects,
    /// releasing members it no longer selects).
    async fn claim_pods(
        &self,
        set: &StatefulSet,
        selector: &Selector,
    ) -> Result<Vec<Arc<Pod>>, Error> {
        let namespace = set.metadata.namespace.clone().unwrap_or_default();
        let all = self
            .client
            .list::<Pod>(&ListOptions::default().namespace(&namespace))
            .await?;
        let members = all
            .items
            .into_iter()
            .filter(|p| identity::is_member(set, p))
            .collect();
        Claim {
            client: &self.client,
            owner: set,
            selector,
            finalizers: &[],
        }
        .run(members)
        .await
    }

    /// `getStatefulSetRevisions`: the current and update revisions (creating the update
    /// revision, or renumbering an equal older one for a rollback).
    async fn revisions(
        &self,
        set: &StatefulSet,
        revisions: &[Arc<ControllerRevision>],
        reference: OwnerReference,
    ) -> Result<(Revisions, ControllerRevision, ControllerRevision), Error> {
        let mut collision_count = set
            .status
            .as_ref()
            .and_then(|s| s.collision_count)
            .unwrap_or(0);
        let next = revisions.last().map_or(1, |r| r.revision + 1);
        let spec = set.spec.clone().unwrap_or_default();
        let labels = spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        let mut wanted = revision::new(
            set.metadata.name.as_deref().unwrap_or_default(),
            set.metadata.namespace.as_deref().unwrap_or_default(),
            reference,
            labels,
            revision::patch_for(&spec.template),
            next,
            Some(collision_count),
        );
        wanted.metadata.annotations = set.metadata.annotations.clone();
        let equal: Vec<&Arc<ControllerRevision>> = revisions
            .iter()
            .filter(|r| revision::equal(r, &wanted))
            .collect();
        let update = match (equal.last(), revisions.last()) {
            (Some(found), Some(latest)) if revision::equal(latest, found) => {
                ControllerRevision::clone(latest)
            }
            (Some(found), _) => revision::renumber(&self.client, found, next).await?,
            (None, _) => {
                let name = set.metadata.name.as_deref().unwrap_or_default();
                revision::create(&self.client, name, &wanted, &mut collision_count).await?
            }
        };
        let current_name = set.status.as_ref().and_then(|s| s.current_revision.clone());
        let current = revisions
            .iter()
            .find(|r| r.metadata.name.is_some() && r.metadata.name == current_name)
            .map(|r| ControllerRevision::clone(r))
            .unwrap_or_else(|| update.clone());
        let used = Revisions {
            current: current.metadata.name.clone().unwrap_or_default(),
            update: update.metadata.name.clone().unwrap_or_default(),
            current_set: apply_revision(set, &current),
            update_set: apply_revision(set, &update),
            collision_count,
        };
        Ok((used, current, update))
    }

    /// `updateStatefulSetStatus`: completes a finished rolling update, then writes the status
    /// if it differs (retrying on conflicts with the set read back).
    async fn update_status(
        &self,
        set: &StatefulSet,
        mut status: StatefulSetStatus,
    ) -> Result<StatefulSetStatus, Error> {
        let replicas = identity::replicas(set);
        let rolling = set
            .spec
            .as_ref()
            .and_then(|s| s.update_strategy.as_ref())
            .and_then(|s| s.type_.as_deref())
            .is_none_or(|t| t == "RollingUpdate");
        // `completeRollingUpdate`.
        if rolling
            && status.updated_replicas.unwrap_or(0) == replicas
            && status.ready_replicas.unwrap_or(0) == replicas
            && status.replicas == replicas
        {
            status.current_replicas = status.updated_replicas;
            status.current_revision = status.update_revision.clone();
        }
        let current = set.status.clone().unwrap_or_default();
        let count = |v: Option<i32>| v.unwrap_or(0);
        // `inconsistentStatus`.
        let inconsistent = status.observed_generation > current.observed_generation
            || status.replicas != current.replicas
            || count(status.current_replicas) != count(current.current_replicas)
            || count(status.ready_replicas) != count(current.ready_replicas)
            || count(status.updated_replicas) != count(current.updated_replicas)
            || status.current_revision != current.current_revision
            || count(status.available_replicas) != count(current.available_replicas)
            || status.update_revision != current.update_revision
            || status.collision_count != current.collision_count;
        if !inconsistent {
            return Ok(status);
        }
        // Zero counts are omitted, as the API server writes them.
        let nonzero = |v: Option<i32>| v.filter(|n| *n != 0);
        let written = StatefulSetStatus {
            ready_replicas: nonzero(status.ready_replicas),
            current_replicas: nonzero(status.current_replicas),
            updated_replicas: nonzero(status.updated_replicas),
            available_replicas: nonzero(status.available_replicas),
            conditions: current.conditions.clone(),
            ..status.clone()
        };
        let mut obj = set.clone();
        for attempt in 0..5 {
            obj.status = Some(written.clone());
            match self
                .client
                .status()
                .update(&obj, &PostParams::default())
                .await
            {
                Ok(_) => return Ok(status),
                Err(err) if err.is_conflict() && attempt < 4 => {
                    let fresh = self
                        .client
                        .api_reader()
                        .get::<StatefulSet>(&ObjectKey::from_object(set))
                        .await?;
                    obj = Arc::unwrap_or_clone(fresh);
                }
                Err(err) => return Err(err.into()),
            }
        }
        Ok(status)
    }

    /// `truncateHistory`: deletes the oldest revisions that are neither current, nor the
    /// update revision, nor any Pod's, beyond `revisionHistoryLimit`.
    async fn truncate_history(
        &self,
        set: &StatefulSet,
        pods: &[Arc<Pod>],
        revisions: &[Arc<ControllerRevision>],
        current: &ControllerRevision,
        update: &ControllerRevision,
    ) -> Result<(), Error> {
        let live = |name: &str| {
            current.metadata.name.as_deref() == Some(name)
                || update.metadata.name.as_deref() == Some(name)
                || pods.iter().any(|p| control::pod_revision(p) == name)
        };
        let history: Vec<&Arc<ControllerRevision>> = revisions
            .iter()
            .filter(|r| !live(r.metadata.name.as_deref().unwrap_or_default()))
            .collect();
        let limit = set
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10);
        let Ok(limit) = usize::try_from(limit) else {
            return Ok(());
        };
        if history.len() <= limit {
            return Ok(());
        }
        for old in &history[..history.len() - limit] {
            revision::delete(&self.client, old).await?;
        }
        Ok(())
    }
}
