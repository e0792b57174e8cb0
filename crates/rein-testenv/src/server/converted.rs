//! The edges of a custom resource with webhook conversion (see `crate::conversion`): reads
//! convert what the store holds to the requested version, writes convert the client's object
//! to the storage version and then take the ordinary write path in that version.
//!
//! A write in version V of a resource stored in version S works out the new object in V — the
//! body as sent, or the stored object converted to V with the patch or apply configuration
//! applied — checks it as V's schema says (unknown fields, pruning, defaults, validation),
//! converts it to S and writes it with the resourceVersion it was worked out from, so a change
//! in between fails the write with 409 (a patch or apply then starts again, as
//! kube-apiserver's `GuaranteedUpdate`). Admission webhooks see the object in S.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::Response;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};

use super::State;
use super::admitted::Write;
use super::body::Body;
use super::objects::{Answer, Ctx};
use super::query::Query;
use super::route::ResourcePath;
use super::table::Include;
use crate::ops::{self, Subresource, Target};
use crate::patch::{self, PatchType};
use crate::resources::ResourceDef;
use crate::status::ApiError;

/// How often a patch or apply is worked out again when the object changed meanwhile.
const CONFLICT_RETRIES: usize = 5;

/// Whether requests on `def` go through this module.
pub(super) fn applies(def: &ResourceDef) -> bool {
    def.conversion.is_some()
}

/// `objects` in `version`, each then pruned and defaulted as that version's schema says.
pub(super) async fn to_version(
    state: &State,
    def: &ResourceDef,
    objects: Vec<Value>,
    version: &str,
    list: bool,
) -> Result<Vec<Value>, ApiError> {
    let converted = crate::conversion::convert(state, def, objects, version, list).await?;
    Ok(converted
        .into_iter()
        .map(|obj| ops::serve_version(def, version, &obj).unwrap_or(obj))
        .collect())
}

/// A handler's answer in the request's version: an object of the resource's kind, or the
/// items of a list of them (deletecollection); anything else (a `Status`, a `Scale`) as is.
pub(super) async fn answer(
    state: &State,
    path: &ResourcePath,
    mut answer: Answer,
) -> Result<Answer, ApiError> {
    let def = &path.def;
    let kind = answer
        .body
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind == def.kind {
        let obj = Value::clone(&answer.body);
        let mut out = to_version(state, def, vec![obj], &path.version, false).await?;
        answer.body = Arc::new(out.pop().unwrap_or_default());
    } else if kind == def.list_kind() {
        let mut body = Value::clone(&answer.body);
        let items = body
            .get_mut("items")
            .and_then(Value::as_array_mut)
            .map(std::mem::take)
            .unwrap_or_default();
        body["items"] = Value::Array(to_version(state, def, items, &path.version, true).await?);
        answer.body = Arc::new(body);
    }
    Ok(answer)
}

/// A watch response whose events carry objects in the requested version (as one-row Tables
/// when `table`, built after conversion). A conversion that fails ends the stream with an
/// ERROR event carrying the 500 `Status`.
pub(super) fn watch(
    state: Arc<State>,
    path: &ResourcePath,
    resp: Response<Body>,
    table: Option<Include>,
) -> Response<Body> {
    let (parts, body) = resp.into_parts();
    let def = path.def.clone();
    let version = path.version.clone();
    let chunks = body.into_data_stream();
    // Column definitions go with the first Table event only, as kube-apiserver sends them.
    let headers_sent = Arc::new(AtomicBool::new(false));
    let stream = futures::stream::unfold(
        (chunks, Vec::<u8>::new(), false),
        move |(mut chunks, mut pending, done)| {
            let (state, def, version) = (state.clone(), def.clone(), version.clone());
            let headers_sent = headers_sent.clone();
            async move {
                use futures::StreamExt as _;
                if done {
                    return None;
                }
                let chunk = chunks.next().await?.unwrap_or_default();
                pending.extend_from_slice(&chunk);
                let Some(end) = pending.iter().rposition(|b| *b == b'\n') else {
                    let frame = Ok::<_, Infallible>(Frame::data(Bytes::new()));
                    return Some((frame, (chunks, pending, false)));
                };
                let complete: Vec<u8> = pending.drain(..=end).collect();
                let mut out = Vec::with_capacity(complete.len());
                let mut failed = false;
                for line in complete.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                    match convert_event(&state, &def, &version, line, table, &headers_sent).await {
                        Ok(converted) => out.extend_from_slice(&converted),
                        Err(err) => {
                            let event = json!({"type": "ERROR", "object": err.to_status()});
                            out.extend(serde_json::to_vec(&event).unwrap_or_default());
                            failed = true;
                        }
                    }
                    out.push(b'\n');
                    if failed {
                        break;
                    }
                }
                Some((Ok(Frame::data(Bytes::from(out))), (chunks, pending, failed)))
            }
        },
    );
    Response::from_parts(parts, StreamBody::new(stream).boxed())
}

