//! Dynamic provisioning for the simulated cluster: the default StorageClass, the
//! PersistentVolume controller's part (the retroactive default class, `WaitForFirstConsumer`,
//! the `storage-provisioner` annotations and `ExternalProvisioning`), the simulated
//! external provisioner's part (a `hostPath` volume `pvc-<claim uid>` of the claim's size,
//! `Provisioning` and `ProvisioningSucceeded`), and reclaiming volumes whose claim is gone.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectReference,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec, PersistentVolumeStatus, Pod,
    VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rein_client::{Client, DeleteParams, ListOptions, PostParams, ignore_already_exists};
use rein_controller::Action;
use rein_controller::recorder::EventRecorder;
use rein_scheme::ObjectKey;

use super::super::Error;
use super::binding::{bind, class_of};

/// The simulated provisioner's name (`StorageClass.provisioner`).
pub const PROVISIONER: &str = "sim.rein.dev/hostpath";

/// The default StorageClass made at start when there is none.
pub const DEFAULT_CLASS: &str = "standard";

/// `storageclass.kubernetes.io/is-default-class`.
pub const DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
/// The beta annotation kube still honours.
const BETA_DEFAULT_CLASS_ANNOTATION: &str = "storageclass.beta.kubernetes.io/is-default-class";

/// `AnnStorageProvisioner` and `AnnBetaStorageProvisioner`.
const STORAGE_PROVISIONER: [&str; 2] = [
    "volume.kubernetes.io/storage-provisioner",
    "volume.beta.kubernetes.io/storage-provisioner",
];
/// `AnnSelectedNode`.
const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// `AnnDynamicallyProvisioned`.
const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";

/// Where the simulated volumes would live on their node.
const VOLUME_ROOT: &str = "/var/lib/rein-sim/volumes";

fn is_default(class: &StorageClass) -> bool {
    let annotations = class.metadata.annotations.as_ref();
    [DEFAULT_CLASS_ANNOTATION, BETA_DEFAULT_CLASS_ANNOTATION]
        .iter()
        .any(|a| {
            annotations
                .and_then(|m| m.get(*a))
                .is_some_and(|v| v == "true")
        })
}

/// `GetDefaultClass`: the newest class marked default.
async fn default_class(client: &Client) -> Result<Option<Arc<StorageClass>>, Error> {
    let classes = client.list::<StorageClass>(&ListOptions::default()).await?;
    Ok(classes
        .items
        .into_iter()
        .filter(|c| is_default(c))
        .max_by(|a, b| {
            let created = |c: &StorageClass| c.metadata.creation_timestamp.as_ref().map(|t| t.0);
            created(a)
                .cmp(&created(b))
                .then_with(|| b.metadata.name.cmp(&a.metadata.name))
        }))
}

/// Creates the StorageClass [`DEFAULT_CLASS`] of the simulated provisioner, marked default,
/// unless a class is already default or has that name.
pub(super) async fn ensure_default_class(client: &Client) -> Result<(), Error> {
    let classes = client.list::<StorageClass>(&ListOptions::default()).await?;
    let taken = classes
        .items
        .iter()
        .any(|c| is_default(c) || c.metadata.name.as_deref() == Some(DEFAULT_CLASS));
    if taken {
        return Ok(());
    }
    let class = StorageClass {
        metadata: ObjectMeta {
            name: Some(DEFAULT_CLASS.into()),
            annotations: Some([(DEFAULT_CLASS_ANNOTATION.to_owned(), "true".to_owned())].into()),
            ..ObjectMeta::default()
        },
        provisioner: PROVISIONER.into(),
        reclaim_policy: Some("Delete".into()),
        volume_binding_mode: Some("Immediate".into()),
        ..StorageClass::default()
    };
    ignore_already_exists(client.create(&class, &PostParams::default()).await)?;
    Ok(())
}

fn describe_claim(claim: &PersistentVolumeClaim) -> String {
    ObjectKey::from_object(claim).to_string()
}

