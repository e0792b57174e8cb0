//! The subresources kube-apiserver serves beside `status` and `scale`: `pods/eviction`,
//! `pods/binding`, `pods/ephemeralcontainers`, `pods/log` and the connect verbs
//! (`exec`, `attach`, `portforward`), `namespaces/finalize` and
//! `certificatesigningrequests/approval`, each answering as the real registry does (there
//! is no kubelet behind `log` and the connect verbs: they answer what kube-apiserver answers
//! when none is reachable).

mod approval;
mod binding;
mod connect;
mod ephemeral;
mod eviction;
mod finalize;

use std::sync::Arc;

use http::Method;
use serde_json::{Value, json};

use super::body::{self, Body};
use super::objects::Ctx;
use crate::resources::ResourceDef;
use crate::status::ApiError;

/// Whether `sub` of `def` is served here.
pub(super) fn serves(def: &ResourceDef, sub: &str) -> bool {
    if def.custom {
        return false;
    }
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => matches!(
            sub,
            "eviction"
                | "binding"
                | "ephemeralcontainers"
                | "log"
                | "exec"
                | "attach"
                | "portforward"
        ),
        ("", "namespaces") => sub == "finalize",
        ("certificates.k8s.io", "certificatesigningrequests") => sub == "approval",
        _ => false,
    }
}

/// Answers a request on a subresource [`serves`] accepts.
pub(super) fn handle(ctx: &Ctx<'_>, method: &Method, raw_query: Option<&str>) -> Response {
    let name = ctx.path.name.as_deref().unwrap_or_default();
    let sub = ctx.path.subresource.as_deref().unwrap_or_default();
    let answer = match (sub, method) {
        ("log", &Method::GET) => return connect::log(ctx, name, raw_query),
        ("exec" | "attach" | "portforward", &Method::GET | &Method::POST) => {
            connect::stream(ctx, name, sub, raw_query)
        }
        ("eviction", &Method::POST) => eviction::create(ctx, name),
        ("binding", &Method::POST) => binding::create(ctx, name),
        ("ephemeralcontainers", &Method::GET) => ephemeral::get(ctx, name),
        ("ephemeralcontainers", &Method::PUT) => ephemeral::update(ctx, name, None),
        ("ephemeralcontainers", &Method::PATCH) => ephemeral::update(ctx, name, Some(())),
        ("finalize", &Method::PUT) => finalize::update(ctx, name),
        ("approval", &Method::GET) => approval::get(ctx, name),
        ("approval", &Method::PUT) => approval::update(ctx, name, None),
        ("approval", &Method::PATCH) => approval::update(ctx, name, Some(())),
        _ => Err(ApiError::method_not_allowed()),
    };
    match answer {
        Ok((code, value)) => body::json(code, &value),
        Err(e) => body::error(&e),
    }
}

/// A handler's answer.
type Response = http::Response<Body>;

/// The `Status` a named create answers on success (`metav1.Status{Status: Success}`, its
/// code set to 201 by the create handler).
fn created_status() -> (u16, Value) {
    (
        201,
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }),
    )
}

/// The stored object `name` of the request's resource, or 404.
fn current(ctx: &Ctx<'_>, name: &str) -> Result<Arc<Value>, ApiError> {
    ctx.current(name)
        .ok_or_else(|| ApiError::not_found(&ctx.path.def, name))
}

/// The request body decoded (JSON, YAML or protobuf), which must be an object.
fn decode_object(ctx: &Ctx<'_>) -> Result<Value, ApiError> {
    let body = ctx.decode()?;
    if !body.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(body)
}

/// A plain (non-`APIStatus`) error as kube-apiserver answers it: 500, no reason.
fn plain_error(message: impl Into<String>) -> ApiError {
    ApiError::new(500, "", message)
}
