//! `Manager::start`: the start order, the leader-election hand-off and the stop procedure.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rein_controller::Runnable;
use rein_controller::recorder::{EventsApi, RecorderOptions};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::group::{self, ErrorSender, Group, Stopped};
use super::{Error, Manager, leader_metrics};
use crate::healthz::{HealthProbeServer, synced_check};
use crate::leaderelection::{LeaderCallbacks, LeaderElector, LeaseLock, default_identity};
use crate::metrics::MetricsServer;

/// What the elector's callbacks tell the manager.
enum LeaderEvent {
    Started(CancellationToken),
    Stopped,
}

/// The manager's own runnables and tasks, stopped after the user's groups.
struct Internal {
    servers: Group,
    webhooks: Group,
    caches: Group,
    elector: Option<(CancellationToken, JoinHandle<()>)>,
    sharding: Option<(CancellationToken, JoinHandle<()>)>,
}

impl Manager {
    /// Runs everything until `stop` is cancelled, a runnable fails, or leadership is lost.
    ///
    /// Order: the cache; the servers (health probes, metrics) and the webhook server;
    /// waiting for the caches to sync; with sharding, the ring (shard Lease, coordinator
    /// election); the runnables that need no leader election; then — at once, or after winning
    /// the election (warmed up while waiting: [`Runnable::warm_up`]) — the leader-only
    /// runnables. Stopping is the reverse and graceful: each
    /// group gets the rest of `graceful_shutdown_timeout`; stragglers are aborted. Order of
    /// stopping: others, leader-only, caches, webhooks, servers, then the elector and the ring
    /// (which release their Leases if configured to; shard Leases always are). Losing
    /// leadership or the shard Lease stops without grace and returns
    /// [`Error::LeaderElectionLost`] or [`Error::ShardLeaseLost`]: exit the process then.
    pub async fn start(&self, stop: CancellationToken) -> Result<(), Error> {
        {
            let mut state = self.inner.state.lock();
            if state.started {
                return Err(Error::AlreadyStarted);
            }
            state.started = true;
        }
        let (errors, mut error_rx) = mpsc::unbounded_channel();
        let mut internal = Internal {
            servers: Group::new("servers"),
            webhooks: Group::new("webhooks"),
            caches: Group::new("caches"),
            elector: None,
            sharding: None,
        };
        let outcome = self.run(&stop, &errors, &mut error_rx, &mut internal).await;
        let lost = matches!(
            outcome,
            Err(Error::LeaderElectionLost | Error::ShardLeaseLost)
        );
        let timeout = if lost {
            Some(Duration::ZERO)
        } else {
            self.inner.options.graceful_shutdown_timeout
        };
        let stopped = self.stop_procedure(internal, timeout).await;
        while let Ok(err) = error_rx.try_recv() {
            tracing::debug!(error = %err, "runnable error while stopping");
        }
        match (outcome, stopped) {
            (Err(err), Err(stop_err)) => {
                tracing::error!(error = %stop_err, "stopping the manager after an error");
                Err(err)
            }
            (Err(err), Ok(())) | (Ok(()), Err(err)) => Err(err),
            (Ok(()), Ok(())) => Ok(()),
        }
    }

