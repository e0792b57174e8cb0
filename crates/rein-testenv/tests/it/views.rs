//! Resources served from another resource's storage or from none: `events.k8s.io/v1` Events
//! are the core Events' storage seen through a converting view (one store, one
//! resourceVersion sequence, watches through either view see writes through both), and
//! `componentstatuses` is virtual and read-only.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ComponentStatus, Event as CoreEvent};
use k8s_openapi::api::events::v1::Event as NewEvent;
use kube_client::Client;
use kube_client::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, WatchEvent, WatchParams,
};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

use super::http_support::send_json;

const CORE: &str = "/api/v1/namespaces/default/events";
const NEW: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

/// Status code, `Warning` headers and JSON body of a request.
async fn send(
    client: &Client,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Vec<String>, Value) {
    let answer = send_json(client, method, path, "application/json", body.as_ref()).await;
    let body = answer.json();
    (answer.code, answer.warnings, body)
}

fn core_event(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u-1"},
        "reason": "Pulled", "message": "pulled the image", "type": "Normal",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2025-01-01T00:00:00Z", "lastTimestamp": "2025-01-01T00:00:05Z",
        "count": 3})
}

fn new_event(name: &str) -> Value {
    json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2025-01-01T00:00:00.123456Z",
        "reportingController": "example.com/ctl", "reportingInstance": "ctl-0",
        "action": "Scale", "reason": "Scaled", "note": "scaled to 3", "type": "Warning",
        "regarding": {"kind": "Deployment", "namespace": "default", "name": "web"},
        "related": {"kind": "ReplicaSet", "namespace": "default", "name": "web-1"},
        "series": {"count": 2, "lastObservedTime": "2025-01-01T00:00:09.000000Z"}})
}

