//! Resource requests: get, create, update, patch, delete and deletecollection (list and watch
//! are in their own modules), for objects and their `status` and `scale` subresources (the
//! other subresources are in `subresources`).

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{Value, json};

use super::admitted::Write;
use super::body::{self, Body};
use super::query::Query;
use super::represent::Representation;
use super::route::ResourcePath;
use super::{State, converted, list, options, scale, watch};
use crate::ops::{self, DeleteOpts, DeleteOutcome, Propagation, Subresource, Target, WriteOpts};
use crate::patch::{self, PatchType};
use crate::selectors::{FieldSelector, LabelSelector};
use crate::status::{self, ApiError};
use crate::store::{ObjKey, Txn, object_key};

/// A handler's answer: a status code and a JSON object, or an error; plus warnings.
pub(crate) struct Answer {
    pub(super) code: u16,
    pub(super) body: Arc<Value>,
    pub(super) warnings: Vec<String>,
}

/// Answers a request on a resource path.
///
/// Every answer about a deprecated version of a custom resource carries its deprecation
/// `Warning`, as kube-apiserver's CRD handler adds it before serving any verb.
pub(crate) async fn handle(
    state: &Arc<State>,
    req: Request<Incoming>,
    path: ResourcePath,
) -> Response<Body> {
    let deprecation = path
        .def
        .custom_version(&path.version)
        .and_then(|v| v.warning.clone());
    let mut resp = respond(state, req, path).await;
    if let Some(warning) = deprecation {
        add_warning(&mut resp, &warning);
    }
    resp
}

/// Appends a `Warning: 299 - "<text>"` header, as kube-apiserver words warnings.
fn add_warning(resp: &mut Response<Body>, text: &str) {
    if let Ok(v) = HeaderValue::from_str(&format!(
        "299 - {}",
        serde_json::to_string(text).unwrap_or_default()
    )) {
        resp.headers_mut().append(header::WARNING, v);
    }
}

