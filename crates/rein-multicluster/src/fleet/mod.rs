//! The `Fleet`: member clusters engaged and disengaged as its provider reports them, each
//! with its own client, cache, health probe and one controller per fleet controller; run as
//! a leader-only runnable of the hub's manager.

mod cluster;
mod shards;
pub(crate) mod spec;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use rein_client::cache::CacheOptions;
use rein_client::limiter::RateLimitConfig;
use rein_client::timeout::RequestTimeouts;
use rein_client::{Client, ClientOptions, KubeClientOptions};
use rein_controller::{BoxError, ControllerNames, Runnable};
use rein_manager::Manager;
use rein_manager::healthz::{CheckError, Checker};
use rein_scheme::Scheme;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::Error;
use crate::metrics;
use crate::name::ClusterName;
use crate::provider::{ClusterSink, Provider, ProviderContext, ProviderEvent};
use spec::{ControllerSpec, RunContext, run_in_cluster};

pub use cluster::{Cluster, Health};
use shards::Shards;
pub use shards::{
    FLEET_CLUSTER_ANNOTATION, FLEET_LEASE_ROLE_LABEL, FLEET_RING_LABEL, FleetSharding,
};

/// How each member cluster is reached and watched.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// Deadlines of every request to a member (default: 30 s per request), so a partitioned
    /// member's reconciles fail and back off rather than hang.
    pub request_timeouts: RequestTimeouts,
    /// Client-side QPS/burst limit per member (default: controller-runtime's 20 QPS, burst
    /// 30, for each member separately).
    pub rate_limit: Option<RateLimitConfig>,
    /// Each member's cache options (namespaces, selectors, per-kind settings).
    pub cache: CacheOptions,
    /// Each member's client options (field owner, read-your-writes).
    pub client: ClientOptions,
    /// How often each member's API server is probed (default 10 s).
    pub health_interval: Duration,
    /// How long a probe may take before the member counts as unreachable (default 5 s).
    pub health_timeout: Duration,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            request_timeouts: RequestTimeouts {
                request: Some(Duration::from_secs(30)),
                ..RequestTimeouts::default()
            },
            rate_limit: Some(RateLimitConfig::default()),
            cache: CacheOptions::default(),
            client: ClientOptions::default(),
            health_interval: Duration::from_secs(10),
            health_timeout: Duration::from_secs(5),
        }
    }
}

/// How a fleet runs.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// How members are reached and watched.
    pub cluster: ClusterOptions,
    /// How long a disengaged member's controllers may take to finish their reconciles
    /// (default 10 s); its caches and watches are stopped after.
    pub disengage_timeout: Duration,
    /// The first wait before a failed per-cluster controller is rebuilt (doubling up to
    /// 5 min; default 1 s).
    pub restart_backoff: Duration,
    /// Spread the clusters across the hub manager's replicas (default `None`: the fleet is
    /// a leader-only runnable and the leader engages every member).
    pub sharding: Option<FleetSharding>,
}

impl Default for FleetOptions {
    fn default() -> Self {
        FleetOptions {
            cluster: ClusterOptions::default(),
            disengage_timeout: Duration::from_secs(10),
            restart_backoff: Duration::from_secs(1),
            sharding: None,
        }
    }
}

/// A fleet of clusters one manager reconciles across (multicluster-runtime's
/// `mcmanager.Manager`): the hub is the manager's own cluster; members come and go as the
/// [`Provider`] reports them. A cheap `Clone` handle.
///
/// [`Fleet::builder`] adds the fleet to the hub's manager as a leader-only runnable, so with
/// leader election only the leader engages members; with [`FleetOptions::sharding`] it runs
/// on every replica and the members are spread across them ([`FleetSharding`]). Controllers
/// are added with [`FleetControllerBuilder`](crate::FleetControllerBuilder), before or while
/// it runs.
#[derive(Clone)]
pub struct Fleet {
    inner: Arc<Inner>,
}

struct Inner {
    hub: Cluster,
    scheme: Arc<Scheme>,
    provider: Arc<dyn Provider>,
    options: FleetOptions,
    names: ControllerNames,
    controllers: Mutex<Vec<Arc<ControllerSpec>>>,
    members: Mutex<BTreeMap<ClusterName, Arc<Member>>>,
    /// The hub's engagement, while the fleet runs.
    hub_member: Mutex<Option<Arc<Member>>>,
    /// Whether the hub's own reconciles run here: always without sharding; with it, while
    /// the ring assigns the hub to this replica.
    owns_hub: Arc<AtomicBool>,
    /// The ring, with sharding.
    shards: Option<Arc<Shards>>,
    /// Disengaged members still finishing their reconciles and stopping their caches.
    teardowns: TaskTracker,
    started: Mutex<bool>,
}

