//! The subresources kube-apiserver serves beside `status` and `scale`: `pods/eviction`,
//! `pods/binding`, `pods/ephemeralcontainers`, `pods/log` and the connect verbs
//! (`exec`, `attach`, `portforward`), `namespaces/finalize` and
//! `certificatesigningrequests/approval`, each answering as the real registry does (there
//! is no kubelet behind `log` and the connect verbs: they answer what kube-apiserver answers
//! when none is reachable). The legacy create-only `v1/bindings` is answered here too, as
//! `pods/binding` on the Pod its Binding names. Creates and updates here go through the
//! admission webhooks whose rules match them, as kube-apiserver's handlers send them.

mod approval;
mod binding;
mod connect;
mod ephemeral;
mod eviction;
mod finalize;

use std::sync::Arc;

use bytes::Bytes;

use http::Method;
use serde_json::{Value, json};

use super::body::{self, Body};
use super::objects::Ctx;
use super::query::Query;
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
    let answer = match (sub, method) {
        ("log", &Method::GET) => return connect::log(ctx, name, raw_query),
        ("exec" | "attach" | "portforward", &Method::GET | &Method::POST) => {
            Outcome::plain(connect::stream(ctx, name, sub, raw_query))
        }
        // The object a create on `eviction` or `binding` posts goes through the admission
        // webhooks first, as kube-apiserver's create handler sends it.
        ("eviction" | "binding", &Method::POST) => match admit_create(ctx, name, Some(sub)).await {
            Ok((object, warnings)) => Outcome {
                answer: match sub {
                    "eviction" => eviction::create(ctx, name, Some(object)),
                    _ => binding::create(ctx, name, Some(object)),
                },
                warnings,
            },
            Err(e) => Outcome::plain(Err(e)),
        },
        ("ephemeralcontainers" | "approval", &Method::GET) => {
            Outcome::plain(current(ctx, name).map(|obj| (200, Value::clone(&obj))))
        }
        ("ephemeralcontainers" | "approval", &Method::PUT | &Method::PATCH)
        | ("finalize", &Method::PUT) => {
            update_admitted(ctx, name, sub, method == Method::PATCH).await
        }
        _ => Outcome::plain(Err(ApiError::method_not_allowed())),
    };
    respond(answer)
}

/// The response to an [`Outcome`]: the answer, with a `Warning` header per webhook warning.
fn respond(outcome: Outcome) -> Response {
    let mut resp = match outcome.answer {
        Ok((code, value)) => body::json(code, &value),
        Err(e) => body::error(&e),
    };
    for w in outcome.warnings {
        if let Ok(v) = http::HeaderValue::from_str(&format!(
            "299 - {}",
            serde_json::to_string(&w).unwrap_or_default()
        )) {
            resp.headers_mut().append(http::header::WARNING, v);
        }
    }
    resp
}

/// Whether `def` is the legacy `v1/bindings`, a create-only resource that binds the Pod its
/// Binding names, as `pods/{name}/binding` does.
pub(super) fn is_legacy_binding(def: &ResourceDef) -> bool {
    !def.custom && def.group.is_empty() && def.plural == "bindings"
}

/// Answers a request on `v1/bindings` (kube-apiserver's `LegacyBindingREST`): a POST to the
/// collection goes through admission as a create of `bindings` (no subresource), then binds
/// the Pod named by the Binding's `metadata.name` (the caller answers 405 to anything else).
pub(super) async fn legacy_binding(ctx: &Ctx<'_>) -> Response {
    let binding = match decode_object(ctx) {
        Ok(binding) => binding,
        Err(e) => return body::error(&e),
    };
    let name = crate::ops::meta::meta_str(&binding, "name")
        .unwrap_or_default()
        .to_string();
    let (object, warnings) = match admit_create(ctx, &name, None).await {
        Ok(admitted) => admitted,
        Err(e) => return body::error(&e),
    };
    let pods = ctx.state.catalogue.get(&crate::resources::ResKey {
        group: String::new(),
        plural: "pods".into(),
    });
    let Some(def) = pods else {
        return body::error(&ApiError::no_route());
    };
    let path = super::route::ResourcePath {
        def,
        version: ctx.path.version.clone(),
        namespace: ctx.path.namespace.clone(),
        name: Some(name.clone()),
        subresource: Some("binding".into()),
        watch_prefix: false,
    };
    let on_pod = ctx.at(&path, ctx.q, ctx.bytes, ctx.content_type, false);
    respond(Outcome {
        answer: binding::create(&on_pod, &name, Some(object)),
        warnings,
    })
}

/// A handler's answer with the admission webhooks' warnings.
struct Outcome {
    answer: Result<(u16, Value), ApiError>,
    warnings: Vec<String>,
}

