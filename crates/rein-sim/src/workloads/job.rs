//! The Job controller of the simulated cluster, as kube's `pkg/controller/job/job_controller.go`
//! behaves (NonIndexed and Indexed completion): it runs up to `parallelism` Pods at a time
//! until `completions` have succeeded (or, without `completions`, until one has and the rest
//! have finished), creating them from the template (`generateName: <job>-`, the template's
//! `job-name`/`controller-uid`/`batch.kubernetes.io/*` labels the API server added, the
//! `batch.kubernetes.io/job-tracking` finalizer), replacing failed ones after kube's back-off
//! (10 s doubling to 6 min), and counting finished Pods through
//! `status.uncountedTerminatedPods` before removing their finalizer, so no Pod is counted
//! twice or lost. It writes `startTime`, `completionTime`, `active`, `ready`, `terminating`,
//! `succeeded`, `failed` (and `completedIndexes`), the conditions `SuccessCriteriaMet` then
//! `Complete` (`CompletionsReached`), `FailureTarget` then `Failed` (`BackoffLimitExceeded`,
//! `DeadlineExceeded`), `Suspended`, and the events `SuccessfulCreate`, `SuccessfulDelete`,
//! `Completed`, `Suspended`/`Resumed`; so `kubectl wait --for=condition=complete` returns.
//!
//! Not simulated: `podFailurePolicy`, `successPolicy`, `backoffLimitPerIndex` (a Job using
//! them gets a `UnsupportedFeature` warning event and is otherwise run as if they were
//! absent), and `ttlSecondsAfterFinished` (the TTL-after-finished controller's).

