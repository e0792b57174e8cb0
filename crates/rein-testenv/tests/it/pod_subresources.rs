//! `pods/binding`, `pods/ephemeralcontainers`, `pods/log` and the connect verbs over real
//! HTTP, with the status codes and Status bodies kube-apiserver answers (no kubelet runs
//! behind rein-testenv).

use k8s_openapi::api::core::v1::{Node, Pod};
use kube_client::api::{Api, LogParams, Patch, PatchParams, PostParams};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

use super::pod_support::{get, pod, post, raw, status_of};

const PODS: &str = "/api/v1/namespaces/default/pods";

fn binding(name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": name, "annotations": {"scheduler.example.com/score": "7"}},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    })
}

#[tokio::test]
async fn binding_assigns_the_pod_once() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    pods.create(&PostParams::default(), &pod("p", "p", None))
        .await
        .expect("creates");
    let (code, body) = post(
        &env.client(),
        &format!("{PODS}/p/binding"),
        &binding("p", "node-a"),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"], "Success");
    let bound = pods.get("p").await.expect("gets");
    assert_eq!(
        bound.spec.as_ref().unwrap().node_name.as_deref(),
        Some("node-a")
    );
    assert_eq!(
        bound.metadata.annotations.unwrap()["scheduler.example.com/score"],
        "7"
    );
    let scheduled = bound.status.unwrap().conditions.unwrap();
    assert!(
        scheduled
            .iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "True")
    );

    let (code, body) = post(
        &env.client(),
        &format!("{PODS}/p/binding"),
        &binding("p", "node-b"),
    )
    .await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(
        status_of(&body),
        (
            409,
            "Conflict",
            "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"node-a\""
        )
    );
    assert_eq!(
        body["details"],
        json!({"name": "p", "kind": "pods/binding"})
    );

    let (code, body) = post(
        &env.client(),
        &format!("{PODS}/p/binding"),
        &binding("q", "node-b"),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        body["message"],
        "name in URL does not match name in Binding object"
    );
    let (code, _) = post(
        &env.client(),
        &format!("{PODS}/nope/binding"),
        &binding("nope", "n"),
    )
    .await;
    assert_eq!(code, 404);
    // ValidatePodBinding's errors reach the client as a plain error: 500 without a reason.
    pods.create(&PostParams::default(), &pod("r", "r", None))
        .await
        .expect("creates");
    let (code, body) = post(
        &env.client(),
        &format!("{PODS}/r/binding"),
        &binding("r", ""),
    )
    .await;
    assert_eq!(
        (code, body["message"].as_str()),
        (500, Some("target.name: Required value"))
    );
}

#[tokio::test]
async fn ephemeral_containers_may_only_be_added() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    pods.create(&PostParams::default(), &pod("p", "p", None))
        .await
        .expect("creates");
    let path = format!("{PODS}/p/ephemeralcontainers");
    let (code, _, got) = get(&env.client(), &path).await;
    assert_eq!((code, got["kind"].as_str()), (200, Some("Pod")));

    // kubectl debug's strategic merge patch.
    let add = json!({"spec": {"ephemeralContainers": [
        {"name": "debugger", "image": "busybox", "targetContainerName": "app"},
    ]}});
    let (code, _, patched) = raw(
        &env.client(),
        "PATCH",
        &path,
        "application/strategic-merge-patch+json",
        &add,
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    let debugger = &patched["spec"]["ephemeralContainers"][0];
    assert_eq!(debugger["name"], "debugger");
    assert_eq!(debugger["terminationMessagePolicy"], "File", "defaulted");

    // Anything else in a PUT body is ignored; removing an existing one is refused.
    let mut body = patched.clone();
    body["metadata"]["labels"] = json!({"changed": "yes"});
    body["spec"]["ephemeralContainers"] = json!([]);
    let (code, _, refused) = raw(&env.client(), "PUT", &path, "application/json", &body).await;
    assert_eq!(code, 422, "{refused}");
    assert_eq!(
        refused["message"],
        "Pod \"p\" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debugger\" may not be removed\n"
    );
    let mut body = patched.clone();
    body["metadata"]["labels"] = json!({"changed": "yes"});
    let (code, _, same) = raw(&env.client(), "PUT", &path, "application/json", &body).await;
    assert_eq!(code, 200, "{same}");
    assert_eq!(same["metadata"]["labels"], json!({"app": "p"}));

    // Names are unique across all containers; probes are not for ephemeral containers.
    let dup = json!({"spec": {"ephemeralContainers": [
        {"name": "app", "image": "busybox", "readinessProbe": {"exec": {"command": ["true"]}}},
    ]}});
    let (code, _, refused) = raw(
        &env.client(),
        "PATCH",
        &path,
        "application/strategic-merge-patch+json",
        &dup,
    )
    .await;
    assert_eq!(code, 422, "{refused}");
    let causes: Vec<&str> = refused["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert!(
        causes.contains(&"spec.ephemeralContainers[1].name"),
        "{refused}"
    );
    assert!(
        causes.contains(&"spec.ephemeralContainers[1].readinessProbe"),
        "{refused}"
    );
}

