//! `meta.k8s.io/v1` Tables over HTTP: kube's printer columns (types, descriptions, wide
//! columns at priority 1), cells computed as kube's printers compute them, and
//! `includeObject`.

use kube_client::Api;
use kube_client::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube_client::discovery::ApiResource;
use rein_testenv::TestEnv;
use serde_json::{Value, json};

use super::http_support::{get_as, open};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// GETs `path` as a Table: (status, body).
async fn table(env: &TestEnv, path: &str) -> (u16, Value) {
    let answer = get_as(&env.client(), path, TABLE).await;
    let body = serde_json::from_slice(&answer.bytes).expect("json");
    (answer.code, body)
}

/// Creates `obj` at `api`, then merge-patches its status.
async fn create_with_status(api: &Api<DynamicObject>, obj: Value, status: Value) {
    let obj: DynamicObject = serde_json::from_value(obj).expect("object");
    let name = obj.metadata.name.clone().expect("named");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("creates");
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .expect("patches status");
}

fn columns(table: &Value) -> Vec<(String, String, i64)> {
    table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or_default().to_string(),
                c["type"].as_str().unwrap_or_default().to_string(),
                c["priority"].as_i64().unwrap_or_default(),
            )
        })
        .collect()
}

fn row<'a>(table: &'a Value, name: &str) -> &'a Value {
    table["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["object"]["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no row for {name} in {table}"))
}

fn pods(env: &TestEnv) -> Api<DynamicObject> {
    let resource = ApiResource::erase::<k8s_openapi::api::core::v1::Pod>(&());
    Api::namespaced_with(env.client(), "default", &resource)
}