mod backoff;
mod indexed;
mod orphans;
mod tracking;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::batch::v1::{Job, JobCondition, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use rein_client::{Client, ListOptions, Patch, PatchParams, PostParams, ignore_not_found};
use rein_controller::handler::EnqueueRequestsFromAsyncMapFunc;
use rein_controller::recorder::EventRecorder;
use rein_controller::{Action, BuildError, Context, ControllerManagedBy, Reconciler, Request};
use rein_manager::Manager;
use rein_scheme::ObjectKey;
use rein_scheme::labels::Selector;
use serde_json::json;

use super::Error;
use super::claim::{Claim, describe};
use super::podcontrol::{PodControl, SLOW_START_INITIAL_BATCH_SIZE, slow_start_batch};
use super::pods::{self, controller_of, generate_name_prefix, is_active, now};
use backoff::BackoffStore;

/// The controller's name (as kube-controller-manager names it).
pub const NAME: &str = "job";

/// `batch.kubernetes.io/job-tracking`: held on every Pod of a Job until the controller has
/// counted it.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// The component its events are recorded as.
const COMPONENT: &str = "job-controller";

/// The `managedBy` value of Jobs this controller runs.
const JOB_CONTROLLER_NAME: &str = "kubernetes.io/job-controller";

/// `MaxUncountedPods`: at most this many Pods wait in `uncountedTerminatedPods`.
const MAX_UNCOUNTED_PODS: usize = 500;

/// `MaxPodCreateDeletePerSync`.
const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;

/// Adds the Job controller (and its orphan Pod cleaner) to `mgr`.
pub fn add(mgr: &Manager) -> Result<(), BuildError> {
    let client = mgr.client();
    let orphans = {
        let client = client.clone();
        EnqueueRequestsFromAsyncMapFunc::new(move |pod: Arc<Pod>| {
            let client = client.clone();
            async move { selecting_jobs(&client, &pod).await }
        })
    };
    let recorder = mgr.event_recorder(COMPONENT);
    let controller = JobController {
        pods: PodControl {
            client: client.clone(),
            recorder: recorder.clone(),
        },
        client,
        recorder,
        backoff: BackoffStore::default(),
    };
    ControllerManagedBy::new(mgr)
        .for_::<Job>()
        .owns::<Pod>()
        .watches::<Pod>(orphans)
        .named(NAME)
        .with_options(super::controller_options())
        .complete(controller)?;
    orphans::add(mgr)
}

/// `getPodJobs`: for a Pod without a controller, the Jobs whose selector matches it.
async fn selecting_jobs(client: &Client, pod: &Pod) -> Vec<Request> {
    if controller_of(&pod.metadata).is_some() {
        return Vec::new();
    }
    let Some(namespace) = pod.metadata.namespace.as_deref() else {
        return Vec::new();
    };
    let Ok(list) = client
        .list::<Job>(&ListOptions::default().namespace(namespace))
        .await
    else {
        return Vec::new();
    };
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    list.items
        .iter()
        .filter(|job| {
            job.spec
                .as_ref()
                .and_then(|s| s.selector.as_ref())
                .and_then(|s| Selector::from_label_selector(s).ok())
                .is_some_and(|sel| !sel.is_everything() && sel.matches(&labels))
        })
        .map(|job| Request::from_object(&**job))
        .collect()
}

struct JobController {
    client: Client,
    pods: PodControl,
    recorder: EventRecorder,
    backoff: BackoffStore,
}

#[async_trait]
impl Reconciler for JobController {
    type Error = Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Error> {
        let Some(job) = ignore_not_found(self.client.get::<Job>(&req.key).await)? else {
            self.backoff.remove(&req.key);
            return Ok(Action::done());
        };
        let mut job = Arc::unwrap_or_clone(job);
        let requeue = self.sync_job(&req.key, &mut job).await?;
        Ok(requeue.map_or_else(Action::done, Action::requeue_after))
    }
}

/// What one sync of a Job works with (kube's `syncJobCtx`).
struct SyncCtx {
    /// The Pods the Job controls (adopted ones with the tracking finalizer).
    pods: Vec<Arc<Pod>>,
    /// Those not finished and not being deleted.
    active_pods: Vec<Arc<Pod>>,
    succeeded: i32,
    failed: i32,
    ready: i32,
    terminating: i32,
    /// `status.uncountedTerminatedPods` as sets.
    uncounted_succeeded: BTreeSet<String>,
    uncounted_failed: BTreeSet<String>,
    /// The Pods' back-off after this sync.
    backoff: backoff::BackoffRecord,
    /// The terminal (or interim) condition this sync reached.
    finished: Option<JobCondition>,
    /// Indexed Jobs: the indexes succeeded before this sync and now.
    previous_indexes: indexed::Indexes,
    succeeded_indexes: indexed::Indexes,
}

impl JobController {
    /// `syncJob`. Answers when to sync again without an event (a back-off or a deadline).
    async fn sync_job(&self, key: &ObjectKey, job: &mut Job) -> Result<Option<Duration>, Error> {
        if is_finished(job) {
            self.backoff.remove(key);
            return Ok(None);
        }
        let spec = job.spec.clone().unwrap_or_default();
        if spec
            .managed_by
            .as_deref()
            .is_some_and(|m| m != JOB_CONTROLLER_NAME)
        {
            return Ok(None);
        }
        let mode = spec.completion_mode.as_deref().unwrap_or("NonIndexed");
        if mode != "NonIndexed" && mode != "Indexed" {
            self.recorder.warning(
                &*job,
                "UnknownCompletionMode",
                "Skipped Job sync because completion mode is unknown",
            );
            return Ok(None);
        }
        if spec.pod_failure_policy.is_some()
            || spec.success_policy.is_some()
            || spec.backoff_limit_per_index.is_some()
        {
            self.recorder.warning(
                &*job,
                "UnsupportedFeature",
                "podFailurePolicy, successPolicy and backoffLimitPerIndex are not simulated; the Job runs without them",
            );
        }
        let indexed = mode == "Indexed";
        let status = job.status.get_or_insert_with(Default::default);
        status
            .uncounted_terminated_pods
            .get_or_insert_with(UncountedTerminatedPods::default);

        let pods = self.pods_for_job(job).await?;
        let active_pods: Vec<Arc<Pod>> = pods.iter().filter(|p| is_active(p)).cloned().collect();
        let uncounted = job
            .status
            .as_ref()
            .and_then(|s| s.uncounted_terminated_pods.clone())
            .unwrap_or_default();
        let mut ctx = SyncCtx {
            ready: count(active_pods.iter().filter(|p| pods::is_ready(p))),
            terminating: count(pods.iter().filter(|p| pods::is_terminating(p))),
            uncounted_succeeded: uncounted.succeeded.into_iter().flatten().collect(),
            uncounted_failed: uncounted.failed.into_iter().flatten().collect(),
            pods,
            active_pods,
            succeeded: 0,
            failed: 0,
            backoff: Default::default(),
            finished: None,
            previous_indexes: Default::default(),
            succeeded_indexes: Default::default(),
        };
        let mut active = count(ctx.active_pods.iter());
        let (new_succeeded, new_failed, backoff) = {
            let (succeeded, failed) = new_finished_pods(job, &ctx);
            let backoff = self.backoff.next(key, &succeeded, &failed);
            (count(succeeded.iter()), count(failed.iter()), backoff)
        };
        ctx.backoff = backoff;
        let status = job.status.clone().unwrap_or_default();
        ctx.succeeded =
            status.succeeded.unwrap_or(0) + new_succeeded + count(ctx.uncounted_succeeded.iter());
        ctx.failed = status.failed.unwrap_or(0) + new_failed + count(ctx.uncounted_failed.iter());

        if status.start_time.is_none() && !is_suspended(job) {
            job.status.get_or_insert_with(Default::default).start_time = Some(now());
        }

        let mut requeue = None;
        let backoff_limit = spec.backoff_limit.unwrap_or(6);
        ctx.finished = find_condition(job, "SuccessCriteriaMet")
            .filter(|c| c.status == "True")
            .cloned();
        if ctx.finished.is_none()
            && let Some(target) =
                find_condition(job, "FailureTarget").filter(|c| c.status == "True")
        {
            ctx.finished = Some(new_condition(
                "Failed",
                "True",
                target.reason.as_deref().unwrap_or_default(),
                target.message.as_deref().unwrap_or_default(),
            ));
        }
        if ctx.finished.is_none() {
            if ctx.failed > backoff_limit || past_backoff_limit_on_failure(job, &ctx.pods) {
                ctx.finished = Some(new_condition(
                    "FailureTarget",
                    "True",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                ));
            } else if let Some(left) = active_deadline_left(job) {
                if left.is_zero() {
                    ctx.finished = Some(new_condition(
                        "FailureTarget",
                        "True",
                        "DeadlineExceeded",
                        "Job was active longer than specified deadline",
                    ));
                } else {
                    requeue = Some(left);
                }
            }
        }
        if indexed {
            let completions = spec.completions.unwrap_or(0);
            ctx.previous_indexes = indexed::Indexes::parse(
                status.completed_indexes.as_deref().unwrap_or_default(),
                completions,
            );
            ctx.succeeded_indexes = ctx
                .previous_indexes
                .with(indexed::succeeded_indexes(&ctx.pods, completions));
            ctx.succeeded = ctx.succeeded_indexes.total();
        }

        let mut suspend_changed = false;
        let mut manage_error = None;
        if ctx.finished.is_some() {
            let (deleted_ready, deleted, err) =
                self.delete_active_pods(job, &ctx.active_pods).await;
            if deleted != active {
                // Pods remain: the Job is not finished until they are gone.
                ctx.finished = None;
            }
            active -= deleted;
            ctx.terminating += deleted;
            ctx.ready -= deleted_ready;
            manage_error = err;
        } else {
            let mut manage_called = false;
            if job.metadata.deletion_timestamp.is_none() {
                let (now_active, wait, err) = self.manage_job(job, &mut ctx).await;
                active = now_active;
                if let Some(wait) = wait {
                    requeue = Some(requeue.map_or(wait, |r: Duration| r.min(wait)));
                }
                manage_error = err;
                manage_called = true;
            }
            let complete = match spec.completions {
                None => ctx.succeeded > 0 && active == 0,
                Some(completions) => ctx.succeeded >= completions && active == 0,
            };
            if complete {
                ctx.finished = Some(new_condition(
                    "SuccessCriteriaMet",
                    "True",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                ));
            } else if manage_called {
                let suspended = is_suspended(job);
                let (status, reason, message, event) = if suspended {
                    ("True", "JobSuspended", "Job suspended", "Suspended")
                } else {
                    ("False", "JobResumed", "Job resumed", "Resumed")
                };
                let conditions = &mut job.status.get_or_insert_with(Default::default).conditions;
                if ensure_condition(conditions, "Suspended", status, reason, message) {
                    suspend_changed = true;
                    self.recorder.normal(&*job, event, message);
                    if !suspended {
                        // A resumed Job's active deadline counts from now.
                        job.status.get_or_insert_with(Default::default).start_time = Some(now());
                    }
                }
            }
        }

        let status = job.status.get_or_insert_with(Default::default);
        let needs_update = suspend_changed
            || Some(active) != Some(status.active.unwrap_or(0))
            || status.ready != Some(ctx.ready)
            || status.terminating != Some(ctx.terminating);
        status.active = (active != 0).then_some(active);
        status.ready = Some(ctx.ready);
        status.terminating = Some(ctx.terminating);
        self.track_status_and_remove_finalizers(key, job, &mut ctx, needs_update, indexed)
            .await?;
        match manage_error {
            Some(err) => Err(err),
            None => Ok(requeue),
        }
    }

