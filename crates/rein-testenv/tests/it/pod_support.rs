//! Helpers shared by the Pod subresource and deletion tests: raw requests and Pods in a given
//! state.

use k8s_openapi::api::core::v1::Pod;
use kube_client::Client;
use kube_client::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::http_support::send_json;
pub(super) use super::http_support::status_of;

/// A GET of `path` with no body: status, content type and body.
pub(super) async fn get(client: &Client, path: &str) -> (u16, String, Value) {
    raw(client, "GET", path, "application/json", &Value::Null).await
}

/// One raw request: the status code, the `Content-Type` and the body (JSON when it parses,
/// else a JSON string of the text); a `null` body sends none.
pub(super) async fn raw(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: &Value,
) -> (u16, String, Value) {
    let body = (!body.is_null()).then_some(body);
    let answer = send_json(client, method, path, content_type, body).await;
    let body = answer.json_or_text();
    (answer.code, answer.content_type, body)
}

/// A JSON POST.
pub(super) async fn post(client: &Client, path: &str, body: &Value) -> (u16, Value) {
    let (code, _, body) = raw(client, "POST", path, "application/json", body).await;
    (code, body)
}

/// A Pod with one container `app`, labelled `app: <app>`, bound to `node` when given.
pub(super) fn pod(name: &str, app: &str, node: Option<&str>) -> Pod {
    let mut spec = json!({"containers": [{"name": "app", "image": "nginx"}]});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": spec,
    }))
    .expect("valid pod")
}

/// Creates `pod` and, when `ready`, makes it Running with `Ready: True` (as the kubelet would);
/// otherwise Running and not ready.
pub(super) async fn running(api: &Api<Pod>, pod: Pod, ready: bool) -> Pod {
    let name = pod.metadata.name.clone().expect("named");
    api.create(&PostParams::default(), &pod)
        .await
        .expect("creates the pod");
    let status = json!({"status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
    }});
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("sets the pod's status")
}

/// A client that does not retry 429 answers (kube-client's default retries them up to 15
/// times with a growing backoff, as it would against a cluster).
pub(super) fn no_retry(env: &rein_testenv::TestEnv) -> Client {
    let mut config = env.config();
    config.default_retry = false;
    Client::try_from(config).expect("client")
}