    async fn run(
        &self,
        stop: &CancellationToken,
        errors: &ErrorSender,
        error_rx: &mut mpsc::UnboundedReceiver<rein_controller::BoxError>,
        internal: &mut Internal,
    ) -> Result<(), Error> {
        // 1. The cache, then the servers and webhooks (probes answer while caches sync).
        internal.caches.add(Arc::new(CacheRunnable(self.cache())));
        internal
            .caches
            .start(CancellationToken::new(), errors.clone());
        for server in self.servers().await? {
            internal.servers.add(server);
        }
        internal
            .servers
            .start(CancellationToken::new(), errors.clone());
        if let Some(webhook) = &self.inner.webhook {
            // Bound when the manager was built; serving starts now, with a readiness check
            // that passes once it accepts connections (controller-runtime's StartedChecker).
            if let Err(err) = self
                .inner
                .probes
                .add_readyz_check("webhook", webhook.started_checker())
            {
                tracing::debug!(error = %err, "not adding the webhook readiness check");
            }
            internal
                .webhooks
                .add(Arc::new(WebhookRunnable(webhook.clone())));
            internal
                .webhooks
                .start(CancellationToken::new(), errors.clone());
        }

        // 2. Wait for the caches to sync, for at most `cache_sync_timeout`.
        let cache = self.cache();
        let limit = self.inner.options.cache_sync_timeout;
        let deadline = async {
            match limit {
                Some(limit) => tokio::time::sleep(limit).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            Some(err) = error_rx.recv() => return Err(Error::Runnable(err)),
            synced = cache.wait_for_cache_sync() => {
                if !synced {
                    return Err(Error::CacheSync);
                }
            }
            () = deadline => {
                return Err(Error::CacheSyncTimeout(limit.unwrap_or_default()));
            }
        }
        self.inner.caches_synced.store(true, Ordering::SeqCst);
        tracing::debug!("caches synced");

        // 3. The ring (with sharding): this replica's shard Lease, the coordinator election
        //    and the hand-over of drained objects. Sharded reconcilers wait for membership.
        let (ring_tx, mut ring_rx) = mpsc::unbounded_channel();
        if let Some(sharding) = self.inner.sharding.clone() {
            let token = CancellationToken::new();
            let task = tokio::spawn({
                let (token, cache) = (token.clone(), self.cache());
                async move {
                    let result = sharding.run(cache, token).await;
                    let _ = ring_tx.send(result);
                }
            });
            internal.sharding = Some((token, task));
        }

        // 4. Runnables every replica runs.
        self.inner
            .state
            .lock()
            .others
            .start(CancellationToken::new(), errors.clone());

        // 5. Leader-only runnables: now, or once elected — warmed up meanwhile.
        let (leader_tx, mut leader_rx) = mpsc::unbounded_channel();
        match self.elector(leader_tx)? {
            None => self.start_leader_group(CancellationToken::new(), errors),
            Some(elector) => {
                self.inner
                    .state
                    .lock()
                    .warmup
                    .start(CancellationToken::new(), errors.clone());
                let token = CancellationToken::new();
                let task = tokio::spawn({
                    let token = token.clone();
                    async move { elector.run(token).await }
                });
                internal.elector = Some((token, task));
            }
        }

        // 6. Until stopped, failed, deposed or out of the ring.
        loop {
            tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                Some(err) = error_rx.recv() => return Err(Error::Runnable(err)),
                Some(event) = leader_rx.recv() => match event {
                    // Leader-only work stops the moment the elector's token fires.
                    LeaderEvent::Started(token) => self.start_leader_group(token.child_token(), errors),
                    LeaderEvent::Stopped => return Err(Error::LeaderElectionLost),
                },
                Some(result) = ring_rx.recv() => match result {
                    Err(crate::sharding::Error::MembershipLost { .. }) => {
                        return Err(Error::ShardLeaseLost)
                    }
                    Err(err) => return Err(Error::Sharding(err)),
                    Ok(()) => {}
                },
            }
        }
    }

    fn start_leader_group(&self, token: CancellationToken, errors: &ErrorSender) {
        self.inner.state.lock().leader.start(token, errors.clone());
        self.inner.elected.cancel();
    }

    fn elector(
        &self,
        events: mpsc::UnboundedSender<LeaderEvent>,
    ) -> Result<Option<LeaderElector>, Error> {
        let Some(le) = &self.inner.options.leader_election else {
            return Ok(None);
        };
        let namespace = match &le.namespace {
            Some(ns) => ns.clone(),
            None => crate::config::in_cluster_namespace()
                .ok_or(Error::MissingLeaderElectionNamespace)?,
        };
        let identity = le.identity.clone().unwrap_or_else(default_identity);
        // client-go's lock events: Normal/LeaderElection "<identity> became leader" and
        // "<identity> stopped leading", regarding the Lease, written as core/v1 Events as
        // client-go's resource lock does (the identity need not be a valid reportingController).
        let recorder = self.inner.recorders.recorder(
            identity.clone(),
            RecorderOptions {
                api: EventsApi::Core,
                ..RecorderOptions::default()
            },
        );
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(le.id.clone()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: None,
        };
        let lock = LeaseLock::new(self.kube_client(), namespace, &le.id, identity.clone())
            .with_labels(le.labels.clone());
        let mut config = le.config.clone();
        if config.name.is_empty() {
            config.name = le.id.clone();
        }
        let started = events.clone();
        let (started_name, stopped_name) = (config.name.clone(), config.name.clone());
        // "stopped leading" is recorded as the elector ends, as client-go's renew loop does
        // once it gives up, and only after "became leader": the stop procedure awaits the
        // elector before it flushes the recorders, so the event is written before `start`
        // returns.
        let led = Arc::new(AtomicBool::new(false));
        let (stopped_recorder, stopped_lease, stopped_identity, stopped_led) = (
            recorder.clone(),
            lease.clone(),
            identity.clone(),
            led.clone(),
        );
        let callbacks = LeaderCallbacks::new(
            move |token: CancellationToken| {
                leader_metrics::set_leading(&started_name, true);
                led.store(true, Ordering::SeqCst);
                recorder.normal(
                    &lease,
                    "LeaderElection",
                    &format!("{identity} became leader"),
                );
                let _ = started.send(LeaderEvent::Started(token));
            },
            move || {
                leader_metrics::set_leading(&stopped_name, false);
                if stopped_led.swap(false, Ordering::SeqCst) {
                    stopped_recorder.normal(
                        &stopped_lease,
                        "LeaderElection",
                        &format!("{stopped_identity} stopped leading"),
                    );
                }
                let _ = events.send(LeaderEvent::Stopped);
            },
        );
        LeaderElector::new(config, lock, callbacks)
            .map(Some)
            .map_err(Error::LeaderElection)
    }

