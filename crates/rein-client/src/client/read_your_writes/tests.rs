//! Unit tests: expectations, the kind state fed by its informer handler, and the bounded wait
//! on a paused clock.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::core::ObjectMeta;
use rein_informer::{DeletedObject, Indexer, ResourceEventHandler};
use serde_json::json;
use tokio::time::Instant;

use super::expect::{Cached, Expect, after_delete, parse_rv};
use super::kind::{Follower, KindState, Scope};
use super::wait_for;

fn cm(ns: &str, name: &str, uid: &str, rv: &str) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            uid: Some(uid.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    })
}

fn cached(uid: &str, rv: u64) -> Option<Cached<'_>> {
    Some(Cached {
        uid: Some(uid),
        rv: Some(rv),
    })
}

#[test]
fn only_decimal_resource_versions_compare() {
    assert_eq!(parse_rv(Some("42")), Some(42));
    assert_eq!(parse_rv(Some("")), None);
    assert_eq!(parse_rv(Some("+4")), None);
    assert_eq!(parse_rv(Some("abc/1")), None);
    assert_eq!(parse_rv(None), None);
}

#[test]
fn a_write_is_met_by_its_version_or_a_later_delivery() {
    let e = Expect::Written { rv: 10 };
    assert!(!e.met(None, 9), "not created yet in the cache");
    assert!(!e.met(cached("u", 9), 9), "the cached object is older");
    assert!(e.met(cached("u", 10), 9), "the cached object is the write");
    assert!(e.met(cached("u2", 11), 9), "a newer object under the name");
    assert!(e.met(None, 12), "deleted again after the write, delivered");
}

#[test]
fn a_delete_is_met_when_the_object_has_left_the_cache() {
    let e = Expect::Deleted {
        uid: Some("u".into()),
        last_rv: Some(10),
    };
    assert!(!e.met(cached("u", 10), 10), "still cached");
    assert!(!e.met(cached("u", 11), 11), "same object, still cached");
    assert!(!e.met(None, 9), "empty, but the cache never saw version 10");
    assert!(e.met(None, 10), "gone after the cache saw its last version");
    assert!(
        !e.met(cached("old", 5), 10),
        "an older object under the name"
    );
    assert!(e.met(cached("new", 12), 12), "re-created after the delete");
    let unknown = Expect::Deleted {
        uid: Some("u".into()),
        last_rv: None,
    };
    assert!(unknown.met(None, 0));
    assert!(unknown.met(cached("other", 1), 0));
    assert!(!unknown.met(cached("u", 1), 0));
}

#[test]
fn a_delete_after_a_write_remembers_the_written_version() {
    let e = Expect::Written { rv: 10 }.then(Expect::Deleted {
        uid: None,
        last_rv: None,
    });
    assert_eq!(
        e,
        Expect::Deleted {
            uid: None,
            last_rv: Some(10)
        }
    );
    let e = e.then(Expect::Written { rv: 14 });
    assert_eq!(e, Expect::Written { rv: 14 }, "re-created");
}

