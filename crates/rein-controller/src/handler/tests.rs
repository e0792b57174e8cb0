//! Unit tests for every handler: which requests, at which priority.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::*;

fn pod(name: &str, rv: &str, owners: Vec<OwnerReference>) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            resource_version: Some(rv.into()),
            owner_references: (!owners.is_empty()).then_some(owners),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    })
}

fn owner(api_version: &str, kind: &str, name: &str, controller: bool) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        controller: controller.then_some(true),
        ..OwnerReference::default()
    }
}

/// Drains the ready requests with their priorities.
async fn drain(q: &RequestQueue) -> Vec<(String, i32)> {
    let mut out = Vec::new();
    while !q.is_empty() {
        let (req, prio) = q.get().await.unwrap();
        q.done(&req);
        out.push((req.to_string(), prio));
    }
    out
}

fn queue() -> RequestQueue {
    RequestQueue::new("handler-test")
}

#[tokio::test]
async fn enqueue_for_object_uses_low_priority_for_initial_list_and_resyncs() {
    let q = queue();
    let h = EnqueueRequestForObject;
    h.create(
        &CreateEvent {
            object: pod("a", "1", vec![]),
            is_in_initial_list: true,
        },
        &q,
    );
    assert_eq!(drain(&q).await, [("ns/a".to_owned(), LOW_PRIORITY)]);
    h.create(
        &CreateEvent {
            object: pod("a", "1", vec![]),
            is_in_initial_list: false,
        },
        &q,
    );
    assert_eq!(drain(&q).await, [("ns/a".to_owned(), 0)]);
    h.update(
        &UpdateEvent {
            object_old: pod("a", "1", vec![]),
            object_new: pod("a", "1", vec![]),
        },
        &q,
    );
    assert_eq!(drain(&q).await, [("ns/a".to_owned(), LOW_PRIORITY)]);
    h.update(
        &UpdateEvent {
            object_old: pod("a", "1", vec![]),
            object_new: pod("b", "2", vec![]),
        },
        &q,
    );
    assert_eq!(drain(&q).await, [("ns/b".to_owned(), 0)]);
    EventHandler::<Pod>::delete(
        &h,
        &DeleteEvent {
            object: pod("c", "3", vec![]),
            delete_state_unknown: true,
        },
        &q,
    );
    EventHandler::<Pod>::generic(
        &h,
        &GenericEvent {
            object: pod("d", "3", vec![]),
        },
        &q,
    );
    assert_eq!(
        drain(&q).await,
        [("ns/c".to_owned(), 0), ("ns/d".to_owned(), 0)]
    );
}

#[tokio::test]
async fn enqueue_for_owner_matches_group_and_kind_and_controller() {
    let q = queue();
    let owners = vec![
        owner("apps/v1", "ReplicaSet", "rs-controller", true),
        owner("apps/v1beta2", "ReplicaSet", "rs-other", false),
        owner("apps/v1", "Deployment", "deploy", false),
        owner("v1", "ReplicaSet", "wrong-group", true),
    ];
    let p = pod("p", "1", owners);
    let only_controller = EnqueueRequestForOwner::new::<ReplicaSet>();
    only_controller.create(
        &CreateEvent {
            object: p.clone(),
            is_in_initial_list: false,
        },
        &q,
    );
    assert_eq!(drain(&q).await, [("ns/rs-controller".to_owned(), 0)]);

    let every = EnqueueRequestForOwner::new::<ReplicaSet>().match_every_owner();
    every.create(
        &CreateEvent {
            object: p.clone(),
            is_in_initial_list: false,
        },
        &q,
    );
    assert_eq!(
        drain(&q).await,
        [
            ("ns/rs-controller".to_owned(), 0),
            ("ns/rs-other".to_owned(), 0)
        ]
    );

    // Update: owners of old and new, de-duplicated.
    let moved = pod(
        "p",
        "2",
        vec![owner("apps/v1", "ReplicaSet", "rs-new", true)],
    );
    only_controller.update(
        &UpdateEvent {
            object_old: p.clone(),
            object_new: moved,
        },
        &q,
    );
    assert_eq!(
        drain(&q).await,
        [
            ("ns/rs-controller".to_owned(), 0),
            ("ns/rs-new".to_owned(), 0)
        ]
    );

    // A cluster-scoped owner is enqueued without a namespace.
    let ns_owner = EnqueueRequestForOwner::new::<Namespace>().match_every_owner();
    let p = pod("p", "1", vec![owner("v1", "Namespace", "team-a", false)]);
    ns_owner.delete(
        &DeleteEvent {
            object: p,
            delete_state_unknown: false,
        },
        &q,
    );
    assert_eq!(drain(&q).await, [("team-a".to_owned(), 0)]);
}

