//! Authentication: who sent a request. In kube-apiserver's order: a client certificate
//! signed by the server's CA, then a bearer token (the admin token, a [`User`]'s token, or a
//! service-account token this server signed); then impersonation headers. Also the
//! `authentication.k8s.io` reviews and `serviceaccounts/token`.

mod certs;
pub(crate) mod impersonate;
pub(crate) mod reviews;
mod sa_token;
mod user;

use std::collections::HashMap;

use http::{HeaderMap, header};
use serde_json::Value;

pub(crate) use certs::{Ca, ClientCert, user_of};
pub(crate) use sa_token::{Grant, ISSUER, Signer};
pub use user::User;
pub(crate) use user::{
    ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS, SYSTEM_MASTERS, UserInfo,
    service_account_groups, service_account_username, split_service_account,
};

use crate::resources::ResKey;
use crate::status::ApiError;
use crate::store::Store;

/// The name of the user the admin token (and the default kubeconfig) authenticates.
pub const ADMIN_USER: &str = "rein-testenv-admin";

/// The extra key kube-apiserver records a service-account token's id under.
const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// The admin: a member of `system:masters`, which may do anything.
pub(crate) fn admin() -> UserInfo {
    UserInfo {
        name: ADMIN_USER.to_string(),
        groups: vec![SYSTEM_MASTERS.to_string()],
        ..UserInfo::default()
    }
    .authenticated()
}

/// The user of a request without credentials, as kube's anonymous authenticator names it.
pub(crate) fn anonymous() -> UserInfo {
    UserInfo {
        name: "system:anonymous".to_string(),
        groups: vec!["system:unauthenticated".to_string()],
        ..UserInfo::default()
    }
}

/// The audiences of this server's API (`--api-audiences`, defaulting to the issuer).
pub(crate) fn api_audiences() -> Vec<String> {
    vec![ISSUER.to_string()]
}

/// The identity a connection's verified client certificate proved (none without one); the
/// connection puts it in each request's extensions.
#[derive(Debug, Clone, Default)]
pub(crate) struct PeerUser(pub(crate) Option<UserInfo>);

/// What the server knows about credentials.
#[derive(Debug)]
pub(crate) struct Authn {
    /// The admin's bearer token.
    pub(crate) admin_token: Option<String>,
    /// Users, by bearer token.
    tokens: HashMap<String, UserInfo>,
    /// Whether a request without credentials is the admin (no admin token configured).
    open: bool,
    /// Whether a request without credentials is `system:anonymous` (RBAC enforced). With
    /// authorization off (kube's `AlwaysAllow`) kube-apiserver turns anonymous requests off,
    /// and they answer 401.
    anonymous: bool,
    /// Signs and checks service-account tokens.
    pub(crate) signer: Signer,
    /// The CA issuing client certificates (with TLS).
    pub(crate) ca: Option<Ca>,
}

/// The answer for one bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenOutcome {
    /// The token authenticates this user for these audiences.
    Authenticated(UserInfo, Vec<String>),
    /// No authenticator knows the token.
    Unknown,
    /// The token was recognised and refused, with kube-apiserver's message.
    Invalid(String),
}

impl Authn {
    /// Credentials: the admin token (none: requests without credentials are the admin), the
    /// users with tokens, the CA for client certificates; `anonymous`: whether requests
    /// without credentials are `system:anonymous` rather than refused.
    pub(crate) fn new(
        admin_token: Option<String>,
        users: &[User],
        ca: Option<Ca>,
        anonymous: bool,
    ) -> Result<Authn, crate::Error> {
        let tokens = users
            .iter()
            .filter_map(|u| Some((u.token.clone()?, u.info())))
            .collect();
        Ok(Authn {
            open: admin_token.is_none(),
            anonymous,
            admin_token,
            tokens,
            signer: Signer::generate()?,
            ca,
        })
    }

