//! The life of a CRD after it is written: names granted or refused against the other CRDs of
//! its group, deletion through the `customresourcecleanup.apiextensions.k8s.io` finalizer
//! (observed through watches and with `kubectl delete crd`), and what DELETE of a custom
//! resource answers.

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, PostParams, WatchEvent, WatchParams,
};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

use crate::crd_support::{CRDS, condition, create_crd, next_event, raw, raw_typed, simple};

const GROUP: &str = "rein.example.com";

fn gizmo_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk(GROUP, "v1", "Gizmo");
    ApiResource::from_gvk_with_plural(&gvk, "gizmos")
}

fn gizmo(name: &str, namespace: &str) -> Value {
    json!({
        "apiVersion": "rein.example.com/v1", "kind": "Gizmo",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"size": "small"},
    })
}

fn gizmos_path(namespace: &str) -> String {
    format!("/apis/{GROUP}/v1/namespaces/{namespace}/gizmos")
}

async fn create_gizmo(env: &TestEnv, name: &str, namespace: &str) -> Value {
    let (code, made) = raw(
        env,
        "POST",
        &gizmos_path(namespace),
        Some(&gizmo(name, namespace)),
    )
    .await;
    assert_eq!(code, 201, "{made}");
    made
}

/// Starts the gizmos CRD and waits for nothing: establishment happens inside the create.
async fn start_with_gizmos() -> TestEnv {
    let env = TestEnv::start().await.expect("starts");
    let (code, crd) = create_crd(&env, &simple(GROUP, "gizmos", "Gizmo")).await;
    assert_eq!(code, 201, "{crd}");
    assert_eq!(
        condition(&crd, "Established"),
        Some(("True".into(), "InitialNamesAccepted".into()))
    );
    env
}

#[tokio::test]
async fn deleting_a_crd_deletes_its_instances_then_the_crd() {
    let env = start_with_gizmos().await;
    let namespaces: Api<Namespace> = Api::all(env.client());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "other"}})).expect("ns");
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("creates a namespace");
    create_gizmo(&env, "one", "default").await;
    create_gizmo(&env, "two", "other").await;

    let rv = env.resource_version().to_string();
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let mut crd_watch = crds
        .watch(&WatchParams::default().disable_bookmarks(), &rv)
        .await
        .expect("watches crds")
        .boxed();
    let instances: Api<DynamicObject> = Api::all_with(env.client(), &gizmo_resource());
    let mut instance_watch = instances
        .watch(&WatchParams::default().disable_bookmarks(), &rv)
        .await
        .expect("watches gizmos")
        .boxed();

    let path = format!("{CRDS}/gizmos.{GROUP}");
    let (code, marked) = raw(&env, "DELETE", &path, None).await;
    assert_eq!(
        code, 200,
        "the CRD registry answers the marked object: {marked}"
    );
    assert_eq!(marked["kind"], "CustomResourceDefinition");
    assert!(
        marked["metadata"]["deletionTimestamp"].is_string(),
        "{marked}"
    );
    assert_eq!(
        marked["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    assert_eq!(
        condition(&marked, "Terminating"),
        Some(("True".into(), "InstanceDeletionPending".into()))
    );

    let mut deleted = Vec::new();
    for _ in 0..2 {
        match next_event(&mut instance_watch).await {
            WatchEvent::Deleted(obj) => deleted.push(obj.metadata.name.unwrap_or_default()),
            other => panic!("expected DELETED, got {other:?}"),
        }
    }
    deleted.sort();
    assert_eq!(deleted, ["one", "two"]);

    let mut seen = Vec::new();
    loop {
        match next_event(&mut crd_watch).await {
            WatchEvent::Modified(crd) => {
                let crd = serde_json::to_value(crd).expect("json");
                seen.push(
                    condition(&crd, "Terminating")
                        .map(|c| c.1)
                        .unwrap_or_default(),
                );
            }
            WatchEvent::Deleted(crd) => {
                let crd = serde_json::to_value(crd).expect("json");
                assert!(crd["metadata"]["deletionTimestamp"].is_string());
                break;
            }
            other => panic!("unexpected CRD event {other:?}"),
        }
    }
    assert_eq!(
        seen,
        ["InstanceDeletionPending", "InstanceDeletionInProgress"]
    );
    let (code, _) = raw(&env, "GET", &path, None).await;
    assert_eq!(code, 404, "the CRD is gone");
    let (code, _) = raw(&env, "GET", &gizmos_path("default"), None).await;
    assert_eq!(code, 404, "its resource is no longer served");
}

