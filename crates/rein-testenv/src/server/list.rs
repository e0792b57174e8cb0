//! List: selectors, `resourceVersion`/`resourceVersionMatch` (waiting for a version the server
//! has not reached, then 504), and `limit`/`continue` paging over one consistent snapshot
//! (410 Expired once the snapshot's history is compacted).

use std::io::Write as _;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::{HeaderMap, Response};
use serde_json::{Value, json};

use super::body::{self, Body};
use super::query::Query;
use super::route::ResourcePath;
use super::{State, table};
use crate::resources::{ResKey, ResourceDef};
use crate::selectors::{FieldLabels, FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::{ObjKey, Stored};

/// Answers a list request.
pub(crate) async fn serve(
    state: &Arc<State>,
    path: &ResourcePath,
    q: &Query,
    headers: &HeaderMap,
) -> Response<Body> {
    match list(state, path, q, headers).await {
        Ok(resp) => resp,
        Err(e) => body::error(&e),
    }
}

/// The field labels `path`'s resource accepts in a `fieldSelector` (a custom resource's come
/// from its CRD). Takes the store's lock briefly: call it without holding it.
pub(crate) fn field_labels(state: &State, path: &ResourcePath) -> FieldLabels {
    let def = &path.def;
    if !def.custom {
        return FieldLabels::builtin(&def.group, &def.plural);
    }
    let crds = ResKey {
        group: "apiextensions.k8s.io".to_string(),
        plural: "customresourcedefinitions".to_string(),
    };
    let name = format!("{}.{}", def.plural, def.group);
    let crd = state.store.lock().get(&crds, &(String::new(), name));
    FieldLabels::custom(def.namespaced, crd.as_deref(), &path.version)
}

/// The `resourceVersion` a request must see at least (none for unset and `"0"`, which mean
/// "any"); a value that is not a number answers 400.
pub(crate) fn requested_rv(q: &Query) -> Result<Option<u64>, ApiError> {
    match q.resource_version.as_deref() {
        None | Some("" | "0") => Ok(None),
        Some(rv) => rv
            .parse::<u64>()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}"))),
    }
}

/// Waits, as kube-apiserver's watch cache does, for the store to reach `rv`: answers once a
/// write gets there, or 504 Timeout (`ResourceVersionTooLarge`) after `too_large_rv_wait`.
pub(crate) async fn wait_until_fresh(state: &State, rv: u64) -> Result<(), ApiError> {
    if state.store.wait_for_rv(rv, state.too_large_rv_wait).await {
        return Ok(());
    }
    Err(ApiError::too_large_resource_version(
        rv,
        state.store.current_rv(),
    ))
}

