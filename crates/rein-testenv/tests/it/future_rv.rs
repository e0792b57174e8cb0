//! Requests from a resourceVersion the server has not reached: lists and streaming watches
//! wait for a write to get there (then answer), or answer kube-apiserver's 504 Timeout with the
//! `ResourceVersionTooLarge` cause; a plain watch starts at once and sends only later changes.

use std::time::Duration;

use futures::StreamExt;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Client;
use kube_client::api::{Api, ListParams, PostParams, VersionMatch, WatchEvent, WatchParams};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

/// Long enough that a waiting request never runs out of time in these tests.
const LONG: Duration = Duration::from_secs(120);
/// Short, for the requests that are meant to run out of time.
const SHORT: Duration = Duration::from_millis(50);
/// Bound on how long a test waits for anything before failing.
const BOUND: Duration = Duration::from_secs(30);

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}})).expect("cm")
}

/// A client that shows every answer as it is: kube-client's default policy retries 504s up to
/// 15 times, honouring `Retry-After`.
fn no_retry(env: &TestEnv) -> Client {
    let mut config = env.config();
    config.default_retry = false;
    Client::try_from(config).expect("client without retries")
}

async fn env_waiting(wait: Duration) -> TestEnv {
    TestEnv::builder()
        .too_large_rv_wait(wait)
        .start()
        .await
        .expect("starts")
}

/// Sends a GET and answers the status, the `Retry-After` header and the whole body as JSON.
async fn get(client: &Client, uri: &str) -> (StatusCode, Option<String>, Value) {
    let req = Request::builder()
        .uri(uri)
        .body(Vec::new().into())
        .expect("request");
    let resp = tokio::time::timeout(BOUND, client.send(req))
        .await
        .expect("an answer in time")
        .expect("an answer");
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    let json = serde_json::from_slice(&body).expect("JSON body");
    (status, retry_after, json)
}

/// Waits (on a condition, bounded) until `n` requests wait for a resourceVersion.
async fn until_waiting(env: &TestEnv, n: usize) {
    tokio::time::timeout(BOUND, async {
        while env.requests_waiting_for_resource_version() != n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the request waits for the resourceVersion");
}

/// The checks every too-large answer must pass, as client-go's
/// `IsTooLargeResourceVersion` reads them.
fn assert_too_large(status: &Value, requested: u64, current: u64) {
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["code"], 504, "{status}");
    assert_eq!(status["reason"], "Timeout", "{status}");
    assert_eq!(
        status["message"],
        format!("Timeout: Too large resource version: {requested}, current: {current}"),
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}])
    );
    assert_eq!(status["details"]["retryAfterSeconds"], 1, "{status}");
}

