//! A StatefulSet Pod's identity and storage, as kube's `stateful_set_utils.go` defines them:
//! the name `<set>-<ordinal>`, the labels `statefulset.kubernetes.io/pod-name` and
//! `apps.kubernetes.io/pod-index`, `hostname`/`subdomain`, the claims
//! `<template>-<set>-<ordinal>` of its volume claim templates (mounted as volumes of the
//! template's name), and the claims' owner references the
//! `persistentVolumeClaimRetentionPolicy` asks for.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

/// `apps.StatefulSetPodNameLabel`.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// `apps.PodIndexLabel`.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// `getParentNameAndOrdinal`: `(<set>, <ordinal>)` from a name `<set>-<digits>`.
pub(crate) fn parent_and_ordinal(name: &str) -> Option<(&str, i32)> {
    let (parent, digits) = name.rsplit_once('-')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((parent, digits.parse().ok()?))
}

/// `getOrdinal`: the Pod's ordinal, `-1` if its name has none.
pub(crate) fn ordinal(pod: &Pod) -> i32 {
    pod.metadata
        .name
        .as_deref()
        .and_then(parent_and_ordinal)
        .map_or(-1, |(_, o)| o)
}

fn set_name(set: &StatefulSet) -> &str {
    set.metadata.name.as_deref().unwrap_or_default()
}

/// `isMemberOf`.
pub(crate) fn is_member(set: &StatefulSet, pod: &Pod) -> bool {
    pod.metadata
        .name
        .as_deref()
        .and_then(parent_and_ordinal)
        .is_some_and(|(parent, _)| parent == set_name(set))
}

/// `getStartOrdinal`: `spec.ordinals.start`, or 0.
pub(crate) fn start_ordinal(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.ordinals.as_ref())
        .and_then(|o| o.start)
        .unwrap_or(0)
}

/// `spec.replicas` (1 when unset).
pub(crate) fn replicas(set: &StatefulSet) -> i32 {
    set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// `podInOrdinalRange`: `start ≤ ordinal < start + replicas`.
pub(crate) fn in_ordinal_range(pod: &Pod, set: &StatefulSet) -> bool {
    let o = ordinal(pod);
    let start = start_ordinal(set);
    o >= start && o < start + replicas(set)
}

/// `getPodName`.
pub(crate) fn pod_name(set: &StatefulSet, ordinal: i32) -> String {
    format!("{}-{ordinal}", set_name(set))
}

/// `getPersistentVolumeClaimName`.
pub(crate) fn claim_name(
    set: &StatefulSet,
    template: &PersistentVolumeClaim,
    ordinal: i32,
) -> String {
    format!(
        "{}-{}-{ordinal}",
        template.metadata.name.as_deref().unwrap_or_default(),
        set_name(set)
    )
}

fn service_name(set: &StatefulSet) -> Option<String> {
    set.spec
        .as_ref()
        .and_then(|s| s.service_name.clone())
        .filter(|s| !s.is_empty())
}

/// The volume claim templates.
pub(crate) fn claim_templates(set: &StatefulSet) -> &[PersistentVolumeClaim] {
    set.spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.as_deref())
        .unwrap_or(&[])
}

/// `identityMatches`.
pub(crate) fn identity_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let Some(name) = pod.metadata.name.as_deref() else {
        return false;
    };
    let Some((parent, ordinal)) = parent_and_ordinal(name) else {
        return false;
    };
    let label = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(POD_NAME_LABEL));
    parent == set_name(set)
        && name == pod_name(set, ordinal)
        && pod.metadata.namespace == set.metadata.namespace
        && label.map(String::as_str) == Some(name)
}

/// `storageMatches`: every claim template is mounted as a volume of its name using the Pod's
/// claim.
pub(crate) fn storage_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let ordinal = ordinal(pod);
    if ordinal < 0 {
        return false;
    }
    let volumes = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or(&[]);
    claim_templates(set).iter().all(|template| {
        volumes
            .iter()
            .find(|v| Some(v.name.as_str()) == template.metadata.name.as_deref())
            .and_then(|v| v.persistent_volume_claim.as_ref())
            .is_some_and(|c| c.claim_name == claim_name(set, template, ordinal))
    })
}

