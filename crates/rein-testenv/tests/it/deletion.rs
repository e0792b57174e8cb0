//! Deletion semantics through kube-client: finalizers, preconditions, dry run,
//! owner-reference garbage collection and namespace termination.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube_client::Resource;
use kube_client::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions,
    PropagationPolicy, WatchEvent, WatchParams,
};
use rein_testenv::TestEnv;
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}})).expect("cm")
}

fn owned_by(name: &str, owner: &ConfigMap) -> ConfigMap {
    let mut c = cm(name);
    let mut reference = owner.controller_owner_ref(&()).expect("owner ref");
    // As controller-runtime's SetControllerReference does: a foreground deletion waits for it.
    reference.block_owner_deletion = Some(true);
    c.metadata.owner_references = Some(vec![reference]);
    c
}

async fn names(api: &Api<ConfigMap>) -> Vec<String> {
    api.list(&ListParams::default())
        .await
        .expect("lists")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n != crate::ROOT_CA)
        .collect()
}

/// The names of the owners `name` refers to (it must exist).
async fn owner_names(api: &Api<ConfigMap>, name: &str) -> Vec<String> {
    api.get(name)
        .await
        .expect("kept")
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect()
}

/// Waits (up to a generous 10 s) until `check` holds: garbage collection is asynchronous.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !check().await {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

fn code(err: &kube_client::Error) -> Option<u16> {
    match err {
        kube_client::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut held = cm("held");
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held)
        .await
        .expect("creates");
    let pending = cms
        .delete("held", &DeleteParams::default())
        .await
        .expect("deletes");
    let obj = pending
        .left()
        .expect("the object is returned while pending");
    assert!(obj.metadata.deletion_timestamp.is_some());
    let more =
        Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}));
    let refused = cms
        .patch("held", &PatchParams::default(), &more)
        .await
        .expect_err("no new finalizers");
    assert_eq!(code(&refused), Some(422));
    let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    cms.patch("held", &PatchParams::default(), &release)
        .await
        .expect("releases");
    assert_eq!(cms.get_opt("held").await.expect("get"), None);
}

#[tokio::test]
async fn preconditions_and_dry_run() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    cms.create(&PostParams::default(), &cm("a"))
        .await
        .expect("creates");
    let wrong = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    assert_eq!(
        code(&cms.delete("a", &wrong).await.expect_err("precondition")),
        Some(409)
    );
    cms.delete(
        "a",
        &DeleteParams {
            dry_run: true,
            ..DeleteParams::default()
        },
    )
    .await
    .expect("dry run");
    assert!(
        cms.get_opt("a").await.expect("get").is_some(),
        "dry run deletes nothing"
    );
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    cms.create(&dry, &cm("b")).await.expect("dry-run create");
    assert_eq!(names(&cms).await, ["a"]);
}

#[tokio::test]
async fn background_deletion_collects_dependents() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = cms
        .create(&PostParams::default(), &cm("owner"))
        .await
        .expect("creates");
    let child = cms
        .create(&PostParams::default(), &owned_by("child", &owner))
        .await
        .expect("creates");
    cms.create(&PostParams::default(), &owned_by("grandchild", &child))
        .await
        .expect("creates");
    let watch_from = owner.metadata.resource_version.clone().expect("rv");
    let mut events = cms
        .watch(&WatchParams::default(), &watch_from)
        .await
        .expect("watches")
        .boxed();
    cms.delete("owner", &DeleteParams::background())
        .await
        .expect("deletes");
    eventually("dependents collected", || async {
        names(&cms).await.is_empty()
    })
    .await;
    // Like kube-controller-manager's collector, GC runs after the delete call: the owner
    // goes first, then its child, then the grandchild.
    let mut deleted = Vec::new();
    while deleted.len() < 3 {
        match events.try_next().await.expect("watch") {
            Some(WatchEvent::Deleted(c)) => deleted.push(c.metadata.name.unwrap_or_default()),
            Some(_) => {}
            None => panic!("watch ended early"),
        }
    }
    assert_eq!(deleted, ["owner", "child", "grandchild"]);
}

