//! Unit tests for the store and indexer (behaviours of client-go's store, index and thread-safe store tests).

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::testutil::{cm, cm_labels};

fn by_label(label: &'static str) -> IndexFunc<ConfigMap> {
    Arc::new(move |o: &ConfigMap| {
        o.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(label))
            .map(|v| v.split(',').map(str::to_string).collect())
            .unwrap_or_default()
    })
}

fn names(objs: &[Arc<ConfigMap>]) -> Vec<String> {
    let mut v: Vec<String> = objs
        .iter()
        .map(|o| o.metadata.name.clone().unwrap_or_default())
        .collect();
    v.sort();
    v
}

#[test]
fn add_get_update_delete_list() {
    let s: Indexer<ConfigMap> = Indexer::new();
    s.add(cm("ns", "a", "1"));
    s.add(cm("ns", "b", "1"));
    s.update(cm("ns", "a", "2"));
    assert_eq!(s.len(), 2);
    let a = s.get_by_key("ns/a").unwrap();
    assert_eq!(a.metadata.resource_version.as_deref(), Some("2"));
    assert!(s.get(&cm("ns", "b", "9")).is_some());
    let mut keys = s.list_keys();
    keys.sort();
    assert_eq!(keys, vec!["ns/a", "ns/b"]);
    assert!(s.delete(&cm("ns", "a", "3")).is_some());
    assert!(
        s.delete_by_key("ns/a").is_none(),
        "deleting twice is not an error"
    );
    assert_eq!(names(&s.list()), vec!["b"]);
}

#[test]
fn reads_share_the_stored_object() {
    let s: Indexer<ConfigMap> = Indexer::new();
    let obj = cm("ns", "a", "1");
    s.add(obj.clone());
    assert!(Arc::ptr_eq(&s.get_by_key("ns/a").unwrap(), &obj));
    assert!(Arc::ptr_eq(&s.list()[0], &obj));
    assert!(Arc::ptr_eq(
        &s.by_index(NAMESPACE_INDEX, "ns").unwrap()[0],
        &obj
    ));
}

#[test]
fn replace_swaps_contents_and_rebuilds_indexes() {
    let s: Indexer<ConfigMap> = Indexer::new();
    s.add(cm("old", "a", "1"));
    s.add(cm("old", "b", "1"));
    s.replace(vec![cm("new", "c", "5"), cm("new", "d", "5")], "5".into());
    assert_eq!(names(&s.list()), vec!["c", "d"]);
    assert!(s.by_index(NAMESPACE_INDEX, "old").unwrap().is_empty());
    assert_eq!(s.list_index_func_values(NAMESPACE_INDEX), vec!["new"]);
    assert_eq!(s.last_store_sync_resource_version().as_deref(), Some("5"));
    s.bookmark("7".into());
    assert_eq!(s.last_store_sync_resource_version().as_deref(), Some("7"));
}

/// client-go `TestThreadSafeStoreRV`: the last synced resourceVersion follows every add,
/// update and delete that carries an object, and every replace; a delete by key alone leaves
/// it. For both backends.
#[test]
fn last_sync_resource_version_follows_every_write() {
    for s in [
        Indexer::<ConfigMap>::new(),
        Indexer::<ConfigMap>::compact(crate::CompactOptions::default()),
    ] {
        let rv = |s: &Indexer<ConfigMap>| s.last_store_sync_resource_version();
        assert_eq!(rv(&s), None, "initial state");
        s.add(cm("ns", "key1", "10"));
        assert_eq!(rv(&s).as_deref(), Some("10"));
        s.add(cm("ns", "key3", "10"));
        assert_eq!(rv(&s).as_deref(), Some("10"), "same RV");
        s.add(cm("ns", "key4", "20"));
        assert_eq!(rv(&s).as_deref(), Some("20"));
        s.delete(&cm("ns", "key4", "30"));
        assert_eq!(rv(&s).as_deref(), Some("30"), "a delete with a newer RV");
        s.add(cm("ns", "key6", "40"));
        assert_eq!(rv(&s).as_deref(), Some("40"));
        s.delete_by_key("ns/key6");
        assert_eq!(rv(&s).as_deref(), Some("40"), "a delete by key alone");
        for (name, v) in [("key9", "40"), ("key10", "30"), ("key11", "50")] {
            s.update(cm("ns", name, v));
        }
        assert_eq!(rv(&s).as_deref(), Some("50"), "the last update");
        s.replace(
            vec![cm("ns", "key3", "40"), cm("ns", "key2", "30")],
            "60".into(),
        );
        assert_eq!(rv(&s).as_deref(), Some("60"), "replace");
        s.bookmark("70".into());
        assert_eq!(rv(&s).as_deref(), Some("70"), "bookmark");
    }
}

