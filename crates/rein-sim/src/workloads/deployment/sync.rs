//! kube's `pkg/controller/deployment/sync.go`: finding (or creating) the new ReplicaSet and
//! syncing revisions, scaling (proportionally during a rollout), cleaning up old revisions,
//! and the Deployment's status.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rein_client::controllerutil::set_controller_reference;
use rein_client::{DeleteParams, Patch, PatchParams, PostParams};
use rein_scheme::ObjectKey;
use serde_json::json;

use super::DeploymentController;
use super::hash::compute_hash;
use super::util::{self, POD_TEMPLATE_HASH_LABEL, REVISION_ANNOTATION, reason};
use crate::workloads::Error;
use crate::workloads::claim::describe;
use crate::workloads::pods::controller_of;
use crate::workloads::replicaset::nonzero;

/// The old ReplicaSets followed by the new one, if any.
pub(super) fn all_of<'a>(
    old: &'a [ReplicaSet],
    new_rs: Option<&'a ReplicaSet>,
) -> Vec<&'a ReplicaSet> {
    old.iter().chain(new_rs).collect()
}

impl DeploymentController {
    /// `syncStatusOnly`: a Deployment being deleted only has its status kept.
    pub(super) async fn sync_status_only(
        &self,
        d: &mut Deployment,
        rs_list: &[ReplicaSet],
    ) -> Result<(), Error> {
        let (new_rs, old) = self
            .all_replica_sets_and_sync_revision(d, rs_list, false)
            .await?;
        self.sync_deployment_status(&all_of(&old, new_rs.as_ref()), new_rs.as_ref(), d)
            .await
    }

    /// `sync`: scaling events and paused Deployments — scale, clean up (paused only), status.
    pub(super) async fn sync(
        &self,
        d: &mut Deployment,
        rs_list: &[ReplicaSet],
    ) -> Result<(), Error> {
        let (new_rs, old) = self
            .all_replica_sets_and_sync_revision(d, rs_list, false)
            .await?;
        self.scale(d, new_rs.as_ref(), &old).await?;
        if util::spec(d).paused == Some(true) && super::rollback::rollback_to(d).is_none() {
            self.cleanup_deployment(&old, d).await?;
        }
        self.sync_deployment_status(&all_of(&old, new_rs.as_ref()), new_rs.as_ref(), d)
            .await
    }

    /// `checkPausedConditions`: a paused Deployment's `Progressing` condition is `Unknown`
    /// (`DeploymentPaused`), and `DeploymentResumed` when resumed, so a pause never counts
    /// against the progress deadline.
    pub(super) async fn check_paused_conditions(&self, d: &mut Deployment) -> Result<(), Error> {
        if !util::has_progress_deadline(d) {
            return Ok(());
        }
        let status = d.status.clone().unwrap_or_default();
        let reason_now = util::get_condition(&status, "Progressing").and_then(|c| c.reason.clone());
        if reason_now.as_deref() == Some(reason::TIMED_OUT) {
            return Ok(());
        }
        let paused_exists = reason_now.as_deref() == Some(reason::PAUSED);
        let paused = util::spec(d).paused == Some(true);
        let condition = if paused && !paused_exists {
            util::new_condition(
                "Progressing",
                "Unknown",
                reason::PAUSED,
                "Deployment is paused",
            )
        } else if !paused && paused_exists {
            util::new_condition(
                "Progressing",
                "Unknown",
                reason::RESUMED,
                "Deployment is resumed",
            )
        } else {
            return Ok(());
        };
        let status = d.status.get_or_insert_with(Default::default);
        util::set_condition(status, condition);
        self.update_status(d).await
    }

