//! Secure serving for the metrics server (controller-runtime's `SecureServing` with
//! `filters.WithAuthenticationAndAuthorization`): HTTPS with a given or generated
//! certificate, each scrape's bearer token checked by a TokenReview and its request by a
//! SubjectAccessReview (verb: the lowercase HTTP method; non-resource URL: the path) against
//! the API server, with controller-runtime's answers and cache lifetimes, in caches of
//! bounded size.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hyper::StatusCode;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube_client::Api;
use kube_client::api::PostParams;
use parking_lot::Mutex;
use rein_serve::{Handler, text};
use rein_webhook::CertSource;
use tokio::time::Instant;

use super::cache::{self, ReviewCache};

/// How long a TokenReview's answer is reused, a token it refused as long as one it accepted
/// (controller-runtime's `CacheTTL`; k8s.io/apiserver's delegating authenticator uses it for
/// both). A review that fails (the API server unreachable, say) is not cached, as there.
pub const TOKEN_CACHE_TTL: Duration = Duration::from_secs(60);
/// How long an allowing SubjectAccessReview is reused (`AllowCacheTTL`).
pub const ALLOW_CACHE_TTL: Duration = Duration::from_secs(300);
/// How long a denying SubjectAccessReview is reused (`DenyCacheTTL`).
pub const DENY_CACHE_TTL: Duration = Duration::from_secs(30);
/// How many TokenReview answers are cached at most: beyond it the expired ones go, then the
/// least recently used, so a flood of distinct (bogus) tokens cannot grow the cache.
pub const TOKEN_CACHE_CAPACITY: usize = 4096;
/// How many SubjectAccessReview decisions are cached at most, as [`TOKEN_CACHE_CAPACITY`]
/// (8192: the size of k8s.io/apiserver's webhook authorizer's LRU cache).
pub const DECISION_CACHE_CAPACITY: usize = 8192;
/// How long a review request may take (`TokenAccessReviewTimeout`).
const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest refusal message of a TokenReview kept in the cache (for the log).
const MAX_CACHED_MESSAGE: usize = 256;

/// Serve metrics over HTTPS and (by default) let only scrapers the API server authenticates
/// and authorizes in. Set [`MetricsServerOptions::secure`](super::MetricsServerOptions::secure).
///
/// A scraper needs a bearer token the API server's TokenReview accepts (a ServiceAccount
/// token, say) and RBAC allowing `get` on the non-resource URL of the metrics path:
///
/// ```yaml
/// rules:
/// - nonResourceURLs: ["/metrics"]
///   verbs: ["get"]
/// ```
///
/// The manager's own identity needs `create` on `tokenreviews.authentication.k8s.io` and
/// `subjectaccessreviews.authorization.k8s.io` (the `system:auth-delegator` ClusterRole).
#[derive(Clone, Default)]
pub struct SecureServing {
    /// The serving certificate; `None` generates a self-signed one for `localhost` and the
    /// bind address when the server binds (controller-runtime does when `CertDir` is empty).
    /// Files ([`CertSource::Files`]) are re-read when they change.
    pub cert: Option<CertSource>,
    /// Serve over HTTPS without checking scrapers (default: `false`, every scrape is
    /// authenticated and authorized).
    pub skip_authorization: bool,
    /// The client the reviews are sent with; a manager fills in its own when `None`.
    pub client: Option<kube_client::Client>,
}

impl fmt::Debug for SecureServing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecureServing")
            .field("cert", &self.cert)
            .field("skip_authorization", &self.skip_authorization)
            .field("client", &self.client.is_some())
            .finish()
    }
}

/// The filter: authentication by TokenReview, authorization by SubjectAccessReview, with
/// bounded caches ([`TOKEN_CACHE_CAPACITY`], [`DECISION_CACHE_CAPACITY`]) keyed by digests.
pub(super) struct AccessFilter {
    client: kube_client::Client,
    /// The user of a token's digest, or why the TokenReview refused it.
    tokens: Mutex<ReviewCache<Result<UserInfo, String>>>,
    /// Whether a request (the digest of user, verb and path) is allowed.
    decisions: Mutex<ReviewCache<bool>>,
}

impl AccessFilter {
    pub(super) fn new(client: kube_client::Client) -> Arc<AccessFilter> {
        Arc::new(AccessFilter {
            client,
            tokens: Mutex::new(ReviewCache::new(TOKEN_CACHE_CAPACITY)),
            decisions: Mutex::new(ReviewCache::new(DECISION_CACHE_CAPACITY)),
        })
    }

    /// How many TokenReview answers are cached.
    #[cfg(test)]
    pub(super) fn cached_tokens(&self) -> usize {
        self.tokens.lock().len()
    }

    /// How many SubjectAccessReview decisions are cached.
    #[cfg(test)]
    pub(super) fn cached_decisions(&self) -> usize {
        self.decisions.lock().len()
    }

