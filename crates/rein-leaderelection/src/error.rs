//! Errors of leader election.

/// A leader-election failure: an invalid configuration or a failed lock operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration breaks one of client-go's rules (the message is client-go's).
    #[error("validating the leader election config: {reason}")]
    InvalidConfig {
        /// Which rule was broken.
        reason: &'static str,
    },
    /// Reading the Lease failed (other than NotFound).
    #[error("reading lease {lease}")]
    Get {
        /// `namespace/name` of the Lease.
        lease: String,
        /// The API error.
        #[source]
        source: kube_client::Error,
    },
    /// Creating the Lease failed (for instance because another candidate created it first).
    #[error("creating lease {lease}")]
    Create {
        /// `namespace/name` of the Lease.
        lease: String,
        /// The API error.
        #[source]
        source: kube_client::Error,
    },
    /// Updating the Lease failed (a conflict means another candidate wrote it first).
    #[error("updating lease {lease}")]
    Update {
        /// `namespace/name` of the Lease.
        lease: String,
        /// The API error.
        #[source]
        source: kube_client::Error,
    },
    /// An update was attempted before any successful get or create.
    #[error("updating lease {lease}: lease not initialized, call get or create first")]
    NotInitialized {
        /// `namespace/name` of the Lease.
        lease: String,
    },
    /// A lock operation did not finish in time.
    #[error("{action} lease {lease}: timed out")]
    Timeout {
        /// What was being attempted.
        action: &'static str,
        /// `namespace/name` of the Lease.
        lease: String,
    },
    /// [`LeaderElector::check`](super::LeaderElector::check): we believe we lead but have not
    /// renewed for longer than the lease duration plus the tolerance.
    #[error(
        "checking leader election health: lease {lease} not renewed for {since:?} (tolerated: {tolerated:?})"
    )]
    LeaseExpired {
        /// `namespace/name` of the Lease.
        lease: String,
        /// Time since the last successful renewal.
        since: std::time::Duration,
        /// Lease duration plus the tolerance.
        tolerated: std::time::Duration,
    },
}