/// controller-runtime's eventhandler test "should enqueue only the first Controller if there
/// are multiple Controller owners" (`metav1.GetControllerOf`): with only-controller, the first
/// `controller: true` reference is the one, and a first controller of another kind means none.
#[tokio::test]
async fn enqueue_for_owner_takes_only_the_first_controller() {
    let q = queue();
    let only_controller = EnqueueRequestForOwner::new::<ReplicaSet>();
    let two_controllers = pod(
        "p",
        "1",
        vec![
            owner("apps/v1", "ReplicaSet", "foo1", false),
            owner("apps/v1", "ReplicaSet", "foo2", true),
            owner("apps/v1", "ReplicaSet", "foo3", true),
        ],
    );
    only_controller.create(
        &CreateEvent {
            object: two_controllers,
            is_in_initial_list: false,
        },
        &q,
    );
    assert_eq!(drain(&q).await, [("ns/foo2".to_owned(), 0)]);

    let other_kind_first = pod(
        "p",
        "1",
        vec![
            owner("apps/v1", "Deployment", "d", true),
            owner("apps/v1", "ReplicaSet", "rs", true),
        ],
    );
    only_controller.create(
        &CreateEvent {
            object: other_kind_first,
            is_in_initial_list: false,
        },
        &q,
    );
    assert_eq!(drain(&q).await, Vec::<(String, i32)>::new());
}

#[tokio::test]
async fn map_func_enqueues_mapped_requests_deduplicated() {
    let q = queue();
    let h = EnqueueRequestsFromMapFunc::new(|p: &Pod| {
        vec![
            Request::new("ns", "fixed"),
            Request::new("other", p.metadata.name.clone().unwrap_or_default()),
        ]
    });
    h.update(
        &UpdateEvent {
            object_old: pod("a", "1", vec![]),
            object_new: pod("b", "2", vec![]),
        },
        &q,
    );
    assert_eq!(
        drain(&q).await,
        [
            ("ns/fixed".to_owned(), 0),
            ("other/a".to_owned(), 0),
            ("other/b".to_owned(), 0)
        ]
    );
    h.generic(
        &GenericEvent {
            object: pod("c", "1", vec![]),
        },
        &q,
    );
    assert_eq!(drain(&q).await.len(), 2);
}

#[tokio::test]
async fn funcs_call_only_the_set_closures() {
    let q = queue();
    let h = Funcs::<Pod>::new().on_create(|_, q| q.add(Request::new("bbb", "abc")));
    h.create(
        &CreateEvent {
            object: pod("a", "1", vec![]),
            is_in_initial_list: false,
        },
        &q,
    );
    h.update(
        &UpdateEvent {
            object_old: pod("a", "1", vec![]),
            object_new: pod("a", "2", vec![]),
        },
        &q,
    );
    h.delete(
        &DeleteEvent {
            object: pod("a", "1", vec![]),
            delete_state_unknown: false,
        },
        &q,
    );
    assert_eq!(drain(&q).await, [("bbb/abc".to_owned(), 0)]);
}

#[tokio::test]
async fn an_async_map_func_adds_its_requests_when_it_finishes_without_blocking_the_handler() {
    let q = queue();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let g = gate.clone();
    let h = EnqueueRequestsFromAsyncMapFunc::new(move |p: Arc<Pod>| {
        let g = g.clone();
        async move {
            // Stands for a cache read that takes a while.
            g.acquire().await.expect("gate").forget();
            vec![
                Request::new("ns", "fixed"),
                Request::new("other", p.metadata.name.clone().unwrap_or_default()),
            ]
        }
    });
    h.update(
        &UpdateEvent {
            object_old: pod("a", "1", vec![]),
            object_new: pod("b", "2", vec![]),
        },
        &q,
    );
    // The handler returned at once; nothing is queued until the mapping finishes.
    tokio::task::yield_now().await;
    assert!(q.is_empty());
    gate.add_permits(2);
    let mut got = Vec::new();
    while got.len() < 3 {
        let (req, prio) = q.get().await.expect("queued");
        q.done(&req);
        got.push((req.to_string(), prio));
    }
    got.sort();
    assert_eq!(
        got,
        [
            ("ns/fixed".to_owned(), 0),
            ("other/a".to_owned(), 0),
            ("other/b".to_owned(), 0)
        ]
    );
    assert!(q.is_empty(), "de-duplicated");
}