#[tokio::test]
async fn pod_columns_and_status_as_kube_prints_them() {
    let env = TestEnv::start().await.expect("starts");
    let api = pods(&env);
    let finished = "2020-01-01T00:00:00Z";
    create_with_status(
        &api,
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "crashing"},
            "spec": {
                "nodeName": "node-a",
                "containers": [{"name": "app", "image": "app:1"}, {"name": "side", "image": "side:1"}],
                "readinessGates": [{"conditionType": "example.com/gate"}],
            },
        }),
        json!({
            "phase": "Running",
            "podIP": "10.0.0.7",
            "podIPs": [{"ip": "10.0.0.7"}],
            "conditions": [{"type": "example.com/gate", "status": "True"}],
            "containerStatuses": [
                {"name": "app", "image": "app:1", "imageID": "", "ready": false, "restartCount": 3,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": finished}}},
                {"name": "side", "image": "side:1", "imageID": "", "ready": true, "restartCount": 0,
                 "state": {"running": {"startedAt": finished}}},
            ],
        }),
    )
    .await;
    create_with_status(
        &api,
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "initialising"},
            "spec": {
                "initContainers": [{"name": "setup", "image": "setup:1"}],
                "containers": [{"name": "app", "image": "app:1"}],
            },
        }),
        json!({
            "phase": "Pending",
            "initContainerStatuses": [
                {"name": "setup", "image": "setup:1", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"running": {"startedAt": finished}}},
            ],
        }),
    )
    .await;
    create_with_status(
        &api,
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "done"},
            "spec": {"containers": [{"name": "app", "image": "app:1"}]},
        }),
        json!({
            "phase": "Succeeded",
            "containerStatuses": [
                {"name": "app", "image": "app:1", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            ],
        }),
    )
    .await;

    let (status, pods) = table(&env, "/api/v1/namespaces/default/pods").await;
    assert_eq!(status, 200, "{pods}");
    assert_eq!(
        columns(&pods),
        [
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ]
        .map(|(n, t, p)| (n.to_string(), t.to_string(), p))
    );
    let definitions = &pods["columnDefinitions"];
    assert_eq!(definitions[0]["format"], "name");
    assert!(
        definitions[5]["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("podIP address allocated to the pod.")),
        "IP column description: {}",
        definitions[5]["description"]
    );
    assert!(
        definitions[4]["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("CreationTimestamp is a timestamp")),
        "Age description: {}",
        definitions[4]["description"]
    );

    let crashing = &row(&pods, "crashing")["cells"];
    assert_eq!(crashing[1], "1/2");
    assert_eq!(crashing[2], "CrashLoopBackOff");
    let restarts = crashing[3].as_str().expect("restarts");
    assert!(
        restarts.starts_with("3 (") && restarts.ends_with(" ago)"),
        "{restarts}"
    );
    assert_eq!(crashing[5], "10.0.0.7");
    assert_eq!(crashing[6], "node-a");
    assert_eq!(crashing[7], "<none>");
    assert_eq!(crashing[8], "1/1");

    let initialising = &row(&pods, "initialising")["cells"];
    assert_eq!(initialising[1], "0/1");
    assert_eq!(initialising[2], "Init:0/1");
    assert_eq!(initialising[3], "0");
    assert_eq!(initialising[5], "<none>");
    assert_eq!(initialising[8], "<none>");

    let done = row(&pods, "done");
    assert_eq!(done["cells"][2], "Completed");
    assert_eq!(done["conditions"][0]["type"], "Completed");
    assert_eq!(done["conditions"][0]["reason"], "Succeeded");
    assert_eq!(done["object"]["kind"], "PartialObjectMetadata");
}

#[tokio::test]
async fn node_status_roles_and_wide_columns() {
    let env = TestEnv::start().await.expect("starts");
    let resource = ApiResource::erase::<k8s_openapi::api::core::v1::Node>(&());
    let api: Api<DynamicObject> = Api::all_with(env.client(), &resource);
    let ready = |status: &str| json!([{"type": "Ready", "status": status}]);
    create_with_status(
        &api,
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "cp", "labels": {
                "node-role.kubernetes.io/control-plane": "",
                "kubernetes.io/role": "master",
            }},
            "spec": {"unschedulable": true},
        }),
        json!({
            "conditions": ready("True"),
            "addresses": [
                {"type": "InternalIP", "address": "192.168.0.10"},
                {"type": "Hostname", "address": "cp"},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.33.1", "osImage": "Debian GNU/Linux 12",
                "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.7.0",
                "machineID": "", "systemUUID": "", "bootID": "", "kubeProxyVersion": "",
                "operatingSystem": "linux", "architecture": "amd64",
            },
        }),
    )
    .await;
    create_with_status(
        &api,
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker"}}),
        json!({"conditions": ready("False")}),
    )
    .await;
    let bare: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}}),
    )
    .expect("node");
    api.create(&PostParams::default(), &bare)
        .await
        .expect("creates");

    let (status, nodes) = table(&env, "/api/v1/nodes").await;
    assert_eq!(status, 200, "{nodes}");
    let names: Vec<(String, i64)> = columns(&nodes)
        .into_iter()
        .map(|(n, _, p)| (n, p))
        .collect();
    assert_eq!(
        names,
        [
            ("Name", 0),
            ("Status", 0),
            ("Roles", 0),
            ("Age", 0),
            ("Version", 0),
            ("Internal-IP", 1),
            ("External-IP", 1),
            ("OS-Image", 1),
            ("Kernel-Version", 1),
            ("Container-Runtime", 1),
        ]
        .map(|(n, p)| (n.to_string(), p))
    );
    assert_eq!(
        row(&nodes, "cp")["cells"],
        json!([
            "cp",
            "Ready,SchedulingDisabled",
            "control-plane,master",
            row(&nodes, "cp")["cells"][3],
            "v1.33.1",
            "192.168.0.10",
            "<none>",
            "Debian GNU/Linux 12",
            "6.1.0",
            "containerd://1.7.0",
        ])
    );
    assert_eq!(row(&nodes, "worker")["cells"][1], "NotReady");
    assert_eq!(row(&nodes, "worker")["cells"][2], "<none>");
    assert_eq!(row(&nodes, "bare")["cells"][1], "Unknown");
    assert_eq!(row(&nodes, "bare")["cells"][7], "<unknown>");
}