    /// The reverse of the start order, within one shared deadline.
    async fn stop_procedure(
        &self,
        mut internal: Internal,
        timeout: Option<Duration>,
    ) -> Result<(), Error> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let (others, leader, warmup) = {
            let mut state = self.inner.state.lock();
            (
                state.others.begin_stop(),
                state.leader.begin_stop(),
                state.warmup.begin_stop(),
            )
        };
        let mut outcome = Stopped::InTime;
        for tasks in [
            others,
            leader,
            warmup,
            internal.caches.begin_stop(),
            internal.webhooks.begin_stop(),
            internal.servers.begin_stop(),
        ] {
            if group::wait_for(tasks, deadline).await == Stopped::TimedOut {
                outcome = Stopped::TimedOut;
            }
        }
        // Only now give the leases up (release on cancel): leader-only and sharded work has
        // stopped.
        for (token, task) in [internal.elector.take(), internal.sharding.take()]
            .into_iter()
            .flatten()
        {
            token.cancel();
            let _ = task.await;
        }
        // Last, as controller-runtime stops its recorder provider: the events recorded on the
        // way down (a reconcile's last, "stopped leading") are written while the client
        // still runs, not lost when the program's runtime ends.
        if !self.inner.recorders.stop(deadline).await {
            outcome = Stopped::TimedOut;
        }
        match (outcome, timeout) {
            (Stopped::TimedOut, Some(t)) if !t.is_zero() => Err(Error::GracePeriodExceeded(t)),
            _ => Ok(()),
        }
    }

    /// The servers bound at build time, with the readiness checks only a starting manager
    /// has (its caches' sync, its ring membership) added first.
    async fn servers(&self) -> Result<Vec<Arc<dyn Runnable>>, Error> {
        if self.inner.options.health_probes.is_some() {
            let synced = self.inner.caches_synced.clone();
            let check = synced_check("informer caches", move || synced.load(Ordering::SeqCst));
            if let Err(err) = self.inner.probes.add_readyz_check("cache-sync", check) {
                tracing::debug!(error = %err, "not adding the cache-sync readiness check");
            }
            if let Some(sharding) = self.inner.sharding.clone() {
                let what = format!("membership of ring {}", sharding.options().ring);
                let check = synced_check(what, move || sharding.is_member());
                if let Err(err) = self.inner.probes.add_readyz_check("shard", check) {
                    tracing::debug!(error = %err, "not adding the shard readiness check");
                }
            }
        }
        Ok(std::mem::take(&mut *self.inner.bound_servers.lock()))
    }

    /// Binds the servers the options enable, at build time: bind errors surface from
    /// `build`, and their addresses are known before `start`.
    pub(super) async fn bind_servers(&self) -> Result<(), Error> {
        let options = &self.inner.options;
        let mut servers: Vec<Arc<dyn Runnable>> = Vec::new();
        if let Some(probe_options) = &options.health_probes {
            let server = HealthProbeServer::bind(probe_options.clone(), self.inner.probes.clone())
                .await
                .map_err(|source| Error::Server {
                    server: "health probe",
                    source: source.into(),
                })?;
            self.inner.addresses.lock().health_probes = Some(server.local_addr());
            servers.push(Arc::new(server));
        }
        if let Some(metrics_options) = &options.metrics {
            let mut metrics_options = metrics_options.clone();
            // Secure serving reviews scrapers with the manager's own client by default.
            if let Some(secure) = &mut metrics_options.secure
                && secure.client.is_none()
            {
                secure.client = Some(self.inner.kube.clone());
            }
            let server = MetricsServer::bind(metrics_options)
                .await
                .map_err(|source| Error::Server {
                    server: "metrics",
                    source: source.into(),
                })?;
            self.inner.addresses.lock().metrics = Some(server.local_addr());
            servers.push(Arc::new(server));
        }
        *self.inner.bound_servers.lock() = servers;
        Ok(())
    }
}

/// The shared cache as a runnable of the manager's cache group.
struct CacheRunnable(rein_client::cache::Cache);

#[async_trait::async_trait]
impl Runnable for CacheRunnable {
    async fn start(&self, stop: CancellationToken) -> Result<(), rein_controller::BoxError> {
        self.0.start(stop).await.map_err(Into::into)
    }

    fn needs_leader_election(&self) -> bool {
        false
    }
}

/// The webhook server of [`Options::webhook`](super::Options::webhook) as a runnable of the
/// manager's webhook group (rein-webhook knows nothing of runnables).
struct WebhookRunnable(Arc<rein_webhook::WebhookServer>);

#[async_trait::async_trait]
impl Runnable for WebhookRunnable {
    async fn start(&self, stop: CancellationToken) -> Result<(), rein_controller::BoxError> {
        self.0.run(stop).await.map_err(Into::into)
    }

    fn needs_leader_election(&self) -> bool {
        false
    }
}
