//! Create: defaulting of metadata, name generation and validation, namespace checks.

use std::sync::Arc;

use serde_json::{Value, json};

use super::meta::{self, meta_mut};
use super::{Target, WriteOpts, crd, is_crd, is_namespace};
use crate::patch;
use crate::resources::{ResKey, ResourceDef};
use crate::status::ApiError;
use crate::store::{ObjKey, Txn};

/// Creates `obj` in `namespace` (for namespaced resources); answers the stored object.
pub(crate) fn create(
    txn: &mut Txn<'_>,
    target: Target<'_>,
    namespace: Option<&str>,
    obj: Value,
    opts: &WriteOpts,
) -> Result<Arc<Value>, ApiError> {
    let prepared = prepare(target, namespace, obj, opts)?;
    commit(txn, target, prepared, opts)
}

/// An object ready to be stored: everything a create does that does not read the store
/// (defaulting, naming, server-set metadata, managedFields), so a request handler can do it
/// before taking the store's lock.
#[derive(Debug)]
pub(crate) struct Prepared {
    key: ObjKey,
    obj: Value,
}

/// The part of a create that needs no store: checks and fills in `obj`.
pub(crate) fn prepare(
    target: Target<'_>,
    namespace: Option<&str>,
    mut obj: Value,
    opts: &WriteOpts,
) -> Result<Prepared, ApiError> {
    let def = target.def;
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    check_type(target, &mut obj)?;
    super::custom::decode(target, &mut obj);
    super::normalize(def, &mut obj);
    super::defaults::apply(def, &mut obj, None);
    crate::canonical::normalize(&mut obj);
    let meta = meta_mut(&mut obj);
    if def.namespaced {
        let ns = namespace.ok_or_else(|| ApiError::bad_request("a namespace is required"))?;
        match meta.get("namespace").and_then(Value::as_str) {
            Some(body_ns) if !body_ns.is_empty() && body_ns != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on \
                     the request",
                ));
            }
            _ => {
                meta.insert("namespace".into(), json!(ns));
            }
        }
    } else {
        meta.remove("namespace");
    }
    let name = match meta.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => match meta.get("generateName").and_then(Value::as_str) {
            Some(prefix) if !prefix.is_empty() => meta::generate_name(prefix),
            _ => {
                return Err(ApiError::invalid(
                    def,
                    "",
                    "metadata.name",
                    "Required value: name or generateName is required",
                ));
            }
        },
    };
    meta.insert("name".into(), json!(name));
    if !is_crd(def) {
        // A CRD's name is checked with the rest of it, below.
        meta::validate_name(def, &name)?;
    }
    if !opts.skip_validation {
        crate::builtin::validate_create(def, &obj)?;
    }
    let key = (
        namespace
            .filter(|_| def.namespaced)
            .unwrap_or("")
            .to_string(),
        name.clone(),
    );
    let meta = meta_mut(&mut obj);
    for field in [
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        meta.remove(field);
    }
    let kept = |key: &str| {
        meta.get(key)
            .and_then(Value::as_str)
            .filter(|v| opts.keep_identity && !v.is_empty())
            .map(str::to_string)
    };
    let uid = kept("uid").unwrap_or_else(meta::new_uid);
    let created = kept("creationTimestamp").unwrap_or_else(meta::now);
    meta.insert("uid".into(), json!(uid));
    meta.insert("creationTimestamp".into(), json!(created));
    if meta::tracks_generation(def) {
        meta.insert("generation".into(), json!(1));
    }
    if def.group == "batch" && def.plural == "jobs" {
        super::defaults::job_selector(&mut obj, &name, &uid);
    }
    prepare_status(target, &mut obj, &name);
    if is_crd(def) {
        crd::prepare_create(&mut obj)?;
    }
    super::custom::validate(target, &obj, None, &name)?;
    if !opts.field_manager.is_empty() {
        patch::record_update_managed_fields(
            None,
            &mut obj,
            &opts.field_manager,
            "Update",
            &target.gvk(),
        );
    }
    Ok(Prepared { key, obj })
}

/// The part of a create that reads and writes the store: the namespace must be open and the
/// name free; then the object is stored (unless this is a dry run).
pub(crate) fn commit(
    txn: &mut Txn<'_>,
    target: Target<'_>,
    prepared: Prepared,
    opts: &WriteOpts,
) -> Result<Arc<Value>, ApiError> {
    let def = target.def;
    let Prepared { key, obj } = prepared;
    if def.namespaced {
        check_namespace_open(txn, def, &key)?;
    }
    let op = crate::plugins::Op::Create;
    crate::plugins::validate(txn, opts.admission, def, op, &obj, None)?;
    if txn.contains(&def.key(), &key) {
        return Err(ApiError::already_exists(def, &key.1));
    }
    crd::check_create_allowed(txn, def, &key.1)?;
    let mut obj = obj;
    super::custom::to_storage_version(def, &mut obj);
    if opts.dry_run {
        return Ok(Arc::new(obj));
    }
    let mut obj = crate::resources::to_storage(&def.group, &def.plural, obj);
    super::check_stored_size(&mut obj)?;
    let stored = txn.insert(&def.key(), key, obj);
    if is_crd(def) {
        return Ok(crd::on_write(txn, target.catalogue, &stored).unwrap_or(stored));
    }
    Ok(stored)
}

