//! Service-account tokens: JWTs signed with a key generated at start-up, issued by
//! `serviceaccounts/token` (TokenRequest) and accepted by this server's authentication and
//! TokenReview, as kube-apiserver's `--service-account-signing-key-file` tokens are.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation, errors::ErrorKind};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};

use crate::Error;

/// The issuer (`iss`) of the tokens, kube-apiserver's usual `--service-account-issuer`.
pub(crate) const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The signing key and its public half.
pub(crate) struct Signer {
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// The key id (`kid`): a digest of the public key, as kube-apiserver derives it.
    kid: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// What a token says about its service account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claims {
    /// The service account's namespace.
    pub(crate) namespace: String,
    /// The service account's name.
    pub(crate) name: String,
    /// The service account's uid when the token was issued.
    pub(crate) uid: String,
    /// The token's id (`jti`).
    pub(crate) jti: String,
    /// The token's audiences (`aud`).
    pub(crate) audiences: Vec<String>,
}

/// What a token is issued for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grant<'a> {
    /// The service account's namespace.
    pub(crate) namespace: &'a str,
    /// The service account's name.
    pub(crate) name: &'a str,
    /// The service account's uid.
    pub(crate) uid: &'a str,
    /// The audiences (`aud`).
    pub(crate) audiences: &'a [String],
    /// Issued at (Unix seconds).
    pub(crate) now: i64,
    /// Valid for this many seconds.
    pub(crate) seconds: i64,
    /// The object the token is bound to (`spec.boundObjectRef`).
    pub(crate) bound: Option<&'a Value>,
}

/// Why a token was refused (or that it is not one of ours).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not a JWT this server issued: another authenticator may know it.
    NotOurs,
    /// Ours, but not valid: kube-apiserver's message.
    Invalid(String),
}

impl Signer {
    /// A fresh ECDSA P-256 key.
    pub(crate) fn generate() -> Result<Signer, Error> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| Error::Tls("generating the service-account signing key".into()))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|_| Error::Tls("reading the service-account signing key".into()))?;
        let public = pair.public_key().as_ref().to_vec();
        let digest = ring::digest::digest(&ring::digest::SHA256, &public);
        use base64::Engine as _;
        let kid = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref());
        Ok(Signer {
            encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
            decoding: DecodingKey::from_ec_der(&public),
            kid,
        })
    }

    /// Signs a token for `grant`.
    pub(crate) fn issue(&self, grant: &Grant<'_>) -> Result<String, String> {
        let Grant {
            namespace,
            name,
            uid,
            audiences,
            now,
            seconds,
            bound,
        } = *grant;
        let jti = crate::ops::meta::new_uid();
        let mut kubernetes = json!({
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": uid},
        });
        if let Some(bound) = bound
            && let Some(kind) = bound.get("kind").and_then(Value::as_str)
        {
            let key = kind.to_ascii_lowercase();
            kubernetes[key] = json!({
                "name": bound.get("name").cloned().unwrap_or(Value::Null),
                "uid": bound.get("uid").cloned().unwrap_or(Value::Null),
            });
        }
        let claims = json!({
            "iss": ISSUER,
            "sub": super::service_account_username(namespace, name),
            "aud": audiences,
            "iat": now,
            "nbf": now,
            "exp": now + seconds,
            "jti": jti,
            "kubernetes.io": kubernetes,
        });
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, &claims, &self.encoding).map_err(|e| e.to_string())
    }

    /// Checks the signature, issuer and validity period of `token` (not the audiences, not
    /// whether the service account still exists).
    pub(crate) fn verify(&self, token: &str) -> Result<Claims, Refused> {
        if token.split('.').count() != 3 {
            return Err(Refused::NotOurs);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| Refused::NotOurs)?;
        if header.alg != Algorithm::ES256 {
            return Err(Refused::NotOurs);
        }
        let mut validation = Validation::new(Algorithm::ES256);
        validation.leeway = 0;
        validation.validate_aud = false;
        validation.validate_nbf = true;
        validation.set_issuer(&[ISSUER]);
        let data = jsonwebtoken::decode::<Value>(token, &self.decoding, &validation).map_err(
            |e| match e.kind() {
                ErrorKind::ExpiredSignature => {
                    Refused::Invalid("service account token has expired".into())
                }
                ErrorKind::ImmatureSignature => {
                    Refused::Invalid("service account token is not valid yet".into())
                }
                _ => Refused::NotOurs,
            },
        )?;
        let claims = data.claims;
        let text = |pointer: &str| {
            claims
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let audiences = match claims.get("aud") {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        };
        let out = Claims {
            namespace: text("/kubernetes.io/namespace"),
            name: text("/kubernetes.io/serviceaccount/name"),
            uid: text("/kubernetes.io/serviceaccount/uid"),
            jti: text("/jti"),
            audiences,
        };
        if out.namespace.is_empty() || out.name.is_empty() {
            return Err(Refused::Invalid(
                "service account token claims are missing the service account".into(),
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant<'a>(uid: &'a str, audiences: &'a [String], now: i64) -> Grant<'a> {
        Grant {
            namespace: "ns",
            name: "sa",
            uid,
            audiences,
            now,
            seconds: 600,
            bound: None,
        }
    }

    #[test]
    fn a_token_verifies_with_its_claims() {
        let signer = Signer::generate().expect("key");
        let now = jiff::Timestamp::now().as_second();
        let token = signer
            .issue(&grant("u1", &["api".into()], now))
            .expect("signs");
        let claims = signer.verify(&token).expect("verifies");
        assert_eq!(
            (
                claims.namespace.as_str(),
                claims.name.as_str(),
                claims.uid.as_str()
            ),
            ("ns", "sa", "u1")
        );
        assert_eq!(claims.audiences, vec!["api".to_string()]);
    }

    #[test]
    fn expired_foreign_and_garbage_tokens_are_refused() {
        let signer = Signer::generate().expect("key");
        let other = Signer::generate().expect("key");
        let now = jiff::Timestamp::now().as_second();
        let old = signer.issue(&grant("u", &[], now - 7200)).expect("signs");
        assert_eq!(
            signer.verify(&old),
            Err(Refused::Invalid("service account token has expired".into()))
        );
        let foreign = other.issue(&grant("u", &[], now)).expect("signs");
        assert_eq!(signer.verify(&foreign), Err(Refused::NotOurs));
        assert_eq!(signer.verify("a.b.c"), Err(Refused::NotOurs));
        assert_eq!(signer.verify("plain"), Err(Refused::NotOurs));
    }
}
