//! The CronJob controller of the simulated cluster, as kube's
//! `pkg/controller/cronjob/cronjob_controllerv2.go` behaves: at each schedule time (robfig/cron
//! semantics: five fields or `@hourly`-style descriptors, `spec.timeZone` or a `CRON_TZ=`
//! prefix) it creates the Job `<cronjob>-<scheduled time in minutes>` from the Job template,
//! annotated `batch.kubernetes.io/cronjob-scheduled-timestamp` and controlled by the CronJob;
//! of several missed schedules only the most recent runs, and only within
//! `startingDeadlineSeconds`; `concurrencyPolicy` `Forbid` skips a schedule while a Job is
//! active and `Replace` deletes the active ones first; `suspend` stops new Jobs. It keeps
//! `status.active`, `lastScheduleTime` and `lastSuccessfulTime`, deletes finished Jobs beyond
//! `successfulJobsHistoryLimit`/`failedJobsHistoryLimit` (oldest first), and requeues each
//! CronJob for its next schedule. Its events carry kube's reasons: `SuccessfulCreate`,
//! `SawCompletedJob`, `SuccessfulDelete`, `JobAlreadyActive`, `UnexpectedJob`, `MissingJob`,
//! `MissSchedule`, `TooManyMissedTimes`, `UnparseableSchedule`, `InvalidSchedule`,
//! `UnknownTimeZone`, `UnsupportedSchedule`, `FailedCreate`, `FailedDelete`, `FailedGet`.
//!
//! The controller reads the time from a [`Clock`] ([`CronJobOptions::clock`]): the system's in
//! a running cluster, a [`ManualClock`] in tests, so that schedules minutes apart run in
//! milliseconds. Setting a manual clock makes the controller look at every CronJob again.

mod clock;
mod schedule;
mod timing;

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use rein_client::{Client, DeleteParams, ListOptions, PostParams, ignore_not_found};
use rein_controller::event::UpdateEvent;
use rein_controller::handler::{EnqueueRequestForObject, EventHandler};
use rein_controller::predicate::Predicate;
use rein_controller::recorder::EventRecorder;
use rein_controller::{
    Action, BuildError, Context, ControllerManagedBy, Reconciler, Request, RequestQueue,
};
use rein_manager::Manager;
use rein_scheme::ObjectKey;

use super::Error;
use super::claim::describe;
use super::pods::controller_of;
use clock::ClockJumps;
use timing::{Missed, job_name, next_schedule_time, next_schedule_time_duration};

pub use clock::{Clock, ManualClock, SystemClock};
pub use schedule::{Schedule, ScheduleError, SpecSchedule, load_location};

/// The controller's name (as kube-controller-manager names it).
pub const NAME: &str = "cronjob";

/// `batch.kubernetes.io/cronjob-scheduled-timestamp`: on each Job, the schedule time it was
/// created for (RFC 3339, in the CronJob's `timeZone`, else UTC).
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// The component its events are recorded as.
const COMPONENT: &str = "cronjob-controller";

/// How the CronJob controller runs. `Default`: the system clock, schedules without a time
/// zone in UTC (kube-controller-manager's zone in its image).
#[derive(Debug, Clone)]
pub struct CronJobOptions {
    /// Where the controller reads the time.
    pub clock: Arc<dyn Clock>,
    /// The controller's own time zone: where schedules without `timeZone` or `CRON_TZ` run
    /// (robfig's `time.Local`).
    pub local_time_zone: TimeZone,
}

impl Default for CronJobOptions {
    fn default() -> Self {
        CronJobOptions {
            clock: Arc::new(SystemClock),
            local_time_zone: TimeZone::UTC,
        }
    }
}

/// Adds the CronJob controller with the system clock to `mgr`.
pub fn add(mgr: &Manager) -> Result<(), BuildError> {
    add_with(mgr, CronJobOptions::default())
}

