//! The `Manager`: shared cache and client, runnables, leader election, probes and metrics
//! (controller-runtime's `pkg/manager`).

mod error;
mod group;
mod leader_metrics;
mod options;
mod runnable_fn;
mod start;
#[cfg(test)]
mod tests;

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use rein_client::Client;
use rein_client::cache::Cache;
use rein_controller::recorder::{EventRecorder, RecorderOptions, RecorderProvider};
use rein_controller::{BoxError, BoxReconciler, box_reconciler};
use rein_controller::{ControllerHost, Reconciler, Runnable};
use rein_scheme::{GroupVersionKind, Scheme};
use tokio_util::sync::CancellationToken;

pub use error::Error;
pub use options::{LeaderElectionOptions, Options};
pub use runnable_fn::RunnableFn;

use crate::healthz::{self, Checker, HealthProbes};
use crate::sharding::{ShardedReconciler, Sharding};
use crate::webhook::WebhookServer;
use group::Group;

/// controller-runtime's manager: owns the shared cache and client, and runs every
/// [`Runnable`] — caches first, then servers, then (once the caches have synced and, with
/// leader election, once this process leads) the controllers. A cheap `Clone` handle.
///
/// Controllers are added with [`Manager::add`] or the builder
/// (`rein_controller::ControllerManagedBy::new(&manager)`), which uses the
/// [`ControllerHost`] implementation.
#[derive(Clone)]
pub struct Manager {
    inner: Arc<Inner>,
}

struct Inner {
    config: kube_client::Config,
    kube: kube_client::Client,
    scheme: Arc<Scheme>,
    cache: Cache,
    client: Client,
    options: Options,
    state: Mutex<State>,
    /// Cancelled once leader-only runnables may run (elected, or no election configured).
    elected: CancellationToken,
    caches_synced: Arc<AtomicBool>,
    probes: HealthProbes,
    addresses: Mutex<Addresses>,
    webhook: Option<Arc<WebhookServer>>,
    sharding: Option<Sharding>,
    /// The names of this manager's controllers (unique among them).
    controller_names: rein_controller::ControllerNames,
    /// The probe and metrics servers, bound by `build`, taken by `start`.
    bound_servers: Mutex<Vec<Arc<dyn Runnable>>>,
    /// Makes every recorder the manager hands out; stopped (flushed) last when it stops.
    recorders: RecorderProvider,
}

/// Where the servers listen, known once they are bound.
#[derive(Debug, Default, Clone, Copy)]
struct Addresses {
    health_probes: Option<SocketAddr>,
    metrics: Option<SocketAddr>,
}

/// The groups users add to; servers and caches are the manager's own.
struct State {
    started: bool,
    others: Group,
    leader: Group,
    /// The warm-up of the leader-only runnables (with leader election).
    warmup: Group,
}

/// A leader-only runnable's [`Runnable::warm_up`] as a runnable of the warm-up group: what it
/// starts runs until the group stops.
struct WarmUp(Arc<dyn Runnable>);

#[async_trait::async_trait]
impl Runnable for WarmUp {
    async fn start(&self, stop: CancellationToken) -> Result<(), BoxError> {
        self.0.warm_up(stop).await
    }

    fn needs_leader_election(&self) -> bool {
        false
    }
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("cluster_url", &self.inner.config.cluster_url)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A builder from a client config (see [`crate::config::get_config`]).
    pub fn builder(config: kube_client::Config) -> ManagerBuilder {
        ManagerBuilder {
            config,
            options: Options::default(),
            kube: None,
        }
    }

    /// The client config the manager was built from.
    pub fn config(&self) -> &kube_client::Config {
        &self.inner.config
    }

    /// The underlying kube-client.
    pub fn kube_client(&self) -> kube_client::Client {
        self.inner.kube.clone()
    }

    /// The cache-backed client: reads from the shared cache (uncached kinds from the server),
    /// writes to the server.
    pub fn client(&self) -> Client {
        self.inner.client.clone()
    }

