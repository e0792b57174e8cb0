//! Every verb and option of the typed client.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use rein_client::{
    DeleteParams, ListOptions, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
use rein_scheme::ObjectKey;
use serde_json::json;
use std::sync::Arc;

use crate::support::{config_map, env, meta, pod};

#[tokio::test]
async fn create_get_update_delete() {
    let (_env, client) = env().await;
    let created = client
        .create(
            &config_map("default", "cm", &[("a", "1")]),
            &PostParams::default(),
        )
        .await
        .unwrap();
    assert!(created.metadata.resource_version.is_some());
    assert!(created.metadata.uid.is_some());

    let key = ObjectKey::new("default", "cm");
    let mut got: ConfigMap = Arc::unwrap_or_clone(client.get(&key).await.unwrap());
    assert_eq!(got.data.as_ref().unwrap()["a"], "1");

    got.data.as_mut().unwrap().insert("b".into(), "2".into());
    let updated = client.update(&got, &PostParams::default()).await.unwrap();
    assert_ne!(
        updated.metadata.resource_version,
        got.metadata.resource_version
    );
    assert_eq!(updated.data.as_ref().unwrap()["b"], "2");

    client
        .delete::<ConfigMap>(&key, &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        client
            .get::<ConfigMap>(&key)
            .await
            .unwrap_err()
            .is_not_found()
    );
}

#[tokio::test]
async fn cluster_scoped_kinds_ignore_the_key_namespace() {
    let (_env, client) = env().await;
    let ns: Arc<Namespace> = client
        .get(&ObjectKey::new("ignored", "kube-system"))
        .await
        .unwrap();
    assert_eq!(ns.metadata.name.as_deref(), Some("kube-system"));
}

