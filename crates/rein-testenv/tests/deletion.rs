//! Deletion semantics through kube-client: finalizers, preconditions, dry run,
//! owner-reference garbage collection and namespace termination.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube_client::Resource;
use kube_client::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
use rein_testenv::TestEnv;
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}})).expect("cm")
}

fn owned_by(name: &str, owner: &ConfigMap) -> ConfigMap {
    let mut c = cm(name);
    c.metadata.owner_references = Some(vec![owner.controller_owner_ref(&()).expect("owner ref")]);
    c
}

async fn names(api: &Api<ConfigMap>) -> Vec<String> {
    api.list(&ListParams::default())
        .await
        .expect("lists")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect()
}

fn code(err: &kube_client::Error) -> Option<u16> {
    match err {
        kube_client::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut held = cm("held");
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held)
        .await
        .expect("creates");
    let pending = cms
        .delete("held", &DeleteParams::default())
        .await
        .expect("deletes");
    let obj = pending
        .left()
        .expect("the object is returned while pending");
    assert!(obj.metadata.deletion_timestamp.is_some());
    let more =
        Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}));
    let refused = cms
        .patch("held", &PatchParams::default(), &more)
        .await
        .expect_err("no new finalizers");
    assert_eq!(code(&refused), Some(422));
    let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    cms.patch("held", &PatchParams::default(), &release)
        .await
        .expect("releases");
    assert_eq!(cms.get_opt("held").await.expect("get"), None);
}

#[tokio::test]
async fn preconditions_and_dry_run() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    cms.create(&PostParams::default(), &cm("a"))
        .await
        .expect("creates");
    let wrong = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    assert_eq!(
        code(&cms.delete("a", &wrong).await.expect_err("precondition")),
        Some(409)
    );
    cms.delete(
        "a",
        &DeleteParams {
            dry_run: true,
            ..DeleteParams::default()
        },
    )
    .await
    .expect("dry run");
    assert!(
        cms.get_opt("a").await.expect("get").is_some(),
        "dry run deletes nothing"
    );
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    cms.create(&dry, &cm("b")).await.expect("dry-run create");
    assert_eq!(names(&cms).await, ["a"]);
}

#[tokio::test]
async fn background_deletion_collects_dependents() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = cms
        .create(&PostParams::default(), &cm("owner"))
        .await
        .expect("creates");
    let child = cms
        .create(&PostParams::default(), &owned_by("child", &owner))
        .await
        .expect("creates");
    cms.create(&PostParams::default(), &owned_by("grandchild", &child))
        .await
        .expect("creates");
    cms.delete("owner", &DeleteParams::background())
        .await
        .expect("deletes");
    assert!(names(&cms).await.is_empty());
}

#[tokio::test]
async fn foreground_deletion_waits_for_dependents() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = cms
        .create(&PostParams::default(), &cm("owner"))
        .await
        .expect("creates");
    let mut child = owned_by("child", &owner);
    child.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &child)
        .await
        .expect("creates");
    cms.delete("owner", &DeleteParams::foreground())
        .await
        .expect("deletes");
    let waiting = cms.get("owner").await.expect("owner waits");
    assert!(
        waiting
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"foregroundDeletion".to_string())
    );
    assert!(
        cms.get("child")
            .await
            .expect("child")
            .metadata
            .deletion_timestamp
            .is_some()
    );
    let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    cms.patch("child", &PatchParams::default(), &release)
        .await
        .expect("releases");
    assert!(
        names(&cms).await.is_empty(),
        "owner goes once its dependents are gone"
    );
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = cms
        .create(&PostParams::default(), &cm("owner"))
        .await
        .expect("creates");
    cms.create(&PostParams::default(), &owned_by("child", &owner))
        .await
        .expect("creates");
    let orphan = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Orphan),
        ..DeleteParams::default()
    };
    cms.delete("owner", &orphan).await.expect("deletes");
    let child = cms.get("child").await.expect("child kept");
    assert!(
        child
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test]
async fn namespace_termination_deletes_contents_then_the_namespace() {
    let env = TestEnv::start().await.expect("starts");
    let nss: Api<Namespace> = Api::all(env.client());
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "doomed"}})).expect("ns");
    let created = nss
        .create(&PostParams::default(), &ns)
        .await
        .expect("creates");
    assert_eq!(
        created.status.and_then(|s| s.phase).as_deref(),
        Some("Active")
    );
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "doomed");
    cms.create(&PostParams::default(), &cm("free"))
        .await
        .expect("creates");
    let mut held = cm("held");
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held)
        .await
        .expect("creates");
    nss.delete("doomed", &DeleteParams::default())
        .await
        .expect("deletes");
    let terminating = nss.get("doomed").await.expect("still there");
    assert_eq!(
        terminating.status.and_then(|s| s.phase).as_deref(),
        Some("Terminating")
    );
    assert_eq!(names(&cms).await, ["held"]);
    let refused = cms
        .create(&PostParams::default(), &cm("new"))
        .await
        .expect_err("terminating");
    assert_eq!(code(&refused), Some(403));
    let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    cms.patch("held", &PatchParams::default(), &release)
        .await
        .expect("releases");
    assert_eq!(nss.get_opt("doomed").await.expect("get"), None);
}

#[tokio::test]
async fn delete_collection_honours_selectors() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for (name, app) in [("a", "x"), ("b", "y"), ("c", "x")] {
        let mut c = cm(name);
        c.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        cms.create(&PostParams::default(), &c)
            .await
            .expect("creates");
    }
    cms.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("app=x"),
    )
    .await
    .expect("deletes");
    assert_eq!(names(&cms).await, ["b"]);
}