/// Fills in or checks `apiVersion` and `kind`.
pub(crate) fn check_type(target: Target<'_>, obj: &mut Value) -> Result<(), ApiError> {
    let api_version = target.def.api_version(target.version);
    match obj.get("kind").and_then(Value::as_str) {
        None | Some("") => obj["kind"] = json!(target.def.kind),
        Some(kind) if kind != target.def.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                target.def.kind
            )));
        }
        Some(_) => {}
    }
    match obj.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => obj["apiVersion"] = json!(api_version),
        Some(v) if v != api_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version \
                 ({api_version})"
            )));
        }
        Some(_) => {}
    }
    Ok(())
}

/// NamespaceLifecycle: fails unless the namespace of `key` exists and is not terminating.
pub(super) fn check_namespace_open(
    txn: &Txn<'_>,
    def: &ResourceDef,
    key: &ObjKey,
) -> Result<(), ApiError> {
    let namespace = key.0.as_str();
    let ns_res = ResKey {
        group: String::new(),
        plural: "namespaces".to_string(),
    };
    let Some(ns) = txn.get(&ns_res, &(String::new(), namespace.to_string())) else {
        return Err(ApiError::new(
            404,
            "NotFound",
            format!("namespaces \"{namespace}\" not found"),
        )
        .with_details(json!({"name": namespace, "kind": "namespaces"})));
    };
    if meta::is_deleting(&ns) {
        let mut err = ApiError::forbidden_object(
            def,
            &key.1,
            &format!(
                "unable to create new content in namespace {namespace} because it is being \
                 terminated"
            ),
        );
        let details = err.details.get_or_insert_with(|| json!({}));
        details["causes"] = json!([{
            "reason": "NamespaceTerminating",
            "message": format!("namespace {namespace} is being terminated"),
            "field": "metadata.namespace",
        }]);
        return Err(err);
    }
    Ok(())
}

/// What kube-apiserver's strategies do to `status` (and a namespace's spec) on create.
fn prepare_status(target: Target<'_>, obj: &mut Value, name: &str) {
    let def = target.def;
    if is_namespace(def) {
        obj["spec"] = json!({"finalizers": ["kubernetes"]});
        obj["status"] = json!({"phase": "Active"});
        let meta = meta_mut(obj);
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert("kubernetes.io/metadata.name".into(), json!(name));
        }
        return;
    }
    // Nodes may set every field on create, status included (kube's node strategy).
    if !def.status || (def.group.is_empty() && def.plural == "nodes") {
        return;
    }
    if def.group.is_empty() && def.plural == "pods" {
        let qos = qos_class(obj.get("spec").unwrap_or(&Value::Null));
        obj["status"] = json!({"phase": "Pending", "qosClass": qos});
        return;
    }
    if def.group.is_empty() && def.plural == "persistentvolumeclaims" {
        // Cleared by the strategy, then `Pending` from SetDefaults_PersistentVolumeClaim.
        obj["status"] = json!({"phase": "Pending"});
        return;
    }
    if def.group.is_empty() && def.plural == "persistentvolumes" {
        // The strategy's PrepareForCreate (PersistentVolumeLastPhaseTransitionTime, GA).
        obj["status"] = json!({"phase": "Pending", "lastPhaseTransitionTime": meta::now()});
        return;
    }
    if let Some(o) = obj.as_object_mut() {
        o.remove("status");
    }
}

/// A Pod's QoS class, as `qos.ComputePodQOS` decides it from its containers' (and init
/// containers') cpu and memory requests and limits: none anywhere is `BestEffort`; limits for
/// both on every container, equal to the requests, is `Guaranteed`; anything else `Burstable`.
fn qos_class(spec: &Value) -> &'static str {
    use crate::quantity::Quantity;
    use std::collections::BTreeMap;
    let mut requests: BTreeMap<&str, Quantity> = BTreeMap::new();
    let mut limits: BTreeMap<&str, Quantity> = BTreeMap::new();
    let mut guaranteed = true;
    let containers = ["containers", "initContainers"]
        .into_iter()
        .filter_map(|list| spec.get(list).and_then(Value::as_array))
        .flatten();
    for container in containers {
        let mut limited = 0;
        for (kind, totals) in [("requests", &mut requests), ("limits", &mut limits)] {
            for name in ["cpu", "memory"] {
                let Some(quantity) = container
                    .pointer(&format!("/resources/{kind}/{name}"))
                    .and_then(|q| match q {
                        Value::String(s) => Quantity::parse(s).ok(),
                        Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
                        _ => None,
                    })
                    .filter(|q| !q.is_zero() && !q.is_negative())
                else {
                    continue;
                };
                if kind == "limits" {
                    limited += 1;
                }
                let total = totals.entry(name).or_insert_with(Quantity::zero);
                *total = total.add(quantity);
            }
        }
        if limited < 2 {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    let matching = requests
        .iter()
        .all(|(name, request)| limits.get(name) == Some(request));
    if guaranteed && matching && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}