    /// `getPodsForJob`: every Pod of the namespace the Job controls after adopting (with the
    /// tracking finalizer) and releasing by its selector.
    async fn pods_for_job(&self, job: &Job) -> Result<Vec<Arc<Pod>>, Error> {
        let selector = job
            .spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .map(Selector::from_label_selector)
            .transpose()
            .map_err(|source| Error::Selector {
                object: describe(job),
                source,
            })?
            // Without a selector (the server always sets one) nothing matches.
            .unwrap_or_else(Selector::nothing);
        let namespace = job.metadata.namespace.clone().unwrap_or_default();
        let all = self
            .client
            .list::<Pod>(&ListOptions::default().namespace(&namespace))
            .await?;
        let claimed = Claim {
            client: &self.client,
            owner: job,
            selector: &selector,
            finalizers: &[JOB_TRACKING_FINALIZER],
        }
        .run(all.items)
        .await?;
        Ok(claimed)
    }

    /// `manageJob`: deletes surplus Pods, or creates missing ones after the back-off. Answers
    /// the active count, when to come back for the back-off, and the first error.
    async fn manage_job(
        &self,
        job: &Job,
        ctx: &mut SyncCtx,
    ) -> (i32, Option<Duration>, Option<Error>) {
        let spec = job.spec.clone().unwrap_or_default();
        let active = count(ctx.active_pods.iter());
        let parallelism = spec.parallelism.unwrap_or(1);
        if is_suspended(job) {
            let to_delete = pods_for_removal(job, &ctx.active_pods, ctx.active_pods.len());
            let (ready, removed, err) = self.delete_job_pods(job, &to_delete).await;
            ctx.terminating += removed;
            ctx.ready -= ready;
            return (active - removed, None, err);
        }
        let want_active = match spec.completions {
            None if ctx.succeeded > 0 => active,
            None => parallelism,
            Some(completions) => (completions - ctx.succeeded).clamp(0, parallelism.max(0)),
        };
        let remove_at_least = usize::try_from(active - want_active).unwrap_or(0);
        let mut to_delete = pods_for_removal(job, &ctx.active_pods, remove_at_least);
        to_delete.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
        if !to_delete.is_empty() {
            let (ready, removed, err) = self.delete_job_pods(job, &to_delete).await;
            ctx.terminating += removed;
            ctx.ready -= ready;
            return (active - removed, None, err);
        }
        let terminating = if only_replace_failed_pods(job) {
            ctx.terminating
        } else {
            0
        };
        let diff = want_active - terminating - active;
        if diff <= 0 {
            return (active, None, None);
        }
        let wait = ctx.backoff.remaining(Timestamp::now());
        if !wait.is_zero() {
            return (active, Some(wait), None);
        }
        let mut diff = usize::try_from(diff)
            .unwrap_or(0)
            .min(MAX_POD_CREATE_DELETE_PER_SYNC);
        let mut template = spec.template.clone();
        let finalizers = &mut template
            .metadata
            .get_or_insert_with(Default::default)
            .finalizers;
        let finalizers = finalizers.get_or_insert_with(Vec::new);
        if !finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER) {
            finalizers.push(JOB_TRACKING_FINALIZER.into());
        }
        let name = job.metadata.name.clone().unwrap_or_default();
        let mut to_add = Vec::new();
        if spec.completion_mode.as_deref() == Some("Indexed") {
            to_add = indexed::first_pending(job, ctx, diff, spec.completions.unwrap_or(0));
            diff = to_add.len();
        }
        let next = std::sync::Mutex::new(to_add.into_iter());
        let (created, err) = slow_start_batch(diff, SLOW_START_INITIAL_BATCH_SIZE, || {
            let index = next.lock().ok().and_then(|mut n| n.next());
            let (template, prefix) = match index {
                Some(index) => indexed::template_for(&template, &name, index),
                None => (template.clone(), generate_name_prefix(&name)),
            };
            async move { self.pods.create(&template, job, prefix).await }
        })
        .await;
        (active + count(0..created), None, err)
    }

