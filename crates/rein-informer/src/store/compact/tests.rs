//! Tests for the compact store: the typed store's behaviours through [`Indexer::compact`], what
//! is kept (bytes, not the objects given), the decoded cache, and a property test holding it
//! to the typed store over random writes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use proptest::prelude::*;

use super::decoded::Decoded;
use crate::store::{IndexFunc, Indexer, Indexers, NAMESPACE_INDEX};
use crate::testutil::{cm, cm_labels};
use crate::{CompactOptions, StoreKind};

fn compact() -> Indexer<ConfigMap> {
    Indexer::compact(CompactOptions::default())
}

/// A compact indexer that keeps nothing decoded: every read decodes.
fn uncached() -> Indexer<ConfigMap> {
    Indexer::compact(CompactOptions { decoded_cache: 0 })
}

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

fn rv(obj: &ConfigMap) -> &str {
    obj.metadata.resource_version.as_deref().unwrap_or_default()
}

#[test]
fn add_get_update_delete_list() {
    for s in [compact(), uncached()] {
        assert!(s.is_compact());
        assert!(s.add_indexers(HashMap::new()).is_ok());
        s.add(cm("ns", "a", "1"));
        s.add(cm("ns", "b", "1"));
        let old = s.upsert(cm("ns", "a", "2")).expect("replaced");
        assert_eq!(rv(&old), "1");
        assert_eq!(s.len(), 2);
        assert_eq!(rv(&s.get_by_key("ns/a").unwrap()), "2");
        assert!(s.get(&cm("ns", "b", "9")).is_some());
        assert!(s.contains_key("ns/b"));
        let mut keys = s.list_keys();
        keys.sort();
        assert_eq!(keys, vec!["ns/a", "ns/b"]);
        let deleted = s.delete(&cm("ns", "a", "3")).expect("deleted");
        assert_eq!(rv(&deleted), "2");
        assert!(s.delete_by_key("ns/a").is_none());
        assert_eq!(names(&s.list()), vec!["b"]);
        assert!(format!("{s:?}").contains("compact"));
    }
}

#[test]
fn the_store_keeps_bytes_not_the_objects_it_was_given() {
    let s = uncached();
    let obj = cm_labels("ns", "a", "1", &[("app", "web")]);
    s.add(obj.clone());
    assert_eq!(Arc::strong_count(&obj), 1, "the typed object was kept");
    let read = s.get_by_key("ns/a").unwrap();
    assert_eq!(*read, *obj, "a read decodes an equal object");
    assert!(!Arc::ptr_eq(&read, &obj));
    assert!(!Arc::ptr_eq(&read, &s.get_by_key("ns/a").unwrap()));
}

#[test]
fn recent_objects_stay_decoded_until_written_again() {
    let s = compact();
    let written = cm("ns", "a", "1");
    s.add(written.clone());
    // Written objects are cached: a read right after the event costs no decode.
    assert!(Arc::ptr_eq(&s.get_by_key("ns/a").unwrap(), &written));
    let newer = cm("ns", "a", "2");
    s.update(newer.clone());
    let read = s.get_by_key("ns/a").unwrap();
    assert!(
        Arc::ptr_eq(&read, &newer),
        "the cache never serves the old version"
    );
    assert!(Arc::ptr_eq(&s.list()[0], &newer));
}

#[test]
fn the_decoded_cache_is_bounded_and_answers_only_for_the_current_write() {
    let mut cache: Decoded<u32> = Decoded::new(4);
    let key = |i: u32| -> Arc<str> { Arc::from(format!("k{i}")) };
    for i in 0..10 {
        cache.put(key(i), 1, Arc::new(i));
        assert!(cache.len() <= 4);
    }
    assert_eq!(cache.get(&key(9), 1).as_deref(), Some(&9));
    assert!(cache.get(&key(0), 1).is_none(), "evicted");
    // A decode of an older write arriving late does not replace the newer one.
    cache.put(key(9), 3, Arc::new(93));
    cache.put(key(9), 2, Arc::new(92));
    assert_eq!(cache.get(&key(9), 3).as_deref(), Some(&93));
    assert!(cache.get(&key(9), 2).is_none());
    cache.remove("k9");
    assert!(cache.get(&key(9), 3).is_none());
    let mut none: Decoded<u32> = Decoded::new(0);
    none.put(key(1), 1, Arc::new(1));
    assert_eq!(none.len(), 0);
}

