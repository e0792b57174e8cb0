//! Custom resources through the typed and the dynamic client, and discovery.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionSpec,
    CustomResourceDefinitionVersion, CustomResourceSubresourceStatus, CustomResourceSubresources,
    CustomResourceValidation, JSONSchemaProps,
};
use kube_client::core::{ObjectMeta, Resource};
use rein_client::{Client, DeleteParams, ListOptions, Patch, PatchParams, PostParams};
use rein_scheme::ObjectKey;
use rein_scheme::{GroupVersionKind, GroupVersionResource, Scheme, Scope};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::support::{env, meta};

/// A custom resource written by hand, as `#[derive(CustomResource)]` would generate it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct Widget {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    metadata: ObjectMeta,
    spec: WidgetSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<WidgetStatus>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct WidgetSpec {
    size: i64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct WidgetStatus {
    ready: bool,
}

impl Resource for Widget {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Widget".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "example.com".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "widgets".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

fn widget(ns: &str, name: &str, size: i64) -> Widget {
    Widget {
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        metadata: meta(ns, name),
        spec: WidgetSpec { size },
        status: None,
    }
}

fn crd() -> CustomResourceDefinition {
    CustomResourceDefinition {
        metadata: meta("", "widgets.example.com"),
        spec: CustomResourceDefinitionSpec {
            group: "example.com".into(),
            names: CustomResourceDefinitionNames {
                kind: "Widget".into(),
                plural: "widgets".into(),
                singular: Some("widget".into()),
                list_kind: Some("WidgetList".into()),
                ..Default::default()
            },
            scope: "Namespaced".into(),
            versions: vec![CustomResourceDefinitionVersion {
                name: "v1".into(),
                served: true,
                storage: true,
                schema: Some(CustomResourceValidation {
                    open_api_v3_schema: Some(JSONSchemaProps {
                        type_: Some("object".into()),
                        x_kubernetes_preserve_unknown_fields: Some(true),
                        ..Default::default()
                    }),
                }),
                subresources: Some(CustomResourceSubresources {
                    // `{}`: the default newtype is `null`, which kube-apiserver decodes as no status
                    // subresource at all.
                    status: Some(CustomResourceSubresourceStatus(serde_json::json!({}))),
                    scale: None,
                }),
                ..Default::default()
            }],
            ..Default::default()
        },
        status: None,
    }
}

async fn install_crd(client: &Client) {
    client.create(&crd(), &PostParams::default()).await.unwrap();
    // Wait until discovery serves the new kind (generous bound; normally immediate).
    let gvk = GroupVersionKind::new("example.com", "v1", "Widget");
    for _ in 0..200 {
        if client
            .discovery()
            .mapping_for(&gvk, client.rest_mapper())
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the CRD never became served");
}

#[tokio::test]
async fn typed_client_on_a_custom_resource() {
    let (_env, client) = env().await;
    install_crd(&client).await;
    let created = client
        .create(&widget("default", "w1", 3), &PostParams::default())
        .await
        .unwrap();
    assert_eq!(created.spec.size, 3);
    let key = ObjectKey::new("default", "w1");
    let mut got: Widget = Arc::unwrap_or_clone(client.get(&key).await.unwrap());
    got.spec.size = 5;
    let updated = client.update(&got, &PostParams::default()).await.unwrap();
    assert_eq!(updated.spec.size, 5);
    let mut with_status = updated.clone();
    with_status.status = Some(WidgetStatus { ready: true });
    let st = client
        .status()
        .update(&with_status, &PostParams::default())
        .await
        .unwrap();
    assert_eq!(st.status, Some(WidgetStatus { ready: true }));
    let list = client
        .list::<Widget>(&ListOptions::default().namespace("default"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    client
        .delete::<Widget>(&key, &DeleteParams::default())
        .await
        .unwrap();
    assert!(client.get::<Widget>(&key).await.unwrap_err().is_not_found());

    // The scheme knows the type once registered.
    let mut scheme = Scheme::with_builtins();
    scheme.register::<Widget>();
    assert_eq!(scheme.gvk_for::<Widget>().unwrap().kind, "Widget");
}

#[tokio::test]
async fn dynamic_client_on_a_custom_resource() {
    let (_env, client) = env().await;
    install_crd(&client).await;
    let widgets = client
        .dynamic()
        .resource(&GroupVersionKind::new("example.com", "v1", "Widget"))
        .await
        .unwrap();
    assert_eq!(widgets.mapping().gvr.resource, "widgets");
    assert_eq!(widgets.mapping().scope, Scope::Namespaced);

    let key = ObjectKey::new("default", "d1");
    let obj = widgets.new_object(&key).data(json!({"spec": {"size": 1}}));
    let created = widgets.create(&obj, &PostParams::default()).await.unwrap();
    assert_eq!(created.data["spec"]["size"], 1);
    let patched = widgets
        .patch(
            &key,
            &Patch::Merge(json!({"spec": {"size": 2}})),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["spec"]["size"], 2);
    let status = widgets
        .patch_status(
            &key,
            &Patch::Merge(json!({"status": {"ready": true}})),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["ready"], true);
    let mut got = widgets.get(&key).await.unwrap();
    got.data["spec"]["size"] = json!(9);
    let updated = widgets.update(&got, &PostParams::default()).await.unwrap();
    assert_eq!(updated.data["spec"]["size"], 9);
    assert_eq!(
        widgets
            .list(&ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    widgets
        .delete(&key, &DeleteParams::default())
        .await
        .unwrap();
    assert!(widgets.get(&key).await.unwrap_err().is_not_found());

    // The same kind by resource name.
    let by_gvr = client
        .dynamic()
        .resource_by_gvr(&GroupVersionResource::new("example.com", "v1", "widgets"))
        .await
        .unwrap();
    assert_eq!(by_gvr.mapping().gvk.kind, "Widget");
}

#[tokio::test]
async fn discovery_lists_what_the_server_serves() {
    let (_env, client) = env().await;
    let gvrs = client.discovery().server_gvrs().await.unwrap();
    assert!(gvrs.contains(&GroupVersionResource::new("", "v1", "pods")));
    assert!(gvrs.contains(&GroupVersionResource::of::<Deployment>()));
    let resources = client.discovery().server_resources().await.unwrap();
    let pods = resources
        .iter()
        .find(|r| r.mapping.gvr.resource == "pods")
        .unwrap();
    assert!(pods.subresources.iter().any(|s| s == "status"));
    assert!(pods.verbs.iter().any(|v| v == "watch"));
}

#[tokio::test]
async fn dynamic_client_on_a_builtin_kind_uses_the_static_mapping() {
    let (env, client) = env().await;
    env.clear_requests();
    let deployments = client
        .dynamic()
        .resource(&GroupVersionKind::of::<Deployment>())
        .await
        .unwrap();
    // No discovery request was needed.
    assert!(env.requests().is_empty());
    assert!(
        deployments
            .list(&ListOptions::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

/// Discovery reads the aggregated documents (two requests) and they agree with the legacy
/// ones; when aggregated discovery fails, the legacy documents are read instead.
#[tokio::test]
async fn discovery_is_aggregated_with_a_legacy_fallback() {
    let (env, client) = env().await;
    let key = |r: &rein_client::discovery::ServedResource| {
        let mut subresources = r.subresources.clone();
        subresources.sort();
        (
            r.mapping.gvr.to_string(),
            r.mapping.gvk.to_string(),
            r.mapping.scope == rein_scheme::Scope::Namespaced,
            subresources,
        )
    };
    let discovery = client.discovery();
    let before = env.requests().len();
    let aggregated = discovery.server_resources_aggregated().await.unwrap();
    let paths: Vec<String> = env.requests()[before..]
        .iter()
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(paths, ["/api", "/apis"], "two requests");
    let legacy = discovery.server_resources_legacy().await.unwrap();
    let mut a: Vec<_> = aggregated.iter().map(key).collect();
    let mut l: Vec<_> = legacy.iter().map(key).collect();
    a.sort();
    l.sort();
    assert_eq!(a, l);
    assert!(a.iter().any(|(gvr, ..)| gvr.contains("deployments")));

    // The aggregated /apis answer fails once: the legacy documents are read.
    env.faults()
        .inject(rein_testenv::Fault::server_error(1).matching("/apis"));
    let before = env.requests().len();
    let resources = discovery.server_resources().await.unwrap();
    let mut r: Vec<_> = resources.iter().map(key).collect();
    r.sort();
    assert_eq!(r, l);
    assert!(
        env.requests()[before..]
            .iter()
            .any(|r| r.path == "/apis/apps/v1"),
        "the fallback read the per-group documents"
    );
}
