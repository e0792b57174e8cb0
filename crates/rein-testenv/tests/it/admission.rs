//! Admission webhooks called by rein-testenv over HTTPS, as kube-apiserver calls them:
//! mutation, denial, warnings, failures under both failure policies, reinvocation, dry run,
//! selectors and rules on subresources.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rein_testenv::TestEnv;
use serde_json::{Value, json};

use crate::admission_support::{
    Reply, Webhook, allow, config_map, core_rules, deny, entry, install, install_one, patch, send,
};
use crate::http_support::send_json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn a_mutating_webhook_patches_the_created_object() {
    let env = TestEnv::start().await.expect("starts");
    let hook = Webhook::start(|_| {
        patch(json!([{"op": "add", "path": "/metadata/annotations", "value": {"mutated": "yes"}}]))
    })
    .await;
    let rules = core_rules(&["CREATE"], &["configmaps"]);
    install_one(&env, "Mutating", &hook, rules).await;

    let sent = send(&env, "POST", CMS, Some(&config_map("a", json!({})))).await;
    assert_eq!(sent.code, 201, "{}", sent.body);
    assert_eq!(sent.body["metadata"]["annotations"]["mutated"], "yes");
    let got = send(&env, "GET", &format!("{CMS}/a"), None).await;
    assert_eq!(got.body["metadata"]["annotations"]["mutated"], "yes");

    let calls = hook.calls();
    assert_eq!(calls.len(), 1);
    let req = &calls[0];
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(
        req["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        req["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(req["namespace"], "default");
    assert_eq!(req["name"], "a");
    assert_eq!(req["object"]["data"]["k"], "v");
    assert_eq!(req["oldObject"], Value::Null);
    assert_eq!(req["dryRun"], false);
    assert_eq!(req["options"]["kind"], "CreateOptions");
}

#[tokio::test]
async fn a_denial_answers_the_webhooks_code_and_message_and_stores_nothing() {
    let env = TestEnv::start().await.expect("starts");
    let hook = Webhook::start(|_| deny(403, "widgets may not be blue")).await;
    let rules = core_rules(&["CREATE", "UPDATE", "DELETE"], &["configmaps"]);
    install_one(&env, "Validating", &hook, rules).await;

    let sent = send(&env, "POST", CMS, Some(&config_map("a", json!({})))).await;
    assert_eq!(sent.code, 403, "{}", sent.body);
    assert_eq!(
        sent.message(),
        "admission webhook \"v.example.com\" denied the request: widgets may not be blue"
    );
    assert_eq!(sent.body["reason"], "Forbidden");
    assert_eq!(send(&env, "GET", &format!("{CMS}/a"), None).await.code, 404);
}

#[tokio::test]
async fn a_denial_without_a_message_says_so_and_is_at_least_400() {
    let env = TestEnv::start().await.expect("starts");
    let hook =
        Webhook::start(|_| Reply::Review(json!({"allowed": false, "status": {"code": 200}}))).await;
    let rules = core_rules(&["CREATE"], &["configmaps"]);
    install_one(&env, "Validating", &hook, rules).await;

    let sent = send(&env, "POST", CMS, Some(&config_map("a", json!({})))).await;
    assert_eq!(sent.code, 400);
    assert_eq!(
        sent.message(),
        "admission webhook \"v.example.com\" denied the request without explanation"
    );
}

#[tokio::test]
async fn updates_and_deletes_are_admitted_and_a_denied_delete_keeps_the_object() {
    let env = TestEnv::start().await.expect("starts");
    assert_eq!(
        send(&env, "POST", CMS, Some(&config_map("a", json!({}))))
            .await
            .code,
        201
    );
    let hook = Webhook::start(|req| {
        if req["operation"] == "DELETE" {
            deny(403, "keep it")
        } else {
            allow()
        }
    })
    .await;
    let rules = core_rules(&["UPDATE", "DELETE"], &["configmaps"]);
    install_one(&env, "Validating", &hook, rules).await;

    let patched = send(
        &env,
        "PATCH",
        &format!("{CMS}/a"),
        Some(&json!([{"op": "replace", "path": "/data/k", "value": "w"}])),
    )
    .await;
    assert_eq!(patched.code, 200, "{}", patched.body);
    let deleted = send(&env, "DELETE", &format!("{CMS}/a"), None).await;
    assert_eq!(deleted.code, 403);
    assert_eq!(send(&env, "GET", &format!("{CMS}/a"), None).await.code, 200);

    let calls = hook.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["operation"], "UPDATE");
    assert_eq!(calls[0]["object"]["data"]["k"], "w");
    assert_eq!(calls[0]["oldObject"]["data"]["k"], "v");
    assert_eq!(calls[1]["operation"], "DELETE");
    assert_eq!(calls[1]["object"], Value::Null);
    assert_eq!(calls[1]["oldObject"]["metadata"]["name"], "a");
    assert_eq!(calls[1]["options"]["kind"], "DeleteOptions");
}

#[tokio::test]
async fn warnings_come_back_as_warning_headers() {
    let env = TestEnv::start().await.expect("starts");
    let hook =
        Webhook::start(|_| Reply::Review(json!({"allowed": true, "warnings": ["mind the gap"]})))
            .await;
    let rules = core_rules(&["CREATE"], &["configmaps"]);
    install_one(&env, "Validating", &hook, rules).await;

    let sent = send(&env, "POST", CMS, Some(&config_map("a", json!({})))).await;
    assert_eq!(sent.code, 201);
    assert_eq!(sent.warnings, vec!["299 - \"mind the gap\"".to_string()]);
}

#[tokio::test]
async fn a_webhook_that_times_out_fails_the_write_under_fail_and_not_under_ignore() {
    let env = TestEnv::start().await.expect("starts");
    let hook = Webhook::start(|_| Reply::Hang).await;
    let rules = core_rules(&["CREATE"], &["configmaps"]);
    let extra = json!({"timeoutSeconds": 1, "failurePolicy": "Fail"});
    install(
        &env,
        "Validating",
        "v",
        vec![entry("slow.example.com", &hook, "/v", rules.clone(), extra)],
    )
    .await;

    let started = std::time::Instant::now();
    let sent = send(&env, "POST", CMS, Some(&config_map("a", json!({})))).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(sent.code, 500, "{}", sent.body);
    assert_eq!(sent.body["reason"], "InternalError");
    assert_eq!(
        sent.message(),
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to \
             call webhook: Post \"https://{}/v?timeout=1s\": context deadline exceeded",
            hook.addr
        )
    );
    assert_eq!(send(&env, "GET", &format!("{CMS}/a"), None).await.code, 404);

    let extra = json!({"timeoutSeconds": 1, "failurePolicy": "Ignore"});
    install(
        &env,
        "Validating",
        "w",
        vec![entry("slow2.example.com", &hook, "/v", rules, extra)],
    )
    .await;
    send(
        &env,
        "DELETE",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/v",
        None,
    )
    .await;
    let sent = send(&env, "POST", CMS, Some(&config_map("a", json!({})))).await;
    assert_eq!(sent.code, 201, "{}", sent.body);
}