    /// `getAllReplicaSetsAndSyncRevision`: the new ReplicaSet (created if asked and missing)
    /// with its revision synced, and every old one.
    pub(super) async fn all_replica_sets_and_sync_revision(
        &self,
        d: &mut Deployment,
        rs_list: &[ReplicaSet],
        create: bool,
    ) -> Result<(Option<ReplicaSet>, Vec<ReplicaSet>), Error> {
        let old = util::find_old_replica_sets(d, rs_list);
        let new_rs = self.new_replica_set(d, rs_list, &old, create).await?;
        Ok((new_rs, old))
    }

    /// `getNewReplicaSet`.
    async fn new_replica_set(
        &self,
        d: &mut Deployment,
        rs_list: &[ReplicaSet],
        old: &[ReplicaSet],
        create: bool,
    ) -> Result<Option<ReplicaSet>, Error> {
        let new_revision = util::max_revision(old) + 1;
        if let Some(existing) = util::find_new_replica_set(d, rs_list) {
            let mut rs = existing.clone();
            let annotations_updated =
                util::set_new_replica_set_annotations(d, &mut rs, new_revision, true);
            let min_ready = util::spec(d).min_ready_seconds;
            let rs_spec = rs.spec.get_or_insert_with(Default::default);
            let min_ready_changed =
                rs_spec.min_ready_seconds.unwrap_or(0) != min_ready.unwrap_or(0);
            if annotations_updated || min_ready_changed {
                rs_spec.min_ready_seconds = min_ready;
                let updated = self.client.update(&rs, &PostParams::default()).await?;
                return Ok(Some(updated));
            }
            let revision = rs
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(REVISION_ANNOTATION))
                .cloned()
                .unwrap_or_default();
            let mut needs_update = util::set_deployment_revision(d, &revision);
            let has_progressing = d
                .status
                .as_ref()
                .is_some_and(|s| util::get_condition(s, "Progressing").is_some());
            if util::has_progress_deadline(d) && !has_progressing {
                let message = format!(
                    "Found new replica set {:?}",
                    rs.metadata.name.as_deref().unwrap_or_default()
                );
                let condition =
                    util::new_condition("Progressing", "True", reason::FOUND_NEW_RS, &message);
                util::set_condition(d.status.get_or_insert_with(Default::default), condition);
                needs_update = true;
            }
            if needs_update {
                self.update_status(d).await?;
            }
            return Ok(Some(rs));
        }
        if !create {
            return Ok(None);
        }

