//! The shared workload: realistic Pods, created in bulk against an API server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube_client::Api;
use kube_client::api::PostParams;
use serde_json::json;

/// Annotation holding the wall-clock time (unix nanoseconds) at which the writer sent the object,
/// so a child process can measure event→reconcile latency.
pub(crate) const SENT_AT: &str = "bench.rein.dev/sent-at-ns";

/// Unix time in nanoseconds.
pub(crate) fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// A Pod of about 2.5 KB of JSON: two containers with env, ports, probes, resources and mounts.
pub(crate) fn pod(ns: &str, i: usize) -> Pod {
    let env: Vec<_> = (0..6)
        .map(|e| json!({"name": format!("ENV_VAR_{e}"), "value": format!("value-{i}-{e}")}))
        .collect();
    let container = |name: &str, port: u16| {
        json!({
            "name": name,
            "image": format!("registry.example.com/team/{name}:v1.{}", i % 17),
            "args": ["--listen", format!(":{port}"), "--log-level", "info"],
            "env": env,
            "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": port}, "periodSeconds": 10},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/config", "readOnly": true}],
        })
    };
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": format!("pod-{i:06}"),
            "namespace": ns,
            "labels": {"app": format!("app-{}", i % 50), "tier": "backend", "bench": "true"},
            "annotations": {"team": "platform", SENT_AT: now_ns().to_string()},
        },
        "spec": {
            "containers": [container("server", 8080), container("sidecar", 9090)],
            "volumes": [{"name": "config", "configMap": {"name": "app-config"}}],
            "nodeName": format!("node-{}", i % 20),
            "serviceAccountName": "default",
        },
        "status": {"phase": "Running", "podIP": format!("10.0.{}.{}", (i / 250) % 250, i % 250)},
    }))
    .expect("the workload Pod is valid")
}

/// Creates `pods` Pods in `ns` with `concurrency` requests in flight; returns how many exist.
pub(crate) async fn create_pods(api: &Api<Pod>, ns: &str, pods: usize, concurrency: usize) -> usize {
    let created = Arc::new(AtomicUsize::new(0));
    futures::stream::iter(0..pods)
        .for_each_concurrent(concurrency, |i| {
            let api = api.clone();
            let created = created.clone();
            async move {
                if api.create(&PostParams::default(), &pod(ns, i)).await.is_ok() {
                    created.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
        .await;
    created.load(Ordering::Relaxed)
}
