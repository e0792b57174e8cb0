//! Custom resources through kube-client: a CRD starts serving its resource (with discovery,
//! status subresource and conditions), and deleting it stops serving.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
    WatchEvent, WatchParams,
};
use kube_client::discovery::Discovery;
use rein_testenv::TestEnv;
use serde_json::json;

fn crd() -> CustomResourceDefinition {
    serde_yaml::from_str(include_str!("../fixtures/crontab-crd.yaml")).expect("crd fixture")
}

fn crontab_api(env: &TestEnv) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("stable.example.com", "v1", "CronTab");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "crontabs");
    Api::namespaced_with(env.client(), "default", &ar)
}

fn crontab(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": name},
        "spec": {"cronSpec": "* * * * */5", "image": "cron"},
        "status": {"lastRun": "ignored on create"},
    }))
    .expect("crontab")
}

#[tokio::test]
async fn crds_serve_their_resources() {
    let env = TestEnv::start().await.expect("starts");
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let created = crds
        .create(&PostParams::default(), &crd())
        .await
        .expect("creates the crd");
    let name = created.metadata.name.expect("name");
    let stored = crds.get(&name).await.expect("gets");
    let conditions = stored.status.and_then(|s| s.conditions).unwrap_or_default();
    for kind in ["NamesAccepted", "Established"] {
        assert!(
            conditions
                .iter()
                .any(|c| c.type_ == kind && c.status == "True"),
            "{kind}"
        );
    }

    let discovery = Discovery::new(env.client()).run().await.expect("discovers");
    assert!(discovery.has_group("stable.example.com"));

    let tabs = crontab_api(&env);
    let made = tabs
        .create(&PostParams::default(), &crontab("every-5"))
        .await
        .expect("creates a crontab");
    assert!(made.data.get("status").is_none(), "status is a subresource");
    let status: DynamicObject = serde_json::from_value(json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "every-5"}, "status": {"lastRun": "now"}})).expect("status");
    let with_status = tabs
        .replace_status("every-5", &PostParams::default(), &status)
        .await
        .expect("status update");
    assert_eq!(with_status.data["status"]["lastRun"], "now");

    let mut watch = tabs
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .expect("watches")
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), watch.try_next())
        .await
        .expect("in time")
        .expect("ok");
    assert!(matches!(first, Some(WatchEvent::Added(_))));

    crds.delete(&name, &DeleteParams::default())
        .await
        .expect("deletes the crd");
    let gone = tokio::time::timeout(Duration::from_secs(10), watch.try_next())
        .await
        .expect("in time")
        .expect("ok");
    assert!(
        matches!(gone, Some(WatchEvent::Deleted(_))),
        "custom objects go with their CRD"
    );
    let err = tabs
        .list(&ListParams::default())
        .await
        .expect_err("no longer served");
    assert!(matches!(err, kube_client::Error::Api(s) if s.code == 404));
}