impl Outcome {
    /// An answer no webhook saw.
    fn plain(answer: Result<(u16, Value), ApiError>) -> Outcome {
        Outcome {
            answer,
            warnings: Vec::new(),
        }
    }
}

/// How often an admitted update is tried again when the object changed under the webhooks.
const CONFLICT_RETRIES: usize = 5;

/// An update (PUT, or PATCH when `patch`) of `sub` (`ephemeralcontainers`, `finalize` or
/// `approval`), through the admission webhooks whose rules match an update of `sub`: as
/// kube-apiserver's update handler, the webhooks see the object the update would store (with
/// the stored one as `oldObject`), and the object they admit is what is written. A change by
/// another client in between starts the update again, as `GuaranteedUpdate` does.
async fn update_admitted(ctx: &Ctx<'_>, name: &str, sub: &str, patch: bool) -> Outcome {
    let attrs = attributes(ctx, Operation::Update, name, Some(sub));
    if !admission::wanted(&ctx.state.store, &attrs) {
        return Outcome::plain(update(ctx, name, sub, patch));
    }
    let mut attempts = 0;
    loop {
        let old = match current(ctx, name) {
            Ok(old) => old,
            Err(e) => return Outcome::plain(Err(e)),
        };
        let dry_q = Query {
            dry_run: true,
            dry_run_values: vec!["All".to_string()],
            ..ctx.q.clone()
        };
        let built = match update(
            &ctx.with(&dry_q, ctx.bytes, ctx.content_type, false),
            name,
            sub,
            patch,
        ) {
            Ok((_, built)) => built,
            Err(e) => return Outcome::plain(Err(e)),
        };
        let admitted = match admission::admit(
            &ctx.state.store,
            &ctx.state.webhook_services,
            &attrs,
            Some(&old),
            Some(built),
        )
        .await
        {
            Ok(admitted) => admitted,
            Err(e) => return Outcome::plain(Err(e)),
        };
        // The admitted object is written as a PUT of it, carrying the resourceVersion the
        // webhooks saw.
        let bytes = Bytes::from(
            serde_json::to_vec(&admitted.object.unwrap_or_default()).unwrap_or_default(),
        );
        match update(
            &ctx.with(ctx.q, &bytes, "application/json", false),
            name,
            sub,
            false,
        ) {
            Err(e) if e.code == 409 && attempts < CONFLICT_RETRIES => attempts += 1,
            answer => {
                return Outcome {
                    answer,
                    warnings: admitted.warnings,
                };
            }
        }
    }
}

/// The update of `sub` without admission webhooks.
fn update(ctx: &Ctx<'_>, name: &str, sub: &str, patch: bool) -> Result<(u16, Value), ApiError> {
    match sub {
        "ephemeralcontainers" => ephemeral::update(ctx, name, patch),
        "approval" => approval::update(ctx, name, patch),
        _ => finalize::update(ctx, name),
    }
}

/// The posted object after the admission webhooks whose rules match a create on `sub`
/// (the body as sent when none do), with their warnings.
async fn admit_create(
    ctx: &Ctx<'_>,
    name: &str,
    sub: Option<&str>,
) -> Result<(Value, Vec<String>), ApiError> {
    let object = decode_object(ctx)?;
    let attrs = attributes(ctx, Operation::Create, name, sub);
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

/// The admission attributes of an `operation` on `sub` of `name`.
fn attributes(ctx: &Ctx<'_>, operation: Operation, name: &str, sub: Option<&str>) -> Attributes {
    Attributes::new(
        &ctx.path.def,
        &ctx.path.version,
        sub,
        operation,
        ctx.path.namespace.as_deref(),
        name,
        ctx.q.dry_run,
    )
}

/// The object a create posts: the one admission returned, else the body as sent.
fn posted(ctx: &Ctx<'_>, admitted: Option<Value>) -> Result<Value, ApiError> {
    crate::server::options::check_write("CreateOptions", ctx.q)?;
    match admitted {
        Some(object) => Ok(object),
        None => decode_object(ctx),
    }
}

/// The body of a PUT (`patch` false) of a subresource that writes the stored `old`, or the
/// PATCH (not apply) applied to `old`.
fn update_body(
    ctx: &Ctx<'_>,
    old: &Value,
    gvk: &crate::patch::Gvk,
    patch: bool,
) -> Result<Value, ApiError> {
    if !patch {
        crate::server::options::check_write("UpdateOptions", ctx.q)?;
        return decode_object(ctx);
    }
    let patch_type = crate::server::options::patch_type(ctx.content_type, ctx.q, gvk, |t| {
        t != crate::patch::PatchType::Apply
    })?;
    Ok(crate::patch::apply_patch(patch_type, old, ctx.bytes, gvk)?)
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