/// Adds the CronJob controller with `options` (a [`ManualClock`], a time zone) to `mgr`.
pub fn add_with(mgr: &Manager, options: CronJobOptions) -> Result<(), BuildError> {
    let recorder = mgr.event_recorder(COMPONENT);
    let controller = CronJobController {
        client: mgr.client(),
        reader: mgr.api_reader(),
        recorder: recorder.clone(),
        clock: options.clock.clone(),
        local: options.local_time_zone.clone(),
    };
    let schedule_changes = ScheduleChanges {
        recorder,
        clock: options.clock.clone(),
        local: options.local_time_zone,
    };
    let jumps = ClockJumps {
        clock: options.clock,
        client: mgr.client(),
    };
    ControllerManagedBy::new(mgr)
        .for_with::<CronJob>(vec![Arc::new(ScheduleUnchanged)])
        .owns::<Job>()
        .watches::<CronJob>(schedule_changes)
        .watches_raw(jumps, EnqueueRequestForObject, Vec::new())
        .named(NAME)
        .with_options(super::controller_options())
        .complete(controller)?;
    Ok(())
}

/// Passes every CronJob event but the updates that change its schedule or time zone (those
/// go to [`ScheduleChanges`]).
struct ScheduleUnchanged;

impl Predicate<CronJob> for ScheduleUnchanged {
    fn update(&self, e: &UpdateEvent<CronJob>) -> bool {
        !schedule_changed(&e.object_old, &e.object_new)
    }
}

fn schedule_changed(old: &CronJob, new: &CronJob) -> bool {
    let (old, new) = (old.spec.as_ref(), new.spec.as_ref());
    old.map(|s| &s.schedule) != new.map(|s| &s.schedule)
        || old.and_then(|s| s.time_zone.as_ref()) != new.and_then(|s| s.time_zone.as_ref())
}

/// kube's `updateCronJob` for a changed schedule: the CronJob is requeued for its next time
/// under the new schedule, not synced at once.
struct ScheduleChanges {
    recorder: EventRecorder,
    clock: Arc<dyn Clock>,
    local: TimeZone,
}

impl EventHandler<CronJob> for ScheduleChanges {
    fn update(&self, e: &UpdateEvent<CronJob>, queue: &RequestQueue) {
        let cj = &*e.object_new;
        if !schedule_changed(&e.object_old, cj) {
            return;
        }
        let spec = cj.spec.clone().unwrap_or_default();
        let schedule = match Schedule::parse(&format_schedule(cj, &self.local), &self.local) {
            Ok(schedule) => schedule,
            Err(_) => {
                self.recorder.warning(
                    cj,
                    "UnParseableCronJobSchedule",
                    &format!("unparseable schedule for cronjob: {}", spec.schedule),
                );
                return;
            }
        };
        if let Some(after) = next_schedule_time_duration(cj, self.clock.now(), &schedule) {
            queue.add_after(Request::from_object(cj), after);
        }
    }
}

struct CronJobController {
    /// The manager's client (reads from the cache).
    client: Client,
    /// Reads from the API server, where the cache may lag.
    reader: Client,
    recorder: EventRecorder,
    clock: Arc<dyn Clock>,
    local: TimeZone,
}

#[async_trait]
impl Reconciler for CronJobController {
    type Error = Error;

    /// `sync`: the finished Jobs beyond the history limits go, then `syncCronJob`, then one
    /// status write for both.
    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Error> {
        let Some(cj) = ignore_not_found(self.client.get::<CronJob>(&req.key).await)? else {
            return Ok(Action::done());
        };
        let jobs = self.jobs_to_be_reconciled(&cj).await?;
        let mut cj = Arc::unwrap_or_clone(cj);
        let mut update_status = self.cleanup_finished_jobs(&mut cj, &jobs).await;
        let synced = self.sync_cron_job(&mut cj, &jobs, &mut update_status).await;
        if update_status {
            self.client
                .status()
                .update(&cj, &PostParams::default())
                .await?;
        }
        Ok(synced?.map_or_else(Action::done, Action::requeue_after))
    }
}

