//! Spreading clusters across the hub's replicas ([`FleetSharding`]): each replica holds a
//! peer Lease in the hub, every replica computes the same owner for each cluster from the
//! live peers by rendezvous hashing (rein-sharding's `assign`), and a per-cluster fence Lease
//! makes sure a cluster is engaged by one replica at a time — a new owner engages only once
//! the old one has torn the cluster down and released it, or its fence has expired.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube_client::Api;
use kube_client::api::{DeleteParams, ListParams, PostParams};
use parking_lot::Mutex;

use crate::name::ClusterName;

/// The label every Lease of a fleet ring carries, valued with the ring's name.
pub const FLEET_RING_LABEL: &str = "fleet.rein.dev/ring";
/// The label that tells a ring's peer Leases (`peer`) from its fence Leases (`fence`).
pub const FLEET_LEASE_ROLE_LABEL: &str = "fleet.rein.dev/role";
/// The annotation on a fence Lease naming the cluster it fences (`(hub)` for the hub).
pub const FLEET_CLUSTER_ANNOTATION: &str = "fleet.rein.dev/cluster";

/// Spreads a fleet's clusters across replicas of the hub's manager (as multicluster-runtime's
/// sharding coordinator does): with it the fleet runs on every replica instead of the leader only;
/// each replica engages the members the ring assigns it, and the hub's own reconciles
/// (requests for the hub cluster) run on the replica the ring assigns the hub. Watches in the
/// hub that map to members run on every replica, each feeding the members it engaged.
///
/// A replica's peer Lease `<ring>-peer-<id>` is renewed every `renew_interval` and deleted on
/// a graceful stop; a peer is live while its Lease was renewed within `lease_duration`. A
/// cluster changes owner when peers come or go; the new owner engages it only after taking
/// its fence Lease `<ring>-fence-<hash>`, which the old owner releases once the cluster's
/// reconciles have finished and its caches stopped (or which expires `lease_duration` after
/// the old owner's last renewal), so no cluster is reconciled by two replicas at once.
#[derive(Debug, Clone)]
pub struct FleetSharding {
    /// The ring's name: the Leases' label value and name prefix (a DNS label).
    pub ring: String,
    /// The hub namespace the Leases live in (default `default`).
    pub namespace: String,
    /// This replica's id (default: `HOSTNAME`, else `fleet-<pid>`); unique among replicas.
    pub peer_id: String,
    /// How long a peer or fence Lease stays valid without renewal (default 15 s).
    pub lease_duration: Duration,
    /// How often Leases are renewed and ownership is recomputed (default 2 s).
    pub renew_interval: Duration,
}

impl FleetSharding {
    /// A ring named `ring` with the defaults.
    pub fn new(ring: impl Into<String>) -> Self {
        let peer_id = std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| format!("fleet-{}", std::process::id()));
        FleetSharding {
            ring: ring.into(),
            namespace: "default".to_owned(),
            peer_id,
            lease_duration: Duration::from_secs(15),
            renew_interval: Duration::from_secs(2),
        }
    }

    /// Sets the namespace of the Leases.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Sets this replica's id.
    pub fn peer_id(mut self, id: impl Into<String>) -> Self {
        self.peer_id = id.into();
        self
    }

    /// Sets the Lease duration and renew interval.
    pub fn timing(mut self, lease_duration: Duration, renew_interval: Duration) -> Self {
        self.lease_duration = lease_duration;
        self.renew_interval = renew_interval;
        self
    }

    /// The problem with these settings, if any.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        let dns_label = |s: &str| {
            !s.is_empty()
                && s.len() <= 40
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !s.starts_with('-')
                && !s.ends_with('-')
        };
        if !dns_label(&self.ring) {
            return Err(
                "FleetSharding::ring must be a lowercase DNS label of at most 40 characters",
            );
        }
        if !dns_label(&self.peer_id) {
            return Err(
                "FleetSharding::peer_id must be a lowercase DNS label of at most 40 characters",
            );
        }
        if self.namespace.is_empty() {
            return Err("FleetSharding::namespace must not be empty");
        }
        if self.renew_interval.is_zero() || self.lease_duration <= self.renew_interval * 2 {
            return Err(
                "FleetSharding::lease_duration must be more than twice renew_interval (not zero)",
            );
        }
        Ok(())
    }
}

/// The key a cluster is hashed by in the ring.
fn ring_key(cluster: &ClusterName) -> String {
    if cluster.is_hub() {
        "hub".to_owned()
    } else {
        format!("member/{cluster}")
    }
}