#[tokio::test]
async fn a_webhook_that_is_down_fails_closed_or_open() {
    let env = TestEnv::start().await.expect("starts");
    let hook = Webhook::start(|_| allow()).await;
    let down = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        listener.local_addr().expect("an address")
    };
    let mut closed = entry(
        "down.example.com",
        &hook,
        "/v",
        core_rules(&["CREATE"], &["configmaps"]),
        json!({}),
    );
    closed["clientConfig"]["url"] = json!(format!("https://{down}/v"));
    install(&env, "Validating", "v", vec![closed.clone()]).await;

    let sent = send(&env, "POST", CMS, Some(&config_map("a", json!({})))).await;
    assert_eq!(sent.code, 500);
    assert_eq!(
        sent.message(),
        format!(
            "Internal error occurred: failed calling webhook \"down.example.com\": failed to call \
             webhook: Post \"https://{down}/v?timeout=10s\": dial tcp {down}: connect: connection \
             refused"
        )
    );

    closed["failurePolicy"] = json!("Ignore");
    install(&env, "Validating", "w", vec![closed]).await;
    send(
        &env,
        "DELETE",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/v",
        None,
    )
    .await;
    assert_eq!(
        send(&env, "POST", CMS, Some(&config_map("a", json!({}))))
            .await
            .code,
        201
    );
}