/// `getPersistentVolumeClaims`: the Pod's claims by template name, labelled with the
/// template's labels and the set's `matchLabels`.
pub(crate) fn claims(set: &StatefulSet, ordinal: i32) -> BTreeMap<String, PersistentVolumeClaim> {
    let match_labels = set
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone())
        .unwrap_or_default();
    claim_templates(set)
        .iter()
        .map(|template| {
            let mut labels = template.metadata.labels.clone().unwrap_or_default();
            labels.extend(match_labels.clone());
            let claim = PersistentVolumeClaim {
                metadata: ObjectMeta {
                    name: Some(claim_name(set, template, ordinal)),
                    namespace: set.metadata.namespace.clone(),
                    labels: Some(labels),
                    annotations: template.metadata.annotations.clone(),
                    finalizers: template.metadata.finalizers.clone(),
                    ..ObjectMeta::default()
                },
                spec: template.spec.clone(),
                status: None,
            };
            (template.metadata.name.clone().unwrap_or_default(), claim)
        })
        .collect()
}

/// `updateStorage`: the claims' volumes, then the Pod's other volumes.
pub(crate) fn update_storage(set: &StatefulSet, pod: &mut Pod) {
    let claims = claims(set, ordinal(pod));
    let spec = pod.spec.get_or_insert_default();
    let current = spec.volumes.take().unwrap_or_default();
    let mut volumes: Vec<Volume> = claims
        .iter()
        .map(|(name, claim)| Volume {
            name: name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.metadata.name.clone().unwrap_or_default(),
                read_only: Some(false),
            }),
            ..Volume::default()
        })
        .collect();
    volumes.extend(
        current
            .into_iter()
            .filter(|v| !claims.contains_key(&v.name)),
    );
    spec.volumes = Some(volumes);
}

/// `updateIdentity`: name, namespace, and the pod-name and pod-index labels.
pub(crate) fn update_identity(set: &StatefulSet, pod: &mut Pod) {
    let ordinal = ordinal(pod);
    let name = pod_name(set, ordinal);
    pod.metadata.name = Some(name.clone());
    pod.metadata.namespace = set.metadata.namespace.clone();
    let labels = pod.metadata.labels.get_or_insert_default();
    labels.insert(POD_NAME_LABEL.into(), name);
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
}

/// `newStatefulSetPod`: the Pod of `ordinal` from `template` (the set's, or a revision's),
/// controlled by `reference`, with its identity (`hostname`, `subdomain` only at creation)
/// and storage.
pub(crate) fn new_pod(
    set: &StatefulSet,
    template: &PodTemplateSpec,
    reference: OwnerReference,
    ordinal: i32,
) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(set, ordinal)),
            namespace: set.metadata.namespace.clone(),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![reference]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    };
    update_identity(set, &mut pod);
    let name = pod.metadata.name.clone();
    let spec = pod.spec.get_or_insert_default();
    spec.hostname = name;
    spec.subdomain = service_name(set);
    update_storage(set, &mut pod);
    pod
}

/// The retention policy (`Retain` for each when unset): `(whenScaled, whenDeleted)` are
/// `Delete`.
fn retention(set: &StatefulSet) -> (bool, bool) {
    let policy = set
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_claim_retention_policy.as_ref());
    let delete = |v: Option<&String>| v.is_some_and(|v| v == "Delete");
    (
        delete(policy.and_then(|p| p.when_scaled.as_ref())),
        delete(policy.and_then(|p| p.when_deleted.as_ref())),
    )
}

/// Whether claims of scaled-down Pods are deleted (`whenScaled: Delete`).
pub(crate) fn deletes_when_scaled(set: &StatefulSet) -> bool {
    retention(set).0
}