#[test]
fn the_delete_answer_says_what_to_wait_for() {
    let status = json!({"kind": "Status", "status": "Success", "details": {"uid": "u1"}});
    assert_eq!(
        after_delete(&status),
        Some(Expect::Deleted {
            uid: Some("u1".into()),
            last_rv: None
        })
    );
    let gone = json!({"kind": "ConfigMap", "metadata": {"uid": "u1", "resourceVersion": "7"}});
    assert_eq!(
        after_delete(&gone),
        Some(Expect::Deleted {
            uid: Some("u1".into()),
            last_rv: Some(7)
        })
    );
    let finalizing = json!({"kind": "ConfigMap", "metadata": {
        "uid": "u1", "resourceVersion": "9",
        "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["x/y"]}});
    assert_eq!(after_delete(&finalizing), Some(Expect::Written { rv: 9 }));
    let opaque = json!({"kind": "ConfigMap", "metadata": {"uid": "u1", "resourceVersion": "a1"}});
    assert_eq!(after_delete(&opaque), None);
}

/// A kind state, the indexer it checks and the handler that feeds it, as an informer would.
struct Rig {
    state: Arc<KindState>,
    indexer: Indexer<ConfigMap>,
    follower: Follower,
}

impl Rig {
    fn new() -> Self {
        let state = Arc::new(KindState::default());
        Rig {
            follower: Follower(state.clone()),
            state,
            indexer: Indexer::new(),
        }
    }

    /// The informer applies `obj` to its cache, then tells its handlers.
    fn deliver(&self, obj: Arc<ConfigMap>) {
        match self.indexer.upsert(obj.clone()) {
            Some(old) => self.follower.on_update(&old, &obj),
            None => self.follower.on_add(&obj, false),
        }
    }

    fn deliver_delete(&self, obj: Arc<ConfigMap>) {
        self.indexer.delete(&obj);
        self.follower.on_delete(&DeletedObject::Object(obj));
    }

    /// Waits as a read would, for at most `timeout`.
    fn wait(&self, scope: Scope, timeout: Duration) -> tokio::task::JoinHandle<(bool, Duration)> {
        let (state, indexer) = (self.state.clone(), self.indexer.clone());
        tokio::spawn(async move {
            let start = Instant::now();
            let ok = wait_for(&state, start + timeout, || state.check(&indexer, &scope)).await;
            (ok, start.elapsed())
        })
    }
}

fn key(name: &str) -> Scope {
    Scope::Key(format!("ns/{name}"))
}

#[tokio::test(start_paused = true)]
async fn a_read_waits_until_the_write_is_delivered() {
    let rig = Rig::new();
    rig.deliver(cm("ns", "a", "u", "5"));
    rig.state.expect("ns/a".into(), Expect::Written { rv: 10 });
    assert!(rig.state.covers(&key("a")));
    assert!(!rig.state.covers(&key("b")), "other objects do not wait");

    let read = rig.wait(key("a"), Duration::from_secs(5));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!read.is_finished(), "the cache still holds version 5");
    rig.deliver(cm("ns", "other", "o", "8"));
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(
        !read.is_finished(),
        "version 8 of another object is not enough"
    );
    rig.deliver(cm("ns", "a", "u", "10"));
    let (ok, waited) = read.await.unwrap();
    assert!(ok);
    assert_eq!(waited, Duration::from_secs(1) + Duration::from_millis(1));
    assert!(rig.state.is_idle(), "the met expectation is closed");
}

#[tokio::test(start_paused = true)]
async fn the_wait_is_bounded() {
    let rig = Rig::new();
    rig.state.expect("ns/a".into(), Expect::Written { rv: 10 });
    let (ok, waited) = rig.wait(key("a"), Duration::from_secs(3)).await.unwrap();
    assert!(!ok);
    assert_eq!(waited, Duration::from_secs(3));
    assert!(
        !rig.state.is_idle(),
        "still open: the next read waits again"
    );
}

#[tokio::test(start_paused = true)]
async fn an_already_delivered_write_does_not_wait() {
    let rig = Rig::new();
    rig.deliver(cm("ns", "a", "u", "10"));
    rig.state.expect("ns/a".into(), Expect::Written { rv: 10 });
    assert!(
        rig.state.is_idle(),
        "the informer had delivered it before the write returned"
    );
}

#[tokio::test(start_paused = true)]
async fn a_write_deleted_by_someone_else_is_reached() {
    let rig = Rig::new();
    rig.state.expect("ns/a".into(), Expect::Written { rv: 10 });
    let read = rig.wait(key("a"), Duration::from_secs(5));
    tokio::task::yield_now().await;
    // The informer applies both the write and a later delete before the read looks again.
    rig.indexer.upsert(cm("ns", "a", "u", "10"));
    rig.deliver_delete(cm("ns", "a", "u", "12"));
    assert!(read.await.unwrap().0);
}

#[tokio::test(start_paused = true)]
async fn a_read_after_a_delete_waits_until_the_object_is_gone() {
    let rig = Rig::new();
    rig.deliver(cm("ns", "a", "u", "10"));
    rig.state.expect(
        "ns/a".into(),
        Expect::Deleted {
            uid: Some("u".into()),
            last_rv: Some(10),
        },
    );
    let read = rig.wait(key("a"), Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(!read.is_finished());
    rig.deliver_delete(cm("ns", "a", "u", "11"));
    assert!(read.await.unwrap().0);
}

#[tokio::test(start_paused = true)]
async fn a_list_waits_for_its_namespace_only() {
    let rig = Rig::new();
    rig.state.expect("ns/a".into(), Expect::Written { rv: 10 });
    rig.state
        .expect("other/b".into(), Expect::Written { rv: 11 });
    let elsewhere = rig.wait(
        Scope::Namespace(Some("elsewhere".into())),
        Duration::from_secs(5),
    );
    assert_eq!(elsewhere.await.unwrap(), (true, Duration::ZERO));
    let ns = rig.wait(Scope::Namespace(Some("ns".into())), Duration::from_secs(5));
    let all = rig.wait(Scope::Namespace(None), Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(10)).await;
    rig.deliver(cm("ns", "a", "u", "10"));
    assert!(ns.await.unwrap().0, "its namespace is reached");
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(!all.is_finished(), "other/b is still open");
    rig.deliver(cm("other", "b", "u2", "11"));
    assert!(all.await.unwrap().0);
    assert!(rig.state.is_idle());
}

#[tokio::test(start_paused = true)]
async fn a_bookmark_or_relist_version_counts_when_the_read_looks() {
    let rig = Rig::new();
    rig.state.expect("ns/a".into(), Expect::Written { rv: 10 });
    // A relist at version 12 that no longer holds the object (deleted meanwhile).
    rig.indexer.replace(Vec::new(), "12".into());
    let (ok, waited) = rig.wait(key("a"), Duration::from_secs(5)).await.unwrap();
    assert!(ok);
    assert_eq!(waited, Duration::ZERO);
}
