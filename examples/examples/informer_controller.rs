//! The low-level informer controller: an `InformerControllerConfig` with a DeltaFIFO, a lister-watcher, a process function and a resync period; `run`, `has_synced`, `last_sync_resource_version` (Go original: client-go tools/cache NewInformer / cache.Config + New(cfg).Run).
// smoke-args: --quick
// smoke-expect: synced: true
// smoke-expect: Added default/cm-live
// smoke-expect: Deleted default/cm-0
// smoke-expect: informer_controller finished

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, DeleteParams, PostParams};
use kube_client::core::ObjectMeta;
use rein::informer::{
    ApiListerWatcher, DeletedObject, DeltaFifo, DeltaFifoOptions, DeltaType, Indexer,
    InformerController, InformerControllerConfig, ListWatchOptions, ReflectorOptions,
    deletion_handling_key,
};
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
struct Args {
    /// Path to a kubeconfig; without one an embedded API server is used.
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Create and delete a few ConfigMaps, then exit.
    #[arg(long)]
    quick: bool,
}

fn configmap(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
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
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    if quick {
        for i in 0..2 {
            api.create(&PostParams::default(), &configmap(&format!("cm-{i}")))
                .await?;
        }
    }

    // The store the process function maintains doubles as the FIFO's known objects.
    let store: Indexer<ConfigMap> = Indexer::new();
    let queue = Arc::new(DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(store.clone()),
        emit_replaced: true,
        ..Default::default()
    }));
    let process_store = store.clone();
    let controller = Arc::new(InformerController::new(InformerControllerConfig {
        queue,
        lister_watcher: Arc::new(ApiListerWatcher::<ConfigMap>::new(
            client,
            ListWatchOptions {
                namespace: Some("default".into()),
                ..Default::default()
            },
        )),
        process: Box::new(move |deltas, initial| {
            for d in deltas {
                let Some(obj) = d.as_object() else { continue };
                let key = deletion_handling_key(obj);
                match (d.kind, obj) {
                    (DeltaType::Deleted, _) => {
                        process_store.delete_by_key(&key);
                    }
                    (_, DeletedObject::Object(o)) => {
                        process_store.update(o.clone());
                    }
                    (_, DeletedObject::Tombstone { .. }) => {}
                }
                println!("{:?} {key} (initial list: {initial})", d.kind);
            }
            Ok(())
        }),
        reflector: ReflectorOptions {
            name: "configmaps".into(),
            resync_period: Duration::from_secs(30),
            page_size: Some(100),
            ..Default::default()
        },
        should_resync: None,
        watch_error_handler: Some(Arc::new(|e| tracing::warn!("watch error: {e}"))),
        transform: None,
        known_objects: None,
        retry_on_error: false,
    }));

    let stop = CancellationToken::new();
    let run = {
        let (controller, stop) = (controller.clone(), stop.clone());
        tokio::spawn(async move { controller.run(stop).await })
    };
    let synced = rein::informer::wait_for_cache_sync(&stop, &[controller.as_ref()]).await;
    println!("synced: {synced}; cached: {}", store.len());
    println!(
        "last sync resource version: {:?}",
        controller.last_sync_resource_version()
    );

    if quick {
        api.create(&PostParams::default(), &configmap("cm-live"))
            .await?;
        api.delete("cm-0", &DeleteParams::default()).await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while (store.get_by_key("default/cm-0").is_some()
            || store.get_by_key("default/cm-live").is_none())
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    } else {
        tokio::signal::ctrl_c().await?;
    }
    stop.cancel();
    let _ = run.await;
    println!("informer_controller finished");
    Ok(())
}
