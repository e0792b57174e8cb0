//! The LimitRanger admission plugin over real HTTP: a namespace's LimitRanges default new
//! Pods' container resources and bound Containers, Pods and PersistentVolumeClaims, with
//! kube-apiserver's 403 and messages.

use k8s_openapi::api::core::v1::{LimitRange, PersistentVolumeClaim, Pod};
use kube_client::Client;
use kube_client::api::{Api, PostParams};
use rein_testenv::{AdmissionPlugin, TestEnv};
use serde_json::{Value, json};

use super::quota::{forbidden, namespace, pod};

/// Creates `pod` and answers the created Pod as JSON.
async fn created(pods: &Api<Pod>, pod: Pod) -> Value {
    let created = pods
        .create(&PostParams::default(), &pod)
        .await
        .expect("creates");
    serde_json::to_value(&created).expect("json")
}

async fn limit_range(client: &Client, ns: &str, limits: Value) -> LimitRange {
    let api: Api<LimitRange> = Api::namespaced(client.clone(), ns);
    let lr =
        serde_json::from_value(json!({"metadata": {"name": "limits"}, "spec": {"limits": limits}}))
            .expect("limit range");
    api.create(&PostParams::default(), &lr)
        .await
        .expect("creates the limit range")
}

fn pvc(name: &str, storage: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": storage}},
        },
    }))
    .expect("pvc")
}

