//! Protocol details answered as kube-apiserver answers them: JSON patch `test` semantics,
//! malformed query parameters, content types and subresources.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube_client::Client;
use kube_client::api::{
    Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube_runtime::controller::Action;
use kube_runtime::finalizer::{Event, finalizer};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

use super::http_support::{self, status_of};

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": "v"},
    }))
    .expect("valid config map")
}

/// One raw request: answers the status code, the `Content-Type` and the body (JSON when it
/// parses, else a JSON string of the text).
async fn raw(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> (u16, String, Value) {
    let headers = [("content-type", content_type)];
    let answer = http_support::send(client, method, path, &headers, body.as_bytes().to_vec()).await;
    let body = answer.json_or_text();
    (answer.code, answer.content_type, body)
}

/// kube-runtime's finalizer helper adds, keeps and removes its finalizer with JSON patches whose
/// first operation tests `/metadata/finalizers` against `null` while the field is absent.
#[tokio::test]
async fn kube_runtime_finalizer_helper_round_trip() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let created = api
        .create(&PostParams::default(), &config_map("fin"))
        .await
        .expect("creates");
    const NAME: &str = "rein.dev/cleanup";

    let action = finalizer(&api, NAME, Arc::new(created), |_| async {
        Ok::<_, std::io::Error>(Action::await_change())
    })
    .await
    .expect("adds the finalizer");
    assert_eq!(action, Action::await_change());
    let with_finalizer = api.get("fin").await.expect("gets");
    assert_eq!(
        with_finalizer.metadata.finalizers,
        Some(vec![NAME.to_string()])
    );

    let seen = finalizer(&api, NAME, Arc::new(with_finalizer), |event| async move {
        Ok::<_, std::io::Error>(match event {
            Event::Apply(_) => Action::requeue(std::time::Duration::from_secs(7)),
            Event::Cleanup(_) => Action::await_change(),
        })
    })
    .await
    .expect("reconciles");
    assert_eq!(seen, Action::requeue(std::time::Duration::from_secs(7)));

    api.delete("fin", &DeleteParams::default())
        .await
        .expect("deletes");
    let deleting = api.get("fin").await.expect("still there");
    assert!(deleting.metadata.deletion_timestamp.is_some());
    finalizer(&api, NAME, Arc::new(deleting), |event| async move {
        assert!(matches!(event, Event::Cleanup(_)), "cleanup expected");
        Ok::<_, std::io::Error>(Action::await_change())
    })
    .await
    .expect("removes the finalizer");
    assert!(api.get_opt("fin").await.expect("gets").is_none());
}

/// The exact patch kube-runtime sends, plus the cases evanphx/json-patch still refuses.
#[tokio::test]
async fn json_patch_test_of_null_matches_an_absent_member() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &config_map("p"))
        .await
        .expect("creates");
    let patch = |ops: serde_json::Value| {
        let ops: json_patch::Patch = serde_json::from_value(ops).expect("valid patch");
        Patch::<()>::Json(ops)
    };
    let patched = api
        .patch(
            "p",
            &PatchParams::default(),
            &patch(json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/a"]},
            ])),
        )
        .await
        .expect("test of null on an absent path passes");
    assert_eq!(
        patched.metadata.finalizers,
        Some(vec!["example.com/a".to_string()])
    );

    // Now present: a test of null fails (422), and so does a test under a missing parent.
    for ops in [
        json!([{"op": "test", "path": "/metadata/finalizers", "value": null}]),
        json!([{"op": "test", "path": "/spec/missing", "value": null}]),
    ] {
        let err = api
            .patch("p", &PatchParams::default(), &patch(ops.clone()))
            .await
            .expect_err("fails");
        let kube_client::Error::Api(status) = err else {
            panic!("{ops}: not a Status: {err}");
        };
        assert_eq!(status.code, 422, "{ops}: {status:?}");
    }
}

#[tokio::test]
async fn label_selectors_are_refused_with_apimachinerys_messages() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let list = |selector: &str| {
        let encoded: String = form_urlencoded::byte_serialize(selector.as_bytes()).collect();
        format!("/api/v1/namespaces/default/configmaps?labelSelector={encoded}")
    };
    let long = "v".repeat(64);
    for (selector, message) in [
        (
            "a=b=c",
            "found '=', expected: ',' or 'end of string'".to_string(),
        ),
        (
            "env=pr od",
            "found 'od', expected: ',' or 'end of string'".to_string(),
        ),
        (
            "env in (a",
            "unable to parse requirement: found '', expected: ',' or ')'".to_string(),
        ),
        (
            &format!("env={long}"),
            format!(
                "unable to parse requirement: values[0][env]: Invalid value: \"{long}\": must be \
                 no more than 63 characters"
            ),
        ),
    ] {
        let (code, _, body) = raw(&client, "GET", &list(selector), "application/json", "").await;
        assert_eq!(code, 400, "{selector}: {body}");
        assert_eq!(
            status_of(&body),
            (400, "BadRequest", message.as_str()),
            "{selector}"
        );
    }
    // `()` is the set holding only the empty value, as apimachinery parses it.
    let (code, _, _) = raw(&client, "GET", &list("env in ()"), "application/json", "").await;
    assert_eq!(code, 200);
    // Watches parse the same way.
    let (code, _, body) = raw(
        &client,
        "GET",
        &format!("{}&watch=true", list("a=b=c")),
        "application/json",
        "",
    )
    .await;
    assert_eq!((code, body["reason"].as_str()), (400, Some("BadRequest")));
}

