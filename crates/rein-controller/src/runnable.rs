//! The `Runnable` and `ControllerHost` traits: how a manager runs controllers and how the
//! builder reaches the manager, without this crate depending on the manager.

use std::sync::Arc;

use async_trait::async_trait;
use rein_client::Client;
use rein_client::cache::Cache;
use rein_scheme::{GroupVersionKind, Scheme};
use tokio_util::sync::CancellationToken;

use crate::reconcile::{BoxError, BoxReconciler};

/// Something a manager starts and stops: controllers, servers, user tasks.
#[async_trait]
pub trait Runnable: Send + Sync {
    /// Runs until `stop` is cancelled (or fails). Must return soon after `stop` is cancelled.
    async fn start(&self, stop: CancellationToken) -> Result<(), BoxError>;

    /// Whether it may only run while this process holds the leader lease (default: yes).
    fn needs_leader_election(&self) -> bool {
        true
    }

    /// Prepares a leader-only runnable on a replica that does not lead yet, so it is ready
    /// the moment it is elected (controller-runtime's `WarmupRunnable`): a controller with
    /// [`ControllerOptions::enable_warmup`](crate::ControllerOptions::enable_warmup) starts
    /// its sources here, and its caches sync, but it reconciles nothing until
    /// [`Runnable::start`]. A manager with leader election calls it on every replica before
    /// the election; what it starts runs until `stop`. Returns once warmed (default: at once,
    /// nothing to warm).
    async fn warm_up(&self, stop: CancellationToken) -> Result<(), BoxError> {
        let _ = stop;
        Ok(())
    }
}

#[async_trait]
impl<R: Runnable + ?Sized> Runnable for Arc<R> {
    async fn start(&self, stop: CancellationToken) -> Result<(), BoxError> {
        (**self).start(stop).await
    }

    fn needs_leader_election(&self) -> bool {
        (**self).needs_leader_election()
    }

    async fn warm_up(&self, stop: CancellationToken) -> Result<(), BoxError> {
        (**self).warm_up(stop).await
    }
}

/// What the controller builder needs from a manager: its cache, client and scheme, and a way
/// to add the built controller. rein-manager's `Manager` implements it.
pub trait ControllerHost: Send + Sync {
    /// The shared informer cache `Kind` sources attach to.
    fn cache(&self) -> Cache;
    /// The cache-backed client reconcilers use.
    fn client(&self) -> Client;
    /// The scheme (types → group, version, kind).
    fn scheme(&self) -> Arc<Scheme>;
    /// Adds a runnable, started with the host (or at once if the host is running).
    fn add(&self, runnable: Arc<dyn Runnable>) -> Result<(), BoxError>;

    /// The scope controller names are unique in (default: `None`, the process's). A manager
    /// gives its own, so one manager per test works with the same controllers in each.
    fn controller_names(&self) -> Option<crate::ControllerNames> {
        None
    }

    /// Whether every controller the builder adds warms up on standby replicas
    /// ([`ControllerOptions::enable_warmup`](crate::ControllerOptions::enable_warmup) turned
    /// on for all; default: no, each controller's own option decides).
    fn warm_up_controllers(&self) -> bool {
        false
    }

    /// Whether the host shards `kind` across replicas: its cache then holds only this
    /// replica's share of the kind's objects, so a controller for it must be sharded
    /// (default: no kind is sharded).
    fn is_sharded_kind(&self, kind: &GroupVersionKind) -> bool {
        let _ = kind;
        false
    }

    /// Whether controllers for a sharded kind are sharded unless their builder says
    /// [`ControllerManagedBy::leader_elected`](crate::ControllerManagedBy::leader_elected)
    /// (default: no, only those that say
    /// [`ControllerManagedBy::sharded`](crate::ControllerManagedBy::sharded)).
    fn shards_controllers_by_default(&self) -> bool {
        false
    }

    /// Wraps the reconciler of a sharded controller for `kind` so it reconciles only the
    /// objects assigned to this replica (default: fails, the host does not shard).
    fn shard_reconciler(
        &self,
        kind: &GroupVersionKind,
        reconciler: BoxReconciler,
    ) -> Result<BoxReconciler, BoxError> {
        let _ = reconciler;
        Err(format!("this host does not shard controllers (kind {kind})").into())
    }
}
