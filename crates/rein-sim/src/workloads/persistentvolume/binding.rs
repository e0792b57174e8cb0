//! Binding claims and volumes, as the PersistentVolume controller does: `findBestMatch` (the
//! smallest Available volume of the claim's class, volume mode and access modes, large
//! enough, matching its selector, or the volume it names), then `bind`: the volume's
//! `claimRef` and phase, the claim's `volumeName`, annotations and status.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus,
    PersistentVolumeStatus,
};
use rein_client::{Client, ListOptions, PostParams};
use rein_controller::Action;
use rein_controller::recorder::EventRecorder;
use rein_scheme::ObjectKey;
use rein_scheme::labels::Selector;

use super::super::Error;
use crate::scheduler::resources;

/// `AnnBindCompleted`.
pub(crate) const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// `AnnBoundByController`.
pub(crate) const BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";

/// A claim's phase (`""` when unset).
pub(super) fn phase(claim: &PersistentVolumeClaim) -> &str {
    claim
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// The volume a claim names.
pub(super) fn volume_name(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// A claim's class (`None`: not set, `Some("")`: no class).
pub(super) fn class_of(claim: &PersistentVolumeClaim) -> Option<&str> {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
}

/// The storage a claim requests, in bytes.
pub(super) fn requested(claim: &PersistentVolumeClaim) -> i64 {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| resources::parse(&q.0))
        .map_or(0, |p| p.value())
}

fn capacity(pv: &PersistentVolume) -> i64 {
    pv.spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| resources::parse(&q.0))
        .map_or(0, |p| p.value())
}