#[tokio::test]
async fn a_dependent_with_another_live_owner_is_kept() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let first = cms
        .create(&PostParams::default(), &cm("first"))
        .await
        .expect("creates");
    let second = cms
        .create(&PostParams::default(), &cm("second"))
        .await
        .expect("creates");
    let mut shared = owned_by("shared", &first);
    let mut also = second.controller_owner_ref(&()).expect("owner ref");
    also.controller = Some(false);
    shared
        .metadata
        .owner_references
        .as_mut()
        .expect("refs")
        .push(also);
    cms.create(&PostParams::default(), &shared)
        .await
        .expect("creates");
    cms.delete("first", &DeleteParams::background())
        .await
        .expect("deletes");
    eventually("the dangling reference is dropped", || async {
        owner_names(&cms, "shared").await == ["second"]
    })
    .await;
}

#[tokio::test]
async fn a_dependent_created_after_its_owner_is_gone_is_collected() {
    // A controller reading a stale cache can create a child of an owner that was just
    // deleted; kube-controller-manager's GC deletes it, and so must rein-testenv.
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = cms
        .create(&PostParams::default(), &cm("owner"))
        .await
        .expect("creates");
    cms.delete("owner", &DeleteParams::background())
        .await
        .expect("deletes");
    eventually("the owner is gone", || async {
        !names(&cms).await.contains(&"owner".to_string())
    })
    .await;
    let keeper = cms
        .create(&PostParams::default(), &cm("keeper"))
        .await
        .expect("creates");
    cms.create(&PostParams::default(), &owned_by("late-child", &owner))
        .await
        .expect("a dependent of an absent owner is accepted, as by kube-apiserver");
    // A second dependent also refers to a live owner: it stays and loses the dead reference
    // (added by an update, the other way a reference to an absent uid arrives).
    cms.create(&PostParams::default(), &owned_by("two-owners", &keeper))
        .await
        .expect("creates");
    let mut two = cms.get("two-owners").await.expect("gets");
    let mut dead = owner.controller_owner_ref(&()).expect("owner ref");
    dead.controller = Some(false);
    two.metadata
        .owner_references
        .as_mut()
        .expect("refs")
        .push(dead);
    cms.replace("two-owners", &PostParams::default(), &two)
        .await
        .expect("updates");
    eventually("the late child is collected", || async {
        !names(&cms).await.contains(&"late-child".to_string())
    })
    .await;
    eventually("the dead reference is dropped", || async {
        owner_names(&cms, "two-owners").await == ["keeper"]
    })
    .await;
    assert!(names(&cms).await.contains(&"keeper".to_string()));
}

#[tokio::test]
async fn foreground_deletion_waits_for_dependents() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = cms
        .create(&PostParams::default(), &cm("owner"))
        .await
        .expect("creates");
    let mut child = owned_by("child", &owner);
    child.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &child)
        .await
        .expect("creates");
    cms.delete("owner", &DeleteParams::foreground())
        .await
        .expect("deletes");
    let waiting = cms.get("owner").await.expect("owner waits");
    assert!(
        waiting
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"foregroundDeletion".to_string())
    );
    eventually("the collector deletes the child", || async {
        cms.get("child")
            .await
            .expect("child")
            .metadata
            .deletion_timestamp
            .is_some()
    })
    .await;
    let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    cms.patch("child", &PatchParams::default(), &release)
        .await
        .expect("releases");
    eventually("owner goes once its dependents are gone", || async {
        names(&cms).await.is_empty()
    })
    .await;
}

