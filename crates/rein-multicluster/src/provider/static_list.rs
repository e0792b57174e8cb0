//! `StaticProvider`: a fixed list of clusters, engaged when the fleet starts.

use std::fmt;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{ClusterSink, Provider, ProviderContext};
use crate::error::ProviderError;
use crate::name::ClusterName;

/// A fixed list of member clusters (multicluster-runtime's `clusters` provider for tests and
/// small fleets): each is engaged when the fleet starts and stays until it stops.
#[derive(Clone, Default)]
pub struct StaticProvider {
    clusters: Vec<(ClusterName, kube_client::Config)>,
}

impl fmt::Debug for StaticProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.clusters.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("StaticProvider")
            .field("clusters", &names)
            .finish()
    }
}

impl StaticProvider {
    /// No clusters yet; add them with [`StaticProvider::cluster`].
    pub fn new() -> Self {
        StaticProvider::default()
    }

    /// Adds `name`, reached with `config`.
    pub fn cluster(mut self, name: ClusterName, config: kube_client::Config) -> Self {
        self.clusters.retain(|(n, _)| *n != name);
        self.clusters.push((name, config));
        self
    }
}

#[async_trait]
impl Provider for StaticProvider {
    async fn run(
        &self,
        _ctx: ProviderContext,
        clusters: ClusterSink,
        stop: CancellationToken,
    ) -> Result<(), ProviderError> {
        for (name, config) in &self.clusters {
            clusters.engage(name.clone(), config.clone());
        }
        stop.cancelled().await;
        Ok(())
    }

    fn describe(&self) -> String {
        format!("{} static clusters", self.clusters.len())
    }
}
