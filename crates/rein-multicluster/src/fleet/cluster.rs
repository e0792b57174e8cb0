//! `Cluster`: one engaged cluster's client, cache and health, as reconcilers and users see it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rein_client::Client;
use rein_client::cache::Cache;
use tokio::time::Instant;

use crate::metrics;
use crate::name::ClusterName;

/// What the fleet last learned of a cluster's API server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Not probed yet.
    Unknown,
    /// The last probe was answered.
    Healthy,
    /// The last probe failed or timed out; the cluster's controllers keep retrying, the
    /// other clusters are not affected.
    Unreachable {
        /// When probes started failing.
        since: Instant,
        /// The last probe's error.
        error: String,
    },
}

impl Health {
    /// Whether the last probe was answered.
    pub fn is_healthy(&self) -> bool {
        matches!(self, Health::Healthy)
    }
}

/// One engaged cluster (the hub or a member): its own kube client (rate limits, timeouts),
/// cache (informers shared by every fleet controller's sources in that cluster) and
/// cache-backed client (reading its own writes). A cheap `Clone` handle; a handle kept after
/// the cluster was disengaged refers to stopped caches.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    name: ClusterName,
    kube: kube_client::Client,
    cache: Cache,
    client: Client,
    health: Mutex<Health>,
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("name", &self.inner.name)
            .field("health", &*self.inner.health.lock())
            .finish_non_exhaustive()
    }
}

impl Cluster {
    pub(crate) fn new(
        name: ClusterName,
        kube: kube_client::Client,
        cache: Cache,
        client: Client,
    ) -> Self {
        Cluster {
            inner: Arc::new(Inner {
                name,
                kube,
                cache,
                client,
                health: Mutex::new(Health::Unknown),
            }),
        }
    }

    /// The cluster's name.
    pub fn name(&self) -> &ClusterName {
        &self.inner.name
    }

    /// The cluster's cache-backed client.
    pub fn client(&self) -> Client {
        self.inner.client.clone()
    }

    /// The cluster's informer cache.
    pub fn cache(&self) -> Cache {
        self.inner.cache.clone()
    }

    /// The cluster's kube client.
    pub fn kube_client(&self) -> kube_client::Client {
        self.inner.kube.clone()
    }

    /// What the last health probe found.
    pub fn health(&self) -> Health {
        self.inner.health.lock().clone()
    }

    /// Probes the API server once (`/version`, bounded by `timeout`) and records the outcome.
    pub(crate) async fn probe(&self, timeout: Duration) {
        let outcome = match tokio::time::timeout(timeout, self.inner.kube.apiserver_version()).await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(err)) => Err(err.to_string()),
            Err(_) => Err(format!("no answer within {timeout:?}")),
        };
        let healthy = outcome.is_ok();
        let was_unreachable = {
            let mut health = self.inner.health.lock();
            let was = matches!(*health, Health::Unreachable { .. });
            *health = match (outcome, &*health) {
                (Ok(()), _) => Health::Healthy,
                (Err(error), Health::Unreachable { since, .. }) => Health::Unreachable {
                    since: *since,
                    error,
                },
                (Err(error), _) => Health::Unreachable {
                    since: Instant::now(),
                    error,
                },
            };
            was
        };
        if !self.inner.name.is_hub() {
            metrics::set_healthy(&self.inner.name, healthy);
        }
        match (self.health(), was_unreachable) {
            (Health::Unreachable { error, .. }, false) => {
                tracing::warn!(cluster = %self.inner.name, %error, "cluster unreachable")
            }
            (Health::Healthy, true) => {
                tracing::info!(cluster = %self.inner.name, "cluster reachable again")
            }
            _ => {}
        }
    }
}
