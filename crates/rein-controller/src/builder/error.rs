//! Errors of building a controller with the builder.

use crate::reconcile::BoxError;

/// Why the builder could not build a controller.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// `for_` was called twice.
    #[error("building a controller: for_() should only be called once")]
    ForCalledTwice,
    /// `owns` without `for_`.
    #[error("building a controller: owns() can only be used together with for_()")]
    OwnsWithoutFor,
    /// No watches at all.
    #[error(
        "building a controller: there are no watches configured, the controller would never be triggered; use for_(), owns() or watches()"
    )]
    NoWatches,
    /// Neither `for_` nor `named`.
    #[error("building a controller: one of for_() or named() must be called")]
    NoName,
    /// `sharded()` without `for_`: only the `for_` kind's objects are assigned to shards.
    #[error("building a controller: sharded() can only be used together with for_()")]
    ShardedWithoutFor,
    /// The host could not shard the controller (it does not shard the `for_` kind).
    #[error("building a controller sharded by {kind}")]
    Sharding {
        /// The `for_` kind.
        kind: String,
        /// The host's error.
        #[source]
        source: BoxError,
    },
    /// A leader-elected controller for a kind the host shards: its cache would hold only
    /// this replica's share of the objects.
    #[error(
        "building a controller: {kind} is sharded across replicas, so a leader-elected controller for it would see only this replica's share; use sharded()"
    )]
    SingletonOfShardedKind {
        /// The `for_` kind.
        kind: String,
    },
    /// The controller itself could not be created (invalid or duplicate name).
    #[error("building a controller")]
    Controller(#[from] crate::controller::Error),
    /// The host refused the controller.
    #[error("adding controller {name:?} to its host")]
    Add {
        /// The controller's name.
        name: String,
        /// The host's error.
        #[source]
        source: BoxError,
    },
}
