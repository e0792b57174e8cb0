//! Errors of config discovery.

use std::fmt;
use std::path::PathBuf;

use kube_client::config::KubeconfigError;

/// Which source named a kubeconfig file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The `--kubeconfig` flag (or [`ConfigSources::kubeconfig_flag`](super::ConfigSources)).
    Flag,
    /// The `KUBECONFIG` environment variable.
    Env,
    /// The default file `~/.kube/config`.
    Home,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Flag => f.write_str("the --kubeconfig flag"),
            Origin::Env => f.write_str("KUBECONFIG"),
            Origin::Home => f.write_str("the default location ~/.kube/config"),
        }
    }
}

/// A failure to find or load a Kubernetes client configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A kubeconfig file was found but could not be read or parsed.
    #[error("reading kubeconfig {path} (named by {origin})")]
    ReadKubeconfig {
        /// Which source named the file.
        origin: Origin,
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: KubeconfigError,
    },
    /// A kubeconfig was read but does not describe a usable cluster (missing context,
    /// cluster URL, unreadable certificate, ...).
    #[error("building a client config from the kubeconfig named by {origin}")]
    BuildConfig {
        /// Which source named the kubeconfig.
        origin: Origin,
        /// What went wrong.
        #[source]
        source: KubeconfigError,
    },
    /// The kubeconfig's certificate authority (`certificate-authority[-data]`) decodes but
    /// holds no PEM certificate, so no server could ever be trusted (client-go refuses it too).
    #[error(
        "building a client config from the kubeconfig named by {origin}: its certificate authority holds no PEM certificate"
    )]
    NoCertificateAuthority {
        /// Which source named the kubeconfig.
        origin: Origin,
    },
    /// No source yielded a configuration; `tried` says why each was skipped.
    #[error("finding a Kubernetes client config: nothing usable found (tried: {})", .tried.join("; "))]
    NotFound {
        /// One line per source, in the order they were tried.
        tried: Vec<String>,
    },
}
