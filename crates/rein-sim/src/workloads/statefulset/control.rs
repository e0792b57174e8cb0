//! One sync of a StatefulSet's Pods, as kube's `updateStatefulSet`
//! (`stateful_set_control.go`) does it: the Pods of ordinals `start..start+replicas` are
//! created (at the current revision below the partition, at the update revision from it),
//! replaced when failed or succeeded and kept at their identity; Pods beyond the range are
//! condemned and deleted from the highest ordinal. With `OrderedReady`, each step waits for
//! every Pod before it to be Running, Ready and available; with `Parallel`, Pods are created
//! and deleted at once. A `RollingUpdate` then deletes the highest-ordinal Pod at or above the
//! partition that is not at the update revision, once the ones above it are available.

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;

use super::super::Error;
use super::super::pods;
use super::super::revision::POD_REVISION_LABEL;
use super::identity;
use super::podcontrol::StatefulPodControl;

/// `MaxBatchSize`: the largest slow-start batch in `Parallel` mode.
const MAX_BATCH_SIZE: usize = 500;

/// The revisions one sync works with: the current one's name and template set, the update
/// one's.
pub(super) struct Revisions {
    pub(super) current: String,
    pub(super) update: String,
    /// The set with the current revision's template.
    pub(super) current_set: StatefulSet,
    /// The set with the update revision's template.
    pub(super) update_set: StatefulSet,
    pub(super) collision_count: i32,
}

/// `getPodRevision`.
pub(super) fn pod_revision(pod: &Pod) -> &str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(POD_REVISION_LABEL))
        .map_or("", String::as_str)
}

/// `isCreated`: the API server gave it a phase.
fn is_created(pod: &Pod) -> bool {
    !pods::phase(pod).is_empty()
}

fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// `isRunningAndReady`.
fn is_running_and_ready(pod: &Pod) -> bool {
    pods::phase(pod) == "Running" && pods::is_ready(pod)
}

/// `isRunningAndAvailable`.
fn is_running_and_available(pod: &Pod, min_ready_seconds: i32) -> bool {
    pods::is_available(pod, min_ready_seconds, Timestamp::now())
}

/// `isHealthy`.
fn is_healthy(pod: &Pod) -> bool {
    is_running_and_ready(pod) && !is_terminating(pod)
}

/// `isUnavailable`.
fn is_unavailable(pod: &Pod, min_ready_seconds: i32) -> bool {
    !is_healthy(pod) || !is_running_and_available(pod, min_ready_seconds)
}

/// `computeReplicaStatus` summed over `lists`, into `status`.
pub(super) fn update_status(
    status: &mut StatefulSetStatus,
    min_ready_seconds: i32,
    revisions: &Revisions,
    lists: &[&[Arc<Pod>]],
) {
    let (mut replicas, mut ready, mut available, mut current, mut updated) = (0, 0, 0, 0, 0);
    for pod in lists.iter().flat_map(|l| l.iter()) {
        if is_created(pod) {
            replicas += 1;
        }
        if is_running_and_ready(pod) {
            ready += 1;
            if is_running_and_available(pod, min_ready_seconds) {
                available += 1;
            }
        }
        if is_created(pod) && !is_terminating(pod) {
            let revision = pod_revision(pod);
            if revision == revisions.current {
                current += 1;
            }
            if revision == revisions.update {
                updated += 1;
            }
        }
    }
    status.replicas = replicas;
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(available);
    status.current_replicas = Some(current);
    status.updated_replicas = Some(updated);
}

/// `newVersionedStatefulSetPod`: below the partition (or, without a rolling update, below
/// the current replica count) at the current revision, else at the update revision.
fn versioned_pod(
    set: &StatefulSet,
    revisions: &Revisions,
    reference: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
    ordinal: i32,
) -> Pod {
    let current = &revisions.current_set;
    let strategy = current
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref());
    let rolling = strategy
        .and_then(|s| s.type_.as_deref())
        .is_none_or(|t| t == "RollingUpdate");
    let start = identity::start_ordinal(current);
    let partition = strategy
        .and_then(|s| s.rolling_update.as_ref())
        .map(|r| r.partition.unwrap_or(0));
    let current_replicas = current
        .status
        .as_ref()
        .and_then(|s| s.current_replicas)
        .unwrap_or(0);
    let at_current = match partition {
        None => rolling && ordinal < start + current_replicas,
        Some(partition) => ordinal < start + partition,
    };
    let (source, revision) = if at_current {
        (current, &revisions.current)
    } else {
        (&revisions.update_set, &revisions.update)
    };
    let template = source
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let mut pod = identity::new_pod(set, &template, reference.clone(), ordinal);
    pod.metadata
        .labels
        .get_or_insert_default()
        .insert(POD_REVISION_LABEL.into(), revision.clone());
    pod
}

