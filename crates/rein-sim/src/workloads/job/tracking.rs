//! kube's `trackJobStatusAndRemoveFinalizers`: finished Pods enter
//! `status.uncountedTerminatedPods` (written first), then lose their tracking finalizer, then
//! move into `succeeded`/`failed`; the terminal condition is written once nothing is
//! uncounted and no Pod is terminating.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::api::core::v1::Pod;
use rein_scheme::ObjectKey;

use super::{
    JobController, MAX_UNCOUNTED_PODS, SyncCtx, ensure_condition, has_tracking_finalizer, indexed,
    is_pod_failed, new_condition, remove_tracking_finalizer,
};
use crate::workloads::Error;
use crate::workloads::pods;

impl JobController {
    /// Counts the finished Pods, removes their finalizers and, when the Job is done, writes its
    /// terminal condition; writes the status whenever something changed (`needs_flush`).
    pub(super) async fn track_status_and_remove_finalizers(
        &self,
        key: &ObjectKey,
        job: &mut Job,
        ctx: &mut SyncCtx,
        mut needs_flush: bool,
        is_indexed: bool,
    ) -> Result<(), Error> {
        let completions = job.spec.as_ref().and_then(|s| s.completions).unwrap_or(0);
        let mut pods: Vec<Arc<Pod>> = ctx.pods.clone();
        if is_indexed {
            pods.sort_by_key(|p| indexed::index_of(p).unwrap_or(-1));
        }
        let mut with_finalizer: BTreeSet<String> = pods
            .iter()
            .filter(|p| has_tracking_finalizer(p))
            .filter_map(|p| p.metadata.uid.clone())
            .collect();
        let status = job.status.get_or_insert_with(Default::default);
        if clean_uncounted(status, &with_finalizer) {
            needs_flush = true;
        }
        let mut uncounted = status.uncounted_terminated_pods.clone().unwrap_or_default();
        let mut uncounted_succeeded = uncounted.succeeded.take().unwrap_or_default();
        let mut uncounted_failed = uncounted.failed.take().unwrap_or_default();
        let mut to_remove = Vec::new();
        let mut new_indexes = Vec::new();
        let mut reached_max = false;
        for pod in &pods {
            if !has_tracking_finalizer(pod) {
                continue;
            }
            let failed = is_pod_failed(pod, job);
            let can_remove = job.metadata.deletion_timestamp.is_some()
                || ctx.finished.is_some()
                || pods::phase(pod) == "Succeeded"
                || failed;
            if !can_remove {
                continue;
            }
            to_remove.push(pod.clone());
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let index = indexed::index_of(pod);
            let valid_index = index.is_some_and(|i| i < completions);
            if pods::phase(pod) == "Succeeded" && !ctx.uncounted_failed.contains(&uid) {
                if is_indexed {
                    if let Some(i) = index.filter(|_| valid_index)
                        && !ctx.previous_indexes.contains(i)
                    {
                        new_indexes.push(i);
                        needs_flush = true;
                    }
                } else if !ctx.uncounted_succeeded.contains(&uid) {
                    needs_flush = true;
                    uncounted_succeeded.push(uid);
                }
            } else if (failed
                || ctx
                    .finished
                    .as_ref()
                    .is_some_and(|c| c.type_ != "SuccessCriteriaMet"))
                && !ctx.uncounted_failed.contains(&uid)
                && (!is_indexed || valid_index)
            {
                needs_flush = true;
                uncounted_failed.push(uid);
            }
            if new_indexes.len() + uncounted_succeeded.len() + uncounted_failed.len()
                >= MAX_UNCOUNTED_PODS
            {
                // The rest waits for the next sync (the status and Pod updates bring it).
                reached_max = true;
                break;
            }
        }
        let status = job.status.get_or_insert_with(Default::default);
        status.uncounted_terminated_pods =
            Some(uncounted_of(uncounted_succeeded, uncounted_failed));
        if is_indexed {
            ctx.succeeded_indexes = ctx.succeeded_indexes.with(new_indexes);
            let completed = ctx.succeeded_indexes.to_string();
            if status.completed_indexes.as_deref().unwrap_or_default() != completed {
                needs_flush = true;
            }
            let total = ctx.succeeded_indexes.total();
            status.succeeded = (total != 0).then_some(total);
            status.completed_indexes = (!completed.is_empty()).then_some(completed);
        }
        let mut finished = ctx.finished.take();
        if let Some(target) = finished.as_ref().filter(|c| c.type_ == "FailureTarget") {
            // The interim condition is written before the finalizers go.
            status
                .conditions
                .get_or_insert_with(Vec::new)
                .push(target.clone());
            needs_flush = true;
            finished = Some(new_condition(
                "Failed",
                "True",
                target.reason.as_deref().unwrap_or_default(),
                target.message.as_deref().unwrap_or_default(),
            ));
        }
        if let Some(met) = finished
            .as_ref()
            .filter(|c| c.type_ == "SuccessCriteriaMet")
        {
            let has_met = status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "SuccessCriteriaMet" && c.status == "True");
            if !has_met {
                status
                    .conditions
                    .get_or_insert_with(Vec::new)
                    .push(met.clone());
                needs_flush = true;
            }
            finished = Some(new_condition(
                "Complete",
                "True",
                met.reason.as_deref().unwrap_or_default(),
                met.message.as_deref().unwrap_or_default(),
            ));
        }