#[tokio::test]
async fn workload_and_service_wide_cells() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&()),
    );
    let deployment: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "edge"]}],
            },
            "template": {
                "metadata": {"labels": {"app": "web", "tier": "front"}},
                "spec": {"containers": [
                    {"name": "nginx", "image": "nginx:1.27"},
                    {"name": "log", "image": "busybox"},
                ]},
            },
        },
    }))
    .expect("deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("creates");
    let services: Api<DynamicObject> = Api::namespaced_with(
        client,
        "default",
        &ApiResource::erase::<k8s_openapi::api::core::v1::Service>(&()),
    );
    let service: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {
            "type": "NodePort",
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "nodePort": 30080}, {"name": "dns", "port": 53, "protocol": "UDP"}],
        },
    }))
    .expect("service");
    services
        .create(&PostParams::default(), &service)
        .await
        .expect("creates");

    let (_, table_d) = table(&env, "/apis/apps/v1/namespaces/default/deployments").await;
    let d_columns = columns(&table_d);
    assert_eq!(d_columns[2], ("Up-to-date".into(), "integer".into(), 0));
    assert_eq!(d_columns[5], ("Containers".into(), "string".into(), 1));
    assert_eq!(d_columns[7], ("Selector".into(), "string".into(), 1));
    let cells = &row(&table_d, "web")["cells"];
    assert_eq!(cells[1], "0/3");
    assert_eq!(cells[5], "nginx,log");
    assert_eq!(cells[6], "nginx:1.27,busybox");
    assert_eq!(cells[7], "app=web,tier in (edge,front)");

    let (_, table_s) = table(&env, "/api/v1/namespaces/default/services").await;
    assert_eq!(
        columns(&table_s).last(),
        Some(&("Selector".into(), "string".into(), 1))
    );
    let cells = &row(&table_s, "web")["cells"];
    assert_eq!(cells[1], "NodePort");
    assert_eq!(cells[3], "<none>");
    let ports = cells[4].as_str().expect("ports");
    assert!(ports.starts_with("80:30080/TCP,53:"), "{ports}");
    assert!(ports.ends_with("/UDP"), "{ports}");
    assert_eq!(cells[6], "app=web");
}

#[tokio::test]
async fn include_object_and_default_columns() {
    let env = TestEnv::start().await.expect("starts");
    let path = "/api/v1/namespaces/default/configmaps";
    let (_, metadata) = table(&env, path).await;
    let row = &metadata["rows"][0];
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(row["object"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(columns(&metadata)[1], ("Data".into(), "integer".into(), 0));

    let (_, full) = table(&env, &format!("{path}?includeObject=Object")).await;
    let object = &full["rows"][0]["object"];
    assert_eq!(object["kind"], "ConfigMap");
    assert_eq!(object["apiVersion"], "v1");
    assert!(object["data"].is_object(), "{object}");

    let (_, none) = table(&env, &format!("{path}?includeObject=None")).await;
    assert!(none["rows"][0]["object"].is_null(), "{none}");

    let (status, bad) = table(&env, &format!("{path}?includeObject=Everything")).await;
    assert_eq!(status, 400);
    assert_eq!(
        bad["message"],
        "unrecognized includeObject value: \"Everything\""
    );

    // Kinds without printers get kube-apiserver's default convertor: Name and Created At.
    let (_, limits) = table(&env, "/api/v1/namespaces/default/limitranges").await;
    assert_eq!(
        columns(&limits),
        [
            ("Name".to_string(), "string".to_string(), 0),
            ("Created At".to_string(), "date".to_string(), 0),
        ]
    );
    let (_, roles) = table(&env, "/apis/rbac.authorization.k8s.io/v1/clusterroles").await;
    let created = roles["rows"][0]["cells"][1].as_str().expect("created at");
    assert!(
        created.len() == 20 && created.ends_with('Z') && created.contains('T'),
        "{created}"
    );
}

#[tokio::test]
async fn table_watch_sends_column_definitions_once() {
    let env = TestEnv::start().await.expect("starts");
    let from = env.resource_version();
    let api: Api<DynamicObject> = Api::namespaced_with(
        env.client(),
        "default",
        &ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    );
    for name in ["one", "two"] {
        let cm: DynamicObject = serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
        )
        .expect("config map");
        api.create(&PostParams::default(), &cm)
            .await
            .expect("creates");
    }
    let path = format!("/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={from}");
    let headers = [("accept", TABLE)];
    let resp = open(&env.client(), "GET", &path, &headers, Vec::new()).await;
    let mut body = resp.into_body();
    let mut text = String::new();
    while text.lines().count() < 2 {
        let frame = http_body_util::BodyExt::frame(&mut body)
            .await
            .expect("a frame")
            .expect("reads");
        if let Ok(data) = frame.into_data() {
            text.push_str(&String::from_utf8_lossy(&data));
        }
    }
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("event"))
        .collect();
    assert_eq!(events[0]["object"]["kind"], "Table");
    assert_eq!(events[0]["object"]["rows"][0]["cells"][0], "one");
    assert!(events[0]["object"]["columnDefinitions"].is_array());
    assert!(events[1]["object"]["columnDefinitions"].is_null());
    assert_eq!(events[1]["object"]["rows"][0]["cells"][0], "two");
}