/// The owner being one of the set or the Pod: kind, name and uid.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Owner<'a> {
    pub(crate) api_version: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) name: &'a str,
    pub(crate) uid: &'a str,
}

impl Owner<'_> {
    /// `matchesRef`: same group-version, kind and name.
    fn matches(&self, r: &OwnerReference) -> bool {
        r.api_version == self.api_version && r.kind == self.kind && r.name == self.name
    }

    fn reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.into(),
            kind: self.kind.into(),
            name: self.name.into(),
            uid: self.uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }
}

fn refs(claim: &PersistentVolumeClaim) -> &[OwnerReference] {
    claim.metadata.owner_references.as_deref().unwrap_or(&[])
}

fn has_ref(claim: &PersistentVolumeClaim, uid: &str) -> bool {
    refs(claim).iter().any(|r| r.uid == uid)
}

/// `hasStaleOwnerRef`: a reference to the object's name with another uid.
pub(crate) fn has_stale_ref(claim: &PersistentVolumeClaim, owner: Owner<'_>) -> bool {
    refs(claim)
        .iter()
        .find(|r| owner.matches(r))
        .is_some_and(|r| r.uid != owner.uid)
}

/// `hasUnexpectedController`: with a `Delete` policy, a controller that is neither the set
/// nor the Pod (or one of them under an old uid).
fn has_unexpected_controller(
    claim: &PersistentVolumeClaim,
    policy: (bool, bool),
    set: Owner<'_>,
    pod: Owner<'_>,
) -> bool {
    if policy == (false, false) {
        return false;
    }
    refs(claim).iter().any(|r| {
        for us in [set, pod] {
            if us.matches(r) {
                return r.uid != us.uid;
            }
        }
        r.controller == Some(true)
    })
}

/// `isClaimOwnerUpToDate`: whether the claim's owner references are what the retention
/// policy asks for (claims in an unknown state are left alone).
pub(crate) fn claim_owner_up_to_date(
    claim: &PersistentVolumeClaim,
    stateful_set: &StatefulSet,
    set: Owner<'_>,
    pod: Owner<'_>,
    scaled_down: bool,
) -> bool {
    if has_stale_ref(claim, set) || has_stale_ref(claim, pod) {
        return true;
    }
    let policy = retention(stateful_set);
    if has_unexpected_controller(claim, policy, set, pod) {
        return !(has_ref(claim, set.uid) || has_ref(claim, pod.uid));
    }
    let non_controller = refs(claim)
        .iter()
        .any(|r| (r.uid == set.uid || r.uid == pod.uid) && r.controller != Some(true));
    if non_controller {
        return false;
    }
    let (on_set, on_pod) = (has_ref(claim, set.uid), has_ref(claim, pod.uid));
    match policy {
        (false, false) => !on_set && !on_pod,
        (false, true) => on_set && !on_pod,
        (true, false) => !on_set && scaled_down == on_pod,
        (true, true) => scaled_down != on_set && scaled_down == on_pod,
    }
}

