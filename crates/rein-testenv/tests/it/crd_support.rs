//! Helpers shared by the CRD tests: raw requests that keep the status code and the whole
//! body, CRD bodies built from the fixtures, and bounded waits on watch streams.

use std::time::Duration;

use futures::{Stream, StreamExt};
use http_body_util::BodyExt;
use kube_client::api::WatchEvent;
use rein_testenv::TestEnv;
use serde_json::{Value, json};

/// How long any single wait in these tests may take.
pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// The CRD collection path.
pub(crate) const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// The widgets fixture: a valid two-version CRD (`widgets.rein.example.com`).
pub(crate) fn widgets() -> Value {
    serde_saphyr::from_str(include_str!("../fixtures/crd/widgets-crd.yaml")).expect("fixture")
}

/// A valid one-version CRD for `plural.group` of kind `kind` (namespaced, status subresource).
pub(crate) fn simple(group: &str, plural: &str, kind: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                }},
                "subresources": {"status": {}},
            }],
        },
    })
}

/// Sends a request and answers the status code and the JSON body (`Null` when empty).
pub(crate) async fn raw(
    env: &TestEnv,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    raw_typed(env, method, path, body, "application/json").await
}

/// [`raw`] with a content type (for patches).
pub(crate) async fn raw_typed(
    env: &TestEnv,
    method: &str,
    path: &str,
    body: Option<&Value>,
    content_type: &str,
) -> (u16, Value) {
    let bytes = body
        .map(|b| serde_json::to_vec(b).expect("json"))
        .unwrap_or_default();
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(kube_client::client::Body::from(bytes))
        .expect("request");
    let response = env.client().send(request).await.expect("an answer");
    let code = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("the body")
        .to_bytes();
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            // Go's `http.NotFound`, as kube-apiserver answers for a resource no CRD serves.
            if code == 404 && bytes.as_ref() == b"404 page not found\n" {
                return Value::String(String::from_utf8_lossy(&bytes).into_owned());
            }
            panic!(
                "{method} {path}: not JSON ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        })
    };
    (code, value)
}

/// Creates `crd` and answers the code and body.
pub(crate) async fn create_crd(env: &TestEnv, crd: &Value) -> (u16, Value) {
    raw(env, "POST", CRDS, Some(crd)).await
}

/// The causes of a 422 answer as (reason, field, message) triples.
pub(crate) fn causes(status: &Value) -> Vec<(String, String, String)> {
    status["details"]["causes"]
        .as_array()
        .unwrap_or_else(|| panic!("no causes in {status}"))
        .iter()
        .map(|c| {
            let s = |f: &str| c[f].as_str().unwrap_or_default().to_string();
            (s("reason"), s("field"), s("message"))
        })
        .collect()
}

/// Asserts that `status` is a 422 Invalid CustomResourceDefinition answer for `name` with a
/// cause at `field` of `reason` whose message is `message`.
pub(crate) fn assert_cause(status: &Value, name: &str, field: &str, reason: &str, message: &str) {
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["code"], 422, "{status}");
    assert_eq!(status["reason"], "Invalid", "{status}");
    assert_eq!(status["details"]["name"], name, "{status}");
    assert_eq!(
        status["details"]["group"], "apiextensions.k8s.io",
        "{status}"
    );
    assert_eq!(
        status["details"]["kind"], "CustomResourceDefinition",
        "{status}"
    );
    let prefix = format!("CustomResourceDefinition.apiextensions.k8s.io \"{name}\" is invalid: ");
    let text = status["message"].as_str().unwrap_or_default();
    assert!(text.starts_with(&prefix), "{text}");
    assert!(text.contains(&format!("{field}: {message}")), "{text}");
    let all = causes(status);
    assert!(
        all.iter()
            .any(|(r, f, m)| r == reason && f == field && m == message),
        "no cause {reason} at {field} with {message:?} in {all:#?}"
    );
}

/// The condition `kind` of a CRD as (status, reason).
pub(crate) fn condition(crd: &Value, kind: &str) -> Option<(String, String)> {
    crd["status"]["conditions"]
        .as_array()?
        .iter()
        .find_map(|c| {
            (c["type"] == kind).then(|| {
                (
                    c["status"].as_str().unwrap_or_default().to_string(),
                    c["reason"].as_str().unwrap_or_default().to_string(),
                )
            })
        })
}

/// The next event of a watch, within [`WAIT`].
pub(crate) async fn next_event<S, K>(stream: &mut S) -> WatchEvent<K>
where
    S: Stream<Item = Result<WatchEvent<K>, kube_client::Error>> + Unpin,
{
    tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("a watch event in time")
        .expect("the watch is open")
        .expect("a decodable event")
}
