//! The garbage collector: owner-reference collection (background, foreground, orphan) and
//! namespace termination. Writes only queue work ([`GcWork`]); a collector task on the
//! server's runtime runs it a step at a time, each step in its own store transaction, so —
//! as with kube-controller-manager — a client sees an owner gone before its dependents go.

use serde_json::{Value, json};

use super::delete::{DeleteOpts, FOREGROUND, ORPHAN, delete_object, finish_removal};
use super::meta::{self, meta_str};
use crate::resources::{Catalogue, ResKey};
use crate::store::{GcWork, Txn, owner_uids, uid_of};

/// Runs the oldest queued piece of work; false when there was none.
pub(crate) fn step(txn: &mut Txn<'_>, catalogue: &Catalogue) -> bool {
    let Some(work) = txn.next_gc() else {
        return false;
    };
    match work {
        GcWork::Dependents(uid) => collect_dependents(txn, catalogue, &uid),
        GcWork::Foreground(uid) => foreground_step(txn, catalogue, &uid),
        GcWork::Orphan(uid) => orphan_step(txn, catalogue, &uid),
        GcWork::Namespace(namespace) => namespace_step(txn, catalogue, &namespace),
        GcWork::CrdCleanup(name) => super::crd::cleanup_step(txn, catalogue, &name),
    }
    true
}

/// Queues what the removal of `removed` makes necessary: collecting its dependents, the
/// next step of owners waiting for it in foreground deletion, and of its namespace.
pub(crate) fn after_removal(txn: &mut Txn<'_>, removed: &Value) {
    if let Some(uid) = uid_of(removed)
        && !txn.dependents_of(uid).is_empty()
    {
        txn.enqueue_gc(GcWork::Dependents(uid.to_string()));
    }
    after_dependent_change(txn, removed);
    if let Some(namespace) = meta_str(removed, "namespace")
        && !namespace.is_empty()
    {
        let ns_key = (String::new(), namespace.to_string());
        if txn
            .get(&namespaces(), &ns_key)
            .is_some_and(|ns| meta::is_deleting(&ns))
        {
            txn.enqueue_gc(GcWork::Namespace(namespace.to_string()));
        }
    }
}

/// Queues a foreground step for each owner of `dependent` (as it was before a change) that
/// waits for its dependents: the change may have unblocked it.
pub(crate) fn after_dependent_change(txn: &mut Txn<'_>, dependent: &Value) {
    for owner in owner_uids(dependent) {
        let waiting = txn
            .locate(owner)
            .and_then(|(res, key)| txn.get(&res, &key))
            .is_some_and(|o| meta::is_deleting(&o) && has_finalizer(&o, FOREGROUND));
        if waiting {
            txn.enqueue_gc(GcWork::Foreground(owner.to_string()));
        }
    }
}

/// The owner with `uid` is gone: dependents with another live owner lose the dangling
/// reference, the rest are deleted (in the background).
fn collect_dependents(txn: &mut Txn<'_>, catalogue: &Catalogue, uid: &str) {
    if txn.locate(uid).is_some() {
        return;
    }
    for (res, key) in txn.dependents_of(uid) {
        let Some(def) = catalogue.get(&res) else {
            continue;
        };
        let Some(dependent) = txn.get(&res, &key) else {
            continue;
        };
        let live_owner = owner_uids(&dependent)
            .into_iter()
            .any(|o| o != uid && txn.locate(o).is_some());
        if live_owner {
            let mut pruned = (*dependent).clone();
            drop_owner_ref(&mut pruned, uid);
            txn.replace(&res, key, pruned);
        } else if !meta::is_deleting(&dependent) {
            let _ = delete_object(txn, catalogue, &def, &key, &DeleteOpts::default());
        }
    }
}

/// Advances the foreground deletion of the owner with `uid`: deletes its dependents (in the
/// foreground too), and once no dependent with `blockOwnerDeletion` remains removes its
/// `foregroundDeletion` finalizer.
fn foreground_step(txn: &mut Txn<'_>, catalogue: &Catalogue, uid: &str) {
    let Some((res, key)) = txn.locate(uid) else {
        return;
    };
    let Some(owner) = txn.get(&res, &key) else {
        return;
    };
    if !meta::is_deleting(&owner) || !has_finalizer(&owner, FOREGROUND) {
        return;
    }
    for (dep_res, dep_key) in txn.dependents_of(uid) {
        let Some(def) = catalogue.get(&dep_res) else {
            continue;
        };
        if txn
            .get(&dep_res, &dep_key)
            .is_some_and(|d| !meta::is_deleting(&d))
        {
            let opts = DeleteOpts {
                propagation: Some(super::Propagation::Foreground),
                ..DeleteOpts::default()
            };
            let _ = delete_object(txn, catalogue, &def, &dep_key, &opts);
        }
    }
    let blocked = txn
        .dependents_of(uid)
        .into_iter()
        .any(|(dep_res, dep_key)| {
            txn.get(&dep_res, &dep_key)
                .is_some_and(|d| blocks_owner(&d, uid))
        });
    if !blocked {
        release(txn, catalogue, &res, &key, FOREGROUND);
    }
}