#[tokio::test]
async fn request_options_are_validated_as_apimachinery_does() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#;
    let base = "/api/v1/namespaces/default/configmaps";
    let (code, _, body) = raw(
        &client,
        "POST",
        &format!("{base}?dryRun=Some"),
        "application/json",
        cm,
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status_of(&body),
        (
            422,
            "Invalid",
            "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Some\"]: \
             supported values: \"All\""
        )
    );
    assert_eq!(body["details"]["kind"], "CreateOptions");
    assert_eq!(
        body["details"]["causes"][0]["reason"],
        "FieldValueNotSupported"
    );
    let (code, _, body) = raw(
        &client,
        "POST",
        &format!("{base}?fieldValidation=Bogus"),
        "application/json",
        cm,
    )
    .await;
    assert_eq!(code, 422);
    assert!(
        status_of(&body).2.ends_with(
            "fieldValidation: Unsupported value: \"Bogus\": supported values: \"\", \"Ignore\", \
             \"Strict\", \"Warn\""
        ),
        "{body}"
    );
    let (code, _, _) = raw(&client, "POST", base, "application/json", cm).await;
    assert_eq!(code, 201);
    let (code, _, body) = raw(
        &client,
        "PATCH",
        &format!("{base}/x?force=true"),
        "application/merge-patch+json",
        r#"{"data":{"a":"b"}}"#,
    )
    .await;
    assert_eq!(
        status_of(&body),
        (
            422,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for \
             non-apply patch"
        ),
        "{code}"
    );
    let (code, _, body) = raw(
        &client,
        "PATCH",
        &format!("{base}/x"),
        "application/apply-patch+yaml",
        cm,
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert!(
        status_of(&body)
            .2
            .ends_with("fieldManager: Required value: is required for apply patch")
    );
    let (code, _, body) = raw(
        &client,
        "DELETE",
        &format!("{base}/x?dryRun=yes"),
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["details"]["kind"], "DeleteOptions");

    // Watch and list options.
    let (code, _, body) = raw(
        &client,
        "GET",
        &format!("{base}?watch=true&sendInitialEvents=true"),
        "application/json",
        "",
    )
    .await;
    assert_eq!(
        status_of(&body),
        (
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: \
             sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        ),
        "{code}"
    );
    let (code, _, body) = raw(
        &client,
        "GET",
        &format!("{base}?sendInitialEvents=true"),
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 422);
    assert!(
        status_of(&body)
            .2
            .ends_with("sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list")
    );
}

/// A streaming list without bookmarks is allowed (apimachinery does not require
/// `allowWatchBookmarks`, for compatibility); it just has no initial-events-end bookmark.
#[tokio::test]
async fn streaming_list_without_bookmarks_is_allowed() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &config_map("a-seen"))
        .await
        .expect("creates");
    // kube-client refuses this combination itself, so the request is raw; the first frame
    // of the stream carries the ADDED event.
    let path = "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true\
                &resourceVersionMatch=NotOlderThan";
    let resp = http_support::open(&env.client(), "GET", path, &[], Vec::new()).await;
    assert_eq!(resp.status().as_u16(), 200);
    let mut body = resp.into_body();
    let frame = http_body_util::BodyExt::frame(&mut body)
        .await
        .expect("a frame")
        .expect("reads");
    let data = frame.into_data().unwrap_or_default();
    let first = data.split(|b| *b == b'\n').next().unwrap_or_default();
    let event: Value = serde_json::from_slice(first).expect("a JSON event");
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["metadata"]["name"], "a-seen");
}

