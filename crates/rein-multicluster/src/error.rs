//! The crate's errors: building fleets and controllers, and what providers report.

use std::path::PathBuf;

use rein_controller::BoxError;

use crate::name::{ClusterName, InvalidClusterName};

/// What went wrong setting up a fleet or one of its controllers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The hub manager refused the fleet's runnable (it is stopping).
    #[error("adding the fleet to the hub manager")]
    AddToManager(#[source] rein_manager::Error),
    /// A controller's name is empty, invalid or taken in this fleet.
    #[error(
        "naming the fleet controller {name:?}: letters, digits, '-', '_', '.', unique in the fleet"
    )]
    InvalidControllerName {
        /// The rejected name.
        name: String,
    },
    /// The builder has no `for_` (and so no kind to name the controller after), or `owns`
    /// came before `for_`.
    #[error("building a fleet controller: {problem}")]
    Build {
        /// What is missing.
        problem: &'static str,
    },
    /// The type is not in the hub's scheme.
    #[error("looking up the kind of {type_name} in the scheme")]
    UnknownKind {
        /// The Rust type.
        type_name: &'static str,
        /// Why.
        #[source]
        source: rein_client::Error,
    },
    /// Building a cluster's client failed.
    #[error("building the client of cluster {cluster}")]
    Client {
        /// The cluster.
        cluster: ClusterName,
        /// Why.
        #[source]
        source: kube_client::Error,
    },
    /// Creating a per-cluster controller failed.
    #[error("creating controller {name:?} for cluster {cluster}")]
    Controller {
        /// The per-cluster controller's name.
        name: String,
        /// The cluster.
        cluster: ClusterName,
        /// Why.
        #[source]
        source: rein_controller::Error,
    },
}

/// What a provider could not do.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// Reading the kubeconfig directory failed.
    #[error("reading the kubeconfig directory {}", dir.display())]
    ReadDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A kubeconfig did not parse, or named no usable context.
    #[error("loading the kubeconfig from {origin}")]
    Kubeconfig {
        /// Where it came from (a path, `Secret ns/name`).
        origin: String,
        /// Why.
        #[source]
        source: kube_client::config::KubeconfigError,
    },
    /// A kubeconfig is not UTF-8 text, or a Secret lacks its key.
    #[error("reading the kubeconfig from {origin}: {problem}")]
    KubeconfigData {
        /// Where it came from.
        origin: String,
        /// What is wrong.
        problem: String,
    },
    /// A name a provider found is not a valid cluster name.
    #[error("naming the cluster from {origin}")]
    ClusterName {
        /// Where the name came from.
        origin: String,
        /// Why.
        #[source]
        source: InvalidClusterName,
    },
    /// The provider's own watch of the hub failed.
    #[error("watching the hub for clusters ({what})")]
    Watch {
        /// What was watched.
        what: String,
        /// Why.
        #[source]
        source: BoxError,
    },
}
