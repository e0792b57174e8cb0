//! Object semantics on top of the store: create, update, delete with finalizers, garbage
//! collection, namespace termination and the CRD life cycle. Every function runs inside one
//! store transaction, so each API call is atomic; cascades (garbage collection, namespace
//! termination) are queued and run afterwards by the collector task ([`collect_garbage`]).

mod crd;
mod create;
mod custom;
mod defaults;
mod delete;
mod gc;
pub(crate) mod graceful;
pub(crate) mod meta;
mod update;

use serde_json::Value;

use crate::status::ApiError;

use crate::patch::Gvk;
use crate::resources::{Catalogue, ResourceDef};

pub(crate) use crd::crd_schemas;
pub(crate) use create::{check_type, commit as commit_create, create, prepare as prepare_create};
pub(crate) use custom::{
    decode as custom_decode, serve as serve_version, unknown_fields as custom_unknown_fields,
    validate as custom_validate,
};
pub(crate) use delete::{DeleteOpts, DeleteOutcome, Propagation, delete};
pub(crate) use gc::step as collect_garbage;
pub(crate) use update::{Subresource, update};

/// Options shared by every write.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteOpts {
    /// `dryRun=All`: validate and answer, store nothing.
    pub(crate) dry_run: bool,
    /// The field manager recorded in managedFields (empty: record no entry of its own).
    pub(crate) field_manager: String,
    /// The object's managedFields were already worked out (server-side apply): an update
    /// stores them as they are instead of recording this write.
    pub(crate) managed_fields_done: bool,
    /// The object is one admission webhooks saw: a create keeps the uid and creation time
    /// they saw (kube-apiserver assigns them once, before validating admission).
    pub(crate) keep_identity: bool,
    /// Skip metadata and per-kind validation ([`TestEnvBuilder::validate_objects`]).
    ///
    /// [`TestEnvBuilder::validate_objects`]: crate::TestEnvBuilder::validate_objects
    pub(crate) skip_validation: bool,
    /// The built-in validating admission plugins run on this write (none by default:
    /// internal writes are not admitted).
    pub(crate) admission: crate::plugins::Plugins,
}

/// What a write needs to know besides the store: the catalogue and which resource and version.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target<'a> {
    /// The catalogue (CRD writes change it).
    pub(crate) catalogue: &'a Catalogue,
    /// The resource written.
    pub(crate) def: &'a ResourceDef,
    /// The API version the client used.
    pub(crate) version: &'a str,
}

impl Target<'_> {
    /// The group, version and kind of the request.
    pub(crate) fn gvk(&self) -> Gvk {
        let schema = self
            .def
            .custom_version(self.version)
            .and_then(|v| v.schema.clone());
        Gvk::new(&self.def.group, self.version, &self.def.kind).with_schema(schema)
    }
}

/// Whether `def` is the CustomResourceDefinition resource.
pub(crate) fn is_crd(def: &ResourceDef) -> bool {
    def.group == "apiextensions.k8s.io" && def.plural == "customresourcedefinitions"
}

/// Whether `def` is the Namespace resource.
pub(crate) fn is_namespace(def: &ResourceDef) -> bool {
    def.group.is_empty() && def.plural == "namespaces"
}

/// Sets `apiVersion` to the version the client asked for (stored objects keep the version
/// they were written with; versions of one resource share storage, as with `None` conversion).
pub(crate) fn as_version(obj: &Value, api_version: &str) -> Option<Value> {
    if obj.get("apiVersion").and_then(Value::as_str) == Some(api_version) {
        return None;
    }
    let mut out = obj.clone();
    out["apiVersion"] = Value::String(api_version.to_string());
    Some(out)
}

/// Conversions kube-apiserver applies to incoming objects: a Secret's `stringData` is
/// folded into base64 `data`.
pub(crate) fn normalize(def: &ResourceDef, obj: &mut Value) {
    if !(def.group.is_empty() && def.plural == "secrets") {
        return;
    }
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(strings)) = map.remove("stringData") else {
        return;
    };
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if !data.is_object() {
        *data = Value::Object(serde_json::Map::new());
    }
    if let Some(data) = data.as_object_mut() {
        use base64::Engine as _;
        for (k, v) in strings {
            let text = v.as_str().unwrap_or_default().to_string();
            data.insert(
                k,
                Value::String(base64::engine::general_purpose::STANDARD.encode(text)),
            );
        }
    }
}

/// The largest request etcd takes (its `--max-request-bytes` default, 1.5 MiB): an object
/// whose stored form is larger cannot be written.
pub(crate) const MAX_STORED_OBJECT_BYTES: usize = 1_572_864;

/// Checks that `obj` fits in one etcd request, as kube-apiserver learns when etcd refuses it:
/// a create or update that is too large is retried once without `managedFields` (which can
/// be large), and then answered with etcd's error as a 500 (kube-apiserver passes the
/// `etcdserver: request is too large` error through unconverted). The stored form is
/// measured as JSON, which is at least as large as the protobuf kube stores built-ins as.
pub(crate) fn check_stored_size(obj: &mut Value) -> Result<(), ApiError> {
    let fits =
        |obj: &Value| crate::patch::encoded_size_within(obj, MAX_STORED_OBJECT_BYTES).is_some();
    if fits(obj) {
        return Ok(());
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
        && meta.remove("managedFields").is_some()
        && fits(obj)
    {
        return Ok(());
    }
    Err(ApiError::new(500, "", "etcdserver: request is too large"))
}
