//! A controller named "abc" built by hand, watching Pods with EnqueueRequestForObject; the reconciler prints each request (Go original: controller-runtime pkg/controller example_test.go ExampleNew / ExampleController).
// smoke-args: --quick
// smoke-expect: reconciling default/demo
// smoke-expect: controller_by_hand finished

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube_client::Api;
use kube_client::api::{ObjectMeta, PostParams};
use rein::controller::handler::EnqueueRequestForObject;
use rein::controller::source::Kind;
use rein::controller::{Action, Context, Controller, ControllerOptions, Request, reconciler_fn};
use rein::manager::Manager;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let quick = rein_examples::quick_mode();
    let (_env, config) = rein_examples::cluster_config(quick).await?;
    let mgr = Manager::builder(config).build().await?;

    // The reconciler only sees keys: it would read the Pod from mgr.client() to act on it.
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel::<Request>();
    let reconciler = reconciler_fn(move |_ctx: Context, req: Request| {
        let seen = seen_tx.clone();
        async move {
            println!("reconciling {req}");
            let _ = seen.send(req);
            Ok::<_, anyhow::Error>(Action::done())
        }
    });
    let controller = Controller::new("abc", reconciler, ControllerOptions::default())?;
    controller.watch(
        Kind::<Pod>::new(&mgr.cache()),
        EnqueueRequestForObject,
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
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("demo".into()),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "app".into(),
                    image: Some("nginx".into()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        Api::<Pod>::namespaced(mgr.kube_client(), "default")
            .create(&PostParams::default(), &pod)
            .await?;
        tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(req) = seen_rx.recv().await {
                if req == Request::new("default", "demo") {
                    break;
                }
            }
        })
        .await?;
        stop.cancel();
    }
    running.await??;
    println!("controller_by_hand finished");
    Ok(())
}
