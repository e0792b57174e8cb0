//! Unit tests of the store: resourceVersions, events, history replay, snapshots, compaction.

use serde_json::{Value, json};

use super::*;

fn res() -> ResKey {
    ResKey {
        group: String::new(),
        plural: "configmaps".to_string(),
    }
}

fn cm(name: &str, data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
           "data": {"k": data}})
}

fn key(name: &str) -> ObjKey {
    ("ns".to_string(), name.to_string())
}

#[test]
fn writes_bump_one_global_resource_version() {
    let store = Store::new(100);
    let mut txn = store.lock();
    let a = txn.insert(&res(), key("a"), cm("a", "1"));
    assert_eq!(a["metadata"]["resourceVersion"], "1");
    let a2 = txn.replace(&res(), key("a"), cm("a", "2"));
    assert_eq!(a2["metadata"]["resourceVersion"], "2");
    let gone = txn.remove(&res(), &key("a")).expect("removed");
    assert_eq!(gone["metadata"]["resourceVersion"], "3");
    assert_eq!(txn.rv(), 3);
    drop(txn);
    assert_eq!(store.current_rv(), 3);
}

#[test]
fn subscriptions_replay_history_after_a_version() {
    let store = Store::new(100);
    let mut txn = store.lock();
    txn.insert(&res(), key("a"), cm("a", "1"));
    txn.insert(&res(), key("b"), cm("b", "1"));
    txn.replace(&res(), key("a"), cm("a", "2"));
    let sub = txn
        .subscribe(&res(), WatchStart::After(1), None)
        .expect("in history");
    let kinds: Vec<_> = sub.initial.iter().map(|e| (e.kind, e.rv)).collect();
    assert_eq!(kinds, [(EventType::Added, 2), (EventType::Modified, 3)]);
    let now = txn.subscribe(&res(), WatchStart::Now, None).expect("now");
    assert_eq!(now.initial.len(), 2);
    assert!(now.initial.iter().all(|e| e.kind == EventType::Added));
}

#[test]
fn bounded_history_and_compaction_expire_old_versions() {
    let store = Store::new(2);
    let mut txn = store.lock();
    for i in 0..5 {
        txn.insert(&res(), key(&format!("o{i}")), cm(&format!("o{i}"), "x"));
    }
    assert!(txn.subscribe(&res(), WatchStart::After(1), None).is_err());
    assert!(txn.subscribe(&res(), WatchStart::After(3), None).is_ok());
    txn.compact();
    assert!(txn.subscribe(&res(), WatchStart::After(4), None).is_err());
    assert!(txn.subscribe(&res(), WatchStart::After(5), None).is_ok());
}

#[test]
fn snapshots_undo_later_changes() {
    let store = Store::new(100);
    let mut txn = store.lock();
    txn.insert(&res(), key("a"), cm("a", "1"));
    txn.insert(&res(), key("b"), cm("b", "1"));
    txn.replace(&res(), key("a"), cm("a", "2"));
    txn.remove(&res(), &key("b"));
    txn.insert(&res(), key("c"), cm("c", "1"));
    let at2 = txn.list_at(&res(), Some("ns"), 2).expect("kept");
    let data: Vec<_> = at2
        .iter()
        .map(|o| o.decode())
        .map(|o| (o["metadata"]["name"].clone(), o["data"]["k"].clone()))
        .collect();
    assert_eq!(data, [(json!("a"), json!("1")), (json!("b"), json!("1"))]);
    assert_eq!(txn.list_at(&res(), None, 5).expect("now").len(), 2);
}

#[test]
fn owner_index_tracks_dependents() {
    let store = Store::new(100);
    let mut txn = store.lock();
    let mut child = cm("child", "1");
    child["metadata"]["ownerReferences"] =
        json!([{"uid": "uid-parent", "name": "parent", "kind": "ConfigMap", "apiVersion": "v1"}]);
    txn.insert(&res(), key("parent"), cm("parent", "1"));
    txn.insert(&res(), key("child"), child);
    assert_eq!(txn.dependents_of("uid-parent"), [(res(), key("child"))]);
    assert_eq!(txn.locate("uid-child"), Some((res(), key("child"))));
    txn.remove(&res(), &key("child"));
    assert!(txn.dependents_of("uid-parent").is_empty());
    assert!(txn.locate("uid-child").is_none());
}

