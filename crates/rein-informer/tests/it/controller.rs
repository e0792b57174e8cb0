//! The low-level informer controller (S27) against rein-testenv: DeltaFIFO, process function,
//! retry on error, `has_synced` and `last_sync_resource_version`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::Api;
use parking_lot::Mutex;
use rein_informer::{
    ApiListerWatcher, DeltaFifo, DeltaFifoOptions, DeltaType, Indexer, Requeue,
    deletion_handling_key,
};
use rein_informer::{InformerController, InformerControllerConfig};
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

async fn run_with_retry(retry_on_error: bool) -> (usize, Vec<(DeltaType, String)>) {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    create(&api, "ok").await;
    create(&api, "fails-once").await;

    let store: Indexer<ConfigMap> = Indexer::new();
    let queue = Arc::new(DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(store.clone()),
        emit_replaced: true,
        requeue_on_error: true,
        ..Default::default()
    }));
    let failures = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (process_store, process_failures, process_seen) =
        (store.clone(), failures.clone(), seen.clone());
    let controller = Arc::new(InformerController::new(InformerControllerConfig {
        queue,
        lister_watcher: Arc::new(ApiListerWatcher::<ConfigMap>::new(
            env.client(),
            crate::support::demo_objects(),
        )),
        process: Box::new(move |deltas, _initial| {
            for d in &deltas {
                let Some(obj) = d.as_object() else { continue };
                let key = deletion_handling_key(obj);
                if key == "default/fails-once"
                    && process_failures.fetch_add(1, Ordering::SeqCst) == 0
                {
                    return Err(Requeue);
                }
                process_seen.lock().push((d.kind, key.clone()));
                if d.kind == DeltaType::Deleted {
                    process_store.delete_by_key(&key);
                } else {
                    process_store.update(obj.object().clone());
                }
            }
            Ok(())
        }),
        reflector: options(rein_informer::QueueKind::DeltaFifo).reflector,
        should_resync: None,
        watch_error_handler: None,
        transform: None,
        known_objects: None,
        retry_on_error,
    }));
    let stop = CancellationToken::new();
    let task = {
        let (c, stop) = (controller.clone(), stop.clone());
        tokio::spawn(async move { c.run(stop).await })
    };
    eventually(20, "controller synced", || controller.has_synced()).await;
    assert!(controller.last_sync_resource_version().is_some());
    create(&api, "later").await;
    eventually(20, "later object processed", || {
        store.get_by_key("default/later").is_some()
    })
    .await;
    stop.cancel();
    task.await.expect("controller task");
    let seen = seen.lock().clone();
    (store.len(), seen)
}

#[tokio::test]
async fn retry_on_error_requeues_failed_deltas() {
    let (len, seen) = run_with_retry(true).await;
    assert_eq!(len, 3);
    assert!(seen.contains(&(DeltaType::Replaced, "default/fails-once".into())));
}

#[tokio::test]
async fn without_retry_failed_deltas_are_dropped() {
    let (len, seen) = run_with_retry(false).await;
    assert_eq!(len, 2, "the failed object never reached the store");
    assert!(!seen.iter().any(|(_, k)| k == "default/fails-once"));
}