#[tokio::test]
async fn namespaced_kinds_need_a_namespace() {
    let (_env, client) = env().await;
    let err = client
        .get::<Pod>(&ObjectKey::cluster_scoped("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, rein_client::Error::InvalidInput { .. }),
        "{err}"
    );
    let err = client
        .create(&pod("", "x", &[]), &PostParams::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, rein_client::Error::InvalidInput { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn list_with_selectors_and_paging() {
    let (_env, client) = env().await;
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        client
            .create(
                &pod("default", name, &[("app", app)]),
                &PostParams::default(),
            )
            .await
            .unwrap();
    }
    client
        .create(
            &pod("kube-public", "d", &[("app", "web")]),
            &PostParams::default(),
        )
        .await
        .unwrap();

    let names = |list: &rein_client::ObjectList<Arc<Pod>>| -> Vec<String> {
        list.items
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    };
    let all = client.list::<Pod>(&ListOptions::default()).await.unwrap();
    assert_eq!(all.items.len(), 4);
    let default = client
        .list::<Pod>(&ListOptions::default().namespace("default"))
        .await
        .unwrap();
    assert_eq!(default.items.len(), 3);
    let web = client
        .list::<Pod>(
            &ListOptions::default()
                .namespace("default")
                .matching_labels([("app", "web")]),
        )
        .await
        .unwrap();
    assert_eq!(names(&web), ["a", "b"]);
    let set_based = client
        .list::<Pod>(&ListOptions::default().labels("app notin (web)".parse().unwrap()))
        .await
        .unwrap();
    assert_eq!(names(&set_based), ["c"]);
    let by_field = client
        .list::<Pod>(&ListOptions::default().matching_fields([("metadata.name", "b")]))
        .await
        .unwrap();
    assert_eq!(names(&by_field), ["b"]);
    let nothing = client
        .list::<Pod>(&ListOptions::default().labels(rein_scheme::labels::Selector::nothing()))
        .await
        .unwrap();
    assert!(nothing.items.is_empty());

    // Paging: limit + continue visits every pod exactly once.
    let mut seen = Vec::new();
    let mut opts = ListOptions::default().limit(3);
    loop {
        let page = client.list::<Pod>(&opts).await.unwrap();
        assert!(page.items.len() <= 3);
        seen.extend(names(&page));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => opts = ListOptions::default().limit(3).continue_token(token),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(seen, ["a", "b", "c", "d"]);
}

#[tokio::test]
async fn patch_kinds() {
    let (_env, client) = env().await;
    let key = ObjectKey::new("default", "cm");
    client
        .create(
            &config_map("default", "cm", &[("a", "1")]),
            &PostParams::default(),
        )
        .await
        .unwrap();

    let merged: ConfigMap = client
        .patch(
            &key,
            &Patch::Merge(json!({"data": {"b": "2"}})),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    assert_eq!(merged.data.as_ref().unwrap().len(), 2);

    let json_patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "remove", "path": "/data/a"}])).unwrap();
    let patched: ConfigMap = client
        .patch(
            &key,
            &Patch::<()>::Json(json_patch),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    assert!(!patched.data.as_ref().unwrap().contains_key("a"));

    let strategic: ConfigMap = client
        .patch(
            &key,
            &Patch::Strategic(json!({"metadata": {"labels": {"x": "y"}}})),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    assert_eq!(strategic.metadata.labels.as_ref().unwrap()["x"], "y");

    // Server-side apply with a field owner; a second owner conflicts unless forced.
    let desired = config_map("default", "applied", &[("k", "v1")]);
    let applied = client
        .apply(&desired, Some("owner-a"), false)
        .await
        .unwrap();
    assert_eq!(applied.data.as_ref().unwrap()["k"], "v1");
    let other = config_map("default", "applied", &[("k", "v2")]);
    let err = client
        .apply(&other, Some("owner-b"), false)
        .await
        .unwrap_err();
    assert!(err.is_conflict(), "{err}");
    let forced = client.apply(&other, Some("owner-b"), true).await.unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["k"], "v2");
    // Without an owner: a typed error before any request.
    assert!(matches!(
        client.apply(&other, None, false).await,
        Err(rein_client::Error::InvalidInput { .. })
    ));
}

#[tokio::test]
async fn delete_options() {
    let (env, client) = env().await;
    let key = ObjectKey::new("default", "cm");
    let created = client
        .create(&config_map("default", "cm", &[]), &PostParams::default())
        .await
        .unwrap();

    // A precondition on a wrong uid fails with a conflict and leaves the object.
    let wrong = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let err = client.delete::<ConfigMap>(&key, &wrong).await.unwrap_err();
    assert!(err.is_conflict(), "{err}");
    client.get::<ConfigMap>(&key).await.unwrap();

    env.clear_requests();
    let right = DeleteParams {
        preconditions: Some(Preconditions {
            uid: created.metadata.uid.clone(),
            resource_version: None,
        }),
        propagation_policy: Some(PropagationPolicy::Foreground),
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    client.delete::<ConfigMap>(&key, &right).await.unwrap();
    let seen = env.requests();
    assert!(
        seen.iter()
            .any(|r| r.method == "DELETE" && r.path.ends_with("/configmaps/cm"))
    );
}

#[tokio::test]
async fn delete_all_of_uses_selectors() {
    let (_env, client) = env().await;
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        client
            .create(
                &pod("default", name, &[("app", app)]),
                &PostParams::default(),
            )
            .await
            .unwrap();
    }
    client
        .delete_all_of::<Pod>(
            &ListOptions::default()
                .namespace("default")
                .matching_labels([("app", "web")]),
            &DeleteParams::default(),
        )
        .await
        .unwrap();
    let left = client
        .list::<Pod>(&ListOptions::default().namespace("default"))
        .await
        .unwrap();
    assert_eq!(left.items.len(), 1);
    assert_eq!(left.items[0].metadata.name.as_deref(), Some("c"));
    assert!(
        client
            .delete_all_of::<Pod>(&ListOptions::default(), &DeleteParams::default())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn status_and_other_subresources() {
    let (_env, client) = env().await;
    let created = client
        .create(&pod("default", "p", &[]), &PostParams::default())
        .await
        .unwrap();
    let mut with_status = created.clone();
    with_status.status = Some(PodStatus {
        phase: Some("Running".into()),
        ..Default::default()
    });
    let updated = client
        .status()
        .update(&with_status, &PostParams::default())
        .await
        .unwrap();
    assert_eq!(updated.status.unwrap().phase.as_deref(), Some("Running"));

    let key = ObjectKey::new("default", "p");
    let patched: Pod = client
        .status()
        .patch(
            &key,
            &Patch::Merge(json!({"status": {"phase": "Succeeded"}})),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    assert_eq!(patched.status.unwrap().phase.as_deref(), Some("Succeeded"));

    // A plain update does not change status.
    let mut spec_change = Arc::unwrap_or_clone(client.get::<Pod>(&key).await.unwrap());
    spec_change.status = None;
    spec_change.metadata.labels = Some([("x".to_string(), "y".to_string())].into());
    let after = client
        .update(&spec_change, &PostParams::default())
        .await
        .unwrap();
    assert_eq!(after.status.unwrap().phase.as_deref(), Some("Succeeded"));

    // The scale sub-resource of a Deployment.
    let deploy = Deployment {
        metadata: meta("default", "web"),
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some([("app".to_string(), "web".to_string())].into()),
                ..Default::default()
            },
            template: k8s_openapi::api::core::v1::PodTemplateSpec {
                metadata: Some(kube_client::core::ObjectMeta {
                    labels: Some([("app".to_string(), "web".to_string())].into()),
                    ..Default::default()
                }),
                spec: pod("", "", &[]).spec,
            },
            ..Default::default()
        }),
        ..Default::default()
    };
    client
        .create(&deploy, &PostParams::default())
        .await
        .unwrap();
    let dkey = ObjectKey::new("default", "web");
    let scale: Scale = client
        .sub_resource("scale")
        .get::<Deployment, Scale>(&dkey)
        .await
        .unwrap();
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(1));
    let scaled: Scale = client
        .sub_resource("scale")
        .patch_as::<Deployment, Scale, _>(
            &dkey,
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(3));
    let after: Arc<Deployment> = client.get(&dkey).await.unwrap();
    assert_eq!(after.spec.as_ref().and_then(|s| s.replicas), Some(3));
}

#[tokio::test]
async fn dry_run_and_field_owner_options() {
    let (env, _client) = env().await;
    let client = rein_client::Client::builder(env.client())
        .options(
            rein_client::ClientOptions::default()
                .dry_run(true)
                .field_owner("tester"),
        )
        .build();
    client
        .create(&config_map("default", "dry", &[]), &PostParams::default())
        .await
        .unwrap();
    let live = rein_client::Client::new(env.client());
    assert!(
        live.get::<ConfigMap>(&ObjectKey::new("default", "dry"))
            .await
            .unwrap_err()
            .is_not_found()
    );
    let post = env
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("a POST was sent");
    let query = post.query.unwrap_or_default();
    assert!(query.contains("dryRun=All"), "{query}");
    assert!(query.contains("fieldManager=tester"), "{query}");
}

/// `ClientOptions::field_validation` reaches every write: with `Strict` the server refuses an
/// unknown field on create, update and patch (400), where its default (`Warn`) drops it.
#[tokio::test]
async fn field_validation_option_applies_to_every_write() {
    let (env, lenient) = env().await;
    let strict = rein_client::Client::builder(env.client())
        .options(
            rein_client::ClientOptions::default()
                .field_validation(rein_client::ValidationDirective::Strict),
        )
        .build();
    let gvk = rein_scheme::GroupVersionKind::new("", "v1", "ConfigMap");
    let with_unknown = |name: &str| -> rein_client::DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
            "data": {"a": "1"},
            "bogus": true,
        }))
        .unwrap()
    };
    let strict_cms = strict.dynamic().resource(&gvk).await.unwrap();
    let err = strict_cms
        .create(&with_unknown("strict"), &PostParams::default())
        .await
        .unwrap_err();
    assert!(err.is_bad_request(), "{err}");
    let message = err.status().map(|s| s.message.clone()).unwrap_or_default();
    assert!(message.contains(r#"unknown field "bogus""#), "{message}");

    let lenient_cms = lenient.dynamic().resource(&gvk).await.unwrap();
    let stored = lenient_cms
        .create(&with_unknown("lenient"), &PostParams::default())
        .await
        .unwrap();
    assert!(stored.data.get("bogus").is_none(), "Warn drops the field");

    let mut update = with_unknown("lenient");
    update.metadata.resource_version = stored.metadata.resource_version.clone();
    let err = strict_cms
        .update(&update, &PostParams::default())
        .await
        .unwrap_err();
    assert!(err.is_bad_request(), "{err}");

    let err = strict
        .patch::<ConfigMap, _>(
            &ObjectKey::new("default", "lenient"),
            &Patch::Merge(json!({"bogus": 1})),
            &PatchParams::default(),
        )
        .await
        .unwrap_err();
    assert!(err.is_bad_request(), "{err}");
    let queries: Vec<String> = env
        .requests()
        .into_iter()
        .filter(|r| ["POST", "PUT", "PATCH"].contains(&r.method.as_str()))
        .filter_map(|r| r.query)
        .collect();
    assert_eq!(
        queries
            .iter()
            .filter(|q| q.contains("fieldValidation=Strict"))
            .count(),
        3,
        "{queries:?}"
    );
}

#[tokio::test]
async fn the_limiter_layer_sits_under_a_working_client() {
    let env = rein_testenv::TestEnv::start().await.unwrap();
    let kube = rein_client::kube_client(
        env.config(),
        rein_client::KubeClientOptions {
            rate_limit: Some(rein_client::limiter::RateLimitConfig::new(1000.0, 5)),
            ..Default::default()
        },
    )
    .unwrap();
    let client = rein_client::Client::new(kube);
    for i in 0..10 {
        client
            .create(
                &config_map("default", &format!("cm-{i}"), &[]),
                &PostParams::default(),
            )
            .await
            .unwrap();
    }
    let list = client
        .list::<ConfigMap>(&ListOptions::default().namespace("default"))
        .await
        .unwrap();
    // And the namespace's root CA ConfigMap, `kube-root-ca.crt`, as on a real cluster.
    assert_eq!(list.items.len(), 11);
}

/// `resourceVersionMatch=Exact` lists the collection as it was: a ConfigMap created after that
/// version is not in it; `NotOlderThan` lists it as of then or later.
#[tokio::test]
async fn a_list_can_ask_for_an_exact_resource_version() {
    let (_env, client) = env().await;
    let reader = client.api_reader();
    reader
        .create(
            &config_map("default", "before", &[]),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let then = reader
        .list::<ConfigMap>(&ListOptions::default().namespace("default"))
        .await
        .unwrap()
        .metadata
        .resource_version
        .expect("a list resourceVersion");
    reader
        .create(&config_map("default", "after", &[]), &PostParams::default())
        .await
        .unwrap();
    let names = |list: rein_client::ObjectList<Arc<ConfigMap>>| -> Vec<String> {
        let mut n: Vec<String> = list
            .items
            .into_iter()
            .filter_map(|c| c.metadata.name.clone())
            .filter(|n| n == "before" || n == "after")
            .collect();
        n.sort();
        n
    };
    let exact = reader
        .list::<ConfigMap>(
            &ListOptions::default()
                .namespace("default")
                .resource_version(then.clone(), rein_client::VersionMatch::Exact),
        )
        .await
        .unwrap();
    assert_eq!(
        exact.metadata.resource_version.as_deref(),
        Some(then.as_str())
    );
    assert_eq!(names(exact), ["before"]);
    let newer = reader
        .list::<ConfigMap>(
            &ListOptions::default()
                .namespace("default")
                .resource_version(then, rein_client::VersionMatch::NotOlderThan),
        )
        .await
        .unwrap();
    assert_eq!(names(newer), ["after", "before"]);
}

/// The client watches the server from a list's resourceVersion, with its selectors: only the
/// matching ConfigMap created afterwards arrives.
#[tokio::test]
async fn the_client_watches_from_a_resource_version() {
    use futures::StreamExt;
    use kube_client::core::WatchEvent;

    let (_env, client) = env().await;
    let opts = ListOptions::default()
        .namespace("default")
        .matching_labels([("watched", "yes")]);
    let rv = client
        .api_reader()
        .list::<ConfigMap>(&opts)
        .await
        .unwrap()
        .metadata
        .resource_version
        .expect("a list resourceVersion");
    let mut events = client
        .watch::<ConfigMap>(&opts, &rv, Some(30))
        .await
        .unwrap();
    let mut ignored = config_map("default", "ignored", &[]);
    ignored.metadata.labels = Some([("watched".to_owned(), "no".to_owned())].into());
    let mut seen = config_map("default", "seen", &[]);
    seen.metadata.labels = Some([("watched".to_owned(), "yes".to_owned())].into());
    for cm in [&ignored, &seen] {
        client.create(cm, &PostParams::default()).await.unwrap();
    }
    let first = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            match events.next().await.expect("the watch stays open").unwrap() {
                WatchEvent::Bookmark(_) => continue,
                other => break other,
            }
        }
    })
    .await
    .expect("an event within 30 s");
    match first {
        WatchEvent::Added(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("seen")),
        other => panic!("expected ADDED, got {other:?}"),
    }
}