#[test]
fn replace_returns_old_contents_decoding_only_what_changed() {
    let s = uncached();
    s.add(cm("ns", "same", "1"));
    s.add(cm("ns", "changed", "1"));
    s.add(cm("ns", "gone", "1"));
    let same = cm("ns", "same", "1");
    let keyed = vec![
        (Arc::from("ns/same"), same.clone()),
        (Arc::from("ns/changed"), cm("ns", "changed", "2")),
        (Arc::from("ns/new"), cm("ns", "new", "2")),
    ];
    let old = s.replace_keyed(keyed, "2".into());
    assert_eq!(old.len(), 3);
    assert!(
        Arc::ptr_eq(&old["ns/same"], &same),
        "unchanged: the new copy"
    );
    assert_eq!(rv(&old["ns/changed"]), "1");
    assert_eq!(rv(&old["ns/gone"]), "1");
    assert_eq!(names(&s.list()), vec!["changed", "new", "same"]);
    assert_eq!(s.last_store_sync_resource_version().as_deref(), Some("2"));
    assert_eq!(s.by_index(NAMESPACE_INDEX, "ns").unwrap().len(), 3);
}

#[test]
fn indexes_are_computed_at_insert_and_follow_updates() {
    let s = uncached();
    let mut ix: Indexers<ConfigMap> = HashMap::new();
    ix.insert("users".into(), by_label("users"));
    s.add_indexers(ix).unwrap();
    s.add(cm_labels("ns", "one", "1", &[("users", "ernie,bert")]));
    s.add(cm_labels("ns", "two", "1", &[("users", "bert,oscar")]));
    s.add(cm_labels("ns", "tre", "1", &[("users", "ernie,elmo")]));
    assert_eq!(
        names(&s.by_index("users", "ernie").unwrap()),
        vec!["one", "tre"]
    );
    assert_eq!(
        s.index_keys("users", "bert").unwrap(),
        vec!["ns/one", "ns/two"]
    );
    let probe = cm_labels("x", "probe", "1", &[("users", "oscar,elmo")]);
    assert_eq!(
        names(&s.index("users", &probe).unwrap()),
        vec!["tre", "two"]
    );
    s.update(cm_labels("ns", "one", "2", &[("users", "elmo")]));
    assert_eq!(names(&s.by_index("users", "ernie").unwrap()), vec!["tre"]);
    assert_eq!(
        names(&s.by_index("users", "elmo").unwrap()),
        vec!["one", "tre"]
    );
    s.delete_by_key("ns/tre");
    let mut values = s.list_index_func_values("users");
    values.sort();
    assert_eq!(values, vec!["bert", "elmo", "oscar"]);
    assert!(matches!(
        s.by_index("nope", "x"),
        Err(crate::Error::UnknownIndex { .. })
    ));
    let mut again: Indexers<ConfigMap> = HashMap::new();
    again.insert(NAMESPACE_INDEX.into(), by_label("x"));
    assert!(matches!(
        s.add_indexers(again),
        Err(crate::Error::IndexerConflict { .. })
    ));
    let mut names_now = s.indexer_names();
    names_now.sort();
    assert_eq!(names_now, vec![NAMESPACE_INDEX, "users"]);
}

#[test]
fn an_index_added_later_indexes_the_stored_objects() {
    let s = uncached();
    s.add(cm_labels("ns", "one", "1", &[("app", "web")]));
    s.add(cm_labels("ns", "two", "1", &[("app", "db")]));
    let mut ix: Indexers<ConfigMap> = HashMap::new();
    ix.insert("app".into(), by_label("app"));
    s.add_indexers(ix).unwrap();
    assert_eq!(names(&s.by_index("app", "web").unwrap()), vec!["one"]);
    s.update(cm_labels("ns", "two", "2", &[("app", "web")]));
    assert_eq!(
        names(&s.by_index("app", "web").unwrap()),
        vec!["one", "two"]
    );
    assert!(s.by_index("app", "db").unwrap().is_empty());
}

