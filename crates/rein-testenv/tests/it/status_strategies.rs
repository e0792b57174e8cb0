//! Per-kind status strategies as kube-apiserver's: a Deployment's status write keeps the
//! metadata it carries but its labels (the deployment controller writes its revision
//! annotation that way), and a Deployment's generation follows its annotations too.

use serde_json::json;

use crate::crd_support::{raw, raw_typed};
use rein_testenv::TestEnv;

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

#[tokio::test]
async fn a_deployment_status_write_keeps_annotations_and_resets_spec_and_labels() {
    let env = TestEnv::start().await.expect("starts");
    let (code, created) = raw(
        &env,
        "POST",
        DEPLOYMENTS,
        Some(&json!({
            "metadata": {"name": "d", "labels": {"app": "d"}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "d"}},
                "template": {"metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}},
            },
        })),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["generation"], 1);

    let (code, patched) = raw_typed(
        &env,
        "PATCH",
        &format!("{DEPLOYMENTS}/d/status"),
        Some(&json!({
            "metadata": {"annotations": {"deployment.kubernetes.io/revision": "1"},
                "labels": {"app": "changed"}},
            "spec": {"replicas": 5},
            "status": {"observedGeneration": 1, "replicas": 1},
        })),
        "application/merge-patch+json",
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(
        patched["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    assert_eq!(
        patched["metadata"]["labels"],
        json!({"app": "d"}),
        "labels reset"
    );
    assert_eq!(patched["spec"]["replicas"], 1, "spec reset");
    assert_eq!(patched["status"]["replicas"], 1);
    assert_eq!(
        patched["metadata"]["generation"], 1,
        "a status write bumps nothing"
    );

    let (code, annotated) = raw_typed(
        &env,
        "PATCH",
        &format!("{DEPLOYMENTS}/d"),
        Some(&json!({"metadata": {"annotations": {"note": "x"}}})),
        "application/merge-patch+json",
    )
    .await;
    assert_eq!(code, 200, "{annotated}");
    assert_eq!(
        annotated["metadata"]["generation"], 2,
        "annotations are copied to ReplicaSets, so they bump the generation"
    );
}