#[test]
fn multi_value_index_lookups() {
    let mut ix: Indexers<ConfigMap> = HashMap::new();
    ix.insert("users".into(), by_label("users"));
    let s = Indexer::with_indexers(ix);
    s.add(cm_labels("ns", "one", "1", &[("users", "ernie,bert")]));
    s.add(cm_labels("ns", "two", "1", &[("users", "bert,oscar")]));
    s.add(cm_labels("ns", "tre", "1", &[("users", "ernie,elmo")]));

    assert_eq!(
        names(&s.by_index("users", "ernie").unwrap()),
        vec!["one", "tre"]
    );
    assert_eq!(
        names(&s.by_index("users", "bert").unwrap()),
        vec!["one", "two"]
    );
    assert_eq!(
        s.index_keys("users", "ernie").unwrap(),
        vec!["ns/one", "ns/tre"]
    );
    assert!(s.by_index("users", "nobody").unwrap().is_empty());
    let probe = cm_labels("x", "probe", "1", &[("users", "oscar,elmo")]);
    assert_eq!(
        names(&s.index("users", &probe).unwrap()),
        vec!["tre", "two"]
    );
    let mut values = s.list_index_func_values("users");
    values.sort();
    assert_eq!(values, vec!["bert", "elmo", "ernie", "oscar"]);

    // Moving an object between values updates both sets.
    s.update(cm_labels("ns", "one", "2", &[("users", "elmo")]));
    assert_eq!(names(&s.by_index("users", "ernie").unwrap()), vec!["tre"]);
    assert_eq!(
        names(&s.by_index("users", "elmo").unwrap()),
        vec!["one", "tre"]
    );
}

#[test]
fn unknown_index_is_an_error_but_values_are_empty() {
    let s: Indexer<ConfigMap> = Indexer::new();
    assert!(matches!(
        s.by_index("nope", "x"),
        Err(crate::Error::UnknownIndex { .. })
    ));
    assert!(s.index_keys("nope", "x").is_err());
    assert!(s.index("nope", &cm("a", "b", "1")).is_err());
    assert!(s.list_index_func_values("nope").is_empty());
}

#[test]
fn deleting_removes_empty_index_sets() {
    let mut ix: Indexers<ConfigMap> = HashMap::new();
    ix.insert("users".into(), by_label("users"));
    let s = Indexer::with_indexers(ix);
    s.add(cm_labels("ns", "one", "1", &[("users", "a,b")]));
    s.update(cm_labels("ns", "one", "2", &[("users", "c")]));
    assert_eq!(s.list_index_func_values("users"), vec!["c"]);
    s.delete_by_key("ns/one");
    assert!(s.list_index_func_values("users").is_empty());
    assert!(s.list_index_func_values(NAMESPACE_INDEX).is_empty());
}

#[test]
fn add_indexers_after_contents_indexes_them_and_rejects_conflicts() {
    let s: Indexer<ConfigMap> = Indexer::new();
    s.add(cm_labels("ns", "one", "1", &[("app", "web")]));
    s.add(cm_labels("ns", "two", "1", &[("app", "db")]));
    let mut ix: Indexers<ConfigMap> = HashMap::new();
    ix.insert("app".into(), by_label("app"));
    s.add_indexers(ix).unwrap();
    assert_eq!(names(&s.by_index("app", "web").unwrap()), vec!["one"]);
    s.add(cm_labels("ns", "three", "1", &[("app", "web")]));
    assert_eq!(
        names(&s.by_index("app", "web").unwrap()),
        vec!["one", "three"]
    );

    let mut again: Indexers<ConfigMap> = HashMap::new();
    again.insert("app".into(), by_label("app"));
    assert!(matches!(
        s.add_indexers(again),
        Err(crate::Error::IndexerConflict { .. })
    ));
    let mut ns: Indexers<ConfigMap> = HashMap::new();
    ns.insert(NAMESPACE_INDEX.into(), by_label("x"));
    assert!(s.add_indexers(ns).is_err());
}

#[test]
fn cluster_scoped_objects_have_no_namespace_value() {
    let s: Indexer<ConfigMap> = Indexer::new();
    s.add(cm("", "global", "1"));
    assert!(s.get_by_key("global").is_some());
    assert!(s.list_index_func_values(NAMESPACE_INDEX).is_empty());
}

#[test]
fn concurrent_writers_and_readers_agree() {
    let s: Indexer<ConfigMap> = Indexer::new();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let s = s.clone();
            scope.spawn(move || {
                for i in 0..500 {
                    s.add(cm(&format!("ns{t}"), &format!("o{i}"), "1"));
                    if i % 2 == 0 {
                        s.delete_by_key(&format!("ns{t}/o{i}"));
                    }
                }
            });
        }
        let r = s.clone();
        scope.spawn(move || {
            for _ in 0..200 {
                let _ = r.by_index(NAMESPACE_INDEX, "ns1").unwrap();
            }
        });
    });
    assert_eq!(s.len(), 4 * 250);
    for t in 0..4 {
        assert_eq!(
            s.by_index(NAMESPACE_INDEX, &format!("ns{t}"))
                .unwrap()
                .len(),
            250
        );
    }
}
