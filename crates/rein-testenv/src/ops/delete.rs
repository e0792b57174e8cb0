//! Delete: preconditions, finalizers and `deletionTimestamp`, propagation policies, and the
//! final removal that triggers garbage collection and namespace finalisation.

use std::sync::Arc;

use serde_json::{Value, json};

use super::graceful::{self, Grace};
use super::meta::{self, meta_mut, meta_str};
use super::{Target, crd, gc, is_crd, is_namespace};
use crate::resources::{Catalogue, ResourceDef};
use crate::status::ApiError;
use crate::store::{GcWork, ObjKey, Txn};

/// The finalizer foreground deletion holds an owner with.
pub(crate) const FOREGROUND: &str = "foregroundDeletion";

/// The finalizer orphan deletion holds an owner with until its dependents let go of it.
pub(crate) const ORPHAN: &str = "orphan";

/// How dependents are treated when their owner is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Propagation {
    /// Delete the owner now, its dependents afterwards.
    #[default]
    Background,
    /// Delete the dependents first; the owner waits with the `foregroundDeletion` finalizer.
    Foreground,
    /// Leave the dependents, dropping their reference to the owner.
    Orphan,
}

/// `DeleteOptions`.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeleteOpts {
    /// `propagationPolicy` (or the legacy `orphanDependents`).
    pub(crate) propagation: Option<Propagation>,
    /// `gracePeriodSeconds`.
    pub(crate) grace_period: Option<i64>,
    /// `preconditions.uid`.
    pub(crate) precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub(crate) precondition_rv: Option<String>,
    /// `dryRun=All`.
    pub(crate) dry_run: bool,
    /// `orphanDependents` as the client sent it: an explicit `false` makes a delete that
    /// leaves the object waiting answer 202 Accepted instead of 200.
    pub(crate) orphan_dependents: Option<bool>,
}

/// What a delete did.
#[derive(Debug)]
pub(crate) enum DeleteOutcome {
    /// The object is gone; its last state.
    Gone(Arc<Value>),
    /// The object waits for finalizers; its current state.
    Pending(Arc<Value>),
}

/// Deletes the object at `key`.
pub(crate) fn delete(
    txn: &mut Txn<'_>,
    target: Target<'_>,
    key: &ObjKey,
    opts: &DeleteOpts,
) -> Result<DeleteOutcome, ApiError> {
    // NamespaceLifecycle keeps the namespaces every cluster relies on.
    if is_namespace(target.def) && IMMORTAL_NAMESPACES.contains(&key.1.as_str()) {
        return Err(ApiError::forbidden_object(
            target.def,
            &key.1,
            "this namespace may not be deleted",
        ));
    }
    delete_object(txn, target.catalogue, target.def, key, opts)
}

/// The namespaces NamespaceLifecycle refuses to delete.
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// [`delete`] without a requested version, as garbage collection calls it.
pub(crate) fn delete_object(
    txn: &mut Txn<'_>,
    catalogue: &Catalogue,
    def: &ResourceDef,
    key: &ObjKey,
    opts: &DeleteOpts,
) -> Result<DeleteOutcome, ApiError> {
    let name = key.1.as_str();
    let Some(current) = txn.get(&def.key(), key) else {
        return Err(ApiError::not_found(def, name));
    };
    // The CRD registry checks the preconditions itself, and words them in lower case.
    let precondition = if is_crd(def) {
        "precondition"
    } else {
        "Precondition"
    };
    if let Some(uid) = &opts.precondition_uid
        && Some(uid.as_str()) != meta_str(&current, "uid")
    {
        return Err(ApiError::conflict(
            def,
            name,
            &format!(
                "{precondition} failed: UID in precondition: {uid}, UID in object meta: {}",
                meta_str(&current, "uid").unwrap_or_default()
            ),
        ));
    }
    if let Some(rv) = &opts.precondition_rv
        && Some(rv.as_str()) != meta_str(&current, "resourceVersion")
    {
        return Err(ApiError::conflict(
            def,
            name,
            &format!(
                "{precondition} failed: ResourceVersion in precondition: {rv}, ResourceVersion \
                 in object meta: {}",
                meta_str(&current, "resourceVersion").unwrap_or_default()
            ),
        ));
    }
    if graceful::is_pod(def) {
        return delete_pod(txn, catalogue, def, key, current, opts);
    }
    if is_crd(def) && !meta::is_deleting(&current) {
        // The CRD registry's own Delete: mark it, and let the finalizer remove it.
        return Ok(DeleteOutcome::Pending(crd::begin_delete(
            txn,
            key,
            &current,
            opts.dry_run,
        )));
    }
    if opts.dry_run {
        return Ok(DeleteOutcome::Gone(current));
    }
    if meta::is_deleting(&current) {
        return Ok(DeleteOutcome::Pending(current));
    }
    let propagation = opts.propagation.unwrap_or_default();
    let mut finalizers = meta::finalizers(&current);
    let policy_finalizer = match propagation {
        Propagation::Foreground => Some(FOREGROUND),
        Propagation::Orphan => Some(ORPHAN),
        Propagation::Background => None,
    };
    if let Some(f) = policy_finalizer
        && !finalizers.iter().any(|have| have == f)
    {
        finalizers.push(f.to_string());
    }
    let namespace_pending = is_namespace(def);
    if finalizers.is_empty() && !namespace_pending {
        return Ok(match finish_removal(txn, catalogue, def, key) {
            Some(last) => DeleteOutcome::Gone(last),
            None => DeleteOutcome::Gone(current),
        });
    }
    let mut marked = (*current).clone();
    meta::set_finalizers(&mut marked, &finalizers);
    let meta = meta_mut(&mut marked);
    meta.insert("deletionTimestamp".into(), json!(meta::now()));
    meta.insert(
        "deletionGracePeriodSeconds".into(),
        json!(opts.grace_period.unwrap_or(0).max(0)),
    );
    if namespace_pending {
        marked["status"]["phase"] = json!("Terminating");
    }
    let marked = txn.replace(&def.key(), key.clone(), marked);
    let uid = meta_str(&marked, "uid").unwrap_or_default().to_string();
    if namespace_pending {
        txn.enqueue_gc(GcWork::Namespace(name.to_string()));
    } else if propagation == Propagation::Foreground {
        txn.enqueue_gc(GcWork::Foreground(uid));
    } else if propagation == Propagation::Orphan {
        txn.enqueue_gc(GcWork::Orphan(uid));
    }
    Ok(match txn.get(&def.key(), key) {
        Some(now) => DeleteOutcome::Pending(now),
        None => DeleteOutcome::Gone(marked),
    })
}

