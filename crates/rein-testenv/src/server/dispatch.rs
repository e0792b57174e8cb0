//! Per-request pipeline: pause, latency, panic containment, authentication (and
//! impersonation and authorization), injected faults, routing, logging.

use std::any::Any;
use std::convert::Infallible;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;

use http::{Method, Request, Response, header};
use hyper::body::Incoming;
use serde_json::json;

use super::body::{self, Body};
use super::route::{self, Route};
use super::{State, access, aggregated, discovery, health, objects, openapi};
use crate::requests::{RequestRecord, RequestStage};
use crate::status::ApiError;

/// Answers one request.
pub(crate) async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query = req.uri().query().map(str::to_string);
    let tracked = state
        .in_flight
        .track(method.as_str(), &path, query.as_deref());
    // The stage is written only when a request waits (off the common path).
    let mut waited = false;
    if state.faults.inner.is_paused() {
        tracked.stage(RequestStage::Paused);
        waited = true;
        state.faults.inner.wait_unpaused().await;
    }
    let latency = *state.faults.inner.latency.lock();
    if !latency.is_zero() {
        tracked.stage(RequestStage::Delayed);
        waited = true;
        tokio::time::sleep(latency).await;
    }
    if state.faults.inner.take_hang(&path) {
        // Never answered: the request waits until the client gives up or the server stops.
        tracked.stage(RequestStage::Hung);
        state.shutdown.cancelled().await;
        return Ok(body::error(&ApiError::new(
            503,
            "ServiceUnavailable",
            "the server is shutting down",
        )));
    }
    if waited {
        tracked.stage(RequestStage::Handling);
    }
    let resp = match AssertUnwindSafe(answer(&state, req, &path))
        .catch_unwind()
        .await
    {
        Ok(resp) => resp,
        Err(payload) => recover(&method, &path, payload.as_ref()),
    };
    state.log.lock().push(RequestRecord {
        method: method.to_string(),
        path,
        query,
        status: resp.status().as_u16(),
    });
    drop(tracked);
    Ok(resp)
}

/// The answer to a request whose handler panicked, as kube-apiserver's `WithPanicRecovery`
/// gives: the panic is logged and the client gets 500 InternalError; the connection and the
/// server keep serving. The store stays consistent: its lock (parking_lot) is released on
/// unwind without poisoning, and a write is published only by a store call that completes,
/// so a handler that panics before that call has written nothing.
fn recover(method: &Method, path: &str, payload: &(dyn Any + Send)) -> Response<Body> {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_string());
    tracing::error!(%method, path, panic = %message, "request handler panicked");
    body::error(&ApiError::new(
        500,
        "InternalError",
        format!(
            "an error on the server (\"the request handler panicked: {message}\") has prevented the request from succeeding"
        ),
    ))
}

async fn answer(state: &Arc<State>, mut req: Request<Incoming>, path: &str) -> Response<Body> {
    let public = matches!(path, "/healthz" | "/readyz" | "/livez" | "/version");
    let user = if public {
        crate::auth::UserInfo::default()
    } else {
        match access::check(state, &req, path) {
            Ok(user) => user,
            Err(e) => return body::error(&e),
        }
    };
    if !public && let Some(export) = &state.request_export {
        export.record(&user, req.method(), path, req.uri().query());
    }
    req.extensions_mut().insert(user.clone());
    if let Some(fault) = state.faults.inner.take(path) {
        if fault.panic {
            let _txn = state.store.lock();
            panic!("injected panic for {path}");
        }
        let err = crate::faults::fault_error(fault.code, fault.retry_after_secs);
        return body::error(&err);
    }
    let Some(route) = route::parse(path, &state.catalogue) else {
        return unrouted(path);
    };
    let get_only = !matches!(route, Route::Resource(_));
    if get_only && req.method() != Method::GET && req.method() != Method::HEAD {
        return body::error(&ApiError::method_not_allowed());
    }
    match route {
        Route::Root => body::json_shared(200, discovery::root_paths(&state.catalogue)),
        Route::Version => body::json(200, &discovery::version()),
        Route::Health => health::answer(path, req.uri().query()),
        Route::CoreVersions | Route::Groups
            if aggregated::negotiate(header_str(&req, header::ACCEPT))
                == aggregated::Format::Aggregated =>
        {
            let storage = discovery::StorageVersions::of_crds(&state.store.lock());
            let document = match route {
                Route::CoreVersions => aggregated::core(&state.catalogue, &storage),
                _ => aggregated::groups(&state.catalogue, &storage),
            };
            aggregated::respond(&document, header_str(&req, header::IF_NONE_MATCH))
        }
        Route::CoreVersions => body::json(
            200,
            &json!({
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": state.server_address}],
            }),
        ),
        Route::Groups => body::json(200, &discovery::group_list(&state.catalogue)),
        Route::Group(group) => match discovery::group(&state.catalogue, &group) {
            Some(g) => body::json(200, &g),
            None => unrouted(path),
        },
        Route::ResourceList { group, version } => {
            let storage = discovery::StorageVersions::of_crds(&state.store.lock());
            match discovery::resource_list(&state.catalogue, &storage, &group, &version) {
                Some(list) => body::json(200, &list),
                None => unrouted(path),
            }
        }
        Route::OpenApiV2 => {
            let crds = crate::ops::crd_schemas(&state.store.lock());
            openapi::v2(&crate::openapi::v2_document(&crds), req.headers())
        }
        Route::OpenApiV3 => {
            let crds = crate::ops::crd_schemas(&state.store.lock());
            openapi::v3_index(&crate::openapi::v3_index(&crds), req.headers())
        }
        Route::OpenApiV3Gv { group, version } => {
            let crds = crate::ops::crd_schemas(&state.store.lock());
            match crate::openapi::v3_group_version(&group, &version, &crds) {
                Some(doc) => openapi::v3(&doc, req.headers(), req.uri().query()),
                None => body::error(&ApiError::no_route()),
            }
        }
        Route::Resource(target) if access::is_review(&target) => {
            access::serve(state, req, target, &user).await
        }
        Route::Resource(target) => objects::handle(state, req, target).await,
    }
}

/// The 404 for a path nothing serves, as kube-apiserver's handler chain gives it: paths under
/// `/api` and the built-in groups belong to its go-restful container, whose 404 is a `Status`
/// (`the server could not find the requested resource`); anything else (an unknown group, a
/// CRD group's unknown resource or version, a path outside the API) falls through the
/// aggregator and apiextensions-apiserver to the last delegate, which answers Go's
/// `http.NotFound`: `404 page not found` as plain text.
fn unrouted(path: &str) -> Response<Body> {
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    let go_restful = match (segments.next(), segments.next()) {
        (Some("api"), _) => true,
        (Some("apis"), Some(group)) => crate::patch::strategy::is_builtin_group(group),
        _ => false,
    };
    if go_restful {
        return body::error(&ApiError::no_route());
    }
    let mut resp = body::text(404, "404 page not found\n");
    resp.headers_mut().insert(
        http::header::X_CONTENT_TYPE_OPTIONS,
        http::HeaderValue::from_static("nosniff"),
    );
    resp
}

/// A request header as text, if present and printable.
fn header_str<B>(req: &Request<B>, name: header::HeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}
