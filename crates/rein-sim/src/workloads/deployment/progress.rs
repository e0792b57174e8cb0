//! kube's `pkg/controller/deployment/progress.go`: the `Progressing` condition during a
//! rollout (created, progressing, complete, timed out), `ReplicaFailure` carried over from the
//! ReplicaSets, and when to look again for a stuck rollout.

use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::sync::calculate_status;
use super::util::{self, reason};
use super::{DeploymentController, Requeue};
use crate::workloads::Error;

impl DeploymentController {
    /// `syncRolloutStatus`: the status of a rollout, with its progress estimated; when nothing
    /// changed, when to check again for a timeout.
    pub(super) async fn sync_rollout_status(
        &self,
        all: &[&ReplicaSet],
        new_rs: Option<&ReplicaSet>,
        d: &mut Deployment,
    ) -> Result<Requeue, Error> {
        let mut status = calculate_status(all, new_rs, d);
        if !util::has_progress_deadline(d) {
            util::remove_condition(&mut status, "Progressing");
        }
        let current = d
            .status
            .as_ref()
            .and_then(|s| util::get_condition(s, "Progressing"))
            .cloned();
        let (replicas, updated, ..) = util::counts(&status);
        let complete_before = replicas == updated
            && current.as_ref().and_then(|c| c.reason.as_deref()) == Some(reason::NEW_RS_AVAILABLE);
        if util::has_progress_deadline(d) && !complete_before {
            let name = d.metadata.name.clone().unwrap_or_default();
            let rs_name = new_rs.and_then(|rs| rs.metadata.name.clone());
            let about = |what: &str| match &rs_name {
                Some(rs) => format!("ReplicaSet {rs:?} {what}"),
                None => format!("Deployment {name:?} {what}"),
            };
            if util::deployment_complete(d, &status) {
                let condition = util::new_condition(
                    "Progressing",
                    "True",
                    reason::NEW_RS_AVAILABLE,
                    &about("has successfully progressed."),
                );
                util::set_condition(&mut status, condition);
            } else if util::deployment_progressing(d, &status) {
                let mut condition = util::new_condition(
                    "Progressing",
                    "True",
                    reason::REPLICA_SET_UPDATED,
                    &about("is progressing."),
                );
                // The same reason again, with a new update time: replace rather than set.
                if let Some(current) = &current {
                    if current.status == "True" {
                        condition.last_transition_time = current.last_transition_time.clone();
                    }
                    util::remove_condition(&mut status, "Progressing");
                }
                util::set_condition(&mut status, condition);
            } else if util::deployment_timed_out(d, &status) {
                let condition = util::new_condition(
                    "Progressing",
                    "False",
                    reason::TIMED_OUT,
                    &about("has timed out progressing."),
                );
                util::set_condition(&mut status, condition);
            }
        }
        match replica_failure(all, new_rs) {
            Some(failure) => util::set_condition(&mut status, failure),
            None => util::remove_condition(&mut status, "ReplicaFailure"),
        }
        if d.status.as_ref() == Some(&status) {
            return Ok(requeue_stuck_deployment(d, &status));
        }
        d.status = Some(status);
        self.update_status(d).await?;
        Ok(Requeue::No)
    }
}

/// `getReplicaFailures`: the new ReplicaSet's `ReplicaFailure` condition, else an old one's, as
/// a Deployment condition.
fn replica_failure(
    all: &[&ReplicaSet],
    new_rs: Option<&ReplicaSet>,
) -> Option<DeploymentCondition> {
    let failure_of = |rs: &ReplicaSet| {
        rs.status
            .as_ref()?
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "ReplicaFailure")
            .map(|c| DeploymentCondition {
                type_: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone(),
                message: c.message.clone(),
                last_transition_time: c.last_transition_time.clone(),
                last_update_time: c.last_transition_time.clone(),
            })
    };
    new_rs
        .and_then(failure_of)
        .or_else(|| all.iter().find_map(|rs| failure_of(rs)))
}

/// `requeueStuckDeployment`: a rollout that has not progressed is looked at again when its
/// progress deadline passes.
fn requeue_stuck_deployment(d: &Deployment, status: &DeploymentStatus) -> Requeue {
    let Some(current) = d
        .status
        .as_ref()
        .and_then(|s| util::get_condition(s, "Progressing"))
    else {
        return Requeue::No;
    };
    if !util::has_progress_deadline(d)
        || util::deployment_complete(d, status)
        || current.reason.as_deref() == Some(reason::TIMED_OUT)
    {
        return Requeue::No;
    }
    let deadline = i64::from(util::spec(d).progress_deadline_seconds.unwrap_or(i32::MAX));
    let Some(due) = current
        .last_update_time
        .as_ref()
        .and_then(|t| t.0.checked_add(SignedDuration::from_secs(deadline)).ok())
    else {
        return Requeue::No;
    };
    let after = due.duration_since(Timestamp::now());
    if after < SignedDuration::from_secs(1) {
        return Requeue::RateLimited;
    }
    let after = Duration::try_from(after).unwrap_or_default();
    // A second more, as kube adds, against skew.
    Requeue::After(after + Duration::from_secs(1))
}
