//! Handlers that map an event to another object's request: EnqueueRequestForOwner — an event on an owned Pod enqueues its owning ReplicaSet, set_controller_reference filling the reference from the scheme — and EnqueueRequestsFromMapFunc — a ConfigMap event enqueues the ReplicaSet its `app` label names (Go original: controller-runtime pkg/handler example_test.go ExampleEnqueueRequestForOwner and ExampleEnqueueRequestsFromMapFunc, controllerutil.SetControllerReference).
// smoke-args: --quick
// smoke-expect: owner reference: apps/v1 ReplicaSet web (controller: true)
// smoke-expect: pod event enqueued its owner default/web
// smoke-expect: map function: configmap default/web-settings -> replicaset default/web
// smoke-expect: configmap event enqueued default/web
// smoke-expect: mapping_handlers finished

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_client::api::{ObjectMeta, PostParams};
use kube_client::{Api, ResourceExt};
use rein::client::controllerutil::set_controller_reference;
use rein::controller::handler::{EnqueueRequestForOwner, EnqueueRequestsFromMapFunc};
use rein::controller::source::Kind;
use rein::controller::{Action, Controller, ControllerOptions, Request, reconciler_fn};
use rein::manager::Manager;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let quick = rein_examples::quick_mode();
    let (_env, config) = rein_examples::cluster_config(quick).await?;
    let mgr = Manager::builder(config).build().await?;

    let (tx, mut owners) = mpsc::unbounded_channel::<Request>();
    let controller = Controller::new(
        "replicaset-owner",
        reconciler_fn(move |_ctx, req: Request| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(req);
                Ok::<_, anyhow::Error>(Action::done())
            }
        }),
        ControllerOptions::default(),
    )?;
    // Pod events → the ReplicaSet that controls the Pod (only the controller owner).
    controller.watch(
        Kind::<Pod>::new(&mgr.cache()),
        EnqueueRequestForOwner::new::<ReplicaSet>(),
        vec![],
    );
    // ConfigMap events → the ReplicaSet named by the ConfigMap's `app` label (a map function:
    // any relation the code can compute, not only owner references).
    controller.watch(
        Kind::<ConfigMap>::new(&mgr.cache()),
        EnqueueRequestsFromMapFunc::new(|cm: &ConfigMap| {
            let Some(app) = cm.labels().get("app") else {
                return Vec::new();
            };
            let ns = cm.namespace().unwrap_or_default();
            println!(
                "map function: configmap {ns}/{} -> replicaset {ns}/{app}",
                cm.name_any()
            );
            vec![Request::new(ns, app)]
        }),
        vec![],
    );
    mgr.add(Arc::new(controller))?;

    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;

    let labels: BTreeMap<String, String> = [("app".to_owned(), "web".to_owned())].into();
    let container = Container {
        name: "web".into(),
        image: Some("nginx".into()),
        ..Container::default()
    };
    let rs = Api::<ReplicaSet>::namespaced(mgr.kube_client(), "default")
        .create(
            &PostParams::default(),
            &ReplicaSet {
                metadata: ObjectMeta {
                    name: Some("web".into()),
                    namespace: Some("default".into()),
                    ..ObjectMeta::default()
                },
                spec: Some(ReplicaSetSpec {
                    replicas: Some(0),
                    selector: LabelSelector {
                        match_labels: Some(labels.clone()),
                        ..LabelSelector::default()
                    },
                    template: Some(PodTemplateSpec {
                        metadata: Some(ObjectMeta {
                            labels: Some(labels.clone()),
                            ..ObjectMeta::default()
                        }),
                        spec: Some(PodSpec {
                            containers: vec![container.clone()],
                            ..PodSpec::default()
                        }),
                    }),
                    ..ReplicaSetSpec::default()
                }),
                ..ReplicaSet::default()
            },
        )
        .await?;

    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some("web-1".into()),
            namespace: Some("default".into()),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![container],
            ..PodSpec::default()
        }),
        ..Pod::default()
    };
    set_controller_reference(&rs, &mut pod, &mgr.scheme())?;
    if let Some(r) = pod.metadata.owner_references.iter().flatten().next() {
        println!(
            "owner reference: {} {} {} (controller: {})",
            r.api_version,
            r.kind,
            r.name,
            r.controller.unwrap_or(false)
        );
    }
    Api::<Pod>::namespaced(mgr.kube_client(), "default")
        .create(&PostParams::default(), &pod)
        .await?;
    let owner = tokio::time::timeout(Duration::from_secs(30), owners.recv()).await?;
    if let Some(owner) = owner {
        println!("pod event enqueued its owner {owner}");
    }

    // Later events of the owned Pod may enqueue the owner again; drain them, then create the
    // ConfigMap and wait for the request its map function returns.
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(200), owners.recv()).await {}
    let settings = ConfigMap {
        metadata: ObjectMeta {
            name: Some("web-settings".into()),
            namespace: Some("default".into()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    Api::<ConfigMap>::namespaced(mgr.kube_client(), "default")
        .create(&PostParams::default(), &settings)
        .await?;
    if let Some(req) = tokio::time::timeout(Duration::from_secs(30), owners.recv()).await? {
        println!("configmap event enqueued {req}");
    }
    if !quick {
        rein::manager::signals::shutdown_signal().cancelled().await;
    }
    stop.cancel();
    running.await??;
    println!("mapping_handlers finished");
    Ok(())
}
