//! Self-signed TLS: a fresh CA and a serving certificate for `127.0.0.1`/`localhost`; client
//! certificates signed by the CA are asked for (not required) and verified.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose, SanType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::Error;

/// The TLS material of one server.
pub(crate) struct Tls {
    /// The CA certificate, PEM (goes into the kubeconfig).
    pub(crate) ca_pem: String,
    /// The acceptor for incoming connections.
    pub(crate) acceptor: tokio_rustls::TlsAcceptor,
    /// The CA, which also issues client certificates.
    pub(crate) ca: crate::auth::Ca,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("ca_pem", &self.ca_pem)
            .finish_non_exhaustive()
    }
}

/// A fresh CA certificate alone, PEM: what the `kube-root-ca.crt` ConfigMaps publish when the
/// server runs without TLS.
pub(crate) fn generate_ca_pem() -> Result<String, Error> {
    let err = |e: rcgen::Error| Error::Tls(e.to_string());
    let key = KeyPair::generate().map_err(err)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "rein-testenv-ca");
    Ok(params.self_signed(&key).map_err(err)?.pem())
}

/// Generates a CA and a serving certificate valid for `ip` and `localhost`.
pub(crate) fn generate(ip: std::net::IpAddr) -> Result<Tls, Error> {
    let err = |e: rcgen::Error| Error::Tls(e.to_string());
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "rein-testenv-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key).map_err(err)?;

    let key = KeyPair::generate().map_err(err)?;
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).map_err(err)?;
    params.subject_alt_names.push(SanType::IpAddress(ip));
    if !ip.is_loopback() {
        params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])));
    }
    params
        .distinguished_name
        .push(DnType::CommonName, "rein-apiserver");
    let cert = params.signed_by(&key, &ca_cert, &ca_key).map_err(err)?;

    let chain = vec![CertificateDer::from(cert.der().to_vec())];
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(ca_cert.der().to_vec()))
        .map_err(|e| Error::Tls(e.to_string()))?;
    let clients = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .map_err(|e| Error::Tls(e.to_string()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_client_cert_verifier(clients)
        .with_single_cert(chain, private)
        .map_err(|e| Error::Tls(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Tls {
        ca_pem: ca_cert.pem(),
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        ca: crate::auth::Ca {
            cert: ca_cert,
            key: ca_key,
        },
    })
}
