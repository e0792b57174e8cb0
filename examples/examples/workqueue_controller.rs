//! A controller built from a shared informer, a rate-limited workqueue and a worker that retries failures up to five times (Go original: client-go examples/workqueue/main.go).
// smoke-args: --quick
// smoke-expect: Sync/Add/Update for Pod web-0
// smoke-expect: Pod default/web-1 does not exist anymore
// smoke-expect: Dropping pod default/flaky out of the queue
// smoke-expect: workqueue_controller finished

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clap::Parser;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube_client::api::{Api, DeleteParams, PostParams};
use kube_client::core::ObjectMeta;
use rein::informer::{
    ApiListerWatcher, DeletedObject, Indexer, InformerOptions, ListWatchOptions,
    ResourceEventHandlerFuncs, SharedIndexInformer, deletion_handling_key, meta_namespace_key,
};
use rein::workqueue::{RateLimitingQueue, default_controller_rate_limiter};
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
struct Args {
    /// Path to a kubeconfig; without one an embedded API server is used.
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Create a few pods, process them and exit.
    #[arg(long)]
    quick: bool,
}

const MAX_RETRIES: u32 = 5;

/// The business logic: print what happened to the pod. Pods labelled `flaky` always fail.
fn sync_to_stdout(indexer: &Indexer<Pod>, key: &str) -> Result<(), String> {
    match indexer.get_by_key(key) {
        None => {
            println!("Pod {key} does not exist anymore");
            Ok(())
        }
        Some(pod) => {
            let flaky = pod
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key("flaky"));
            if flaky {
                return Err(format!("pod {key} is flaky"));
            }
            println!(
                "Sync/Add/Update for Pod {}",
                pod.metadata.name.as_deref().unwrap_or_default()
            );
            Ok(())
        }
    }
}

/// client-go's `handleErr`: retry with rate limiting, give up after `MAX_RETRIES`.
fn handle_err(queue: &RateLimitingQueue<String>, key: &str, result: Result<(), String>) -> bool {
    match result {
        Ok(()) => {
            queue.forget(&key.to_string());
            false
        }
        Err(e) if queue.num_requeues(&key.to_string()) < MAX_RETRIES => {
            tracing::info!("error syncing pod {key}: {e}");
            queue.add_rate_limited(key.to_string());
            false
        }
        Err(e) => {
            queue.forget(&key.to_string());
            println!("Dropping pod {key} out of the queue: {e}");
            true
        }
    }
}

async fn worker(
    queue: RateLimitingQueue<String>,
    indexer: Indexer<Pod>,
    dropped: Arc<AtomicUsize>,
) {
    while let Some(key) = queue.get().await {
        let result = sync_to_stdout(&indexer, &key);
        if handle_err(&queue, &key, result) {
            dropped.fetch_add(1, Ordering::SeqCst);
        }
        queue.done(&key);
    }
}

fn pod(name: &str, flaky: bool) -> Pod {
    let mut labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
    if flaky {
        labels.insert("flaky".into(), "true".into());
    }
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "web".into(),
                image: Some("nginx".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
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

    // The informer keeps the pod cache; its handlers only enqueue keys.
    let lw = ApiListerWatcher::<Pod>::new(
        client.clone(),
        ListWatchOptions {
            namespace: Some("default".into()),
            ..Default::default()
        },
    );
    let informer = Arc::new(SharedIndexInformer::new(lw, InformerOptions::default()));
    let queue: RateLimitingQueue<String> =
        RateLimitingQueue::new(default_controller_rate_limiter());
    let (qa, qu, qd) = (queue.clone(), queue.clone(), queue.clone());
    informer.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .on_add(move |p: &Arc<Pod>, _| qa.add(meta_namespace_key(p.as_ref())))
            .on_update(move |_, p: &Arc<Pod>| qu.add(meta_namespace_key(p.as_ref())))
            .on_delete(move |d: &DeletedObject<Pod>| qd.add(deletion_handling_key(d))),
    )?;

    let stop = CancellationToken::new();
    let run = {
        let (informer, stop) = (informer.clone(), stop.clone());
        tokio::spawn(async move { informer.run(stop).await })
    };
    let ok = rein::informer::wait_for_cache_sync(&stop, &[informer.as_ref()]).await;
    anyhow::ensure!(ok, "timed out waiting for caches to sync");
    let dropped = Arc::new(AtomicUsize::new(0));
    let worker_task = tokio::spawn(worker(queue.clone(), informer.indexer(), dropped.clone()));

    if quick {
        let pods: Api<Pod> = Api::namespaced(client, "default");
        for name in ["web-0", "web-1"] {
            pods.create(&PostParams::default(), &pod(name, false))
                .await?;
        }
        pods.create(&PostParams::default(), &pod("flaky", true))
            .await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        pods.delete("web-1", &DeleteParams::default()).await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while dropped.load(Ordering::SeqCst) == 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    } else {
        tokio::signal::ctrl_c().await?;
    }
    stop.cancel();
    queue.shut_down();
    let _ = run.await;
    let _ = worker_task.await;
    println!("workqueue_controller finished");
    Ok(())
}