/// The node of a Pod using the claim, if one is on a node (the scheduler's
/// `selected-node`, which the simulated scheduler does not write).
async fn consumer_node(
    client: &Client,
    claim: &PersistentVolumeClaim,
) -> Result<Option<String>, Error> {
    let namespace = claim.metadata.namespace.clone().unwrap_or_default();
    let name = claim.metadata.name.clone().unwrap_or_default();
    let pods = client
        .list::<Pod>(&ListOptions::default().namespace(&namespace))
        .await?;
    Ok(pods.items.iter().find_map(|pod| {
        let spec = pod.spec.as_ref()?;
        let uses = spec
            .volumes
            .iter()
            .flatten()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .any(|c| c.claim_name == name);
        uses.then(|| spec.node_name.clone()).flatten()
    }))
}

/// The PersistentVolume controller's `syncUnboundClaim` without a matching volume, and the
/// simulated provisioner.
pub(super) async fn provision(
    client: &Client,
    recorder: &EventRecorder,
    provisioner: &EventRecorder,
    claim: &PersistentVolumeClaim,
) -> Result<Action, Error> {
    let Some(class_name) = class_of(claim) else {
        // The retroactive default class.
        if let Some(class) = default_class(client).await? {
            let mut updated = claim.clone();
            updated.spec.get_or_insert_default().storage_class_name = class.metadata.name.clone();
            client.update(&updated, &PostParams::default()).await?;
        } else {
            recorder.normal(
                claim,
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
            );
        }
        return Ok(Action::done());
    };
    if class_name.is_empty() {
        recorder.normal(
            claim,
            "FailedBinding",
            "no persistent volumes available for this claim and no storage class is set",
        );
        return Ok(Action::done());
    }
    let key = ObjectKey::cluster_scoped(class_name);
    let Some(class) = rein_client::ignore_not_found(client.get::<StorageClass>(&key).await)? else {
        recorder.warning(
            claim,
            "ProvisioningFailed",
            &format!("storageclass.storage.k8s.io \"{class_name}\" not found"),
        );
        return Ok(Action::done());
    };
    let annotations = claim.metadata.annotations.clone().unwrap_or_default();
    let mut selected = annotations.get(SELECTED_NODE).cloned();
    if class.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer") && selected.is_none() {
        match consumer_node(client, claim).await? {
            Some(node) => selected = Some(node),
            None => {
                recorder.normal(
                    claim,
                    "WaitForFirstConsumer",
                    "waiting for first consumer to be created before binding",
                );
                return Ok(Action::done());
            }
        }
    }
    // `setClaimProvisioner`.
    let marked = STORAGE_PROVISIONER
        .iter()
        .all(|a| annotations.get(*a) == Some(&class.provisioner));
    let needs_node = selected.is_some() && annotations.get(SELECTED_NODE) != selected.as_ref();
    let claim = if !marked || needs_node {
        let mut updated = claim.clone();
        let annotations = updated.metadata.annotations.get_or_insert_default();
        for a in STORAGE_PROVISIONER {
            annotations.insert(a.into(), class.provisioner.clone());
        }
        if let Some(node) = &selected {
            annotations.insert(SELECTED_NODE.into(), node.clone());
        }
        let updated = client.update(&updated, &PostParams::default()).await?;
        if !marked {
            recorder.normal(
                &updated,
                "ExternalProvisioning",
                &format!(
                    "Waiting for a volume to be created either by the external provisioner '{}' \
                     or manually by the system administrator. If volume creation is delayed, \
                     please verify that your external provisioner is running and correctly \
                     registered.",
                    class.provisioner
                ),
            );
        }
        updated
    } else {
        claim.clone()
    };
    if class.provisioner != PROVISIONER {
        return Ok(Action::done());
    }

    // The simulated external provisioner.
    let uid = claim.metadata.uid.clone().unwrap_or_default();
    let name = format!("pvc-{uid}");
    provisioner.normal(
        &claim,
        "Provisioning",
        &format!(
            "External provisioner is provisioning volume for claim \"{}\"",
            describe_claim(&claim)
        ),
    );
    let volume = new_volume(&name, &class, &claim, selected.as_deref());
    let volume = match client.create(&volume, &PostParams::default()).await {
        Ok(created) => {
            provisioner.normal(
                &claim,
                "ProvisioningSucceeded",
                &format!("Successfully provisioned volume {name}"),
            );
            created
        }
        Err(err) if err.is_already_exists() => Arc::unwrap_or_clone(
            client
                .api_reader()
                .get::<PersistentVolume>(&ObjectKey::cluster_scoped(&name))
                .await?,
        ),
        Err(err) => {
            provisioner.warning(
                &claim,
                "ProvisioningFailed",
                &format!("failed to provision volume with StorageClass \"{class_name}\": {err}"),
            );
            return Err(err.into());
        }
    };
    bind(client, &volume, &claim).await?;
    Ok(Action::done())
}

