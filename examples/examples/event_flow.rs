//! Event → handler → request → reconciler, end to end for Pods: each step prints what it sees (Go original: controller-runtime's architecture walkthrough, pkg/doc.go and pkg/controller/controller.go).
// smoke-args: --quick
// smoke-expect: handler: create event for default/web -> request default/web
// smoke-expect: reconciler: default/web exists
// smoke-expect: reconciler: default/web is gone
// smoke-expect: event_flow finished

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube_client::Api;
use kube_client::api::{DeleteParams, ObjectMeta, PostParams};
use rein::client::ignore_not_found;
use rein::controller::handler::Funcs;
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

    // Reconciler: reads the current state by key from the cache-backed client.
    let client = mgr.client();
    let (tx, mut outcomes) = mpsc::unbounded_channel::<(Request, bool)>();
    let reconciler = reconciler_fn(move |_ctx, req: Request| {
        let (client, tx) = (client.clone(), tx.clone());
        async move {
            let pod = ignore_not_found(client.get::<Pod>(&req.key).await)?;
            println!(
                "reconciler: {req} {}",
                if pod.is_some() { "exists" } else { "is gone" }
            );
            let _ = tx.send((req, pod.is_some()));
            Ok::<_, anyhow::Error>(Action::done())
        }
    });
    let controller = Controller::new("pod-event-flow", reconciler, ControllerOptions::default())?;
    // Handler: turns each event into a request (the key only) on the controller's queue.
    controller.watch(
        Kind::<Pod>::new(&mgr.cache()),
        Funcs::<Pod>::new()
            .on_create(|e, q| {
                let req = Request::from_object(&*e.object);
                println!("handler: create event for {req} -> request {req}");
                q.add(req);
            })
            .on_update(|e, q| q.add(Request::from_object(&*e.object_new)))
            .on_delete(|e, q| {
                let req = Request::from_object(&*e.object);
                println!("handler: delete event for {req} -> request {req}");
                q.add(req);
            }),
        vec![],
    );
    mgr.add(Arc::new(controller))?;

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
        let pods = Api::<Pod>::namespaced(mgr.kube_client(), "default");
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "web".into(),
                    image: Some("nginx".into()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        pods.create(&PostParams::default(), &pod).await?;
        wait_for(&mut outcomes, true).await?;
        pods.delete("web", &DeleteParams::default()).await?;
        wait_for(&mut outcomes, false).await?;
        stop.cancel();
    }
    running.await??;
    println!("event_flow finished");
    Ok(())
}

/// Waits until the reconciler reports default/web with the given existence.
async fn wait_for(
    outcomes: &mut mpsc::UnboundedReceiver<(Request, bool)>,
    exists: bool,
) -> anyhow::Result<()> {
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some((req, seen)) = outcomes.recv().await {
            if req == Request::new("default", "web") && seen == exists {
                return;
            }
        }
    })
    .await?;
    Ok(())
}
