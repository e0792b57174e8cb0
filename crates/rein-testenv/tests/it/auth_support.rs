//! Helpers for the authentication and authorization tests: raw JSON requests and the
//! objects they need.

use kube_client::Client;
use serde_json::{Value, json};

/// POSTs `body` to `path` and returns the answer, or the API error.
pub(super) async fn post(
    client: &Client,
    path: &str,
    body: Value,
) -> Result<Value, kube_client::Error> {
    request(client, http::Method::POST, path, Some(body), &[]).await
}

/// GETs `path`.
pub(super) async fn get(client: &Client, path: &str) -> Result<Value, kube_client::Error> {
    request(client, http::Method::GET, path, None, &[]).await
}

/// Sends a request with extra `headers`.
pub(super) async fn request(
    client: &Client,
    method: http::Method,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Result<Value, kube_client::Error> {
    let mut builder = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let bytes = body
        .map(|b| serde_json::to_vec(&b).unwrap())
        .unwrap_or_default();
    let req = builder
        .header("content-type", "application/json")
        .body(bytes)
        .expect("request");
    client.request::<Value>(req).await
}

/// The HTTP code and message of an API error.
pub(super) fn api_error(err: kube_client::Error) -> (u16, String) {
    match err {
        kube_client::Error::Api(s) => (s.code, s.message.clone()),
        other => panic!("expected an API error, got {other}"),
    }
}

/// Who the client is, by SelfSubjectReview: (username, groups).
pub(super) async fn whoami(client: &Client) -> (String, Vec<String>) {
    let review = post(
        client,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    )
    .await
    .expect("SelfSubjectReview");
    let info = &review["status"]["userInfo"];
    let groups = info["groups"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|g| g.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    (
        info["username"].as_str().unwrap_or_default().to_string(),
        groups,
    )
}

/// Creates the ServiceAccount `namespace/name`.
pub(super) async fn service_account(client: &Client, namespace: &str, name: &str) -> Value {
    post(
        client,
        &format!("/api/v1/namespaces/{namespace}/serviceaccounts"),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}),
    )
    .await
    .expect("creates the service account")
}

/// A token for the ServiceAccount `namespace/name` by TokenRequest.
pub(super) async fn token_for(
    client: &Client,
    namespace: &str,
    name: &str,
    spec: Value,
) -> Result<Value, kube_client::Error> {
    post(
        client,
        &format!("/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}),
    )
    .await
}

/// Creates an RBAC object (`kind` one of Role, ClusterRole, RoleBinding, ClusterRoleBinding).
pub(super) async fn create_rbac(client: &Client, mut obj: Value) -> Value {
    let kind = obj["kind"].as_str().expect("kind").to_string();
    obj["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
    let plural = format!("{}s", kind.to_ascii_lowercase());
    let path = match obj["metadata"]["namespace"].as_str() {
        Some(ns) => format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/{plural}"),
        None => format!("/apis/rbac.authorization.k8s.io/v1/{plural}"),
    };
    post(client, &path, obj)
        .await
        .expect("creates the RBAC object")
}

/// A binding of `role` (`Role` or `ClusterRole`) to `subjects`.
pub(super) fn binding(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    role: (&str, &str),
    subjects: Value,
) -> Value {
    let mut subjects = subjects;
    for subject in subjects.as_array_mut().into_iter().flatten() {
        if matches!(subject["kind"].as_str(), Some("User" | "Group")) {
            subject["apiGroup"] = json!("rbac.authorization.k8s.io");
        }
    }
    let mut meta = json!({"name": name});
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    json!({
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role.0, "name": role.1},
        "subjects": subjects,
    })
}