#[tokio::test]
async fn garbage_closed_connections_and_wrong_answers_get_kube_apiservers_errors() {
    let env = TestEnv::start().await.expect("starts");
    let cases: Vec<(Reply, &str)> = vec![
        (
            Reply::Raw(200, "garbage".into()),
            "failed to call webhook: couldn't get version/kind; json parse error",
        ),
        (Reply::Close, "EOF"),
        (
            Reply::Review(json!({"uid": "nope", "allowed": true})),
            "received invalid webhook response: expected response.uid=",
        ),
        (
            Reply::Raw(
                200,
                json!({"apiVersion": "v1", "kind": "Status"}).to_string(),
            ),
            "received invalid webhook response: webhook response was absent",
        ),
        (
            Reply::Raw(500, "boom".into()),
            "an error on the server (\"boom\") has prevented the request from succeeding",
        ),
        (
            Reply::Review(json!({"allowed": true, "patch": "W10="})),
            "received invalid webhook response: webhook returned response.patch but not response.patchType",
        ),
        (
            Reply::Review(json!({"allowed": true, "patch": "W10=", "patchType": "Merge"})),
            "unsupported patch type \"Merge\"",
        ),
    ];
    for (i, (reply, wanted)) in cases.into_iter().enumerate() {
        let hook = Webhook::start(move |_| reply.clone()).await;
        let name = format!("c{i}");
        install(
            &env,
            "Mutating",
            &name,
            vec![entry(
                &format!("{name}.example.com"),
                &hook,
                "/m",
                core_rules(&["CREATE"], &["configmaps"]),
                json!({}),
            )],
        )
        .await;
        let sent = send(&env, "POST", CMS, Some(&config_map(&name, json!({})))).await;
        assert_eq!(sent.code, 500, "case {i}: {}", sent.body);
        let prefix =
            format!("Internal error occurred: failed calling webhook \"{name}.example.com\": ");
        assert!(
            sent.message().starts_with(&prefix),
            "case {i}: {}",
            sent.message()
        );
        assert!(
            sent.message().contains(wanted),
            "case {i}: {}",
            sent.message()
        );
        send(
            &env,
            "DELETE",
            &format!("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{name}"),
            None,
        )
        .await;
    }
}

#[tokio::test]
async fn a_ca_bundle_that_did_not_sign_the_certificate_is_refused() {
    let env = TestEnv::start().await.expect("starts");
    let hook = Webhook::start(|_| allow()).await;
    let other = Webhook::start(|_| allow()).await;
    let mut e = entry(
        "tls.example.com",
        &hook,
        "/v",
        core_rules(&["CREATE"], &["configmaps"]),
        json!({}),
    );
    e["clientConfig"]["caBundle"] = json!(other.ca_bundle);
    install(&env, "Validating", "v", vec![e]).await;
    let sent = send(&env, "POST", CMS, Some(&config_map("a", json!({})))).await;
    assert_eq!(sent.code, 500);
    assert!(
        sent.message()
            .contains("x509: certificate signed by unknown authority"),
        "{}",
        sent.message()
    );
    assert!(hook.calls().is_empty());
}

#[tokio::test]
async fn a_service_reference_is_called_at_its_mapped_address() {
    let hook = Webhook::start(|_| deny(400, "from the service")).await;
    let env = TestEnv::builder()
        .webhook_service("webhooks", "hook", 8443, hook.addr)
        .start()
        .await
        .expect("starts");
    let mut e = entry(
        "svc.example.com",
        &hook,
        "",
        core_rules(&["CREATE"], &["configmaps"]),
        json!({}),
    );
    e["clientConfig"] = json!({
        "service": {"namespace": "webhooks", "name": "hook", "path": "/validate", "port": 8443},
        "caBundle": hook.ca_bundle,
    });
    install(&env, "Validating", "v", vec![e]).await;
    let sent = send(&env, "POST", CMS, Some(&config_map("a", json!({})))).await;
    assert_eq!(sent.code, 400);
    assert_eq!(
        sent.message(),
        "admission webhook \"svc.example.com\" denied the request: from the service"
    );
}