/// `updateClaimOwnerRefForSetAndPod`: the claim's owner references as the policy asks.
pub(crate) fn update_claim_owners(
    claim: &mut PersistentVolumeClaim,
    stateful_set: &StatefulSet,
    set: Owner<'_>,
    pod: Owner<'_>,
    scaled_down: bool,
) {
    let policy = retention(stateful_set);
    let unexpected = has_unexpected_controller(claim, policy, set, pod);
    let mut kept: Vec<OwnerReference> = refs(claim)
        .iter()
        .filter(|r| !set.matches(r) && !pod.matches(r))
        .cloned()
        .collect();
    if !unexpected {
        let mut add = |owner: Owner<'_>| {
            if !kept.iter().any(|r| r.uid == owner.uid) {
                kept.push(owner.reference());
            }
        };
        match policy {
            (false, false) => {}
            (false, true) => add(set),
            (true, false) => {
                if scaled_down {
                    add(pod);
                }
            }
            (true, true) => {
                if scaled_down {
                    add(pod);
                } else {
                    add(set);
                }
            }
        }
    }
    claim.metadata.owner_references = (!kept.is_empty()).then_some(kept);
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{
        StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetSpec,
    };

    use super::*;

    fn set(policy: Option<(&str, &str)>) -> StatefulSet {
        StatefulSet {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                uid: Some("set-uid".into()),
                ..ObjectMeta::default()
            },
            spec: Some(StatefulSetSpec {
                replicas: Some(2),
                service_name: Some("nginx".into()),
                volume_claim_templates: Some(vec![PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        name: Some("www".into()),
                        ..ObjectMeta::default()
                    },
                    ..PersistentVolumeClaim::default()
                }]),
                persistent_volume_claim_retention_policy: policy.map(|(scaled, deleted)| {
                    StatefulSetPersistentVolumeClaimRetentionPolicy {
                        when_scaled: Some(scaled.into()),
                        when_deleted: Some(deleted.into()),
                    }
                }),
                ..StatefulSetSpec::default()
            }),
            status: None,
        }
    }

    #[test]
    fn names_parse_into_parent_and_ordinal() {
        assert_eq!(parent_and_ordinal("web-0"), Some(("web", 0)));
        assert_eq!(parent_and_ordinal("my-web-12"), Some(("my-web", 12)));
        assert_eq!(parent_and_ordinal("web-x"), None);
        assert_eq!(parent_and_ordinal("web"), None);
    }

    #[test]
    fn a_new_pod_has_its_identity_and_claims() {
        let set = set(None);
        let template = PodTemplateSpec::default();
        let pod = new_pod(&set, &template, OwnerReference::default(), 1);
        assert_eq!(pod.metadata.name.as_deref(), Some("web-1"));
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get(POD_NAME_LABEL).map(String::as_str),
            Some("web-1")
        );
        assert_eq!(labels.get(POD_INDEX_LABEL).map(String::as_str), Some("1"));
        let spec = pod.spec.clone().unwrap_or_default();
        assert_eq!(spec.hostname.as_deref(), Some("web-1"));
        assert_eq!(spec.subdomain.as_deref(), Some("nginx"));
        assert!(identity_matches(&set, &pod));
        assert!(storage_matches(&set, &pod));
        assert_eq!(
            claims(&set, 1)["www"].metadata.name.as_deref(),
            Some("www-web-1")
        );
    }

    #[test]
    fn claim_owners_follow_the_retention_policy() {
        let owner_set = Owner {
            api_version: "apps/v1",
            kind: "StatefulSet",
            name: "web",
            uid: "set-uid",
        };
        let owner_pod = Owner {
            api_version: "v1",
            kind: "Pod",
            name: "web-1",
            uid: "pod-uid",
        };
        for (policy, scaled_down, want_set, want_pod) in [
            (("Retain", "Retain"), false, false, false),
            (("Retain", "Delete"), false, true, false),
            (("Delete", "Retain"), true, false, true),
            (("Delete", "Delete"), false, true, false),
            (("Delete", "Delete"), true, false, true),
        ] {
            let set = set(Some(policy));
            let mut claim = PersistentVolumeClaim::default();
            let up_to_date =
                claim_owner_up_to_date(&claim, &set, owner_set, owner_pod, scaled_down);
            assert_eq!(up_to_date, !want_set && !want_pod, "{policy:?}");
            update_claim_owners(&mut claim, &set, owner_set, owner_pod, scaled_down);
            assert_eq!(has_ref(&claim, "set-uid"), want_set, "{policy:?}");
            assert_eq!(has_ref(&claim, "pod-uid"), want_pod, "{policy:?}");
            assert!(claim_owner_up_to_date(
                &claim,
                &set,
                owner_set,
                owner_pod,
                scaled_down
            ));
        }
    }
}
