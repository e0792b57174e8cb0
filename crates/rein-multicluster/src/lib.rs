//! Fleets: one manager that reconciles across many clusters, engaged and disengaged at run
//! time (kubernetes-sigs/multicluster-runtime's role for rein).
//!
//! `rein-multicluster` sits above `rein-manager`: the hub is a rein [`Manager`](rein_manager::Manager)'s
//! own cluster, and the [`Fleet`] runs as one of its leader-only runnables (so with leader
//! election only the leader engages members). A [`Provider`] reports member clusters as they
//! appear and go — a [`StaticProvider`] list, kubeconfig files in a directory
//! ([`KubeconfigDirProvider`]), labelled kubeconfig Secrets in the hub
//! ([`KubeconfigSecretProvider`]) or Cluster API `Cluster`s ([`ClusterApiProvider`]). Each
//! engaged member gets its own [`Cluster`]: a kube client with its own rate limit and
//! timeouts, a rein-client cache (rein-informer's shared informers) and cache-backed client,
//! and a health probe (`rein_multicluster_cluster_healthy{cluster}`,
//! [`Fleet::readiness_checker`]).
//!
//! A fleet controller ([`FleetControllerBuilder`]) runs one rein-controller `Controller` per
//! cluster, so each cluster has its own queue, backoff and workers and an unreachable
//! member stalls only its own requests. Sources are engaged per source ([`On::members`],
//! [`On::hub`], [`On::everywhere`]); the reconciler gets a [`ClusterRequest`] (cluster,
//! namespace, name) and a [`ClusterContext`] with that cluster's client and the hub's;
//! [`MapToClusters`] maps events in one cluster to requests in others (hub → members). A
//! disengaged member's queued requests are dropped at once, then its controllers, watches and
//! caches stop.
//!
//! ```
//! use std::time::Duration;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use rein_controller::Action;
//! use rein_manager::{CancellationToken, Manager};
//! use rein_multicluster::{
//!     ClusterName, Fleet, FleetControllerBuilder, MapToClusters, On, StaticProvider,
//!     cluster_reconciler_fn,
//! };
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Embedded API servers stand in for the hub and one member.
//! let hub = rein_testenv::TestEnv::start().await?;
//! let member = rein_testenv::TestEnv::start().await?;
//! let mgr = Manager::builder(hub.config()).build().await?;
//! let name = ClusterName::new("member-1")?;
//! let fleet = Fleet::builder(&mgr, StaticProvider::new().cluster(name.clone(), member.config()))
//!     .build()?;
//!
//! // Copy every hub ConfigMap named "settings" into each member.
//! FleetControllerBuilder::new(&fleet)
//!     .named("settings")
//!     .watches_across::<ConfigMap>(
//!         On::hub(),
//!         MapToClusters::to_every_member(|cm: &ConfigMap| {
//!             (cm.metadata.name.as_deref() == Some("settings"))
//!                 .then(|| rein_controller::Request::from_object(cm))
//!                 .into_iter()
//!                 .collect()
//!         }),
//!     )
//!     .complete(cluster_reconciler_fn(|ctx, req| async move {
//!         let source = ctx.hub_client().get::<ConfigMap>(&req.key).await?;
//!         let mut copy = ConfigMap { data: source.data.clone(), ..Default::default() };
//!         copy.metadata.name = Some(req.name().to_owned());
//!         copy.metadata.namespace = req.namespace().map(str::to_owned);
//!         match ctx.client().create(&copy, &Default::default()).await {
//!             Err(e) if !e.is_already_exists() => Err(e),
//!             _ => Ok(Action::done()),
//!         }
//!     }))?;
//!
//! let stop = CancellationToken::new();
//! let run = tokio::spawn({
//!     let (mgr, stop) = (mgr.clone(), stop.clone());
//!     async move { mgr.start(stop).await }
//! });
//! let hub_client = rein_client::Client::new(hub.client());
//! let mut settings = ConfigMap::default();
//! settings.metadata.name = Some("settings".into());
//! settings.metadata.namespace = Some("default".into());
//! hub_client.create(&settings, &Default::default()).await?;
//!
//! let member_client = rein_client::Client::new(member.client());
//! let key = rein_scheme::ObjectKey::new("default", "settings");
//! let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
//! while member_client.get::<ConfigMap>(&key).await.is_err() {
//!     assert!(tokio::time::Instant::now() < deadline, "not propagated");
//!     tokio::time::sleep(Duration::from_millis(20)).await;
//! }
//! stop.cancel();
//! run.await??;
//! # Ok(()) }
//! ```

mod builder;
mod error;
mod fleet;
mod handler;
pub mod metrics;
mod name;
mod provider;
mod request;

pub use builder::{Engage, FleetControllerBuilder, On};
pub use error::{Error, ProviderError};
pub use fleet::{
    Cluster, ClusterOptions, FLEET_CLUSTER_ANNOTATION, FLEET_LEASE_ROLE_LABEL, FLEET_RING_LABEL,
    Fleet, FleetBuilder, FleetOptions, FleetReadiness, FleetSharding, Health,
};
pub use handler::{FleetQueue, MapToClusters};
pub use name::{ClusterName, InvalidClusterName};
pub use provider::{
    CLUSTER_API_KUBECONFIG_KEY, ClusterApiProvider, ClusterSink, DEFAULT_KUBECONFIG_KEY,
    DEFAULT_KUBECONFIG_LABEL, KubeconfigDirProvider, KubeconfigSecretProvider, Provider,
    ProviderContext, ProviderEvent, StaticProvider, config_from_kubeconfig,
};
pub use request::{
    ClusterContext, ClusterReconciler, ClusterReconcilerFn, ClusterRequest, cluster_reconciler_fn,
};
