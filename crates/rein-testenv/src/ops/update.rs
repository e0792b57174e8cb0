//! Update (PUT, and the write half of PATCH): optimistic concurrency, immutable metadata,
//! status/spec separation, generation, finalizers while deleting, and no-op detection.

use std::sync::Arc;

use serde_json::{Value, json};

use super::create::check_type;
use super::meta::{self, meta_mut, meta_str};
use super::{Target, WriteOpts, crd, delete, is_crd};
use crate::patch;
use crate::status::ApiError;
use crate::store::{ObjKey, Txn};

/// Which part of the object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subresource {
    /// The object itself: status changes are ignored when a status subresource exists.
    Main,
    /// `/status`: only status changes are kept.
    Status,
}

/// Replaces the object at `key` with `new`; answers the stored object.
pub(crate) fn update(
    txn: &mut Txn<'_>,
    target: Target<'_>,
    key: &ObjKey,
    mut new: Value,
    sub: Subresource,
    opts: &WriteOpts,
) -> Result<Arc<Value>, ApiError> {
    let def = target.def;
    let name = key.1.as_str();
    let Some(old) = txn.get(&def.key(), key) else {
        return Err(ApiError::not_found(def, name));
    };
    // A view of another resource's storage works on the stored object as it serves it.
    let old = match crate::resources::to_view(&def.group, &def.plural, &old) {
        Some(view) => Arc::new(view),
        None => old,
    };
    if !new.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    check_type(target, &mut new)?;
    super::custom::decode(target, &mut new);
    super::normalize(def, &mut new);
    if sub == Subresource::Main {
        super::defaults::apply(def, &mut new, Some(&old));
    }
    // As stored, but an empty `managedFields` (a request to reset them) is kept: Go decodes
    // `[]` to an empty slice, which only marshalling drops.
    let managed = new.pointer("/metadata/managedFields").cloned();
    crate::canonical::normalize(&mut new);
    if let Some(entries) = managed {
        meta_mut(&mut new).insert("managedFields".into(), entries);
    }
    if let Some(body_name) = meta_str(&new, "name")
        && !body_name.is_empty()
        && body_name != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    if let Some(rv) = meta_str(&new, "resourceVersion")
        && !rv.is_empty()
        && Some(rv) != meta_str(&old, "resourceVersion")
    {
        return Err(ApiError::conflict_modified(def, name));
    }
    if let Some(uid) = meta_str(&new, "uid")
        && !uid.is_empty()
        && Some(uid) != meta_str(&old, "uid")
    {
        return Err(ApiError::conflict(
            def,
            name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta_str(&old, "uid").unwrap_or_default()
            ),
        ));
    }
    let mut result = match sub {
        Subresource::Main => {
            let mut result = new;
            if def.status {
                match old.get("status") {
                    Some(status) => result["status"] = status.clone(),
                    None => {
                        if let Some(o) = result.as_object_mut() {
                            o.remove("status");
                        }
                    }
                }
            }
            result
        }
        Subresource::Status if def.group == "apps" && def.plural == "deployments" => {
            // The Deployment status strategy resets only the spec and the labels: other
            // metadata (the controller's revision annotation) is written with the status.
            let mut result = new;
            match old.get("spec") {
                Some(spec) => result["spec"] = spec.clone(),
                None => {
                    if let Some(o) = result.as_object_mut() {
                        o.remove("spec");
                    }
                }
            }
            match old.pointer("/metadata/labels") {
                Some(labels) => meta_mut(&mut result).insert("labels".into(), labels.clone()),
                None => meta_mut(&mut result).remove("labels"),
            };
            result
        }
        Subresource::Status => {
            let mut result = (*old).clone();
            match new.get("status") {
                Some(status) => result["status"] = status.clone(),
                None => {
                    if let Some(o) = result.as_object_mut() {
                        o.remove("status");
                    }
                }
            }
            if opts.managed_fields_done {
                // A server-side apply to `status` computed the entries: keep them.
                match new.pointer("/metadata/managedFields") {
                    Some(entries) => {
                        meta_mut(&mut result).insert("managedFields".into(), entries.clone())
                    }
                    None => meta_mut(&mut result).remove("managedFields"),
                };
            }
            result
        }
    };
    keep_system_metadata(&old, &mut result, key);
    if is_crd(def) {
        crd::prepare_update(&mut result, &old, sub == Subresource::Status)?;
    }
    if super::is_namespace(def) {
        // The namespace strategy resets this label on every update.
        let labels = meta_mut(&mut result)
            .entry("labels")
            .or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert("kubernetes.io/metadata.name".into(), json!(name));
        }
    }
    if !opts.skip_validation {
        crate::builtin::validate_update(def, &result, &old, sub == Subresource::Status)?;
    }
    if meta::is_deleting(&old) {
        let before = meta::finalizers(&old);
        if meta::finalizers(&result)
            .iter()
            .any(|f| !before.contains(f))
        {
            return Err(ApiError::invalid(
                def,
                name,
                "metadata.finalizers",
                "Forbidden: no new finalizers can be added if the object is being deleted",
            ));
        }
    }
    // Requests cannot set the generation; strategies that track it bump it on spec changes.
    let stored = old.pointer("/metadata/generation").and_then(Value::as_i64);
    let generation = match stored {
        Some(n) if meta::tracks_generation(def) && spec_changed(&old, &result) => Some(n + 1),
        // A Deployment's annotation changes bump it too: they are copied to its ReplicaSets.
        Some(n)
            if sub == Subresource::Main
                && def.group == "apps"
                && def.plural == "deployments"
                && old.pointer("/metadata/annotations")
                    != result.pointer("/metadata/annotations") =>
        {
            Some(n + 1)
        }
        None if meta::tracks_generation(def) => Some(1),
        other => other,
    };
    match generation {
        Some(n) => meta_mut(&mut result).insert("generation".into(), json!(n)),
        None => meta_mut(&mut result).remove("generation"),
    };
    super::custom::validate(target, &result, Some(&old), name)?;
    // Also without a field manager: the stored entries are kept (and lose the fields this
    // write changed) when the request sends no managedFields, as kube-apiserver keeps them.
    if !opts.managed_fields_done {
        // Writes through `status` are recorded against it, as kube-apiserver records them.
        patch::record_update_managed_fields_at(
            Some(&old),
            &mut result,
            &opts.field_manager,
            "Update",
            &target.gvk(),
            (sub == Subresource::Status).then_some("status"),
        );
    }
    if sub == Subresource::Main {
        let op = crate::plugins::Op::Update;
        crate::plugins::validate(txn, opts.admission, def, op, &result, Some(&old))?;
    }
    super::custom::to_storage_version(def, &mut result);
    if same_ignoring_time(&old, &result) {
        return Ok(old);
    }
    if opts.dry_run {
        return Ok(Arc::new(result));
    }
    let mut result = crate::resources::to_storage(&def.group, &def.plural, result);
    super::check_stored_size(&mut result)?;
    if meta::is_deleting(&result)
        && meta::finalizers(&result).is_empty()
        && super::graceful::grace_is_over(&result)
    {
        txn.replace(&def.key(), key.clone(), result);
        return Ok(delete::finish_removal(txn, target.catalogue, def, key).unwrap_or(old));
    }
    let stored = txn.replace(&def.key(), key.clone(), result);
    super::gc::after_dependent_change(txn, &old);
    if is_crd(def) {
        return Ok(crd::on_write(txn, target.catalogue, &stored).unwrap_or(stored));
    }
    Ok(stored)
}

