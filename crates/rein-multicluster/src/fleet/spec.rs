//! A fleet controller's recipe (`ControllerSpec`: watches, reconciler, options) and how it is
//! run in one cluster: a rein `Controller` of its own, restarted with backoff if it fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use rein_controller::{
    Action, BoxError, Context, Controller, ControllerNames, ControllerOptions, Request, Runnable,
    reconciler_fn,
};
use tokio_util::sync::CancellationToken;

use super::cluster::Cluster;
use crate::builder::Engage;
use crate::handler::FleetQueue;
use crate::metrics;
use crate::name::ClusterName;
use crate::request::{BoxClusterReconciler, ClusterContext, ClusterRequest};

/// Adds one watch to a cluster's controller.
pub(crate) type AttachFn = dyn Fn(&Controller, &Cluster, &FleetQueue) + Send + Sync;
/// Queues, for a member that just engaged, what the hub's objects map to there.
pub(crate) type ReplayFn =
    dyn Fn(Cluster, ClusterName, FleetQueue) -> BoxFuture<'static, ()> + Send + Sync;
/// Makes the per-cluster rate limiter (one per cluster, so backoffs are per cluster).
pub(crate) type RateLimiterFactory =
    dyn Fn() -> Arc<dyn rein_workqueue::RateLimiter<Request>> + Send + Sync;

pub(crate) struct WatchSpec {
    pub(crate) engage: Engage,
    pub(crate) attach: Box<AttachFn>,
    pub(crate) replay: Option<Box<ReplayFn>>,
}

pub(crate) struct ControllerSpec {
    pub(crate) name: String,
    pub(crate) options: ControllerOptions,
    pub(crate) rate_limiter: Option<Arc<RateLimiterFactory>>,
    pub(crate) watches: Vec<WatchSpec>,
    pub(crate) reconciler: BoxClusterReconciler,
    pub(crate) queue: FleetQueue,
}

impl ControllerSpec {
    /// The per-cluster controller's name: `<name>` in the hub, `<name>.<cluster>` elsewhere.
    pub(crate) fn controller_name(&self, cluster: &ClusterName) -> String {
        if cluster.is_hub() {
            self.name.clone()
        } else {
            format!("{}.{}", self.name, cluster.controller_suffix())
        }
    }
}

/// What a per-cluster run needs of the fleet.
pub(crate) struct RunContext {
    pub(crate) cluster: Cluster,
    pub(crate) hub: Cluster,
    pub(crate) names: ControllerNames,
    pub(crate) stop: CancellationToken,
    pub(crate) restart_backoff: Duration,
    /// In the hub with sharding: whether this replica runs the hub's reconciles now.
    pub(crate) gate: Option<Arc<AtomicBool>>,
}

/// Runs `spec` in `ctx.cluster` until `ctx.stop`: builds its controller, registers its queue,
/// replays the hub's objects for a member, and rebuilds it (after a backoff doubling to 5
/// minutes) if it fails, e.g. because its caches could not sync while the cluster was down.
pub(crate) async fn run_in_cluster(spec: Arc<ControllerSpec>, ctx: RunContext) {
    let name = ctx.cluster.name().clone();
    let mut backoff = ctx.restart_backoff;
    while !ctx.stop.is_cancelled() {
        let controller = match build(&spec, &ctx) {
            Ok(controller) => controller,
            Err(err) => {
                tracing::error!(cluster = %name, controller = %spec.name, error = %err, "creating the controller failed");
                return;
            }
        };
        spec.queue
            .register(name.clone(), controller.queue().clone());
        if !name.is_hub() {
            for watch in spec
                .watches
                .iter()
                .filter(|w| w.engage.includes(&ClusterName::hub()))
            {
                if let Some(replay) = &watch.replay {
                    tokio::spawn(replay(ctx.hub.clone(), name.clone(), spec.queue.clone()));
                }
            }
        }
        let result = controller.start(ctx.stop.clone()).await;
        drop(controller);
        match result {
            Ok(()) => return,
            Err(err) => {
                tracing::warn!(cluster = %name, controller = %spec.name, error = %err, retry_in = ?backoff, "controller failed; restarting it");
            }
        }
        tokio::select! {
            _ = ctx.stop.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(Duration::from_secs(300));
    }
}

/// The controller of `spec` for one cluster, its watches attached.
fn build(spec: &Arc<ControllerSpec>, ctx: &RunContext) -> Result<Controller, crate::Error> {
    let cluster = ctx.cluster.clone();
    let name = cluster.name().clone();
    let controller_name = spec.controller_name(&name);
    let mut options = spec.options.clone();
    // Names are unique by construction (spec names in the fleet, cluster names among
    // members); a restarted controller must not wait for its predecessor's claim.
    options.skip_name_validation = true;
    options.rate_limiter = spec.rate_limiter.as_ref().map(|make| make());
    let reconciler = spec.reconciler.clone();
    let hub_client = ctx.hub.client();
    let spec_name: Arc<str> = Arc::from(spec.name.as_str());
    let gate = ctx.gate.clone();
    let wrapped = reconciler_fn(move |rctx: Context, req: Request| {
        let (reconciler, cluster, hub_client, spec_name, gate) = (
            reconciler.clone(),
            cluster.clone(),
            hub_client.clone(),
            spec_name.clone(),
            gate.clone(),
        );
        async move {
            if gate.is_some_and(|g| !g.load(Ordering::Acquire)) {
                // Another replica runs the hub's reconciles; when this one takes them over,
                // its hub controllers restart and list every object again.
                return Ok(Action::done());
            }
            let cctx =
                ClusterContext::new(rctx, cluster.name().clone(), cluster.client(), hub_client);
            let creq = ClusterRequest::in_cluster(cluster.name().clone(), req);
            let result = reconciler.reconcile(cctx, creq).await;
            let outcome = match &result {
                Ok(action) if action.is_zero() => "success",
                Ok(_) => "requeue",
                Err(_) => "error",
            };
            metrics::reconciled(&spec_name, cluster.name(), outcome);
            result.map_err(|e: BoxError| e)
        }
    });
    let controller =
        Controller::new_in(&controller_name, wrapped, options, &ctx.names).map_err(|source| {
            crate::Error::Controller {
                name: controller_name.clone(),
                cluster: name.clone(),
                source,
            }
        })?;
    for watch in spec.watches.iter().filter(|w| w.engage.includes(&name)) {
        (watch.attach)(&controller, &ctx.cluster, &spec.queue);
    }
    Ok(controller)
}
