//! Client certificates: issued by the server's generated CA with `CN=<user>` and one
//! `O=<group>` per group, and read back from a TLS connection into the user they name, as
//! kube-apiserver's `--client-ca-file` authenticator reads them.
//!
//! The certificate is written with yasna (rcgen's builder keeps one value per attribute type,
//! and a user may be in several groups) and signed with the CA's key through ring.

use base64::Engine as _;
use rcgen::KeyPair;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair};
use rustls::pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate};
use yasna::models::ObjectIdentifier;
use yasna::{DERWriter, Tag};

use super::{User, UserInfo};
use crate::Error;

/// How long an issued client certificate is valid.
const VALIDITY_DAYS: i64 = 365;

/// The CA that signs the serving certificate and the client certificates.
pub(crate) struct Ca {
    /// The CA certificate.
    pub(crate) cert: rcgen::Certificate,
    /// Its key (ECDSA P-256, rcgen's default).
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

fn oid(parts: &[u64]) -> ObjectIdentifier {
    ObjectIdentifier::from_slice(parts)
}

const ECDSA_WITH_SHA256: &[u64] = &[1, 2, 840, 10045, 4, 3, 2];
const COMMON_NAME: &[u64] = &[2, 5, 4, 3];
const ORGANIZATION: &[u64] = &[2, 5, 4, 10];
const KEY_USAGE: &[u64] = &[2, 5, 29, 15];
const EXTENDED_KEY_USAGE: &[u64] = &[2, 5, 29, 37];
const CLIENT_AUTH: &[u64] = &[1, 3, 6, 1, 5, 5, 7, 3, 2];

impl Ca {
    /// Issues a client certificate for `user`: `CN=<name>`, `O=<group>` for each group,
    /// client-authentication usage, valid from an hour ago for a year.
    pub(crate) fn issue_client(&self, user: &User) -> Result<ClientCert, Error> {
        let fail = |what: &str| Error::ClientCertificate(what.to_string());
        let key = KeyPair::generate().map_err(|e| Error::ClientCertificate(e.to_string()))?;
        let (_, ca) = X509Certificate::from_der(self.cert.der().as_ref())
            .map_err(|_| fail("reading the CA certificate"))?;
        let issuer = ca.subject().as_raw().to_vec();
        let rng = SystemRandom::new();
        let mut serial: [u8; 16] = rand::random();
        serial[0] &= 0x7f;
        let now = jiff::Timestamp::now().as_second();
        let utc = |seconds: i64| {
            jiff::Timestamp::from_second(seconds)
                .map(|t| t.strftime("%y%m%d%H%M%SZ").to_string())
                .map_err(|_| fail("computing the validity period"))
        };
        let (not_before, not_after) = (utc(now - 3600)?, utc(now + VALIDITY_DAYS * 86_400)?);
        let spki = key.public_key_der();
        let tbs = yasna::construct_der(|w| {
            w.write_sequence(|w| {
                w.next().write_tagged(Tag::context(0), |w| w.write_u8(2));
                w.next().write_bigint_bytes(&serial, true);
                w.next()
                    .write_sequence(|w| w.next().write_oid(&oid(ECDSA_WITH_SHA256)));
                w.next().write_der(&issuer);
                w.next().write_sequence(|w| {
                    for time in [&not_before, &not_after] {
                        w.next()
                            .write_tagged_implicit(yasna::tags::TAG_UTCTIME, |w| {
                                w.write_bytes(time.as_bytes())
                            });
                    }
                });
                w.next().write_sequence(|w| {
                    attribute(w.next(), COMMON_NAME, &user.name);
                    for group in &user.groups {
                        attribute(w.next(), ORGANIZATION, group);
                    }
                });
                w.next().write_der(&spki);
                w.next().write_tagged(Tag::context(3), |w| {
                    w.write_sequence(|w| {
                        // keyUsage (critical): digitalSignature.
                        w.next().write_sequence(|w| {
                            w.next().write_oid(&oid(KEY_USAGE));
                            w.next().write_bool(true);
                            w.next().write_bytes(&yasna::construct_der(|w| {
                                w.write_bitvec_bytes(&[0x80], 1)
                            }));
                        });
                        // extendedKeyUsage: clientAuth.
                        w.next().write_sequence(|w| {
                            w.next().write_oid(&oid(EXTENDED_KEY_USAGE));
                            w.next().write_bytes(&yasna::construct_der(|w| {
                                w.write_sequence(|w| w.next().write_oid(&oid(CLIENT_AUTH)))
                            }));
                        });
                    })
                });
            })
        });
        let signer = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_ASN1_SIGNING,
            &self.key.serialize_der(),
            &rng,
        )
        .map_err(|_| fail("reading the CA key"))?;
        let signature = signer
            .sign(&rng, &tbs)
            .map_err(|_| fail("signing the certificate"))?;
        let der = yasna::construct_der(|w| {
            w.write_sequence(|w| {
                w.next().write_der(&tbs);
                w.next()
                    .write_sequence(|w| w.next().write_oid(&oid(ECDSA_WITH_SHA256)));
                let sig = signature.as_ref();
                w.next().write_bitvec_bytes(sig, sig.len() * 8);
            })
        });
        Ok(ClientCert {
            cert_pem: pem("CERTIFICATE", &der),
            key_pem: key.serialize_pem(),
        })
    }
}

/// One relative distinguished name: `SET { SEQUENCE { type, UTF8String value } }`.
fn attribute(w: DERWriter<'_>, kind: &[u64], value: &str) {
    w.write_set(|w| {
        w.next().write_sequence(|w| {
            w.next().write_oid(&oid(kind));
            w.next().write_utf8_string(value);
        })
    });
}

/// PEM with 64-column lines.
fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issued_certificate_names_the_user_and_every_group() {
        let tls = crate::tls::generate(std::net::IpAddr::from([127, 0, 0, 1])).expect("tls");
        let user = User::new("erin").group("devs").group("ops");
        let cert = tls.ca.issue_client(&user).expect("issues");
        let der = der_of(&cert.cert_pem);
        let info = user_of(&CertificateDer::from(der)).expect("a user");
        assert_eq!(info.name, "erin");
        assert_eq!(info.groups, ["devs", "ops", "system:authenticated"]);
    }

    fn der_of(pem: &str) -> Vec<u8> {
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        base64::engine::general_purpose::STANDARD
            .decode(body)
            .expect("base64")
    }
}