        // flushUncountedAndRemoveFinalizers.
        if needs_flush {
            *job = self.update_status(job).await?;
            self.backoff.store(key, ctx.backoff);
            needs_flush = false;
        }
        let removals = to_remove.iter().map(|pod| async move {
            remove_tracking_finalizer(&self.client, pod)
                .await
                .map(|()| pod.metadata.uid.clone().unwrap_or_default())
        });
        let mut removal_error = None;
        for result in futures::future::join_all(removals).await {
            match result {
                Ok(uid) => {
                    with_finalizer.remove(&uid);
                }
                Err(err) => {
                    removal_error.get_or_insert(err);
                }
            }
        }
        if clean_uncounted(
            job.status.get_or_insert_with(Default::default),
            &with_finalizer,
        ) {
            needs_flush = true;
        }
        if let Some(err) = removal_error {
            if needs_flush {
                *job = self.update_status(job).await?;
            }
            return Err(err);
        }

        let done = !reached_max && self.enact_job_finished(job, finished.as_ref(), ctx.terminating);
        if done {
            needs_flush = true;
        }
        if needs_flush {
            *job = self.update_status(job).await?;
            if done && let Some(condition) = finished.as_ref() {
                self.record_job_finished(job, condition);
            }
        }
        Ok(())
    }

    /// `enactJobFinished`: writes the terminal condition (and `completionTime`) once no Pod is
    /// uncounted or terminating. Whether it did.
    fn enact_job_finished(
        &self,
        job: &mut Job,
        finished: Option<&k8s_openapi::api::batch::v1::JobCondition>,
        terminating: i32,
    ) -> bool {
        let Some(finished) = finished else {
            return false;
        };
        let status = job.status.get_or_insert_with(Default::default);
        let uncounted = status.uncounted_terminated_pods.clone().unwrap_or_default();
        if !uncounted.succeeded.unwrap_or_default().is_empty()
            || !uncounted.failed.unwrap_or_default().is_empty()
            || terminating > 0
        {
            return false;
        }
        ensure_condition(
            &mut status.conditions,
            &finished.type_,
            &finished.status,
            finished.reason.as_deref().unwrap_or_default(),
            finished.message.as_deref().unwrap_or_default(),
        );
        if finished.type_ == "Complete" {
            status.completion_time = status
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == "Complete")
                .and_then(|c| c.last_transition_time.clone());
        }
        true
    }

    /// `recordJobFinished`: the `Completed` event (or the failure's warning).
    fn record_job_finished(&self, job: &Job, finished: &k8s_openapi::api::batch::v1::JobCondition) {
        if finished.type_ == "Complete" {
            let completions = job.spec.as_ref().and_then(|s| s.completions);
            let succeeded = job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0);
            if completions.is_some_and(|c| succeeded > c) {
                self.recorder.warning(
                    job,
                    "TooManySucceededPods",
                    "Too many succeeded pods running after completion count reached",
                );
            }
            self.recorder.normal(job, "Completed", "Job completed");
        } else {
            self.recorder.warning(
                job,
                finished.reason.as_deref().unwrap_or_default(),
                finished.message.as_deref().unwrap_or_default(),
            );
        }
    }
}

/// `status.uncountedTerminatedPods` from its two lists.
fn uncounted_of(
    succeeded: Vec<String>,
    failed: Vec<String>,
) -> k8s_openapi::api::batch::v1::UncountedTerminatedPods {
    k8s_openapi::api::batch::v1::UncountedTerminatedPods {
        succeeded: (!succeeded.is_empty()).then_some(succeeded),
        failed: (!failed.is_empty()).then_some(failed),
    }
}

/// `cleanUncountedPodsWithoutFinalizers`: the uncounted Pods whose finalizer is gone are
/// added to the counters. Whether anything changed.
fn clean_uncounted(status: &mut JobStatus, with_finalizer: &BTreeSet<String>) -> bool {
    let uncounted = status.uncounted_terminated_pods.clone().unwrap_or_default();
    let succeeded = uncounted.succeeded.unwrap_or_default();
    let failed = uncounted.failed.unwrap_or_default();
    let keep = |uids: &[String]| -> Vec<String> {
        uids.iter()
            .filter(|u| with_finalizer.contains(*u))
            .cloned()
            .collect()
    };
    let (still_succeeded, still_failed) = (keep(&succeeded), keep(&failed));
    let mut changed = false;
    if still_succeeded.len() != succeeded.len() {
        changed = true;
        let counted = i32::try_from(succeeded.len() - still_succeeded.len()).unwrap_or(i32::MAX);
        let total = status.succeeded.unwrap_or(0) + counted;
        status.succeeded = (total != 0).then_some(total);
    }
    if still_failed.len() != failed.len() {
        changed = true;
        let counted = i32::try_from(failed.len() - still_failed.len()).unwrap_or(i32::MAX);
        let total = status.failed.unwrap_or(0) + counted;
        status.failed = (total != 0).then_some(total);
    }
    status.uncounted_terminated_pods = Some(uncounted_of(still_succeeded, still_failed));
    changed
}