/// The answer to a request on a resource path, before resource-wide warnings.
async fn respond(state: &Arc<State>, req: Request<Incoming>, path: ResourcePath) -> Response<Body> {
    let q = match Query::parse(req.uri().query()) {
        Ok(q) => q,
        Err(e) => return body::error(&e),
    };
    if !accepts_json(req.headers()) {
        return body::error(&ApiError::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml \
             (rein-testenv answers JSON only; protobuf and CBOR responses are not supported)",
        ));
    }
    if super::components::applies(&path.def) {
        return super::components::serve(req.method(), &path, &q, req.headers());
    }
    // `v1/bindings` serves nothing but a create.
    if super::subresources::is_legacy_binding(&path.def)
        && (req.method() != Method::POST || path.name.is_some() || path.watch_prefix)
    {
        return body::error(&ApiError::method_not_allowed());
    }
    let method = req.method().clone();
    let rbac_user = state
        .enforce_rbac
        .then(|| req.extensions().get::<crate::auth::UserInfo>().cloned())
        .flatten();
    let raw_query = req.uri().query().map(str::to_string);
    let wants_table = match super::table::requested(req.headers(), &q) {
        Ok(t) => t,
        Err(e) => return body::error(&e),
    };
    let repr = Representation::negotiate(req.headers());
    let is_watch = q.watch || path.watch_prefix;
    if method == Method::GET && (path.name.is_none() || is_watch) {
        if path.subresource.is_some() {
            return body::error(&ApiError::no_route());
        }
        if is_watch {
            let resp = watch::serve(state, &path, &q, wants_table, repr.partial.is_some()).await;
            if converted::applies(&path.def) {
                return converted::watch(state.clone(), &path, resp, wants_table);
            }
            return resp;
        }
        let resp = list::serve(state, &path, &q, req.headers()).await;
        return repr.adapt(resp, &path.def).await;
    }
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let user_agent = req
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    // As kube-apiserver's `limitedReadBody`: read one byte past the limit, no further.
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
    if bytes.len() > crate::builtin::MAX_REQUEST_BODY {
        return body::error(&crate::builtin::body_too_large());
    }
    let field_manager = q
        .field_manager
        .clone()
        .unwrap_or_else(|| user_agent.split('/').next().unwrap_or("").to_string());
    let ctx = Ctx {
        state,
        path: &path,
        q: &q,
        bytes: &bytes,
        content_type: &content_type,
        field_manager,
        admitted: false,
        reinvoke_plugins: false,
        plugins: state.plugins,
        rbac_user,
    };
    if super::subresources::is_legacy_binding(&path.def) {
        let resp = super::subresources::legacy_binding(&ctx).await;
        return repr.adapt(resp, &path.def).await;
    }
    if path.name.is_some()
        && let Some(sub) = path.subresource.as_deref()
        && super::subresources::serves(&path.def, sub)
    {
        let resp = super::subresources::handle(&ctx, &method, raw_query.as_deref()).await;
        return repr.adapt(resp, &path.def).await;
    }
    if method == Method::GET
        && wants_table.is_none()
        && let Some(name) = path.name.as_deref()
        && let Some(json) = ctx.get_as_stored(name, path.subresource.as_deref())
    {
        return repr.adapt(body::json_shared(200, json), &path.def).await;
    }
    let answer = match (method, path.name.as_deref(), path.subresource.as_deref()) {
        (Method::POST, None, None) => ctx.converted_write(Write::Create).await,
        (Method::GET, Some(name), sub) => ctx.get(name, sub),
        (Method::PUT, Some(name), sub) => ctx.converted_write(Write::Update(name, sub)).await,
        (Method::PATCH, Some(name), sub) => ctx.converted_write(Write::Patch(name, sub)).await,
        (Method::DELETE, Some(name), None) => ctx.write(Write::Delete(name)).await,
        (Method::DELETE, None, None) => ctx.write(Write::DeleteCollection).await,
        _ => Err(ApiError::method_not_allowed()),
    };
    // A resource with webhook conversion answers in the request's version.
    let answer = match answer {
        Ok(a) if converted::applies(&path.def) => converted::answer(state, &path, a).await,
        other => other,
    };
    let resp = match answer {
        Ok(a) => {
            let mut resp = if let Some(include) = wants_table
                && a.code == 200
                && path.subresource.is_none()
                && a.body.get("kind").and_then(Value::as_str) == Some(path.def.kind.as_str())
            {
                let obj = a.body;
                let page = super::table::Page::of_object(&obj);
                body::json(
                    200,
                    &super::table::table(&path.def, &path.version, &[&obj], page, include),
                )
            } else {
                body::json(a.code, &a.body)
            };
            for w in a.warnings {
                add_warning(&mut resp, &w);
            }
            resp
        }
        Err(e) => body::error(&e),
    };
    repr.adapt(resp, &path.def).await
}

/// Whether a delete that removed the object answers with it: the registries built with
/// `ReturnDeletedObject: true` (pods, service accounts, storage classes); every other
/// resource, custom resources included, answers a `Success` Status.
fn returns_deleted_object(def: &crate::resources::ResourceDef) -> bool {
    !def.custom
        && matches!(
            (def.group.as_str(), def.plural.as_str()),
            ("", "pods" | "serviceaccounts") | ("storage.k8s.io", "storageclasses")
        )
}

/// Whether the `Accept` header allows a JSON answer (no header, `*/*`, `application/*`,
/// any JSON or YAML type; kubectl sends `application/vnd.kubernetes.protobuf,application/json`).
fn accepts_json(headers: &http::HeaderMap) -> bool {
    let mut any = false;
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            return true;
        };
        for media in value.split(',') {
            let media = media.split(';').next().unwrap_or_default().trim();
            any = true;
            let media = media.to_ascii_lowercase();
            if media.is_empty()
                || media == "*/*"
                || media == "application/*"
                || media.contains("json")
                || media.contains("yaml")
            {
                return true;
            }
        }
    }
    !any
}

/// One request's inputs.
pub(super) struct Ctx<'a> {
    pub(super) state: &'a Arc<State>,
    pub(super) path: &'a ResourcePath,
    pub(super) q: &'a Query,
    pub(super) bytes: &'a Bytes,
    pub(super) content_type: &'a str,
    field_manager: String,
    /// The body is an object admission already built (managedFields included): write it as
    /// it is.
    admitted: bool,
    /// A webhook changed the admitted object: the built-in mutating plugins run on it again.
    pub(super) reinvoke_plugins: bool,
    /// The built-in admission plugins this write runs.
    pub(super) plugins: crate::plugins::Plugins,
    /// Who asks, when RBAC is enforced: writes of RBAC objects are checked for escalation.
    rbac_user: Option<crate::auth::UserInfo>,
}

