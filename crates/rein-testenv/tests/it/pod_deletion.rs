//! Graceful deletion of Pods, as kube-apiserver's pod strategy: a Pod bound to a node is kept
//! with `deletionTimestamp` and `deletionGracePeriodSeconds` until a grace-0 delete; a second
//! delete may only shorten the grace; unbound and terminal Pods go at once; and
//! `Kubelet::StopsAtOnce` finishes graceful deletes as a kubelet would.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube_client::api::{
    Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use rein_testenv::{Kubelet, TestEnv};
use serde_json::json;

use super::pod_support::pod;

fn grace(pod: &Pod) -> Option<i64> {
    pod.metadata.deletion_grace_period_seconds
}

/// A server and its Pods in `default`.
async fn start() -> (TestEnv, Api<Pod>) {
    let env = TestEnv::start().await.expect("starts");
    let pods = Api::namespaced(env.client(), "default");
    (env, pods)
}

async fn create(pods: &Api<Pod>, pod: &Pod) {
    pods.create(&PostParams::default(), pod)
        .await
        .expect("creates");
}

/// Delete options with a grace period of `seconds`.
fn with_grace(seconds: u32) -> DeleteParams {
    DeleteParams {
        grace_period_seconds: Some(seconds),
        ..Default::default()
    }
}

/// Deletes the Pod `name`: the Pod the server answers (Pods answer the object, gone or kept).
async fn delete(pods: &Api<Pod>, name: &str, params: &DeleteParams) -> Pod {
    pods.delete(name, params)
        .await
        .expect("deletes")
        .left()
        .expect("answers the pod")
}

#[tokio::test]
async fn a_bound_pod_is_kept_until_a_grace_zero_delete() {
    let (_env, pods) = start().await;
    create(&pods, &pod("p", "p", Some("node-a"))).await;
    let answered = delete(&pods, "p", &DeleteParams::default()).await;
    assert!(answered.metadata.deletion_timestamp.is_some());
    assert_eq!(
        grace(&answered),
        Some(30),
        "spec.terminationGracePeriodSeconds"
    );
    assert_eq!(answered.metadata.generation, Some(2));
    let kept = pods.get("p").await.expect("kept");
    assert_eq!(grace(&kept), Some(30));

    // A longer grace changes nothing; a shorter one moves the deadline.
    let longer = delete(&pods, "p", &with_grace(60)).await;
    assert_eq!(grace(&longer), Some(30));
    let shorter = delete(&pods, "p", &with_grace(10)).await;
    assert_eq!(grace(&shorter), Some(10));
    let deadline = |p: &Pod| p.metadata.deletion_timestamp.clone().unwrap().0;
    assert_eq!(
        deadline(&kept).as_second() - deadline(&shorter).as_second(),
        20,
        "the deadline moves by the difference"
    );

    // A status update while terminating does not remove it.
    let status = json!({"status": {"phase": "Running"}});
    pods.patch_status("p", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("updates the status");
    assert!(pods.get_opt("p").await.unwrap().is_some());

    delete(&pods, "p", &with_grace(0)).await;
    assert!(pods.get_opt("p").await.unwrap().is_none());
}

#[tokio::test]
async fn unbound_and_terminal_pods_go_at_once_after_a_marked_update() {
    let (_env, pods) = start().await;
    create(&pods, &pod("unbound", "p", None)).await;
    let mut events = pods
        .watch(&WatchParams::default().fields("metadata.name=unbound"), "0")
        .await
        .expect("watches")
        .boxed();
    let gone = delete(&pods, "unbound", &DeleteParams::default()).await;
    assert_eq!(grace(&gone), Some(0));
    assert!(pods.get_opt("unbound").await.unwrap().is_none());
    // Watchers see the Pod marked with a zero grace, then removed.
    let mut seen = Vec::new();
    while let Some(event) = events.try_next().await.expect("watch event") {
        match event {
            WatchEvent::Added(_) => seen.push("ADDED"),
            WatchEvent::Modified(p) => {
                assert_eq!(grace(&p), Some(0));
                seen.push("MODIFIED");
            }
            WatchEvent::Deleted(_) => {
                seen.push("DELETED");
                break;
            }
            _ => {}
        }
    }
    assert_eq!(seen, ["ADDED", "MODIFIED", "DELETED"]);

    create(&pods, &pod("done", "p", Some("node-a"))).await;
    let status = json!({"status": {"phase": "Succeeded"}});
    pods.patch_status("done", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("finishes");
    pods.delete("done", &DeleteParams::default())
        .await
        .expect("deletes");
    assert!(pods.get_opt("done").await.unwrap().is_none());
}

#[tokio::test]
async fn finalizers_hold_a_pod_whose_grace_is_over() {
    let (_env, pods) = start().await;
    let mut held = pod("held", "p", Some("node-a"));
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    create(&pods, &held).await;
    pods.delete("held", &DeleteParams::default())
        .await
        .expect("deletes");
    // The finalizer goes while the grace period runs: the Pod stays for the kubelet.
    let release = json!({"metadata": {"finalizers": null}});
    pods.patch("held", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .expect("releases");
    assert!(pods.get_opt("held").await.unwrap().is_some());
    pods.delete("held", &with_grace(0)).await.expect("deletes");
    assert!(pods.get_opt("held").await.unwrap().is_none());

    // With the grace over, the last finalizer's removal removes the Pod.
    let mut held = pod("held2", "p", Some("node-a"));
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    create(&pods, &held).await;
    pods.delete("held2", &with_grace(0)).await.expect("deletes");
    assert_eq!(grace(&pods.get("held2").await.expect("held")), Some(0));
    pods.patch("held2", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .expect("releases");
    assert!(pods.get_opt("held2").await.unwrap().is_none());
}

#[tokio::test]
async fn a_kubelet_that_stops_pods_at_once_finishes_graceful_deletes() {
    let env = TestEnv::builder()
        .kubelet(Kubelet::StopsAtOnce)
        .start()
        .await
        .expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    create(&pods, &pod("p", "p", Some("node-a"))).await;
    let answered = delete(&pods, "p", &DeleteParams::default()).await;
    assert_eq!(grace(&answered), Some(30));
    assert!(pods.get_opt("p").await.unwrap().is_none());
}

#[tokio::test]
async fn a_kubelet_that_waits_for_the_grace_period_finishes_the_delete_then() {
    let env = TestEnv::builder()
        .kubelet(Kubelet::StopsAfterGrace)
        .start()
        .await
        .expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    create(&pods, &pod("p", "p", Some("node-a"))).await;
    let mut events = pods
        .watch(&WatchParams::default().fields("metadata.name=p"), "0")
        .await
        .expect("watches")
        .boxed();
    let answered = delete(&pods, "p", &with_grace(1)).await;
    assert_eq!(grace(&answered), Some(1));
    // Marked, then finished by the kubelet (grace 0), then gone.
    let mut graces = Vec::new();
    while let Some(event) = events.try_next().await.expect("watch event") {
        match event {
            WatchEvent::Modified(p) => graces.push(grace(&p)),
            WatchEvent::Deleted(_) => break,
            _ => {}
        }
    }
    assert_eq!(graces, [Some(1), Some(0)]);
    assert!(pods.get_opt("p").await.unwrap().is_none());
}
