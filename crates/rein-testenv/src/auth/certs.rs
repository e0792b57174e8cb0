//! Client certificates: issued by the server's generated CA with `CN=<user>` and
//! `O=<group>`, and read back from a TLS connection into the user they name, as
//! kube-apiserver's `--client-ca-file` authenticator reads them.

use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair, KeyUsagePurpose};
use rustls::pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::{User, UserInfo};
use crate::Error;

/// The CA that signs the serving certificate and the client certificates.
pub(crate) struct Ca {
    /// The CA certificate.
    pub(crate) cert: rcgen::Certificate,
    /// Its key.
    pub(crate) key: KeyPair,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca").finish_non_exhaustive()
    }
}

/// A client certificate and its key, both PEM.
#[derive(Debug, Clone)]
pub(crate) struct ClientCert {
    /// The certificate.
    pub(crate) cert_pem: String,
    /// The PKCS#8 private key.
    pub(crate) key_pem: String,
}

impl Ca {
    /// Issues a client certificate for `user`: `CN=<name>`, `O=<group>` (its first group:
    /// the certificate builder writes one value per attribute type).
    pub(crate) fn issue_client(&self, user: &User) -> Result<ClientCert, Error> {
        let err = |e: rcgen::Error| Error::Tls(e.to_string());
        if user.groups.len() > 1 {
            return Err(Error::ClientCertificate(format!(
                "a certificate names one group (O=) here; user {:?} has {} (give it a token \
                 instead)",
                user.name,
                user.groups.len()
            )));
        }
        let key = KeyPair::generate().map_err(err)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        params
            .distinguished_name
            .push(DnType::CommonName, user.name.clone());
        if let Some(group) = user.groups.first() {
            params
                .distinguished_name
                .push(DnType::OrganizationName, group.clone());
        }
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.cert, &self.key).map_err(err)?;
        Ok(ClientCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// The user a verified client certificate names: its common name, its organizations as
/// groups, plus `system:authenticated`. `None` when it names no user.
pub(crate) fn user_of(cert: &CertificateDer<'_>) -> Option<UserInfo> {
    let (_, parsed) = X509Certificate::from_der(cert.as_ref()).ok()?;
    let subject = parsed.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect();
    Some(
        UserInfo {
            name,
            groups,
            ..UserInfo::default()
        }
        .authenticated(),
    )
}