#[tokio::test]
async fn logs_of_an_unbound_pod_are_empty_and_containers_are_checked() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    pods.create(&PostParams::default(), &pod("p", "p", None))
        .await
        .expect("creates");
    let (code, _, body) = get(&env.client(), &format!("{PODS}/p/log")).await;
    assert_eq!((code, body), (204, json!("")));
    assert_eq!(
        pods.logs("p", &LogParams::default())
            .await
            .expect("empty logs"),
        ""
    );

    let (code, _, body) = get(&env.client(), &format!("{PODS}/p/log?container=nope")).await;
    assert_eq!(code, 400);
    assert_eq!(
        status_of(&body),
        (400, "BadRequest", "container nope is not valid for pod p")
    );
    let (code, _, _) = get(&env.client(), &format!("{PODS}/none/log")).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn connect_verbs_need_a_host_and_a_kubelet() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    pods.create(&PostParams::default(), &pod("p", "p", None))
        .await
        .expect("creates");
    for sub in ["exec?command=ls", "attach", "portforward?ports=80"] {
        for method in ["POST", "GET"] {
            let (code, _, body) = raw(
                &env.client(),
                method,
                &format!("{PODS}/p/{sub}"),
                "application/json",
                &Value::Null,
            )
            .await;
            assert_eq!(
                status_of(&body),
                (400, "BadRequest", "pod p does not have a host assigned"),
                "{method} {sub}: {code}"
            );
        }
    }

    // Bound to a Node that does not exist: the node lookup fails.
    pods.create(&PostParams::default(), &pod("q", "q", Some("node-a")))
        .await
        .expect("creates");
    let (code, _, body) = raw(
        &env.client(),
        "POST",
        &format!("{PODS}/q/exec?command=ls"),
        "application/json",
        &Value::Null,
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(body["message"], "nodes \"node-a\" not found");

    // With the Node: its kubelet is dialled, and nobody answers.
    let nodes: Api<Node> = Api::all(env.client());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "node-a"}})).unwrap();
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("creates the node");
    let status = json!({"status": {"addresses": [{"type": "InternalIP", "address": "10.1.2.3"}]}});
    nodes
        .patch_status("node-a", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("sets the node's addresses");
    let (code, _, body) = raw(
        &env.client(),
        "POST",
        &format!("{PODS}/q/exec?command=ls&container=app"),
        "application/json",
        &Value::Null,
    )
    .await;
    assert_eq!(code, 500);
    assert_eq!(
        body["message"],
        "error dialing backend: dial tcp 10.1.2.3:10250: connect: connection refused"
    );
    let (code, _, body) = get(&env.client(), &format!("{PODS}/q/log?tailLines=5")).await;
    assert_eq!(code, 500);
    assert_eq!(
        body["message"],
        "Get \"https://10.1.2.3:10250/containerLogs/default/q/app?tailLines=5\": dial tcp 10.1.2.3:10250: connect: connection refused"
    );
}

#[tokio::test]
async fn the_legacy_bindings_resource_binds_the_named_pod() {
    use super::admission_support::{Webhook, allow, core_rules, entry, install};

    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    pods.create(&PostParams::default(), &pod("p", "p", None))
        .await
        .expect("creates");
    let hook = Webhook::start(|_| allow()).await;
    let rules = core_rules(&["CREATE"], &["bindings"]);
    install(
        &env,
        "Validating",
        "v",
        vec![entry("v.example.com", &hook, "/v", rules, json!({}))],
    )
    .await;
    let bindings = "/api/v1/namespaces/default/bindings";
    let (code, body) = post(&env.client(), bindings, &binding("p", "node-a")).await;
    assert_eq!(
        (code, body),
        (
            201,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
        )
    );
    let bound = pods.get("p").await.expect("gets");
    assert_eq!(
        bound.spec.as_ref().unwrap().node_name.as_deref(),
        Some("node-a")
    );
    let calls = hook.calls();
    assert_eq!(calls[0]["resource"]["resource"], "bindings");
    assert!(calls[0].get("subResource").is_none_or(Value::is_null));
    assert_eq!(calls[0]["kind"]["kind"], "Binding");
    assert_eq!(calls[0]["name"], "p");

    let (code, body) = post(&env.client(), bindings, &binding("p", "node-b")).await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"node-a\""
    );
    let (code, _, body) = get(&env.client(), bindings).await;
    assert_eq!(
        (code, body["reason"].as_str()),
        (405, Some("MethodNotAllowed"))
    );

    let (code, _, discovery) = get(&env.client(), "/api/v1").await;
    assert_eq!(code, 200);
    let listed = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "bindings")
        .expect("bindings listed");
    assert_eq!(
        listed,
        &json!({"name": "bindings", "singularName": "binding", "namespaced": true, "kind": "Binding", "verbs": ["create"]})
    );
}