        let spec = util::spec(d);
        let mut template = spec.template.clone();
        let collision_count = d.status.as_ref().and_then(|s| s.collision_count);
        let hash = compute_hash(&template, collision_count);
        let template_meta = template.metadata.get_or_insert_with(Default::default);
        template_meta
            .labels
            .get_or_insert_with(Default::default)
            .insert(POD_TEMPLATE_HASH_LABEL.into(), hash.clone());
        let labels = template_meta.labels.clone();
        let mut selector = spec.selector.clone();
        selector
            .match_labels
            .get_or_insert_with(Default::default)
            .insert(POD_TEMPLATE_HASH_LABEL.into(), hash.clone());
        let name = format!("{}-{hash}", d.metadata.name.as_deref().unwrap_or_default());
        let mut rs = ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: d.metadata.namespace.clone(),
                labels,
                ..ObjectMeta::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(0),
                min_ready_seconds: spec.min_ready_seconds,
                selector,
                template: Some(template),
            }),
            status: None,
        };
        set_controller_reference(&*d, &mut rs, self.client.scheme())?;
        let new_replicas = {
            let all = all_of(old, Some(&rs));
            util::new_rs_new_replicas(d, &all, &rs).map_err(|problem| Error::Invalid {
                object: describe(&*d),
                problem,
            })?
        };
        util::set_rs_replicas(&mut rs, new_replicas);
        util::set_new_replica_set_annotations(d, &mut rs, new_revision, false);

        let mut already_exists = false;
        let created = match self.client.create(&rs, &PostParams::default()).await {
            Ok(created) => created,
            Err(err) if err.is_already_exists() => {
                already_exists = true;
                let key = ObjectKey::from_object(&rs);
                let existing = self.client.get::<ReplicaSet>(&key).await?;
                let ours = controller_of(&existing.metadata)
                    .is_some_and(|r| Some(&r.uid) == d.metadata.uid.as_ref());
                if ours && util::equal_ignore_hash(&spec.template, &util::rs_template(&existing)) {
                    (*existing).clone()
                } else {
                    // A hash collision: count it, so the next sync hashes differently.
                    let status = d.status.get_or_insert_with(Default::default);
                    let before = status.collision_count.unwrap_or(0);
                    status.collision_count = Some(before + 1);
                    if self.update_status(d).await.is_ok() {
                        tracing::info!(deployment = %describe(&*d), old = before, new = before + 1, "found a hash collision for deployment - bumping collisionCount to resolve it");
                    }
                    return Err(err.into());
                }
            }
            Err(err) => {
                let message = format!("Failed to create new replica set {name:?}: {err}");
                if util::has_progress_deadline(d) {
                    let condition = util::new_condition(
                        "Progressing",
                        "False",
                        reason::FAILED_RS_CREATE,
                        &message,
                    );
                    util::set_condition(d.status.get_or_insert_with(Default::default), condition);
                    // The bigger problem is reported below.
                    let _ = self.update_status(d).await;
                }
                self.recorder
                    .warning(&*d, reason::FAILED_RS_CREATE, &message);
                return Err(err.into());
            }
        };
        let created_name = created.metadata.name.clone().unwrap_or_default();
        if !already_exists && new_replicas > 0 {
            self.recorder.normal(
                &*d,
                "ScalingReplicaSet",
                &format!("Scaled up replica set {created_name} from 0 to {new_replicas}"),
            );
        }
        let mut needs_update = util::set_deployment_revision(d, &new_revision.to_string());
        if !already_exists && util::has_progress_deadline(d) {
            let message = format!("Created new replica set {created_name:?}");
            let condition =
                util::new_condition("Progressing", "True", reason::NEW_REPLICA_SET, &message);
            util::set_condition(d.status.get_or_insert_with(Default::default), condition);
            needs_update = true;
        }
        if needs_update {
            self.update_status(d).await?;
        }
        Ok(Some(created))
    }

    /// `scale`: scales the only active ReplicaSet to the Deployment's size, the old ones to
    /// zero once the new one is saturated, or, in a rollout, every active one in proportion.
    pub(super) async fn scale(
        &self,
        d: &Deployment,
        new_rs: Option<&ReplicaSet>,
        old: &[ReplicaSet],
    ) -> Result<(), Error> {
        let want = util::replicas(d);
        if let Some(only) = util::find_active_or_latest(new_rs, old) {
            if util::rs_replicas(&only) == want {
                return Ok(());
            }
            self.scale_replica_set_and_record_event(&only, want, d)
                .await?;
            return Ok(());
        }
        if util::is_saturated(d, new_rs) {
            for rs in util::active(old) {
                self.scale_replica_set_and_record_event(&rs, 0, d).await?;
            }
            return Ok(());
        }
        if !util::is_rolling_update(d) {
            return Ok(());
        }
        let mut all = util::active(&all_of(old, new_rs).into_iter().cloned().collect::<Vec<_>>());
        let all_replicas = util::replica_count(&all);
        let allowed = if want > 0 {
            want + util::max_surge(d)
        } else {
            0
        };
        let to_add = allowed - all_replicas;
        if to_add > 0 {
            all.sort_by(util::by_size_newer);
        } else if to_add < 0 {
            all.sort_by(util::by_size_older);
        }
        let mut added = 0;
        let mut sizes: Vec<i32> = Vec::with_capacity(all.len());
        for rs in &all {
            if to_add != 0 {
                let p = util::proportion(d, rs, to_add, added);
                sizes.push(util::rs_replicas(rs) + p);
                added += p;
            } else {
                sizes.push(util::rs_replicas(rs));
            }
        }
        for (i, rs) in all.iter().enumerate() {
            if i == 0 && to_add != 0 {
                sizes[0] = (sizes[0] + to_add - added).max(0);
            }
            self.scale_replica_set(rs, sizes[i], d).await?;
        }
        Ok(())
    }

    /// `scaleReplicaSetAndRecordEvent`: whether it scaled, and the ReplicaSet as now stored.
    pub(super) async fn scale_replica_set_and_record_event(
        &self,
        rs: &ReplicaSet,
        new_scale: i32,
        d: &Deployment,
    ) -> Result<(bool, ReplicaSet), Error> {
        if util::rs_replicas(rs) == new_scale {
            return Ok((false, rs.clone()));
        }
        self.scale_replica_set(rs, new_scale, d).await
    }

    /// `scaleReplicaSet`: sets the size and the replicas annotations; a `ScalingReplicaSet`
    /// event when the size changed.
    async fn scale_replica_set(
        &self,
        rs: &ReplicaSet,
        new_scale: i32,
        d: &Deployment,
    ) -> Result<(bool, ReplicaSet), Error> {
        let desired = util::replicas(d);
        let max = desired + util::max_surge(d);
        let old_scale = util::rs_replicas(rs);
        let size_changes = old_scale != new_scale;
        if !size_changes && !util::replicas_annotations_need_update(rs, desired, max) {
            return Ok((false, rs.clone()));
        }
        let mut copy = rs.clone();
        util::set_rs_replicas(&mut copy, new_scale);
        util::set_replicas_annotations(&mut copy, desired, max);
        let updated = self.client.update(&copy, &PostParams::default()).await?;
        if size_changes {
            let direction = if old_scale < new_scale { "up" } else { "down" };
            let name = updated.metadata.name.as_deref().unwrap_or_default();
            self.recorder.normal(
                d,
                "ScalingReplicaSet",
                &format!("Scaled {direction} replica set {name} from {old_scale} to {new_scale}"),
            );
        }
        Ok((size_changes, updated))
    }

    /// `cleanupDeployment`: deletes the oldest revisions beyond `revisionHistoryLimit` that
    /// have no replicas left.
    pub(super) async fn cleanup_deployment(
        &self,
        old: &[ReplicaSet],
        d: &Deployment,
    ) -> Result<(), Error> {
        let Some(limit) = util::revision_history_limit(d) else {
            return Ok(());
        };
        let mut cleanable: Vec<&ReplicaSet> = old
            .iter()
            .filter(|rs| rs.metadata.deletion_timestamp.is_none())
            .collect();
        let diff = i64::try_from(cleanable.len()).unwrap_or(i64::MAX) - i64::from(limit);
        if diff <= 0 {
            return Ok(());
        }
        cleanable.sort_by(|a, b| util::by_revision(a, b));
        for rs in cleanable
            .into_iter()
            .take(usize::try_from(diff).unwrap_or(0))
        {
            let status = rs.status.clone().unwrap_or_default();
            if status.replicas != 0
                || util::rs_replicas(rs) != 0
                || rs.metadata.generation.unwrap_or(0) > status.observed_generation.unwrap_or(0)
                || rs.metadata.deletion_timestamp.is_some()
            {
                continue;
            }
            tracing::debug!(replica_set = %describe(rs), "trying to cleanup replica set for deployment");
            match self
                .client
                .delete::<ReplicaSet>(&ObjectKey::from_object(rs), &DeleteParams::default())
                .await
            {
                Ok(()) => {}
                Err(err) if err.is_not_found() => {}
                Err(err) => return Err(err.into()),
            }
        }
        Ok(())
    }

    /// `syncDeploymentStatus`: writes the status if it changed.
    pub(super) async fn sync_deployment_status(
        &self,
        all: &[&ReplicaSet],
        new_rs: Option<&ReplicaSet>,
        d: &mut Deployment,
    ) -> Result<(), Error> {
        let status = calculate_status(all, new_rs, d);
        if d.status.as_ref() == Some(&status) {
            return Ok(());
        }
        d.status = Some(status);
        self.update_status(d).await
    }

    /// `isScalingEvent`: an active ReplicaSet was last sized for a different replica count.
    pub(super) async fn is_scaling_event(
        &self,
        d: &mut Deployment,
        rs_list: &[ReplicaSet],
    ) -> Result<bool, Error> {
        let (new_rs, old) = self
            .all_replica_sets_and_sync_revision(d, rs_list, false)
            .await?;
        let want = util::replicas(d);
        let all: Vec<ReplicaSet> = all_of(&old, new_rs.as_ref()).into_iter().cloned().collect();
        Ok(util::active(&all)
            .iter()
            .filter_map(util::desired_replicas_annotation)
            .any(|desired| desired != want))
    }

    /// Writes the Deployment's status (`UpdateStatus`) and keeps its resourceVersion current.
    ///
    /// kube-apiserver keeps annotation changes made through a Deployment's status
    /// (`deploymentStatusStrategy` resets only the spec and labels), and kube's controller
    /// writes the revision annotation that way; a server that keeps only the status on a status
    /// write (rein-testenv) gets the revision annotation patched onto the object as well.
    pub(super) async fn update_status(&self, d: &mut Deployment) -> Result<(), Error> {
        let updated = self
            .client
            .status()
            .update(&*d, &PostParams::default())
            .await?;
        let want = d
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION_ANNOTATION))
            .cloned();
        let have = updated
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION_ANNOTATION))
            .cloned();
        let mut resource_version = updated.metadata.resource_version;
        if let Some(want) = want
            && have.as_ref() != Some(&want)
        {
            let patch = json!({ "metadata": { "annotations": { REVISION_ANNOTATION: want } } });
            let patched = self
                .client
                .patch::<Deployment, _>(
                    &ObjectKey::from_object(&*d),
                    &Patch::Merge(patch),
                    &PatchParams::default(),
                )
                .await?;
            resource_version = patched.metadata.resource_version;
        }
        d.metadata.resource_version = resource_version;
        Ok(())
    }
}