#[tokio::test]
async fn events_written_through_either_api_are_one_object_in_both_views() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();

    // Written as core/v1, read as events.k8s.io/v1, field by field.
    let (code, _, created) = send(&client, "POST", CORE, Some(core_event("old"))).await;
    assert_eq!(code, 201, "{created}");
    let (code, _, seen) = send(&client, "GET", &format!("{NEW}/old"), None).await;
    assert_eq!(code, 200, "{seen}");
    assert_eq!(seen["apiVersion"], "events.k8s.io/v1");
    assert_eq!(seen["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(
        seen["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert_eq!(seen["regarding"], created["involvedObject"]);
    assert_eq!(seen["note"], "pulled the image");
    assert_eq!(
        seen["deprecatedSource"],
        json!({"component": "kubelet", "host": "node-1"})
    );
    assert_eq!(seen["deprecatedFirstTimestamp"], "2025-01-01T00:00:00Z");
    assert_eq!(seen["deprecatedLastTimestamp"], "2025-01-01T00:00:05Z");
    assert_eq!(seen["deprecatedCount"], 3);
    for core_only in [
        "involvedObject",
        "message",
        "source",
        "firstTimestamp",
        "count",
    ] {
        assert!(seen.get(core_only).is_none(), "{core_only} in {seen}");
    }

    // Written as events.k8s.io/v1, read as core/v1.
    let (code, _, created) = send(&client, "POST", NEW, Some(new_event("new"))).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "events.k8s.io/v1");
    assert_eq!(created["note"], "scaled to 3");
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let typed = core.get("new").await.expect("core view");
    assert_eq!(typed.involved_object.name.as_deref(), Some("web"));
    assert_eq!(typed.involved_object.kind.as_deref(), Some("Deployment"));
    assert_eq!(typed.message.as_deref(), Some("scaled to 3"));
    assert_eq!(
        typed.reporting_component.as_deref(),
        Some("example.com/ctl")
    );
    assert_eq!(typed.reporting_instance.as_deref(), Some("ctl-0"));
    assert_eq!(typed.action.as_deref(), Some("Scale"));
    assert_eq!(typed.series.as_ref().and_then(|s| s.count), Some(2));
    assert_eq!(
        typed.related.as_ref().and_then(|r| r.name.as_deref()),
        Some("web-1")
    );
    assert!(typed.event_time.is_some());
    assert_eq!(
        typed.metadata.resource_version.as_deref(),
        created["metadata"]["resourceVersion"].as_str()
    );

    // Both lists hold both, each in its own form, at one resourceVersion.
    let new: Api<NewEvent> = Api::namespaced(client.clone(), "default");
    let core_list = core.list(&ListParams::default()).await.expect("core list");
    let new_list = new
        .list(&ListParams::default())
        .await
        .expect("events.k8s.io list");
    let names = |items: Vec<Option<String>>| {
        let mut n: Vec<String> = items.into_iter().flatten().collect();
        n.sort();
        n
    };
    assert_eq!(
        names(
            core_list
                .items
                .iter()
                .map(|e| e.metadata.name.clone())
                .collect()
        ),
        ["new", "old"]
    );
    assert_eq!(
        names(
            new_list
                .items
                .iter()
                .map(|e| e.metadata.name.clone())
                .collect()
        ),
        ["new", "old"]
    );
    assert_eq!(
        core_list.metadata.resource_version,
        new_list.metadata.resource_version
    );
    let old = new_list
        .items
        .iter()
        .find(|e| e.metadata.name.as_deref() == Some("old"))
        .expect("old");
    assert_eq!(old.deprecated_count, Some(3));
    assert_eq!(
        old.regarding.as_ref().and_then(|r| r.uid.as_deref()),
        Some("u-1")
    );

    // Field selectors in each view's spelling select the same objects.
    let by = |s: &str| ListParams::default().fields(s);
    let pick = core
        .list(&by("involvedObject.kind=Deployment"))
        .await
        .expect("core selector");
    assert_eq!(
        names(pick.items.into_iter().map(|e| e.metadata.name).collect()),
        ["new"]
    );
    let pick = new
        .list(&by("regarding.uid=u-1,reportingController="))
        .await
        .expect("selector");
    assert_eq!(
        names(pick.items.into_iter().map(|e| e.metadata.name).collect()),
        ["old"]
    );
    let (code, _, body) = send(
        &client,
        "GET",
        &format!("{NEW}?fieldSelector=involvedObject.name%3Dweb"),
        None,
    )
    .await;
    assert_eq!(
        (code, body["message"].as_str()),
        (400, Some("field label not supported: involvedObject.name"))
    );

    // An update through one view is seen through the other. Through events.k8s.io an Event
    // is immutable but for its series (causes name the core fields both APIs validate);
    // through core/v1 anything may change.
    let mut changed = seen.clone();
    changed["note"] = json!("pulled again");
    let (code, _, body) = send(&client, "PUT", &format!("{NEW}/old"), Some(changed)).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "Event.events.k8s.io \"old\" is invalid: message: Invalid value: \"pulled again\": field is immutable"
    );
    let mut changed = seen.clone();
    changed["metadata"]["labels"] = json!({"seen": "twice"});
    let (code, _, updated) = send(&client, "PUT", &format!("{NEW}/old"), Some(changed)).await;
    assert_eq!(code, 200, "{updated}");
    let typed = core.get("old").await.expect("core view");
    assert_eq!(
        typed
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("seen"))
            .map(String::as_str),
        Some("twice")
    );
    assert_eq!(
        typed.metadata.resource_version.as_deref(),
        updated["metadata"]["resourceVersion"].as_str()
    );
    let mut changed = serde_json::to_value(&typed).expect("encodes");
    changed["message"] = json!("pulled again");
    changed["count"] = json!(4);
    let (code, _, updated) = send(&client, "PUT", &format!("{CORE}/old"), Some(changed)).await;
    assert_eq!(code, 200, "{updated}");
    let (_, _, seen_again) = send(&client, "GET", &format!("{NEW}/old"), None).await;
    assert_eq!(
        (&seen_again["note"], &seen_again["deprecatedCount"]),
        (&json!("pulled again"), &json!(4))
    );
    // A resourceVersion read through one view is stale for the other after a write.
    let (code, _, body) = send(
        &client,
        "PUT",
        &format!("{CORE}/old"),
        Some(json!({
        "metadata": {"name": "old", "resourceVersion": seen["metadata"]["resourceVersion"]},
        "involvedObject": {"kind": "Pod", "name": "web"}})),
    )
    .await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (409, Some("Conflict")),
        "{body}"
    );

    // Patches apply to the view's form.
    let patched = core
        .patch(
            "new",
            &PatchParams::default(),
            &Patch::Merge(json!({"message": "patched"})),
        )
        .await
        .expect("core patch");
    assert_eq!(patched.message.as_deref(), Some("patched"));
    let patched = new
        .patch(
            "new",
            &PatchParams::default(),
            &Patch::Merge(json!({"series": {"count": 5}})),
        )
        .await
        .expect("events.k8s.io patch");
    assert_eq!(patched.series.as_ref().map(|s| s.count), Some(5));
    assert_eq!(patched.note.as_deref(), Some("patched"));
    let typed = core.get("new").await.expect("get");
    assert_eq!(typed.series.as_ref().and_then(|s| s.count), Some(5));

    // Deleted through one view, gone from both.
    new.delete("old", &DeleteParams::default())
        .await
        .expect("deletes");
    let (code, _, body) = send(&client, "GET", &format!("{CORE}/old"), None).await;
    assert_eq!(
        (code, body["message"].as_str()),
        (404, Some("events \"old\" not found"))
    );
    core.delete("new", &DeleteParams::default())
        .await
        .expect("deletes");
    let (code, _, body) = send(&client, "GET", &format!("{NEW}/new"), None).await;
    assert_eq!(
        (code, body["message"].as_str()),
        (404, Some("events.events.k8s.io \"new\" not found"))
    );
}

