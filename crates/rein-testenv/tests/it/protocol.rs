//! Protocol details answered as kube-apiserver answers them: JSON patch `test` semantics,
//! malformed query parameters, content types and subresources.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_runtime::controller::Action;
use kube_runtime::finalizer::{Event, finalizer};
use rein_testenv::TestEnv;
use serde_json::json;

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": "v"},
    }))
    .expect("valid config map")
}

/// kube-runtime's finalizer helper adds, keeps and removes its finalizer with JSON patches whose
/// first operation tests `/metadata/finalizers` against `null` while the field is absent.
#[tokio::test]
async fn kube_runtime_finalizer_helper_round_trip() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let created = api
        .create(&PostParams::default(), &config_map("fin"))
        .await
        .expect("creates");
    const NAME: &str = "rein.dev/cleanup";

    let action = finalizer(&api, NAME, Arc::new(created), |_| async {
        Ok::<_, std::io::Error>(Action::await_change())
    })
    .await
    .expect("adds the finalizer");
    assert_eq!(action, Action::await_change());
    let with_finalizer = api.get("fin").await.expect("gets");
    assert_eq!(
        with_finalizer.metadata.finalizers,
        Some(vec![NAME.to_string()])
    );

    let seen = finalizer(&api, NAME, Arc::new(with_finalizer), |event| async move {
        Ok::<_, std::io::Error>(match event {
            Event::Apply(_) => Action::requeue(std::time::Duration::from_secs(7)),
            Event::Cleanup(_) => Action::await_change(),
        })
    })
    .await
    .expect("reconciles");
    assert_eq!(seen, Action::requeue(std::time::Duration::from_secs(7)));

    api.delete("fin", &DeleteParams::default())
        .await
        .expect("deletes");
    let deleting = api.get("fin").await.expect("still there");
    assert!(deleting.metadata.deletion_timestamp.is_some());
    finalizer(&api, NAME, Arc::new(deleting), |event| async move {
        assert!(matches!(event, Event::Cleanup(_)), "cleanup expected");
        Ok::<_, std::io::Error>(Action::await_change())
    })
    .await
    .expect("removes the finalizer");
    assert!(api.get_opt("fin").await.expect("gets").is_none());
}

/// The exact patch kube-runtime sends, plus the cases evanphx/json-patch still refuses.
#[tokio::test]
async fn json_patch_test_of_null_matches_an_absent_member() {
    let env = TestEnv::start().await.expect("starts");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &config_map("p"))
        .await
        .expect("creates");
    let patch = |ops: serde_json::Value| {
        let ops: json_patch::Patch = serde_json::from_value(ops).expect("valid patch");
        Patch::<()>::Json(ops)
    };
    let patched = api
        .patch(
            "p",
            &PatchParams::default(),
            &patch(json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["a"]},
            ])),
        )
        .await
        .expect("test of null on an absent path passes");
    assert_eq!(patched.metadata.finalizers, Some(vec!["a".to_string()]));

    // Now present: a test of null fails (422), and so does a test under a missing parent.
    for ops in [
        json!([{"op": "test", "path": "/metadata/finalizers", "value": null}]),
        json!([{"op": "test", "path": "/spec/missing", "value": null}]),
    ] {
        let err = api
            .patch("p", &PatchParams::default(), &patch(ops.clone()))
            .await
            .expect_err("fails");
        let kube_client::Error::Api(status) = err else {
            panic!("{ops}: not a Status: {err}");
        };
        assert_eq!(status.code, 422, "{ops}: {status:?}");
    }
}