#[tokio::test]
async fn if_needed_webhooks_are_called_again_after_a_later_change() {
    let env = TestEnv::start().await.expect("starts");
    let first_calls = Arc::new(AtomicUsize::new(0));
    let first = Webhook::start({
        let n = first_calls.clone();
        move |_| {
            n.fetch_add(1, Ordering::SeqCst);
            allow()
        }
    })
    .await;
    let second = Webhook::start(|req| {
        if req["object"]["metadata"]["labels"]["second"].is_null() {
            patch(json!([{"op": "add", "path": "/metadata/labels/second", "value": "yes"}]))
        } else {
            allow()
        }
    })
    .await;
    let rules = core_rules(&["CREATE"], &["configmaps"]);
    install(
        &env,
        "Mutating",
        "a",
        vec![entry(
            "first.example.com",
            &first,
            "/m",
            rules.clone(),
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;
    install(
        &env,
        "Mutating",
        "b",
        vec![entry(
            "second.example.com",
            &second,
            "/m",
            rules,
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;

    let sent = send(&env, "POST", CMS, Some(&config_map("a", json!({"x": "y"})))).await;
    assert_eq!(sent.code, 201, "{}", sent.body);
    assert_eq!(sent.body["metadata"]["labels"]["second"], "yes");
    // The first is called again after the second changed the object; the second, which
    // changed it itself, is not.
    assert_eq!(first_calls.load(Ordering::SeqCst), 2);
    assert_eq!(second.calls().len(), 1);
    assert_eq!(
        first.calls()[1]["object"]["metadata"]["labels"]["second"],
        "yes"
    );
}

#[tokio::test]
async fn never_policy_webhooks_are_not_called_again() {
    let env = TestEnv::start().await.expect("starts");
    let first = Webhook::start(|_| allow()).await;
    let second =
        Webhook::start(|_| patch(json!([{"op": "add", "path": "/data/z", "value": "1"}]))).await;
    let rules = core_rules(&["CREATE"], &["configmaps"]);
    install(
        &env,
        "Mutating",
        "a",
        vec![entry(
            "first.example.com",
            &first,
            "/m",
            rules.clone(),
            json!({}),
        )],
    )
    .await;
    install(
        &env,
        "Mutating",
        "b",
        vec![entry("second.example.com", &second, "/m", rules, json!({}))],
    )
    .await;
    assert_eq!(
        send(&env, "POST", CMS, Some(&config_map("a", json!({}))))
            .await
            .code,
        201
    );
    assert_eq!(first.calls().len(), 1);
}

#[tokio::test]
async fn a_dry_run_refuses_webhooks_with_side_effects_and_tells_the_others() {
    let env = TestEnv::start().await.expect("starts");
    let hook = Webhook::start(|_| allow()).await;
    let rules = core_rules(&["CREATE"], &["configmaps"]);
    install(
        &env,
        "Validating",
        "v",
        vec![entry(
            "fx.example.com",
            &hook,
            "/v",
            rules.clone(),
            json!({"sideEffects": "Some"}),
        )],
    )
    .await;

    let dry = format!("{CMS}?dryRun=All");
    let sent = send(&env, "POST", &dry, Some(&config_map("a", json!({})))).await;
    assert_eq!(sent.code, 400);
    assert_eq!(sent.body["reason"], "BadRequest");
    assert_eq!(
        sent.message(),
        "admission webhook \"fx.example.com\" does not support dry run"
    );
    assert!(hook.calls().is_empty());
    assert_eq!(
        send(&env, "POST", CMS, Some(&config_map("a", json!({}))))
            .await
            .code,
        201
    );

    send(
        &env,
        "DELETE",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/v",
        None,
    )
    .await;
    install(
        &env,
        "Validating",
        "w",
        vec![entry(
            "safe.example.com",
            &hook,
            "/v",
            rules,
            json!({"sideEffects": "NoneOnDryRun"}),
        )],
    )
    .await;
    let sent = send(&env, "POST", &dry, Some(&config_map("b", json!({})))).await;
    assert_eq!(sent.code, 201, "{}", sent.body);
    let calls = hook.calls();
    assert_eq!(calls.last().expect("called")["dryRun"], true);
    assert_eq!(send(&env, "GET", &format!("{CMS}/b"), None).await.code, 404);
}

#[tokio::test]
async fn namespace_and_object_selectors_choose_what_is_sent() {
    let env = TestEnv::start().await.expect("starts");
    for (ns, labels) in [("watched", json!({"admit": "yes"})), ("quiet", json!({}))] {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}});
        assert_eq!(
            send(&env, "POST", "/api/v1/namespaces", Some(&body))
                .await
                .code,
            201
        );
    }
    let hook = Webhook::start(|_| deny(403, "selected")).await;
    let extra = json!({
        "namespaceSelector": {"matchLabels": {"admit": "yes"}},
        "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
    });
    install(
        &env,
        "Validating",
        "v",
        vec![entry(
            "sel.example.com",
            &hook,
            "/v",
            core_rules(&["CREATE"], &["configmaps"]),
            extra,
        )],
    )
    .await;

    let create = |ns: &str| format!("/api/v1/namespaces/{ns}/configmaps");
    assert_eq!(
        send(
            &env,
            "POST",
            &create("quiet"),
            Some(&config_map("a", json!({})))
        )
        .await
        .code,
        201
    );
    assert_eq!(
        send(
            &env,
            "POST",
            &create("watched"),
            Some(&config_map("a", json!({"skip": "1"})))
        )
        .await
        .code,
        201
    );
    assert_eq!(
        send(
            &env,
            "POST",
            &create("watched"),
            Some(&config_map("b", json!({})))
        )
        .await
        .code,
        403
    );
    assert_eq!(hook.calls().len(), 1);
}

#[tokio::test]
async fn rules_on_subresources_match_only_what_they_name() {
    let env = TestEnv::start().await.expect("starts");
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    });
    let pods = "/api/v1/namespaces/default/pods";
    assert_eq!(send(&env, "POST", pods, Some(&pod)).await.code, 201);
    let status_hook = Webhook::start(|_| deny(422, "no status for you")).await;
    let any_hook = Webhook::start(|_| allow()).await;
    install(
        &env,
        "Validating",
        "s",
        vec![entry(
            "status.example.com",
            &status_hook,
            "/v",
            core_rules(&["UPDATE"], &["pods/status"]),
            json!({}),
        )],
    )
    .await;
    install(
        &env,
        "Validating",
        "t",
        vec![entry(
            "star.example.com",
            &any_hook,
            "/v",
            core_rules(&["UPDATE"], &["*"]),
            json!({}),
        )],
    )
    .await;

    let label = json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]);
    assert_eq!(
        send(&env, "PATCH", &format!("{pods}/p"), Some(&label))
            .await
            .code,
        200
    );
    assert!(status_hook.calls().is_empty());

    let phase = json!([{"op": "add", "path": "/status/phase", "value": "Running"}]);
    let sent = send(&env, "PATCH", &format!("{pods}/p/status"), Some(&phase)).await;
    assert_eq!(sent.code, 422, "{}", sent.body);
    assert_eq!(
        sent.message(),
        "admission webhook \"status.example.com\" denied the request: no status for you"
    );
    let calls = status_hook.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["subResource"], "status");
    assert_eq!(calls[0]["requestSubResource"], "status");
    // `*` names no subresource.
    assert_eq!(any_hook.calls().len(), 1);
}

