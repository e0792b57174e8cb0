//! kube's `pkg/controller/deployment/rolling.go`: a rolling update scales the new ReplicaSet
//! up within `replicas + maxSurge` and the old ones down while at least
//! `replicas - maxUnavailable` Pods stay available, unhealthy old Pods first.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::sync::all_of;
use super::util;
use super::{DeploymentController, Requeue};
use crate::workloads::Error;
use crate::workloads::claim::describe;

impl DeploymentController {
    /// `rolloutRolling`.
    pub(super) async fn rollout_rolling(
        &self,
        d: &mut Deployment,
        rs_list: &[ReplicaSet],
    ) -> Result<Requeue, Error> {
        let (new_rs, mut old) = self
            .all_replica_sets_and_sync_revision(d, rs_list, true)
            .await?;
        let Some(mut new_rs) = new_rs else {
            return Err(Error::Invalid {
                object: describe(&*d),
                problem: "no new replica set after creating it".into(),
            });
        };
        let (scaled_up, updated) = self
            .reconcile_new_replica_set(&all_of(&old, Some(&new_rs)), &new_rs, d)
            .await?;
        new_rs = updated;
        if scaled_up {
            return self
                .sync_rollout_status(&all_of(&old, Some(&new_rs)), Some(&new_rs), d)
                .await;
        }
        let scaled_down = self
            .reconcile_old_replica_sets(&mut old, &new_rs, d)
            .await?;
        if scaled_down {
            return self
                .sync_rollout_status(&all_of(&old, Some(&new_rs)), Some(&new_rs), d)
                .await;
        }
        if util::deployment_complete(d, &d.status.clone().unwrap_or_default()) {
            self.cleanup_deployment(&old, d).await?;
        }
        self.sync_rollout_status(&all_of(&old, Some(&new_rs)), Some(&new_rs), d)
            .await
    }

    /// `reconcileNewReplicaSet`: scales the new ReplicaSet towards `replicas`, within the
    /// surge. Whether it scaled, and the new ReplicaSet as now stored.
    async fn reconcile_new_replica_set(
        &self,
        all: &[&ReplicaSet],
        new_rs: &ReplicaSet,
        d: &Deployment,
    ) -> Result<(bool, ReplicaSet), Error> {
        let want = util::replicas(d);
        let have = util::rs_replicas(new_rs);
        if have == want {
            return Ok((false, new_rs.clone()));
        }
        if have > want {
            return self
                .scale_replica_set_and_record_event(new_rs, want, d)
                .await;
        }
        let count =
            util::new_rs_new_replicas(d, all, new_rs).map_err(|problem| Error::Invalid {
                object: describe(d),
                problem,
            })?;
        self.scale_replica_set_and_record_event(new_rs, count, d)
            .await
    }

    /// `reconcileOldReplicaSets`: scales old ReplicaSets down as far as availability allows.
    /// Whether any was scaled; `old` holds them as now stored.
    async fn reconcile_old_replica_sets(
        &self,
        old: &mut [ReplicaSet],
        new_rs: &ReplicaSet,
        d: &Deployment,
    ) -> Result<bool, Error> {
        let old_pods = util::replica_count(util::active(old).iter());
        if old_pods == 0 {
            return Ok(false);
        }
        let all_pods = util::replica_count(all_of(old, Some(new_rs)));
        let max_unavailable = util::max_unavailable(d);
        let min_available = util::replicas(d) - max_unavailable;
        let new_available = new_rs
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0);
        let new_unavailable = util::rs_replicas(new_rs) - new_available;
        let max_scaled_down = all_pods - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(false);
        }
        // kube ignores failures here; the next sync tries again.
        let Ok(cleaned) = self
            .cleanup_unhealthy_replicas(old, d, max_scaled_down)
            .await
        else {
            return Ok(false);
        };
        let Ok(scaled) = self
            .scale_down_old_replica_sets_for_rolling_update(old, new_rs, d)
            .await
        else {
            return Ok(false);
        };
        Ok(cleaned + scaled > 0)
    }

    /// `cleanupUnhealthyReplicas`: scales old ReplicaSets down by their unavailable Pods, oldest
    /// first, at most `max_cleanup` in all.
    async fn cleanup_unhealthy_replicas(
        &self,
        old: &mut [ReplicaSet],
        d: &Deployment,
        max_cleanup: i32,
    ) -> Result<i32, Error> {
        old.sort_by(util::by_creation);
        let mut total = 0;
        for rs in old.iter_mut() {
            if total >= max_cleanup {
                break;
            }
            let replicas = util::rs_replicas(rs);
            if replicas == 0 {
                continue;
            }
            let available = rs
                .status
                .as_ref()
                .and_then(|s| s.available_replicas)
                .unwrap_or(0);
            if replicas == available {
                continue;
            }
            let scaled_down = (max_cleanup - total).min(replicas - available);
            let new_count = replicas - scaled_down;
            if new_count > replicas {
                return Err(Error::Invalid {
                    object: describe(&*rs),
                    problem: format!(
                        "when cleaning up unhealthy replicas, got invalid request to scale down {replicas} -> {new_count}"
                    ),
                });
            }
            let (_, updated) = self
                .scale_replica_set_and_record_event(rs, new_count, d)
                .await?;
            *rs = updated;
            total += scaled_down;
        }
        Ok(total)
    }

    /// `scaleDownOldReplicaSetsForRollingUpdate`: scales old ReplicaSets down, oldest first, by
    /// as many available Pods as exceed `replicas - maxUnavailable`.
    async fn scale_down_old_replica_sets_for_rolling_update(
        &self,
        old: &mut [ReplicaSet],
        new_rs: &ReplicaSet,
        d: &Deployment,
    ) -> Result<i32, Error> {
        let min_available = util::replicas(d) - util::max_unavailable(d);
        let available = util::available_replica_count(all_of(old, Some(new_rs)));
        if available <= min_available {
            return Ok(0);
        }
        old.sort_by(util::by_creation);
        let to_scale_down = available - min_available;
        let mut total = 0;
        for rs in old.iter_mut() {
            if total >= to_scale_down {
                break;
            }
            let replicas = util::rs_replicas(rs);
            if replicas == 0 {
                continue;
            }
            let scale_down = replicas.min(to_scale_down - total);
            let (_, updated) = self
                .scale_replica_set_and_record_event(rs, replicas - scale_down, d)
                .await?;
            *rs = updated;
            total += scale_down;
        }
        Ok(total)
    }
}
