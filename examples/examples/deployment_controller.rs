//! A Deployment-style controller that watches its own kind and the ReplicaSets it owns: it creates the ReplicaSet, keeps its replicas in step, and re-creates it when deleted (Go original: controller-runtime pkg/builder example_test.go, For(Deployment)/Owns(ReplicaSet)).
// smoke-args: --quick
// smoke-expect: replicaset default/app-rs has 2 replicas
// smoke-expect: replicaset default/app-rs has 5 replicas
// smoke-expect: replicaset default/app-rs was re-created
// smoke-expect: deployment_controller finished

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_client::Api;
use kube_client::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use rein::client::controllerutil::set_controller_reference;
use rein::client::{Client, ignore_already_exists, ignore_not_found};
use rein::controller::predicate::GenerationChanged;
use rein::controller::{Action, Context, ControllerManagedBy, Reconciler, Request};
use rein::manager::Manager;
use rein::scheme::ObjectKey;
use tokio_util::sync::CancellationToken;

/// One ReplicaSet `<deployment>-rs` per Deployment, with the Deployment's replicas.
struct DeploymentReconciler {
    client: Client,
}

#[async_trait::async_trait]
impl Reconciler for DeploymentReconciler {
    type Error = anyhow::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> anyhow::Result<Action> {
        let Some(deploy) = ignore_not_found(self.client.get::<Deployment>(&req.key).await)? else {
            return Ok(Action::done());
        };
        let spec = deploy.spec.clone().unwrap_or_default();
        let rs_key = ObjectKey::new(
            req.namespace().unwrap_or("default"),
            format!("{}-rs", req.name()),
        );
        match ignore_not_found(self.client.get::<ReplicaSet>(&rs_key).await)? {
            None => {
                let mut rs = ReplicaSet {
                    metadata: ObjectMeta {
                        name: Some(rs_key.name.clone()),
                        namespace: rs_key.namespace.clone(),
                        ..ObjectMeta::default()
                    },
                    spec: Some(ReplicaSetSpec {
                        replicas: spec.replicas,
                        selector: spec.selector.clone(),
                        template: Some(spec.template.clone()),
                        ..ReplicaSetSpec::default()
                    }),
                    ..ReplicaSet::default()
                };
                set_controller_reference(&*deploy, &mut rs, self.client.scheme())?;
                ignore_already_exists(self.client.create(&rs, &PostParams::default()).await)?;
            }
            Some(rs) => {
                let current = rs.spec.as_ref().and_then(|s| s.replicas);
                if current != spec.replicas {
                    // The cache lends its object; modify an owned copy.
                    let mut rs = Arc::unwrap_or_clone(rs);
                    if let Some(s) = rs.spec.as_mut() {
                        s.replicas = spec.replicas;
                    }
                    self.client.update(&rs, &PostParams::default()).await?;
                }
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
        // Spec changes only: status updates of the Deployment do not trigger reconciles.
        .for_with::<Deployment>(vec![std::sync::Arc::new(GenerationChanged)])
        .owns::<ReplicaSet>()
        .complete(DeploymentReconciler {
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
    println!("deployment_controller finished");
    Ok(())
}

/// Waits until the ReplicaSet exists with `replicas` (and, if given, a new uid).
async fn wait_rs(
    api: &Api<ReplicaSet>,
    replicas: i32,
    not_uid: Option<&str>,
) -> anyhow::Result<Option<String>> {
    let uid = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(Some(rs)) = api.get_opt("app-rs").await
                && rs.spec.as_ref().and_then(|s| s.replicas) == Some(replicas)
                && rs.metadata.uid.as_deref() != not_uid
            {
                return rs.metadata.uid;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await?;
    Ok(uid)
}

async fn demo(kube: kube_client::Client) -> anyhow::Result<()> {
    let labels: BTreeMap<String, String> = [("app".to_owned(), "app".to_owned())].into();
    let deploy = Deployment {
        metadata: ObjectMeta {
            name: Some("app".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(2),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app".into(),
                        image: Some("nginx".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    };
    let deployments = Api::<Deployment>::namespaced(kube.clone(), "default");
    deployments.create(&PostParams::default(), &deploy).await?;
    let replica_sets = Api::<ReplicaSet>::namespaced(kube, "default");
    wait_rs(&replica_sets, 2, None).await?;
    println!("replicaset default/app-rs has 2 replicas");

    let scale = serde_json::json!({"spec": {"replicas": 5}});
    deployments
        .patch("app", &PatchParams::default(), &Patch::Merge(&scale))
        .await?;
    let uid = wait_rs(&replica_sets, 5, None).await?;
    println!("replicaset default/app-rs has 5 replicas");

    replica_sets
        .delete("app-rs", &DeleteParams::default())
        .await?;
    wait_rs(&replica_sets, 5, uid.as_deref()).await?;
    println!("replicaset default/app-rs was re-created");
    Ok(())
}
