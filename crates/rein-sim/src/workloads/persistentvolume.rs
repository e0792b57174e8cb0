//! Volumes for the simulated cluster: kube-controller-manager's PersistentVolume controller
//! (`pkg/controller/volume/persistentvolume/pv_controller.go`) and, for the simulated
//! provisioner [`PROVISIONER`], what an external provisioner does. A claim without a class
//! gets the default class (a StorageClass `standard` of this provisioner, marked default, is
//! created at start when no class is); an unbound claim binds to the smallest matching
//! Available volume (`binding.rs`), else a claim of a class of this provisioner is annotated
//! `volume.kubernetes.io/storage-provisioner` (`ExternalProvisioning`) and gets a volume
//! `pvc-<claim uid>` of its size (`Provisioning`, `ProvisioningSucceeded`; with
//! `WaitForFirstConsumer` once a Pod using it is on a node, the volume then pinned to that
//! node) (`provision.rs`); binding writes the volume's `claimRef` and `Bound` phase and the
//! claim's `volumeName`, `pv.kubernetes.io/bind-completed`/`bound-by-controller`, `Bound`
//! phase, access modes and capacity. A volume whose claim is gone is `Released`, and deleted
//! when its reclaim policy is `Delete`.
//!
//! Not simulated: the protection finalizers, volume expansion, recycling, and any volume
//! actually attached or mounted (the kubelet does not look at volumes).

mod binding;
mod provision;

use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use rein_client::{Client, ListOptions, ignore_not_found};
use rein_controller::event::GenericEvent;
use rein_controller::handler::{EnqueueRequestForObject, EnqueueRequestsFromAsyncMapFunc};
use rein_controller::recorder::EventRecorder;
use rein_controller::source::Channel;
use rein_controller::{Action, BuildError, Context, ControllerManagedBy, Reconciler, Request};
use rein_manager::Manager;

use super::Error;

pub use provision::{DEFAULT_CLASS, DEFAULT_CLASS_ANNOTATION, PROVISIONER};

/// The controller's name.
pub const NAME: &str = "persistentvolume-binder";

/// The component the binder's events are recorded as.
const COMPONENT: &str = "persistentvolume-controller";

/// Adds the PersistentVolume controller (with the simulated provisioner) to `mgr`.
pub fn add(mgr: &Manager) -> Result<(), BuildError> {
    let client = mgr.client();
    // One request at start, for the default StorageClass.
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let _ = tx.try_send(GenericEvent {
        object: Arc::new(StorageClass::default()),
    });
    let pending_claims = {
        let client = client.clone();
        EnqueueRequestsFromAsyncMapFunc::new(move |_class: Arc<StorageClass>| {
            let client = client.clone();
            async move { unbound_claims(&client).await }
        })
    };
    let volume_claims = {
        let client = client.clone();
        EnqueueRequestsFromAsyncMapFunc::new(move |pv: Arc<PersistentVolume>| {
            let client = client.clone();
            async move { claims_of_volume(&client, &pv).await }
        })
    };
    let pod_claims =
        EnqueueRequestsFromAsyncMapFunc::new(|pod: Arc<Pod>| async move { claims_of_pod(&pod) });
    let controller = VolumeController {
        recorder: mgr.event_recorder(COMPONENT),
        provisioner: mgr.event_recorder(PROVISIONER),
        client,
    };
    ControllerManagedBy::new(mgr)
        .for_::<PersistentVolumeClaim>()
        .watches::<PersistentVolume>(volume_claims)
        .watches::<StorageClass>(pending_claims)
        .watches::<Pod>(pod_claims)
        .watches_source(Channel::new(rx), EnqueueRequestForObject)
        .named(NAME)
        .with_options(super::controller_options())
        .complete(controller)
        .map(|_| ())
}

/// Every claim not bound yet (a class appeared or changed).
async fn unbound_claims(client: &Client) -> Vec<Request> {
    let Ok(list) = client
        .list::<PersistentVolumeClaim>(&ListOptions::default())
        .await
    else {
        return Vec::new();
    };
    list.items
        .iter()
        .filter(|c| binding::phase(c) != "Bound")
        .map(|c| Request::from_object(&**c))
        .collect()
}

/// The claim a volume is (or was) bound to; every unbound claim for a volume bound to none.
async fn claims_of_volume(client: &Client, pv: &PersistentVolume) -> Vec<Request> {
    let claim = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
    match claim {
        Some(claim) => match (&claim.namespace, &claim.name) {
            (Some(namespace), Some(name)) => vec![Request::new(namespace, name)],
            _ => Vec::new(),
        },
        None => unbound_claims(client).await,
    }
}

/// The claims a Pod on a node uses (a `WaitForFirstConsumer` claim provisions then).
fn claims_of_pod(pod: &Pod) -> Vec<Request> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    if spec.node_name.is_none() {
        return Vec::new();
    }
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    spec.volumes
        .iter()
        .flatten()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .map(|c| Request::new(namespace.clone(), c.claim_name.clone()))
        .collect()
}

struct VolumeController {
    client: Client,
    /// The binder's events.
    recorder: EventRecorder,
    /// The provisioner's events.
    provisioner: EventRecorder,
}

#[async_trait]
impl Reconciler for VolumeController {
    type Error = Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Error> {
        // The start-up request (a cluster-scoped key: claims are namespaced).
        if req.key.namespace.is_none() {
            provision::ensure_default_class(&self.client).await?;
            return Ok(Action::done());
        }
        match ignore_not_found(self.client.get::<PersistentVolumeClaim>(&req.key).await)? {
            Some(claim) => self.sync_claim(&claim).await,
            None => {
                provision::reclaim(&self.client, &req.key).await?;
                Ok(Action::done())
            }
        }
    }
}

impl VolumeController {
    /// `syncClaim`.
    async fn sync_claim(&self, claim: &PersistentVolumeClaim) -> Result<Action, Error> {
        if claim.metadata.deletion_timestamp.is_some() {
            return Ok(Action::done());
        }
        if binding::phase(claim) == "Bound" && binding::volume_name(claim).is_some() {
            // `syncBoundClaim`: a volume that vanished makes the claim Lost.
            return binding::check_bound(&self.client, &self.recorder, claim).await;
        }
        if let Some(volume) = binding::find_volume(&self.client, claim).await? {
            binding::bind(&self.client, &volume, claim).await?;
            return Ok(Action::done());
        }
        provision::provision(&self.client, &self.recorder, &self.provisioner, claim).await
    }
}
