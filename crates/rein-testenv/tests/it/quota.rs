//! The ResourceQuota admission plugin and the quota controller, over real HTTP: object-count
//! and compute quotas refuse writes with kube-apiserver's 403 and message, scopes select
//! Pods, and `status.hard`/`status.used` stay current through creates, updates and deletes
//! (also through kubectl).

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ResourceQuota};
use kube_client::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_client::{Client, Error};
use rein_testenv::{AdmissionPlugin, TestEnv};
use serde_json::{Value, json};

use super::http_support::send_json;
use super::kubectl::Server;

/// Sends `body` to `path` with `method`; answers the status code and the JSON body.
pub(super) async fn raw(client: &Client, method: &str, path: &str, body: Value) -> (u16, Value) {
    let content_type = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    let answer = send_json(client, method, path, content_type, Some(&body)).await;
    (answer.code, answer.json())
}

/// Creates the namespace `name`.
pub(super) async fn namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
    api.create(&PostParams::default(), &ns)
        .await
        .expect("creates the namespace");
}

/// The message of a refused write, asserting it is kube-apiserver's 403 Forbidden.
pub(super) fn forbidden(result: Result<impl std::fmt::Debug, Error>) -> String {
    match result {
        Err(Error::Api(status)) => {
            assert_eq!(status.code, 403, "{status:?}");
            assert_eq!(status.reason, "Forbidden", "{status:?}");
            status.message
        }
        other => panic!("expected 403 Forbidden, got {other:?}"),
    }
}

fn quota(name: &str, spec: Value) -> ResourceQuota {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("quota")
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}})).expect("config map")
}

/// A Pod with one container `app` asking for `resources`.
pub(super) fn pod(name: &str, resources: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "resources": resources}]},
    }))
    .expect("pod")
}

/// `status.used` of the quota `name`, as strings.
async fn used(api: &Api<ResourceQuota>, name: &str) -> Value {
    let q = api.get(name).await.expect("gets the quota");
    serde_json::to_value(q.status.and_then(|s| s.used)).expect("used")
}

#[tokio::test]
async fn object_count_quota_refuses_the_next_object_and_tracks_deletes() {
    let env = TestEnv::start().await.expect("server starts");
    let client = env.client();
    namespace(&client, "team-a").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "team-a");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    quotas
        .create(
            &PostParams::default(),
            &quota(
                "objects",
                json!({"hard": {"configmaps": "3", "count/secrets": "1", "pods": "10"}}),
            ),
        )
        .await
        .expect("creates the quota");
    // The controller fills in status at once; the namespace's kube-root-ca.crt counts.
    let q = quotas.get("objects").await.expect("gets");
    let status = serde_json::to_value(q.status.expect("status")).expect("json");
    assert_eq!(
        status,
        json!({
            "hard": {"configmaps": "3", "count/secrets": "1", "pods": "10"},
            "used": {"configmaps": "1", "count/secrets": "0", "pods": "0"},
        })
    );
    for name in ["one", "two"] {
        cms.create(&PostParams::default(), &config_map(name))
            .await
            .expect("within quota");
    }
    assert_eq!(used(&quotas, "objects").await["configmaps"], "3");
    let message = forbidden(
        cms.create(&PostParams::default(), &config_map("three"))
            .await,
    );
    assert_eq!(
        message,
        "configmaps \"three\" is forbidden: exceeded quota: objects, requested: configmaps=1, \
         used: configmaps=3, limited: configmaps=3"
    );
    // The refused write stored nothing.
    assert!(cms.get_opt("three").await.expect("gets").is_none());
    // Raw: the Status body as kube-apiserver sends it.
    let (code, body) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/team-a/configmaps",
        json!({"metadata": {"name": "raw"}}),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["details"],
        json!({"name": "raw", "kind": "configmaps"})
    );
    // A dry run is refused the same way.
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    forbidden(cms.create(&dry, &config_map("dry")).await);

    cms.delete("one", &DeleteParams::default())
        .await
        .expect("deletes");
    assert_eq!(used(&quotas, "objects").await["configmaps"], "2");
    cms.create(&PostParams::default(), &config_map("three"))
        .await
        .expect("fits again after a delete");

    // Raising the limit is seen at once.
    let patch = json!({"spec": {"hard": {"configmaps": "5"}}});
    quotas
        .patch("objects", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patches the quota");
    let q = quotas.get("objects").await.expect("gets");
    let status = serde_json::to_value(q.status.expect("status")).expect("json");
    assert_eq!(status["hard"]["configmaps"], "5");
    cms.create(&PostParams::default(), &config_map("four"))
        .await
        .expect("within the raised quota");
}