    /// `deleteActivePods`: deletes the Pods keeping their finalizers (the tracking removes
    /// them). Answers the ready ones deleted, all deleted, and the first error.
    async fn delete_active_pods(&self, job: &Job, pods: &[Arc<Pod>]) -> (i32, i32, Option<Error>) {
        let deletes = pods.iter().map(|pod| async move {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            match self.pods.delete(name, job).await {
                Ok(()) => Ok(pods::is_ready(pod)),
                Err(err) if err.is_not_found() => Ok(pods::is_ready(pod)),
                Err(err) => Err(Error::from(err)),
            }
        });
        tally(futures::future::join_all(deletes).await)
    }

    /// `deleteJobPods`: removes each Pod's tracking finalizer, then deletes it.
    async fn delete_job_pods(&self, job: &Job, pods: &[Arc<Pod>]) -> (i32, i32, Option<Error>) {
        let deletes = pods.iter().map(|pod| async move {
            remove_tracking_finalizer(&self.client, pod).await?;
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            match self.pods.delete(name, job).await {
                Ok(()) => Ok(pods::is_ready(pod)),
                Err(err) if err.is_not_found() => Ok(pods::is_ready(pod)),
                Err(err) => Err(Error::from(err)),
            }
        });
        tally(futures::future::join_all(deletes).await)
    }

