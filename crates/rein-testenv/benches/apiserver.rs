//! Benchmarks of the test API server: create throughput (small ConfigMaps and realistic
//! ~5 KB Pods), a 100,000-object list, watch fan-out (100 watchers × 10,000 events), and the
//! cost of enforcing RBAC on a get (`-- rbac`).
//! Prints `BENCH|…` lines for `cargo xtask bench`.

use std::time::{Duration, Instant};

use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, PostParams};
use rein_testenv::{AdmissionPlugin, TestEnv};
use serde_json::json;

const LIST_OBJECTS: usize = 100_000;
const WATCHERS: usize = 100;
const WATCH_EVENTS: usize = 10_000;
const CONCURRENCY: usize = 64;
const PODS: usize = 20_000;
const OWNERS: usize = 50;

fn configmap(i: usize) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": format!("cm-{i:06}"), "labels": {"app": "bench"}},
        "data": {"i": i.to_string()},
    }))
    .expect("configmap")
}

async fn create_many(api: &Api<ConfigMap>, range: std::ops::Range<usize>) -> Duration {
    let start = Instant::now();
    futures::stream::iter(range)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &configmap(i))
                    .await
                    .expect("creates");
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
    start.elapsed()
}

async fn list_and_create() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let took = create_many(&api, 0..LIST_OBJECTS).await;
    let per_sec = LIST_OBJECTS as f64 / took.as_secs_f64();
    println!(
        "BENCH|testenv|create throughput ({CONCURRENCY} concurrent, kube-client)|{per_sec:.0}|creates/s|higher is better"
    );

    let request = http::Request::get("/api/v1/namespaces/default/configmaps")
        .body(Vec::new())
        .expect("request");
    let client = env.client();
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let text = client.request_text(request.clone()).await.expect("lists");
        best = best.min(start.elapsed());
        assert!(text.len() > LIST_OBJECTS * 100);
    }
    println!(
        "BENCH|testenv|list 100,000 configmaps (raw HTTP, best of 3)|{:.3}|s|aim < 0.5 s",
        best.as_secs_f64()
    );
    let start = Instant::now();
    let typed = api.list(&Default::default()).await.expect("lists");
    assert_eq!(typed.items.len(), LIST_OBJECTS);
    println!(
        "BENCH|testenv|list 100,000 configmaps (typed, incl. client decode)|{:.3}|s|note: client-side decode included",
        start.elapsed().as_secs_f64()
    );
}

/// A realistic Pod (labels, annotations, an owner, two containers with env, ports, probes,
/// resources and mounts, projected volumes, tolerations): about 3 KB as sent, about 5 KB as
/// stored with defaults and managedFields.
fn pod(i: usize, owner_uid: &str) -> serde_json::Value {
    let app = format!("app-{}", i % OWNERS);
    let container = |name: &str, image: &str, port: i64| {
        let env: Vec<serde_json::Value> = (0..6)
            .map(|e| json!({"name": format!("{}_SETTING_{e}", name.to_uppercase()), "value": format!("value-{i}-{e}")}))
            .collect();
        json!({
            "name": name, "image": image, "imagePullPolicy": "IfNotPresent",
            "args": ["--port", port.to_string(), "--log-level=info"],
            "env": env,
            "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"},
                      {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/app", "readOnly": true},
                             {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": port}, "periodSeconds": 10}
        })
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("pod-{i:06}"),
            "labels": {"app": app, "app.kubernetes.io/name": app, "app.kubernetes.io/version": "1.24.3",
                       "pod-template-hash": format!("{:08x}", i * 2_654_435_761 % 0xffff_ffff)},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
                            "checksum/config": "3f1c2a9be0d4c7e8a1f6b2d9c0e7a4b1c8d5e2f9a6b3c0d7e4f1a8b5c2d9e6f3"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-rs"),
                                 "uid": owner_uid, "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "containers": [container("app", "registry.example.com/team/app:1.24.3", 8080),
                           container("sidecar", "registry.example.com/infra/proxy:2.7.1", 15001)],
            "volumes": [
                {"name": "config", "configMap": {"name": format!("{app}-config")}},
                {"name": "kube-api-access", "projected": {"sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
                ]}}
            ],
            "nodeName": format!("node-{}", i % 100),
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ]
        }
    })
}

