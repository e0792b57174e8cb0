//! Errors of building and running a controller.

use std::time::Duration;

use crate::reconcile::BoxError;

/// Why a controller could not be built or started, or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The name was empty.
    #[error("creating a controller: a name must be specified")]
    EmptyName,
    /// The name had characters other than letters, digits, `-`, `_` and `.`, or was too long.
    #[error(
        "creating controller {name:?}: names may only contain letters, digits, '-', '_' and '.' (at most 253)"
    )]
    InvalidName {
        /// The rejected name.
        name: String,
    },
    /// Another controller in this process has the name.
    #[error(
        "creating controller {name:?}: a controller with this name already exists; names must be unique (or set skip_name_validation)"
    )]
    DuplicateName {
        /// The duplicated name.
        name: String,
    },
    /// `start` was called twice.
    #[error("starting controller {name:?}: it was started more than once")]
    AlreadyStarted {
        /// The controller.
        name: String,
    },
    /// A source failed to start.
    #[error("starting controller {name:?}: starting {source_name} failed")]
    SourceStart {
        /// The controller.
        name: String,
        /// The source's description.
        source_name: String,
        /// The source's error.
        #[source]
        source: BoxError,
    },
    /// A source did not start and sync within the cache-sync timeout.
    #[error(
        "starting controller {name:?}: timed out after {timeout:?} waiting for {source_name} to sync"
    )]
    SyncTimeout {
        /// The controller.
        name: String,
        /// The source's description.
        source_name: String,
        /// The configured timeout.
        timeout: Duration,
    },
    /// Running reconciles did not finish within the graceful shutdown timeout.
    #[error("stopping controller {name:?}: {running} reconciles still running after {timeout:?}")]
    StopTimeout {
        /// The controller.
        name: String,
        /// Workers that were abandoned.
        running: usize,
        /// The configured timeout.
        timeout: Duration,
    },
}