#[tokio::test]
async fn webhook_configurations_themselves_are_never_sent_to_webhooks() {
    let env = TestEnv::start().await.expect("starts");
    let hook = Webhook::start(|_| deny(403, "everything")).await;
    let rules = json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]);
    install(
        &env,
        "Validating",
        "v",
        vec![entry("all.example.com", &hook, "/v", rules, json!({}))],
    )
    .await;
    let deleted = send(
        &env,
        "DELETE",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/v",
        None,
    )
    .await;
    assert_eq!(deleted.code, 200, "{}", deleted.body);
    assert!(hook.calls().is_empty());
}

/// A CRD `gizmos.test.rein.dev` served in `v1` (storage) and `v2`, whose spec requires
/// `image`.
fn gizmos() -> Value {
    let schema = json!({"openAPIV3Schema": {
        "type": "object",
        "properties": {"spec": {
            "type": "object", "required": ["image"],
            "properties": {"image": {"type": "string"}, "size": {"type": "integer"}},
        }},
    }});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.test.rein.dev"},
        "spec": {
            "group": "test.rein.dev", "scope": "Namespaced",
            "names": {"plural": "gizmos", "kind": "Gizmo"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema},
            ],
        },
    })
}

/// Creates the gizmos CRD and waits until it is served.
async fn install_gizmos(env: &TestEnv) {
    let (code, body) = crate::crd_support::create_crd(env, &gizmos()).await;
    assert_eq!(code, 201, "{body}");
    for _ in 0..200 {
        if send(env, "GET", GIZMOS_V1, None).await.code == 200 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("gizmos are never served");
}

const GIZMOS_V1: &str = "/apis/test.rein.dev/v1/namespaces/default/gizmos";
const GIZMOS_V2: &str = "/apis/test.rein.dev/v2/namespaces/default/gizmos";

fn gizmo(version: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("test.rein.dev/{version}"), "kind": "Gizmo",
        "metadata": {"name": name}, "spec": spec,
    })
}

