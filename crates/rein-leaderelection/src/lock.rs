//! The `coordination.k8s.io/v1` Lease lock and the leader-election record it stores.

use std::collections::BTreeMap;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube_client::Api;
use kube_client::api::PostParams;
use parking_lot::Mutex;

use super::Error;

/// client-go's `LeaderElectionRecord`: who holds the lock and since when.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LeaderElectionRecord {
    /// The current holder; empty when released.
    pub holder_identity: String,
    /// How long the holder's claim lasts after each renewal, in seconds.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the lease.
    pub acquire_time: Option<MicroTime>,
    /// When the current holder last renewed the lease.
    pub renew_time: Option<MicroTime>,
    /// How many times the lease changed hands.
    pub leader_transitions: i32,
    /// Coordinated leader election strategy (alpha; carried through unchanged).
    pub strategy: Option<String>,
    /// Coordinated leader election preferred holder (alpha; carried through unchanged).
    pub preferred_holder: Option<String>,
}

impl LeaderElectionRecord {
    /// Reads a record from a Lease spec (`leaselock.go` `LeaseSpecToLeaderElectionRecord`).
    pub fn from_spec(spec: &LeaseSpec) -> Self {
        LeaderElectionRecord {
            holder_identity: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time.clone(),
            renew_time: spec.renew_time.clone(),
            leader_transitions: spec.lease_transitions.unwrap_or_default(),
            strategy: spec.strategy.clone(),
            preferred_holder: spec.preferred_holder.clone(),
        }
    }

    /// Writes a record as a Lease spec (`LeaderElectionRecordToLeaseSpec`).
    pub fn to_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder_identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.clone(),
            renew_time: self.renew_time.clone(),
            lease_transitions: Some(self.leader_transitions),
            strategy: self.strategy.clone(),
            preferred_holder: self.preferred_holder.clone(),
        }
    }

    /// The bytes compared to detect a change of the record (its JSON).
    pub(crate) fn raw(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_spec()).unwrap_or_default()
    }
}

/// A leader-election lock on one `coordination.k8s.io/v1` Lease.
///
/// Updates send the Lease last read or written, so its `resourceVersion` makes every write
/// optimistic: two candidates cannot both win the same round.
pub struct LeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    labels: BTreeMap<String, String>,
    cached: Mutex<Option<Lease>>,
}

impl std::fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseLock")
            .field("lease", &self.describe())
            .field("identity", &self.identity)
            .field("labels", &self.labels)
            .finish_non_exhaustive()
    }
}

impl LeaseLock {
    /// A lock on Lease `namespace/name`, held under `identity` (unique per candidate; see
    /// [`default_identity`](super::default_identity)).
    pub fn new(
        client: kube_client::Client,
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        let namespace = namespace.into();
        LeaseLock {
            api: Api::namespaced(client, &namespace),
            namespace,
            name: name.into(),
            identity: identity.into(),
            labels: BTreeMap::new(),
            cached: Mutex::new(None),
        }
    }

    /// Labels merged into the Lease on every write (client-go `NewWithLabels`).
    pub fn with_labels(mut self, labels: BTreeMap<String, String>) -> Self {
        self.labels = labels;
        self
    }

    /// The identity this candidate writes as holder.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// `namespace/name` of the Lease.
    pub fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Reads the record; `None` when the Lease does not exist.
    pub async fn get(&self) -> Result<Option<LeaderElectionRecord>, Error> {
        let lease = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|source| Error::Get {
                lease: self.describe(),
                source,
            })?;
        let record = lease
            .as_ref()
            .map(|l| LeaderElectionRecord::from_spec(&l.spec.clone().unwrap_or_default()));
        *self.cached.lock() = lease;
        Ok(record)
    }

    /// Creates the Lease holding `record`.
    pub async fn create(&self, record: &LeaderElectionRecord) -> Result<(), Error> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                labels: (!self.labels.is_empty()).then(|| self.labels.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(record.to_spec()),
        };
        let created = self
            .api
            .create(&PostParams::default(), &lease)
            .await
            .map_err(|source| Error::Create {
                lease: self.describe(),
                source,
            })?;
        *self.cached.lock() = Some(created);
        Ok(())
    }

    /// Replaces the record in the Lease last read or written (optimistic concurrency).
    pub async fn update(&self, record: &LeaderElectionRecord) -> Result<(), Error> {
        let Some(mut lease) = self.cached.lock().clone() else {
            return Err(Error::NotInitialized {
                lease: self.describe(),
            });
        };
        lease.spec = Some(record.to_spec());
        if !self.labels.is_empty() {
            let labels = lease.metadata.labels.get_or_insert_with(BTreeMap::new);
            for (key, value) in &self.labels {
                labels.insert(key.clone(), value.clone());
            }
        }
        let updated = self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
            .map_err(|source| Error::Update {
                lease: self.describe(),
                source,
            })?;
        *self.cached.lock() = Some(updated);
        Ok(())
    }
}
