//! The crate's error type.

/// Why starting, configuring or talking to the test server failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Binding the listening socket failed.
    #[error("binding the API server to {addr}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// Starting the server's runtime thread failed.
    #[error("starting the API server's runtime")]
    Runtime(#[source] std::io::Error),
    /// Generating or loading the TLS certificates failed.
    #[error("setting up TLS: {0}")]
    Tls(String),
    /// Building a kube-client `Config` from the kubeconfig failed.
    #[error("building the client configuration")]
    Config(#[source] kube_client::config::KubeconfigError),
    /// Building the kube-client `Client` failed.
    #[error("building the client")]
    Client(#[source] kube_client::Error),
    /// Writing the kubeconfig file failed.
    #[error("writing the kubeconfig to {path}")]
    WriteKubeconfig {
        /// The file written.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Building the kubeconfig document failed.
    #[error("building the kubeconfig")]
    Kubeconfig(#[source] serde_json::Error),
    /// Serialising the kubeconfig failed.
    #[error("serialising the kubeconfig")]
    Serialize(#[source] serde_saphyr::SerializeError),
    /// Creating or reading a CRD given to `TestEnvBuilder::crd` failed.
    #[error("installing CRD {name}")]
    InstallCrd {
        /// The CRD's name.
        name: String,
        /// The request's error.
        #[source]
        source: kube_client::Error,
    },
    /// A client certificate was asked for on a server without TLS, or could not be issued.
    #[error("issuing a client certificate: {0}")]
    ClientCertificate(String),
    /// Opening the file the request log is exported to (`TestEnvBuilder::request_log_export`,
    /// `REIN_TESTENV_REQUEST_LOG`) failed.
    #[error("opening the request log export {path}")]
    RequestLogExport {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A CRD given to `TestEnvBuilder::crd` did not become `Established`.
    #[error("CRD {name} was not established: {reason}")]
    CrdNotEstablished {
        /// The CRD's name.
        name: String,
        /// Why: the `NamesAccepted=False` message, or the timeout.
        reason: String,
    },
}
