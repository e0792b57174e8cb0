//! Protocol tests through kube-client: CRUD, status, errors, selectors and watches.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube_client::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use rein_testenv::TestEnv;
use serde_json::json;

fn pod(name: &str, labels: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }))
    .expect("valid pod")
}

fn status_code(err: &kube_client::Error) -> Option<u16> {
    match err {
        kube_client::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

#[tokio::test]
async fn namespaces_exist_at_start() {
    let env = TestEnv::start().await.expect("starts");
    let nss: Api<Namespace> = Api::all(env.client());
    let names: Vec<String> = nss
        .list(&ListParams::default())
        .await
        .expect("lists")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert_eq!(
        names,
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );
}

#[tokio::test]
async fn create_get_update_delete() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let created = pods
        .create(&PostParams::default(), &pod("web", json!({"app": "web"})))
        .await
        .expect("creates");
    let meta = &created.metadata;
    assert!(meta.uid.is_some() && meta.creation_timestamp.is_some());
    assert_eq!(meta.generation, Some(1));
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    let rv1: u64 = meta
        .resource_version
        .as_deref()
        .expect("rv")
        .parse()
        .expect("numeric");

    let err = pods
        .create(&PostParams::default(), &pod("web", json!({})))
        .await
        .expect_err("duplicate");
    assert_eq!(status_code(&err), Some(409));
    let kube_client::Error::Api(s) = &err else {
        panic!("api error")
    };
    assert_eq!(s.reason, "AlreadyExists");

    let mut got = pods.get("web").await.expect("gets");
    assert_eq!(got.metadata.uid, created.metadata.uid);
    got.spec.as_mut().expect("spec").containers[0].image = Some("nginx:2".into());
    let updated = pods
        .replace("web", &PostParams::default(), &got)
        .await
        .expect("updates");
    let rv2: u64 = updated
        .metadata
        .resource_version
        .as_deref()
        .expect("rv")
        .parse()
        .expect("numeric");
    assert!(rv2 > rv1);
    assert_eq!(updated.metadata.generation, Some(2));

    let stale = pods
        .replace("web", &PostParams::default(), &got)
        .await
        .expect_err("stale rv");
    assert_eq!(status_code(&stale), Some(409));

    let mut status = updated.clone();
    status.status = Some(serde_json::from_value(json!({"phase": "Running"})).expect("status"));
    let with_status = pods
        .replace_status("web", &PostParams::default(), &status)
        .await
        .expect("status update");
    assert_eq!(
        with_status.status.and_then(|s| s.phase).as_deref(),
        Some("Running")
    );
    assert_eq!(
        with_status.metadata.generation,
        Some(2),
        "status changes keep the generation"
    );

    pods.delete("web", &DeleteParams::default())
        .await
        .expect("deletes");
    let missing = pods.get("web").await.expect_err("gone");
    assert_eq!(status_code(&missing), Some(404));
    assert_eq!(pods.get_opt("web").await.expect("get_opt"), None);
}

#[tokio::test]
async fn patches_and_no_op_updates() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"a": "1"}})).expect("cm");
    let created = cms
        .create(&PostParams::default(), &cm)
        .await
        .expect("creates");
    let same = cms
        .replace("c", &PostParams::default(), &created)
        .await
        .expect("no-op");
    assert_eq!(
        same.metadata.resource_version,
        created.metadata.resource_version
    );
    let merged = cms
        .patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "2"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(merged.data.expect("data").len(), 2);
    let applied = cms
        .patch("d", &PatchParams::apply("test").force(), &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}, "data": {"x": "y"}})))
        .await
        .expect("apply creates");
    assert!(applied.metadata.managed_fields.is_some());
}