/// Fields clients cannot change: identity, timestamps, deletion state.
fn keep_system_metadata(old: &Value, result: &mut Value, key: &ObjKey) {
    let old_meta = old
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let meta = meta_mut(result);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "resourceVersion",
        "generateName",
    ] {
        match old_meta.get(field) {
            Some(v) => {
                meta.insert(field.into(), v.clone());
            }
            None => {
                meta.remove(field);
            }
        }
    }
    meta.insert("name".into(), json!(key.1));
    if key.0.is_empty() {
        meta.remove("namespace");
    } else {
        meta.insert("namespace".into(), json!(key.0));
    }
}

/// Whether anything outside `metadata` and `status` differs.
fn spec_changed(old: &Value, new: &Value) -> bool {
    let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else {
        return true;
    };
    let skip = |k: &String| !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind");
    let old_keys = old.iter().filter(|(k, _)| skip(k));
    let new_count = new.keys().filter(|k| skip(k)).count();
    let mut old_count = 0;
    for (k, v) in old_keys {
        old_count += 1;
        if new.get(k) != Some(v) {
            return true;
        }
    }
    old_count != new_count
}

/// Whether the write changes nothing (managedFields timestamps aside): a no-op keeps the
/// resourceVersion and sends no event, as kube-apiserver does.
fn same_ignoring_time(old: &Value, new: &Value) -> bool {
    if old.get("apiVersion") != new.get("apiVersion") && old.get("kind") == new.get("kind") {
        let mut new = new.clone();
        new["apiVersion"] = old.get("apiVersion").cloned().unwrap_or(Value::Null);
        return same_ignoring_time(old, &new);
    }
    if old == new {
        return true;
    }
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(Value::Array(entries)) = v.pointer_mut("/metadata/managedFields") {
            for e in entries {
                if let Some(o) = e.as_object_mut() {
                    o.remove("time");
                }
            }
        }
        v
    };
    strip(old) == strip(new)
}