impl CronJobController {
    /// `getJobsToBeReconciled`: the Jobs of the namespace whose controller reference names
    /// the CronJob (labels may no longer match the template).
    async fn jobs_to_be_reconciled(&self, cj: &CronJob) -> Result<Vec<Arc<Job>>, Error> {
        let namespace = cj.metadata.namespace.as_deref().unwrap_or_default();
        let name = cj.metadata.name.as_deref().unwrap_or_default();
        let jobs = self
            .client
            .list::<Job>(&ListOptions::default().namespace(namespace))
            .await?;
        Ok(jobs
            .items
            .into_iter()
            .filter(|job| controller_of(&job.metadata).is_some_and(|r| r.name == name))
            .collect())
    }

    /// `syncCronJob`: reconciles `status.active` with the Jobs, then creates the Job of the
    /// most recent unmet schedule if the policies allow. Answers when to look again; sets
    /// `update_status` when the status changed.
    async fn sync_cron_job(
        &self,
        cj: &mut CronJob,
        jobs: &[Arc<Job>],
        update_status: &mut bool,
    ) -> Result<Option<Duration>, Error> {
        let now = self.clock.now();
        let mut children = BTreeSet::new();
        for job in jobs {
            let uid = job.metadata.uid.clone().unwrap_or_default();
            let name = job.metadata.name.as_deref().unwrap_or_default();
            children.insert(uid.clone());
            let found = in_active_list(cj, &uid);
            let finished = finished_condition(job);
            match finished {
                None if !found => {
                    // Perhaps our status is older than the Job: look at the stored CronJob.
                    let fresh = self
                        .reader
                        .get::<CronJob>(&ObjectKey::from_object(cj))
                        .await?;
                    if in_active_list(&fresh, &uid) {
                        *cj = Arc::unwrap_or_clone(fresh);
                        continue;
                    }
                    self.recorder.warning(
                        &*cj,
                        "UnexpectedJob",
                        &format!("Saw a job that the controller did not create or forgot: {name}"),
                    );
                }
                None => {}
                Some(condition) => {
                    if found {
                        delete_from_active_list(cj, &uid);
                        self.recorder.normal(
                            &*cj,
                            "SawCompletedJob",
                            &format!("Saw completed job: {name}, condition: {condition}"),
                        );
                        *update_status = true;
                    }
                    if condition == "Complete" {
                        let completed = job.status.as_ref().and_then(|s| s.completion_time.clone());
                        let status = cj.status.get_or_insert_with(Default::default);
                        match (&status.last_successful_time, completed) {
                            (None, completed) => {
                                status.last_successful_time = completed;
                                *update_status = true;
                            }
                            (Some(last), Some(completed)) if completed.0 > last.0 => {
                                status.last_successful_time = Some(completed);
                                *update_status = true;
                            }
                            _ => {}
                        }
                    }
                }
            }
        }

        // Active Jobs that are gone would keep the CronJob active forever.
        let active: Vec<ObjectReference> = active_list(cj).to_vec();
        for reference in active {
            let uid = reference.uid.clone().unwrap_or_default();
            if children.contains(&uid) {
                continue;
            }
            let key = ObjectKey::new(
                reference.namespace.clone().unwrap_or_default(),
                reference.name.clone().unwrap_or_default(),
            );
            match self.reader.get::<Job>(&key).await {
                Err(err) if err.is_not_found() => {
                    self.recorder.normal(
                        &*cj,
                        "MissingJob",
                        &format!(
                            "Active job went missing: {}",
                            reference.name.as_deref().unwrap_or_default()
                        ),
                    );
                    delete_from_active_list(cj, &uid);
                    *update_status = true;
                }
                Err(err) => return Err(err.into()),
                // Not in the cache yet, but there.
                Ok(_) => {}
            }
        }

        if cj.metadata.deletion_timestamp.is_some() {
            return Ok(None);
        }
        let spec = cj.spec.clone().unwrap_or_default();
        if let Some(zone) = spec.time_zone.as_deref()
            && load_location(zone, &self.local).is_none()
        {
            self.recorder.warning(
                &*cj,
                "UnknownTimeZone",
                &format!("invalid timeZone: {zone:?}: unknown time zone {zone}"),
            );
            return Ok(None);
        }
        if spec.suspend == Some(true) {
            return Ok(None);
        }
        if spec.schedule.contains("TZ") {
            self.recorder.warning(
                &*cj,
                "UnsupportedSchedule",
                &format!(
                    "CRON_TZ or TZ used in schedule {:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
                    spec.schedule
                ),
            );
        }
        let schedule = match Schedule::parse(&format_schedule(cj, &self.local), &self.local) {
            Ok(schedule) => schedule,
            Err(err) => {
                self.recorder.warning(
                    &*cj,
                    "UnparseableSchedule",
                    &format!("unparseable schedule: {:?} : {err}", spec.schedule),
                );
                return Ok(None);
            }
        };
        let requeue = |cj: &CronJob| next_schedule_time_duration(cj, now, &schedule);
        let scheduled = match next_schedule_time(cj, now, &schedule) {
            Err(err) => {
                self.recorder.warning(
                    &*cj,
                    "InvalidSchedule",
                    &format!("invalid schedule: {} : {err}", spec.schedule),
                );
                return Ok(None);
            }
            Ok(None) => return Ok(requeue(cj)),
            Ok(Some((scheduled, missed))) => {
                if missed == Missed::Many {
                    self.recorder.warning(
                        &*cj,
                        "TooManyMissedTimes",
                        "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
                    );
                }
                scheduled
            }
        };

        if let Some(deadline) = spec.starting_deadline_seconds {
            let too_late = scheduled
                .checked_add(SignedDuration::from_secs(deadline))
                .is_ok_and(|end| end < now);
            if too_late {
                self.recorder.warning(
                    &*cj,
                    "MissSchedule",
                    &format!(
                        "Missed scheduled time to start a job: {}",
                        rfc1123z_utc(scheduled)
                    ),
                );
                return Ok(requeue(cj));
            }
        }
        let name = job_name(cj.metadata.name.as_deref().unwrap_or_default(), scheduled);
        let namespace = cj.metadata.namespace.clone().unwrap_or_default();
        let already_processed = active_list(cj).iter().any(|r| {
            r.name.as_deref() == Some(name.as_str())
                && r.namespace.as_deref() == Some(namespace.as_str())
        }) || last_schedule_time(cj) == Some(scheduled);
        if already_processed {
            return Ok(requeue(cj));
        }
        let policy = spec.concurrency_policy.as_deref().unwrap_or("Allow");
        if policy == "Forbid" && !active_list(cj).is_empty() {
            self.recorder.normal(
                &*cj,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
            );
            return Ok(requeue(cj));
        }
        if policy == "Replace" {
            for reference in active_list(cj).to_vec() {
                let key = ObjectKey::new(
                    reference.namespace.clone().unwrap_or_default(),
                    reference.name.clone().unwrap_or_default(),
                );
                let job = match self.reader.get::<Job>(&key).await {
                    Ok(job) => job,
                    Err(err) => {
                        self.recorder
                            .warning(&*cj, "FailedGet", &format!("Get job: {err}"));
                        return Err(err.into());
                    }
                };
                if !self.delete_job(cj, &job).await {
                    return Err(Error::Invalid {
                        object: describe(&*cj),
                        problem: format!("could not replace job {key}"),
                    });
                }
                *update_status = true;
            }
        }

        let request = job_from_template(cj, scheduled, &name, &self.local)?;
        let created = match self.client.create(&request, &PostParams::default()).await {
            Ok(created) => {
                self.recorder
                    .normal(&*cj, "SuccessfulCreate", &format!("Created job {name}"));
                created
            }
            Err(err) if namespace_terminating(&err) => return Err(err.into()),
            Err(err) if err.is_already_exists() => {
                // Created before, by us (and the status write was lost) or by someone else.
                let existing = self
                    .reader
                    .get::<Job>(&ObjectKey::new(namespace.clone(), name.clone()))
                    .await?;
                let ours = controller_of(&existing.metadata)
                    .is_some_and(|r| Some(&r.uid) == cj.metadata.uid.as_ref());
                let uid = existing.metadata.uid.clone().unwrap_or_default();
                if !ours || in_active_list(cj, &uid) {
                    return Ok(None);
                }
                Arc::unwrap_or_clone(existing)
            }
            Err(err) => {
                self.recorder
                    .warning(&*cj, "FailedCreate", &format!("Error creating job: {err}"));
                return Err(err.into());
            }
        };
        let status = cj.status.get_or_insert_with(Default::default);
        status
            .active
            .get_or_insert_with(Vec::new)
            .push(job_reference(&created));
        status.last_schedule_time = Some(Time(scheduled));
        *update_status = true;
        Ok(requeue(cj))
    }