    /// Writes the Job's status; answers the Job as stored.
    async fn update_status(&self, job: &Job) -> Result<Job, Error> {
        Ok(self
            .client
            .status()
            .update(job, &PostParams::default())
            .await?)
    }
}

/// (ready deleted, deleted, first error) of a batch of deletes.
fn tally(results: Vec<Result<bool, Error>>) -> (i32, i32, Option<Error>) {
    let (mut ready, mut deleted, mut first_error) = (0, 0, None);
    for result in results {
        match result {
            Ok(was_ready) => {
                deleted += 1;
                ready += i32::from(was_ready);
            }
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    (ready, deleted, first_error)
}

/// Whether `pod` holds the tracking finalizer.
fn has_tracking_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == JOB_TRACKING_FINALIZER)
}

/// `removeTrackingFinalizerPatch`, sent: Ok if it is gone (or the Pod is).
async fn remove_tracking_finalizer(client: &Client, pod: &Pod) -> Result<(), Error> {
    if !has_tracking_finalizer(pod) {
        return Ok(());
    }
    let patch = json!({
        "metadata": { "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER] }
    });
    match client
        .patch::<Pod, _>(
            &ObjectKey::from_object(pod),
            &Patch::Strategic(patch),
            &PatchParams::default(),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(err) if err.is_not_found() => Ok(()),
        Err(err) => Err(err.into()),
    }
}

/// `activePodsForRemoval`: the `n` active Pods earliest in their life (for an Indexed Job,
/// Pods with a duplicate or invalid index first).
fn pods_for_removal(job: &Job, pods: &[Arc<Pod>], n: usize) -> Vec<Arc<Pod>> {
    let (mut remove, mut left) =
        if job.spec.as_ref().and_then(|s| s.completion_mode.as_deref()) == Some("Indexed") {
            let completions = job.spec.as_ref().and_then(|s| s.completions).unwrap_or(0);
            indexed::split_duplicates(pods, completions)
        } else {
            (Vec::new(), pods.to_vec())
        };
    if remove.len() < n {
        left.sort_by(|a, b| pods::active_order(a, b));
        let more = n - remove.len();
        remove.extend(left.into_iter().take(more));
    }
    remove
}

/// The Pods that finished since they were last counted: (succeeded, failed).
fn new_finished_pods<'a>(job: &Job, ctx: &'a SyncCtx) -> (Vec<&'a Pod>, Vec<&'a Pod>) {
    let counted = |p: &Pod| {
        let uid = p.metadata.uid.clone().unwrap_or_default();
        !has_tracking_finalizer(p)
            || ctx.uncounted_succeeded.contains(&uid)
            || ctx.uncounted_failed.contains(&uid)
    };
    let completions = job.spec.as_ref().and_then(|s| s.completions).unwrap_or(0);
    let indexed = job.spec.as_ref().and_then(|s| s.completion_mode.as_deref()) == Some("Indexed");
    let valid = |p: &Pod| !indexed || indexed::index_of(p).is_some_and(|i| i < completions);
    let succeeded = ctx
        .pods
        .iter()
        .map(|p| &**p)
        .filter(|p| !counted(p) && valid(p) && pods::phase(p) == "Succeeded")
        .collect();
    let failed = ctx
        .pods
        .iter()
        .map(|p| &**p)
        .filter(|p| !counted(p) && valid(p) && is_pod_failed(p, job))
        .collect();
    (succeeded, failed)
}

