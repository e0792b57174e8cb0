//! kube's `StatefulPodControl` (`stateful_pod_control.go`): creating a StatefulSet's Pod after
//! its claims, updating a Pod's identity and storage, deleting Pods, and keeping the claims'
//! owner references as the retention policy asks; with kube's events
//! (`SuccessfulCreate` "create Pod web-0 in StatefulSet web successful", "create Claim
//! www-web-0 Pod web-0 in StatefulSet web success", `FailedCreate`, `SuccessfulUpdate`,
//! `SuccessfulDelete`, …).

use std::sync::Arc;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use rein_client::{Client, DeleteParams, PostParams};
use rein_controller::recorder::EventRecorder;
use rein_scheme::ObjectKey;

use super::super::Error;
use super::super::claim::describe;
use super::identity::{self, Owner};

/// Creates, updates and deletes a StatefulSet's Pods and claims, with its events.
#[derive(Clone, Debug)]
pub(super) struct StatefulPodControl {
    pub(super) client: Client,
    pub(super) recorder: EventRecorder,
}

/// "create" → "Create".
fn title(verb: &str) -> String {
    let mut chars = verb.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

fn name_of(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

fn set_owner(set: &StatefulSet) -> Owner<'_> {
    Owner {
        api_version: "apps/v1",
        kind: "StatefulSet",
        name: set.metadata.name.as_deref().unwrap_or_default(),
        uid: set.metadata.uid.as_deref().unwrap_or_default(),
    }
}

fn pod_owner(pod: &Pod) -> Owner<'_> {
    Owner {
        api_version: "v1",
        kind: "Pod",
        name: pod.metadata.name.as_deref().unwrap_or_default(),
        uid: pod.metadata.uid.as_deref().unwrap_or_default(),
    }
}

impl StatefulPodControl {
    /// `recordPodEvent`.
    fn pod_event(&self, verb: &str, set: &StatefulSet, pod: &Pod, err: Option<&Error>) {
        let set_name = set.metadata.name.as_deref().unwrap_or_default();
        let pod_name = name_of(pod);
        match err {
            None => self.recorder.normal(
                set,
                &format!("Successful{}", title(verb)),
                &format!("{verb} Pod {pod_name} in StatefulSet {set_name} successful"),
            ),
            Some(err) => self.recorder.warning(
                set,
                &format!("Failed{}", title(verb)),
                &format!("{verb} Pod {pod_name} in StatefulSet {set_name} failed error: {err}"),
            ),
        }
    }

    /// `recordClaimEvent`.
    fn claim_event(&self, set: &StatefulSet, pod: &Pod, claim: &str, err: Option<&Error>) {
        let set_name = set.metadata.name.as_deref().unwrap_or_default();
        let pod_name = name_of(pod);
        match err {
            None => self.recorder.normal(
                set,
                "SuccessfulCreate",
                &format!("create Claim {claim} Pod {pod_name} in StatefulSet {set_name} success"),
            ),
            Some(err) => self.recorder.warning(
                set,
                "FailedCreate",
                &format!(
                    "create Claim {claim} for Pod {pod_name} in StatefulSet {set_name} failed error: {err}"
                ),
            ),
        }
    }

