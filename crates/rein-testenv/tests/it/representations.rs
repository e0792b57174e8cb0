//! Response representations chosen by `Accept`: metadata-only objects, lists and watches
//! (`PartialObjectMetadata`, through kube-client's `*_metadata` calls) and YAML.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

use super::http_support::get_as;

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "data": {"big": "x".repeat(1000)},
    }))
    .expect("valid config map")
}

/// GETs `path` with `accept`: (status, content type, body text).
async fn get(env: &TestEnv, path: &str, accept: &str) -> (u16, String, String) {
    let answer = get_as(&env.client(), path, accept).await;
    let text = answer.text();
    (answer.code, answer.content_type, text)
}

#[tokio::test]
async fn metadata_only_get_list_and_watch() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &config_map("a"))
        .await
        .expect("creates");

    let meta = api.get_metadata("a").await.expect("gets metadata");
    assert_eq!(meta.metadata.name.as_deref(), Some("a"));
    assert_eq!(
        meta.types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    let list = api
        .list_metadata(&ListParams::default().labels("app=web"))
        .await
        .expect("lists metadata");
    assert_eq!(list.items.len(), 1);
    assert!(list.metadata.resource_version.is_some());

    let (code, content_type, text) = get(
        &env,
        "/api/v1/namespaces/default/configmaps/a",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        content_type,
        "application/json;g=meta.k8s.io;v=v1;as=PartialObjectMetadata"
    );
    let body: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(body["apiVersion"], "meta.k8s.io/v1");
    assert!(body.get("data").is_none(), "{body}");
    assert_eq!(body["metadata"]["labels"]["app"], "web");

    // A list asked for as one object's metadata is not acceptable.
    let (code, _, text) = get(
        &env,
        "/api/v1/namespaces/default/configmaps",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    )
    .await;
    let status: Value = serde_json::from_str(&text).expect("status");
    assert_eq!(
        (code, status["reason"].as_str()),
        (406, Some("NotAcceptable"))
    );
    assert_eq!(
        status["message"],
        "you requested PartialObjectMetadata, but the requested object is a list \
         (*core.ConfigMapList)"
    );

    let mut events = api
        .watch_metadata(&WatchParams::default(), "0")
        .await
        .expect("watches")
        .boxed();
    match events.next().await {
        Some(Ok(WatchEvent::Added(m))) => {
            assert_eq!(m.metadata.name.as_deref(), Some("a"));
            assert_eq!(
                m.types.map(|t| t.kind),
                Some("PartialObjectMetadata".to_string())
            );
        }
        other => panic!("expected ADDED, got {other:?}"),
    }
}

#[tokio::test]
async fn yaml_answers() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &config_map("a"))
        .await
        .expect("creates");
    let (code, content_type, text) = get(
        &env,
        "/api/v1/namespaces/default/configmaps/a",
        "application/yaml",
    )
    .await;
    assert_eq!((code, content_type.as_str()), (200, "application/yaml"));
    let object: Value = serde_saphyr::from_str(&text).expect("yaml");
    assert_eq!(object["kind"], "ConfigMap");
    assert_eq!(object["metadata"]["name"], "a");
    let (code, _, text) = get(
        &env,
        "/api/v1/namespaces/default/configmaps",
        "application/yaml",
    )
    .await;
    let list: Value = serde_saphyr::from_str(&text).expect("yaml");
    assert_eq!((code, list["kind"].as_str()), (200, Some("ConfigMapList")));
    let (code, content_type, text) = get(
        &env,
        "/api/v1/namespaces/default/configmaps/missing",
        "application/yaml",
    )
    .await;
    let status: Value = serde_saphyr::from_str(&text).expect("yaml");
    assert_eq!((code, content_type.as_str()), (404, "application/yaml"));
    assert_eq!(status["reason"], "NotFound");
}

/// kube-runtime's watcher over `Api<PartialObjectMeta<K>>` lists and watches through the
/// metadata-only forms and sees the initial objects and a later change.
#[tokio::test]
async fn kube_runtime_metadata_watcher() {
    use kube_client::core::PartialObjectMeta;
    use kube_runtime::watcher::{Config, Event, watcher};
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &config_map("first"))
        .await
        .expect("creates");
    let metadata: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(env.client(), "default");
    let mut events = watcher(metadata, Config::default()).boxed();
    let mut initial = Vec::new();
    loop {
        match events.next().await.expect("an event").expect("no error") {
            Event::InitApply(m) => initial.extend(m.metadata.name.filter(|n| n != crate::ROOT_CA)),
            Event::InitDone => break,
            Event::Init => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(initial, ["first"]);
    api.create(&PostParams::default(), &config_map("second"))
        .await
        .expect("creates");
    match events.next().await.expect("an event").expect("no error") {
        Event::Apply(m) => assert_eq!(m.metadata.name.as_deref(), Some("second")),
        other => panic!("expected Apply, got {other:?}"),
    }
}
