//! managedFields across updates, as kube-apiserver's field manager keeps them: an update (PUT)
//! or patch without managedFields keeps the stored entries (controllers PUT objects from
//! caches that stripped them), one that sends edited entries is recorded on top of those, only
//! an explicit `[]` resets them, and an update never starts tracking an untracked object.

use std::time::Duration;

use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Client;
use kube_client::api::{Api, PostParams};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

const BOUND: Duration = Duration::from_secs(30);

fn params(manager: &str) -> PostParams {
    PostParams {
        field_manager: Some(manager.to_string()),
        ..PostParams::default()
    }
}

/// (manager, operation) of each entry, and the fields each owns under `data`.
fn entries(cm: &ConfigMap) -> Vec<(String, Vec<String>)> {
    cm.metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|e| {
            let fields = e
                .fields_v1
                .as_ref()
                .and_then(|f| f.0.get("f:data"))
                .and_then(Value::as_object)
                .map(|d| d.keys().cloned().collect())
                .unwrap_or_default();
            (e.manager.clone().unwrap_or_default(), fields)
        })
        .collect()
}

/// The object as a cache that strips managedFields hands it out.
fn stripped(mut cm: ConfigMap) -> ConfigMap {
    cm.metadata.managed_fields = None;
    cm
}

/// PUTs a raw JSON body and answers the status and the stored object.
async fn put(client: &Client, name: &str, body: &Value) -> (StatusCode, Value) {
    let req = Request::builder()
        .method(Method::PUT)
        .uri(format!(
            "/api/v1/namespaces/default/configmaps/{name}?fieldManager=raw"
        ))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_vec(body).expect("json").into())
        .expect("request");
    let resp = tokio::time::timeout(BOUND, client.send(req))
        .await
        .expect("an answer in time")
        .expect("an answer");
    let status = resp.status();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&bytes).expect("JSON"))
}

#[tokio::test]
async fn an_update_without_managed_fields_keeps_the_stored_entries() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"a": "1"}})).expect("cm");
    let created = cms.create(&params("creator"), &cm).await.expect("creates");
    assert_eq!(
        entries(&created),
        [("creator".to_string(), vec!["f:a".to_string()])]
    );

    // A controller PUTs the cached copy (no managedFields) with a change of its own.
    let mut changed = stripped(created);
    changed
        .data
        .get_or_insert_with(Default::default)
        .insert("b".into(), "2".into());
    let updated = cms
        .replace("c", &params("controller"), &changed)
        .await
        .expect("updates");
    assert_eq!(
        entries(&updated),
        [
            ("creator".to_string(), vec!["f:a".to_string()]),
            ("controller".to_string(), vec!["f:b".to_string()]),
        ]
    );

    // The same controller again: its entry is updated, the creator's kept.
    let mut again = stripped(updated);
    again
        .data
        .get_or_insert_with(Default::default)
        .insert("c".into(), "3".into());
    let updated = cms
        .replace("c", &params("controller"), &again)
        .await
        .expect("updates");
    assert_eq!(
        entries(&updated),
        [
            ("creator".to_string(), vec!["f:a".to_string()]),
            (
                "controller".to_string(),
                vec!["f:b".to_string(), "f:c".to_string()]
            ),
        ]
    );

    // No field manager at all (kube-client sends no User-Agent): the entries stay; a field it
    // changed leaves its owner.
    let mut anonymous = stripped(updated);
    anonymous
        .data
        .get_or_insert_with(Default::default)
        .insert("a".into(), "changed".into());
    let updated = cms
        .replace("c", &PostParams::default(), &anonymous)
        .await
        .expect("updates");
    assert_eq!(
        entries(&updated),
        [(
            "controller".to_string(),
            vec!["f:b".to_string(), "f:c".to_string()]
        )]
    );
    assert_eq!(
        cms.get("c").await.expect("gets").metadata.managed_fields,
        updated.metadata.managed_fields
    );

    // `managedFields: null` is the same as leaving them out.
    let mut body = serde_json::to_value(stripped(updated)).expect("json");
    body["metadata"]["managedFields"] = Value::Null;
    body["data"]["d"] = json!("4");
    let (status, stored) = put(&env.client(), "c", &body).await;
    assert_eq!(status, StatusCode::OK, "{stored}");
    let managers: Vec<&str> = stored["metadata"]["managedFields"]
        .as_array()
        .expect("kept")
        .iter()
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert_eq!(managers, ["controller", "raw"]);
}

