//! Realistic Pods for preloading: labels, annotations, two containers with env, ports, resources
//! and volume mounts, and a status with conditions (a few KB of JSON each, like a real cluster's).

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

/// The namespace every benchmark object lives in.
pub(crate) const NAMESPACE: &str = "default";

/// The namespace of the `i`th preloaded Pod when the Pods are spread over `namespaces`
/// namespaces: [`NAMESPACE`] for one, else `bench-<i mod namespaces>`.
pub(crate) fn namespace_of(i: usize, namespaces: usize) -> String {
    if namespaces <= 1 {
        NAMESPACE.to_owned()
    } else {
        format!("bench-{}", i % namespaces)
    }
}

/// How many of `pods` Pods spread over `namespaces` namespaces lie in the first `watched`.
pub(crate) fn pods_in_first(pods: usize, namespaces: usize, watched: usize) -> usize {
    if namespaces <= 1 {
        return pods;
    }
    (0..pods).filter(|i| i % namespaces < watched).count()
}

/// The name of the `i`th preloaded Pod.
pub(crate) fn pod_name(i: usize) -> String {
    format!("pod-{i:06}")
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

/// How many ReplicaSets own the preloaded Pods (Pod `i` belongs to ReplicaSet `i % OWNERS`).
pub(crate) const OWNERS: usize = 50;

/// The `j`th owning ReplicaSet. It exists on the server (created before the Pods), so the
/// server's garbage collector leaves its Pods alone, as in a real cluster.
pub(crate) fn replica_set(j: usize, namespace: &str) -> anyhow::Result<ReplicaSet> {
    let app = format!("app-{j}");
    let value = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": format!("{app}-rs"), "namespace": namespace, "labels": {"app": app}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": app}},
            "template": {
                "metadata": {"labels": {"app": app}},
                "spec": {"containers": [{"name": "app", "image": "registry.example.com/team/app:1.24.3"}]}
            }
        }
    });
    Ok(serde_json::from_value(value)?)
}

/// The `i`th preloaded Pod as created in `namespace` (the server sets `status.phase: Pending`
/// on create).
pub(crate) fn pod(i: usize, namespace: &str, owner_uids: &[String]) -> Pod {
    let app = format!("app-{}", i % 50);
    let value = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(i),
            "namespace": namespace,
            "labels": {
                "app": app,
                "app.kubernetes.io/name": app,
                "app.kubernetes.io/instance": format!("{app}-prod"),
                "app.kubernetes.io/version": "1.24.3",
                "pod-template-hash": format!("{:08x}", i * 2_654_435_761 % 0xffff_ffff),
                "tier": if i.is_multiple_of(2) { "frontend" } else { "backend" }
            },
            "annotations": {
                "kubernetes.io/psp": "restricted",
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "checksum/config": "3f1c2a9be0d4c7e8a1f6b2d9c0e7a4b1c8d5e2f9a6b3c0d7e4f1a8b5c2d9e6f3"
            },
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-rs"),
                "uid": owner_uids[i % owner_uids.len()],
                "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": {
            "containers": [
                container("app", "registry.example.com/team/app:1.24.3", 8080, i),
                container("sidecar", "registry.example.com/infra/proxy:2.7.1", 15001, i)
            ],
            "volumes": [
                {"name": "config", "configMap": {"name": format!("{app}-config"), "defaultMode": 420}},
                {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}
                ]}}
            ],
            "nodeName": format!("node-{}", i % 100),
            "serviceAccountName": "default",
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ]
        }
    });
    serde_json::from_value(value).expect("the benchmark Pod is a valid Pod")
}

/// The status the preloader writes after create: running, with conditions and container statuses.
pub(crate) fn status_patch(i: usize) -> Value {
    let time = "2026-11-22T10:00:00Z";
    let condition = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": time});
    let container_status = |name: &str, image: &str| {
        json!({
            "name": name, "image": image, "imageID": format!("{image}@sha256:9b2a6c1f0e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b"),
            "containerID": format!("containerd://{:064x}", i), "ready": true, "restartCount": 0, "started": true,
            "state": {"running": {"startedAt": time}}
        })
    };
    json!({
        "status": {
            "phase": "Running",
            "conditions": [condition("PodReadyToStartContainers"), condition("Initialized"), condition("Ready"), condition("ContainersReady"), condition("PodScheduled")],
            "hostIP": format!("10.0.{}.{}", i % 100 / 250, i % 100 + 1),
            "podIP": format!("10.244.{}.{}", (i / 250) % 250, i % 250 + 1),
            "podIPs": [{"ip": format!("10.244.{}.{}", (i / 250) % 250, i % 250 + 1)}],
            "startTime": time,
            "qosClass": "Burstable",
            "containerStatuses": [
                container_status("app", "registry.example.com/team/app:1.24.3"),
                container_status("sidecar", "registry.example.com/infra/proxy:2.7.1")
            ]
        }
    })
}
