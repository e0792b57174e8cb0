//! Serving certificates: loading PEM files, generating a CA and serving certificate for
//! tests with rcgen, and the rustls server and client configurations (TLS 1.2 and 1.3 only).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use super::certwatcher::CertWatcher;
use super::error::Error;

/// Where the serving certificate and key come from.
#[derive(Clone, PartialEq, Eq)]
pub enum CertSource {
    /// PEM files on disk (controller-runtime's `CertDir` + `tls.crt` / `tls.key`).
    Files {
        /// The certificate chain, leaf first.
        cert_path: PathBuf,
        /// The private key (PKCS#8, PKCS#1 or SEC1).
        key_path: PathBuf,
    },
    /// PEM text held in memory.
    Pem {
        /// The certificate chain, leaf first.
        cert_pem: String,
        /// The private key.
        key_pem: String,
    },
}

impl fmt::Debug for CertSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Files {
                cert_path,
                key_path,
            } => f
                .debug_struct("Files")
                .field("cert_path", cert_path)
                .field("key_path", key_path)
                .finish(),
            // Never print key material.
            Self::Pem { .. } => f.debug_struct("Pem").finish_non_exhaustive(),
        }
    }
}

impl CertSource {
    /// `tls.crt` and `tls.key` in `dir`.
    pub fn from_dir(dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref();
        Self::Files {
            cert_path: dir.join("tls.crt"),
            key_path: dir.join("tls.key"),
        }
    }

    /// controller-runtime's default: `<tmp>/k8s-webhook-server/serving-certs`.
    pub fn default_dir() -> Self {
        Self::from_dir(
            std::env::temp_dir()
                .join("k8s-webhook-server")
                .join("serving-certs"),
        )
    }
}

/// The rustls server configuration for `source`: TLS 1.2 and 1.3 only, HTTP/2 and HTTP/1.1
/// offered through ALPN. Certificates from files are re-read when they change (see
/// `certwatcher`).
pub fn server_config(source: &CertSource) -> Result<Arc<ServerConfig>, Error> {
    let builder =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(Error::Tls)?
            .with_no_client_auth();
    let mut config = match source {
        CertSource::Files {
            cert_path,
            key_path,
        } => builder.with_cert_resolver(Arc::new(CertWatcher::load(
            cert_path.clone(),
            key_path.clone(),
        )?)),
        CertSource::Pem { cert_pem, key_pem } => {
            let what = "in-memory PEM";
            builder
                .with_single_cert(parse_certs(cert_pem, what)?, parse_key(key_pem, what)?)
                .map_err(Error::Tls)?
        }
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A rustls client configuration trusting only the CA certificates in `ca_pem`.
pub(crate) fn client_config(ca_pem: &str) -> Result<Arc<ClientConfig>, Error> {
    let mut roots = RootCertStore::empty();
    for cert in parse_certs(ca_pem, "the CA bundle")? {
        roots.add(cert).map_err(Error::Tls)?;
    }
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(Error::Tls)?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(Arc::new(config))
}

pub(crate) fn parse_certs(pem: &str, what: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let mut reader = pem.as_bytes();
    let mut certs = Vec::new();
    for cert in rustls_pemfile::certs(&mut reader) {
        certs.push(cert.map_err(|source| Error::Pem {
            what: what.to_owned(),
            source,
        })?);
    }
    if certs.is_empty() {
        return Err(Error::NoCertificate {
            what: what.to_owned(),
        });
    }
    Ok(certs)
}

pub(crate) fn parse_key(pem: &str, what: &str) -> Result<PrivateKeyDer<'static>, Error> {
    let mut reader = pem.as_bytes();
    rustls_pemfile::private_key(&mut reader)
        .map_err(|source| Error::Pem {
            what: what.to_owned(),
            source,
        })?
        .ok_or_else(|| Error::NoPrivateKey {
            what: what.to_owned(),
        })
}

/// A throw-away CA and a serving certificate it signed, for tests and local runs (what
/// envtest's `WebhookInstallOptions` generates).
#[derive(Clone)]
pub struct GeneratedCertificates {
    /// The CA certificate clients should trust (PEM).
    pub ca_pem: String,
    /// The serving certificate (PEM).
    pub cert_pem: String,
    /// The serving certificate's private key (PEM).
    pub key_pem: String,
}

impl fmt::Debug for GeneratedCertificates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeneratedCertificates")
            .field("ca_pem", &self.ca_pem)
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

impl GeneratedCertificates {
    /// Generates a CA and a serving certificate for `hosts` (DNS names or IP addresses,
    /// e.g. `["localhost", "127.0.0.1"]`).
    pub fn generate(hosts: &[&str]) -> Result<Self, Error> {
        let ca_key = KeyPair::generate().map_err(Error::Generate)?;
        let mut ca_params =
            CertificateParams::new(Vec::<String>::new()).map_err(Error::Generate)?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "rein webhook test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = ca_params.self_signed(&ca_key).map_err(Error::Generate)?;

        let key = KeyPair::generate().map_err(Error::Generate)?;
        let names: Vec<String> = hosts.iter().map(|h| (*h).to_owned()).collect();
        let mut params = CertificateParams::new(names).map_err(Error::Generate)?;
        params.distinguished_name.push(
            DnType::CommonName,
            hosts.first().copied().unwrap_or("localhost"),
        );
        let cert = params
            .signed_by(&key, &ca, &ca_key)
            .map_err(Error::Generate)?;
        Ok(Self {
            ca_pem: ca.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// The serving certificate and key as an in-memory [`CertSource`].
    pub fn cert_source(&self) -> CertSource {
        CertSource::Pem {
            cert_pem: self.cert_pem.clone(),
            key_pem: self.key_pem.clone(),
        }
    }

    /// Writes `tls.crt`, `tls.key` and `ca.crt` into `dir` (created if missing) and returns
    /// the matching [`CertSource`].
    pub fn write_to_dir(&self, dir: impl AsRef<Path>) -> Result<CertSource, Error> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|source| Error::WriteFile {
            path: dir.to_owned(),
            source,
        })?;
        for (name, pem) in [
            ("tls.crt", &self.cert_pem),
            ("tls.key", &self.key_pem),
            ("ca.crt", &self.ca_pem),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, pem).map_err(|source| Error::WriteFile { path, source })?;
        }
        Ok(CertSource::from_dir(dir))
    }
}