#[tokio::test]
async fn compute_quota_needs_resources_and_frees_them_when_pods_finish() {
    let env = TestEnv::start().await.expect("server starts");
    let client = env.client();
    namespace(&client, "compute").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "compute");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "compute");
    quotas
        .create(
            &PostParams::default(),
            &quota(
                "compute",
                json!({"hard": {
                    "requests.cpu": "1", "requests.memory": "1Gi",
                    "limits.cpu": "2", "limits.memory": "2Gi", "pods": "5",
                }}),
            ),
        )
        .await
        .expect("creates the quota");
    let message = forbidden(
        pods.create(&PostParams::default(), &pod("bare", json!({})))
            .await,
    );
    assert_eq!(
        message,
        "pods \"bare\" is forbidden: failed quota: compute: must specify limits.cpu for: app; \
         limits.memory for: app; requests.cpu for: app; requests.memory for: app"
    );
    let resources = json!({
        "requests": {"cpu": "600m", "memory": "512Mi"},
        "limits": {"cpu": "1", "memory": "1Gi"},
    });
    pods.create(&PostParams::default(), &pod("first", resources.clone()))
        .await
        .expect("within quota");
    assert_eq!(
        used(&quotas, "compute").await,
        json!({
            "limits.cpu": "1", "limits.memory": "1Gi", "pods": "1",
            "requests.cpu": "600m", "requests.memory": "512Mi",
        })
    );
    let message = forbidden(
        pods.create(&PostParams::default(), &pod("second", resources.clone()))
            .await,
    );
    assert_eq!(
        message,
        "pods \"second\" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, \
         used: requests.cpu=600m, limited: requests.cpu=1"
    );
    // Limits alone stand for requests, as defaulting copies them.
    let message = forbidden(
        pods.create(
            &PostParams::default(),
            &pod(
                "limits-only",
                json!({"limits": {"cpu": "300m", "memory": "600Mi"}}),
            ),
        )
        .await,
    );
    assert!(
        message.ends_with(
            "requested: requests.memory=600Mi, used: requests.memory=512Mi, limited: \
             requests.memory=1Gi"
        ),
        "{message}"
    );
    // A terminal Pod stops counting.
    let status = json!({"status": {"phase": "Succeeded"}});
    pods.patch_status("first", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("marks the pod finished");
    assert_eq!(
        used(&quotas, "compute").await,
        json!({
            "limits.cpu": "0", "limits.memory": "0", "pods": "0",
            "requests.cpu": "0", "requests.memory": "0",
        })
    );
    pods.create(&PostParams::default(), &pod("second", resources))
        .await
        .expect("fits once the first pod finished");
}

#[tokio::test]
async fn service_quotas_count_node_ports_and_load_balancers() {
    let env = TestEnv::start().await.expect("server starts");
    let client = env.client();
    namespace(&client, "net").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "net");
    quotas
        .create(
            &PostParams::default(),
            &quota(
                "net",
                json!({"hard": {"services.nodeports": "1", "services.loadbalancers": "0", "services": "2"}}),
            ),
        )
        .await
        .expect("creates the quota");
    let service = |name: &str, kind: &str, ports: usize| {
        let ports: Vec<Value> = (0..ports)
            .map(|i| json!({"name": format!("p{i}"), "port": 80 + i}))
            .collect();
        json!({"metadata": {"name": name}, "spec": {"type": kind, "ports": ports, "selector": {"app": "x"}}})
    };
    let path = "/api/v1/namespaces/net/services";
    let (code, body) = raw(&client, "POST", path, service("two-ports", "NodePort", 2)).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "services \"two-ports\" is forbidden: exceeded quota: net, requested: \
         services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1"
    );
    let (code, body) = raw(&client, "POST", path, service("lb", "LoadBalancer", 1)).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("requested: services.loadbalancers=1"),
        "{body}"
    );
    let (code, body) = raw(&client, "POST", path, service("np", "NodePort", 1)).await;
    assert_eq!(code, 201, "{body}");
    let (code, _) = raw(&client, "POST", path, service("plain", "ClusterIP", 3)).await;
    assert_eq!(code, 201);
    assert_eq!(
        used(&quotas, "net").await,
        json!({"services": "2", "services.loadbalancers": "0", "services.nodeports": "1"})
    );
    // An update that would add node ports is charged the difference.
    let (code, body) = raw(
        &client,
        "PATCH",
        &format!("{path}/plain"),
        json!({"spec": {"type": "NodePort"}}),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("requested: services.nodeports=3, used: services.nodeports=1"),
        "{body}"
    );
}

#[tokio::test]
async fn scoped_quotas_select_pods_by_qos_and_priority_class() {
    let env = TestEnv::start().await.expect("server starts");
    let client = env.client();
    namespace(&client, "scoped").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "scoped");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "scoped");
    quotas
        .create(
            &PostParams::default(),
            &quota(
                "best-effort",
                json!({"hard": {"pods": "1"}, "scopes": ["BestEffort"]}),
            ),
        )
        .await
        .expect("creates the quota");
    quotas
        .create(
            &PostParams::default(),
            &quota(
                "no-high",
                json!({"hard": {"pods": "0"}, "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]},
                ]}}),
            ),
        )
        .await
        .expect("creates the quota");
    pods.create(&PostParams::default(), &pod("be-1", json!({})))
        .await
        .expect("first best-effort pod");
    let message = forbidden(
        pods.create(&PostParams::default(), &pod("be-2", json!({})))
            .await,
    );
    assert!(message.contains("exceeded quota: best-effort"), "{message}");
    let burstable = json!({"requests": {"cpu": "100m"}});
    pods.create(&PostParams::default(), &pod("burstable", burstable))
        .await
        .expect("outside the BestEffort scope");
    assert_eq!(used(&quotas, "best-effort").await, json!({"pods": "1"}));

    let (code, _) = raw(
        &client,
        "POST",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        json!({"metadata": {"name": "high"}, "value": 1000}),
    )
    .await;
    assert_eq!(code, 201);
    let mut high = pod("high", json!({"requests": {"cpu": "100m"}}));
    high.spec.as_mut().expect("spec").priority_class_name = Some("high".into());
    let message = forbidden(pods.create(&PostParams::default(), &high).await);
    assert!(message.contains("exceeded quota: no-high"), "{message}");
}

