//! kube's `pkg/controller/deployment/rollback.go`: the deprecated rollback annotation
//! (`deprecated.deployment.rollback.to`, from the old `extensions/v1beta1` rollback
//! sub-resource) copies an old revision's template back into the Deployment. `kubectl rollout
//! undo` does the copying itself; either way the controller then finds that ReplicaSet as the
//! new one and raises its revision.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use rein_client::PostParams;

use super::DeploymentController;
use super::sync::all_of;
use super::util::{self, POD_TEMPLATE_HASH_LABEL, ROLLBACK_TO_ANNOTATION};
use crate::workloads::Error;

/// The revision to roll back to (0: the previous one), if a rollback is asked for.
pub(super) fn rollback_to(d: &Deployment) -> Option<i64> {
    d.metadata
        .annotations
        .as_ref()?
        .get(ROLLBACK_TO_ANNOTATION)?
        .parse()
        .ok()
}

impl DeploymentController {
    /// `rollback`.
    pub(super) async fn rollback(
        &self,
        d: &mut Deployment,
        rs_list: &[ReplicaSet],
    ) -> Result<(), Error> {
        let (new_rs, old) = self
            .all_replica_sets_and_sync_revision(d, rs_list, true)
            .await?;
        let all = all_of(&old, new_rs.as_ref());
        let mut to = rollback_to(d).unwrap_or(0);
        if to == 0 {
            to = util::last_revision(all.iter().copied());
            if to == 0 {
                self.recorder.warning(
                    &*d,
                    "DeploymentRollbackRevisionNotFound",
                    "Unable to find last revision.",
                );
                return self.clear_rollback_to(d).await;
            }
        }
        for rs in &all {
            if util::revision(&rs.metadata) == Some(to) {
                let performed = self.rollback_to_template(d, rs).await?;
                if performed {
                    let name = d.metadata.name.clone().unwrap_or_default();
                    self.recorder.normal(
                        &*d,
                        "DeploymentRollback",
                        &format!("Rolled back deployment {name:?} to revision {to}"),
                    );
                }
                return Ok(());
            }
        }
        self.recorder.warning(
            &*d,
            "DeploymentRollbackRevisionNotFound",
            "Unable to find the revision to rollback to.",
        );
        self.clear_rollback_to(d).await
    }

    /// `rollbackToTemplate`: whether the template changed.
    async fn rollback_to_template(
        &self,
        d: &mut Deployment,
        rs: &ReplicaSet,
    ) -> Result<bool, Error> {
        let template = util::rs_template(rs);
        let performed = if util::equal_ignore_hash(&util::spec(d).template, &template) {
            let name = d.metadata.name.clone().unwrap_or_default();
            self.recorder.warning(
                &*d,
                "DeploymentRollbackTemplateUnchanged",
                &format!("The rollback revision contains the same template as current deployment {name:?}"),
            );
            false
        } else {
            let mut template = template;
            if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
                labels.remove(POD_TEMPLATE_HASH_LABEL);
            }
            d.spec.get_or_insert_with(Default::default).template = template;
            util::set_deployment_annotations_to(d, rs);
            true
        };
        self.clear_rollback_to(d).await?;
        Ok(performed)
    }

    /// `updateDeploymentAndClearRollbackTo`.
    async fn clear_rollback_to(&self, d: &mut Deployment) -> Result<(), Error> {
        if let Some(annotations) = d.metadata.annotations.as_mut() {
            annotations.remove(ROLLBACK_TO_ANNOTATION);
        }
        *d = self.client.update(&*d, &PostParams::default()).await?;
        Ok(())
    }
}
