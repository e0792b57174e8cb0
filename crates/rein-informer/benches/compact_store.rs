//! The compact store beside the default (typed) store, in one process: memory per object and
//! the cost of writes and reads, each as a ratio compact / typed (issue 19).
//!
//! 20,000 realistic Pods (labels, annotations, an owner, two containers with env, ports,
//! resources, probes and mounts, a status with conditions and container statuses: about 5 KB
//! of JSON each) as rein's cache stores them by default, managedFields stripped. Memory is
//! what the process's allocator holds after the objects were stored and every other reference
//! to them dropped: for the typed store the objects, map and index; for the compact store the
//! JSON, map, index and its cache of 1,024 recently decoded objects.

use std::alloc::System;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use cap::Cap;
use k8s_openapi::api::core::v1::Pod;
use rein_informer::{CompactOptions, Indexer, NAMESPACE_INDEX, StoreKind};
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

const PODS: usize = 20_000;
const NAMESPACES: usize = 100;
const GETS: usize = 20_000;

fn main() {
    let compact_kind = StoreKind::Compact(CompactOptions::default());
    let typed = measure(StoreKind::Typed);
    let compact = measure(compact_kind);
    let ratio = |c: f64, t: f64| format!("{:.2}× the typed store's", c / t);
    let figures = [
        (
            "memory per Pod, typed store",
            typed.bytes_per_object / 1024.0,
            "KiB",
            format!("{PODS} realistic Pods, managedFields stripped (rein's default cache)"),
        ),
        (
            "memory per Pod, compact store",
            compact.bytes_per_object / 1024.0,
            "KiB",
            ratio(compact.bytes_per_object, typed.bytes_per_object)
                + "; JSON plus the cache of 1,024 decoded objects",
        ),
        (
            "insert, typed store",
            typed.insert_us,
            "µs/Pod",
            "namespace index".to_owned(),
        ),
        (
            "insert, compact store",
            compact.insert_us,
            "µs/Pod",
            ratio(compact.insert_us, typed.insert_us) + "; one JSON encode per write",
        ),
        (
            "get_by_key of a random Pod, typed store",
            typed.get_cold_us,
            "µs",
            "an Arc clone".to_owned(),
        ),
        (
            "get_by_key of a random Pod, compact store",
            compact.get_cold_us,
            "µs",
            ratio(compact.get_cold_us, typed.get_cold_us) + "; a decode (cache misses)",
        ),
        (
            "get_by_key of a recently read Pod, compact store",
            compact.get_hot_us,
            "µs",
            ratio(compact.get_hot_us, typed.get_hot_us) + "; served by the decoded cache",
        ),
        (
            "by_index of one namespace (200 Pods), typed store",
            typed.by_index_us,
            "µs",
            String::new(),
        ),
        (
            "by_index of one namespace (200 Pods), compact store",
            compact.by_index_us,
            "µs",
            ratio(compact.by_index_us, typed.by_index_us) + "; 200 decodes",
        ),
    ];
    for (case, value, unit, note) in figures {
        println!("BENCH|informer-compact|{case}|{value:.2}|{unit}|{note}");
    }
}

/// What one store costs.
struct Costs {
    bytes_per_object: f64,
    insert_us: f64,
    get_cold_us: f64,
    get_hot_us: f64,
    by_index_us: f64,
}

fn measure(kind: StoreKind) -> Costs {
    // Built before the baseline, so only what the store keeps is counted.
    let encoded: Vec<Vec<u8>> = (0..PODS)
        .map(|i| serde_json::to_vec(&pod(i)).expect("encode"))
        .collect();
    let decode = |bytes: &[u8]| -> Arc<Pod> {
        // As the reflector keeps it: a clone allocates every list at its length.
        let pod: Pod = serde_json::from_slice(bytes).expect("decode");
        Arc::new(pod.clone())
    };
    let baseline = ALLOCATOR.allocated();
    let store: Indexer<Pod> = Indexer::with_store(kind);
    let mut insert = 0.0;
    for bytes in &encoded {
        let pod = decode(bytes);
        let start = Instant::now();
        store.add(pod);
        insert += start.elapsed().as_secs_f64();
    }
    let bytes_per_object = (ALLOCATOR.allocated() - baseline) as f64 / PODS as f64;

    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let keys: Vec<String> = (0..GETS)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let i = (seed % PODS as u64) as usize;
            format!("ns-{}/{}", i % NAMESPACES, name(i))
        })
        .collect();
    let start = Instant::now();
    for key in &keys {
        black_box(store.get_by_key(key).expect("stored"));
    }
    let get_cold_us = start.elapsed().as_secs_f64() * 1e6 / GETS as f64;

    let hot = format!("ns-0/{}", name(0));
    let start = Instant::now();
    for _ in 0..GETS {
        black_box(store.get_by_key(&hot).expect("stored"));
    }
    let get_hot_us = start.elapsed().as_secs_f64() * 1e6 / GETS as f64;

    let lookups = 200;
    let start = Instant::now();
    for i in 0..lookups {
        let found = store
            .by_index(NAMESPACE_INDEX, &format!("ns-{}", i % NAMESPACES))
            .expect("index");
        assert_eq!(found.len(), PODS / NAMESPACES);
        black_box(found);
    }
    let by_index_us = start.elapsed().as_secs_f64() * 1e6 / lookups as f64;
    Costs {
        bytes_per_object,
        insert_us: insert * 1e6 / PODS as f64,
        get_cold_us,
        get_hot_us,
        by_index_us,
    }
}