#[tokio::test]
async fn a_list_from_a_future_version_is_answered_once_a_write_gets_there() {
    let env = env_waiting(LONG).await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for (i, matching) in ["&resourceVersionMatch=NotOlderThan", ""]
        .iter()
        .enumerate()
    {
        let target = env.resource_version() + 1;
        let uri =
            format!("/api/v1/namespaces/default/configmaps?resourceVersion={target}{matching}");
        let client = env.client();
        let list = tokio::spawn(async move { get(&client, &uri).await });
        until_waiting(&env, 1).await;
        let name = format!("late-{i}");
        cms.create(&PostParams::default(), &cm(&name))
            .await
            .expect("creates");
        let (status, _, body) = tokio::time::timeout(BOUND, list)
            .await
            .expect("answered once the write landed")
            .expect("joins");
        assert_eq!(status, StatusCode::OK, "{body}");
        let names: Vec<&str> = body["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str())
            .collect();
        assert!(names.contains(&name.as_str()), "{names:?}");
        let listed: u64 = body["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|rv| rv.parse().ok())
            .expect("list resourceVersion");
        assert!(listed >= target, "{listed} < {target}");
        assert_eq!(env.requests_waiting_for_resource_version(), 0);
    }
}

#[tokio::test]
async fn a_list_from_a_version_never_reached_answers_504_too_large() {
    let env = env_waiting(SHORT).await;
    let client = no_retry(&env);
    let current = env.resource_version();
    let requested = current + 100;
    for matching in [
        "&resourceVersionMatch=NotOlderThan",
        "",
        "&resourceVersionMatch=Exact",
    ] {
        let uri =
            format!("/api/v1/namespaces/default/configmaps?resourceVersion={requested}{matching}");
        let (status, retry_after, body) = get(&client, &uri).await;
        assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{uri}: {body}");
        assert_eq!(retry_after.as_deref(), Some("1"));
        assert_too_large(&body, requested, current);
    }
    // kube-client sees the typed error.
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let err = cms
        .list(
            &ListParams::default()
                .at(&requested.to_string())
                .matching(VersionMatch::NotOlderThan),
        )
        .await
        .expect_err("too large");
    match err {
        kube_client::Error::Api(status) => {
            assert_eq!(status.code, 504);
            assert_eq!(status.reason, "Timeout");
        }
        other => panic!("expected a Status, got {other:?}"),
    }
}

#[tokio::test]
async fn a_streaming_watch_from_a_future_version_waits_for_it() {
    let env = env_waiting(LONG).await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    cms.create(&PostParams::default(), &cm("early"))
        .await
        .expect("creates");
    let target = env.resource_version() + 1;
    let watcher = {
        let cms = cms.clone();
        tokio::spawn(async move {
            cms.watch(&WatchParams::streaming_lists(), &target.to_string())
                .await
                .map(StreamExt::boxed)
        })
    };
    until_waiting(&env, 1).await;
    cms.create(&PostParams::default(), &cm("late"))
        .await
        .expect("creates");
    let mut stream = tokio::time::timeout(BOUND, watcher)
        .await
        .expect("starts once the write landed")
        .expect("joins")
        .expect("watches");
    let mut added = Vec::new();
    loop {
        let event = tokio::time::timeout(BOUND, stream.next())
            .await
            .expect("an event in time")
            .expect("open")
            .expect("well formed");
        match event {
            WatchEvent::Added(c) => added.push(c.metadata.name.expect("name")),
            WatchEvent::Bookmark(b) => {
                assert_eq!(
                    b.metadata
                        .annotations
                        .get("k8s.io/initial-events-end")
                        .map(String::as_str),
                    Some("true")
                );
                let at: u64 = b.metadata.resource_version.parse().expect("numeric");
                assert!(at >= target, "{at} < {target}");
                break;
            }
            WatchEvent::Error(e) => panic!("unexpected error {e:?}"),
            WatchEvent::Modified(_) | WatchEvent::Deleted(_) => panic!("unexpected change"),
        }
    }
    added.retain(|n: &String| n != crate::ROOT_CA);
    assert_eq!(added, ["early", "late"]);
}

#[tokio::test]
async fn a_streaming_watch_from_a_version_never_reached_gets_a_too_large_error_event() {
    let env = env_waiting(SHORT).await;
    let current = env.resource_version();
    let requested = current + 100;
    let uri = format!(
        "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true\
         &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion={requested}"
    );
    // As kube-apiserver: the watch is accepted (200) and its one event is the error; then
    // the stream ends.
    let (status, _, event) = get(&no_retry(&env), &uri).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(event["type"], "ERROR", "{event}");
    assert_too_large(&event["object"], requested, current);
}

#[tokio::test]
async fn a_plain_watch_from_a_future_version_starts_at_once_and_sends_later_changes() {
    // The long wait would hold the watch if it waited: it must not.
    let env = env_waiting(LONG).await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let from = env.resource_version() + 2;
    let mut stream =
        tokio::time::timeout(BOUND, cms.watch(&WatchParams::default(), &from.to_string()))
            .await
            .expect("starts without waiting")
            .expect("watches")
            .boxed();
    assert_eq!(env.requests_waiting_for_resource_version(), 0);
    for name in ["at-1", "at-2", "after"] {
        cms.create(&PostParams::default(), &cm(name))
            .await
            .expect("creates");
    }
    // The changes at or before the watch's version are not sent.
    let event = tokio::time::timeout(BOUND, stream.next())
        .await
        .expect("an event in time")
        .expect("open")
        .expect("well formed");
    match event {
        WatchEvent::Added(c) => {
            assert_eq!(c.metadata.name.as_deref(), Some("after"));
            let rv: u64 = c
                .metadata
                .resource_version
                .and_then(|rv| rv.parse().ok())
                .expect("rv");
            assert_eq!(rv, from + 1);
        }
        _ => panic!("expected ADDED after"),
    }
}