/// One replica's side of the ring: its peer Lease, the live peers, the fences.
pub(crate) struct Shards {
    settings: FleetSharding,
    leases: Api<Lease>,
    /// When this replica's own peer Lease was last renewed.
    renewed: Mutex<Option<Instant>>,
    /// The live peers as last computed (this replica included while its Lease is fresh).
    live: Mutex<BTreeSet<String>>,
}

impl Shards {
    pub(crate) fn new(settings: FleetSharding, hub: kube_client::Client) -> Shards {
        let leases = Api::namespaced(hub, &settings.namespace);
        Shards {
            settings,
            leases,
            renewed: Mutex::new(None),
            live: Mutex::new(BTreeSet::new()),
        }
    }

    pub(crate) fn renew_interval(&self) -> Duration {
        self.settings.renew_interval
    }

    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.settings.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    fn peer_lease_name(&self) -> String {
        format!("{}-peer-{}", self.settings.ring, self.settings.peer_id)
    }

    fn fence_name(&self, cluster: &ClusterName) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, ring_key(cluster).as_bytes());
        let hex: String = digest.as_ref()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{}-fence-{hex}", self.settings.ring)
    }

    fn labels(&self, role: &str) -> std::collections::BTreeMap<String, String> {
        [
            (FLEET_RING_LABEL.to_owned(), self.settings.ring.clone()),
            (FLEET_LEASE_ROLE_LABEL.to_owned(), role.to_owned()),
        ]
        .into()
    }

    /// Whether a Lease renewed at `renew` for `seconds` is still valid now.
    fn fresh(renew: Option<&MicroTime>, seconds: Option<i32>) -> bool {
        let (Some(renew), Some(seconds)) = (renew, seconds) else {
            return false;
        };
        renew.0 + SignedDuration::from_secs(i64::from(seconds)) > Timestamp::now()
    }

    /// Renews this replica's peer Lease (creating it), then recomputes the live peers.
    /// While the own Lease has not been renewed within the Lease duration, no peer counts
    /// as live here, so this replica owns nothing.
    pub(crate) async fn refresh(&self) {
        let name = self.peer_lease_name();
        let now = Some(MicroTime(Timestamp::now()));
        let renewed = match self.leases.get_opt(&name).await {
            Ok(Some(mut lease)) => {
                let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
                spec.holder_identity = Some(self.settings.peer_id.clone());
                spec.lease_duration_seconds = Some(self.lease_seconds());
                spec.renew_time = now;
                self.leases
                    .replace(&name, &PostParams::default(), &lease)
                    .await
                    .map(drop)
            }
            Ok(None) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        labels: Some(self.labels("peer")),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(self.settings.peer_id.clone()),
                        lease_duration_seconds: Some(self.lease_seconds()),
                        acquire_time: now.clone(),
                        renew_time: now,
                        ..LeaseSpec::default()
                    }),
                };
                self.leases
                    .create(&PostParams::default(), &lease)
                    .await
                    .map(drop)
            }
            Err(err) => Err(err),
        };
        match renewed {
            Ok(()) => *self.renewed.lock() = Some(Instant::now()),
            Err(err) => {
                tracing::warn!(lease = %name, error = %err, "renewing the fleet peer Lease failed")
            }
        }
        let own_fresh = self
            .renewed
            .lock()
            .is_some_and(|at| at.elapsed() < self.settings.lease_duration);
        if !own_fresh {
            self.live.lock().clear();
            return;
        }
        let selector = format!(
            "{FLEET_RING_LABEL}={},{FLEET_LEASE_ROLE_LABEL}=peer",
            self.settings.ring
        );
        match self
            .leases
            .list(&ListParams::default().labels(&selector))
            .await
        {
            Ok(list) => {
                let mut live: BTreeSet<String> = list
                    .items
                    .iter()
                    .filter_map(|lease| {
                        let spec = lease.spec.as_ref()?;
                        Self::fresh(spec.renew_time.as_ref(), spec.lease_duration_seconds)
                            .then(|| spec.holder_identity.clone())
                            .flatten()
                    })
                    .collect();
                live.insert(self.settings.peer_id.clone());
                *self.live.lock() = live;
            }
            Err(err) => {
                // Keep the last view: a failed list is no reason to move clusters.
                tracing::warn!(error = %err, "listing the fleet's peer Leases failed");
            }
        }
    }

    /// The live peers as last computed.
    pub(crate) fn live_peers(&self) -> Vec<String> {
        self.live.lock().iter().cloned().collect()
    }

    /// Whether the ring assigns `cluster` to this replica now.
    pub(crate) fn owns(&self, cluster: &ClusterName) -> bool {
        let live = self.live.lock();
        rein_sharding::assign(&ring_key(cluster), live.iter().map(String::as_str))
            == Some(self.settings.peer_id.as_str())
    }

    /// Takes (or renews) the fence of `cluster`: `true` when this replica holds it now.
    /// Fails (`false`) while another replica holds a fresh fence, or on a write conflict.
    pub(crate) async fn fence(&self, cluster: &ClusterName) -> bool {
        let name = self.fence_name(cluster);
        let me = self.settings.peer_id.clone();
        let now = Some(MicroTime(Timestamp::now()));
        let result = match self.leases.get_opt(&name).await {
            Ok(Some(mut lease)) => {
                let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
                let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
                let held_by_other = holder.as_ref().is_some_and(|h| *h != me)
                    && Self::fresh(spec.renew_time.as_ref(), spec.lease_duration_seconds);
                if held_by_other {
                    return false;
                }
                if holder.as_deref() != Some(me.as_str()) {
                    spec.acquire_time = now.clone();
                    spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
                }
                spec.holder_identity = Some(me);
                spec.lease_duration_seconds = Some(self.lease_seconds());
                spec.renew_time = now;
                // The resourceVersion read above makes this a compare-and-swap.
                self.leases
                    .replace(&name, &PostParams::default(), &lease)
                    .await
                    .map(drop)
            }
            Ok(None) => {
                let mut metadata = ObjectMeta {
                    name: Some(name.clone()),
                    labels: Some(self.labels("fence")),
                    ..ObjectMeta::default()
                };
                metadata.annotations =
                    Some([(FLEET_CLUSTER_ANNOTATION.to_owned(), cluster.to_string())].into());
                let lease = Lease {
                    metadata,
                    spec: Some(LeaseSpec {
                        holder_identity: Some(me),
                        lease_duration_seconds: Some(self.lease_seconds()),
                        acquire_time: now.clone(),
                        renew_time: now,
                        lease_transitions: Some(0),
                        ..LeaseSpec::default()
                    }),
                };
                self.leases
                    .create(&PostParams::default(), &lease)
                    .await
                    .map(drop)
            }
            Err(err) => Err(err),
        };
        match result {
            Ok(()) => true,
            Err(err) => {
                tracing::debug!(cluster = %cluster, error = %err, "taking the cluster's fence failed");
                false
            }
        }
    }

    /// Releases the fence of `cluster` if this replica holds it (clears the holder, so the
    /// next owner takes it at once).
    pub(crate) async fn release(&self, cluster: &ClusterName) {
        let name = self.fence_name(cluster);
        let Ok(Some(mut lease)) = self.leases.get_opt(&name).await else {
            return;
        };
        let Some(spec) = lease.spec.as_mut() else {
            return;
        };
        if spec.holder_identity.as_deref() != Some(self.settings.peer_id.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.renew_time = None;
        if let Err(err) = self
            .leases
            .replace(&name, &PostParams::default(), &lease)
            .await
        {
            tracing::warn!(cluster = %cluster, error = %err, "releasing the cluster's fence failed; it expires instead");
        }
    }

    /// Leaves the ring: deletes this replica's peer Lease, so the others take its clusters
    /// at their next renewal instead of after the Lease duration.
    pub(crate) async fn leave(&self) {
        let name = self.peer_lease_name();
        if let Err(err) = self.leases.delete(&name, &DeleteParams::default()).await {
            tracing::warn!(lease = %name, error = %err, "deleting the fleet peer Lease failed");
        }
        self.live.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked() {
        let good = FleetSharding::new("fleet").peer_id("replica-0");
        assert_eq!(good.check(), Ok(()));
        assert!(good.clone().peer_id("Replica_0").check().is_err());
        let mut bad_ring = good.clone();
        bad_ring.ring = "-x".to_owned();
        assert!(bad_ring.check().is_err());
        let tight = good
            .clone()
            .timing(Duration::from_secs(2), Duration::from_secs(1));
        assert!(tight.check().is_err());
        assert!(good.namespace("").check().is_err());
    }

    #[test]
    fn the_hub_and_members_hash_apart() {
        assert_eq!(ring_key(&ClusterName::hub()), "hub");
        assert_eq!(
            ring_key(&ClusterName::new("hub").expect("a name")),
            "member/hub"
        );
    }
}
