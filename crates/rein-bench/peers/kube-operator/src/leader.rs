//! Leader election on a `coordination.k8s.io/v1` Lease, written on kube-client's `Api<Lease>`
//! (kube-rs has none of its own): acquire when the Lease is free or expired, renew while
//! leading, release on a graceful shutdown.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube_client::api::{Api, PostParams};
use kube_client::{Client, Error};
use tokio::sync::watch;

/// How long a Lease is held without a renewal.
const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long the leader keeps trying to renew before it gives up leading.
const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// How often a candidate retries and the leader renews.
const RETRY_PERIOD: Duration = Duration::from_secs(2);

/// One replica's candidacy for the Lease `name`.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    leases: Api<Lease>,
    name: String,
    identity: String,
}

impl LeaderElection {
    /// A candidacy for the Lease `name` in `namespace`, as `identity`.
    pub fn new(client: Client, namespace: &str, name: &str, identity: String) -> Self {
        LeaderElection {
            leases: Api::namespaced(client, namespace),
            name: name.to_owned(),
            identity,
        }
    }

    /// Waits until this replica holds the Lease: true, or false if `shutdown` came first.
    pub async fn acquire(&self, shutdown: &mut watch::Receiver<bool>) -> bool {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => {
                    tracing::info!(lease = %self.name, identity = %self.identity, "became the leader");
                    return true;
                }
                Ok(false) => {}
                Err(error) => tracing::warn!(%error, lease = %self.name, "acquiring the Lease"),
            }
            tokio::select! {
                _ = tokio::time::sleep(RETRY_PERIOD) => {}
                _ = shutdown.wait_for(|stop| *stop) => return false,
            }
        }
    }

    /// Renews the Lease every retry period until `shutdown` (answers true) or until no renewal
    /// succeeded for the renew deadline (answers false: leadership is lost).
    pub async fn hold(&self, shutdown: &mut watch::Receiver<bool>) -> bool {
        let mut last_renewed = tokio::time::Instant::now();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(RETRY_PERIOD) => {}
                _ = shutdown.wait_for(|stop| *stop) => return true,
            }
            match self.try_acquire_or_renew().await {
                Ok(true) => last_renewed = tokio::time::Instant::now(),
                Ok(false) => return false,
                Err(error) => tracing::warn!(%error, lease = %self.name, "renewing the Lease"),
            }
            if last_renewed.elapsed() > RENEW_DEADLINE {
                return false;
            }
        }
    }

    /// Gives the Lease up, so another replica takes over at once.
    pub async fn release(&self) {
        let result = async {
            let Some(mut lease) = self.leases.get_opt(&self.name).await? else {
                return Ok(());
            };
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
                return Ok(());
            }
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
            spec.renew_time = Some(MicroTime(Timestamp::now()));
            self.leases
                .replace(&self.name, &PostParams::default(), &lease)
                .await
                .map(|_| ())
        }
        .await;
        match result {
            Ok(()) => tracing::info!(lease = %self.name, "released the Lease"),
            Err(error) => tracing::warn!(%error, lease = %self.name, "releasing the Lease"),
        }
    }

    /// One attempt: true if this replica holds the Lease afterwards.
    async fn try_acquire_or_renew(&self) -> Result<bool, Error> {
        let now = Timestamp::now();
        let duration_seconds = LEASE_DURATION.as_secs() as i32;
        let Some(mut lease) = self.leases.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(duration_seconds),
                    acquire_time: Some(MicroTime(now)),
                    renew_time: Some(MicroTime(now)),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.leases.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(Error::Api(status)) if status.is_already_exists() => Ok(false),
                Err(error) => Err(error),
            };
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let mine = holder == self.identity;
        if !mine && !holder.is_empty() && !expired(spec, now) {
            return Ok(false);
        }
        if !mine {
            spec.holder_identity = Some(self.identity.clone());
            spec.acquire_time = Some(MicroTime(now));
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.lease_duration_seconds = Some(duration_seconds);
        spec.renew_time = Some(MicroTime(now));
        // The resourceVersion read above makes this a compare-and-swap.
        match self
            .leases
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(Error::Api(status)) if status.is_conflict() => Ok(false),
            Err(error) => Err(error),
        }
    }
}

/// Whether the holder's last renewal is older than its lease duration.
fn expired(spec: &LeaseSpec, now: Timestamp) -> bool {
    let Some(MicroTime(renewed)) = spec.renew_time else {
        return true;
    };
    let duration = SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(0)));
    renewed
        .checked_add(duration)
        .map_or(true, |until| until < now)
}