/// One watch event line with its object converted (other lines as they are).
async fn convert_event(
    state: &State,
    def: &ResourceDef,
    version: &str,
    line: &[u8],
    table: Option<Include>,
    headers_sent: &AtomicBool,
) -> Result<Vec<u8>, ApiError> {
    let Ok(mut event) = serde_json::from_slice::<Value>(line) else {
        return Ok(line.to_vec());
    };
    let desired = def.api_version(version);
    let object = &event["object"];
    if object.get("kind").and_then(Value::as_str) != Some(def.kind.as_str()) {
        return Ok(line.to_vec());
    }
    let same_version = object.get("apiVersion").and_then(Value::as_str) == Some(desired.as_str());
    if same_version && table.is_none() {
        return Ok(line.to_vec());
    }
    let obj = event["object"].take();
    let obj = to_version(state, def, vec![obj], version, false)
        .await?
        .pop()
        .unwrap_or_default();
    event["object"] = if let Some(include) = table {
        let page = super::table::Page::of_object(&obj);
        let mut table = super::table::table(def, version, &[&Arc::new(obj)], page, include);
        if headers_sent.swap(true, Ordering::Relaxed) {
            table["columnDefinitions"] = Value::Null;
        }
        table
    } else {
        obj
    };
    Ok(serde_json::to_vec(&event).unwrap_or_default())
}

/// Runs a create, update or patch (apply included) of `ctx`'s resource in the storage
/// version; deletes need no conversion of what is sent and take the ordinary path.
pub(super) async fn write(ctx: &Ctx<'_>, write: Write<'_>) -> Result<Answer, ApiError> {
    let mut attempts = 0;
    loop {
        match write_once(ctx, write).await {
            Err(e) if e.code == 409 && retries(ctx, write) && attempts < CONFLICT_RETRIES => {
                attempts += 1;
            }
            other => return other,
        }
    }
}

/// Whether a conflict is retried: patches that name no resourceVersion of their own.
fn retries(ctx: &Ctx<'_>, write: Write<'_>) -> bool {
    matches!(write, Write::Patch(..))
        && serde_json::from_slice::<Value>(ctx.bytes)
            .ok()
            .and_then(|p| p.pointer("/metadata/resourceVersion").cloned())
            .is_none()
}