fn gizmo_rules(versions: &[&str]) -> Value {
    json!([{
        "operations": ["CREATE"], "apiGroups": ["test.rein.dev"], "apiVersions": versions,
        "resources": ["gizmos"], "scope": "Namespaced",
    }])
}

#[tokio::test]
async fn a_mutating_webhook_may_fill_in_what_validation_requires() {
    let env = TestEnv::start().await.expect("starts");
    install_gizmos(&env).await;
    let hook = Webhook::start(|req| {
        if req["object"]["spec"]["image"].is_null() {
            patch(json!([{"op": "add", "path": "/spec/image", "value": "nginx"}]))
        } else {
            allow()
        }
    })
    .await;
    install(
        &env,
        "Mutating",
        "m",
        vec![entry(
            "image.example.com",
            &hook,
            "/m",
            gizmo_rules(&["v1"]),
            json!({}),
        )],
    )
    .await;

    let sent = send(
        &env,
        "POST",
        GIZMOS_V1,
        Some(&gizmo("v1", "a", json!({"size": 1}))),
    )
    .await;
    assert_eq!(sent.code, 201, "{}", sent.body);
    assert_eq!(sent.body["spec"]["image"], "nginx");
    // Without the webhook, the same object is invalid.
    send(
        &env,
        "DELETE",
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/m",
        None,
    )
    .await;
    let sent = send(
        &env,
        "POST",
        GIZMOS_V1,
        Some(&gizmo("v1", "b", json!({"size": 1}))),
    )
    .await;
    assert_eq!(sent.code, 422, "{}", sent.body);
}

#[tokio::test]
async fn match_policy_equivalent_sends_the_object_in_the_version_the_rules_name() {
    let env = TestEnv::start().await.expect("starts");
    install_gizmos(&env).await;
    let equivalent = Webhook::start(|_| allow()).await;
    let exact = Webhook::start(|_| allow()).await;
    install(
        &env,
        "Validating",
        "v",
        vec![
            entry(
                "equivalent.example.com",
                &equivalent,
                "/v",
                gizmo_rules(&["v1"]),
                json!({}),
            ),
            entry(
                "exact.example.com",
                &exact,
                "/v",
                gizmo_rules(&["v1"]),
                json!({"matchPolicy": "Exact"}),
            ),
        ],
    )
    .await;

    let sent = send(
        &env,
        "POST",
        GIZMOS_V2,
        Some(&gizmo("v2", "a", json!({"image": "x"}))),
    )
    .await;
    assert_eq!(sent.code, 201, "{}", sent.body);
    assert!(exact.calls().is_empty());
    let calls = equivalent.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["kind"]["version"], "v1");
    assert_eq!(calls[0]["resource"]["version"], "v1");
    assert_eq!(calls[0]["requestKind"]["version"], "v2");
    assert_eq!(calls[0]["requestResource"]["version"], "v2");
    assert_eq!(calls[0]["object"]["apiVersion"], "test.rein.dev/v1");
}

#[tokio::test]
async fn a_patch_written_as_an_array_of_bytes_is_applied() {
    let env = TestEnv::start().await.expect("starts");
    let hook = Webhook::start(|_| {
        let ops = json!([{"op": "add", "path": "/data/added", "value": "1"}]).to_string();
        Reply::Review(json!({"allowed": true, "patchType": "JSONPatch", "patch": ops.into_bytes()}))
    })
    .await;
    install(
        &env,
        "Mutating",
        "m",
        vec![entry(
            "bytes.example.com",
            &hook,
            "/m",
            core_rules(&["CREATE"], &["configmaps"]),
            json!({}),
        )],
    )
    .await;
    let sent = send(&env, "POST", CMS, Some(&config_map("a", json!({})))).await;
    assert_eq!(sent.code, 201, "{}", sent.body);
    assert_eq!(sent.body["data"]["added"], "1");
}