#[tokio::test]
async fn quota_plugin_off_stores_everything_and_still_reports_usage() {
    let env = TestEnv::builder()
        .admission_plugin(AdmissionPlugin::ResourceQuota, false)
        .start()
        .await
        .expect("server starts");
    let client = env.client();
    namespace(&client, "loose").await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "loose");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "loose");
    quotas
        .create(
            &PostParams::default(),
            &quota("objects", json!({"hard": {"count/configmaps": "1"}})),
        )
        .await
        .expect("creates the quota");
    cms.create(&PostParams::default(), &config_map("over"))
        .await
        .expect("not enforced");
    assert_eq!(used(&quotas, "objects").await["count/configmaps"], "2");
}

#[test]
fn kubectl_creates_and_describes_quotas_and_hits_them() {
    let server = Server::start();
    server.ok(&["create", "namespace", "q"]);
    server.ok(&[
        "create",
        "quota",
        "small",
        "-n",
        "q",
        "--hard=configmaps=2,pods=3",
    ]);
    let described = server.ok(&["describe", "quota", "small", "-n", "q"]);
    let rows: Vec<Vec<&str>> = described
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(rows.contains(&vec!["configmaps", "1", "2"]), "{described}");
    assert!(rows.contains(&vec!["pods", "0", "3"]), "{described}");
    server.ok(&["create", "configmap", "first", "-n", "q"]);
    let err = server.fails(&["create", "configmap", "second", "-n", "q"]);
    assert!(
        err.contains(
            "configmaps \"second\" is forbidden: exceeded quota: small, requested: \
             configmaps=1, used: configmaps=2, limited: configmaps=2"
        ),
        "{err}"
    );
    let quota = server.json(&["get", "resourcequota", "small", "-n", "q", "-o", "json"]);
    assert_eq!(quota["status"]["used"]["configmaps"], "2");

    // kube-apiserver's flag turns the plugin off; usage is still reported.
    let loose = Server::start_with(&["--disable-admission-plugins=ResourceQuota,Priority"]);
    loose.ok(&["create", "quota", "small", "--hard=configmaps=1"]);
    loose.ok(&["create", "configmap", "over"]);
    let quota = loose.json(&["get", "resourcequota", "small", "-o", "json"]);
    assert_eq!(quota["status"]["used"]["configmaps"], "2");
}

/// As kube-apiserver orders its plugins: the built-in mutating plugins run before the mutating
/// webhooks (which see their result), and ResourceQuota runs after the validating webhooks
/// (whose denial is the answer when both would refuse).
#[tokio::test]
async fn built_in_plugins_run_in_kube_apiservers_order_around_webhooks() {
    use crate::admission_support::{Webhook, allow, core_rules, deny, install_one, send};

    let env = TestEnv::start().await.expect("server starts");
    let client = env.client();
    let mutating = Webhook::start(|_| allow()).await;
    install_one(
        &env,
        "Mutating",
        &mutating,
        core_rules(&["CREATE"], &["pods"]),
    )
    .await;
    let validating = Webhook::start(|_| deny(403, "no more config maps")).await;
    install_one(
        &env,
        "Validating",
        &validating,
        core_rules(&["CREATE"], &["configmaps"]),
    )
    .await;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "default");
    quotas
        .create(
            &PostParams::default(),
            &quota("full", json!({"hard": {"configmaps": "1"}})),
        )
        .await
        .expect("creates the quota");

    let body = serde_json::to_value(pod("seen", json!({}))).expect("json");
    let sent = send(&env, "POST", "/api/v1/namespaces/default/pods", Some(&body)).await;
    assert_eq!(sent.code, 201, "{}", sent.body);
    let calls = mutating.calls();
    let seen = &calls[0]["object"]["spec"];
    assert_eq!(seen["serviceAccountName"], "default");
    assert_eq!(seen["priority"], 0);
    assert_eq!(seen["tolerations"].as_array().map(Vec::len), Some(2));
    assert!(
        seen["volumes"][0]["name"]
            .as_str()
            .unwrap_or_default()
            .starts_with("kube-api-access-"),
        "{seen}"
    );

    let body = json!({"metadata": {"name": "over"}});
    let sent = send(
        &env,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(&body),
    )
    .await;
    assert_eq!(sent.code, 403, "{}", sent.body);
    assert_eq!(
        sent.message(),
        "admission webhook \"v.example.com\" denied the request: no more config maps"
    );
}