    /// `inner`, answering only requests the API server authenticates and authorizes:
    /// without a bearer token `401 Unauthorized`; a token the review refuses (or a review
    /// that fails) `500 Authentication failed`, as controller-runtime's delegating
    /// authenticator reports it; refused by RBAC `403 Authorization denied for user <name>`.
    pub(super) fn wrap(self: Arc<AccessFilter>, inner: Handler) -> Handler {
        Arc::new(move |req| {
            let filter = self.clone();
            let inner = inner.clone();
            Box::pin(async move {
                let token = bearer(req.headers());
                let Some(token) = token else {
                    return text(StatusCode::UNAUTHORIZED, "Unauthorized\n");
                };
                let user = match filter.authenticate(&token).await {
                    Ok(user) => user,
                    Err(err) => {
                        tracing::error!(error = %err, path = req.uri().path(), "Authentication failed");
                        return text(StatusCode::INTERNAL_SERVER_ERROR, "Authentication failed\n");
                    }
                };
                let name = user.username.clone().unwrap_or_default();
                let verb = req.method().as_str().to_ascii_lowercase();
                match filter.authorize(&user, &verb, req.uri().path()).await {
                    Ok(true) => inner(req).await,
                    Ok(false) => text(
                        StatusCode::FORBIDDEN,
                        format!("Authorization denied for user {name}\n"),
                    ),
                    Err(err) => {
                        let msg = format!("Authorization for user {name} failed");
                        tracing::error!(error = %err, "{msg}");
                        text(StatusCode::INTERNAL_SERVER_ERROR, format!("{msg}\n"))
                    }
                }
            })
        })
    }

    /// The user `token` belongs to, by TokenReview (answers, refusals included, cached for
    /// [`TOKEN_CACHE_TTL`]; a failed review is not).
    pub(super) async fn authenticate(&self, token: &str) -> Result<UserInfo, String> {
        let key = cache::key(&[token.as_bytes()]);
        if let Some(answer) = self.tokens.lock().get(&key, Instant::now()) {
            return answer;
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let answer =
            tokio::time::timeout(REVIEW_TIMEOUT, api.create(&PostParams::default(), &review))
                .await
                .map_err(|_| "the TokenReview timed out".to_string())?
                .map_err(|e| e.to_string())?;
        let status = answer.status.unwrap_or_default();
        let user = if status.authenticated == Some(true) {
            status.user
        } else {
            None
        };
        let answer = user.ok_or_else(|| {
            bounded(
                status
                    .error
                    .unwrap_or_else(|| "invalid bearer token".to_string()),
            )
        });
        self.tokens
            .lock()
            .insert(key, answer.clone(), TOKEN_CACHE_TTL, Instant::now());
        answer
    }

    /// Whether `user` may `verb` `path`, by SubjectAccessReview (allowed answers cached for
    /// [`ALLOW_CACHE_TTL`], denied ones for [`DENY_CACHE_TTL`]).
    pub(super) async fn authorize(
        &self,
        info: &UserInfo,
        verb: &str,
        path: &str,
    ) -> Result<bool, String> {
        let request =
            serde_json::json!([info.username, info.uid, info.groups, info.extra, verb, path])
                .to_string();
        let key = cache::key(&[request.as_bytes()]);
        if let Some(allowed) = self.decisions.lock().get(&key, Instant::now()) {
            return Ok(allowed);
        }
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: info.username.clone(),
                uid: info.uid.clone(),
                groups: info.groups.clone(),
                extra: info.extra.clone(),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some(verb.to_string()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let answer =
            tokio::time::timeout(REVIEW_TIMEOUT, api.create(&PostParams::default(), &review))
                .await
                .map_err(|_| "the SubjectAccessReview timed out".to_string())?
                .map_err(|e| e.to_string())?;
        let status = answer.status.unwrap_or_default();
        if let Some(err) = status.evaluation_error.filter(|e| !e.is_empty())
            && !status.allowed
        {
            tracing::debug!(error = %err, "the SubjectAccessReview reported an evaluation error");
        }
        let ttl = if status.allowed {
            ALLOW_CACHE_TTL
        } else {
            DENY_CACHE_TTL
        };
        self.decisions
            .lock()
            .insert(key, status.allowed, ttl, Instant::now());
        Ok(status.allowed)
    }
}

/// `message`, cut to [`MAX_CACHED_MESSAGE`] bytes (at a character boundary) with an ellipsis.
pub(super) fn bounded(mut message: String) -> String {
    if message.len() > MAX_CACHED_MESSAGE {
        let mut end = MAX_CACHED_MESSAGE;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

/// The bearer token of `Authorization: Bearer <token>`.
fn bearer(headers: &http::HeaderMap) -> Option<String> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_string())
}