    /// `cleanupFinishedJobs`: deletes the oldest finished Jobs beyond the history limits.
    /// Whether the status changed.
    async fn cleanup_finished_jobs(&self, cj: &mut CronJob, jobs: &[Arc<Job>]) -> bool {
        let spec = cj.spec.clone().unwrap_or_default();
        if spec.successful_jobs_history_limit.is_none() && spec.failed_jobs_history_limit.is_none()
        {
            return false;
        }
        let mut successful = Vec::new();
        let mut failed = Vec::new();
        for job in jobs {
            match finished_condition(job) {
                Some("Complete") => successful.push(job.clone()),
                Some("Failed") => failed.push(job.clone()),
                _ => {}
            }
        }
        let mut update_status = false;
        for (mut finished, limit) in [
            (successful, spec.successful_jobs_history_limit),
            (failed, spec.failed_jobs_history_limit),
        ] {
            let Some(limit) = limit else { continue };
            let excess = finished
                .len()
                .saturating_sub(usize::try_from(limit).unwrap_or(0));
            if excess == 0 {
                continue;
            }
            finished.sort_by(|a, b| by_start_time(a, b));
            for job in finished.iter().take(excess) {
                if self.delete_job(cj, job).await {
                    update_status = true;
                }
            }
        }
        update_status
    }

