//! Errors of the webhook server, its TLS set-up and its test client.

use std::net::SocketAddr;
use std::path::PathBuf;

/// What went wrong while setting up, running or calling the webhook server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding the listening socket failed.
    #[error("binding the webhook server to {addr}")]
    Bind {
        /// The address that was asked for.
        addr: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// Reading a certificate or key file failed.
    #[error("reading {path}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Writing a generated certificate or key file failed.
    #[error("writing {path}")]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The PEM data held no certificate.
    #[error("loading the serving certificate from {what}: no certificate found")]
    NoCertificate {
        /// Where the PEM came from.
        what: String,
    },
    /// The PEM data held no private key.
    #[error("loading the serving key from {what}: no private key found")]
    NoPrivateKey {
        /// Where the PEM came from.
        what: String,
    },
    /// Parsing PEM data failed.
    #[error("parsing PEM from {what}")]
    Pem {
        /// Where the PEM came from.
        what: String,
        /// The parse error.
        #[source]
        source: std::io::Error,
    },
    /// rustls refused the certificate, key or protocol settings.
    #[error("building the TLS configuration")]
    Tls(#[source] rustls::Error),
    /// Generating a certificate with rcgen failed.
    #[error("generating a self-signed certificate")]
    Generate(#[source] rcgen::Error),
    /// A handler is already registered at the path.
    #[error("registering a webhook at {path:?}: the path is already taken")]
    DuplicatePath {
        /// The path.
        path: String,
    },
    /// The path does not start with `/`.
    #[error("registering a webhook at {path:?}: paths must start with '/'")]
    InvalidPath {
        /// The path.
        path: String,
    },
    /// A conversion could not be registered.
    #[error("registering the conversion of {kind}: {why}")]
    Conversion {
        /// The hub's kind.
        kind: String,
        /// What is wrong with it.
        why: String,
    },
    /// The server was started twice.
    #[error("starting the webhook server: it is already running or has run")]
    AlreadyRunning,
    /// The client could not connect.
    #[error("connecting to the webhook server at {addr}")]
    Connect {
        /// The server address.
        addr: SocketAddr,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// The server name is not a valid DNS name or IP address.
    #[error("using {name:?} as the TLS server name")]
    ServerName {
        /// The name.
        name: String,
        /// Why it is invalid.
        #[source]
        source: rustls::pki_types::InvalidDnsNameError,
    },
    /// The TLS handshake failed.
    #[error("TLS handshake with the webhook server")]
    Handshake(#[source] std::io::Error),
    /// The HTTP exchange failed.
    #[error("sending the request to the webhook server")]
    Http(#[source] hyper::Error),
    /// Building the HTTP request failed.
    #[error("building the request to the webhook server")]
    Request(#[source] ::http::Error),
    /// Encoding the review failed.
    #[error("encoding the AdmissionReview")]
    Encode(#[source] serde_json::Error),
    /// The answer was not an AdmissionReview with a response.
    #[error("decoding the webhook's answer (HTTP {status})")]
    Decode {
        /// The HTTP status of the answer.
        status: u16,
        /// The decode error.
        #[source]
        source: serde_json::Error,
    },
    /// The answer was an AdmissionReview without a response.
    #[error("reading the webhook's answer: the AdmissionReview has no response")]
    NoResponse,
}
