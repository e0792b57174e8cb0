//! Many events for one key collapse into one reconcile — 50 rapid updates of one ConfigMap while a slow reconcile runs give a handful of reconciles, not 50 (Go original: client-go workqueue de-duplication as used by controller-runtime's controller).
// smoke-args: --quick
// smoke-expect: events collapsed: true
// smoke-expect: event_collapsing finished

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::{ObjectMeta, PostParams};
use rein::controller::handler::EnqueueRequestForObject;
use rein::controller::source::Kind;
use rein::controller::{Action, Controller, ControllerOptions, Request, reconciler_fn};
use rein::manager::Manager;
use tokio_util::sync::CancellationToken;

const UPDATES: usize = 50;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let quick = rein_examples::quick_mode();
    let (_env, config) = rein_examples::cluster_config(quick).await?;
    let mgr = Manager::builder(config).build().await?;

    let reconciles = Arc::new(AtomicUsize::new(0));
    let last_seen = Arc::new(AtomicUsize::new(0));
    let (count, last) = (reconciles.clone(), last_seen.clone());
    let client = mgr.client();
    let reconciler = reconciler_fn(move |_ctx, req: Request| {
        let (count, last, client) = (count.clone(), last.clone(), client.clone());
        async move {
            count.fetch_add(1, Ordering::SeqCst);
            // A slow reconcile: events arriving meanwhile pile up on one queued key.
            tokio::time::sleep(Duration::from_millis(300)).await;
            let cm = client.get::<ConfigMap>(&req.key).await?;
            let n = cm
                .data
                .as_ref()
                .and_then(|d| d.get("n").cloned())
                .unwrap_or_default();
            last.store(n.parse().unwrap_or(0), Ordering::SeqCst);
            Ok::<_, anyhow::Error>(Action::done())
        }
    });
    let controller = Controller::new("collapse", reconciler, ControllerOptions::default())?;
    controller.watch(
        Kind::<ConfigMap>::new(&mgr.cache()),
        EnqueueRequestForObject,
        vec![],
    );
    mgr.add(Arc::new(controller))?;

    // The demo ends by itself once the reconciler has seen the final state.
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;
    let api = Api::<ConfigMap>::namespaced(mgr.kube_client(), "default");
    let mut cm = api
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("busy".into()),
                    namespace: Some("default".into()),
                    ..ObjectMeta::default()
                },
                data: Some([("n".to_owned(), "0".to_owned())].into()),
                ..ConfigMap::default()
            },
        )
        .await?;
    for n in 1..=UPDATES {
        cm.data = Some([("n".to_owned(), n.to_string())].into());
        cm = api.replace("busy", &PostParams::default(), &cm).await?;
    }
    // Wait until the reconciler has seen the final state.
    tokio::time::timeout(Duration::from_secs(60), async {
        while last_seen.load(Ordering::SeqCst) != UPDATES {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await?;
    let total = reconciles.load(Ordering::SeqCst);
    println!(
        "{} events (1 create + {UPDATES} updates), {total} reconciles",
        UPDATES + 1
    );
    println!("events collapsed: {}", total < UPDATES / 2);
    stop.cancel();
    running.await??;
    println!("event_collapsing finished");
    Ok(())
}