impl<'a> Ctx<'a> {
    /// The same request with another query and body.
    pub(super) fn with<'b>(
        &self,
        q: &'b Query,
        bytes: &'b Bytes,
        content_type: &'b str,
        admitted: bool,
    ) -> Ctx<'b>
    where
        'a: 'b,
    {
        Ctx {
            state: self.state,
            path: self.path,
            q,
            bytes,
            content_type,
            field_manager: self.field_manager.clone(),
            admitted,
            reinvoke_plugins: false,
            plugins: self.plugins,
            rbac_user: self.rbac_user.clone(),
        }
    }

    /// The same request on `path` (another version of the resource) with another query and
    /// body.
    pub(super) fn at<'b>(
        &self,
        path: &'b ResourcePath,
        q: &'b Query,
        bytes: &'b Bytes,
        content_type: &'b str,
        admitted: bool,
    ) -> Ctx<'b>
    where
        'a: 'b,
    {
        Ctx {
            path,
            ..self.with(q, bytes, content_type, admitted)
        }
    }

    /// Runs a create, update or patch; through the storage version when the resource has
    /// webhook conversion.
    async fn converted_write(&self, write: Write<'_>) -> Result<Answer, ApiError> {
        if converted::applies(&self.path.def) {
            converted::write(self, write).await
        } else {
            self.write(write).await
        }
    }

    /// kube's RBAC escalation checks (`rbac::escalation`) on a write of `new` over the object
    /// at `key` (none: a create), when RBAC is enforced.
    fn confirm_no_escalation(
        &self,
        txn: &Txn<'_>,
        key: Option<&ObjKey>,
        new: &Value,
    ) -> Result<(), ApiError> {
        let Some(user) = &self.rbac_user else {
            return Ok(());
        };
        let old = key.and_then(|key| txn.get(&self.path.def.key(), key));
        let req = crate::rbac::escalation::Request {
            user,
            def: &self.path.def,
            namespace: self.path.namespace.as_deref().unwrap_or_default(),
            name: self.path.name.as_deref().unwrap_or_default(),
        };
        crate::rbac::escalation::check(txn, &req, old.as_deref(), new)
    }

    /// The stored object `name`, if any.
    pub(super) fn current(&self, name: &str) -> Option<Arc<Value>> {
        let key = self.key(name).ok()?;
        self.state.store.lock().get(&self.path.def.key(), &key)
    }

    /// `obj` as a request on `sub` in the request's version shows it.
    pub(super) fn view(&self, obj: &Arc<Value>, sub: Option<&str>) -> Result<Value, ApiError> {
        match sub {
            Some("scale") => scale::to_scale(&self.path.def, obj),
            _ => Ok(Value::clone(&self.out(obj))),
        }
    }

    fn target(&self) -> Target<'_> {
        Target {
            catalogue: &self.state.catalogue,
            def: &self.path.def,
            version: &self.path.version,
        }
    }

    fn api_version(&self) -> String {
        self.path.def.api_version(&self.path.version)
    }

    fn key(&self, name: &str) -> Result<ObjKey, ApiError> {
        if self.path.def.namespaced {
            let ns = self
                .path
                .namespace
                .clone()
                .ok_or_else(ApiError::method_not_allowed)?;
            Ok((ns, name.to_string()))
        } else {
            Ok((String::new(), name.to_string()))
        }
    }

    fn write_opts(&self) -> WriteOpts {
        WriteOpts {
            dry_run: self.q.dry_run,
            field_manager: if self.admitted {
                String::new()
            } else {
                self.field_manager.clone()
            },
            managed_fields_done: self.admitted,
            keep_identity: self.admitted,
            skip_validation: !self.state.validate,
            admission: self.plugins,
        }
    }

    /// Where an apply to this path lands. As kube-apiserver's strategies: a kind with a
    /// status subresource resets `status` on the main resource; through `status`, a custom
    /// resource resets `metadata` and `spec`, a built-in `spec`.
    pub(super) fn apply_scope(&self, sub: Subresource) -> patch::ApplyScope<'static> {
        let def = &self.path.def;
        match sub {
            Subresource::Main => patch::ApplyScope {
                subresource: None,
                reset: if def.status { &["status"] } else { &[] },
            },
            Subresource::Status => patch::ApplyScope {
                subresource: Some("status"),
                reset: if def.custom {
                    &["metadata", "spec"]
                } else {
                    &["spec"]
                },
            },
        }
    }

    /// Options of a write through the scale subresource, whose managedFields `scale` has
    /// already mapped onto the parent.
    fn scale_write_opts(&self) -> WriteOpts {
        WriteOpts {
            dry_run: self.q.dry_run,
            field_manager: String::new(),
            managed_fields_done: true,
            keep_identity: false,
            skip_validation: !self.state.validate,
            admission: self.plugins,
        }
    }

    /// `obj` as the request's version: shared, not copied, when it already is.
    fn out(&self, obj: &Arc<Value>) -> Arc<Value> {
        ops::serve_version(&self.path.def, &self.path.version, obj)
            .map_or_else(|| obj.clone(), Arc::new)
    }

    /// kube-apiserver's `NegotiateInputSerializer` for create and update bodies: JSON, YAML
    /// or protobuf, else 415 UnsupportedMediaType.
    fn check_content_type(&self) -> Result<(), ApiError> {
        let ct = self.content_type.to_ascii_lowercase();
        let essence = ct.split(';').next().unwrap_or("").trim();
        if crate::proto::is_protobuf(&ct)
            || matches!(essence, "application/json" | "application/yaml")
        {
            return Ok(());
        }
        Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: \
             application/json, application/yaml, application/vnd.kubernetes.protobuf",
        ))
    }

    pub(super) fn decode(&self) -> Result<Value, ApiError> {
        self.check_content_type()?;
        let ct = self.content_type.to_ascii_lowercase();
        if crate::proto::is_protobuf(&ct) {
            return crate::proto::decode_body(self.bytes).map_err(ApiError::from);
        }
        if ct.contains("yaml") {
            return crate::yaml::from_slice(self.bytes).map_err(|e| {
                ApiError::bad_request(format!("decoding the YAML request body: {e}"))
            });
        }
        serde_json::from_slice(self.bytes)
            .map_err(|e| ApiError::bad_request(format!("decoding the JSON request body: {e}")))
    }

    /// Whether `fieldValidation` asks for a check of unknown fields (custom resources with a
    /// structural schema default to `Warn`, as kube-apiserver does).
    fn checks_fields(&self) -> bool {
        matches!(self.field_validation(), "Strict" | "Warn")
    }

    /// The `fieldValidation` mode; empty when not given, except for custom resources with a
    /// schema, where kube-apiserver's default `Warn` applies.
    fn field_validation(&self) -> &str {
        match self.q.field_validation.as_deref() {
            Some(mode) => mode,
            None if self.path.def.schema(&self.path.version).is_some() => "Warn",
            None => "",
        }
    }

    /// `fieldValidation`: Strict refuses unknown fields, Warn reports them. A built-in kind's
    /// object is decoded as kube-apiserver decodes it (type errors, unknown fields dropped,
    /// `Warn` by default).
    pub(super) fn validate_fields(
        &self,
        txn: &Txn<'_>,
        obj: &mut Value,
        source: crate::builtin::Source,
    ) -> Result<Vec<String>, ApiError> {
        if !self.path.def.custom {
            let mode = self.q.field_validation.as_deref();
            return crate::builtin::decode(&self.path.def, &self.path.version, obj, mode, source);
        }
        let mode = self.field_validation();
        if mode != "Strict" && mode != "Warn" {
            return Ok(Vec::new());
        }
        let unknown = match ops::custom_unknown_fields(self.target(), obj) {
            Some(unknown) => unknown,
            None => {
                let crds = ops::crd_schemas(txn);
                crate::openapi::unknown_fields(&self.target().gvk(), &crds, obj)
            }
        };
        self.report_unknown(&unknown)
    }

    /// `fieldValidation` over the unknown fields found: Strict refuses, Warn reports them.
    fn report_unknown(&self, unknown: &[String]) -> Result<Vec<String>, ApiError> {
        let mode = self.field_validation();
        if unknown.is_empty() || (mode != "Strict" && mode != "Warn") {
            return Ok(Vec::new());
        }
        let list: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field \"{f}\""))
            .collect();
        if mode == "Strict" {
            return Err(ApiError::bad_request(format!(
                "strict decoding error: {}",
                list.join(", ")
            )));
        }
        Ok(list)
    }

    /// The mutating built-in admission plugins on a create (not again on the write of an
    /// object the webhooks admitted, as they saw it after these plugins, unless a webhook
    /// changed it: kube-apiserver's reinvocation runs them once more).
    fn mutate(&self, txn: &Txn<'_>, obj: &mut Value) -> Result<(), ApiError> {
        if self.admitted && !self.reinvoke_plugins {
            return Ok(());
        }
        let ns = self.path.namespace.as_deref();
        crate::plugins::mutate(txn, self.plugins, &self.path.def, ns, obj)
    }

    /// The stored bytes of object `name` when a GET of it (or of its `status`) serves them
    /// as they are: shared with the store, neither decoded nor encoded again.
    fn get_as_stored(&self, name: &str, sub: Option<&str>) -> Option<Bytes> {
        match sub {
            None => {}
            Some("status") if self.path.def.status => {}
            Some(_) => return None,
        }
        let key = self.key(name).ok()?;
        let stored = self
            .state
            .store
            .lock()
            .get_stored(&self.path.def.key(), &key)?;
        let def = &self.path.def;
        list::served_as_stored(def, &self.path.version, &self.api_version(), &stored)
            .then(|| stored.json().clone())
    }

    fn get(&self, name: &str, sub: Option<&str>) -> Result<Answer, ApiError> {
        let key = self.key(name)?;
        // Only the subresources the kind has are routes at all.
        match sub {
            None => {}
            Some("status") if self.path.def.status => {}
            Some("scale") if self.path.def.scale.is_some() => {}
            Some(_) => return Err(ApiError::no_route()),
        }
        let txn = self.state.store.lock();
        let obj = txn
            .get(&self.path.def.key(), &key)
            .ok_or_else(|| ApiError::not_found(&self.path.def, name))?;
        drop(txn);
        let body = match sub {
            None => self.out(&obj),
            Some("status") if self.path.def.status => self.out(&obj),
            Some("scale") if self.path.def.scale.is_some() => {
                Arc::new(scale::to_scale(&self.path.def, &obj)?)
            }
            Some(_) => return Err(ApiError::no_route()),
        };
        Ok(Answer {
            code: 200,
            body,
            warnings: Vec::new(),
        })
    }

    pub(super) fn create(&self) -> Result<Answer, ApiError> {
        let def = &self.path.def;
        if def.namespaced && self.path.namespace.is_none() {
            return Err(ApiError::method_not_allowed());
        }
        self.check_content_type()?;
        options::check_write("CreateOptions", self.q)?;
        let mut obj = self.decode()?;
        check_no_resource_version(&obj, self.q.dry_run)?;
        let warnings = if !self.path.def.custom {
            let mode = self.q.field_validation.as_deref();
            crate::builtin::decode(
                &self.path.def,
                &self.path.version,
                &mut obj,
                mode,
                crate::builtin::Source::Body,
            )?
        } else if self.checks_fields() {
            self.validate_fields(
                &self.state.store.lock(),
                &mut obj,
                crate::builtin::Source::Body,
            )?
        } else {
            Vec::new()
        };
        if self.plugins.mutates(def) {
            self.mutate(&self.state.store.lock(), &mut obj)?;
        }
        if self.rbac_user.is_some() {
            self.confirm_no_escalation(&self.state.store.lock(), None, &obj)?;
        }
        // Defaulting, metadata and managedFields need no store: done before taking its lock,
        // so concurrent creates do that work in parallel and the lock is held only to check
        // and insert.
        let opts = self.write_opts();
        let prepared =
            ops::prepare_create(self.target(), self.path.namespace.as_deref(), obj, &opts)?;
        let mut txn = self.state.store.lock();
        let stored = ops::commit_create(&mut txn, self.target(), prepared, &opts)?;
        drop(txn);
        Ok(Answer {
            code: 201,
            body: self.out(&stored),
            warnings,
        })
    }

    pub(super) fn update(&self, name: &str, sub: Option<&str>) -> Result<Answer, ApiError> {
        let key = self.key(name)?;
        self.check_content_type()?;
        options::check_write("UpdateOptions", self.q)?;
        let mut obj = self.decode()?;
        let mut txn = self.state.store.lock();
        let sub = match sub {
            None => Subresource::Main,
            Some("status") if self.path.def.status => Subresource::Status,
            Some("scale") if self.path.def.scale.is_some() => {
                let current = txn
                    .get(&self.path.def.key(), &key)
                    .ok_or_else(|| ApiError::not_found(&self.path.def, name))?;
                let view = scale::view(&self.path.def, &current)?;
                let mut written = obj;
                patch::record_update_managed_fields_at(
                    Some(&view),
                    &mut written,
                    &self.field_manager,
                    "Update",
                    &scale::scale_gvk(),
                    Some("scale"),
                );
                let updated =
                    scale::write_back(&self.path.def, &current, &written, &self.api_version())?;
                let stored = ops::update(
                    &mut txn,
                    self.target(),
                    &key,
                    updated,
                    Subresource::Main,
                    &self.scale_write_opts(),
                )?;
                return Ok(Answer {
                    code: 200,
                    body: Arc::new(scale::to_scale(&self.path.def, &stored)?),
                    warnings: Vec::new(),
                });
            }
            Some(_) => return Err(ApiError::no_route()),
        };
        let warnings = self.validate_fields(&txn, &mut obj, crate::builtin::Source::Body)?;
        self.confirm_no_escalation(&txn, Some(&key), &obj)?;
        let stored = ops::update(&mut txn, self.target(), &key, obj, sub, &self.write_opts())?;
        drop(txn);
        Ok(Answer {
            code: 200,
            body: self.out(&stored),
            warnings,
        })
    }

    pub(super) fn patch(&self, name: &str, sub: Option<&str>) -> Result<Answer, ApiError> {
        let key = self.key(name)?;
        let def = &self.path.def;
        let gvk = self.target().gvk();
        // Custom resources (and their status and scale) take no strategic merge patch.
        let patch_type = PatchType::from_content_type(self.content_type)
            .filter(|t| t.accepted_for(&gvk))
            .ok_or_else(|| self.unsupported_patch_type())?;
        options::check_patch(self.q, patch_type)?;
        let mut txn = self.state.store.lock();
        let current = txn.get(&def.key(), &key);
        let sub_kind = match sub {
            None => Subresource::Main,
            Some("status") if def.status => Subresource::Status,
            Some("scale") if def.scale.is_some() => {
                let current = current.ok_or_else(|| ApiError::not_found(def, name))?;
                let view = scale::view(def, &current)?;
                let scale_gvk = scale::scale_gvk();
                let written = match patch_type {
                    PatchType::Apply => patch::server_side_apply_at(
                        Some(&view),
                        self.bytes,
                        self.q.field_manager.as_deref().unwrap_or_default(),
                        self.q.force.unwrap_or(false),
                        &scale_gvk,
                        patch::ApplyScope {
                            subresource: Some("scale"),
                            reset: &[],
                        },
                    )?,
                    other => {
                        let mut patched = patch::apply_patch(other, &view, self.bytes, &scale_gvk)?;
                        patch::record_update_managed_fields_at(
                            Some(&view),
                            &mut patched,
                            &self.field_manager,
                            "Update",
                            &scale_gvk,
                            Some("scale"),
                        );
                        patched
                    }
                };
                let updated = scale::write_back(def, &current, &written, &self.api_version())?;
                let stored = ops::update(
                    &mut txn,
                    self.target(),
                    &key,
                    updated,
                    Subresource::Main,
                    &self.scale_write_opts(),
                )?;
                return Ok(Answer {
                    code: 200,
                    body: Arc::new(scale::to_scale(def, &stored)?),
                    warnings: Vec::new(),
                });
            }
            Some(_) => return Err(ApiError::no_route()),
        };
        // The object as the request's version sees it (a custom resource's other-version
        // fields pruned and its defaults applied), which the patch applies to.
        let current_view = current.as_ref().map(|c| {
            ops::serve_version(def, &self.path.version, c).unwrap_or_else(|| (**c).clone())
        });
        if patch_type == PatchType::Apply {
            let manager = self.q.field_manager.clone().unwrap_or_default();
            let mut applied = patch::server_side_apply_at(
                current_view.as_ref(),
                self.bytes,
                &manager,
                self.q.force.unwrap_or(false),
                &gvk,
                self.apply_scope(sub_kind),
            )?;
            let warnings =
                self.validate_fields(&txn, &mut applied, crate::builtin::Source::Body)?;
            self.confirm_no_escalation(&txn, Some(&key), &applied)?;
            let opts = WriteOpts {
                dry_run: self.q.dry_run,
                field_manager: String::new(),
                managed_fields_done: true,
                keep_identity: self.admitted,
                skip_validation: !self.state.validate,
                admission: self.plugins,
            };
            let (code, stored) = match current {
                None => {
                    if sub_kind == Subresource::Status {
                        return Err(ApiError::not_found(def, name));
                    }
                    applied["metadata"]["name"] = json!(name);
                    self.mutate(&txn, &mut applied)?;
                    (
                        201,
                        ops::create(
                            &mut txn,
                            self.target(),
                            self.path.namespace.as_deref(),
                            applied,
                            &opts,
                        )?,
                    )
                }
                Some(_) => (
                    200,
                    ops::update(&mut txn, self.target(), &key, applied, sub_kind, &opts)?,
                ),
            };
            return Ok(Answer {
                code,
                body: self.out(&stored),
                warnings,
            });
        }
        let current_view = current_view.ok_or_else(|| ApiError::not_found(def, name))?;
        let mut patched = patch::apply_patch(patch_type, &current_view, self.bytes, &gvk)?;
        let warnings = self.validate_fields(&txn, &mut patched, crate::builtin::Source::Patch)?;
        self.confirm_no_escalation(&txn, Some(&key), &patched)?;
        let stored = ops::update(
            &mut txn,
            self.target(),
            &key,
            patched,
            sub_kind,
            &self.write_opts(),
        )?;
        drop(txn);
        Ok(Answer {
            code: 200,
            body: self.out(&stored),
            warnings,
        })
    }

    /// A PATCH whose `Content-Type` is no patch type: for built-in resources go-restful
    /// refuses a body it does not consume before the handler runs (its "415: Unsupported Media
    /// Type" wrapped as a Status); otherwise (no body, or a custom resource, which
    /// apiextensions-apiserver serves without go-restful) the handler names the accepted types.
    fn unsupported_patch_type(&self) -> ApiError {
        if !self.bytes.is_empty() && !self.path.def.custom {
            let message = "415: Unsupported Media Type";
            return ApiError::new(415, "UnsupportedMediaType", message).with_details(json!({
                "causes": [{"reason": "UnexpectedServerResponse", "message": message}],
            }));
        }
        ApiError::new(
            415,
            "UnsupportedMediaType",
            patch::unsupported_patch_message(&self.target().gvk()),
        )
    }

    pub(super) fn delete_opts(&self) -> Result<DeleteOpts, ApiError> {
        options::check_delete(self.q)?;
        let mut opts = DeleteOpts {
            dry_run: self.q.dry_run,
            grace_period: self.q.grace_period_seconds,
            ..DeleteOpts::default()
        };
        let mut policy = self.q.propagation_policy.clone();
        let mut orphan = self.q.orphan_dependents;
        if !self.bytes.is_empty() {
            let body: Value = if crate::proto::is_protobuf(self.content_type) {
                crate::proto::decode_body(self.bytes)?
            } else {
                serde_json::from_slice(self.bytes)
                    .map_err(|e| ApiError::bad_request(format!("decoding DeleteOptions: {e}")))?
            };
            if let Some(p) = body.get("propagationPolicy").and_then(Value::as_str) {
                policy = Some(p.to_string());
            }
            if let Some(o) = body.get("orphanDependents").and_then(Value::as_bool) {
                orphan = Some(o);
            }
            if let Some(g) = body.get("gracePeriodSeconds").and_then(Value::as_i64) {
                opts.grace_period = Some(g);
            }
            if let Some(dry) = body.get("dryRun").and_then(Value::as_array) {
                opts.dry_run |= dry.iter().any(|d| d.as_str() == Some("All"));
            }
            opts.precondition_uid = body
                .pointer("/preconditions/uid")
                .and_then(Value::as_str)
                .map(str::to_string);
            opts.precondition_rv = body
                .pointer("/preconditions/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        opts.orphan_dependents = orphan;
        opts.propagation = match policy.as_deref() {
            Some("Foreground") => Some(Propagation::Foreground),
            Some("Background") => Some(Propagation::Background),
            Some("Orphan") => Some(Propagation::Orphan),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "DeleteOptions.meta.k8s.io is invalid: propagationPolicy: Unsupported value: \"{other}\""
                )));
            }
            None => orphan.map(|o| {
                if o {
                    Propagation::Orphan
                } else {
                    Propagation::Background
                }
            }),
        };
        Ok(opts)
    }

    pub(super) fn delete(&self, name: &str) -> Result<Answer, ApiError> {
        let key = self.key(name)?;
        let opts = self.delete_opts()?;
        let def = &self.path.def;
        let mut txn = self.state.store.lock();
        let outcome = ops::delete(&mut txn, self.target(), &key, &opts)?;
        drop(txn);
        Ok(match outcome {
            // apiserver's delete handler: 202 only when the client asked for cascading
            // deletion with `orphanDependents: false` and the object is still there.
            DeleteOutcome::Pending(obj) => Answer {
                code: if opts.orphan_dependents == Some(false) {
                    202
                } else {
                    200
                },
                body: self.out(&obj),
                warnings: Vec::new(),
            },
            DeleteOutcome::Gone(obj) => {
                let body = if returns_deleted_object(def) {
                    self.out(&obj)
                } else {
                    Arc::new(status::success(def, name, crate::store::uid_of(&obj)))
                };
                Answer {
                    code: 200,
                    body,
                    warnings: Vec::new(),
                }
            }
        })
    }

    pub(super) fn delete_collection(&self) -> Result<Answer, ApiError> {
        let def = &self.path.def;
        let opts = self.delete_opts()?;
        let labels = LabelSelector::parse(self.q.label_selector.as_deref().unwrap_or(""))?;
        let fields = FieldSelector::parse(
            self.q.field_selector.as_deref().unwrap_or(""),
            &list::field_labels(self.state, self.path),
        )?;
        let mut txn = self.state.store.lock();
        let victims: Vec<Arc<Value>> = txn
            .list(&def.key(), self.path.namespace.as_deref())
            .into_iter()
            .filter(|o| labels.matches(o) && fields.matches(o))
            .collect();
        let mut items = Vec::new();
        for obj in victims {
            let key = object_key(&obj);
            match ops::delete(&mut txn, self.target(), &key, &opts) {
                Ok(DeleteOutcome::Gone(o) | DeleteOutcome::Pending(o)) => {
                    items.push(Value::clone(&self.out(&o)))
                }
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let rv = txn.rv();
        drop(txn);
        Ok(Answer {
            code: 200,
            body: Arc::new(json!({
                "kind": def.list_kind(),
                "apiVersion": self.api_version(),
                "metadata": {"resourceVersion": rv.to_string()},
                "items": items,
            })),
            warnings: Vec::new(),
        })
    }
}

/// A create must not carry a resourceVersion: kube-apiserver's storage refuses it with a plain
/// error, which reaches the client as 500 with no reason (a dry run never reaches storage).
fn check_no_resource_version(obj: &Value, dry_run: bool) -> Result<(), ApiError> {
    let rv = obj
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|rv| rv.parse::<u64>().ok())
        .unwrap_or(0);
    if rv == 0 || dry_run {
        return Ok(());
    }
    Err(ApiError::new(
        500,
        "",
        "resourceVersion should not be set on objects to be created",
    ))
}