/// kube-apiserver's validation of a list's `resourceVersion`, `resourceVersionMatch` and
/// `continue` (apimachinery's `ValidateListOptions`: 422 Invalid on `ListOptions`; and the
/// storage layer's 400 for a resourceVersion beside a continue token).
fn check_list_options(q: &Query) -> Result<(), ApiError> {
    super::options::check_list(q)?;
    let rv = q.resource_version.as_deref().unwrap_or("");
    if q.continue_token.is_some() && !rv.is_empty() && rv != "0" {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    Ok(())
}

async fn list(
    state: &Arc<State>,
    path: &ResourcePath,
    q: &Query,
    headers: &HeaderMap,
) -> Result<Response<Body>, ApiError> {
    let def = &path.def;
    // The selector is parsed while the query is decoded (400), before options are validated.
    let labels = LabelSelector::parse(q.label_selector.as_deref().unwrap_or(""))?;
    check_list_options(q)?;
    let fields = FieldSelector::parse(
        q.field_selector.as_deref().unwrap_or(""),
        &field_labels(state, path),
    )?;
    let namespace = path.namespace.as_deref().filter(|_| def.namespaced);
    let (snapshot_rv, start_after) = match &q.continue_token {
        Some(token) => {
            let (rv, key) = decode_continue(token)?;
            // A token naming a version the server has not reached (forged, or from another
            // server) is no page of that version: like the watch cache, wait for it, then
            // 504 with the `ResourceVersionTooLarge` cause.
            wait_until_fresh(state, rv).await?;
            (Some(rv), Some(key))
        }
        None => {
            // Not older than (or exactly) a version the server has not reached yet: wait
            // for it, like the watch cache.
            let requested = requested_rv(q)?;
            if let Some(rv) = requested {
                wait_until_fresh(state, rv).await?;
            }
            let exact = q.resource_version_match.as_deref() == Some("Exact");
            (requested.filter(|_| exact), None)
        }
    };
    let (items, list_rv) = {
        let txn = state.store.lock();
        match snapshot_rv {
            None => (txn.list_stored(&def.key(), namespace), txn.rv()),
            Some(rv) => {
                let items = txn.list_at(&def.key(), namespace, rv).map_err(|_| {
                    if q.continue_token.is_some() {
                        ApiError::expired(
                            "The provided continue parameter is too old to display a consistent \
                             list result. You can start a new list without the continue \
                             parameter, or use the continue token in this response to retrieve \
                             the remainder of the results.",
                        )
                    } else {
                        ApiError::expired(format!("too old resource version: {rv}"))
                    }
                })?;
                (items, rv)
            }
        }
    };
    let start = match &start_after {
        Some(key) => items.partition_point(|o| o.key_ref() <= (&key.0, &key.1)),
        None => 0,
    };
    let select = Selection::new(def, labels, fields);
    let mut page: Vec<&Arc<Stored>> = Vec::new();
    let mut more = false;
    let mut remaining = 0usize;
    let filtered = q.label_selector.is_some() || q.field_selector.is_some();
    for obj in &items[start..] {
        if !select.matches(obj) {
            continue;
        }
        if q.limit.is_some_and(|l| page.len() >= l) {
            more = true;
            remaining += 1;
            if filtered {
                break;
            }
            continue;
        }
        page.push(obj);
    }
    // With webhook conversion, the page goes through the webhook in one review.
    let converted: Vec<Arc<Stored>>;
    let page: Vec<&Arc<Stored>> = if super::converted::applies(def) {
        let objects = page.iter().map(|o| o.decode()).collect();
        converted = super::converted::to_version(state, def, objects, &path.version, true)
            .await?
            .into_iter()
            .map(|o| Arc::new(Stored::new(&def.key(), &o)))
            .collect();
        converted.iter().collect()
    } else {
        page
    };
    let api_version = def.api_version(&path.version);
    let continue_token = match page.last() {
        Some(last) if more => Some(encode_continue(list_rv, &last.key())),
        _ => None,
    };
    if let Some(include) = table::requested(headers, q)? {
        let decoded: Vec<Arc<Value>> = page.iter().map(|o| o.value()).collect();
        let rows: Vec<&Arc<Value>> = decoded.iter().collect();
        return Ok(body::json(
            200,
            &table::table(
                def,
                &path.version,
                &rows,
                table::Page {
                    rv: list_rv,
                    continue_token: continue_token.as_deref(),
                    remaining: (continue_token.is_some() && !filtered).then_some(remaining),
                },
                include,
            ),
        ));
    }
    let mut meta = json!({"resourceVersion": list_rv.to_string()});
    if let Some(token) = continue_token {
        meta["continue"] = json!(token);
        if !filtered {
            meta["remainingItemCount"] = json!(remaining);
        }
    }
    let mut head = Vec::with_capacity(256);
    let _ = write!(
        head,
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":",
        json!(def.list_kind()),
        json!(api_version),
    );
    crate::canonical::write_as(&mut head, "meta/v1.ListMeta", &meta);
    head.extend_from_slice(b",\"items\":[");
    let page: Vec<Arc<Stored>> = page.into_iter().cloned().collect();
    let size: usize = page.iter().map(|o| o.json().len() + 1).sum();
    if size <= body::CHUNK {
        let mut out = head;
        out.reserve(size + 2);
        let mut items = ListItems::new(def.clone(), path.version.clone(), api_version, page);
        items.fill(&mut out, usize::MAX);
        out.extend_from_slice(b"]}");
        return Ok(body::json_bytes(200, out));
    }
    // A large list goes out in chunks copied from the stored objects as the client reads,
    // not built whole first: its size in memory stays one chunk however many objects match.
    let items = ListItems::new(def.clone(), path.version.clone(), api_version, page);
    Ok(body::json_stream(head, items))
}

/// The items of a list response still to send.
pub(crate) struct ListItems {
    def: Arc<ResourceDef>,
    version: String,
    api_version: String,
    items: std::vec::IntoIter<Arc<Stored>>,
    first: bool,
}

impl ListItems {
    fn new(
        def: Arc<ResourceDef>,
        version: String,
        api_version: String,
        items: Vec<Arc<Stored>>,
    ) -> Self {
        ListItems {
            def,
            version,
            api_version,
            items: items.into_iter(),
            first: true,
        }
    }

    /// Appends items, comma-separated, until `out` holds at least `limit` bytes or none are
    /// left; answers whether any are left.
    pub(crate) fn fill(&mut self, out: &mut Vec<u8>, limit: usize) -> bool {
        while out.len() < limit {
            let Some(obj) = self.items.next() else {
                return false;
            };
            if !std::mem::take(&mut self.first) {
                out.push(b',');
            }
            let start = out.len();
            write_served(out, &self.def, &self.version, &self.api_version, &obj);
            // Items of built-in kinds go out without `kind` and `apiVersion`.
            crate::canonical::untype_list_item(out, start);
        }
        self.items.len() > 0
    }
}

/// Label and field selectors, matched against each stored object's summary where that holds
/// every field they read, else against the decoded object.
pub(crate) struct Selection {
    labels: LabelSelector,
    fields: FieldSelector,
    /// The field selector reads only fields the summary keeps.
    on_summary: bool,
}

impl Selection {
    /// The selectors of a request on `def`.
    pub(crate) fn new(def: &ResourceDef, labels: LabelSelector, fields: FieldSelector) -> Self {
        let on_summary = fields.reads_only(&FieldLabels::builtin_paths(&def.group, &def.plural));
        Selection {
            labels,
            fields,
            on_summary,
        }
    }

    /// Whether `obj` is selected.
    pub(crate) fn matches(&self, obj: &Stored) -> bool {
        let summary = obj.summary();
        if !self.labels.matches_labels(|k| summary.label(k)) {
            return false;
        }
        if self.fields.is_empty() {
            true
        } else if self.on_summary {
            self.fields.matches(&summary.selectable())
        } else {
            self.fields.matches(&obj.decode())
        }
    }
}

/// Whether `obj` is served at `version` exactly as stored: same `apiVersion`, and no schema
/// of that version that could default or prune it (kube-apiserver's `serve` of a custom
/// resource). Then its stored JSON goes out without decoding.
pub(crate) fn served_as_stored(
    def: &ResourceDef,
    version: &str,
    api_version: &str,
    obj: &Stored,
) -> bool {
    obj.api_version() == api_version && def.schema(version).is_none_or(|s| !s.has_defaults())
}

/// Appends `obj` as served at `version` (`api_version`): its stored bytes when they are
/// what is served, else decoded, converted and encoded.
pub(crate) fn write_served(
    out: &mut Vec<u8>,
    def: &ResourceDef,
    version: &str,
    api_version: &str,
    obj: &Stored,
) {
    if served_as_stored(def, version, api_version, obj) {
        out.extend_from_slice(obj.json());
        return;
    }
    let value = obj.decode();
    match crate::ops::serve_version(def, version, &value) {
        Some(served) => {
            crate::canonical::write(out, &served);
        }
        None => write_object(out, &value, api_version),
    }
}

/// Serialises `obj` as `api_version`.
pub(crate) fn write_object(out: &mut Vec<u8>, obj: &Value, api_version: &str) {
    match crate::ops::as_version(obj, api_version) {
        Some(converted) => crate::canonical::write(out, &converted),
        None => crate::canonical::write(out, obj),
    }
}

fn encode_continue(rv: u64, key: &ObjKey) -> String {
    let raw = json!({"rv": rv, "ns": key.0, "name": key.1}).to_string();
    URL_SAFE_NO_PAD.encode(raw)
}

fn decode_continue(token: &str) -> Result<(u64, ObjKey), ApiError> {
    let bad = || ApiError::bad_request("continue key is not valid");
    let raw = URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let ns = v.get("ns").and_then(Value::as_str).ok_or_else(bad)?;
    let name = v.get("name").and_then(Value::as_str).ok_or_else(bad)?;
    Ok((rv, (ns.to_string(), name.to_string())))
}
