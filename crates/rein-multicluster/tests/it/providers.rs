//! The hub-backed providers: kubeconfig Secrets selected by label, and Cluster API
//! `Cluster`s with their `<name>-kubeconfig` Secrets; bad entries are logged, never fatal.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Api;
use kube_client::api::{DynamicObject, PostParams};
use rein_client::Client;
use rein_multicluster::{
    ClusterApiProvider, ClusterName, DEFAULT_KUBECONFIG_LABEL, Fleet, KubeconfigSecretProvider,
};
use rein_scheme::ObjectKey;
use rein_testenv::TestEnv;

use crate::support::{
    Hub, PROPAGATE, add_propagation, config_map, quick_options, value_of, wait_for,
};

fn secret(name: &str, labels: &[(&str, &str)], key: &str, value: &str) -> Secret {
    let mut s = Secret::default();
    s.metadata.name = Some(name.to_owned());
    s.metadata.namespace = Some("default".to_owned());
    s.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    s.data = Some(BTreeMap::from([(
        key.to_owned(),
        ByteString(value.as_bytes().to_vec()),
    )]));
    s
}

fn kubeconfig_json(env: &TestEnv) -> String {
    serde_json::to_string(&env.kubeconfig()).expect("kubeconfig as JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_secrets_engage_and_disengage_members() {
    let mut hub = Hub::new().await;
    let member = TestEnv::start().await.unwrap();
    let fleet = Fleet::builder(&hub.mgr, KubeconfigSecretProvider::new("default"))
        .options(quick_options())
        .build()
        .unwrap();
    add_propagation(&fleet);
    hub.start();
    let hub_client = Client::new(hub.env.client());
    let label = [(DEFAULT_KUBECONFIG_LABEL, "true")];
    let pp = PostParams::default();
    // Unlabelled, missing its key, or not a kubeconfig: none is engaged, nothing fails.
    hub_client
        .create(
            &secret("ignored", &[], "kubeconfig", &kubeconfig_json(&member)),
            &pp,
        )
        .await
        .unwrap();
    hub_client
        .create(&secret("no-key", &label, "other", "x"), &pp)
        .await
        .unwrap();
    hub_client
        .create(&secret("garbage", &label, "kubeconfig", "{[nope"), &pp)
        .await
        .unwrap();
    hub_client
        .create(
            &secret("east", &label, "kubeconfig", &kubeconfig_json(&member)),
            &pp,
        )
        .await
        .unwrap();
    let cm = config_map("settings", &[(PROPAGATE, "true")], &[("value", "from-hub")]);
    hub_client.create(&cm, &pp).await.unwrap();

    let east = ClusterName::new("east").unwrap();
    let member_client = Client::new(member.client());
    wait_for("east engaged and reconciled", || async {
        value_of(&member_client, "settings").await.as_deref() == Some("from-hub")
    })
    .await;
    assert_eq!(fleet.member_names(), [east]);

    hub_client
        .delete::<Secret>(&ObjectKey::new("default", "east"), &Default::default())
        .await
        .unwrap();
    wait_for("east disengaged", || async {
        fleet.member_names().is_empty()
    })
    .await;
    hub.stop().await;
}

fn cluster_api_crd() -> CustomResourceDefinition {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "clusters.cluster.x-k8s.io"},
        "spec": {
            "group": "cluster.x-k8s.io",
            "scope": "Namespaced",
            "names": {"plural": "clusters", "singular": "cluster", "kind": "Cluster", "listKind": "ClusterList"},
            "versions": [{
                "name": "v1beta1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }))
    .expect("CRD")
}

fn capi_cluster(name: &str, phase: Option<&str>) -> DynamicObject {
    let mut obj = serde_json::json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Cluster",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {},
    });
    if let Some(phase) = phase {
        obj["status"] = serde_json::json!({ "phase": phase });
    }
    serde_json::from_value(obj).expect("Cluster")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_api_clusters_engage_once_provisioned() {
    let hub_env = TestEnv::builder()
        .crd(cluster_api_crd())
        .start()
        .await
        .unwrap();
    let mgr = rein_manager::Manager::builder(hub_env.config())
        .build()
        .await
        .unwrap();
    let mut hub = Hub::from_parts(hub_env, mgr);
    let member = TestEnv::start().await.unwrap();
    let fleet = Fleet::builder(&hub.mgr, ClusterApiProvider::new().namespace("default"))
        .options(quick_options())
        .build()
        .unwrap();
    hub.start();
    let mapping = ClusterApiProvider::cluster_mapping();
    let clusters: Api<DynamicObject> =
        Api::namespaced_with(hub.env.client(), "default", &mapping.api_resource());
    let pp = PostParams::default();
    let hub_client = Client::new(hub.env.client());
    let name = ClusterName::new("default/prod").unwrap();

    // Provisioning: not engaged, though its Secret exists.
    clusters
        .create(&pp, &capi_cluster("prod", Some("Provisioning")))
        .await
        .unwrap();
    let kubeconfig = secret(
        "prod-kubeconfig",
        &[("cluster.x-k8s.io/cluster-name", "prod")],
        "value",
        &kubeconfig_json(&member),
    );
    hub_client.create(&kubeconfig, &pp).await.unwrap();
    // A provisioned Cluster without a Secret stays out too.
    clusters
        .create(&pp, &capi_cluster("lost", Some("Provisioned")))
        .await
        .unwrap();

    let mut prod = clusters.get("prod").await.unwrap();
    prod.data["status"]["phase"] = "Provisioned".into();
    clusters.replace("prod", &pp, &prod).await.unwrap();
    wait_for("default/prod engaged", || async {
        fleet.member_names() == [name.clone()]
    })
    .await;
    let cluster = fleet.cluster(&name).expect("engaged");
    wait_for("its health probed", || async {
        cluster.health().is_healthy()
    })
    .await;

    // The Secret's removal disengages it.
    hub_client
        .delete::<Secret>(
            &ObjectKey::new("default", "prod-kubeconfig"),
            &Default::default(),
        )
        .await
        .unwrap();
    wait_for("default/prod disengaged", || async {
        fleet.member_names().is_empty()
    })
    .await;
    hub.stop().await;
}
