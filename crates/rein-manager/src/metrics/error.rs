//! Errors of the metrics server.

use std::net::SocketAddr;

/// What went wrong while setting up or running the metrics server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding the listening socket failed.
    #[error("binding the metrics server to {addr}")]
    Bind {
        /// The address that was asked for.
        addr: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// Loading or generating the serving certificate of secure serving failed.
    #[error("setting up the metrics server's serving certificate")]
    Certificate(#[source] rein_webhook::Error),
    /// Secure serving was asked to check scrapers without a client to send the reviews with.
    #[error("secure metrics serving needs a client for TokenReviews and SubjectAccessReviews")]
    NoReviewClient,
    /// The server was started twice.
    #[error("starting the metrics server: it is already running or has run")]
    AlreadyRunning,
}
