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
use crate::admission::{self, Attributes, Operation};
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
pub(super) async fn handle(ctx: &Ctx<'_>, method: &Method, raw_query: Option<&str>) -> Response {
    let name = ctx.path.name.as_deref().unwrap_or_default();
    let sub = ctx.path.subresource.as_deref().unwrap_or_default();
    // The object a create on `eviction` or `binding` posts goes through the admission
    // webhooks first, as kube-apiserver's create handler sends it.
    let mut warnings = Vec::new();
    let admitted = match (sub, method) {
        ("eviction" | "binding", &Method::POST) => match admit_create(ctx, name, sub).await {
            Ok((object, w)) => {
                warnings = w;
                Some(object)
            }
            Err(e) => return body::error(&e),
        },
        _ => None,
    };
    let answer = match (sub, method) {
        ("log", &Method::GET) => return connect::log(ctx, name, raw_query),
        ("exec" | "attach" | "portforward", &Method::GET | &Method::POST) => {
            connect::stream(ctx, name, sub, raw_query)
        }
        ("eviction", &Method::POST) => eviction::create(ctx, name, admitted),
        ("binding", &Method::POST) => binding::create(ctx, name, admitted),
        ("ephemeralcontainers", &Method::GET) => ephemeral::get(ctx, name),
        ("ephemeralcontainers", &Method::PUT) => ephemeral::update(ctx, name, None),
        ("ephemeralcontainers", &Method::PATCH) => ephemeral::update(ctx, name, Some(())),
        ("finalize", &Method::PUT) => finalize::update(ctx, name),
        ("approval", &Method::GET) => approval::get(ctx, name),
        ("approval", &Method::PUT) => approval::update(ctx, name, None),
        ("approval", &Method::PATCH) => approval::update(ctx, name, Some(())),
        _ => Err(ApiError::method_not_allowed()),
    };
    let mut resp = match answer {
        Ok((code, value)) => body::json(code, &value),
        Err(e) => body::error(&e),
    };
    for w in warnings {
        if let Ok(v) = http::HeaderValue::from_str(&format!(
            "299 - {}",
            serde_json::to_string(&w).unwrap_or_default()
        )) {
            resp.headers_mut().append(http::header::WARNING, v);
        }
    }
    resp
}

/// The posted object after the admission webhooks whose rules match a create on `sub`
/// (the body as sent when none do), with their warnings.
async fn admit_create(
    ctx: &Ctx<'_>,
    name: &str,
    sub: &str,
) -> Result<(Value, Vec<String>), ApiError> {
    let object = decode_object(ctx)?;
    let attrs = Attributes::new(
        &ctx.path.def,
        &ctx.path.version,
        Some(sub),
        Operation::Create,
        ctx.path.namespace.as_deref(),
        name,
        ctx.q.dry_run,
    );
    if !admission::wanted(&ctx.state.store, &attrs) {
        return Ok((object, Vec::new()));
    }
    let admitted = admission::admit(
        &ctx.state.store,
        &ctx.state.webhook_services,
        &attrs,
        None,
        Some(object),
    )
    .await?;
    Ok((admitted.object.unwrap_or_default(), admitted.warnings))
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