    /// Who sent a request with `headers` over a connection whose client certificate proved
    /// `peer`: 401 Unauthorized when credentials are given and wrong, or missing where
    /// anonymous requests are off; `system:anonymous` (group `system:unauthenticated`) when
    /// missing where they are on.
    pub(crate) fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: Option<&UserInfo>,
        store: &Store,
    ) -> Result<UserInfo, ApiError> {
        if let Some(user) = peer {
            return Ok(user.clone());
        }
        match bearer(headers) {
            Some(token) => match self.token(token, &[], store) {
                TokenOutcome::Authenticated(user, _) => Ok(user),
                TokenOutcome::Unknown | TokenOutcome::Invalid(_) => Err(ApiError::unauthorized()),
            },
            None if self.open => Ok(admin()),
            None if self.anonymous => Ok(anonymous()),
            None => Err(ApiError::unauthorized()),
        }
    }

    /// Authenticates `token` for `audiences` (empty: the API's), as TokenReview does.
    pub(crate) fn token(&self, token: &str, audiences: &[String], store: &Store) -> TokenOutcome {
        let wanted = if audiences.is_empty() {
            api_audiences()
        } else {
            audiences.to_vec()
        };
        let fixed = if self.admin_token.as_deref() == Some(token) {
            Some(admin())
        } else {
            self.tokens.get(token).cloned()
        };
        if let Some(user) = fixed {
            // Audience-agnostic tokens are good for the API's audiences only.
            let api = api_audiences();
            let common = intersect(&api, &wanted);
            if common.is_empty() {
                return TokenOutcome::Invalid(audience_mismatch(&api, &wanted));
            }
            return TokenOutcome::Authenticated(user, common);
        }
        match self.signer.verify(token) {
            Err(sa_token::Refused::NotOurs) => TokenOutcome::Unknown,
            Err(sa_token::Refused::Invalid(why)) => TokenOutcome::Invalid(why),
            Ok(claims) => {
                let common = intersect(&claims.audiences, &wanted);
                if common.is_empty() {
                    return TokenOutcome::Invalid(audience_mismatch(&claims.audiences, &wanted));
                }
                let sa = store.lock().get(
                    &service_accounts(),
                    &(claims.namespace.clone(), claims.name.clone()),
                );
                let Some(sa) = sa else {
                    return TokenOutcome::Invalid(format!(
                        "serviceaccount \"{}\" not found",
                        claims.name
                    ));
                };
                if sa.pointer("/metadata/deletionTimestamp").is_some() {
                    return TokenOutcome::Invalid(format!(
                        "service account {}/{} has been deleted",
                        claims.namespace, claims.name
                    ));
                }
                let uid = crate::store::uid_of(&sa).unwrap_or_default();
                if uid != claims.uid {
                    return TokenOutcome::Invalid(format!(
                        "service account UID ({uid}) does not match claim ({})",
                        claims.uid
                    ));
                }
                let mut groups = service_account_groups(&claims.namespace);
                groups.push(ALL_AUTHENTICATED.to_string());
                let mut user = UserInfo {
                    name: service_account_username(&claims.namespace, &claims.name),
                    uid: claims.uid.clone(),
                    groups,
                    ..UserInfo::default()
                };
                user.extra.insert(
                    CREDENTIAL_ID.to_string(),
                    vec![format!("JTI={}", claims.jti)],
                );
                TokenOutcome::Authenticated(user, common)
            }
        }
    }
}

/// Whether `group`/`plural` is one of the create-only reviews or the legacy `v1/bindings`
/// (listed by discovery with the `create` verb only, without storage, and by OpenAPI with a
/// POST only).
pub(crate) fn create_only(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        ("", "bindings")
            | (reviews::GROUP, "tokenreviews" | "selfsubjectreviews")
            | (
                crate::rbac::reviews::GROUP,
                "subjectaccessreviews"
                    | "selfsubjectaccessreviews"
                    | "localsubjectaccessreviews"
                    | "selfsubjectrulesreviews"
            )
    )
}

/// The `serviceaccounts` storage key.
pub(crate) fn service_accounts() -> ResKey {
    ResKey {
        group: String::new(),
        plural: "serviceaccounts".to_string(),
    }
}

/// The bearer token of `Authorization: Bearer <token>`, if any (empty counts as none).
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The audiences in both lists, in `a`'s order.
fn intersect(a: &[String], b: &[String]) -> Vec<String> {
    a.iter().filter(|x| b.contains(x)).cloned().collect()
}

/// kube-apiserver's message for a token whose audiences miss the wanted ones.
fn audience_mismatch(token: &[String], wanted: &[String]) -> String {
    format!(
        "token audiences {} is invalid for the target audiences {}",
        go_quoted(token),
        go_quoted(wanted)
    )
}

/// A string list as Go's `%q` prints it: `["a" "b"]`.
pub(crate) fn go_quoted(items: &[String]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|s| Value::String(s.clone()).to_string())
        .collect();
    format!("[{}]", parts.join(" "))
}