/// Creates `PODS` realistic Pods from pre-encoded bodies (so the figure is the server's, not
/// the client's serialisation), `CONCURRENCY` in flight; reports throughput and the latency
/// tail under that burst.
///
/// With `admission` false the built-in admission plugins are off, so the two runs show what
/// they cost per create.
async fn pod_creates(admission: bool) {
    let mut builder = TestEnv::builder();
    for plugin in [
        AdmissionPlugin::ResourceQuota,
        AdmissionPlugin::LimitRanger,
        AdmissionPlugin::ServiceAccount,
        AdmissionPlugin::Priority,
        AdmissionPlugin::DefaultTolerationSeconds,
    ] {
        builder = builder.admission_plugin(plugin, admission);
    }
    let env = builder.start().await.expect("starts");
    let plugins = if admission {
        ""
    } else {
        ", built-in admission off"
    };
    let client = env.client();
    let mut owners = Vec::new();
    for j in 0..OWNERS {
        let rs = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": format!("app-{j}-rs")},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": format!("app-{j}")}},
                     "template": {"metadata": {"labels": {"app": format!("app-{j}")}},
                                  "spec": {"containers": [{"name": "app", "image": "app:1"}]}}}
        });
        let request = http::Request::post("/apis/apps/v1/namespaces/default/replicasets")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&rs).expect("encodes"))
            .expect("request");
        let created: serde_json::Value =
            serde_json::from_str(&client.request_text(request).await.expect("creates"))
                .expect("json");
        owners.push(
            created["metadata"]["uid"]
                .as_str()
                .expect("uid")
                .to_string(),
        );
    }
    let bodies: Vec<Vec<u8>> = (0..PODS)
        .map(|i| serde_json::to_vec(&pod(i, &owners[i % OWNERS])).expect("encodes"))
        .collect();
    let sent = bodies.iter().map(Vec::len).sum::<usize>() / PODS;
    let start = Instant::now();
    let mut latencies: Vec<Duration> = futures::stream::iter(bodies)
        .map(|body| {
            let client = client.clone();
            async move {
                let request =
                    http::Request::post("/api/v1/namespaces/default/pods?fieldManager=bench")
                        .header("content-type", "application/json")
                        .body(body)
                        .expect("request");
                let began = Instant::now();
                client.request_text(request).await.expect("creates");
                began.elapsed()
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let took = start.elapsed();
    latencies.sort();
    let stored = client
        .request_text(
            http::Request::get("/api/v1/namespaces/default/pods/pod-000000")
                .body(Vec::new())
                .expect("request"),
        )
        .await
        .expect("gets")
        .len();
    println!(
        "BENCH|testenv|create throughput, realistic Pods ({sent} B sent, {stored} B stored; {CONCURRENCY} concurrent, raw bodies{plugins})|{:.0}|creates/s|higher is better",
        PODS as f64 / took.as_secs_f64()
    );
    let p = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    println!(
        "BENCH|testenv|Pod create latency p50 ({CONCURRENCY} in flight{plugins})|{:.2}|ms|lower is better",
        p(0.5).as_secs_f64() * 1e3
    );
    println!(
        "BENCH|testenv|Pod create latency p99 ({CONCURRENCY} in flight{plugins})|{:.2}|ms|lower is better",
        p(0.99).as_secs_f64() * 1e3
    );
}

async fn watch_fan_out() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let request = http::Request::get(
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0",
        )
        .body(Vec::new())
        .expect("request");
        let stream = env.client().request_stream(request).await.expect("watches");
        watchers.push(tokio::spawn(async move {
            let mut lines = Box::pin(stream).lines();
            let mut seen = 0;
            while seen < WATCH_EVENTS {
                match lines.next().await {
                    Some(Ok(line)) if line.starts_with("{\"type\":\"ADDED\"") => seen += 1,
                    Some(Ok(_)) => {}
                    Some(Err(e)) => panic!("watch failed: {e}"),
                    None => break,
                }
            }
            (seen, Instant::now())
        }));
    }
    let start = Instant::now();
    let writes = create_many(&api, 0..WATCH_EVENTS).await;
    let writes_done = start + writes;
    let mut last = writes_done;
    for w in watchers {
        let (seen, at) = w.await.expect("joins");
        assert_eq!(seen, WATCH_EVENTS);
        last = last.max(at);
    }
    println!(
        "BENCH|testenv|watch fan-out 100 watchers x 10,000 events (raw streams; first write to last delivery)|{:.3}|s|aim < 2 s",
        (last - start).as_secs_f64()
    );
    println!(
        "BENCH|testenv|watch fan-out lag after the last write|{:.3}|s|lower is better",
        (last - writes_done).as_secs_f64()
    );
}