async fn write_once(ctx: &Ctx<'_>, write: Write<'_>) -> Result<Answer, ApiError> {
    let path = ctx.path;
    let def = &path.def;
    let storage = def
        .conversion
        .as_ref()
        .map(|c| c.storage_version().to_string())
        .unwrap_or_else(|| path.version.clone());
    let (name, sub) = match write {
        Write::Create => ("", None),
        Write::Update(name, sub) | Write::Patch(name, sub) => (name, sub),
        Write::Delete(_) | Write::DeleteCollection => return ctx.write(write).await,
    };
    let storage_path = ResourcePath {
        def: path.def.clone(),
        version: storage.clone(),
        namespace: path.namespace.clone(),
        name: path.name.clone(),
        subresource: path.subresource.clone(),
        watch_prefix: path.watch_prefix,
    };
    // The scale subresource's body is a Scale, the same in every version.
    if sub == Some("scale") {
        return ctx
            .at(&storage_path, ctx.q, ctx.bytes, ctx.content_type, false)
            .write(write)
            .await;
    }
    let target = Target {
        catalogue: &ctx.state.catalogue,
        def,
        version: &path.version,
    };
    let gvk = target.gvk();
    // The stored object in the request's version.
    let current = match write {
        Write::Create => None,
        _ => match ctx.current(name) {
            Some(stored) => Some(
                to_version(
                    ctx.state,
                    def,
                    vec![Value::clone(&stored)],
                    &path.version,
                    false,
                )
                .await?
                .pop()
                .unwrap_or_default(),
            ),
            None => None,
        },
    };
    let mut managed_fields_done = false;
    let (mut obj, source) = match write {
        Write::Patch(..) => {
            let patch_type = super::options::patch_type(ctx.content_type, ctx.q, &gvk, |t| {
                t.accepted_for(&gvk)
            })?;
            if patch_type == PatchType::Apply {
                let sub_kind = match sub {
                    Some("status") => Subresource::Status,
                    _ => Subresource::Main,
                };
                let manager = ctx.q.field_manager.clone().unwrap_or_default();
                let mut applied = patch::server_side_apply_at(
                    current.as_ref(),
                    ctx.bytes,
                    &manager,
                    ctx.q.force.unwrap_or(false),
                    &gvk,
                    ctx.apply_scope(sub_kind),
                )?;
                if current.is_none() {
                    if sub.is_some() {
                        return Err(ApiError::not_found(def, name));
                    }
                    applied["metadata"]["name"] = json!(name);
                }
                managed_fields_done = true;
                (applied, crate::builtin::Source::Body)
            } else {
                let current = current
                    .as_ref()
                    .ok_or_else(|| ApiError::not_found(def, name))?;
                let patched = patch::apply_patch(patch_type, current, ctx.bytes, &gvk)?;
                (patched, crate::builtin::Source::Patch)
            }
        }
        _ => (ctx.decode()?, crate::builtin::Source::Body),
    };
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    // Type fields and (on create) the namespace, as the ordinary path fills them in.
    ops::check_type(target, &mut obj)?;
    if def.namespaced
        && let Some(ns) = &path.namespace
        && obj.pointer("/metadata/namespace").is_none()
        && let Some(meta) = obj
            .as_object_mut()
            .map(|m| m.entry("metadata").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut)
    {
        meta.insert("namespace".into(), json!(ns));
    }
    // The request's version decides unknown fields, pruning, defaults and validity.
    let warnings = {
        let txn = ctx.state.store.lock();
        ctx.validate_fields(&txn, &mut obj, source)?
    };
    ops::custom_decode(target, &mut obj);
    if ctx.state.validate {
        let object_name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or(name)
            .to_string();
        ops::custom_validate(target, &obj, current.as_ref(), &object_name)?;
    }
    let stored = to_version(ctx.state, def, vec![obj], &storage, false)
        .await?
        .pop()
        .unwrap_or_default();
    let bytes = Bytes::from(serde_json::to_vec(&stored).unwrap_or_default());
    let q = Query {
        field_validation: Some("Ignore".to_string()),
        ..ctx.q.clone()
    };
    let at_storage = ctx.at(
        &storage_path,
        &q,
        &bytes,
        "application/json",
        managed_fields_done,
    );
    let mut answer = match (write, current.is_some()) {
        (Write::Create, _) | (Write::Patch(..), false) => at_storage.write(Write::Create).await?,
        _ => at_storage.write(Write::Update(name, sub)).await?,
    };
    answer.warnings.splice(0..0, warnings);
    Ok(answer)
}
