//! Benchmarks of the delegating client's read paths against rein-testenv: cached get/list
//! (label selector, field index) versus a live get from the API server, and a cached get that
//! shares the cached object versus one that deep-copies it (what `get` did before it returned
//! `Arc<K>`), on Pods as a cluster writes them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, Namespace, Pod, PodSpec};
use kube_client::core::ObjectMeta;
use rein_client::cache::{Cache, CacheOptions};
use rein_client::{Client, ListOptions, PostParams};
use rein_scheme::ObjectKey;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const PODS: usize = 1_000;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("building the runtime: {e}"));
    runtime.block_on(run());
}

fn pod(i: usize) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(format!("pod-{i}")),
            labels: Some([("app".to_string(), format!("app-{}", i % 10))].into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some(format!("node-{}", i % 50)),
            containers: vec![Container {
                name: "c".into(),
                image: Some("nginx".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A Pod as a cluster holds it (labels, annotations, two containers with env,
/// ports, resources, probes and mounts, volumes, a status with conditions): about 4 KB of JSON.
fn realistic_pod(i: usize) -> Pod {
    let container = |name: &str, port: i32| {
        let env: Vec<_> = (0..6)
            .map(|e| json!({"name": format!("{}_SETTING_{e}", name.to_uppercase()), "value": format!("value-{i}-{e}")}))
            .collect();
        json!({
            "name": name, "image": format!("registry.example.com/team/{name}:1.24.3"),
            "imagePullPolicy": "IfNotPresent",
            "args": ["--port", port.to_string(), "--log-level=info", "--metrics-bind-address=:9090"],
            "env": env,
            "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"},
                      {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                          "limits": {"cpu": "500m", "memory": "512Mi"}},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/app", "readOnly": true},
                             {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
            "readinessProbe": {"httpGet": {"path": "/readyz", "port": port}, "periodSeconds": 10},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"
        })
    };
    let condition = |t: &str| json!({"type": t, "status": "True", "lastTransitionTime": "2026-11-20T10:00:00Z"});
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("big-{i}"), "namespace": "realistic",
            "labels": {"app": format!("app-{}", i % 10), "pod-template-hash": "5d8f7c9b6d", "tier": "backend"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-20T10:00:00Z",
                            "prometheus.io/scrape": "true", "prometheus.io/port": "9090"}
        },
        "spec": {
            "containers": [container("app", 8080), container("sidecar", 8081)],
            "volumes": [{"name": "config", "configMap": {"name": "app-config"}},
                        {"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}],
            "nodeName": format!("big-node-{}", i % 50), "serviceAccountName": "app", "restartPolicy": "Always",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
        },
        "status": {
            "phase": "Running", "podIP": "10.244.1.17", "hostIP": "172.18.0.3", "qosClass": "Burstable",
            "startTime": "2026-11-20T10:00:00Z",
            "conditions": [condition("Initialized"), condition("Ready"), condition("ContainersReady"), condition("PodScheduled")],
            "containerStatuses": [
                {"name": "app", "ready": true, "restartCount": 0, "image": "registry.example.com/team/app:1.24.3",
                 "imageID": "registry.example.com/team/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                 "containerID": "containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                 "state": {"running": {"startedAt": "2026-11-20T10:00:05Z"}}},
                {"name": "sidecar", "ready": true, "restartCount": 0, "image": "registry.example.com/team/sidecar:1.24.3",
                 "imageID": "registry.example.com/team/sidecar@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                 "containerID": "containerd://fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
                 "state": {"running": {"startedAt": "2026-11-20T10:00:05Z"}}}
            ]
        }
    }))
    .unwrap_or_else(|e| panic!("building a realistic Pod: {e}"))
}

fn per_op(elapsed: Duration, n: usize) -> f64 {
    elapsed.as_secs_f64() * 1e6 / n as f64
}

async fn run() {
    let env = rein_testenv::TestEnv::start()
        .await
        .unwrap_or_else(|e| panic!("starting the test server: {e}"));
    let live = Client::new(env.client());
    for i in 0..PODS {
        live.create(&pod(i), &PostParams::default())
            .await
            .unwrap_or_else(|e| panic!("seeding: {e}"));
    }
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some("realistic".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    live.create(&ns, &PostParams::default())
        .await
        .unwrap_or_else(|e| panic!("creating the namespace: {e}"));
    for i in 0..PODS {
        live.create(&realistic_pod(i), &PostParams::default())
            .await
            .unwrap_or_else(|e| panic!("seeding: {e}"));
    }
    let cache = Cache::new(env.client(), CacheOptions::default());
    cache
        .index_field::<Pod>("spec.nodeName", |p: &Pod| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .into_iter()
                .collect()
        })
        .unwrap_or_else(|e| panic!("indexing: {e}"));
    let client = Client::builder(env.client()).cache(cache.clone()).build();
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (cache, stop) = (cache.clone(), stop.clone());
        async move { cache.start(stop).await }
    });
    assert!(cache.wait_for_cache_sync().await, "the cache syncs");

    let key = ObjectKey::new("default", "pod-7");
    let n = 20_000;
    let start = Instant::now();
    for _ in 0..n {
        let _: Arc<Pod> = client.get(&key).await.unwrap_or_else(|e| panic!("{e}"));
    }
    println!(
        "BENCH|client reads|cached get (1k pods cached)|{:.2}|us/op|shares the cached Pod (no copy)",
        per_op(start.elapsed(), n)
    );

    // Realistic Pods: the shared get against the deep-copying get `get` was before it returned
    // `Arc<K>` (the same read, then a copy, as `Arc::unwrap_or_clone` makes while the cache
    // holds the object).
    let big = ObjectKey::new("realistic", "big-7");
    let json_len = serde_json::to_vec(
        &*client
            .get::<Pod>(&big)
            .await
            .unwrap_or_else(|e| panic!("{e}")),
    )
    .map_or(0, |v| v.len());
    let n = 20_000;
    let (mut shared, mut copied) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        let start = Instant::now();
        for _ in 0..n {
            let got: Arc<Pod> = client.get(&big).await.unwrap_or_else(|e| panic!("{e}"));
            std::hint::black_box(&got);
        }
        shared = shared.min(per_op(start.elapsed(), n));
        let start = Instant::now();
        for _ in 0..n {
            let got: Pod =
                Arc::unwrap_or_clone(client.get(&big).await.unwrap_or_else(|e| panic!("{e}")));
            std::hint::black_box(&got);
        }
        copied = copied.min(per_op(start.elapsed(), n));
    }
    println!(
        "BENCH|client reads|cached get, realistic Pod ({json_len} B of JSON), shared|{shared:.2}|us/op|best of 3 × 20k; {:.1}× the deep-copying get's rate (aim ≥ 10×)",
        copied / shared
    );
    println!(
        "BENCH|client reads|cached get, realistic Pod, deep copy (get before Arc<K>)|{copied:.2}|us/op|best of 3 × 20k",
    );

    let n = 300;
    let start = Instant::now();
    for _ in 0..n {
        let _: Arc<Pod> = live.get(&key).await.unwrap_or_else(|e| panic!("{e}"));
    }
    println!(
        "BENCH|client reads|live get from the API server|{:.1}|us/op|rein-testenv over loopback HTTP",
        per_op(start.elapsed(), n)
    );

    let n = 500;
    let by_label = ListOptions::default()
        .namespace("default")
        .matching_labels([("app", "app-3")]);
    let start = Instant::now();
    for _ in 0..n {
        let list = client
            .list::<Pod>(&by_label)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(list.items.len(), PODS / 10);
    }
    println!(
        "BENCH|client reads|cached list by label, 100 of 1k match|{:.1}|us/op|",
        per_op(start.elapsed(), n)
    );

    let by_field = ListOptions::default().matching_fields([("spec.nodeName", "node-3")]);
    let n = 5_000;
    let start = Instant::now();
    for _ in 0..n {
        let list = client
            .list::<Pod>(&by_field)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(list.items.len(), PODS / 50);
    }
    println!(
        "BENCH|client reads|cached list by field index, 20 of 1k match|{:.1}|us/op|",
        per_op(start.elapsed(), n)
    );

    stop.cancel();
    let _ = task.await;
}
