//! Errors of sharding.

/// A sharding failure: invalid options, or the ring lost this shard.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An option is invalid (a name that cannot be a label, a Lease name or a selector).
    #[error("invalid sharding option {option}: {reason}")]
    InvalidOption {
        /// Which option.
        option: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The shard and coordinator Leases need a namespace and none was given.
    #[error("sharding needs a namespace for its Leases")]
    MissingNamespace,
    /// The Lease timing breaks client-go's leader-election rules.
    #[error("validating the sharding lease timing")]
    LeaseConfig(#[source] rein_leaderelection::Error),
    /// A reconciler was requested for a kind the options do not shard.
    #[error("kind {kind} is not sharded by ring {ring} (add it with ShardingOptions::kind)")]
    KindNotSharded {
        /// The ring.
        ring: String,
        /// The kind asked for.
        kind: String,
    },
    /// A kind is listed twice.
    #[error("kind {kind} is listed twice in ring {ring}")]
    DuplicateKind {
        /// The ring.
        ring: String,
        /// The kind.
        kind: String,
    },
    /// Reading through the cache failed.
    #[error("reading {kind} from the cache")]
    Cache {
        /// The kind being read.
        kind: String,
        /// The cache error.
        #[source]
        source: rein_client::Error,
    },
    /// Registering an event handler on an informer failed.
    #[error("watching {kind} in the cache")]
    Informer {
        /// The kind being watched.
        kind: String,
        /// The informer error.
        #[source]
        source: rein_informer::Error,
    },
    /// This replica's shard Lease could not be renewed before the renew deadline: it left the
    /// ring and must stop reconciling (a manager stops, as when leader election is lost).
    #[error("shard {shard} of ring {ring} lost its Lease")]
    MembershipLost {
        /// The ring.
        ring: String,
        /// This replica's shard id.
        shard: String,
    },
    /// [`Sharding::run`](crate::Sharding::run) was called twice.
    #[error("sharding of ring {ring} is already running")]
    AlreadyRunning {
        /// The ring.
        ring: String,
    },
}
