//! Providers: where a fleet's member clusters come from (multicluster-runtime's
//! `multicluster.Provider`). A [`Provider`] runs for as long as the fleet does and reports
//! clusters appearing, changing and disappearing through a [`ClusterSink`].

mod cluster_api;
mod directory;
mod secrets;
mod static_list;

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use async_trait::async_trait;
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use rein_scheme::Scheme;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::ProviderError;
use crate::name::ClusterName;

pub use cluster_api::{CLUSTER_API_KUBECONFIG_KEY, ClusterApiProvider};
pub use directory::KubeconfigDirProvider;
pub use secrets::{DEFAULT_KUBECONFIG_KEY, DEFAULT_KUBECONFIG_LABEL, KubeconfigSecretProvider};
pub use static_list::StaticProvider;

/// One change in the set of member clusters, from a provider to its fleet.
#[derive(Debug)]
pub enum ProviderEvent {
    /// `name` appeared, or its client config changed: the fleet engages it (tearing down
    /// what it ran for the old config first).
    Engage {
        /// The cluster.
        name: ClusterName,
        /// How to reach it.
        config: Box<kube_client::Config>,
    },
    /// `name` went away: the fleet tears down its caches, watches and queued requests.
    Disengage {
        /// The cluster.
        name: ClusterName,
    },
}

/// Where a provider reports clusters; cheap to clone. Reports after the fleet stopped are
/// dropped (the methods then return `false`).
#[derive(Debug, Clone)]
pub struct ClusterSink {
    tx: mpsc::UnboundedSender<ProviderEvent>,
}

impl ClusterSink {
    pub(crate) fn new() -> (ClusterSink, mpsc::UnboundedReceiver<ProviderEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (ClusterSink { tx }, rx)
    }

    /// Reports that `name` is reachable with `config` (new, or changed).
    pub fn engage(&self, name: ClusterName, config: kube_client::Config) -> bool {
        self.tx
            .send(ProviderEvent::Engage {
                name,
                config: Box::new(config),
            })
            .is_ok()
    }

    /// Reports that `name` is gone.
    pub fn disengage(&self, name: ClusterName) -> bool {
        self.tx.send(ProviderEvent::Disengage { name }).is_ok()
    }
}

/// What a provider may use of the hub: its kube client (rein's layers: timeouts, retries,
/// metrics) and scheme, e.g. to watch Secrets or Cluster API objects there.
#[derive(Clone)]
pub struct ProviderContext {
    pub(crate) kube: kube_client::Client,
    pub(crate) scheme: Arc<Scheme>,
}

impl fmt::Debug for ProviderContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderContext").finish_non_exhaustive()
    }
}

impl ProviderContext {
    /// A context over the hub's kube client and scheme.
    pub fn new(kube: kube_client::Client, scheme: Arc<Scheme>) -> Self {
        ProviderContext { kube, scheme }
    }

    /// The hub's kube client.
    pub fn hub_kube_client(&self) -> &kube_client::Client {
        &self.kube
    }

    /// The scheme.
    pub fn scheme(&self) -> &Arc<Scheme> {
        &self.scheme
    }
}

/// Discovers member clusters. `run` reports every cluster it knows through `clusters`, then
/// keeps following changes until `stop` is cancelled. An error ends the provider (the fleet
/// logs it and keeps the clusters it has); a provider should rather log a bad entry (an
/// unparsable kubeconfig) and go on.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// Runs until `stop`, reporting clusters to `clusters`.
    async fn run(
        &self,
        ctx: ProviderContext,
        clusters: ClusterSink,
        stop: CancellationToken,
    ) -> Result<(), ProviderError>;

    /// A short description for logs, e.g. `kubeconfig files in /etc/fleet`.
    fn describe(&self) -> String;
}

#[async_trait]
impl<P: Provider + ?Sized> Provider for Arc<P> {
    async fn run(
        &self,
        ctx: ProviderContext,
        clusters: ClusterSink,
        stop: CancellationToken,
    ) -> Result<(), ProviderError> {
        (**self).run(ctx, clusters, stop).await
    }

    fn describe(&self) -> String {
        (**self).describe()
    }
}

/// Parses a kubeconfig (YAML or JSON) into a client config for its current context.
/// `origin` names where it came from, for the error.
pub async fn config_from_kubeconfig(
    origin: &str,
    text: &str,
) -> Result<kube_client::Config, ProviderError> {
    let bad = |source| ProviderError::Kubeconfig {
        origin: origin.to_owned(),
        source,
    };
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(bad)?;
    kube_client::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(bad)
}

/// A fingerprint of a kubeconfig's bytes, so providers report a cluster again only when its
/// kubeconfig changed.
pub(crate) fn fingerprint(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}