fn name(i: usize) -> String {
    format!("web-{:05}-7d9f8c6b5-{:05x}", i / 10, i * 7919 % 0xfffff)
}

fn container(name: &str, image: &str, port: i32, i: usize) -> Value {
    let env: Vec<Value> = (0..6)
        .map(|e| json!({"name": format!("{}_SETTING_{e}", name.to_uppercase()), "value": format!("value-{i}-{e}")}))
        .collect();
    json!({
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": ["--port", port.to_string(), "--log-level=info", "--metrics-bind-address=:9090"],
        "env": env,
        "ports": [
            {"name": "http", "containerPort": port, "protocol": "TCP"},
            {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}
        ],
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "500m", "memory": "512Mi"}
        },
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/app", "readOnly": true},
            {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}
        ],
        "readinessProbe": {"httpGet": {"path": "/readyz", "port": port}, "periodSeconds": 10},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File"
    })
}

fn container_status(name: &str, image: &str, i: usize) -> Value {
    json!({
        "name": name,
        "image": image,
        "imageID": format!("{image}@sha256:{:064x}", i),
        "containerID": format!("containerd://{:064x}", i * 31 + 7),
        "ready": true,
        "started": true,
        "restartCount": 0,
        "state": {"running": {"startedAt": "2026-11-20T10:00:05Z"}}
    })
}

/// The `i`th realistic Pod (about 5 KB of JSON).
fn pod(i: usize) -> Pod {
    let app = format!("app-{}", i % 50);
    let conditions: Vec<Value> = ["Initialized", "Ready", "ContainersReady", "PodScheduled"]
        .iter()
        .map(|t| json!({"type": t, "status": "True", "lastTransitionTime": "2026-11-20T10:00:06Z"}))
        .collect();
    let value = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name(i),
            "generateName": format!("web-{:05}-7d9f8c6b5-", i / 10),
            "namespace": format!("ns-{}", i % NAMESPACES),
            "uid": format!("{:08x}-1f2e-4d3c-9b8a-{:012x}", i, i * 17),
            "resourceVersion": (100_000 + i).to_string(),
            "creationTimestamp": "2026-11-20T10:00:00Z",
            "labels": {"app": app, "pod-template-hash": "7d9f8c6b5", "tier": "web"},
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": "2026-11-19T08:00:00Z",
                "prometheus.io/scrape": "true"
            },
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-rs"),
                "uid": format!("{:08x}-aaaa-4bbb-8ccc-{:012x}", i % 50, i % 50),
                "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": {
            "containers": [
                container("app", "registry.example.com/team/app:1.24.3", 8080, i),
                container("sidecar", "registry.example.com/platform/proxy:2.9.1", 15001, i)
            ],
            "volumes": [
                {"name": "config", "configMap": {"name": format!("{app}-config"), "defaultMode": 420}},
                {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
                ]}}
            ],
            "nodeName": format!("node-{:03}", i % 200),
            "serviceAccountName": "default",
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ]
        },
        "status": {
            "phase": "Running",
            "conditions": conditions,
            "hostIP": format!("10.0.{}.{}", i % 200 / 250, i % 200),
            "podIP": format!("10.244.{}.{}", i / 250 % 256, i % 250),
            "podIPs": [{"ip": format!("10.244.{}.{}", i / 250 % 256, i % 250)}],
            "startTime": "2026-11-20T10:00:01Z",
            "qosClass": "Burstable",
            "containerStatuses": [
                container_status("app", "registry.example.com/team/app:1.24.3", i),
                container_status("sidecar", "registry.example.com/platform/proxy:2.9.1", i)
            ]
        }
    });
    serde_json::from_value(value).expect("a valid Pod")
}