/// Bindings besides the one that allows the reads: each request in enforcing mode walks them.
const OTHER_BINDINGS: usize = 200;
/// Sequential gets per measurement.
const GETS: usize = 2_000;

/// Median over three rounds of `GETS` sequential gets of one ConfigMap, in µs per get.
async fn get_latency(client: kube_client::Client) -> f64 {
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut rounds = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        for _ in 0..GETS {
            api.get("cm-000000").await.expect("gets");
        }
        rounds.push(start.elapsed().as_secs_f64() * 1e6 / GETS as f64);
    }
    rounds.sort_by(f64::total_cmp);
    rounds[1]
}

/// A get as an admin on an open server against a get as a user whose RoleBinding sits among
/// `OTHER_BINDINGS` RoleBindings and as many ClusterRoleBindings, with RBAC enforced.
async fn rbac_enforcement() {
    let alice = rein_testenv::User::new("alice").token("alice-token");
    for enforce in [false, true] {
        let env = TestEnv::builder()
            .enforce_rbac(enforce)
            .user(alice.clone())
            .start()
            .await
            .expect("starts");
        let admin = env.client();
        Api::<ConfigMap>::namespaced(admin.clone(), "default")
            .create(&PostParams::default(), &configmap(0))
            .await
            .expect("creates");
        let post = |path: String, body: serde_json::Value| {
            let admin = admin.clone();
            async move {
                let req = http::Request::post(path)
                    .header("content-type", "application/json")
                    .body(serde_json::to_vec(&body).expect("json"))
                    .expect("request");
                admin
                    .request::<serde_json::Value>(req)
                    .await
                    .expect("creates");
            }
        };
        let rbac = "/apis/rbac.authorization.k8s.io/v1";
        post(
            format!("{rbac}/namespaces/default/roles"),
            json!({"metadata": {"name": "reader"}, "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
        )
        .await;
        let subject = |name: &str| {
            json!([{"apiGroup": "rbac.authorization.k8s.io",
            "kind": "User", "name": name}])
        };
        for i in 0..OTHER_BINDINGS {
            post(
                format!("{rbac}/namespaces/default/rolebindings"),
                json!({"metadata": {"name": format!("other-{i}")}, "subjects": subject(&format!("u{i}")),
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}}),
            )
            .await;
            post(
                format!("{rbac}/clusterrolebindings"),
                json!({"metadata": {"name": format!("other-{i}")}, "subjects": subject(&format!("u{i}")),
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "cluster-admin"}}),
            )
            .await;
        }
        post(
            format!("{rbac}/namespaces/default/rolebindings"),
            json!({"metadata": {"name": "zz-alice"}, "subjects": subject("alice"),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}}),
        )
        .await;
        let client = env.client_for(&alice).await.expect("client");
        let us = get_latency(client).await;
        let mode = if enforce { "enforced" } else { "not enforced" };
        println!(
            "BENCH|testenv|get as a user, RBAC {mode} ({OTHER_BINDINGS} other RoleBindings and ClusterRoleBindings)|{us:.1}|us/op|lower is better"
        );
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // `cargo bench -p rein-testenv --bench apiserver -- fan-out` runs only the fan-out case,
    // `-- pods` only the realistic-Pod creates.
    let only_fan_out = std::env::args().any(|a| a == "fan-out");
    let only_pods = std::env::args().any(|a| a == "pods");
    let only_rbac = std::env::args().any(|a| a == "rbac");
    runtime.block_on(async {
        if only_fan_out {
            watch_fan_out().await;
            return;
        }
        if only_pods {
            pod_creates(true).await;
            pod_creates(false).await;
            return;
        }
        if only_rbac {
            rbac_enforcement().await;
            return;
        }
        let start = Instant::now();
        let env = TestEnv::start().await.expect("starts");
        println!(
            "BENCH|testenv|start-up (TestEnv::start, incl. client)|{:.2}|ms|aim < 100 ms",
            start.elapsed().as_secs_f64() * 1e3
        );
        drop(env);
        list_and_create().await;
        pod_creates(true).await;
        pod_creates(false).await;
        watch_fan_out().await;
        rbac_enforcement().await;
    });
}