    async fn get_claim(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<PersistentVolumeClaim>>, Error> {
        let key = ObjectKey::new(namespace, name);
        Ok(rein_client::ignore_not_found(
            self.client.get::<PersistentVolumeClaim>(&key).await,
        )?)
    }

    /// `createPersistentVolumeClaims`: creates the Pod's missing claims; a claim being
    /// deleted is an error (the Pod must wait for it to go).
    pub(super) async fn create_claims(&self, set: &StatefulSet, pod: &Pod) -> Result<(), Error> {
        let mut first_error = None;
        for claim in identity::claims(set, identity::ordinal(pod)).into_values() {
            let namespace = claim.metadata.namespace.clone().unwrap_or_default();
            let name = claim.metadata.name.clone().unwrap_or_default();
            match self.get_claim(&namespace, &name).await {
                Ok(None) => match self.client.create(&claim, &PostParams::default()).await {
                    Ok(_) => self.claim_event(set, pod, &name, None),
                    Err(err) if err.is_already_exists() => {
                        first_error.get_or_insert(Error::from(err));
                    }
                    Err(err) => {
                        let err = Error::from(err);
                        self.claim_event(set, pod, &name, Some(&err));
                        first_error.get_or_insert(err);
                    }
                },
                Ok(Some(existing)) if existing.metadata.deletion_timestamp.is_some() => {
                    first_error.get_or_insert(Error::Invalid {
                        object: describe(set),
                        problem: format!("pvc {name} is being deleted"),
                    });
                }
                Ok(Some(_)) => {}
                Err(err) => {
                    self.claim_event(set, pod, &name, Some(&err));
                    first_error.get_or_insert(err);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// `CreateStatefulPod`: the claims, then the Pod, then the claims' owner references.
    pub(super) async fn create_pod(&self, set: &StatefulSet, pod: &Pod) -> Result<(), Error> {
        if let Err(err) = self.create_claims(set, pod).await {
            self.pod_event("create", set, pod, Some(&err));
            return Err(err);
        }
        let created = match self.client.create(pod, &PostParams::default()).await {
            Ok(created) => created,
            // Someone (a previous sync) created it: not an event.
            Err(err) if err.is_already_exists() => return Err(err.into()),
            Err(err) => {
                let err = Error::from(err);
                self.pod_event("create", set, pod, Some(&err));
                return Err(err);
            }
        };
        if let Err(err) = self.update_claims_for_retention(set, &created).await {
            self.pod_event("update", set, pod, Some(&err));
            return Err(err);
        }
        self.pod_event("create", set, pod, None);
        Ok(())
    }

    /// `UpdateStatefulPod`: gives the Pod the set's identity and storage and its claims the
    /// policy's owners, writing the Pod if it changed (retrying on conflicts with the Pod
    /// read back).
    pub(super) async fn update_pod(&self, set: &StatefulSet, pod: &Pod) -> Result<(), Error> {
        let mut pod = pod.clone();
        for _ in 0..5 {
            let mut consistent = true;
            if !identity::identity_matches(set, &pod) {
                identity::update_identity(set, &mut pod);
                consistent = false;
            }
            if !identity::storage_matches(set, &pod) {
                identity::update_storage(set, &mut pod);
                consistent = false;
            }
            match self.claims_match_retention(set, &pod).await {
                Err(err) => {
                    self.pod_event("update", set, &pod, Some(&err));
                    return Err(err);
                }
                Ok(false) => {
                    if let Err(err) = self.update_claims_for_retention(set, &pod).await {
                        self.pod_event("update", set, &pod, Some(&err));
                        return Err(err);
                    }
                    consistent = false;
                }
                Ok(true) => {}
            }
            if consistent {
                return Ok(());
            }
            match self.client.update(&pod, &PostParams::default()).await {
                Ok(_) => {
                    self.pod_event("update", set, &pod, None);
                    return Ok(());
                }
                Err(err) if err.is_conflict() => {
                    let key = ObjectKey::from_object(&pod);
                    pod = Arc::unwrap_or_clone(self.client.api_reader().get::<Pod>(&key).await?);
                }
                Err(err) => {
                    let err = Error::from(err);
                    self.pod_event("update", set, &pod, Some(&err));
                    return Err(err);
                }
            }
        }
        let err = Error::Invalid {
            object: describe(set),
            problem: format!("updating Pod {}: too many conflicts", name_of(&pod)),
        };
        self.pod_event("update", set, &pod, Some(&err));
        Err(err)
    }

    /// `DeleteStatefulPod`.
    pub(super) async fn delete_pod(&self, set: &StatefulSet, pod: &Pod) -> Result<(), Error> {
        let key = ObjectKey::from_object(pod);
        match self
            .client
            .delete::<Pod>(&key, &DeleteParams::default())
            .await
        {
            Ok(()) => {
                self.pod_event("delete", set, pod, None);
                Ok(())
            }
            Err(err) => {
                let err = Error::from(err);
                self.pod_event("delete", set, pod, Some(&err));
                Err(err)
            }
        }
    }

    /// `ClaimsMatchRetentionPolicy`: every existing claim of the Pod has the owners the policy
    /// asks for (missing claims are picked up later).
    pub(super) async fn claims_match_retention(
        &self,
        set: &StatefulSet,
        pod: &Pod,
    ) -> Result<bool, Error> {
        let namespace = set.metadata.namespace.clone().unwrap_or_default();
        let scaled_down = !identity::in_ordinal_range(pod, set);
        for claim in identity::claims(set, identity::ordinal(pod)).into_values() {
            let name = claim.metadata.name.unwrap_or_default();
            if let Some(claim) = self.get_claim(&namespace, &name).await?
                && !identity::claim_owner_up_to_date(
                    &claim,
                    set,
                    set_owner(set),
                    pod_owner(pod),
                    scaled_down,
                )
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `UpdatePodClaimForRetentionPolicy`: gives each existing claim of the Pod the owners the
    /// policy asks for.
    pub(super) async fn update_claims_for_retention(
        &self,
        set: &StatefulSet,
        pod: &Pod,
    ) -> Result<(), Error> {
        let namespace = set.metadata.namespace.clone().unwrap_or_default();
        let scaled_down = !identity::in_ordinal_range(pod, set);
        for claim in identity::claims(set, identity::ordinal(pod)).into_values() {
            let name = claim.metadata.name.unwrap_or_default();
            let Some(claim) = self.get_claim(&namespace, &name).await? else {
                continue;
            };
            let (set_owner, pod_owner) = (set_owner(set), pod_owner(pod));
            if identity::claim_owner_up_to_date(&claim, set, set_owner, pod_owner, scaled_down) {
                continue;
            }
            let mut claim = Arc::unwrap_or_clone(claim);
            identity::update_claim_owners(&mut claim, set, set_owner, pod_owner, scaled_down);
            self.client.update(&claim, &PostParams::default()).await?;
        }
        Ok(())
    }

    /// `PodClaimIsStale`: with `whenScaled: Delete`, a claim of the Pod still owned by an
    /// earlier Pod of that name (the garbage collector is about to delete it).
    pub(super) async fn claim_is_stale(&self, set: &StatefulSet, pod: &Pod) -> Result<bool, Error> {
        if !identity::deletes_when_scaled(set) {
            return Ok(false);
        }
        let namespace = set.metadata.namespace.clone().unwrap_or_default();
        for claim in identity::claims(set, identity::ordinal(pod)).into_values() {
            let name = claim.metadata.name.unwrap_or_default();
            if let Some(claim) = self.get_claim(&namespace, &name).await?
                && identity::has_stale_ref(&claim, pod_owner(pod))
            {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