/// `isPodFailed`: Failed, or (unless only failed Pods are replaced) deleted before it
/// succeeded.
fn is_pod_failed(pod: &Pod, job: &Job) -> bool {
    if pods::phase(pod) == "Failed" {
        return true;
    }
    if only_replace_failed_pods(job) {
        return false;
    }
    pod.metadata.deletion_timestamp.is_some() && pods::phase(pod) != "Succeeded"
}

/// `onlyReplaceFailedPods`: `podReplacementPolicy: Failed` (or a pod failure policy).
fn only_replace_failed_pods(job: &Job) -> bool {
    let spec = job.spec.as_ref();
    spec.and_then(|s| s.pod_replacement_policy.as_deref()) == Some("Failed")
        || spec.is_some_and(|s| s.pod_failure_policy.is_some())
}

/// `pastBackoffLimitOnFailure`: with `restartPolicy: OnFailure`, the restarts of running and
/// pending Pods reach `backoffLimit`.
fn past_backoff_limit_on_failure(job: &Job, pods: &[Arc<Pod>]) -> bool {
    let spec = job.spec.clone().unwrap_or_default();
    let restart_policy = spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref());
    if restart_policy != Some("OnFailure") {
        return false;
    }
    let restarts: i32 = pods
        .iter()
        .filter(|p| matches!(pods::phase(p), "Running" | "Pending"))
        .filter_map(|p| p.status.as_ref())
        .flat_map(|s| {
            s.init_container_statuses
                .iter()
                .flatten()
                .chain(s.container_statuses.iter().flatten())
        })
        .map(|c| c.restart_count)
        .sum();
    let limit = spec.backoff_limit.unwrap_or(6);
    if limit == 0 {
        restarts > 0
    } else {
        restarts >= limit
    }
}

/// How much of `activeDeadlineSeconds` is left (zero: exceeded); `None` without a deadline
/// or while suspended.
fn active_deadline_left(job: &Job) -> Option<Duration> {
    let deadline = job.spec.as_ref()?.active_deadline_seconds?;
    if is_suspended(job) {
        return None;
    }
    let start = job.status.as_ref()?.start_time.as_ref()?.0;
    let end = start
        .checked_add(SignedDuration::from_secs(deadline))
        .ok()?;
    Some(Duration::try_from(end.duration_since(Timestamp::now())).unwrap_or_default())
}

fn is_suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

/// `IsJobFinished`: `Complete` or `Failed` is `True`.
fn is_finished(job: &Job) -> bool {
    job.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
}

fn find_condition<'a>(job: &'a Job, type_: &str) -> Option<&'a JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// `newCondition`: probed and transitioned now.
fn new_condition(type_: &str, status: &str, reason: &str, message: &str) -> JobCondition {
    let now = now();
    JobCondition {
        type_: type_.into(),
        status: status.into(),
        reason: (!reason.is_empty()).then(|| reason.into()),
        message: (!message.is_empty()).then(|| message.into()),
        last_probe_time: Some(now.clone()),
        last_transition_time: Some(now),
    }
}

/// `ensureJobConditionStatus`: sets the condition of `type_` (a new one only if not `False`);
/// whether anything changed.
fn ensure_condition(
    conditions: &mut Option<Vec<JobCondition>>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> bool {
    let list = conditions.get_or_insert_with(Vec::new);
    let changed = if let Some(existing) = list.iter_mut().find(|c| c.type_ == type_) {
        if existing.status != status
            || existing.reason.as_deref().unwrap_or_default() != reason
            || existing.message.as_deref().unwrap_or_default() != message
        {
            *existing = new_condition(type_, status, reason, message);
            true
        } else {
            false
        }
    } else if status != "False" {
        list.push(new_condition(type_, status, reason, message));
        true
    } else {
        false
    };
    if list.is_empty() {
        *conditions = None;
    }
    changed
}

/// A count as an `i32`.
fn count<T>(items: impl Iterator<Item = T>) -> i32 {
    i32::try_from(items.count()).unwrap_or(i32::MAX)
}
