//! kube's `pkg/controller/deployment/recreate.go`: every old Pod goes before the new
//! ReplicaSet is created and scaled up.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::sync::all_of;
use super::util;
use super::{DeploymentController, PodMap, Requeue};
use crate::workloads::Error;
use crate::workloads::pods::phase;

impl DeploymentController {
    /// `rolloutRecreate`.
    pub(super) async fn rollout_recreate(
        &self,
        d: &mut Deployment,
        rs_list: &[ReplicaSet],
        pod_map: &PodMap,
    ) -> Result<Requeue, Error> {
        // No new ReplicaSet yet, so nothing scales up before the old ones are down.
        let (mut new_rs, mut old) = self
            .all_replica_sets_and_sync_revision(d, rs_list, false)
            .await?;
        let mut scaled_down = false;
        for rs in old.iter_mut() {
            if util::rs_replicas(rs) == 0 {
                continue;
            }
            let (scaled, updated) = self.scale_replica_set_and_record_event(rs, 0, d).await?;
            if scaled {
                *rs = updated;
                scaled_down = true;
            }
        }
        if scaled_down {
            return self
                .sync_rollout_status(&all_of(&old, new_rs.as_ref()), new_rs.as_ref(), d)
                .await;
        }
        if old_pods_running(new_rs.as_ref(), &old, pod_map) {
            return self
                .sync_rollout_status(&all_of(&old, new_rs.as_ref()), new_rs.as_ref(), d)
                .await;
        }
        if new_rs.is_none() {
            (new_rs, old) = self
                .all_replica_sets_and_sync_revision(d, rs_list, true)
                .await?;
        }
        if let Some(rs) = new_rs.as_mut() {
            let (_, updated) = self
                .scale_replica_set_and_record_event(rs, util::replicas(d), d)
                .await?;
            *rs = updated;
        }
        if util::deployment_complete(d, &d.status.clone().unwrap_or_default()) {
            self.cleanup_deployment(&old, d).await?;
        }
        self.sync_rollout_status(&all_of(&old, new_rs.as_ref()), new_rs.as_ref(), d)
            .await
    }
}

/// `oldPodsRunning`: an old ReplicaSet still counts Pods, or one of its Pods is not terminal.
fn old_pods_running(new_rs: Option<&ReplicaSet>, old: &[ReplicaSet], pod_map: &PodMap) -> bool {
    if util::actual_replica_count(old) > 0 {
        return true;
    }
    let new_uid = new_rs.and_then(|rs| rs.metadata.uid.as_deref());
    pod_map
        .iter()
        .filter(|(uid, _)| Some(uid.as_str()) != new_uid)
        .flat_map(|(_, pods)| pods)
        .any(|pod| !matches!(phase(pod), "Failed" | "Succeeded"))
}
