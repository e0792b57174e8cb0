//! A ReplicaSet controller that creates missing Pods and re-creates deleted ones, driven by ReplicaSet events and by events of the Pods it owns (Go original: kubebuilder's ReplicaSet controller example / controller-runtime examples/builtins).
// smoke-args: --quick
// smoke-expect: replicaset default/web has 3 pods
// smoke-expect: deleted pod web-1
// smoke-expect: pod web-1 was re-created
// smoke-expect: replicaset_scaler finished

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_client::Api;
use kube_client::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use rein::client::controllerutil::set_controller_reference;
use rein::client::{Client, ListOptions, ignore_already_exists, ignore_not_found};
use rein::controller::{Action, Context, ControllerManagedBy, Reconciler, Request};
use rein::manager::Manager;
use rein::scheme::labels::Selector;
use tokio_util::sync::CancellationToken;

/// Keeps `spec.replicas` Pods named `<rs>-<i>` for every ReplicaSet.
struct ReplicaSetReconciler {
    client: Client,
}

#[async_trait::async_trait]
impl Reconciler for ReplicaSetReconciler {
    type Error = anyhow::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> anyhow::Result<Action> {
        let Some(rs) = ignore_not_found(self.client.get::<ReplicaSet>(&req.key).await)? else {
            return Ok(Action::done());
        };
        let spec = rs.spec.clone().unwrap_or_default();
        let selector = Selector::from_label_selector(&spec.selector)?;
        let pods = self
            .client
            .list::<Pod>(
                &ListOptions::default()
                    .namespace(req.namespace().unwrap_or("default"))
                    .labels(selector),
            )
            .await?;
        let uid = rs.metadata.uid.clone();
        let owned: Vec<String> = pods
            .items
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter(|p| {
                p.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.controller == Some(true) && Some(&o.uid) == uid.as_ref())
            })
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        let template = spec.template.unwrap_or_default();
        for i in 0..spec.replicas.unwrap_or(1) {
            let name = format!("{}-{i}", req.name());
            if owned.contains(&name) {
                continue;
            }
            let mut pod = Pod {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: req.namespace().map(str::to_owned),
                    labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
                    ..ObjectMeta::default()
                },
                spec: template.spec.clone(),
                ..Pod::default()
            };
            set_controller_reference(&*rs, &mut pod, self.client.scheme())?;
            if ignore_already_exists(self.client.create(&pod, &PostParams::default()).await)?
                .is_some()
            {
                println!("created pod {}/{name}", req.namespace().unwrap_or(""));
            }
        }
        Ok(Action::done())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let quick = rein_examples::quick_mode();
    let (_env, config) = rein_examples::cluster_config(quick).await?;
    let mgr = Manager::builder(config).build().await?;
    ControllerManagedBy::new(&mgr)
        .for_::<ReplicaSet>()
        .owns::<Pod>()
        .complete(ReplicaSetReconciler {
            client: mgr.client(),
        })?;

    let stop = if quick {
        CancellationToken::new()
    } else {
        rein::manager::signals::shutdown_signal()
    };
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    if quick {
        mgr.elected().await;
        demo(mgr.kube_client()).await?;
        stop.cancel();
    }
    running.await??;
    println!("replicaset_scaler finished");
    Ok(())
}

/// Creates a ReplicaSet of three, waits for its Pods, deletes one and waits for it to return.
async fn demo(kube: kube_client::Client) -> anyhow::Result<()> {
    let labels: BTreeMap<String, String> = [("app".to_owned(), "web".to_owned())].into();
    let rs = ReplicaSet {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(3),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "web".into(),
                        image: Some("nginx".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            }),
            ..ReplicaSetSpec::default()
        }),
        ..ReplicaSet::default()
    };
    Api::<ReplicaSet>::namespaced(kube.clone(), "default")
        .create(&PostParams::default(), &rs)
        .await?;
    let pods = Api::<Pod>::namespaced(kube, "default");
    let list = ListParams::default().labels("app=web");
    tokio::time::timeout(Duration::from_secs(30), async {
        while pods.list(&list).await.map_or(0, |l| l.items.len()) < 3 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await?;
    println!("replicaset default/web has 3 pods");
    let old_uid = pods.get("web-1").await?.metadata.uid;
    pods.delete("web-1", &DeleteParams::default()).await?;
    println!("deleted pod web-1");
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(Some(p)) = pods.get_opt("web-1").await
                && p.metadata.uid != old_uid
                && p.metadata.deletion_timestamp.is_none()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await?;
    println!("pod web-1 was re-created");
    Ok(())
}