#[tokio::test]
async fn an_update_with_an_empty_list_resets_them() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for (name, reset) in [("empty", json!([])), ("one-empty-entry", json!([{}]))] {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name}, "data": {"a": "1"}}))
                .expect("cm");
        let created = cms.create(&params("creator"), &cm).await.expect("creates");
        assert!(created.metadata.managed_fields.is_some());
        let mut body = serde_json::to_value(&created).expect("json");
        body["metadata"]["managedFields"] = reset;
        body["data"]["b"] = json!("2");
        let (status, stored) = put(&env.client(), name, &body).await;
        assert_eq!(status, StatusCode::OK, "{stored}");
        assert!(
            stored["metadata"].get("managedFields").is_none(),
            "{name}: {stored}"
        );
        let read = cms.get(name).await.expect("gets");
        assert_eq!(read.metadata.managed_fields, None);
        assert_eq!(
            read.data.expect("data").get("b").map(String::as_str),
            Some("2")
        );
    }
}

#[tokio::test]
async fn an_update_that_edits_the_entries_is_recorded_on_top_of_them() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"a": "1"}})).expect("cm");
    let created = cms.create(&params("creator"), &cm).await.expect("creates");

    // The client hands `data.a` to "editor" in the entries it sends, and adds `data.b`.
    let mut body = serde_json::to_value(&created).expect("json");
    body["metadata"]["managedFields"] = json!([{
        "manager": "editor",
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:a": {}}},
    }]);
    body["data"]["b"] = json!("2");
    let (status, stored) = put(&env.client(), "c", &body).await;
    assert_eq!(status, StatusCode::OK, "{stored}");
    let stored: ConfigMap = serde_json::from_value(stored).expect("cm");
    // The sent entries are taken, and this write ("raw") is recorded on top.
    assert_eq!(
        entries(&stored),
        [
            ("editor".to_string(), vec!["f:a".to_string()]),
            ("raw".to_string(), vec!["f:b".to_string()]),
        ]
    );
    let read = cms.get("c").await.expect("gets");
    assert_eq!(read.metadata.managed_fields, stored.metadata.managed_fields);
}

#[tokio::test]
async fn an_update_does_not_start_tracking_an_untracked_object() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"a": "1"}})).expect("cm");
    // No field manager and no User-Agent: created without managedFields.
    let created = cms
        .create(&PostParams::default(), &cm)
        .await
        .expect("creates");
    assert_eq!(created.metadata.managed_fields, None);

    // An update by a named manager does not start tracking (kube's skipNonAppliedManager).
    let mut changed = created;
    changed
        .data
        .get_or_insert_with(Default::default)
        .insert("b".into(), "2".into());
    let updated = cms
        .replace("c", &params("controller"), &changed)
        .await
        .expect("updates");
    assert_eq!(
        updated
            .data
            .as_ref()
            .and_then(|d| d.get("b"))
            .map(String::as_str),
        Some("2")
    );
    assert_eq!(updated.metadata.managed_fields, None);

    // An apply does: the fields set so far go to "before-first-apply".
    let applied = cms
        .patch(
            "c",
            &kube_client::api::PatchParams::apply("applier"),
            &kube_client::api::Patch::Apply(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c"}, "data": {"c": "3"},
            })),
        )
        .await
        .expect("applies");
    assert_eq!(
        entries(&applied),
        [
            (
                "before-first-apply".to_string(),
                vec!["f:a".to_string(), "f:b".to_string()]
            ),
            ("applier".to_string(), vec!["f:c".to_string()]),
        ]
    );
}
