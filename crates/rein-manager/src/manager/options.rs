//! `Options`: everything a [`Manager`](super::Manager) is built from besides its config.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rein_client::ClientOptions;
use rein_client::cache::CacheOptions;
use rein_client::limiter::RateLimitConfig;
use rein_client::timeout::RequestTimeouts;
use rein_scheme::Scheme;

use crate::healthz::HealthProbeOptions;
use crate::leaderelection::LeaderElectionConfig;
use crate::metrics::MetricsServerOptions;
use crate::sharding::ShardingOptions;
use crate::webhook::WebhookServerOptions;

/// How a manager is built (controller-runtime's `manager.Options`). Every field has a
/// sensible default; see each field.
#[derive(Debug, Clone)]
pub struct Options {
    /// The scheme (default: every built-in kind).
    pub scheme: Option<Arc<Scheme>>,
    /// The shared cache: namespace restriction, per-kind selectors, default transform
    /// (drops `managedFields`), resync period.
    pub cache: CacheOptions,
    /// The client: kinds read uncached, whether dynamic objects are cached, field owner.
    pub client: ClientOptions,
    /// Leader election for the leader-only runnables (default: off). Standby replicas warm
    /// those up ([`Runnable::warm_up`](rein_controller::Runnable::warm_up)): controllers with
    /// `enable_warmup` sync their sources before they lead.
    pub leader_election: Option<LeaderElectionOptions>,
    /// Turn `enable_warmup` on for every controller built on this manager with the builder
    /// (controller-runtime's `Controller.EnableWarmup` default; default: off, each
    /// controller's option decides). Only leader-elected controllers on a manager with leader
    /// election are warmed up.
    pub warm_up_controllers: bool,
    /// Serve `/healthz` and `/readyz` (default: off). `/readyz` includes a `cache-sync`
    /// check that fails until the caches have synced.
    pub health_probes: Option<HealthProbeOptions>,
    /// Serve Prometheus `/metrics` from the process-wide registry (default: off).
    pub metrics: Option<MetricsServerOptions>,
    /// Serve admission webhooks over HTTPS (default: off). The server is bound when the
    /// manager is built; register handlers on
    /// [`Manager::webhook_server`](super::Manager::webhook_server).
    pub webhook: Option<WebhookServerOptions>,
    /// How long stopping waits for runnables (default 30 s). `Some(ZERO)` does not wait;
    /// `None` waits forever. Runnables still running at the deadline are aborted.
    pub graceful_shutdown_timeout: Option<Duration>,
    /// Limits on every request the manager's client, cache and leader election make
    /// (default: 60 s per request, response body included; a watch's stream until its
    /// `timeoutSeconds` plus 30 s). A request to a server or connection that stopped
    /// answering fails with a timeout and is retried like any failed request, instead of
    /// holding its reconcile or informer forever. [`RequestTimeouts::none`] turns them off.
    pub request_timeouts: RequestTimeouts,
    /// How long `start` waits for the caches to sync before it fails with
    /// [`Error::CacheSyncTimeout`](super::Error::CacheSyncTimeout) (default 2 minutes, as a
    /// controller's `cache_sync_timeout`; a replica whose caches cannot sync fails and is
    /// restarted rather than sitting unready). `None` waits until stopped.
    pub cache_sync_timeout: Option<Duration>,
    /// client-go's client-side QPS/burst limiter on every request but watches (default: off;
    /// controller-runtime's `GetConfig` sets 20 QPS with a burst of 30, which is
    /// `Some(RateLimitConfig::default())`). A reconcile waiting for a token waits inside its
    /// request, within [`Options::request_timeouts`].
    pub rate_limit: Option<RateLimitConfig>,
    /// Active-active sharding (default: off): this replica joins the ring, its cache holds
    /// only the objects of the sharded kinds assigned to it, and controllers built with the
    /// builder's `sharded()` (or whose reconciler is wrapped by
    /// [`Manager::sharded`](super::Manager::sharded) and that set
    /// `need_leader_election: false`) run on every replica and reconcile only those. Other
    /// controllers keep leader election (`leader_elected()`), but may not be for a sharded
    /// kind. The Lease namespace defaults to the Pod's.
    pub sharding: Option<ShardingOptions>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            scheme: None,
            cache: CacheOptions::default(),
            client: ClientOptions::default(),
            leader_election: None,
            warm_up_controllers: false,
            health_probes: None,
            metrics: None,
            webhook: None,
            graceful_shutdown_timeout: Some(Duration::from_secs(30)),
            request_timeouts: RequestTimeouts::default(),
            cache_sync_timeout: Some(Duration::from_secs(120)),
            rate_limit: None,
            sharding: None,
        }
    }
}

impl Options {
    /// Sets the scheme.
    pub fn scheme(mut self, scheme: Arc<Scheme>) -> Self {
        self.scheme = Some(scheme);
        self
    }

