//! Objects are served in kube-apiserver's canonical form, checked on the bytes: `kind` before
//! `apiVersion`, then `metadata`, then the Go struct's field order; the empty structs and zero
//! fields Go writes (`status: {}`, `resources: {}`, `creationTimestamp: null`, an Event's
//! `reportingComponent: ""`); `omitempty` fields holding nothing dropped (`finalizers: []`);
//! list items of built-in kinds without `kind`/`apiVersion`, custom resources' with them.

use std::collections::HashMap;
use std::fmt;

use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use rein_testenv::TestEnv;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::crd_support::{create_crd, raw, simple};
use crate::http_support::{open, send_json};

/// Status code and body bytes of a request.
async fn bytes(env: &TestEnv, method: &str, path: &str, body: Option<Value>) -> (u16, String) {
    let content_type = "application/json";
    let answer = send_json(&env.client(), method, path, content_type, body.as_ref()).await;
    (
        answer.code,
        String::from_utf8(answer.bytes.to_vec()).expect("utf-8"),
    )
}

/// The keys of a JSON object in the order they were written.
fn keys(json: &str) -> Vec<String> {
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut out = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                out.push(k);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(json);
    de.deserialize_map(Keys).expect("an object")
}

/// The JSON text (keys in the order written) at the object keys `path` of `json`.
fn raw_field(json: &str, path: &[&str]) -> String {
    let mut text = json.to_string();
    for key in path {
        let map: HashMap<String, Box<RawValue>> = serde_json::from_str(&text).expect("object");
        text = map
            .get(*key)
            .map(|v| v.get().to_string())
            .unwrap_or_default();
    }
    text
}

