//! Writes on `pods/ephemeralcontainers`, `namespaces/finalize` and
//! `certificatesigningrequests/approval` go through the admission webhooks, as kube-apiserver
//! sends them: an UPDATE of the parent kind with the subresource named, over real HTTP.

use rein_testenv::TestEnv;
use serde_json::{Value, json};

use super::admission_support::{Webhook, core_rules, deny, entry, install, patch, send};

/// Installs one `Mutating` or `Validating` webhook configuration with one webhook, `hook`.
async fn install_one(env: &TestEnv, kind: &str, hook: &Webhook, rules: Value) {
    let name = if kind == "Mutating" { "m" } else { "v" };
    let webhook = entry(
        &format!("{name}.example.com"),
        hook,
        &format!("/{name}"),
        rules,
        json!({}),
    );
    install(env, kind, name, vec![webhook]).await;
}

#[tokio::test]
async fn ephemeral_containers_are_mutated_by_webhooks_matching_the_subresource() {
    let env = TestEnv::start().await.expect("starts");
    let pods = "/api/v1/namespaces/default/pods";
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    });
    assert_eq!(send(&env, "POST", pods, Some(&pod)).await.code, 201);
    let hook = Webhook::start(|_| {
        patch(json!([{
            "op": "replace", "path": "/spec/ephemeralContainers/0/image",
            "value": "registry.example.com/busybox",
        }]))
    })
    .await;
    let rules = core_rules(&["UPDATE"], &["pods/ephemeralcontainers"]);
    install_one(&env, "Mutating", &hook, rules).await;
    let add = json!([{"op": "add", "path": "/spec/ephemeralContainers", "value": [
        {"name": "debugger", "image": "busybox", "targetContainerName": "app"},
    ]}]);
    let sent = send(
        &env,
        "PATCH",
        &format!("{pods}/p/ephemeralcontainers"),
        Some(&add),
    )
    .await;
    assert_eq!(sent.code, 200, "{}", sent.body);
    assert_eq!(
        sent.body["spec"]["ephemeralContainers"][0]["image"],
        "registry.example.com/busybox"
    );
    let stored = send(&env, "GET", &format!("{pods}/p"), None).await.body;
    assert_eq!(
        stored["spec"]["ephemeralContainers"][0]["image"],
        "registry.example.com/busybox"
    );
    let calls = hook.calls();
    assert_eq!(calls.len(), 1);
    let request = &calls[0];
    assert_eq!(request["operation"], "UPDATE");
    assert_eq!(request["subResource"], "ephemeralcontainers");
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "Pod"})
    );
    assert_eq!(request["resource"]["resource"], "pods");
    assert_eq!(
        request["object"]["spec"]["ephemeralContainers"][0]["image"],
        "busybox"
    );
    assert!(request["oldObject"]["spec"]["ephemeralContainers"].is_null());

    // A write on the Pod itself is not an update of the subresource.
    let labelled = json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]);
    let sent = send(&env, "PATCH", &format!("{pods}/p"), Some(&labelled)).await;
    assert_eq!(sent.code, 200, "{}", sent.body);
    assert_eq!(hook.calls().len(), 1);
}

#[tokio::test]
async fn a_webhook_denies_a_namespace_finalize() {
    let env = TestEnv::start().await.expect("starts");
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
    assert_eq!(
        send(&env, "POST", "/api/v1/namespaces", Some(&ns))
            .await
            .code,
        201
    );
    let hook = Webhook::start(|_| deny(403, "finalizers are pinned")).await;
    let rules = core_rules(&["UPDATE"], &["namespaces/finalize"]);
    install_one(&env, "Validating", &hook, rules).await;
    let mut current = send(&env, "GET", "/api/v1/namespaces/team", None)
        .await
        .body;
    current["spec"]["finalizers"] = json!(["kubernetes", "example.com/keep"]);
    let sent = send(
        &env,
        "PUT",
        "/api/v1/namespaces/team/finalize",
        Some(&current),
    )
    .await;
    assert_eq!(sent.code, 403, "{}", sent.body);
    assert_eq!(
        sent.body,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "admission webhook \"v.example.com\" denied the request: finalizers are pinned",
            "reason": "Forbidden", "code": 403,
        })
    );
    let stored = send(&env, "GET", "/api/v1/namespaces/team", None)
        .await
        .body;
    assert_eq!(stored["spec"]["finalizers"], json!(["kubernetes"]));
    let calls = hook.calls();
    assert_eq!(calls[0]["subResource"], "finalize");
    assert_eq!(calls[0]["kind"]["kind"], "Namespace");
    assert_eq!(
        calls[0]["object"]["spec"]["finalizers"],
        json!(["kubernetes", "example.com/keep"])
    );
}

#[tokio::test]
async fn a_webhook_denies_a_csr_approval() {
    let env = TestEnv::start().await.expect("starts");
    let csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    let key = rcgen::KeyPair::generate().expect("key");
    let request = rcgen::CertificateParams::new(vec!["example.com".to_string()])
        .expect("params")
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem");
    let csr = json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "c"},
        "spec": {
            "request": base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                request.as_bytes(),
            ),
            "signerName": "example.com/signer",
            "usages": ["digital signature"],
        },
    });
    let created = send(&env, "POST", csrs, Some(&csr)).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let hook = Webhook::start(|_| deny(403, "approvals go through review")).await;
    let rules = json!([{
        "operations": ["UPDATE"], "apiGroups": ["certificates.k8s.io"], "apiVersions": ["v1"],
        "resources": ["certificatesigningrequests/approval"],
    }]);
    install_one(&env, "Validating", &hook, rules).await;
    let approve = json!([{"op": "add", "path": "/status/conditions", "value": [
        {"type": "Approved", "status": "True", "reason": "Test"},
    ]}]);
    let sent = send(&env, "PATCH", &format!("{csrs}/c/approval"), Some(&approve)).await;
    assert_eq!(sent.code, 403, "{}", sent.body);
    assert_eq!(
        sent.message(),
        "admission webhook \"v.example.com\" denied the request: approvals go through review"
    );
    let stored = send(&env, "GET", &format!("{csrs}/c"), None).await.body;
    assert_eq!(stored["status"].get("conditions"), None::<&Value>);
    let calls = hook.calls();
    assert_eq!(calls[0]["subResource"], "approval");
    assert_eq!(
        calls[0]["kind"],
        json!({"group": "certificates.k8s.io", "version": "v1", "kind": "CertificateSigningRequest"})
    );
    assert_eq!(
        calls[0]["object"]["status"]["conditions"][0]["type"],
        "Approved"
    );
}