/// `slowStartBatch` over indices: batches of 1, 2, 4, … (at most [`MAX_BATCH_SIZE`]) run
/// concurrently, stopping after a batch with a failure.
async fn slow_start<F, Fut>(count: usize, f: F) -> Result<(), Error>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<bool, Error>>,
{
    let mut next = 0;
    let mut batch = count.min(1);
    while batch > 0 {
        let results = futures::future::join_all((next..next + batch).map(&f)).await;
        next += batch;
        if let Some(err) = results.into_iter().find_map(Result::err) {
            return Err(err);
        }
        batch = (2 * batch).min(count - next).min(MAX_BATCH_SIZE);
    }
    Ok(())
}

/// `runForAll`: in order, stopping at the first Pod that blocks (`OrderedReady`), or all at
/// once in slow-start batches (`Parallel`). `true` when the sync must stop here.
async fn run_for_all<F, Fut>(count: usize, f: F, monotonic: bool) -> Result<bool, Error>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<bool, Error>>,
{
    if monotonic {
        for i in 0..count {
            if f(i).await? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    slow_start(count, f).await.map(|()| false)
}

/// The sync of one StatefulSet's Pods.
pub(super) struct Sync<'a> {
    pub(super) set: &'a StatefulSet,
    pub(super) revisions: &'a Revisions,
    pub(super) control: &'a StatefulPodControl,
    pub(super) reference: k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference,
}

impl Sync<'_> {
    fn min_ready(&self) -> i32 {
        self.set
            .spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0)
    }

    /// `updateStatefulSet`: the status to record, and the error that stopped the sync.
    pub(super) async fn run(&self, pods: &[Arc<Pod>]) -> (StatefulSetStatus, Option<Error>) {
        let set = self.set;
        let min_ready = self.min_ready();
        let mut status = StatefulSetStatus {
            observed_generation: set.metadata.generation,
            current_revision: Some(self.revisions.current.clone()),
            update_revision: Some(self.revisions.update.clone()),
            collision_count: Some(self.revisions.collision_count),
            ..StatefulSetStatus::default()
        };
        update_status(&mut status, min_ready, self.revisions, &[pods]);

        let start = identity::start_ordinal(set);
        let count = usize::try_from(identity::replicas(set)).unwrap_or(0);
        let mut slots: Vec<Option<Arc<Pod>>> = vec![None; count];
        let mut condemned: Vec<Arc<Pod>> = Vec::new();
        for pod in pods {
            if identity::in_ordinal_range(pod, set) {
                let index = usize::try_from(identity::ordinal(pod) - start).unwrap_or(0);
                slots[index] = Some(pod.clone());
            } else if identity::ordinal(pod) >= 0 {
                condemned.push(pod.clone());
            }
        }
        let replicas: Vec<Arc<Pod>> = slots
            .into_iter()
            .enumerate()
            .map(|(i, slot)| {
                slot.unwrap_or_else(|| {
                    let ordinal = start + i32::try_from(i).unwrap_or(i32::MAX);
                    Arc::new(versioned_pod(set, self.revisions, &self.reference, ordinal))
                })
            })
            .collect();
        condemned.sort_by_key(|p| std::cmp::Reverse(identity::ordinal(p)));

        // The first unhealthy Pod: of the replicas in order, else of the condemned from the
        // lowest ordinal.
        let first_unavailable = replicas
            .iter()
            .chain(condemned.iter().rev())
            .find(|p| is_unavailable(p, min_ready))
            .and_then(|p| p.metadata.name.clone());

        if set.metadata.deletion_timestamp.is_some() {
            return (status, None);
        }
        let monotonic = set
            .spec
            .as_ref()
            .and_then(|s| s.pod_management_policy.as_deref())
            != Some("Parallel");

        let recount = |status: &mut StatefulSetStatus| {
            update_status(status, min_ready, self.revisions, &[&replicas, &condemned]);
        };
        let process = |i: usize| self.process_replica(monotonic, &replicas[i]);
        match run_for_all(replicas.len(), process, monotonic).await {
            Ok(false) => {}
            Ok(true) => {
                recount(&mut status);
                return (status, None);
            }
            Err(err) => {
                recount(&mut status);
                return (status, Some(err));
            }
        }

        let condemned_ref = &condemned;
        let fix_claims = |i: usize| async move {
            let pod = &condemned_ref[i];
            let update_set = &self.revisions.update_set;
            if !self.control.claims_match_retention(update_set, pod).await? {
                self.control
                    .update_claims_for_retention(update_set, pod)
                    .await?;
            }
            Ok(false)
        };
        if let Err(err) = run_for_all(condemned.len(), fix_claims, monotonic).await {
            recount(&mut status);
            return (status, Some(err));
        }

        let first = first_unavailable.as_deref();
        let condemn = |i: usize| self.process_condemned(monotonic, &condemned[i], first);
        match run_for_all(condemned.len(), condemn, monotonic).await {
            Ok(false) => {}
            Ok(true) => {
                recount(&mut status);
                return (status, None);
            }
            Err(err) => {
                recount(&mut status);
                return (status, Some(err));
            }
        }
        recount(&mut status);

        let strategy = set.spec.as_ref().and_then(|s| s.update_strategy.as_ref());
        if strategy.and_then(|s| s.type_.as_deref()) == Some("OnDelete") {
            return (status, None);
        }
        let partition = strategy
            .and_then(|s| s.rolling_update.as_ref())
            .and_then(|r| r.partition)
            .unwrap_or(0);
        let update_min = usize::try_from(partition).unwrap_or(0);
        for target in (update_min..replicas.len()).rev() {
            let pod = &replicas[target];
            if pod_revision(pod) != self.revisions.update && !is_terminating(pod) {
                tracing::debug!(pod = ?pod.metadata.name, "terminating Pod of StatefulSet for update");
                let result = self.control.delete_pod(set, pod).await;
                if let Some(current) = status.current_replicas.as_mut() {
                    *current -= 1;
                }
                return match result {
                    Err(Error::Api(err)) if err.is_not_found() => (status, None),
                    other => (status, other.err()),
                };
            }
            if is_unavailable(pod, min_ready) {
                return (status, None);
            }
        }
        (status, None)
    }

    /// `processReplica`: `true` when the sync must stop at this Pod (`OrderedReady`).
    async fn process_replica(&self, monotonic: bool, pod: &Pod) -> Result<bool, Error> {
        let set = self.set;
        if matches!(pods::phase(pod), "Failed" | "Succeeded") {
            if !is_terminating(pod) {
                self.control.delete_pod(set, pod).await?;
            }
            // A new Pod is made once this one is gone.
            return Ok(true);
        }
        if !is_created(pod) {
            if self.control.claim_is_stale(set, pod).await? {
                return Ok(true);
            }
            self.control.create_pod(set, pod).await?;
            if monotonic {
                return Ok(true);
            }
        }
        if pods::phase(pod) == "Pending" {
            self.control.create_claims(set, pod).await?;
        }
        if monotonic
            && (is_terminating(pod)
                || !is_running_and_ready(pod)
                || !is_running_and_available(pod, self.min_ready()))
        {
            return Ok(true);
        }
        let update_set = &self.revisions.update_set;
        // An error is expected while the Pod is not fully made: count it as matching.
        let retention_matches = self
            .control
            .claims_match_retention(update_set, pod)
            .await
            .unwrap_or(true);
        if identity::identity_matches(set, pod)
            && identity::storage_matches(set, pod)
            && retention_matches
        {
            return Ok(false);
        }
        self.control.update_pod(update_set, pod).await?;
        Ok(false)
    }

    /// `processCondemned`: deletes a Pod beyond the range, in `OrderedReady` only once every
    /// Pod before it is healthy (the first unhealthy Pod itself may go).
    async fn process_condemned(
        &self,
        monotonic: bool,
        pod: &Pod,
        first_unavailable: Option<&str>,
    ) -> Result<bool, Error> {
        if is_terminating(pod) {
            return Ok(monotonic);
        }
        let is_first =
            first_unavailable.is_some() && pod.metadata.name.as_deref() == first_unavailable;
        if monotonic
            && !is_first
            && (!is_running_and_ready(pod) || !is_running_and_available(pod, self.min_ready()))
        {
            return Ok(true);
        }
        self.control.delete_pod(self.set, pod).await?;
        Ok(true)
    }
}