    /// Restricts the cache (and so the client's cached reads) to one namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.cache = self.cache.namespace(namespace);
        self
    }

    /// Restricts the cache (and so the client's cached reads) to a set of namespaces
    /// (controller-runtime's `cache.Options.DefaultNamespaces`): one watch per namespace and
    /// kind, reads spanning them, and a read naming another namespace failing with
    /// `rein_client::Error::NamespaceNotCached`. Per-kind namespaces:
    /// [`ByObject::namespaces`](rein_client::cache::ByObject::namespaces) in
    /// [`Options::cache`].
    pub fn namespaces<S: Into<String>>(mut self, namespaces: impl IntoIterator<Item = S>) -> Self {
        self.cache = self.cache.namespaces(namespaces);
        self
    }

    /// Sets the cache options.
    pub fn cache(mut self, cache: CacheOptions) -> Self {
        self.cache = cache;
        self
    }

    /// Sets the client options.
    pub fn client(mut self, client: ClientOptions) -> Self {
        self.client = client;
        self
    }

    /// Enables leader election.
    pub fn leader_election(mut self, options: LeaderElectionOptions) -> Self {
        self.leader_election = Some(options);
        self
    }

    /// Warms every builder-made leader-elected controller up on standby replicas
    /// ([`Options::warm_up_controllers`]).
    pub fn warm_up_controllers(mut self) -> Self {
        self.warm_up_controllers = true;
        self
    }

    /// Serves health probes on `address` (port 0 picks a free port; see
    /// [`Manager::health_probe_address`](super::Manager::health_probe_address)).
    pub fn health_probe_bind_address(mut self, address: SocketAddr) -> Self {
        self.health_probes = Some(HealthProbeOptions {
            bind_address: address,
            ..HealthProbeOptions::default()
        });
        self
    }

    /// Serves metrics on `address` (port 0 picks a free port; see
    /// [`Manager::metrics_address`](super::Manager::metrics_address)).
    pub fn metrics_bind_address(mut self, address: SocketAddr) -> Self {
        self.metrics = Some(MetricsServerOptions {
            bind_address: address,
            ..self.metrics.unwrap_or_default()
        });
        self
    }

    /// Serves metrics with these options (extra registries, path).
    pub fn metrics(mut self, options: MetricsServerOptions) -> Self {
        self.metrics = Some(options);
        self
    }

    /// Serves admission webhooks with these options.
    pub fn webhook(mut self, options: WebhookServerOptions) -> Self {
        self.webhook = Some(options);
        self
    }

    /// Sets the request timeouts (see [`Options::request_timeouts`]).
    pub fn request_timeouts(mut self, timeouts: RequestTimeouts) -> Self {
        self.request_timeouts = timeouts;
        self
    }

    /// Sets how long `start` waits for the caches to sync (`None`: until stopped).
    pub fn cache_sync_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.cache_sync_timeout = timeout;
        self
    }

    /// Turns on the client-side limiter ([`Options::rate_limit`]).
    pub fn rate_limit(mut self, limits: RateLimitConfig) -> Self {
        self.rate_limit = Some(limits);
        self
    }

    /// Turns sharding on ([`Options::sharding`]).
    pub fn sharding(mut self, options: ShardingOptions) -> Self {
        self.sharding = Some(options);
        self
    }

    /// Sets the graceful-shutdown timeout (`None`: wait forever).
    pub fn graceful_shutdown_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.graceful_shutdown_timeout = timeout;
        self
    }
}

/// Leader election for a manager: the Lease `namespace/id`, this process's identity and the
/// timing.
#[derive(Debug, Clone)]
pub struct LeaderElectionOptions {
    /// The Lease name (controller-runtime's `LeaderElectionID`); required.
    pub id: String,
    /// The Lease namespace (default: the Pod's namespace when in a cluster).
    pub namespace: Option<String>,
    /// This candidate's identity (default: `hostname_<uuid>`).
    pub identity: Option<String>,
    /// Lease duration, renew deadline, retry period, release on cancel.
    pub config: LeaderElectionConfig,
    /// Labels put on the Lease.
    pub labels: BTreeMap<String, String>,
}

impl LeaderElectionOptions {
    /// Leader election on Lease `id` with the default timing (15 s / 10 s / 2 s).
    pub fn new(id: impl Into<String>) -> Self {
        LeaderElectionOptions {
            id: id.into(),
            namespace: None,
            identity: None,
            config: LeaderElectionConfig::default(),
            labels: BTreeMap::new(),
        }
    }

    /// Sets the Lease namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Sets this candidate's identity.
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = Some(identity.into());
        self
    }

    /// Sets the timing and release behaviour.
    pub fn config(mut self, config: LeaderElectionConfig) -> Self {
        self.config = config;
        self
    }
}
