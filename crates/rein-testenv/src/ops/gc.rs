//! Garbage collection by owner references (background, foreground, orphan) and namespace
//! termination, run synchronously inside the transaction that removed an owner.

use serde_json::{Value, json};

use super::delete::{DeleteOpts, FOREGROUND, delete_object, finish_removal};
use super::meta::{self, meta_str};
use crate::resources::{Catalogue, ResKey};
use crate::store::{Txn, owner_uids, uid_of};

/// After an object is gone: delete dependents left without owners, and let owners in
/// foreground deletion that waited for it proceed.
pub(crate) fn after_removal(txn: &mut Txn<'_>, catalogue: &Catalogue, removed: &Value) {
    if let Some(uid) = uid_of(removed) {
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
    for owner in owner_uids(removed) {
        foreground_step(txn, catalogue, owner);
    }
}

/// Advances the foreground deletion of the owner with `uid`: deletes its dependents, and
/// once none remain removes its `foregroundDeletion` finalizer.
pub(crate) fn foreground_step(txn: &mut Txn<'_>, catalogue: &Catalogue, uid: &str) {
    let Some((res, key)) = txn.locate(uid) else {
        return;
    };
    let Some(owner) = txn.get(&res, &key) else {
        return;
    };
    if !meta::is_deleting(&owner) || !meta::finalizers(&owner).iter().any(|f| f == FOREGROUND) {
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
    if !txn.dependents_of(uid).is_empty() {
        return;
    }
    let Some(owner) = txn.get(&res, &key) else {
        return;
    };
    let mut released = (*owner).clone();
    let rest: Vec<String> = meta::finalizers(&owner)
        .into_iter()
        .filter(|f| f != FOREGROUND)
        .collect();
    meta::set_finalizers(&mut released, &rest);
    txn.replace(&res, key.clone(), released);
    if rest.is_empty()
        && let Some(def) = catalogue.get(&res)
    {
        finish_removal(txn, catalogue, &def, &key);
    }
}

/// Removes the reference to the owner with `uid` from each of its dependents.
pub(crate) fn orphan_dependents(txn: &mut Txn<'_>, _catalogue: &Catalogue, uid: &str) {
    for (res, key) in txn.dependents_of(uid) {
        if let Some(dependent) = txn.get(&res, &key) {
            let mut pruned = (*dependent).clone();
            drop_owner_ref(&mut pruned, uid);
            txn.replace(&res, key, pruned);
        }
    }
}

/// Advances the termination of `namespace` if it is being deleted: deletes everything in it,
/// and once it is empty removes the namespace.
pub(crate) fn namespace_step(txn: &mut Txn<'_>, catalogue: &Catalogue, namespace: &str) {
    let ns_res = ResKey {
        group: String::new(),
        plural: "namespaces".to_string(),
    };
    let ns_key = (String::new(), namespace.to_string());
    let Some(ns) = txn.get(&ns_res, &ns_key) else {
        return;
    };
    if !meta::is_deleting(&ns) {
        return;
    }
    for def in catalogue.all().into_iter().filter(|d| d.namespaced) {
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
    if ns
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
    {
        let mut finalized = (*ns).clone();
        finalized["spec"]["finalizers"] = json!([]);
        txn.replace(&ns_res, ns_key.clone(), finalized);
    }
    let Some(ns) = txn.get(&ns_res, &ns_key) else {
        return;
    };
    if meta::finalizers(&ns).is_empty()
        && let Some(def) = catalogue.get(&ns_res)
    {
        finish_removal(txn, catalogue, &def, &ns_key);
    }
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