    /// A client whose reads always go to the API server (controller-runtime `GetAPIReader`).
    pub fn api_reader(&self) -> Client {
        self.inner.client.api_reader()
    }

    /// The shared informer cache (`informer_for::<K>()`, `index_field`, ...).
    pub fn cache(&self) -> Cache {
        self.inner.cache.clone()
    }

    /// The scheme.
    pub fn scheme(&self) -> Arc<Scheme> {
        self.inner.scheme.clone()
    }

    /// An event recorder writing Events as `name` (controller-runtime `GetEventRecorderFor`):
    /// events.k8s.io/v1 when the server serves it, else core/v1. Recording never blocks;
    /// repeats are aggregated and rate limited; events recorded inside a reconcile carry its id.
    /// When the manager stops, after its runnables and leader election, every recorder it
    /// made writes what it still holds (within the graceful-shutdown timeout) before `start`
    /// returns; events recorded after that are dropped with a log line.
    pub fn event_recorder(&self, name: impl Into<String>) -> EventRecorder {
        self.inner
            .recorders
            .recorder(name, RecorderOptions::default())
    }

    /// The options the manager was built with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// Adds a runnable. Leader-only runnables ([`Runnable::needs_leader_election`]) start once
    /// this process leads (at once without leader election); the others start after the caches
    /// synced. Added while running, it starts at once if its group runs.
    ///
    /// With leader election, leader-only runnables are also warmed up
    /// ([`Runnable::warm_up`]) on every replica once the caches synced, before the election:
    /// a controller with `enable_warmup` starts its sources then, so a standby's caches are
    /// synced when it takes over (controller-runtime's warm-up).
    pub fn add(&self, runnable: Arc<dyn Runnable>) -> Result<(), Error> {
        let mut state = self.inner.state.lock();
        let added = if runnable.needs_leader_election() {
            let warm = self.inner.options.leader_election.is_some();
            let warm_up = warm.then(|| Arc::new(WarmUp(runnable.clone())) as Arc<dyn Runnable>);
            state.leader.add(runnable) && warm_up.is_none_or(|w| state.warmup.add(w))
        } else {
            state.others.add(runnable)
        };
        if added { Ok(()) } else { Err(Error::Stopping) }
    }

    /// Resolves once leader-only runnables may run: this process won the election, or leader
    /// election is off and the manager started them (controller-runtime `Elected()`).
    pub async fn elected(&self) {
        self.inner.elected.cancelled().await;
    }

    /// Adds a liveness check served under `/healthz` (before `start`).
    pub fn add_healthz_check(
        &self,
        name: impl Into<String>,
        checker: impl Checker,
    ) -> Result<(), healthz::Error> {
        self.inner.probes.add_healthz_check(name, checker)
    }

    /// Adds a readiness check served under `/readyz` (before `start`).
    pub fn add_readyz_check(
        &self,
        name: impl Into<String>,
        checker: impl Checker,
    ) -> Result<(), healthz::Error> {
        self.inner.probes.add_readyz_check(name, checker)
    }

    /// The admission webhook server, when [`Options::webhook`] enables it: register
    /// defaulters and validators here (before or after `start`). It is bound at build time
    /// and serves once the manager starts.
    pub fn webhook_server(&self) -> Option<Arc<WebhookServer>> {
        self.inner.webhook.clone()
    }

