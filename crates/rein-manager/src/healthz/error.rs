//! Errors of the health-probe server.

use std::net::SocketAddr;

/// What went wrong while setting up or running the health-probe server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding the listening socket failed.
    #[error("binding the health-probe server to {addr}")]
    Bind {
        /// The address that was asked for.
        addr: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// A check was added after the server started serving.
    #[error("adding check {name:?}: the health-probe server has already started")]
    AlreadyStarted {
        /// The check's name.
        name: String,
    },
    /// A check with the same name is already registered for that endpoint.
    #[error("adding check {name:?}: a check with that name already exists")]
    DuplicateCheck {
        /// The check's name.
        name: String,
    },
    /// The check name is empty or contains `/`.
    #[error("adding check {name:?}: names must be non-empty and contain no '/'")]
    InvalidName {
        /// The check's name.
        name: String,
    },
    /// The server was started twice.
    #[error("starting the health-probe server: it is already running or has run")]
    AlreadyRunning,
}