#[tokio::test(start_paused = true)]
async fn a_wait_for_a_future_version_ends_when_a_write_gets_there() {
    let store = Arc::new(Store::new(100));
    store.lock().insert(&res(), key("a"), cm("a", "1"));
    assert!(
        store.wait_for_rv(1, Duration::ZERO).await,
        "reached already"
    );
    let waiter = {
        let store = store.clone();
        tokio::spawn(async move { store.wait_for_rv(3, Duration::from_secs(3)).await })
    };
    while store.rv_waiters() == 0 {
        tokio::task::yield_now().await;
    }
    store.lock().insert(&res(), key("b"), cm("b", "1"));
    assert_eq!(store.rv_waiters(), 1, "one write short: still waiting");
    store.lock().insert(&res(), key("c"), cm("c", "1"));
    assert!(waiter.await.expect("joins"));
    assert_eq!(store.rv_waiters(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_wait_for_a_version_never_reached_gives_up_after_its_limit() {
    let store = Store::new(100);
    let start = tokio::time::Instant::now();
    assert!(!store.wait_for_rv(5, Duration::from_secs(3)).await);
    assert_eq!(start.elapsed(), Duration::from_secs(3));
    assert_eq!(store.rv_waiters(), 0);
}

#[test]
fn store_history_and_watchers_share_one_copy_of_each_object() {
    let store = Store::new(100);
    let mut txn = store.lock();
    let mut early = txn
        .subscribe(&res(), WatchStart::Now, None)
        .expect("subscribed");
    let (decoded, stored) = txn.insert_stored(&res(), key("a"), cm("a", "1"));
    let in_store = txn.get_stored(&res(), &key("a")).expect("stored");
    assert!(Arc::ptr_eq(&stored, &in_store));
    // The history's event, a live watcher's event, a replayed event and a list all hold the
    // store's allocation, bytes included: no copy per holder.
    let sent = early.rx.try_recv().expect("event sent");
    assert!(Arc::ptr_eq(&sent.object, &in_store));
    let replayed = txn
        .subscribe(&res(), WatchStart::After(0), None)
        .expect("in history");
    assert!(Arc::ptr_eq(&replayed.initial[0].object, &in_store));
    let listed = txn.list_stored(&res(), None);
    assert!(Arc::ptr_eq(&listed[0], &in_store));
    assert_eq!(in_store.json().as_ptr(), sent.object.json().as_ptr());
    // The bytes are the object as served, resourceVersion included.
    assert_eq!(*in_store.json(), crate::canonical::to_vec(&decoded));
    let mut canonical = (*decoded).clone();
    crate::canonical::normalize(&mut canonical);
    assert_eq!(in_store.decode(), canonical);

    // An update's event holds the new version (the store's) and the old one (the history's).
    let (_, updated) = txn.replace_stored(&res(), key("a"), cm("a", "2"));
    let event = early.rx.try_recv().expect("update sent");
    assert!(Arc::ptr_eq(&event.object, &updated));
    assert!(Arc::ptr_eq(event.old.as_ref().expect("old"), &in_store));
}

#[test]
fn summaries_keep_what_selectors_and_indexes_read() {
    let pods = ResKey {
        group: String::new(),
        plural: "pods".to_string(),
    };
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"app": "web"},
                     "annotations": {"big": "x"},
                     "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}],
                     "ownerReferences": [{"uid": "owner", "name": "rs", "kind": "ReplicaSet"}]},
        "spec": {"nodeName": "n1", "restartPolicy": "Always", "containers": [{"name": "c"}]},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}
    });
    let store = Store::new(10);
    let mut txn = store.lock();
    let (_, stored) = txn.insert_stored(&pods, ("ns".into(), "p".into()), pod);
    let summary = stored.summary();
    assert_eq!(stored.api_version(), "v1");
    assert_eq!(stored.key_ref(), ("ns", "p"));
    assert_eq!(summary.uid(), Some("u1"));
    assert_eq!(summary.owner_uids().collect::<Vec<_>>(), ["owner"]);
    assert_eq!(summary.label("app"), Some("web"));
    assert_eq!(summary.label("tier"), None);
    // Only what field selectors on Pods read: no containers, no annotations, no
    // managedFields.
    assert_eq!(
        summary.selectable(),
        json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"nodeName": "n1", "restartPolicy": "Always"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}
        })
    );
    assert_eq!(stored.key(), ("ns".to_string(), "p".to_string()));
    assert_eq!(txn.dependents_of("owner").len(), 1);
    assert!(txn.locate("u1").is_some());
}