    /// The API permissions this manager needs, derived from what its setup declared so far
    /// (see [`rbac`](crate::rbac) for what each declaration needs): the kinds its
    /// controllers reconcile, own and watch, Events if it made a recorder, leader election
    /// and shard Leases in their namespace, and the reviews of secure metrics serving. Call it
    /// after the controllers are set up; a manager built only to ask it need never start
    /// (see [`config::unreachable`](crate::config::unreachable)). Add what reconcilers read
    /// or write beyond their declared kinds with [`Permissions::allow`](crate::rbac::Permissions::allow).
    pub fn permissions(&self) -> crate::rbac::Permissions {
        let mut permissions = crate::rbac::Permissions::default();
        for kind in self.inner.controller_names.declared_kinds() {
            permissions.declared(&kind);
        }
        if self.inner.recorders.has_made_recorders() {
            permissions.records_events();
        }
        let options = &self.inner.options;
        if let Some(election) = &options.leader_election {
            permissions.elects_leader(election.namespace.as_deref());
        }
        if let Some(sharding) = &options.sharding {
            permissions.shards(sharding.namespace.as_deref());
        }
        if options.metrics.as_ref().is_some_and(|m| m.secure.is_some()) {
            permissions.reviews_scrapers();
        }
        permissions
    }

    /// The health-probe server's address (bound by `build`, so known before `start`).
    pub fn health_probe_address(&self) -> Option<SocketAddr> {
        self.inner.addresses.lock().health_probes
    }

    /// The metrics server's address (bound by `build`, so known before `start`).
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.inner.addresses.lock().metrics
    }

    /// This replica's part in the sharding ring, when [`Options::sharding`] turns it on.
    pub fn sharding(&self) -> Option<&Sharding> {
        self.inner.sharding.as_ref()
    }

    /// Wraps `reconciler` for the sharded kind `K` ([`Options::sharding`]): it reconciles
    /// only the objects the ring assigned to this replica, only while this replica is a
    /// member, and never an object being handed over. Give it to a controller for `K` whose
    /// options say `need_leader_election: false` (every replica runs it). The builder's
    /// `sharded()` does both for you; do not combine them.
    pub fn sharded<K: rein_scheme::Object, R: Reconciler>(
        &self,
        reconciler: R,
    ) -> Result<ShardedReconciler<K, R>, Error> {
        let sharding = self
            .inner
            .sharding
            .as_ref()
            .ok_or(Error::ShardingDisabled)?;
        sharding
            .reconciler::<K, R>(self.cache(), reconciler)
            .map_err(Error::Sharding)
    }

    /// Whether the caches have synced since `start`.
    pub fn caches_synced(&self) -> bool {
        self.inner.caches_synced.load(Ordering::SeqCst)
    }
}

impl ControllerHost for Manager {
    fn cache(&self) -> Cache {
        Manager::cache(self)
    }

    fn client(&self) -> Client {
        Manager::client(self)
    }

    fn scheme(&self) -> Arc<Scheme> {
        Manager::scheme(self)
    }

    fn add(&self, runnable: Arc<dyn Runnable>) -> Result<(), BoxError> {
        Manager::add(self, runnable).map_err(BoxError::from)
    }

    fn warm_up_controllers(&self) -> bool {
        self.inner.options.warm_up_controllers
    }

    fn controller_names(&self) -> Option<rein_controller::ControllerNames> {
        Some(self.inner.controller_names.clone())
    }

    fn is_sharded_kind(&self, kind: &GroupVersionKind) -> bool {
        self.inner
            .sharding
            .as_ref()
            .is_some_and(|s| s.shards_kind(kind))
    }

    fn shards_controllers_by_default(&self) -> bool {
        self.inner
            .sharding
            .as_ref()
            .is_some_and(|s| s.options().shard_controllers_by_default)
    }

    fn shard_reconciler(
        &self,
        kind: &GroupVersionKind,
        reconciler: BoxReconciler,
    ) -> Result<BoxReconciler, BoxError> {
        let sharding = self
            .inner
            .sharding
            .as_ref()
            .ok_or(Error::ShardingDisabled)?;
        let sharded = sharding
            .reconciler_for_kind(kind, self.cache(), reconciler)
            .map_err(Error::Sharding)?;
        Ok(box_reconciler(sharded))
    }
}

/// Builds a [`Manager`]: `Manager::builder(config).options(options).build().await`.
pub struct ManagerBuilder {
    config: kube_client::Config,
    options: Options,
    kube: Option<kube_client::Client>,
}