/// Deletes a Pod: graceful for a Pod bound to a node (kept, marked, until a grace-0 delete),
/// at once otherwise; the propagation policy's finalizer is added as for any object.
fn delete_pod(
    txn: &mut Txn<'_>,
    catalogue: &Catalogue,
    def: &ResourceDef,
    key: &ObjKey,
    current: Arc<Value>,
    opts: &DeleteOpts,
) -> Result<DeleteOutcome, ApiError> {
    let (marked, period) = match graceful::before_delete(&current, opts.grace_period) {
        Grace::Pending => return Ok(DeleteOutcome::Pending(current)),
        Grace::Now => {
            if opts.dry_run || !meta::finalizers(&current).is_empty() {
                return Ok(DeleteOutcome::Pending(current));
            }
            return Ok(DeleteOutcome::Gone(
                finish_removal(txn, catalogue, def, key).unwrap_or(current),
            ));
        }
        Grace::Marked { obj, period } => (obj, period),
    };
    let mut marked = marked;
    let propagation = opts.propagation.unwrap_or_default();
    let mut finalizers = meta::finalizers(&marked);
    let policy_finalizer = match propagation {
        Propagation::Foreground => Some(FOREGROUND),
        Propagation::Orphan => Some(ORPHAN),
        Propagation::Background => None,
    };
    if let Some(f) = policy_finalizer
        && !finalizers.iter().any(|have| have == f)
    {
        finalizers.push(f.to_string());
        meta::set_finalizers(&mut marked, &finalizers);
    }
    let kept = period > 0 || !finalizers.is_empty();
    if opts.dry_run {
        let marked = Arc::new(marked);
        return Ok(if kept {
            DeleteOutcome::Pending(marked)
        } else {
            DeleteOutcome::Gone(marked)
        });
    }
    // Stored marked first (watchers see the deletionTimestamp), as the registry's update
    // before its delete.
    let marked = txn.replace(&def.key(), key.clone(), marked);
    if !kept {
        return Ok(DeleteOutcome::Gone(
            finish_removal(txn, catalogue, def, key).unwrap_or(marked),
        ));
    }
    let uid = meta_str(&marked, "uid").unwrap_or_default().to_string();
    match propagation {
        Propagation::Foreground => txn.enqueue_gc(GcWork::Foreground(uid)),
        Propagation::Orphan => txn.enqueue_gc(GcWork::Orphan(uid)),
        Propagation::Background => {}
    }
    Ok(match txn.get(&def.key(), key) {
        Some(now) => DeleteOutcome::Pending(now),
        None => DeleteOutcome::Gone(marked),
    })
}

/// Removes the object for good, tears a CRD's resource down, and queues what depends on the
/// removal: collection of its dependents, owners waiting in foreground deletion, namespace
/// finalisation.
pub(crate) fn finish_removal(
    txn: &mut Txn<'_>,
    catalogue: &Catalogue,
    def: &ResourceDef,
    key: &ObjKey,
) -> Option<Arc<Value>> {
    let last = txn.remove(&def.key(), key)?;
    if is_crd(def) {
        crd::on_remove(txn, catalogue, &last);
    }
    crd::after_instance_removal(txn, def);
    gc::after_removal(txn, &last);
    Some(last)
}