#[tokio::test]
async fn quota_and_autoscaler_cells() {
    let env = TestEnv::start().await.expect("starts");
    let quotas: Api<DynamicObject> = Api::namespaced_with(
        env.client(),
        "default",
        &ApiResource::erase::<k8s_openapi::api::core::v1::ResourceQuota>(&()),
    );
    let quota: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "q"},
        "spec": {"hard": {"pods": "10", "requests.cpu": "1", "limits.cpu": "2"}},
    }))
    .expect("quota");
    quotas
        .create(&PostParams::default(), &quota)
        .await
        .expect("creates");
    let hpas: Api<DynamicObject> = Api::namespaced_with(
        env.client(),
        "default",
        &ApiResource::erase::<k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler>(&()),
    );
    let hpa: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 5,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
        },
    }))
    .expect("hpa");
    hpas.create(&PostParams::default(), &hpa)
        .await
        .expect("creates");

    let (_, table_q) = table(&env, "/api/v1/namespaces/default/resourcequotas").await;
    let cells = &row(&table_q, "q")["cells"];
    assert_eq!(cells[2], "pods: 0/10, requests.cpu: 0/1");
    assert_eq!(cells[3], "limits.cpu: 0/2");

    let (_, table_h) = table(
        &env,
        "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
    )
    .await;
    let cells = &row(&table_h, "web")["cells"];
    assert_eq!(cells[1], "Deployment/web");
    assert_eq!(cells[2], "cpu: <unknown>/80%");
    assert_eq!(cells[3], "2");
    assert_eq!(cells[4], 5);
}

#[tokio::test]
async fn table_metadata_follows_the_list_or_the_object() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<DynamicObject> = Api::namespaced_with(
        env.client(),
        "default",
        &ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    );
    let mut rvs = Vec::new();
    for name in ["a", "b", "c"] {
        let cm: DynamicObject = serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
        )
        .expect("config map");
        let created = api
            .create(&PostParams::default(), &cm)
            .await
            .expect("creates");
        rvs.push(created.metadata.resource_version.expect("rv"));
    }
    // Four with kube-root-ca.crt: a page of one leaves three.
    let (_, page) = table(&env, "/api/v1/namespaces/default/configmaps?limit=1").await;
    assert!(page["metadata"]["continue"].is_string(), "{page}");
    assert_eq!(page["metadata"]["remainingItemCount"], 3);
    // One object's Table carries that object's resourceVersion.
    let (_, one) = table(&env, "/api/v1/namespaces/default/configmaps/a").await;
    assert_eq!(one["metadata"]["resourceVersion"], rvs[0].as_str());
    assert_eq!(one["rows"].as_array().map(Vec::len), Some(1));
}