#[tokio::test]
async fn match_conditions_skip_the_webhook_or_fail_the_request() {
    let env = TestEnv::start().await.expect("starts");
    let hook = Webhook::start(|_| deny(403, "called")).await;
    let rules = core_rules(&["CREATE"], &["configmaps"]);
    let conditions = json!({"matchConditions": [
        {"name": "not-skipped", "expression": "object.metadata.name != 'skip-me'"},
        {"name": "creates", "expression": "request.operation == 'CREATE' && oldObject == null"},
    ]});
    install(
        &env,
        "Validating",
        "v",
        vec![entry(
            "cond.example.com",
            &hook,
            "/v",
            rules.clone(),
            conditions,
        )],
    )
    .await;

    assert_eq!(
        send(&env, "POST", CMS, Some(&config_map("skip-me", json!({}))))
            .await
            .code,
        201
    );
    let sent = send(&env, "POST", CMS, Some(&config_map("other", json!({})))).await;
    assert_eq!(sent.code, 403);
    assert_eq!(
        sent.message(),
        "admission webhook \"cond.example.com\" denied the request: called"
    );
    assert_eq!(hook.calls().len(), 1);

    // A condition that cannot be evaluated fails the request under Fail, before any call.
    send(
        &env,
        "DELETE",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/v",
        None,
    )
    .await;
    let broken =
        json!({"matchConditions": [{"name": "broken", "expression": "object.nope.deeper == 1"}]});
    install(
        &env,
        "Validating",
        "w",
        vec![entry(
            "broken.example.com",
            &hook,
            "/v",
            rules.clone(),
            broken.clone(),
        )],
    )
    .await;
    let sent = send(&env, "POST", CMS, Some(&config_map("x", json!({})))).await;
    assert_eq!(sent.code, 403, "{}", sent.body);
    assert_eq!(sent.body["reason"], "Forbidden");
    assert!(
        sent.message()
            .starts_with("configmaps \"x\" is forbidden: "),
        "{}",
        sent.message()
    );
    assert_eq!(hook.calls().len(), 1);

    // Under Ignore the webhook is skipped.
    send(
        &env,
        "DELETE",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/w",
        None,
    )
    .await;
    let mut ignore = broken;
    ignore["failurePolicy"] = json!("Ignore");
    install(
        &env,
        "Validating",
        "i",
        vec![entry("ignored.example.com", &hook, "/v", rules, ignore)],
    )
    .await;
    assert_eq!(
        send(&env, "POST", CMS, Some(&config_map("x", json!({}))))
            .await
            .code,
        201
    );
    assert_eq!(hook.calls().len(), 1);
}

#[tokio::test]
async fn a_delete_collection_asks_about_each_object_and_a_refusal_deletes_nothing() {
    let env = TestEnv::start().await.expect("starts");
    for (name, labels) in [("a", json!({"keep": "no"})), ("b", json!({"keep": "yes"}))] {
        assert_eq!(
            send(&env, "POST", CMS, Some(&config_map(name, labels)))
                .await
                .code,
            201
        );
    }
    let hook = Webhook::start(|req| {
        if req["oldObject"]["metadata"]["labels"]["keep"] == "yes" {
            deny(403, "kept")
        } else {
            allow()
        }
    })
    .await;
    install(
        &env,
        "Validating",
        "v",
        vec![entry(
            "keep.example.com",
            &hook,
            "/v",
            core_rules(&["DELETE"], &["configmaps"]),
            json!({}),
        )],
    )
    .await;

    let sent = send(&env, "DELETE", CMS, None).await;
    assert_eq!(sent.code, 403, "{}", sent.body);
    assert_eq!(send(&env, "GET", &format!("{CMS}/a"), None).await.code, 200);
    let sent = send(
        &env,
        "DELETE",
        &format!("{CMS}?labelSelector=keep%3Dno"),
        None,
    )
    .await;
    assert_eq!(sent.code, 200, "{}", sent.body);
    assert_eq!(send(&env, "GET", &format!("{CMS}/a"), None).await.code, 404);
    assert_eq!(send(&env, "GET", &format!("{CMS}/b"), None).await.code, 200);
}

