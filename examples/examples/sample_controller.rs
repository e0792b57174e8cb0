//! sample-controller: a shared informer factory hands out informers and listers for a `Foo` custom resource and the Deployments each Foo owns; a worker reconciles them through a rate-limited queue (Go original: kubernetes/sample-controller controller.go + main.go).
// smoke-args: --quick
// smoke-expect: created deployment example-foo-deploy for foo default/example-foo
// smoke-expect: scaled deployment example-foo-deploy to 3
// smoke-expect: sample_controller finished

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube_client::api::{Api, Patch, PatchParams, PostParams};
use kube_client::core::{NamespaceResourceScope, ObjectMeta, Resource};
use rein::informer::{
    DeletedObject, Lister, ResourceEventHandlerFuncs, SharedInformerFactory, meta_namespace_key,
    split_meta_namespace_key,
};
use rein::workqueue::{RateLimitingQueue, default_controller_rate_limiter};
use rein_testenv::TestEnv;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
struct Args {
    /// Path to a kubeconfig; without one an embedded API server is used.
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Create a Foo, scale it, and exit.
    #[arg(long)]
    quick: bool,
}

/// The `Foo` custom resource (samplecontroller.k8s.io/v1alpha1).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Foo {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    metadata: ObjectMeta,
    #[serde(default)]
    spec: FooSpec,
    #[serde(default)]
    status: Option<FooStatus>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FooSpec {
    deployment_name: String,
    replicas: i32,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FooStatus {
    available_replicas: i32,
}

impl Resource for Foo {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;
    fn kind(_: &()) -> Cow<'_, str> {
        "Foo".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "samplecontroller.k8s.io".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1alpha1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "foos".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

fn foo_crd() -> anyhow::Result<CustomResourceDefinition> {
    Ok(serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": "foos.samplecontroller.k8s.io" },
        "spec": {
            "group": "samplecontroller.k8s.io",
            "scope": "Namespaced",
            "names": { "plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList" },
            "versions": [{
                "name": "v1alpha1", "served": true, "storage": true,
                "subresources": { "status": {} },
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": { "type": "object", "properties": {
                            "deploymentName": { "type": "string" },
                            "replicas": { "type": "integer" } } },
                        "status": { "type": "object", "properties": {
                            "availableReplicas": { "type": "integer" } } }
                    }
                } }
            }]
        }
    }))?)
}