/// The volume the simulated provisioner makes for `claim`.
fn new_volume(
    name: &str,
    class: &StorageClass,
    claim: &PersistentVolumeClaim,
    node: Option<&str>,
) -> PersistentVolume {
    let spec = claim.spec.clone().unwrap_or_default();
    let size = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .cloned()
        .unwrap_or_else(|| Quantity("0".into()));
    let node_affinity = node.map(|node| VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: "kubernetes.io/hostname".into(),
                    operator: "In".into(),
                    values: Some(vec![node.to_owned()]),
                }]),
                match_fields: None,
            }],
        }),
    });
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            annotations: Some([(PROVISIONED_BY.to_owned(), PROVISIONER.to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            access_modes: spec.access_modes.clone(),
            capacity: Some([("storage".to_owned(), size)].into()),
            claim_ref: Some(ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("PersistentVolumeClaim".into()),
                namespace: claim.metadata.namespace.clone(),
                name: claim.metadata.name.clone(),
                uid: claim.metadata.uid.clone(),
                resource_version: claim.metadata.resource_version.clone(),
                ..ObjectReference::default()
            }),
            host_path: Some(HostPathVolumeSource {
                path: format!("{VOLUME_ROOT}/{name}"),
                type_: Some("DirectoryOrCreate".into()),
            }),
            mount_options: class.mount_options.clone(),
            node_affinity,
            persistent_volume_reclaim_policy: Some(
                class
                    .reclaim_policy
                    .clone()
                    .unwrap_or_else(|| "Delete".into()),
            ),
            storage_class_name: class.metadata.name.clone(),
            volume_mode: spec.volume_mode.clone(),
            ..PersistentVolumeSpec::default()
        }),
        status: None,
    }
}

/// `syncVolume` for the volumes of a claim that is gone: `Released`, then deleted if their
/// reclaim policy is `Delete` and the simulated provisioner made them.
pub(super) async fn reclaim(client: &Client, claim: &ObjectKey) -> Result<(), Error> {
    let volumes = client
        .list::<PersistentVolume>(&ListOptions::default())
        .await?;
    for pv in volumes.items {
        let spec = pv.spec.clone().unwrap_or_default();
        let Some(reference) = spec.claim_ref.as_ref() else {
            continue;
        };
        if reference.namespace != claim.namespace
            || reference.name.as_deref() != Some(claim.name.as_str())
        {
            continue;
        }
        let ours = pv
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(PROVISIONED_BY))
            .is_some_and(|p| p == PROVISIONER);
        if spec.persistent_volume_reclaim_policy.as_deref() == Some("Delete") && ours {
            let key = ObjectKey::from_object(&*pv);
            match client
                .delete::<PersistentVolume>(&key, &DeleteParams::default())
                .await
            {
                Ok(()) => {}
                Err(err) if err.is_not_found() => {}
                Err(err) => return Err(err.into()),
            }
            continue;
        }
        let phase = pv.status.as_ref().and_then(|s| s.phase.as_deref());
        if phase != Some("Released") {
            let mut released = Arc::unwrap_or_clone(pv);
            released.status = Some(PersistentVolumeStatus {
                phase: Some("Released".into()),
                ..released.status.take().unwrap_or_default()
            });
            client
                .status()
                .update(&released, &PostParams::default())
                .await?;
        }
    }
    Ok(())
}