#[tokio::test]
async fn watches_through_either_view_see_writes_through_both() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let new: Api<NewEvent> = Api::namespaced(client.clone(), "default");
    let rv = core
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");
    let mut core_watch = core
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch")
        .boxed();
    let mut new_watch = new
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch")
        .boxed();
    send(&client, "POST", CORE, Some(core_event("a"))).await;
    send(&client, "POST", NEW, Some(new_event("b"))).await;
    for expected in ["a", "b"] {
        match core_watch.try_next().await.expect("event").expect("open") {
            WatchEvent::Added(e) => {
                assert_eq!(e.metadata.name.as_deref(), Some(expected));
                assert!(e.involved_object.name.is_some());
            }
            other => panic!("{other:?}"),
        }
        match new_watch.try_next().await.expect("event").expect("open") {
            WatchEvent::Added(e) => {
                assert_eq!(e.metadata.name.as_deref(), Some(expected));
                assert!(e.regarding.as_ref().is_some_and(|r| r.name.is_some()));
            }
            other => panic!("{other:?}"),
        }
    }
    // The raw watch lines of the new view carry the converted object.
    let (code, _, _) = send(&client, "DELETE", &format!("{CORE}/b"), None).await;
    assert_eq!(code, 200);
    match new_watch.try_next().await.expect("event").expect("open") {
        WatchEvent::Deleted(e) => {
            assert_eq!(e.metadata.name.as_deref(), Some("b"));
            assert_eq!(e.note.as_deref(), Some("scaled to 3"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn each_events_view_validates_writes_by_its_own_rules() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    // The core API takes an Event without eventTime and reporting fields; events.k8s.io
    // requires them.
    let (code, _, body) = send(&client, "POST", CORE, Some(core_event("plain"))).await;
    assert_eq!(code, 201, "{body}");
    let mut bare = new_event("bare");
    bare.as_object_mut().expect("object").remove("eventTime");
    let (code, _, body) = send(&client, "POST", NEW, Some(bare)).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["details"]["causes"][0]["field"], "eventTime");
    // Nothing was stored through either view.
    let (code, _, _) = send(&client, "GET", &format!("{CORE}/bare"), None).await;
    assert_eq!(code, 404);
    // A core Event's fields are unknown to events.k8s.io: dropped with a warning.
    let mut mixed = new_event("mixed");
    mixed["message"] = json!("core spelling");
    let (code, warnings, body) = send(&client, "POST", NEW, Some(mixed)).await;
    assert_eq!(code, 201, "{body}");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("unknown field \\\"message\\\"")),
        "{warnings:?}"
    );
    assert_eq!(body["note"], "scaled to 3");
}

#[tokio::test]
async fn componentstatuses_are_virtual_and_read_only() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    const PATH: &str = "/api/v1/componentstatuses";
    let deprecated = "299 - \"v1 ComponentStatus is deprecated in v1.19+\"";

    let (code, warnings, list) = send(&client, "GET", PATH, None).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(warnings, [deprecated]);
    assert_eq!(list["kind"], "ComponentStatusList");
    assert_eq!(list["metadata"], json!({}));
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["controller-manager", "etcd-0", "scheduler"]);
    for item in list["items"].as_array().expect("items") {
        assert_eq!(
            item["conditions"],
            json!([{"type": "Healthy", "status": "True", "message": "ok"}])
        );
        assert!(item.get("kind").is_none(), "{item}");
    }

    let api: Api<ComponentStatus> = Api::all(client.clone());
    let etcd = api.get("etcd-0").await.expect("get");
    assert_eq!(etcd.conditions.expect("conditions")[0].status, "True");
    assert_eq!(
        api.list(&ListParams::default().fields("metadata.name=scheduler"))
            .await
            .expect("list")
            .items
            .len(),
        1
    );

    let (code, _, body) = send(&client, "GET", &format!("{PATH}/apiserver"), None).await;
    assert_eq!(
        (code, body["message"].as_str()),
        (404, Some("componentstatuses \"apiserver\" not found"))
    );
    for (method, path) in [
        ("POST", PATH.to_string()),
        ("DELETE", format!("{PATH}/etcd-0")),
        ("PUT", format!("{PATH}/etcd-0")),
        ("GET", format!("{PATH}?watch=true")),
    ] {
        let (code, warnings, body) = send(
            &client,
            method,
            &path,
            Some(json!({"metadata": {"name": "etcd-0"}})),
        )
        .await;
        assert_eq!(
            (code, body["reason"].as_str()),
            (405, Some("MethodNotAllowed")),
            "{method} {path}"
        );
        assert_eq!(warnings, [deprecated]);
    }
    let (_, _, discovery) = send(&client, "GET", "/api/v1", None).await;
    let resource = discovery["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["name"] == "componentstatuses")
        .expect("listed")
        .clone();
    assert_eq!(resource["verbs"], json!(["get", "list"]));
}