/// An engaged cluster: its handle, what stops it and the tasks to wait for.
struct Member {
    cluster: Cluster,
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("provider", &self.inner.provider.describe())
            .field("members", &self.member_names())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Fleet`]; see [`Fleet::builder`].
pub struct FleetBuilder<'a> {
    hub: &'a Manager,
    provider: Arc<dyn Provider>,
    options: FleetOptions,
}

impl fmt::Debug for FleetBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetBuilder")
            .field("provider", &self.provider.describe())
            .field("options", &self.options)
            .finish()
    }
}

impl FleetBuilder<'_> {
    /// Sets the options.
    pub fn options(mut self, options: FleetOptions) -> Self {
        self.options = options;
        self
    }

    /// Builds the fleet and adds it to the hub's manager (as a leader-only runnable, or with
    /// sharding as a runnable of every replica). Fails on invalid sharding settings.
    pub fn build(self) -> Result<Fleet, Error> {
        if let Some(sharding) = &self.options.sharding {
            sharding
                .check()
                .map_err(|problem| Error::Build { problem })?;
        }
        let shards = self
            .options
            .sharding
            .clone()
            .map(|s| Arc::new(Shards::new(s, self.hub.kube_client())));
        let hub = Cluster::new(
            ClusterName::hub(),
            self.hub.kube_client(),
            self.hub.cache(),
            self.hub.client(),
        );
        let fleet = Fleet {
            inner: Arc::new(Inner {
                hub,
                scheme: self.hub.scheme(),
                provider: self.provider,
                options: self.options,
                names: ControllerNames::new(),
                controllers: Mutex::new(Vec::new()),
                members: Mutex::new(BTreeMap::new()),
                hub_member: Mutex::new(None),
                owns_hub: Arc::new(AtomicBool::new(shards.is_none())),
                shards,
                teardowns: TaskTracker::new(),
                started: Mutex::new(false),
            }),
        };
        self.hub
            .add(Arc::new(FleetRunnable(fleet.clone())))
            .map_err(Error::AddToManager)?;
        Ok(fleet)
    }
}

impl Fleet {
    /// A fleet over `hub` (the manager whose cluster is the hub) with members from `provider`.
    pub fn builder(hub: &Manager, provider: impl Provider) -> FleetBuilder<'_> {
        FleetBuilder {
            hub,
            provider: Arc::new(provider),
            options: FleetOptions::default(),
        }
    }

    /// The hub cluster (the manager's client and cache).
    pub fn hub(&self) -> Cluster {
        self.inner.hub.clone()
    }

    /// The hub's cache-backed client.
    pub fn hub_client(&self) -> Client {
        self.inner.hub.client()
    }

    /// The scheme (the hub manager's, shared by every member's client).
    pub fn scheme(&self) -> Arc<Scheme> {
        self.inner.scheme.clone()
    }

    /// The engaged cluster `name` (the hub for [`ClusterName::hub`]), if any
    /// (multicluster-runtime's `GetCluster`).
    pub fn cluster(&self, name: &ClusterName) -> Option<Cluster> {
        if name.is_hub() {
            return Some(self.hub());
        }
        self.inner
            .members
            .lock()
            .get(name)
            .map(|m| m.cluster.clone())
    }

    /// The engaged members, sorted by name.
    pub fn member_names(&self) -> Vec<ClusterName> {
        self.inner.members.lock().keys().cloned().collect()
    }

    /// Every engaged member with its health, sorted by name.
    pub fn member_health(&self) -> Vec<(ClusterName, Health)> {
        self.inner
            .members
            .lock()
            .iter()
            .map(|(n, m)| (n.clone(), m.cluster.health()))
            .collect()
    }

    /// A readiness check for the hub's manager (`add_readyz_check("fleet", ..)`): it fails
    /// while any member is unreachable, naming each with its error, so `/readyz?verbose`
    /// shows which. Add it only if an unreachable member should make the process unready;
    /// the fleet keeps reconciling the healthy members either way.
    pub fn readiness_checker(&self) -> FleetReadiness {
        FleetReadiness {
            fleet: self.clone(),
        }
    }

    pub(crate) fn add_spec(&self, spec: ControllerSpec) {
        let spec = Arc::new(spec);
        self.inner.controllers.lock().push(spec.clone());
        // Running: start it in every engaged cluster now.
        let hub = self.inner.hub_member.lock().clone();
        let members: Vec<Arc<Member>> = self.inner.members.lock().values().cloned().collect();
        for member in hub.into_iter().chain(members) {
            self.run_spec(&spec, &member);
        }
    }

    pub(crate) fn has_controller(&self, name: &str) -> bool {
        self.inner.controllers.lock().iter().any(|s| s.name == name)
    }

    /// Whether this replica runs the hub's own reconciles now (always without sharding).
    pub fn owns_hub(&self) -> bool {
        self.inner.owns_hub.load(Ordering::Acquire)
    }

    /// With sharding, the replicas of the ring that are live as this replica last saw them
    /// (itself included), sorted; empty without sharding.
    pub fn live_peers(&self) -> Vec<String> {
        self.inner
            .shards
            .as_ref()
            .map(|s| s.live_peers())
            .unwrap_or_default()
    }

    /// Runs `spec` in `member`. Every fleet controller runs in every engaged cluster, the hub
    /// included: its sources there are those engaged there, and requests other clusters'
    /// sources map to it (`watches_across`) arrive in its queue. In the hub, its reconciles
    /// run only while this replica owns the hub (with sharding).
    fn run_spec(&self, spec: &Arc<ControllerSpec>, member: &Member) {
        let ctx = RunContext {
            cluster: member.cluster.clone(),
            hub: self.inner.hub.clone(),
            names: self.inner.names.clone(),
            stop: member.stop.clone(),
            restart_backoff: self.inner.options.restart_backoff,
            gate: member
                .cluster
                .name()
                .is_hub()
                .then(|| self.inner.owns_hub.clone()),
        };
        member.tasks.spawn(run_in_cluster(spec.clone(), ctx));
    }

    /// Engages the hub (its controllers, for their hub sources), as a child of `stop`.
    fn start_hub(&self, stop: &CancellationToken) -> Arc<Member> {
        let hub = Arc::new(Member {
            cluster: self.inner.hub.clone(),
            stop: stop.child_token(),
            tasks: TaskTracker::new(),
        });
        *self.inner.hub_member.lock() = Some(hub.clone());
        let specs: Vec<_> = self.inner.controllers.lock().clone();
        for spec in &specs {
            self.run_spec(spec, &hub);
        }
        hub
    }

    /// Stops the hub's controllers (running reconciles get `disengage_timeout`).
    async fn stop_hub(&self) {
        let Some(hub) = self.inner.hub_member.lock().take() else {
            return;
        };
        for spec in self.inner.controllers.lock().iter() {
            spec.queue.unregister(&ClusterName::hub());
        }
        hub.stop.cancel();
        hub.tasks.close();
        let _ = tokio::time::timeout(self.inner.options.disengage_timeout, hub.tasks.wait()).await;
    }

    /// Runs until `stop`: engages the hub, runs the provider, follows its reports (and with
    /// sharding the ring); then disengages every member.
    async fn run(&self, stop: CancellationToken) -> Result<(), BoxError> {
        {
            let mut started = self.inner.started.lock();
            if *started {
                return Err("the fleet was already started".into());
            }
            *started = true;
        }
        let shards = self.inner.shards.clone();
        if let Some(shards) = &shards {
            shards.refresh().await;
        }
        self.start_hub(&stop);

        let (sink, mut events) = ClusterSink::new();
        let provider = self.inner.provider.clone();
        let ctx = ProviderContext::new(self.inner.hub.kube_client(), self.inner.scheme.clone());
        let provider_stop = stop.child_token();
        let provider_task = {
            let stop = provider_stop.clone();
            tokio::spawn(async move {
                let describe = provider.describe();
                tracing::info!(provider = %describe, "starting the cluster provider");
                if let Err(err) = provider.run(ctx, sink, stop).await {
                    tracing::error!(provider = %describe, error = %err, "the cluster provider failed; the engaged clusters stay");
                }
            })
        };

        // Every cluster the provider reports, engaged here or not (with sharding, another
        // replica may own it).
        let mut known: BTreeMap<ClusterName, kube_client::Config> = BTreeMap::new();
        let mut ring = shards.as_ref().map(|s| {
            let mut ticks = tokio::time::interval(s.renew_interval());
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks
        });
        if shards.is_some() {
            // Takes the hub's fence (or leaves the hub to its owner) before the first event.
            self.rebalance(&known, &stop).await;
        }
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                event = events.recv() => match event {
                    Some(ProviderEvent::Engage { name, config }) => {
                        if name.is_hub() {
                            tracing::warn!("a provider reported a cluster with the hub's (empty) name; ignored");
                            continue;
                        }
                        known.insert(name.clone(), (*config).clone());
                        let engaged = self.inner.members.lock().contains_key(&name);
                        if engaged {
                            tracing::info!(cluster = %name, "cluster config changed; engaging it again");
                            if let Some(member) = self.detach(&name) {
                                self.teardown(&name, member, false).await;
                            }
                        }
                        if self.may_engage(&name).await {
                            self.engage(name, *config);
                        }
                    }
                    Some(ProviderEvent::Disengage { name }) => {
                        known.remove(&name);
                        self.disengage(&name);
                    }
                    None => {
                        // The provider is done; keep what it engaged until stopped (and keep
                        // following the ring).
                        if let Some(ticks) = ring.as_mut() {
                            loop {
                                tokio::select! {
                                    _ = stop.cancelled() => break,
                                    _ = ticks.tick() => self.rebalance(&known, &stop).await,
                                }
                            }
                        } else {
                            stop.cancelled().await;
                        }
                        break;
                    }
                },
                () = tick(&mut ring) => {
                    self.rebalance(&known, &stop).await;
                }
            }
        }

        provider_stop.cancel();
        let _ = provider_task.await;
        let names = self.member_names();
        let detached: Vec<_> = names
            .iter()
            .filter_map(|n| self.detach(n).map(|m| (n.clone(), m)))
            .collect();
        futures::future::join_all(
            detached
                .into_iter()
                .map(|(name, member)| async move { self.teardown(&name, member, true).await }),
        )
        .await;
        self.inner.teardowns.close();
        self.inner.teardowns.wait().await;
        self.stop_hub().await;
        if let Some(shards) = &shards {
            if self.inner.owns_hub.swap(false, Ordering::AcqRel) {
                shards.release(&ClusterName::hub()).await;
            }
            shards.leave().await;
        }
        Ok(())
    }

    /// Whether this replica may engage `name` now: always without sharding; with it, when
    /// the ring assigns `name` here and this replica holds (took) its fence.
    async fn may_engage(&self, name: &ClusterName) -> bool {
        match &self.inner.shards {
            None => true,
            Some(shards) => shards.owns(name) && shards.fence(name).await,
        }
    }

    /// With sharding, once per renew interval: renews the peer Lease, recomputes the live
    /// peers, hands the hub's reconciles over if the hub changed owner, disengages the members
    /// this replica no longer owns (their fences are released once they are torn down),
    /// renews the fences of those it keeps and engages the known members it now owns.
    async fn rebalance(
        &self,
        known: &BTreeMap<ClusterName, kube_client::Config>,
        stop: &CancellationToken,
    ) {
        let Some(shards) = self.inner.shards.clone() else {
            return;
        };
        shards.refresh().await;

        let hub = ClusterName::hub();
        let owns_hub = self.owns_hub();
        let should_own_hub = shards.owns(&hub);
        if owns_hub && !should_own_hub {
            // Stop the hub's reconciles (running ones finish), then let the new owner in.
            tracing::info!("the ring moved the hub's reconciles to another replica");
            self.inner.owns_hub.store(false, Ordering::Release);
            self.stop_hub().await;
            self.start_hub(stop);
            shards.release(&hub).await;
        } else if owns_hub {
            if !shards.fence(&hub).await {
                tracing::warn!("lost the hub's fence; stopping the hub's reconciles here");
                self.inner.owns_hub.store(false, Ordering::Release);
                self.stop_hub().await;
                self.start_hub(stop);
            }
        } else if should_own_hub && shards.fence(&hub).await {
            // Restart the hub's controllers so their sources list every object again.
            tracing::info!("the ring assigned the hub's reconciles to this replica");
            self.stop_hub().await;
            self.inner.owns_hub.store(true, Ordering::Release);
            self.start_hub(stop);
        }

        for name in self.member_names() {
            if !shards.owns(&name) {
                tracing::info!(cluster = %name, "the ring moved the cluster to another replica");
                self.disengage(&name);
            } else if !shards.fence(&name).await {
                tracing::warn!(cluster = %name, "lost the cluster's fence; disengaging it");
                self.disengage(&name);
            }
        }
        for (name, config) in known {
            let engaged = self.inner.members.lock().contains_key(name);
            if !engaged && self.may_engage(name).await {
                self.engage(name.clone(), config.clone());
            }
        }
    }

    /// Engages `name` with `config`.
    fn engage(&self, name: ClusterName, config: kube_client::Config) {
        let options = &self.inner.options.cluster;
        let kube = match rein_client::kube_client(
            config,
            KubeClientOptions {
                timeouts: options.request_timeouts,
                rate_limit: options.rate_limit,
            },
        ) {
            Ok(kube) => kube,
            Err(source) => {
                let err = Error::Client {
                    cluster: name.clone(),
                    source,
                };
                tracing::error!(error = %err, "cannot engage cluster");
                return;
            }
        };
        let cache = rein_client::cache::Cache::new(kube.clone(), options.cache.clone());
        let client = Client::builder(kube.clone())
            .scheme(self.inner.scheme.clone())
            .cache(cache.clone())
            .options(options.client.clone())
            .build();
        let cluster = Cluster::new(name.clone(), kube, cache.clone(), client);
        let member = Arc::new(Member {
            cluster: cluster.clone(),
            stop: CancellationToken::new(),
            tasks: TaskTracker::new(),
        });
        {
            let stop = member.stop.clone();
            member.tasks.spawn(async move {
                if let Err(err) = cache.start(stop).await {
                    tracing::error!(error = %err, "the member's cache failed");
                }
            });
        }
        {
            let (stop, cluster) = (member.stop.clone(), cluster.clone());
            let (interval, timeout) = (options.health_interval, options.health_timeout);
            member.tasks.spawn(async move {
                loop {
                    cluster.probe(timeout).await;
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(interval) => {}
                    }
                }
            });
        }
        self.inner
            .members
            .lock()
            .insert(name.clone(), member.clone());
        metrics::engaged(&name);
        tracing::info!(cluster = %name, "cluster engaged");
        let specs: Vec<_> = self.inner.controllers.lock().clone();
        for spec in &specs {
            self.run_spec(spec, &member);
        }
    }

    /// Disengages `name`: its requests are dropped and its controllers told to stop at
    /// once; waiting for them (running reconciles get `disengage_timeout`) and for its
    /// caches to stop happens in the background, so one slow member never holds up the
    /// others' engagement.
    fn disengage(&self, name: &ClusterName) {
        let Some(member) = self.detach(name) else {
            return;
        };
        let fleet = self.clone();
        let name = name.clone();
        self.inner.teardowns.spawn(async move {
            fleet.teardown(&name, member, true).await;
        });
    }

    /// Takes `name` out of the fleet: no request reaches it from now on, and its controllers,
    /// watches and caches are told to stop.
    fn detach(&self, name: &ClusterName) -> Option<Arc<Member>> {
        let member = self.inner.members.lock().remove(name)?;
        let specs: Vec<_> = self.inner.controllers.lock().clone();
        for spec in &specs {
            spec.queue.unregister(name);
        }
        member.stop.cancel();
        member.tasks.close();
        metrics::disengaged(name);
        Some(member)
    }

    /// Waits for a detached member's tasks (at most `disengage_timeout`); then, with
    /// sharding and `release`, lets the next owner take its fence.
    async fn teardown(&self, name: &ClusterName, member: Arc<Member>, release: bool) {
        if tokio::time::timeout(self.inner.options.disengage_timeout, member.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(cluster = %name, "cluster's controllers did not stop in time");
        }
        tracing::info!(cluster = %name, "cluster disengaged");
        if release && let Some(shards) = &self.inner.shards {
            // A member engaged again meanwhile (same replica) keeps its fence.
            let engaged_again = self.inner.members.lock().contains_key(name);
            if !engaged_again {
                shards.release(name).await;
            }
        }
    }
}

/// The next tick of the ring's interval; never without a ring.
async fn tick(ring: &mut Option<tokio::time::Interval>) {
    match ring {
        Some(ticks) => {
            ticks.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// The fleet as the hub manager runs it.
struct FleetRunnable(Fleet);

#[async_trait]
impl Runnable for FleetRunnable {
    async fn start(&self, stop: CancellationToken) -> Result<(), BoxError> {
        self.0.run(stop).await
    }

    /// Leader-only, unless the fleet spreads its clusters across the replicas.
    fn needs_leader_election(&self) -> bool {
        self.0.inner.shards.is_none()
    }
}

/// The readiness check of [`Fleet::readiness_checker`].
#[derive(Debug, Clone)]
pub struct FleetReadiness {
    fleet: Fleet,
}

#[async_trait]
impl Checker for FleetReadiness {
    async fn check(&self) -> Result<(), CheckError> {
        let down: Vec<String> = self
            .fleet
            .member_health()
            .into_iter()
            .filter_map(|(name, health)| match health {
                Health::Unreachable { since, error } => Some(format!(
                    "{name} unreachable for {:?}: {error}",
                    since.elapsed()
                )),
                _ => None,
            })
            .collect();
        if down.is_empty() {
            Ok(())
        } else {
            Err(down.join("; ").into())
        }
    }
}