#[tokio::test]
async fn a_server_side_apply_that_creates_is_admitted_as_a_create() {
    let env = TestEnv::start().await.expect("starts");
    let hook =
        Webhook::start(|_| patch(json!([{"op": "add", "path": "/data/mutated", "value": "yes"}])))
            .await;
    install(
        &env,
        "Mutating",
        "m",
        vec![entry(
            "ssa.example.com",
            &hook,
            "/m",
            core_rules(&["CREATE"], &["configmaps"]),
            json!({}),
        )],
    )
    .await;

    let applied = send_json(
        &env.client(),
        "PATCH",
        &format!("{CMS}/applied?fieldManager=test"),
        "application/apply-patch+yaml",
        Some(&config_map("applied", json!({}))),
    )
    .await;
    assert_eq!(applied.code, 201);
    let got = send(&env, "GET", &format!("{CMS}/applied"), None).await;
    assert_eq!(got.body["data"]["mutated"], "yes");
    assert_eq!(got.body["data"]["k"], "v");
    let managers: Vec<&str> = got.body["metadata"]["managedFields"]
        .as_array()
        .map(|m| m.iter().filter_map(|e| e["manager"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(managers, vec!["test"]);
    assert_eq!(hook.calls()[0]["operation"], "CREATE");
}

#[tokio::test]
async fn an_update_whose_object_changes_while_webhooks_look_starts_again() {
    let env = TestEnv::start().await.expect("starts");
    assert_eq!(
        send(&env, "POST", CMS, Some(&config_map("a", json!({}))))
            .await
            .code,
        201
    );
    let config = env.config();
    let raced = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hook = Webhook::start(move |_| {
        if !raced.swap(true, Ordering::SeqCst) {
            // Another client changes the object while this webhook looks at it.
            let config = config.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                rt.block_on(async move {
                    let client = kube_client::Client::try_from(config).expect("a client");
                    let api: kube_client::Api<k8s_openapi::api::core::v1::ConfigMap> =
                        kube_client::Api::namespaced(client, "default");
                    api.patch(
                        "a",
                        &kube_client::api::PatchParams::default(),
                        &kube_client::api::Patch::Merge(
                            json!({"metadata": {"labels": {"raced": "yes"}}}),
                        ),
                    )
                    .await
                    .expect("the racing write");
                });
            })
            .join()
            .expect("the racing thread");
        }
        allow()
    })
    .await;
    // The racing write (labelled `raced`) is not sent to the webhook, so it cannot wait on it.
    let extra = json!({"matchConditions": [{
        "name": "not-raced",
        "expression": "!has(object.metadata.labels) || !('raced' in object.metadata.labels)",
    }]});
    install(
        &env,
        "Validating",
        "v",
        vec![entry(
            "race.example.com",
            &hook,
            "/v",
            core_rules(&["UPDATE"], &["configmaps"]),
            extra,
        )],
    )
    .await;

    let sent = send(
        &env,
        "PATCH",
        &format!("{CMS}/a"),
        Some(&json!([{"op": "add", "path": "/data/client", "value": "1"}])),
    )
    .await;
    assert_eq!(sent.code, 200, "{}", sent.body);
    let got = send(&env, "GET", &format!("{CMS}/a"), None).await;
    assert_eq!(got.body["data"]["client"], "1");
    assert_eq!(got.body["metadata"]["labels"]["raced"], "yes");
    assert_eq!(hook.calls().len(), 1);
}

/// kube-apiserver's `BeforeCreate` runs between the two kinds of webhook: mutating webhooks
/// see a create without uid, creation time or a name made from `generateName`; validating
/// webhooks see them, and the stored object keeps the server's uid whatever a webhook set.
#[tokio::test]
async fn mutating_webhooks_see_a_create_before_the_server_names_it() {
    let env = TestEnv::start().await.expect("starts");
    let mutating = Webhook::start(|_| {
        patch(json!([{"op": "add", "path": "/metadata/labels", "value": {"seen": "yes"}}]))
    })
    .await;
    let validating = Webhook::start(|_| allow()).await;
    let rules = core_rules(&["CREATE"], &["configmaps"]);
    install_one(&env, "Mutating", &mutating, rules.clone()).await;
    install_one(&env, "Validating", &validating, rules).await;

    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"generateName": "gen-"}, "data": {"k": "v"}});
    let sent = send(&env, "POST", CMS, Some(&body)).await;
    assert_eq!(sent.code, 201, "{}", sent.body);
    let stored = &sent.body["metadata"];
    let name = stored["name"].as_str().expect("a generated name");
    assert!(
        name.starts_with("gen-") && name.len() == "gen-".len() + 5,
        "{name}"
    );

    let seen = &mutating.calls()[0];
    assert_eq!(seen["name"], "");
    let meta = &seen["object"]["metadata"];
    for field in ["uid", "creationTimestamp", "name"] {
        assert_eq!(meta.get(field), None, "{field} in {meta}");
    }
    assert_eq!(meta["generateName"], "gen-");

    let seen = &validating.calls()[0];
    assert_eq!(seen["name"], "");
    let meta = &seen["object"]["metadata"];
    assert_eq!(meta["name"], name);
    assert_eq!(meta["uid"], stored["uid"]);
    assert_eq!(meta["creationTimestamp"], stored["creationTimestamp"]);
    assert_eq!(meta["labels"]["seen"], "yes");
}