#[tokio::test]
async fn built_in_objects_marshal_as_go_structs_do() {
    let env = TestEnv::start().await.expect("starts");
    let deployment = json!({
        "status": {"replicas": 3},
        "spec": {
            "template": {
                "spec": {"containers": [{"image": "nginx", "name": "c"}]},
                "metadata": {"labels": {"app": "web"}},
            },
            "selector": {"matchLabels": {"app": "web"}},
            "paused": false,
        },
        "metadata": {"name": "web", "finalizers": [], "annotations": {}},
        "apiVersion": "apps/v1", "kind": "Deployment",
    });
    let (code, created) = bytes(
        &env,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        Some(deployment),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        keys(&created),
        ["kind", "apiVersion", "metadata", "spec", "status"]
    );
    assert!(
        created.starts_with(
            r#"{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web","namespace":"default","uid":""#
        ),
        "{created}"
    );
    assert!(created.ends_with(r#","status":{}}"#), "{created}");
    for dropped in ["finalizers", "annotations", "paused"] {
        assert!(!created.contains(dropped), "{dropped} in {created}");
    }
    assert!(
        created.contains(
            r#""template":{"metadata":{"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx","resources":{},"#
        ),
        "{created}"
    );
    let spec_keys = keys(&raw_field(&created, &["spec"]));
    // Go's DeploymentSpec order, not serde's sorted one.
    assert_eq!(
        spec_keys,
        [
            "replicas",
            "selector",
            "template",
            "strategy",
            "revisionHistoryLimit",
            "progressDeadlineSeconds"
        ]
    );
    // A read answers the same bytes as the write.
    let (_, read) = bytes(
        &env,
        "GET",
        "/apis/apps/v1/namespaces/default/deployments/web",
        None,
    )
    .await;
    assert_eq!(read, created);

    // Go writes an Event's non-omitempty strings and zero times.
    let (code, event) = bytes(
        &env,
        "POST",
        "/api/v1/namespaces/default/events",
        Some(
            json!({"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": "R", "message": "m", "count": 0}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{event}");
    assert_eq!(
        keys(&event),
        [
            "kind",
            "apiVersion",
            "metadata",
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "eventTime",
            "reportingComponent",
            "reportingInstance"
        ]
    );
    assert!(event.ends_with(r#","source":{},"firstTimestamp":null,"lastTimestamp":null,"eventTime":null,"reportingComponent":"","reportingInstance":""}"#), "{event}");
    let (_, view) = bytes(
        &env,
        "GET",
        "/apis/events.k8s.io/v1/namespaces/default/events/e",
        None,
    )
    .await;
    assert_eq!(
        keys(&view),
        [
            "kind",
            "apiVersion",
            "metadata",
            "eventTime",
            "reason",
            "regarding",
            "note",
            "deprecatedSource",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp"
        ]
    );

    // Errors are `metav1.Status` in its order.
    let (code, missing) = bytes(&env, "GET", "/api/v1/namespaces/default/pods/nope", None).await;
    assert_eq!(code, 404);
    assert_eq!(
        missing,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404}"#
    );
}

#[tokio::test]
async fn list_items_of_built_in_kinds_carry_no_type() {
    let env = TestEnv::start().await.expect("starts");
    for name in ["a", "b", "c"] {
        let (code, body) = raw(
            &env,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(&json!({"metadata": {"name": name}, "data": {"k": "v"}})),
        )
        .await;
        assert_eq!(code, 201, "{body}");
    }
    let (code, list) = bytes(
        &env,
        "GET",
        "/api/v1/namespaces/default/configmaps?limit=2",
        None,
    )
    .await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(keys(&list), ["kind", "apiVersion", "metadata", "items"]);
    assert!(
        list.starts_with(
            r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":""#
        ),
        "{list}"
    );
    assert_eq!(
        keys(&raw_field(&list, &["metadata"])),
        ["resourceVersion", "continue", "remainingItemCount"]
    );
    let items: Vec<Box<RawValue>> =
        serde_json::from_str(&raw_field(&list, &["items"])).expect("items");
    assert_eq!(items.len(), 2);
    for item in items {
        assert_eq!(keys(item.get()), ["metadata", "data"], "{item}");
    }
    // Typed and dynamic clients decode such lists.
    let typed: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let names: Vec<String> = typed
        .list(&ListParams::default())
        .await
        .expect("typed list")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert!(
        ["a", "b", "c"].iter().all(|n| names.iter().any(|m| m == n)),
        "{names:?}"
    );
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("", "v1", "ConfigMap"),
        "configmaps",
    );
    let dynamic: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &ar);
    let listed = dynamic
        .list(&ListParams::default())
        .await
        .expect("dynamic list");
    assert!(
        listed
            .items
            .iter()
            .any(|o| o.metadata.name.as_deref() == Some("a"))
    );

    // Custom resources are unstructured: keys sorted, items typed.
    let (code, body) = create_crd(&env, &simple("canon.example.com", "gadgets", "Gadget")).await;
    assert_eq!(code, 201, "{body}");
    let path = "/apis/canon.example.com/v1/namespaces/default/gadgets";
    let mut created = None;
    for _ in 0..200 {
        let (code, body) = bytes(&env, "POST", path, Some(json!({"apiVersion": "canon.example.com/v1",
            "kind": "Gadget", "metadata": {"name": "g", "finalizers": []}, "spec": {"b": 1, "a": 2}}))).await;
        if code == 201 {
            created = Some(body);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let created = created.expect("the CRD is served");
    assert_eq!(keys(&created), ["apiVersion", "kind", "metadata", "spec"]);
    assert!(created.contains(r#""finalizers":[]"#), "{created}");
    let (_, list) = bytes(&env, "GET", path, None).await;
    let parsed: Value = serde_json::from_str(&list).expect("json");
    assert_eq!(parsed["items"][0]["kind"], "Gadget", "{list}");
    assert_eq!(parsed["items"][0]["apiVersion"], "canon.example.com/v1");
}

#[tokio::test]
async fn bookmarks_carry_an_empty_object_of_the_kind() {
    let env = TestEnv::start().await.expect("starts");
    let path = "/api/v1/namespaces/default/pods?watch=1&sendInitialEvents=true\
                &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let resp = open(&env.client(), "GET", path, &[], Vec::new()).await;
    let mut body = resp.into_body();
    let mut seen = Vec::new();
    let line = loop {
        let frame = tokio::time::timeout(std::time::Duration::from_secs(30), body.frame())
            .await
            .expect("in time")
            .expect("a frame")
            .expect("readable");
        if let Ok(data) = frame.into_data() {
            seen.extend_from_slice(&data);
        }
        if let Some(end) = seen.iter().position(|b| *b == b'\n') {
            break String::from_utf8(seen[..end].to_vec()).expect("utf-8");
        }
    };
    let event: Value = serde_json::from_str(&line).expect("json");
    let rv = event["object"]["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    assert_eq!(
        line,
        format!(
            r#"{{"type":"BOOKMARK","object":{{"kind":"Pod","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}","creationTimestamp":null,"annotations":{{"k8s.io/initial-events-end":"true"}}}},"spec":{{"containers":null}},"status":{{}}}}}}"#
        )
    );
}
