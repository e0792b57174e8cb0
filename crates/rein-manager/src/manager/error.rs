//! Errors of building and running a manager.

use std::time::Duration;

use rein_controller::BoxError;

/// A failure to build, start or stop a [`Manager`](super::Manager).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `start` was called a second time.
    #[error("starting the manager: manager already started")]
    AlreadyStarted,
    /// A runnable was added while the manager was stopping.
    #[error("adding a runnable: can't accept new runnable as stop procedure is already engaged")]
    Stopping,
    /// Leader election is enabled but has no lease name.
    #[error("configuring leader election: LeaderElectionID must be configured")]
    MissingLeaderElectionId,
    /// Leader election is enabled, no namespace is given and we are not in a cluster.
    #[error(
        "configuring leader election: not running in-cluster, please specify LeaderElectionNamespace"
    )]
    MissingLeaderElectionNamespace,
    /// The leader-election configuration is invalid.
    #[error("configuring leader election")]
    LeaderElection(#[source] crate::leaderelection::Error),
    /// Building the Kubernetes client from the config failed.
    #[error("building the Kubernetes client")]
    Client(#[source] kube_client::Error),
    /// Starting a server (health probes, metrics, webhooks) failed.
    #[error("starting the {server} server")]
    Server {
        /// Which server.
        server: &'static str,
        /// What went wrong.
        #[source]
        source: BoxError,
    },
    /// The caches did not sync before the manager was stopped.
    #[error("waiting for the caches to sync: stopped before they synced")]
    CacheSync,
    /// The caches did not sync within [`Options::cache_sync_timeout`](super::Options::cache_sync_timeout).
    #[error("waiting for the caches to sync: not synced after {0:?}")]
    CacheSyncTimeout(std::time::Duration),
    /// A runnable failed; the manager stopped.
    #[error("running the manager: a runnable failed")]
    Runnable(#[source] BoxError),
    /// This process lost the leader lease; the manager stopped (the process should exit).
    #[error("running the manager: leader election lost")]
    LeaderElectionLost,
    /// Sharding is on but its Leases have no namespace and we are not in a cluster.
    #[error("configuring sharding: not running in-cluster, please specify the Lease namespace")]
    MissingShardingNamespace,
    /// The sharding options are invalid, or sharding failed while running.
    #[error("sharding")]
    Sharding(#[source] crate::sharding::Error),
    /// A sharded reconciler was asked for but [`Options::sharding`](super::Options::sharding)
    /// is off.
    #[error("wrapping a sharded reconciler: sharding is not enabled in the manager's options")]
    ShardingDisabled,
    /// This replica's shard Lease could not be renewed before its renew deadline: it left the
    /// ring and the manager stopped (the process should exit, as on [`Error::LeaderElectionLost`]).
    #[error("running the manager: shard lease lost")]
    ShardLeaseLost,
    /// Some runnables did not stop within the graceful-shutdown timeout.
    #[error(
        "stopping the manager: failed waiting for all runnables to end within grace period of {0:?}"
    )]
    GracePeriodExceeded(Duration),
}