#[tokio::test]
async fn write_content_types_and_resource_versions_are_checked() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let base = "/api/v1/namespaces/default/configmaps";
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#;
    let (code, _, body) = raw(&client, "POST", base, "text/plain", cm).await;
    assert_eq!(
        status_of(&body),
        (
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: \
             application/json, application/yaml, application/vnd.kubernetes.protobuf"
        ),
        "{code}"
    );
    let with_rv =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"12"}}"#;
    let (code, _, body) = raw(&client, "POST", base, "application/json", with_rv).await;
    assert_eq!(code, 500, "{body}");
    assert_eq!(
        body["message"],
        "resourceVersion should not be set on objects to be created"
    );
    assert!(body.get("reason").is_none(), "{body}");
    let (code, _, _) = raw(&client, "POST", base, "application/json", cm).await;
    assert_eq!(code, 201);
    let (code, _, body) = raw(&client, "PATCH", &format!("{base}/x"), "text/plain", "{}").await;
    assert_eq!(
        status_of(&body),
        (415, "UnsupportedMediaType", "415: Unsupported Media Type"),
        "{code}"
    );
    let (code, _, body) = raw(
        &client,
        "PATCH",
        &format!("{base}/x"),
        "application/json",
        "{}",
    )
    .await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );
}

#[tokio::test]
async fn subresources_exist_only_where_the_kind_has_them() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &config_map("x"))
        .await
        .expect("creates");
    for path in [
        "/api/v1/namespaces/default/configmaps/x/status",
        "/api/v1/namespaces/default/configmaps/x/scale",
        "/api/v1/namespaces/default/configmaps/missing/status",
    ] {
        let (code, _, body) = raw(&client, "GET", path, "application/json", "").await;
        assert_eq!(
            status_of(&body),
            (
                404,
                "NotFound",
                "the server could not find the requested resource"
            ),
            "{path}: {code}"
        );
    }
    let (code, _, _) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default",
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 200);
    let (code, _, body) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/status",
        "application/json",
        "",
    )
    .await;
    assert_eq!((code, body["kind"].as_str()), (200, Some("Namespace")));
}

#[tokio::test]
async fn namespace_name_label_is_reset_by_the_server() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<Namespace> = Api::all(env.client());
    let ns: Namespace = serde_json::from_value(json!({
        "metadata": {"name": "team", "labels": {"kubernetes.io/metadata.name": "other"}},
    }))
    .expect("namespace");
    let created = api
        .create(&PostParams::default(), &ns)
        .await
        .expect("creates");
    let label = |ns: &Namespace| {
        ns.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("kubernetes.io/metadata.name"))
            .cloned()
    };
    assert_eq!(label(&created).as_deref(), Some("team"));
    let patched = api
        .patch(
            "team",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"kubernetes.io/metadata.name": "x"}}})),
        )
        .await
        .expect("patches");
    assert_eq!(label(&patched).as_deref(), Some("team"));
    let removed = api
        .patch(
            "team",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"kubernetes.io/metadata.name": null}}})),
        )
        .await
        .expect("patches");
    assert_eq!(label(&removed).as_deref(), Some("team"));
}

#[tokio::test]
async fn health_endpoints_list_their_checks_when_verbose() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    for endpoint in ["readyz", "livez", "healthz"] {
        let (code, content_type, body) = raw(
            &client,
            "GET",
            &format!("/{endpoint}"),
            "application/json",
            "",
        )
        .await;
        assert_eq!((code, body.as_str()), (200, Some("ok")));
        assert_eq!(content_type, "text/plain; charset=utf-8");
        let (code, _, body) = raw(
            &client,
            "GET",
            &format!("/{endpoint}?verbose&exclude=etcd"),
            "application/json",
            "",
        )
        .await;
        let text = body.as_str().unwrap_or_default();
        assert_eq!(code, 200);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.first(), Some(&"[+]ping ok"), "{text}");
        assert!(lines.contains(&"[+]etcd excluded: ok"), "{text}");
        assert_eq!(
            lines.last().copied(),
            Some(format!("{endpoint} check passed").as_str())
        );
    }
    let (_, _, body) = raw(&client, "GET", "/readyz?verbose", "application/json", "").await;
    let text = body.as_str().unwrap_or_default();
    assert!(
        text.contains("[+]informer-sync ok\n[+]shutdown ok\nreadyz check passed"),
        "{text}"
    );
    let (code, _, _) = raw(&client, "GET", "/livez/ping", "application/json", "").await;
    assert_eq!(code, 200);
    let (code, _, _) = raw(&client, "GET", "/livez/nonsense", "application/json", "").await;
    assert_eq!(code, 404);
}

/// A watch from a version older than the retained history gets the watch cache's answer: a
/// 200 stream whose one event is an ERROR with 410 Expired.
#[tokio::test]
async fn watch_from_before_the_history_window_is_expired() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for name in ["a", "b"] {
        api.create(&PostParams::default(), &config_map(name))
            .await
            .expect("creates");
    }
    env.faults().compact();
    let mut stream = api
        .watch(&WatchParams::default(), "1")
        .await
        .expect("watch starts")
        .boxed();
    match stream.next().await {
        Some(Ok(WatchEvent::Error(status))) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
            assert!(
                status.message.starts_with("too old resource version: 1 ("),
                "{}",
                status.message
            );
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}