#[tokio::test]
async fn a_terminating_crd_refuses_new_instances_until_held_ones_go() {
    let env = start_with_gizmos().await;
    let mut held = gizmo("held", "default");
    held["metadata"]["finalizers"] = json!(["rein.example.com/hold"]);
    let (code, _) = raw(&env, "POST", &gizmos_path("default"), Some(&held)).await;
    assert_eq!(code, 201);

    let rv = env.resource_version().to_string();
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let mut crd_watch = crds
        .watch(&WatchParams::default().disable_bookmarks(), &rv)
        .await
        .expect("watches crds")
        .boxed();
    let path = format!("{CRDS}/gizmos.{GROUP}");
    let (code, _) = raw(&env, "DELETE", &path, None).await;
    assert_eq!(code, 200);
    // Pending, then in progress: the held instance keeps the CRD there.
    for reason in ["InstanceDeletionPending", "InstanceDeletionInProgress"] {
        match next_event(&mut crd_watch).await {
            WatchEvent::Modified(crd) => {
                let crd = serde_json::to_value(crd).expect("json");
                assert_eq!(
                    condition(&crd, "Terminating"),
                    Some(("True".into(), reason.into()))
                );
            }
            other => panic!("unexpected CRD event {other:?}"),
        }
    }
    let (code, still) = raw(
        &env,
        "GET",
        &format!("{}/held", gizmos_path("default")),
        None,
    )
    .await;
    assert_eq!(
        code, 200,
        "instances are still served while the CRD terminates"
    );
    assert!(still["metadata"]["deletionTimestamp"].is_string());

    let (code, status) = raw(
        &env,
        "POST",
        &gizmos_path("default"),
        Some(&gizmo("late", "default")),
    )
    .await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "gizmos.rein.example.com \"late\" is forbidden: create not allowed while custom \
         resource definition is terminating"
    );
    assert_eq!(
        status["details"],
        json!({"name": "late", "group": GROUP, "kind": "gizmos"})
    );

    let release = json!({"metadata": {"finalizers": null}});
    let (code, _) = raw_typed(
        &env,
        "PATCH",
        &format!("{}/held", gizmos_path("default")),
        Some(&release),
        "application/merge-patch+json",
    )
    .await;
    assert_eq!(code, 200);
    match next_event(&mut crd_watch).await {
        WatchEvent::Deleted(_) => {}
        other => panic!("expected the CRD to go, got {other:?}"),
    }
}

#[tokio::test]
async fn a_dry_run_delete_of_a_crd_changes_nothing() {
    let env = start_with_gizmos().await;
    let path = format!("{CRDS}/gizmos.{GROUP}");
    let (code, marked) = raw(&env, "DELETE", &format!("{path}?dryRun=All"), None).await;
    assert_eq!(code, 200, "{marked}");
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let (code, stored) = raw(&env, "GET", &path, None).await;
    assert_eq!(code, 200);
    assert!(
        stored["metadata"]["deletionTimestamp"].is_null(),
        "{stored}"
    );
    assert!(condition(&stored, "Terminating").is_none());
}

#[tokio::test]
async fn deleting_a_custom_resource_answers_a_success_status() {
    let env = start_with_gizmos().await;
    let made = create_gizmo(&env, "plain", "default").await;
    let (code, status) = raw(
        &env,
        "DELETE",
        &format!("{}/plain", gizmos_path("default")),
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        status,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {
                "name": "plain", "group": GROUP, "kind": "gizmos",
                "uid": made["metadata"]["uid"],
            },
        })
    );

    // With a finalizer pending: the object, with 200 (not 202).
    let mut held = gizmo("held", "default");
    held["metadata"]["finalizers"] = json!(["rein.example.com/hold"]);
    raw(&env, "POST", &gizmos_path("default"), Some(&held)).await;
    let (code, pending) = raw(
        &env,
        "DELETE",
        &format!("{}/held", gizmos_path("default")),
        None,
    )
    .await;
    assert_eq!(code, 200, "{pending}");
    assert_eq!(pending["kind"], "Gizmo");
    assert!(pending["metadata"]["deletionTimestamp"].is_string());
    // 202 only when the client asked for cascading deletion with `orphanDependents: false`.
    let options = json!({"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": false});
    let (code, again) = raw(
        &env,
        "DELETE",
        &format!("{}/held", gizmos_path("default")),
        Some(&options),
    )
    .await;
    assert_eq!(code, 202, "{again}");
    assert_eq!(again["kind"], "Gizmo");
}

