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
    /// The server was started twice.
    #[error("starting the metrics server: it is already running or has run")]
    AlreadyRunning,
}