/// `calculateStatus`: the counts of the Deployment's ReplicaSets and the `Available` condition
/// (the other conditions carried over).
pub(super) fn calculate_status(
    all: &[&ReplicaSet],
    new_rs: Option<&ReplicaSet>,
    d: &Deployment,
) -> DeploymentStatus {
    let available = util::available_replica_count(all.iter().copied());
    let total = util::replica_count(all.iter().copied());
    let unavailable = (total - available).max(0);
    let current = d.status.clone().unwrap_or_default();
    let mut status = DeploymentStatus {
        observed_generation: d.metadata.generation,
        replicas: nonzero(util::actual_replica_count(all.iter().copied())),
        updated_replicas: nonzero(util::actual_replica_count(new_rs)),
        ready_replicas: nonzero(util::ready_replica_count(all.iter().copied())),
        available_replicas: nonzero(available),
        unavailable_replicas: nonzero(unavailable),
        collision_count: current.collision_count,
        conditions: current.conditions.clone(),
        // Written only with the DeploymentReplicaSetTerminatingReplicas feature (alpha in 1.33).
        terminating_replicas: None,
    };
    let condition = if available >= util::replicas(d) - util::max_unavailable(d) {
        util::new_condition(
            "Available",
            "True",
            reason::MIN_AVAILABLE,
            "Deployment has minimum availability.",
        )
    } else {
        util::new_condition(
            "Available",
            "False",
            reason::MIN_UNAVAILABLE,
            "Deployment does not have minimum availability.",
        )
    };
    util::set_condition(&mut status, condition);
    status
}