fn volume_phase(pv: &PersistentVolume) -> &str {
    pv.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// Whether `pv`'s `claimRef` is `claim` (by namespace and name, and uid when it has one).
fn claimed_by(pv: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    pv.spec
        .as_ref()
        .and_then(|s| s.claim_ref.as_ref())
        .is_some_and(|r| {
            r.namespace == claim.metadata.namespace
                && r.name == claim.metadata.name
                && r.uid
                    .as_ref()
                    .is_none_or(|u| Some(u) == claim.metadata.uid.as_ref())
        })
}

/// `checkVolumeSatisfyClaim` and the filters of `findMatchingVolume`.
fn satisfies(pv: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let (Some(spec), Some(want)) = (pv.spec.as_ref(), claim.spec.as_ref()) else {
        return false;
    };
    if pv.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let pv_class = spec.storage_class_name.as_deref().unwrap_or_default();
    if pv_class != class_of(claim).unwrap_or_default() {
        return false;
    }
    let mode = |m: Option<&String>| m.map_or("Filesystem", String::as_str).to_owned();
    if mode(spec.volume_mode.as_ref()) != mode(want.volume_mode.as_ref()) {
        return false;
    }
    let offered = spec.access_modes.as_deref().unwrap_or(&[]);
    if !want
        .access_modes
        .iter()
        .flatten()
        .all(|m| offered.contains(m))
    {
        return false;
    }
    if let Some(selector) = &want.selector {
        let labels = pv.metadata.labels.clone().unwrap_or_default();
        match Selector::from_label_selector(selector) {
            Ok(sel) if sel.matches(&labels) => {}
            _ => return false,
        }
    }
    capacity(pv) >= requested(claim)
}

/// `findBestMatch`: the volume bound (or pre-bound) to the claim, else the smallest Available
/// one that satisfies it.
pub(super) async fn find_volume(
    client: &Client,
    claim: &PersistentVolumeClaim,
) -> Result<Option<Arc<PersistentVolume>>, Error> {
    let volumes = client
        .list::<PersistentVolume>(&ListOptions::default())
        .await?;
    if let Some(name) = volume_name(claim) {
        return Ok(volumes
            .items
            .into_iter()
            .find(|pv| pv.metadata.name.as_deref() == Some(name)));
    }
    if let Some(pv) = volumes.items.iter().find(|pv| claimed_by(pv, claim)) {
        return Ok(Some(pv.clone()));
    }
    let best = volumes
        .items
        .into_iter()
        .filter(|pv| pv.spec.as_ref().is_some_and(|s| s.claim_ref.is_none()))
        .filter(|pv| matches!(volume_phase(pv), "" | "Pending" | "Available"))
        .filter(|pv| satisfies(pv, claim))
        .min_by_key(|pv| capacity(pv));
    Ok(best)
}

/// `bind`: the volume to the claim (`claimRef`, `bound-by-controller` when this wrote it,
/// phase `Bound`), then the claim to the volume (`volumeName`, `bind-completed`,
/// `bound-by-controller`, phase `Bound` with the volume's access modes and capacity).
pub(super) async fn bind(
    client: &Client,
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
) -> Result<(), Error> {
    let mut pv = volume.clone();
    let spec = pv.spec.get_or_insert_default();
    if !claimed_by(volume, claim) || spec.claim_ref.as_ref().is_some_and(|r| r.uid.is_none()) {
        spec.claim_ref = Some(ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("PersistentVolumeClaim".into()),
            namespace: claim.metadata.namespace.clone(),
            name: claim.metadata.name.clone(),
            uid: claim.metadata.uid.clone(),
            resource_version: claim.metadata.resource_version.clone(),
            ..ObjectReference::default()
        });
        pv.metadata
            .annotations
            .get_or_insert_default()
            .insert(BOUND_BY_CONTROLLER.into(), "yes".into());
        pv = client.update(&pv, &PostParams::default()).await?;
    }
    if volume_phase(&pv) != "Bound" {
        pv.status = Some(PersistentVolumeStatus {
            phase: Some("Bound".into()),
            ..pv.status.take().unwrap_or_default()
        });
        pv = client.status().update(&pv, &PostParams::default()).await?;
    }

    let mut bound = claim.clone();
    let pv_name = pv.metadata.name.clone().unwrap_or_default();
    let annotations = bound.metadata.annotations.get_or_insert_default();
    let mut changed = annotations.get(BIND_COMPLETED).map(String::as_str) != Some("yes");
    annotations.insert(BIND_COMPLETED.into(), "yes".into());
    let claim_spec = bound.spec.get_or_insert_default();
    if claim_spec.volume_name.as_deref() != Some(pv_name.as_str()) {
        claim_spec.volume_name = Some(pv_name);
        annotations.insert(BOUND_BY_CONTROLLER.into(), "yes".into());
        changed = true;
    }
    if changed {
        bound = client.update(&bound, &PostParams::default()).await?;
    }
    let volume_spec = pv.spec.clone().unwrap_or_default();
    let status = PersistentVolumeClaimStatus {
        phase: Some("Bound".into()),
        access_modes: volume_spec.access_modes.clone(),
        capacity: volume_spec.capacity.clone(),
        ..bound.status.clone().unwrap_or_default()
    };
    if bound.status.as_ref() != Some(&status) {
        bound.status = Some(status);
        client
            .status()
            .update(&bound, &PostParams::default())
            .await?;
    }
    Ok(())
}

/// `syncBoundClaim`: a bound claim whose volume is gone is `Lost` (`ClaimLost`); one whose
/// volume is bound elsewhere is `Lost` (`ClaimMisbound`).
pub(super) async fn check_bound(
    client: &Client,
    recorder: &EventRecorder,
    claim: &PersistentVolumeClaim,
) -> Result<Action, Error> {
    let name = volume_name(claim).unwrap_or_default();
    let found = rein_client::ignore_not_found(
        client
            .get::<PersistentVolume>(&ObjectKey::cluster_scoped(name))
            .await,
    )?;
    let (reason, message) = match found {
        None => (
            "ClaimLost",
            "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
        ),
        Some(pv) if !claimed_by(&pv, claim) => (
            "ClaimMisbound",
            "Two claims are bound to the same volume, this one is bound incorrectly",
        ),
        Some(pv) => {
            // Finish a bind interrupted half-way.
            bind(client, &pv, claim).await?;
            return Ok(Action::done());
        }
    };
    if phase(claim) != "Lost" {
        recorder.warning(claim, reason, message);
        let mut lost = claim.clone();
        lost.status = Some(PersistentVolumeClaimStatus {
            phase: Some("Lost".into()),
            ..lost.status.take().unwrap_or_default()
        });
        client
            .status()
            .update(&lost, &PostParams::default())
            .await?;
    }
    Ok(Action::done())
}
