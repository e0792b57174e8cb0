//! The one error type of the workload controllers' reconciles.

use rein_scheme::labels::ParseError;

/// Why a reconcile of a workload failed (it is retried with backoff).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// A request to the API server (or a read of the cache) failed; the client's error says
    /// which.
    #[error(transparent)]
    Api(#[from] rein_client::Error),
    /// An object's label selector does not parse.
    #[error("{object}: invalid label selector")]
    Selector {
        /// The object (`kind ns/name`).
        object: String,
        /// Why the selector does not parse.
        #[source]
        source: ParseError,
    },
    /// An object asks for something the controller cannot do (validation should have refused it).
    #[error("{object}: {problem}")]
    Invalid {
        /// The object (`kind ns/name`).
        object: String,
        /// What is wrong.
        problem: String,
    },
    /// Adopting an object was refused because its would-be owner changed meanwhile.
    #[error("{object}: cannot adopt: {problem}")]
    CannotAdopt {
        /// The owner (`kind ns/name`).
        object: String,
        /// What changed.
        problem: String,
    },
}