#[test]
fn with_store_picks_the_kind() {
    assert!(!Indexer::<ConfigMap>::with_store(StoreKind::Typed).is_compact());
    assert!(
        Indexer::<ConfigMap>::with_store(StoreKind::Compact(CompactOptions::default()))
            .is_compact()
    );
}

/// One write of the property test.
#[derive(Debug, Clone)]
enum Op {
    Upsert { name: u8, rv: u8, app: u8 },
    Delete { name: u8 },
    Replace { names: Vec<(u8, u8)> },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..12u8, 0..4u8, 0..3u8).prop_map(|(name, rv, app)| Op::Upsert { name, rv, app }),
        2 => (0..12u8).prop_map(|name| Op::Delete { name }),
        1 => proptest::collection::vec((0..12u8, 0..3u8), 0..8)
            .prop_map(|names| Op::Replace { names }),
    ]
}

fn object(name: u8, rv: u8, app: u8) -> Arc<ConfigMap> {
    cm_labels(
        if name.is_multiple_of(2) {
            "even"
        } else {
            "odd"
        },
        &format!("o{name}"),
        &rv.to_string(),
        &[("app", &format!("a{app}"))],
    )
}

/// What a reader can see: every object by key, and the keys under every index value.
fn view(s: &Indexer<ConfigMap>) -> (BTreeMap<String, ConfigMap>, BTreeMap<String, Vec<String>>) {
    let objects = s
        .list()
        .into_iter()
        .map(|o| (crate::meta_namespace_key(o.as_ref()), (*o).clone()))
        .collect();
    let mut index = BTreeMap::new();
    for name in [NAMESPACE_INDEX, "app"] {
        for value in s.list_index_func_values(name) {
            index.insert(
                format!("{name}={value}"),
                s.index_keys(name, &value).unwrap(),
            );
        }
    }
    (objects, index)
}

proptest! {
    #[test]
    fn reads_match_the_typed_store_after_any_writes(
        ops in proptest::collection::vec(op(), 1..40),
        cache in 0..4usize,
    ) {
        let typed: Indexer<ConfigMap> = Indexer::new();
        let compact: Indexer<ConfigMap> = Indexer::compact(CompactOptions { decoded_cache: cache });
        for s in [&typed, &compact] {
            let mut ix: Indexers<ConfigMap> = HashMap::new();
            ix.insert("app".into(), by_label("app"));
            s.add_indexers(ix).unwrap();
        }
        for op in ops {
            match op {
                Op::Upsert { name, rv, app } => {
                    let obj = object(name, rv, app);
                    let a = typed.upsert(obj.clone()).map(|o| (*o).clone());
                    let b = compact.upsert(obj).map(|o| (*o).clone());
                    prop_assert_eq!(a, b);
                }
                Op::Delete { name } => {
                    let key = format!("{}/o{name}", if name.is_multiple_of(2) { "even" } else { "odd" });
                    let a = typed.delete_by_key(&key).map(|o| (*o).clone());
                    let b = compact.delete_by_key(&key).map(|o| (*o).clone());
                    prop_assert_eq!(a, b);
                }
                Op::Replace { names } => {
                    let objects: Vec<_> = names.iter().map(|&(n, a)| object(n, 9, a)).collect();
                    let a = typed.replace_returning_old(objects.clone(), "9".into());
                    let b = compact.replace_returning_old(objects, "9".into());
                    let a: BTreeMap<_, _> = a.into_iter().map(|(k, o)| (k.to_string(), (*o).clone())).collect();
                    let b: BTreeMap<_, _> = b.into_iter().map(|(k, o)| (k.to_string(), (*o).clone())).collect();
                    prop_assert_eq!(a, b);
                }
            }
            prop_assert_eq!(view(&typed), view(&compact));
            for name in 0..12u8 {
                let key = format!("{}/o{name}", if name.is_multiple_of(2) { "even" } else { "odd" });
                prop_assert_eq!(
                    typed.get_by_key(&key).map(|o| (*o).clone()),
                    compact.get_by_key(&key).map(|o| (*o).clone())
                );
            }
        }
    }
}