#[tokio::test]
async fn conflicting_names_are_not_accepted_and_do_not_take_over() {
    let env = start_with_gizmos().await;
    create_gizmo(&env, "kept", "default").await;

    // Another CRD of the group wanting the kind Gizmo: stored, but its names are refused.
    let (code, rival) = create_crd(&env, &simple(GROUP, "gadgets", "Gizmo")).await;
    assert_eq!(code, 201, "{rival}");
    let names = rival["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "NamesAccepted"))
        .cloned()
        .expect("a NamesAccepted condition");
    assert_eq!(names["status"], "False");
    // Kind and list kind both conflict; the naming controller reports the last check.
    assert_eq!(names["reason"], "ListKindConflict");
    assert_eq!(names["message"], "\"GizmoList\" is already in use");
    assert_eq!(
        condition(&rival, "Established"),
        Some(("False".into(), "NotAccepted".into()))
    );
    assert_eq!(rival["status"]["acceptedNames"]["plural"], "gadgets");
    assert_eq!(rival["status"]["acceptedNames"]["kind"], "");
    assert!(
        rival["status"]["acceptedNames"]["listKind"].is_null(),
        "omitempty"
    );
    let (code, _) = raw(
        &env,
        "GET",
        &format!("/apis/{GROUP}/v1/namespaces/default/gadgets"),
        None,
    )
    .await;
    assert_eq!(code, 404, "a CRD that is not established is not served");

    // A short name that is another CRD's plural.
    let mut shorty = simple(GROUP, "doohickeys", "Doohickey");
    shorty["spec"]["names"]["shortNames"] = json!(["gizmos"]);
    let (code, shorty) = create_crd(&env, &shorty).await;
    assert_eq!(code, 201);
    assert_eq!(
        condition(&shorty, "NamesAccepted"),
        Some(("False".into(), "ShortNamesConflict".into()))
    );

    // Deleting the rival (never established) leaves the gizmos served.
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let rv = env.resource_version().to_string();
    let mut watch = crds
        .watch(&WatchParams::default().disable_bookmarks(), &rv)
        .await
        .expect("watches")
        .boxed();
    let (code, _) = raw(&env, "DELETE", &format!("{CRDS}/gadgets.{GROUP}"), None).await;
    assert_eq!(code, 200);
    loop {
        if let WatchEvent::Deleted(crd) = next_event(&mut watch).await
            && crd.metadata.name.as_deref() == Some("gadgets.rein.example.com")
        {
            break;
        }
    }
    let (code, kept) = raw(
        &env,
        "GET",
        &format!("{}/kept", gizmos_path("default")),
        None,
    )
    .await;
    assert_eq!(code, 200, "{kept}");

    // Once gizmos goes, the short name is free and doohickeys is established.
    let (code, _) = raw(&env, "DELETE", &format!("{CRDS}/gizmos.{GROUP}"), None).await;
    assert_eq!(code, 200);
    loop {
        if let WatchEvent::Deleted(crd) = next_event(&mut watch).await
            && crd.metadata.name.as_deref() == Some("gizmos.rein.example.com")
        {
            break;
        }
    }
    let (_, shorty) = raw(&env, "GET", &format!("{CRDS}/doohickeys.{GROUP}"), None).await;
    assert_eq!(
        condition(&shorty, "NamesAccepted"),
        Some(("True".into(), "NoConflicts".into()))
    );
    assert_eq!(
        condition(&shorty, "Established"),
        Some(("True".into(), "InitialNamesAccepted".into()))
    );
    assert_eq!(
        shorty["status"]["acceptedNames"]["shortNames"],
        json!(["gizmos"])
    );
}

#[tokio::test]
async fn kubectl_delete_crd_waits_for_the_crd_to_go() {
    let env = start_with_gizmos().await;
    create_gizmo(&env, "one", "default").await;
    let dir = std::env::temp_dir().join(format!("rein-crd-kubectl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("kubeconfig");
    env.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let run = |args: Vec<String>| {
        let kubeconfig = kubeconfig.clone();
        let cache = dir.join("cache");
        tokio::task::spawn_blocking(move || {
            std::process::Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .arg("--cache-dir")
                .arg(&cache)
                .arg("--request-timeout=30s")
                .args(&args)
                .output()
                .expect("kubectl runs (is it on PATH?)")
        })
    };
    let out = run(vec![
        "delete".into(),
        "crd".into(),
        format!("gizmos.{GROUP}"),
        "--timeout=20s".into(),
    ])
    .await
    .expect("joins");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl delete crd: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.trim(),
        "customresourcedefinition.apiextensions.k8s.io \"gizmos.rein.example.com\" deleted"
    );
    // kubectl waited for the object to go: it is gone now, not merely terminating.
    let (code, _) = raw(&env, "GET", &format!("{CRDS}/gizmos.{GROUP}"), None).await;
    assert_eq!(code, 404);
    let out = run(vec![
        "get".into(),
        "crds".into(),
        "-o".into(),
        "name".into(),
    ])
    .await
    .expect("joins");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "");
    let _ = std::fs::remove_dir_all(&dir);
}
