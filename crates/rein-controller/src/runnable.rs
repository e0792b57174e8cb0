//! The `Runnable` and `ControllerHost` traits: how a manager runs controllers and how the
//! builder reaches the manager, without this crate depending on the manager.

use std::sync::Arc;

use async_trait::async_trait;
use rein_client::Client;
use rein_client::cache::Cache;
use rein_scheme::Scheme;
use tokio_util::sync::CancellationToken;

use crate::reconcile::BoxError;

/// Something a manager starts and stops: controllers, servers, user tasks.
#[async_trait]
pub trait Runnable: Send + Sync {
    /// Runs until `stop` is cancelled (or fails). Must return soon after `stop` is cancelled.
    async fn start(&self, stop: CancellationToken) -> Result<(), BoxError>;

    /// Whether it may only run while this process holds the leader lease (default: yes).
    fn needs_leader_election(&self) -> bool {
        true
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
}
