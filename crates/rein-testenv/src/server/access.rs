//! Who may do what: each request's authentication, impersonation and (in enforcing mode,
//! `TestEnvBuilder::enforce_rbac`) authorization before routing, as kube-apiserver's filter
//! chain; and the create-only resources answered from them (the `authentication.k8s.io` and
//! `authorization.k8s.io` reviews, `serviceaccounts/token`).

use std::sync::Arc;

use http::{Method, Request, Response, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;

use super::State;
use super::body::{self, Body};
use super::route::ResourcePath;
use crate::auth::{self, PeerUser, UserInfo};
use crate::rbac::{self, Decision};
use crate::status::ApiError;

/// Authenticates `req`, applies its impersonation headers, and (when RBAC is enforced)
/// authorizes it: the user it acts as, or the 401/403/400 answer.
pub(crate) fn check<B>(state: &State, req: &Request<B>, path: &str) -> Result<UserInfo, ApiError> {
    let peer = req
        .extensions()
        .get::<PeerUser>()
        .and_then(|p| p.0.as_ref());
    let user = state.auth.authenticate(req.headers(), peer, &state.store)?;
    let user = if auth::impersonate::requested(req.headers()) {
        auth::impersonate::impersonate(&user, req.headers(), |attrs| {
            if state.enforce_rbac {
                rbac::authorize(&state.store.lock(), attrs)
            } else {
                Decision {
                    allowed: true,
                    reason: String::new(),
                }
            }
        })?
    } else {
        user
    };
    if state.enforce_rbac {
        let attrs = rbac::request::attributes(&user, req.method(), path, req.uri().query());
        let decision = rbac::authorize(&state.store.lock(), &attrs);
        if !decision.allowed {
            return Err(rbac::forbidden(&attrs, &decision.reason));
        }
    }
    Ok(user)
}

/// Whether `path` is one of the resources [`serve`] answers.
pub(crate) fn is_review(path: &ResourcePath) -> bool {
    match (path.def.group.as_str(), path.def.plural.as_str()) {
        (auth::reviews::GROUP, "tokenreviews" | "selfsubjectreviews") => true,
        (rbac::reviews::GROUP, _) => true,
        ("", "serviceaccounts") => path.subresource.as_deref() == Some("token"),
        _ => false,
    }
}

/// Answers a request for a review or a service account's token (201 Created with the
/// answered object), for `user`.
pub(crate) async fn serve(
    state: &Arc<State>,
    req: Request<Incoming>,
    path: ResourcePath,
    user: &UserInfo,
) -> Response<Body> {
    let token = path.subresource.is_some();
    let allowed = req.method() == Method::POST
        && if token {
            path.name.is_some()
        } else {
            path.name.is_none() && path.subresource.is_none()
        };
    if !allowed {
        return body::error(&ApiError::method_not_allowed());
    }
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_ascii_lowercase();
    let limit = crate::builtin::MAX_REQUEST_BODY + 1;
    let bytes = match http_body_util::Limited::new(req.into_body(), limit)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return body::error(&crate::builtin::body_too_large());
        }
        Err(_) => return body::error(&ApiError::bad_request("reading the request body")),
    };
    let decoded = decode(&content_type, &bytes);
    let answer = decoded.and_then(|obj| {
        let namespace = path.namespace.as_deref();
        match (path.def.group.as_str(), path.def.plural.as_str()) {
            ("", _) => auth::reviews::token_request(
                &state.auth,
                &state.store,
                namespace.unwrap_or_default(),
                path.name.as_deref().unwrap_or_default(),
                obj,
            ),
            (auth::reviews::GROUP, "tokenreviews") => {
                auth::reviews::token_review(&state.auth, &state.store, obj)
            }
            (auth::reviews::GROUP, _) => Ok(auth::reviews::self_subject_review(user, obj)),
            (_, plural) => rbac::reviews::answer(&state.store.lock(), plural, namespace, user, obj),
        }
    });
    match answer {
        Ok(obj) => body::json(201, &obj),
        Err(e) => body::error(&e),
    }
}

/// A request body as JSON: JSON, YAML or protobuf, as kube-apiserver accepts them.
fn decode(content_type: &str, bytes: &[u8]) -> Result<Value, ApiError> {
    if crate::proto::is_protobuf(content_type) {
        return crate::proto::decode_body(bytes).map_err(ApiError::from);
    }
    if bytes.is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    if content_type.contains("yaml") {
        return crate::yaml::from_slice(bytes)
            .map_err(|e| ApiError::bad_request(format!("decoding the YAML request body: {e}")));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("decoding the JSON request body: {e}")))
}