impl fmt::Debug for ManagerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagerBuilder")
            .field("cluster_url", &self.config.cluster_url)
            .field("options", &self.options)
            .field("own_kube_client", &self.kube.is_some())
            .finish()
    }
}

impl ManagerBuilder {
    /// Sets the options.
    pub fn options(mut self, options: Options) -> Self {
        self.options = options;
        self
    }

    /// Uses `client` for every request the manager makes (its client, cache and leader
    /// election) instead of building one from the config: for a client with tower layers of
    /// your own (tracing, auth, a proxy). Build it from `rein_client::kube_client` to keep
    /// rein's retry, limiter, timeouts and metrics, or from kube-client's `ClientBuilder` with
    /// the layers you choose; [`Options::request_timeouts`] and [`Options::rate_limit`] then do
    /// not apply, since they shape the client rein builds.
    pub fn kube_client(mut self, client: kube_client::Client) -> Self {
        self.kube = Some(client);
        self
    }

    /// Builds the client, the cache and the manager. Nothing runs until
    /// [`Manager::start`].
    pub async fn build(self) -> Result<Manager, Error> {
        let ManagerBuilder {
            config,
            options,
            kube,
        } = self;
        if let Some(le) = &options.leader_election {
            if le.id.is_empty() {
                return Err(Error::MissingLeaderElectionId);
            }
            le.config.validate().map_err(Error::LeaderElection)?;
            if le.namespace.is_none() && crate::config::in_cluster_namespace().is_none() {
                return Err(Error::MissingLeaderElectionNamespace);
            }
        }
        let webhook = match &options.webhook {
            Some(webhook_options) => Some(Arc::new(
                WebhookServer::bind(webhook_options.clone())
                    .await
                    .map_err(|source| Error::Server {
                        server: "webhook",
                        source: source.into(),
                    })?,
            )),
            None => None,
        };
        let kube = match kube {
            Some(kube) => kube,
            None => rein_client::kube_client(
                config.clone(),
                rein_client::KubeClientOptions {
                    timeouts: options.request_timeouts,
                    rate_limit: options.rate_limit,
                },
            )
            .map_err(Error::Client)?,
        };
        let scheme = options
            .scheme
            .clone()
            .unwrap_or_else(|| Arc::new(Scheme::with_builtins()));
        let sharding = match &options.sharding {
            Some(sharding_options) => {
                let mut sharding_options = sharding_options.clone();
                if sharding_options.namespace.is_none() {
                    sharding_options.namespace = Some(
                        crate::config::in_cluster_namespace()
                            .ok_or(Error::MissingShardingNamespace)?,
                    );
                }
                Some(Sharding::new(kube.clone(), sharding_options).map_err(Error::Sharding)?)
            }
            None => None,
        };
        let cache_options = match &sharding {
            Some(sharding) => sharding.cache_options(options.cache.clone()),
            None => options.cache.clone(),
        };
        let cache = Cache::new(kube.clone(), cache_options);
        let client = Client::builder(kube.clone())
            .scheme(scheme.clone())
            .cache(cache.clone())
            .options(options.client.clone())
            .build();
        let recorders = RecorderProvider::new(kube.clone());
        let manager = Manager {
            inner: Arc::new(Inner {
                config,
                kube,
                scheme,
                cache,
                client,
                options,
                state: Mutex::new(State {
                    started: false,
                    others: Group::new("others"),
                    leader: Group::new("leader-election"),
                    warmup: Group::new("warmup"),
                }),
                elected: CancellationToken::new(),
                caches_synced: Arc::new(AtomicBool::new(false)),
                probes: HealthProbes::new(),
                addresses: Mutex::new(Addresses::default()),
                webhook,
                sharding,
                controller_names: rein_controller::ControllerNames::new(),
                bound_servers: Mutex::new(Vec::new()),
                recorders,
            }),
        };
        manager.bind_servers().await?;
        Ok(manager)
    }
}