    /// `deleteJob`: deletes the Job (its Pods follow in the background) and drops it from
    /// `status.active`. Whether it was deleted.
    async fn delete_job(&self, cj: &mut CronJob, job: &Job) -> bool {
        let name = job.metadata.name.as_deref().unwrap_or_default();
        let deleted = self
            .client
            .delete::<Job>(&ObjectKey::from_object(job), &DeleteParams::background())
            .await;
        if let Err(err) = deleted {
            self.recorder
                .warning(&*cj, "FailedDelete", &format!("Deleted job: {err}"));
            return false;
        }
        delete_from_active_list(cj, job.metadata.uid.as_deref().unwrap_or_default());
        self.recorder
            .normal(&*cj, "SuccessfulDelete", &format!("Deleted job {name}"));
        true
    }
}

/// `formatSchedule`: the schedule, prefixed `TZ=<timeZone>` when the CronJob names a zone
/// that loads (a schedule with its own `TZ` is left alone).
fn format_schedule(cj: &CronJob, local: &TimeZone) -> String {
    let spec = cj.spec.clone().unwrap_or_default();
    if spec.schedule.contains("TZ") {
        return spec.schedule;
    }
    match spec.time_zone {
        Some(zone) if load_location(&zone, local).is_some() => {
            format!("TZ={zone} {}", spec.schedule)
        }
        _ => spec.schedule,
    }
}

/// `getJobFromTemplate2`: the Job for `scheduled`, named `name`, with the template's labels,
/// annotations (and the scheduled time's) and spec, controlled by the CronJob.
fn job_from_template(
    cj: &CronJob,
    scheduled: Timestamp,
    name: &str,
    local: &TimeZone,
) -> Result<Job, Error> {
    let spec = cj.spec.clone().unwrap_or_default();
    let template = spec.job_template;
    let meta = template.metadata.unwrap_or_default();
    let zone = spec.time_zone.unwrap_or_default();
    let Some(location) = load_location(&zone, local) else {
        return Err(Error::Invalid {
            object: describe(cj),
            problem: format!("unknown time zone {zone}"),
        });
    };
    let mut annotations = meta.annotations.unwrap_or_default();
    annotations.insert(
        SCHEDULED_TIMESTAMP_ANNOTATION.to_owned(),
        rfc3339(scheduled, &location),
    );
    let labels: BTreeMap<String, String> = meta.labels.unwrap_or_default();
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: cj.metadata.namespace.clone(),
            labels: (!labels.is_empty()).then_some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "CronJob".into(),
                name: cj.metadata.name.clone().unwrap_or_default(),
                uid: cj.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    })
}

