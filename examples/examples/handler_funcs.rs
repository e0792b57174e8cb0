//! A ConfigMap watch whose handler (Funcs with only a create function) enqueues the fixed request bbb/abc for every ConfigMap created (Go original: controller-runtime pkg/handler example_test.go ExampleFuncs).
// smoke-args: --quick
// smoke-expect: created configmap default/settings
// smoke-expect: reconciling bbb/abc
// smoke-expect: handler_funcs finished

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::{ObjectMeta, PostParams};
use rein::controller::handler::Funcs;
use rein::controller::source::Kind;
use rein::controller::{Action, Controller, ControllerOptions, Request, reconciler_fn};
use rein::manager::Manager;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let quick = rein_examples::quick_mode();
    let (_env, config) = rein_examples::cluster_config(quick).await?;
    let mgr = Manager::builder(config).build().await?;

    let reconciled = Arc::new(Notify::new());
    let signal = reconciled.clone();
    // Every namespace already has its `kube-root-ca.crt` ConfigMap, as on a real cluster: the
    // quick run waits for the reconcile that follows the creation of its own ConfigMap.
    let saw_settings = Arc::new(AtomicBool::new(false));
    let (seen, saw) = (saw_settings.clone(), saw_settings.clone());
    let controller = Controller::new(
        "configmap-funcs",
        reconciler_fn(move |_ctx, req: Request| {
            let signal = signal.clone();
            let seen = seen.load(Ordering::SeqCst);
            async move {
                println!("reconciling {req}");
                if seen {
                    signal.notify_one();
                }
                Ok::<_, anyhow::Error>(Action::done())
            }
        }),
        ControllerOptions::default(),
    )?;
    // Only creates matter; updates and deletes are ignored by this handler.
    controller.watch(
        Kind::<ConfigMap>::new(&mgr.cache()),
        Funcs::<ConfigMap>::new().on_create(move |event, queue| {
            let cm = &event.object.metadata;
            if cm.name.as_deref() == Some("settings") {
                saw.store(true, Ordering::SeqCst);
            }
            println!(
                "created configmap {}/{}",
                cm.namespace.as_deref().unwrap_or(""),
                cm.name.as_deref().unwrap_or("")
            );
            queue.add(Request::new("bbb", "abc"));
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
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some("settings".into()),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let notified = reconciled.notified();
        Api::<ConfigMap>::namespaced(mgr.kube_client(), "default")
            .create(&PostParams::default(), &cm)
            .await?;
        tokio::time::timeout(Duration::from_secs(30), notified).await?;
        stop.cancel();
    }
    running.await??;
    println!("handler_funcs finished");
    Ok(())
}