/// The owner with `uid` is being deleted with the `orphan` finalizer: its dependents lose
/// their reference to it, then the finalizer goes.
fn orphan_step(txn: &mut Txn<'_>, catalogue: &Catalogue, uid: &str) {
    let Some((res, key)) = txn.locate(uid) else {
        return;
    };
    let Some(owner) = txn.get(&res, &key) else {
        return;
    };
    if !meta::is_deleting(&owner) || !has_finalizer(&owner, ORPHAN) {
        return;
    }
    for (dep_res, dep_key) in txn.dependents_of(uid) {
        if let Some(dependent) = txn.get(&dep_res, &dep_key) {
            let mut pruned = (*dependent).clone();
            drop_owner_ref(&mut pruned, uid);
            txn.replace(&dep_res, dep_key, pruned);
        }
    }
    release(txn, catalogue, &res, &key, ORPHAN);
}

/// Removes `finalizer` from the object at `key`, and the object itself if none remain.
fn release(
    txn: &mut Txn<'_>,
    catalogue: &Catalogue,
    res: &ResKey,
    key: &(String, String),
    finalizer: &str,
) {
    let Some(obj) = txn.get(res, key) else {
        return;
    };
    let rest: Vec<String> = meta::finalizers(&obj)
        .into_iter()
        .filter(|f| f != finalizer)
        .collect();
    let mut released = (*obj).clone();
    meta::set_finalizers(&mut released, &rest);
    txn.replace(res, key.clone(), released);
    if rest.is_empty()
        && let Some(def) = catalogue.get(res)
    {
        finish_removal(txn, catalogue, &def, key);
    }
}

/// Advances the termination of `namespace` if it is being deleted: deletes everything in it,
/// and once it is empty removes the namespace.
fn namespace_step(txn: &mut Txn<'_>, catalogue: &Catalogue, namespace: &str) {
    let ns_res = namespaces();
    let ns_key = (String::new(), namespace.to_string());
    let Some(ns) = txn.get(&ns_res, &ns_key) else {
        return;
    };
    if !meta::is_deleting(&ns) {
        return;
    }
    for def in catalogue
        .all()
        .into_iter()
        .filter(|d| d.namespaced && !d.is_view())
    {
        for obj in txn.list(&def.key(), Some(namespace)) {
            if meta::is_deleting(&obj) {
                continue;
            }
            let key = (
                namespace.to_string(),
                meta_str(&obj, "name").unwrap_or_default().to_string(),
            );
            let _ = delete_object(txn, catalogue, &def, &key, &DeleteOpts::default());
        }
    }
    if !txn.namespace_is_empty(namespace) {
        return;
    }
    let Some(ns) = txn.get(&ns_res, &ns_key) else {
        return;
    };
    // The namespace controller removes its own `kubernetes` finalizer; others (added through
    // `namespaces/finalize`) hold the namespace until their owners remove them.
    let spec_finalizers: Vec<Value> = ns
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let rest: Vec<Value> = spec_finalizers
        .iter()
        .filter(|f| f.as_str() != Some("kubernetes"))
        .cloned()
        .collect();
    if rest.len() != spec_finalizers.len() {
        let mut finalized = (*ns).clone();
        finalized["spec"]["finalizers"] = json!(rest);
        txn.replace(&ns_res, ns_key.clone(), finalized);
    }
    let Some(ns) = txn.get(&ns_res, &ns_key) else {
        return;
    };
    if rest.is_empty()
        && meta::finalizers(&ns).is_empty()
        && let Some(def) = catalogue.get(&ns_res)
    {
        finish_removal(txn, catalogue, &def, &ns_key);
    }
}

fn namespaces() -> ResKey {
    ResKey {
        group: String::new(),
        plural: "namespaces".to_string(),
    }
}

fn has_finalizer(obj: &Value, finalizer: &str) -> bool {
    meta::finalizers(obj).iter().any(|f| f == finalizer)
}

/// Whether `dependent`'s reference to `owner_uid` has `blockOwnerDeletion: true`.
fn blocks_owner(dependent: &Value, owner_uid: &str) -> bool {
    dependent
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter().any(|r| {
                r.get("uid").and_then(Value::as_str) == Some(owner_uid)
                    && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
            })
        })
}

fn drop_owner_ref(obj: &mut Value, uid: &str) {
    if let Some(Value::Array(refs)) = obj.pointer_mut("/metadata/ownerReferences") {
        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
        if refs.is_empty()
            && let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("ownerReferences");
        }
    }
}
