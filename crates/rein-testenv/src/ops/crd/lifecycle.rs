//! Deleting a CRD as kube-apiserver does: `DELETE` only marks it (deletionTimestamp, the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer, `Terminating` True
//! `InstanceDeletionPending`); the CRD finalizer (here a garbage-collector step) then sets
//! `InstanceDeletionInProgress`, deletes every instance, and once none is left removes the
//! finalizer, and with it the CRD. While a CRD terminates its resource refuses creates.

use std::sync::Arc;

use serde_json::{Value, json};

use super::super::delete::{DeleteOpts, delete_object, finish_removal};
use super::super::meta::{self, meta_mut, meta_str};
use super::names::{condition_true, set_condition};
use super::{CLEANUP_FINALIZER, crds};
use crate::resources::{Catalogue, ResourceDef};
use crate::status::ApiError;
use crate::store::{GcWork, ObjKey, Txn};

/// Marks the CRD `current` (stored at `key`) for deletion and queues its clean-up; answers
/// the marked object (not stored on a dry run).
pub(crate) fn begin_delete(
    txn: &mut Txn<'_>,
    key: &ObjKey,
    current: &Value,
    dry_run: bool,
) -> Arc<Value> {
    let mut marked = current.clone();
    let meta = meta_mut(&mut marked);
    if meta.get("deletionTimestamp").is_none_or(Value::is_null) {
        meta.insert("deletionTimestamp".into(), json!(meta::now()));
        meta.insert("deletionGracePeriodSeconds".into(), json!(0));
    }
    let mut finalizers = meta::finalizers(&marked);
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        finalizers.push(CLEANUP_FINALIZER.to_string());
    }
    meta::set_finalizers(&mut marked, &finalizers);
    set_condition(
        &mut marked,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    );
    if dry_run {
        return Arc::new(marked);
    }
    let stored = txn.replace(&crds(), key.clone(), marked);
    txn.enqueue_gc(GcWork::CrdCleanup(key.1.clone()));
    stored
}

/// One run of the CRD finalizer for the CRD `name`: deletes its instances and, once none
/// is left (instances with finalizers of their own may take a while), removes the CRD.
pub(crate) fn cleanup_step(txn: &mut Txn<'_>, catalogue: &Catalogue, name: &str) {
    let key = (String::new(), name.to_string());
    let Some(crd) = txn.get(&crds(), &key) else {
        return;
    };
    if !meta::is_deleting(&crd)
        || !meta::finalizers(&crd)
            .iter()
            .any(|f| f == CLEANUP_FINALIZER)
    {
        return;
    }
    let mut progress = (*crd).clone();
    set_condition(
        &mut progress,
        "Terminating",
        "True",
        "InstanceDeletionInProgress",
        "CustomResource deletion is in progress",
    );
    let crd = if progress == *crd {
        crd
    } else {
        txn.replace(&crds(), key.clone(), progress)
    };
    let served = served_def(catalogue, &crd);
    if condition_true(&crd, "Established")
        && let Some(def) = &served
    {
        for obj in txn.list(&def.key(), None) {
            if meta::is_deleting(&obj) {
                continue;
            }
            let obj_key = crate::store::object_key(&obj);
            let _ = delete_object(txn, catalogue, def, &obj_key, &DeleteOpts::default());
        }
        if !txn.list(&def.key(), None).is_empty() {
            // The rest wait for their finalizers; each removal queues another step.
            return;
        }
    }
    // The real finalizer writes `Terminating` False (InstanceDeletionCompleted or
    // NeverEstablished) together with the finalizer's removal; that write empties the
    // finalizers, so the store deletes the object instead of writing it, and watchers
    // see the CRD as it was last stored.
    let rest: Vec<String> = meta::finalizers(&crd)
        .into_iter()
        .filter(|f| f != CLEANUP_FINALIZER)
        .collect();
    if rest.is_empty() {
        if let Some(def) = catalogue.get(&crds()) {
            finish_removal(txn, catalogue, &def, &key);
        }
        return;
    }
    let mut released = (*crd).clone();
    meta::set_finalizers(&mut released, &rest);
    let (reason, message) = if served.is_some() {
        ("InstanceDeletionCompleted", "removed all instances")
    } else {
        ("NeverEstablished", "resource was never established")
    };
    set_condition(&mut released, "Terminating", "False", reason, message);
    txn.replace(&crds(), key, released);
}

/// After an instance of a custom resource went away: if its CRD is terminating, the CRD
/// finalizer has another look.
pub(crate) fn after_instance_removal(txn: &mut Txn<'_>, def: &ResourceDef) {
    if !def.custom {
        return;
    }
    let name = format!("{}.{}", def.plural, def.group);
    let key = (String::new(), name.clone());
    if txn
        .get(&crds(), &key)
        .is_some_and(|crd| meta::is_deleting(&crd))
    {
        txn.enqueue_gc(GcWork::CrdCleanup(name));
    }
}

/// 403 when the CRD serving `def` is terminating: creates are refused as the real server's
/// `forbidCreateAdmission` refuses them.
pub(crate) fn check_create_allowed(
    txn: &Txn<'_>,
    def: &ResourceDef,
    name: &str,
) -> Result<(), ApiError> {
    if !def.custom {
        return Ok(());
    }
    let key = (String::new(), format!("{}.{}", def.plural, def.group));
    let Some(crd) = txn.get(&crds(), &key) else {
        return Ok(());
    };
    if !meta::is_deleting(&crd) && !condition_true(&crd, "Terminating") {
        return Ok(());
    }
    let resource = format!("{}.{}", def.plural, def.group);
    let why = "create not allowed while custom resource definition is terminating";
    let message = if name.is_empty() {
        format!("{resource} is forbidden: {why}")
    } else {
        format!("{resource} \"{name}\" is forbidden: {why}")
    };
    Err(ApiError::forbidden(message)
        .with_details(json!({"name": name, "group": def.group, "kind": def.plural})))
}

/// The resource the catalogue serves for `crd`, if this CRD is the one serving it.
pub(super) fn served_def(catalogue: &Catalogue, crd: &Value) -> Option<Arc<ResourceDef>> {
    let group = crd.pointer("/spec/group").and_then(Value::as_str)?;
    let plural = crd
        .pointer("/status/acceptedNames/plural")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())?;
    let name = meta_str(crd, "name")?;
    if name != format!("{plural}.{group}") {
        return None;
    }
    let key = crate::resources::ResKey {
        group: group.to_string(),
        plural: plural.to_string(),
    };
    catalogue.get(&key).filter(|d| d.custom)
}