/// `ref.GetReference` of a Job, as `status.active` holds it.
fn job_reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("Job".into()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        resource_version: job.metadata.resource_version.clone(),
        field_path: None,
    }
}

fn active_list(cj: &CronJob) -> &[ObjectReference] {
    cj.status
        .as_ref()
        .and_then(|s| s.active.as_deref())
        .unwrap_or_default()
}

fn in_active_list(cj: &CronJob, uid: &str) -> bool {
    active_list(cj)
        .iter()
        .any(|r| r.uid.as_deref() == Some(uid))
}

fn delete_from_active_list(cj: &mut CronJob, uid: &str) {
    if let Some(active) = cj.status.as_mut().and_then(|s| s.active.as_mut()) {
        active.retain(|r| r.uid.as_deref() != Some(uid));
    }
}

fn last_schedule_time(cj: &CronJob) -> Option<Timestamp> {
    cj.status.as_ref()?.last_schedule_time.as_ref().map(|t| t.0)
}

/// `getFinishedStatus`: `Complete` or `Failed`, if either condition is `True`.
fn finished_condition(job: &Job) -> Option<&'static str> {
    job.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .find_map(|c| match (c.type_.as_str(), c.status.as_str()) {
            ("Complete", "True") => Some("Complete"),
            ("Failed", "True") => Some("Failed"),
            _ => None,
        })
}

/// `byJobStartTime`: started before not started, earlier first, then by name.
fn by_start_time(a: &Job, b: &Job) -> Ordering {
    let start = |j: &Job| {
        j.status
            .as_ref()
            .and_then(|s| s.start_time.as_ref())
            .map(|t| t.0)
    };
    match (start(a), start(b)) {
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (sa, sb) if sa == sb => a.metadata.name.cmp(&b.metadata.name),
        (sa, sb) => sa.cmp(&sb),
    }
}

/// Go's `time.RFC3339` of `t` in `zone` (`Z` for a zero offset).
fn rfc3339(t: Timestamp, zone: &TimeZone) -> String {
    let zoned = t.to_zoned(zone.clone());
    let format = if zoned.offset().seconds() == 0 {
        "%Y-%m-%dT%H:%M:%SZ"
    } else {
        "%Y-%m-%dT%H:%M:%S%:z"
    };
    zoned.strftime(format).to_string()
}

/// Go's `t.UTC().Format(time.RFC1123Z)`.
fn rfc1123z_utc(t: Timestamp) -> String {
    t.to_zoned(TimeZone::UTC)
        .strftime("%a, %d %b %Y %H:%M:%S +0000")
        .to_string()
}