/// Only dependents with `blockOwnerDeletion: true` hold a foreground deletion back; the
/// others are deleted too but the owner does not wait for them.
#[tokio::test]
async fn foreground_deletion_waits_only_for_blocking_dependents() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = cms
        .create(&PostParams::default(), &cm("owner"))
        .await
        .expect("creates");
    let mut child = owned_by("loose", &owner);
    child.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    for r in child.metadata.owner_references.iter_mut().flatten() {
        r.block_owner_deletion = Some(false);
    }
    cms.create(&PostParams::default(), &child)
        .await
        .expect("creates");
    cms.delete("owner", &DeleteParams::foreground())
        .await
        .expect("deletes");
    eventually("the owner goes without waiting", || async {
        cms.get_opt("owner").await.expect("get").is_none()
    })
    .await;
    let loose = cms.get("loose").await.expect("held by its finalizer");
    assert!(loose.metadata.deletion_timestamp.is_some());
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = cms
        .create(&PostParams::default(), &cm("owner"))
        .await
        .expect("creates");
    cms.create(&PostParams::default(), &owned_by("child", &owner))
        .await
        .expect("creates");
    let orphan = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..DeleteParams::default()
    };
    let answer = cms.delete("owner", &orphan).await.expect("deletes");
    let pending = answer
        .left()
        .expect("the owner waits for the orphan finalizer");
    assert!(
        pending
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"orphan".to_string())
    );
    eventually("the owner goes", || async {
        cms.get_opt("owner").await.expect("get").is_none()
    })
    .await;
    let child = cms.get("child").await.expect("child kept");
    assert!(
        child
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test]
async fn namespace_termination_deletes_contents_then_the_namespace() {
    let env = TestEnv::start().await.expect("starts");
    let nss: Api<Namespace> = Api::all(env.client());
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "doomed"}})).expect("ns");
    let created = nss
        .create(&PostParams::default(), &ns)
        .await
        .expect("creates");
    assert_eq!(
        created.status.and_then(|s| s.phase).as_deref(),
        Some("Active")
    );
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "doomed");
    cms.create(&PostParams::default(), &cm("free"))
        .await
        .expect("creates");
    let mut held = cm("held");
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held)
        .await
        .expect("creates");
    nss.delete("doomed", &DeleteParams::default())
        .await
        .expect("deletes");
    let terminating = nss.get("doomed").await.expect("still there");
    assert_eq!(
        terminating.status.and_then(|s| s.phase).as_deref(),
        Some("Terminating")
    );
    eventually("the namespace's contents are deleted", || async {
        names(&cms).await == ["held"]
    })
    .await;
    let refused = cms
        .create(&PostParams::default(), &cm("new"))
        .await
        .expect_err("terminating");
    assert_eq!(code(&refused), Some(403));
    let kube_client::Error::Api(status) = &refused else {
        panic!("{refused}")
    };
    assert_eq!(
        status.message,
        "configmaps \"new\" is forbidden: unable to create new content in namespace doomed \
         because it is being terminated"
    );
    let details = status.details.as_ref().expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("new", "configmaps")
    );
    assert_eq!(details.causes.len(), 1);
    assert_eq!(details.causes[0].reason, "NamespaceTerminating");
    assert_eq!(details.causes[0].field, "metadata.namespace");
    assert_eq!(
        details.causes[0].message,
        "namespace doomed is being terminated"
    );
    let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    cms.patch("held", &PatchParams::default(), &release)
        .await
        .expect("releases");
    eventually("the namespace goes once empty", || async {
        nss.get_opt("doomed").await.expect("get").is_none()
    })
    .await;
}

/// NamespaceLifecycle refuses to delete `default`, `kube-system` and `kube-public`.
#[tokio::test]
async fn the_system_namespaces_may_not_be_deleted() {
    let env = TestEnv::start().await.expect("starts");
    let nss: Api<Namespace> = Api::all(env.client());
    for name in ["default", "kube-system", "kube-public"] {
        let refused = nss
            .delete(name, &DeleteParams::default())
            .await
            .expect_err("immortal");
        let kube_client::Error::Api(status) = &refused else {
            panic!("{refused}")
        };
        assert_eq!(status.code, 403);
        assert_eq!(status.reason, "Forbidden");
        assert_eq!(
            status.message,
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
        );
        let live = nss.get(name).await.expect("still there");
        assert!(live.metadata.deletion_timestamp.is_none());
    }
    nss.delete("kube-node-lease", &DeleteParams::default())
        .await
        .expect("any other namespace may be deleted");
}

#[tokio::test]
async fn delete_collection_honours_selectors() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for (name, app) in [("a", "x"), ("b", "y"), ("c", "x")] {
        let mut c = cm(name);
        c.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        cms.create(&PostParams::default(), &c)
            .await
            .expect("creates");
    }
    cms.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("app=x"),
    )
    .await
    .expect("deletes");
    assert_eq!(names(&cms).await, ["b"]);
}