/// sample-controller's `newDeployment`: an nginx Deployment owned by the Foo.
fn new_deployment(foo_obj: &Foo) -> Deployment {
    let labels = std::collections::BTreeMap::from([
        ("app".to_string(), "nginx".to_string()),
        (
            "controller".to_string(),
            foo_obj.metadata.name.clone().unwrap_or_default(),
        ),
    ]);
    Deployment {
        metadata: ObjectMeta {
            name: Some(foo_obj.spec.deployment_name.clone()),
            namespace: foo_obj.metadata.namespace.clone(),
            owner_references: Some(vec![OwnerReference {
                api_version: "samplecontroller.k8s.io/v1alpha1".into(),
                kind: "Foo".into(),
                name: foo_obj.metadata.name.clone().unwrap_or_default(),
                uid: foo_obj.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(foo_obj.spec.replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".into(),
                        image: Some("nginx:latest".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

struct SampleController {
    client: kube_client::Client,
    foos: Lister<Foo>,
    deployments: Lister<Deployment>,
    queue: RateLimitingQueue<String>,
}

impl SampleController {
    /// sample-controller's `syncHandler`: converge the Deployment, then the Foo's status.
    async fn sync(&self, key: &str) -> anyhow::Result<()> {
        let (ns, name) = split_meta_namespace_key(key)?;
        let Some(foo_obj) = self.foos.get(ns, name) else {
            println!("foo {key} no longer exists");
            return Ok(());
        };
        if foo_obj.spec.deployment_name.is_empty() {
            println!("foo {key}: deployment name must be specified");
            return Ok(());
        }
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), ns);
        let deployment = match self.deployments.get(ns, &foo_obj.spec.deployment_name) {
            Some(d) => d,
            None => {
                let d = deployments
                    .create(&PostParams::default(), &new_deployment(&foo_obj))
                    .await?;
                println!(
                    "created deployment {} for foo {key}",
                    foo_obj.spec.deployment_name
                );
                Arc::new(d)
            }
        };
        let owned = deployment
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.kind == "Foo" && o.name == name);
        anyhow::ensure!(
            owned,
            "deployment {} is not controlled by foo {key}",
            foo_obj.spec.deployment_name
        );
        let replicas = deployment
            .spec
            .as_ref()
            .and_then(|s| s.replicas)
            .unwrap_or(1);
        if replicas != foo_obj.spec.replicas {
            let patch = serde_json::json!({ "spec": { "replicas": foo_obj.spec.replicas } });
            deployments
                .patch(
                    &foo_obj.spec.deployment_name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await?;
            println!(
                "scaled deployment {} to {}",
                foo_obj.spec.deployment_name, foo_obj.spec.replicas
            );
        }
        let available = deployment
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0);
        let foos: Api<Foo> = Api::namespaced(self.client.clone(), ns);
        let status = serde_json::json!({ "status": { "availableReplicas": available } });
        if let Err(e) = foos
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await
        {
            tracing::info!("updating status of foo {key}: {e}");
        }
        Ok(())
    }

    async fn run_worker(self: Arc<Self>) {
        while let Some(key) = self.queue.get().await {
            match self.sync(&key).await {
                Ok(()) => self.queue.forget(&key),
                Err(e) => {
                    tracing::warn!("error syncing {key}: {e}; requeueing");
                    self.queue.add_rate_limited(key.clone());
                }
            }
            self.queue.done(&key);
        }
    }
}

/// sample-controller's `handleObject`: enqueue the Foo that controls a Deployment.
fn owner_key(d: &Deployment) -> Option<String> {
    let owner = d
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true) && o.kind == "Foo")?;
    Some(format!(
        "{}/{}",
        d.metadata.namespace.as_deref().unwrap_or_default(),
        owner.name
    ))
}

async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !cond() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();
    let quick = args.quick || rein_examples::quick_mode();
    let (_env, client) = match &args.kubeconfig {
        Some(path) if !quick => {
            let kc = kube_client::config::Kubeconfig::read_from(path)?;
            let config =
                kube_client::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
            (None, kube_client::Client::try_from(config)?)
        }
        _ => {
            let env = TestEnv::start().await?;
            let client = env.client();
            (Some(env), client)
        }
    };

    // Install the CRD (idempotently) before any Foo informer lists.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    if let Err(e) = crds.create(&PostParams::default(), &foo_crd()?).await {
        tracing::info!("creating the Foo CRD: {e}");
    }

    let factory = SharedInformerFactory::new(client.clone(), Duration::from_secs(30));
    let foo_informer = factory.informer::<Foo>();
    let deployment_informer = factory.informer::<Deployment>();
    let controller = Arc::new(SampleController {
        client: client.clone(),
        foos: factory.lister::<Foo>(),
        deployments: factory.lister::<Deployment>(),
        queue: RateLimitingQueue::new(default_controller_rate_limiter()),
    });

    let (q1, q2) = (controller.queue.clone(), controller.queue.clone());
    foo_informer.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .on_add(move |f: &Arc<Foo>, _| q1.add(meta_namespace_key(f.as_ref())))
            .on_update(move |_, f: &Arc<Foo>| q2.add(meta_namespace_key(f.as_ref()))),
    )?;
    let (q3, q4, q5) = (
        controller.queue.clone(),
        controller.queue.clone(),
        controller.queue.clone(),
    );
    deployment_informer.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .on_add(move |d: &Arc<Deployment>, _| {
                if let Some(k) = owner_key(d) {
                    q3.add(k)
                }
            })
            .on_update(move |old: &Arc<Deployment>, new: &Arc<Deployment>| {
                // Periodic resyncs carry the same resourceVersion: nothing changed.
                if old.metadata.resource_version == new.metadata.resource_version {
                    return;
                }
                if let Some(k) = owner_key(new) {
                    q4.add(k)
                }
            })
            .on_delete(move |d: &DeletedObject<Deployment>| {
                if let Some(k) = owner_key(d.object()) {
                    q5.add(k)
                }
            }),
    )?;

    let stop = CancellationToken::new();
    factory.start(stop.clone());
    anyhow::ensure!(
        factory.wait_for_cache_sync(&stop).await,
        "failed to wait for caches to sync"
    );
    let workers: Vec<_> = (0..2)
        .map(|_| tokio::spawn(controller.clone().run_worker()))
        .collect();

    if quick {
        let foos: Api<Foo> = Api::namespaced(client.clone(), "default");
        let foo_obj = Foo {
            api_version: "samplecontroller.k8s.io/v1alpha1".into(),
            kind: "Foo".into(),
            metadata: ObjectMeta {
                name: Some("example-foo".into()),
                ..Default::default()
            },
            spec: FooSpec {
                deployment_name: "example-foo-deploy".into(),
                replicas: 1,
            },
            status: None,
        };
        foos.create(&PostParams::default(), &foo_obj).await?;
        let deployments = controller.deployments.clone();
        wait_for("the deployment", || {
            deployments.get("default", "example-foo-deploy").is_some()
        })
        .await?;
        let scale = serde_json::json!({ "spec": { "replicas": 3 } });
        foos.patch(
            "example-foo",
            &PatchParams::default(),
            &Patch::Merge(&scale),
        )
        .await?;
        wait_for("the deployment to scale", || {
            deployments
                .get("default", "example-foo-deploy")
                .and_then(|d| d.spec.as_ref().and_then(|s| s.replicas))
                == Some(3)
        })
        .await?;
    } else {
        tokio::signal::ctrl_c().await?;
    }
    stop.cancel();
    controller.queue.shut_down();
    for w in workers {
        let _ = w.await;
    }
    factory.shutdown().await;
    println!("sample_controller finished");
    Ok(())
}
