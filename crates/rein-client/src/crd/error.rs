//! Why installing a CRD, or waiting for it, failed.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionCondition;

/// Why [`install`](super::install) or [`wait_established`](super::wait_established) failed.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// The CRD has no `metadata.name` (it must be `<plural>.<group>`).
    #[error("installing a CRD: it has no metadata.name")]
    Unnamed,
    /// Creating or replacing the CRD failed (e.g. 422 for an invalid spec).
    #[error("writing CRD {name}")]
    Write {
        /// The CRD's name.
        name: String,
        /// The client's error, with the server's Status.
        #[source]
        source: crate::Error,
    },
    /// Reading the CRD back failed with something other than "not found yet".
    #[error("reading CRD {name}")]
    Read {
        /// The CRD's name.
        name: String,
        /// The client's error, with the server's Status.
        #[source]
        source: crate::Error,
    },
    /// The server refused the CRD's names (`NamesAccepted=False`), e.g. a plural another CRD
    /// of the group already uses; it will never be established as it is.
    #[error("CRD {name}: names not accepted ({reason}): {message}")]
    NamesNotAccepted {
        /// The CRD's name.
        name: String,
        /// The condition's reason, e.g. `MultipleConflicts`.
        reason: String,
        /// The condition's message.
        message: String,
    },
    /// The CRD was not `Established` within the timeout.
    #[error("CRD {name} not established after {after:?}")]
    Timeout {
        /// The CRD's name.
        name: String,
        /// How long the call waited.
        after: Duration,
        /// The conditions the server last reported (empty if it never reported any).
        conditions: Vec<CustomResourceDefinitionCondition>,
    },
}