#[tokio::test]
async fn errors_for_missing_namespace_and_bad_names() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "nope");
    let err = pods
        .create(&PostParams::default(), &pod("a", json!({})))
        .await
        .expect_err("no ns");
    assert_eq!(status_code(&err), Some(404));
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let err = pods
        .create(&PostParams::default(), &pod("Bad_Name", json!({})))
        .await
        .expect_err("bad name");
    assert_eq!(status_code(&err), Some(422));
    let mut generated = pod("", json!({}));
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("web-".into());
    let made = pods
        .create(&PostParams::default(), &generated)
        .await
        .expect("generateName");
    let name = made.metadata.name.expect("named");
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");
}

#[tokio::test]
async fn label_selectors_filter_lists() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    for (name, tier) in [("a", "fe"), ("b", "be"), ("c", "fe")] {
        pods.create(&PostParams::default(), &pod(name, json!({"tier": tier})))
            .await
            .expect("creates");
    }
    let names = |list: kube_client::core::ObjectList<Pod>| -> Vec<String> {
        list.items
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect()
    };
    assert_eq!(
        names(
            pods.list(&ListParams::default().labels("tier=fe"))
                .await
                .expect("list")
        ),
        ["a", "c"]
    );
    assert_eq!(
        names(
            pods.list(&ListParams::default().labels("tier in (be)"))
                .await
                .expect("list")
        ),
        ["b"]
    );
    assert_eq!(
        names(
            pods.list(&ListParams::default().labels("tier!=fe"))
                .await
                .expect("list")
        ),
        ["b"]
    );
    let all: Api<Pod> = Api::all(env.client());
    assert_eq!(
        all.list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        3
    );
}

#[tokio::test]
async fn watch_sends_initial_state_then_changes() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let cm = |name: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name}})).expect("cm")
    };
    cms.create(&PostParams::default(), &cm("before"))
        .await
        .expect("creates");
    let mut stream = cms
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watches")
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("in time")
        .expect("ok");
    assert!(
        matches!(first, Some(WatchEvent::Added(c)) if c.metadata.name.as_deref() == Some("before"))
    );
    // The namespace's root CA ConfigMap is part of the initial state too.
    let root = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("in time")
        .expect("ok");
    assert!(
        matches!(root, Some(WatchEvent::Added(c)) if c.metadata.name.as_deref() == Some(crate::ROOT_CA))
    );
    let created = cms
        .create(&PostParams::default(), &cm("after"))
        .await
        .expect("creates");
    let next = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("in time")
        .expect("ok");
    assert!(
        matches!(next, Some(WatchEvent::Added(c)) if c.metadata.name.as_deref() == Some("after"))
    );
    cms.delete("after", &DeleteParams::default())
        .await
        .expect("deletes");
    let del = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("in time")
        .expect("ok");
    assert!(
        matches!(del, Some(WatchEvent::Deleted(c)) if c.metadata.name.as_deref() == Some("after"))
    );

    let from = created.metadata.resource_version.expect("rv");
    let mut resumed = cms
        .watch(&WatchParams::default(), &from)
        .await
        .expect("watches")
        .boxed();
    let replay = tokio::time::timeout(Duration::from_secs(10), resumed.try_next())
        .await
        .expect("in time")
        .expect("ok");
    assert!(matches!(replay, Some(WatchEvent::Deleted(_))), "{replay:?}");
}

#[tokio::test]
async fn deployments_are_served_with_scale() {
    let env = TestEnv::start().await.expect("starts");
    let deploys: Api<Deployment> = Api::namespaced(env.client(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "status": {"replicas": 7},
    }))
    .expect("deployment");
    let created = deploys
        .create(&PostParams::default(), &d)
        .await
        .expect("creates");
    assert_eq!(
        created.status,
        Some(Default::default()),
        "status is reset on create (and served as the empty struct, `status: {{}}`)"
    );
    let scale = deploys.get_scale("web").await.expect("scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(1));
    deploys
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scales");
    let after = deploys.get("web").await.expect("gets");
    assert_eq!(after.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(after.metadata.generation, Some(2));
}