#[tokio::test]
async fn container_defaults_fill_in_what_pods_leave_out() {
    let env = TestEnv::start().await.expect("server starts");
    let client = env.client();
    namespace(&client, "lr").await;
    let stored = limit_range(
        &client,
        "lr",
        json!([{
            "type": "Container",
            "default": {"cpu": "500m", "memory": "256Mi"},
            "defaultRequest": {"cpu": "100m"},
        }]),
    )
    .await;
    // The LimitRange is stored defaulted: the default request follows the default limit.
    let item = serde_json::to_value(&stored.spec.expect("spec").limits[0]).expect("json");
    assert_eq!(
        item["defaultRequest"],
        json!({"cpu": "100m", "memory": "256Mi"})
    );

    let pods: Api<Pod> = Api::namespaced(client.clone(), "lr");
    let json = created(&pods, pod("bare", json!({}))).await;
    assert_eq!(
        json["spec"]["containers"][0]["resources"],
        json!({
            "limits": {"cpu": "500m", "memory": "256Mi"},
            "requests": {"cpu": "100m", "memory": "256Mi"},
        })
    );
    assert_eq!(
        json["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for \
         container app"
    );
    // What a container sets is kept; a limit without a request is its request.
    let json = created(&pods, pod("own", json!({"limits": {"cpu": "2"}}))).await;
    assert_eq!(
        json["spec"]["containers"][0]["resources"],
        json!({
            "limits": {"cpu": "2", "memory": "256Mi"},
            "requests": {"cpu": "2", "memory": "256Mi"},
        })
    );
}

#[tokio::test]
async fn container_and_pod_bounds_refuse_with_kubes_messages() {
    let env = TestEnv::start().await.expect("server starts");
    let client = env.client();
    namespace(&client, "bounds").await;
    limit_range(
        &client,
        "bounds",
        json!([
            {"type": "Container", "max": {"cpu": "1"}, "min": {"memory": "64Mi"},
             "maxLimitRequestRatio": {"cpu": "2"}},
        ]),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "bounds");
    let create = |p: Pod| {
        let pods = pods.clone();
        async move { pods.create(&PostParams::default(), &p).await }
    };
    let message = forbidden(
        create(pod(
            "big",
            json!({"limits": {"cpu": "2"}, "requests": {"cpu": "1500m", "memory": "100Mi"}}),
        ))
        .await,
    );
    assert_eq!(
        message,
        "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
    );
    let message = forbidden(
        create(pod(
            "small",
            json!({"requests": {"cpu": "500m", "memory": "32Mi"}, "limits": {"cpu": "1"}}),
        ))
        .await,
    );
    assert_eq!(
        message,
        "pods \"small\" is forbidden: minimum memory usage per Container is 64Mi, but request \
         is 32Mi"
    );
    let message = forbidden(
        create(pod(
            "spiky",
            json!({"requests": {"cpu": "100m", "memory": "100Mi"}, "limits": {"cpu": "500m"}}),
        ))
        .await,
    );
    assert_eq!(
        message,
        "pods \"spiky\" is forbidden: cpu max limit to request ratio per Container is 2, but \
         provided ratio is 5.000000"
    );
    // Within bounds (the max is the default limit).
    let created = create(pod(
        "fits",
        json!({"requests": {"cpu": "500m", "memory": "100Mi"}}),
    ))
    .await
    .expect("within bounds");
    let json = serde_json::to_value(&created).expect("json");
    assert_eq!(
        json["spec"]["containers"][0]["resources"]["limits"]["cpu"],
        "1"
    );
}

#[tokio::test]
async fn pod_bounds_apply_to_the_sum_over_containers() {
    let env = TestEnv::start().await.expect("server starts");
    let client = env.client();
    namespace(&client, "pod-bounds").await;
    limit_range(
        &client,
        "pod-bounds",
        json!([{"type": "Pod", "max": {"memory": "1Gi"}}]),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "pod-bounds");
    let two: Pod = serde_json::from_value(json!({
        "metadata": {"name": "pair"},
        "spec": {"containers": [
            {"name": "a", "image": "nginx:1.27", "resources": {"requests": {"cpu": "500m", "memory": "600Mi"}, "limits": {"cpu": "1", "memory": "600Mi"}}},
            {"name": "b", "image": "nginx:1.27", "resources": {"requests": {"cpu": "500m", "memory": "600Mi"}, "limits": {"cpu": "1", "memory": "600Mi"}}},
        ]},
    }))
    .expect("pod");
    let message = forbidden(pods.create(&PostParams::default(), &two).await);
    assert_eq!(
        message,
        "pods \"pair\" is forbidden: maximum memory usage per Pod is 1Gi, but limit is 1200Mi"
    );
    let message = forbidden(
        pods.create(&PostParams::default(), &pod("unbounded", json!({})))
            .await,
    );
    assert_eq!(
        message,
        "pods \"unbounded\" is forbidden: maximum memory usage per Pod is 1Gi.  No limit is \
         specified"
    );
}

#[tokio::test]
async fn claims_are_bounded_on_create_and_update() {
    let env = TestEnv::start().await.expect("server starts");
    let client = env.client();
    namespace(&client, "claims").await;
    limit_range(
        &client,
        "claims",
        json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}}]),
    )
    .await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "claims");
    let message = forbidden(
        claims
            .create(&PostParams::default(), &pvc("huge", "20Gi"))
            .await,
    );
    assert_eq!(
        message,
        "persistentvolumeclaims \"huge\" is forbidden: maximum storage usage per \
         PersistentVolumeClaim is 10Gi, but request is 20Gi"
    );
    let message = forbidden(
        claims
            .create(&PostParams::default(), &pvc("tiny", "500Mi"))
            .await,
    );
    assert_eq!(
        message,
        "persistentvolumeclaims \"tiny\" is forbidden: minimum storage usage per \
         PersistentVolumeClaim is 1Gi, but request is 500Mi"
    );
    claims
        .create(&PostParams::default(), &pvc("ok", "5Gi"))
        .await
        .expect("within bounds");
}

#[tokio::test]
async fn limit_ranger_off_leaves_pods_as_sent() {
    let env = TestEnv::builder()
        .admission_plugin(AdmissionPlugin::LimitRanger, false)
        .start()
        .await
        .expect("server starts");
    let client = env.client();
    limit_range(
        &client,
        "default",
        json!([{"type": "Container", "default": {"cpu": "1"}, "max": {"cpu": "1"}}]),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let json = created(&pods, pod("as-sent", json!({"limits": {"cpu": "4"}}))).await;
    // No default, no max: only the Pod defaulting's requests copied from the limits.
    assert_eq!(
        json["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "4"}, "requests": {"cpu": "4"}})
    );
    assert!(
        json["metadata"]["annotations"]
            .get("kubernetes.io/limit-ranger")
            .is_none()
    );
}