/// Whether the create failed because the namespace is being deleted
/// (`NamespaceTerminatingCause`).
fn namespace_terminating(err: &rein_client::Error) -> bool {
    err.status().is_some_and(|s| {
        s.details
            .as_ref()
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
            || s.message.contains("because it is being terminated")
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::batch::v1::{CronJobSpec, JobSpec, JobStatus, JobTemplateSpec};

    use super::*;

    fn cron_job(schedule: &str, time_zone: Option<&str>) -> CronJob {
        CronJob {
            metadata: ObjectMeta {
                name: Some("report".into()),
                namespace: Some("default".into()),
                uid: Some("cj-uid".into()),
                ..ObjectMeta::default()
            },
            spec: Some(CronJobSpec {
                schedule: schedule.into(),
                time_zone: time_zone.map(Into::into),
                job_template: JobTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(BTreeMap::from([("app".into(), "report".into())])),
                        ..ObjectMeta::default()
                    }),
                    spec: Some(JobSpec::default()),
                },
                ..CronJobSpec::default()
            }),
            status: None,
        }
    }

    #[test]
    fn the_job_carries_the_template_the_owner_and_the_scheduled_time() {
        let cj = cron_job("* * * * *", None);
        let at: Timestamp = "2024-05-01T10:01:00Z".parse().expect("a timestamp");
        let name = job_name("report", at);
        let job = job_from_template(&cj, at, &name, &TimeZone::UTC).expect("a Job");
        assert_eq!(job.metadata.name.as_deref(), Some("report-28575961"));
        let annotations = job.metadata.annotations.unwrap_or_default();
        assert_eq!(
            annotations
                .get(SCHEDULED_TIMESTAMP_ANNOTATION)
                .map(String::as_str),
            Some("2024-05-01T10:01:00Z")
        );
        assert_eq!(
            job.metadata
                .labels
                .unwrap_or_default()
                .get("app")
                .map(String::as_str),
            Some("report")
        );
        let owner = job.metadata.owner_references.unwrap_or_default();
        assert_eq!(owner.len(), 1);
        assert_eq!(
            (owner[0].kind.as_str(), owner[0].uid.as_str()),
            ("CronJob", "cj-uid")
        );
        assert_eq!(owner[0].controller, Some(true));
    }

    #[test]
    fn the_scheduled_time_is_written_in_the_cron_jobs_zone() {
        if TimeZone::get("Europe/Paris").is_err() {
            eprintln!("skipping: no zone database");
            return;
        }
        let cj = cron_job("0 12 * * *", Some("Europe/Paris"));
        assert_eq!(
            format_schedule(&cj, &TimeZone::UTC),
            "TZ=Europe/Paris 0 12 * * *"
        );
        let at: Timestamp = "2024-05-01T10:00:00Z".parse().expect("a timestamp");
        let job = job_from_template(&cj, at, "x", &TimeZone::UTC).expect("a Job");
        assert_eq!(
            job.metadata
                .annotations
                .unwrap_or_default()
                .get(SCHEDULED_TIMESTAMP_ANNOTATION)
                .map(String::as_str),
            Some("2024-05-01T12:00:00+02:00")
        );
        // A schedule with its own prefix is left as it is; an unknown zone is not applied.
        let own = cron_job("CRON_TZ=UTC 0 12 * * *", Some("Europe/Paris"));
        assert_eq!(
            format_schedule(&own, &TimeZone::UTC),
            "CRON_TZ=UTC 0 12 * * *"
        );
        let unknown = cron_job("0 12 * * *", Some("Nowhere/Atlantis"));
        assert_eq!(format_schedule(&unknown, &TimeZone::UTC), "0 12 * * *");
        assert!(job_from_template(&unknown, at, "x", &TimeZone::UTC).is_err());
    }

    #[test]
    fn old_jobs_go_first_and_unstarted_ones_last() {
        let job = |name: &str, start: Option<&str>| Job {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: None,
            status: Some(JobStatus {
                start_time: start.map(|s| Time(s.parse().expect("a timestamp"))),
                ..JobStatus::default()
            }),
        };
        let mut jobs = [
            job("c", None),
            job("b", Some("2024-05-01T10:02:00Z")),
            job("a", Some("2024-05-01T10:02:00Z")),
            job("z", Some("2024-05-01T10:01:00Z")),
        ];
        jobs.sort_by(by_start_time);
        let names: Vec<_> = jobs
            .iter()
            .filter_map(|j| j.metadata.name.as_deref())
            .collect();
        assert_eq!(names, ["z", "a", "b", "c"]);
    }

    #[test]
    fn times_are_formatted_as_go_formats_them() {
        let at: Timestamp = "2024-05-01T10:01:00Z".parse().expect("a timestamp");
        assert_eq!(rfc1123z_utc(at), "Wed, 01 May 2024 10:01:00 +0000");
        assert_eq!(rfc3339(at, &TimeZone::UTC), "2024-05-01T10:01:00Z");
    }
}
