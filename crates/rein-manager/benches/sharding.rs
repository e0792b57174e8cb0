//! Sharded managers against rein-testenv: reconcile throughput of 1, 2 and 4 replicas for a
//! reconciler with simulated API latency, and how much of the cache each replica holds.
//!
//! Each replica is a manager with its own client and shard id in this process; a reconcile
//! waits `API_LATENCY` (a stand-in for its API calls) and asks to come back at once, so the
//! throughput is bounded by replicas × workers / latency, not by the CPU. Cache size per
//! replica is the number of cached objects, their JSON size, and the heap a cache of the
//! replica's share holds: one process holds every replica, so RSS cannot be split between
//! them; after the run, with every replica stopped, a fresh cache with each replica's
//! (label-filtered) options is synced alone and the allocator's growth is counted.

use std::alloc::System;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cap::Cap;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, ListParams, PostParams};
use rein_client::cache::Cache;
use rein_controller::{Action, Context, ControllerManagedBy, ControllerOptions, Request};
use rein_manager::leaderelection::LeaderElectionConfig;
use rein_manager::sharding::ShardingOptions;
use rein_manager::{Manager, Options};
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

const OBJECTS: usize = 400;
/// Bytes of data per ConfigMap.
const PAYLOAD: usize = 2048;
const API_LATENCY: Duration = Duration::from_millis(20);
const WORKERS: usize = 4;
const WINDOW: Duration = Duration::from_secs(3);
const LABEL: &str = "shard.rein.dev/bench";

fn lease() -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(200),
        ..LeaderElectionConfig::default()
    }
}

async fn replica(env: &TestEnv, id: &str, reconciles: Arc<AtomicU64>) -> Manager {
    let sharding = ShardingOptions::new("bench")
        .namespace("default")
        .shard_id(id)
        .lease(lease())
        .kind::<ConfigMap>();
    let mgr = Manager::builder(env.config())
        .options(Options::default().sharding(sharding))
        .build()
        .await
        .expect("manager");
    let reconciler = rein_controller::reconciler_fn(move |_ctx: Context, _req: Request| {
        let reconciles = reconciles.clone();
        async move {
            tokio::time::sleep(API_LATENCY).await;
            reconciles.fetch_add(1, Ordering::Relaxed);
            Ok::<_, std::convert::Infallible>(Action::requeue_after(Duration::from_millis(1)))
        }
    });
    ControllerManagedBy::new(&mgr)
        .for_::<ConfigMap>()
        .named(format!("bench-{id}"))
        .with_options(ControllerOptions {
            skip_name_validation: true,
            max_concurrent_reconciles: WORKERS,
            ..ControllerOptions::default()
        })
        .sharded()
        .complete(reconciler)
        .expect("controller");
    mgr
}

/// Waits until every bench ConfigMap is assigned to one of `n` shards, none draining.
async fn wait_assigned(env: &TestEnv, n: usize) {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let list = api.list(&ListParams::default()).await.expect("list");
        let mut shards = std::collections::BTreeSet::new();
        let mut assigned = 0;
        for cm in &list.items {
            let labels = cm.metadata.labels.clone().unwrap_or_default();
            if let Some(shard) = labels.get(LABEL)
                && !labels.keys().any(|k| k.starts_with("drain."))
                && cm
                    .metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("bench-"))
            {
                assigned += 1;
                shards.insert(shard.clone());
            }
        }
        if assigned == OBJECTS && shards.len() == n {
            return;
        }
        assert!(Instant::now() < deadline, "not assigned to {n} shards");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The heap (KiB) a fresh cache with `mgr`'s options holds once its ConfigMap informer synced.
async fn cache_heap_kib(env: &TestEnv, mgr: &Manager) -> f64 {
    let stop = CancellationToken::new();
    let before = ALLOCATOR.allocated();
    let cache = Cache::new(env.client(), mgr.cache().options().clone());
    let informer = cache.informer_for::<ConfigMap>().await.expect("informer");
    let running = tokio::spawn({
        let (cache, stop) = (cache.clone(), stop.clone());
        async move { cache.start(stop).await }
    });
    assert!(cache.wait_for_cache_sync().await, "cache sync");
    // Let the list's buffers go before counting.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let held = ALLOCATOR.allocated().saturating_sub(before);
    drop(informer);
    stop.cancel();
    running.await.expect("cache task").expect("cache");
    held as f64 / 1024.0
}

/// (reconciles per second, mean cached objects per replica, mean cached KiB per replica,
/// mean heap KiB of a replica's cache).
async fn run(replicas: usize) -> (f64, f64, f64, f64) {
    let env = TestEnv::start().await.expect("testenv");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..OBJECTS {
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": { "name": format!("bench-{i}") },
            "data": { "payload": "x".repeat(PAYLOAD) }
        }))
        .expect("configmap");
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create");
    }
    let reconciles = Arc::new(AtomicU64::new(0));
    let stop = CancellationToken::new();
    let mut managers = Vec::new();
    let mut tasks = Vec::new();
    for r in 0..replicas {
        let mgr = replica(&env, &format!("r{r}"), reconciles.clone()).await;
        tasks.push(tokio::spawn({
            let (mgr, stop) = (mgr.clone(), stop.clone());
            async move { mgr.start(stop).await }
        }));
        managers.push(mgr);
    }
    wait_assigned(&env, replicas).await;
    // Let the new owners' caches and queues settle.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = reconciles.load(Ordering::Relaxed);
    let begun = Instant::now();
    tokio::time::sleep(WINDOW).await;
    let rate = (reconciles.load(Ordering::Relaxed) - before) as f64 / begun.elapsed().as_secs_f64();
    let (mut objects, mut bytes) = (0usize, 0usize);
    for mgr in &managers {
        let informer = mgr
            .cache()
            .informer_for::<ConfigMap>()
            .await
            .expect("informer");
        for cm in informer.indexer().list() {
            objects += 1;
            bytes += serde_json::to_vec(cm.as_ref()).expect("json").len();
        }
    }
    stop.cancel();
    for task in tasks {
        task.await.expect("manager task").expect("manager");
    }
    let mut heap = 0.0;
    for mgr in &managers {
        heap += cache_heap_kib(&env, mgr).await;
    }
    (
        rate,
        objects as f64 / replicas as f64,
        bytes as f64 / 1024.0 / replicas as f64,
        heap / replicas as f64,
    )
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        for replicas in [1usize, 2, 4] {
            let (rate, objects, kib, heap) = run(replicas).await;
            let bound = (replicas * WORKERS) as f64 / API_LATENCY.as_secs_f64();
            println!(
                "BENCH|sharding|throughput_{replicas}_replicas|{rate:.0}|reconciles/s|{OBJECTS} ConfigMaps, {WORKERS} workers per replica, {} ms simulated API latency; bound {bound:.0}/s",
                API_LATENCY.as_millis()
            );
            println!(
                "BENCH|sharding|cached_objects_per_replica_{replicas}_replicas|{objects:.0}|objects|mean over replicas, of {OBJECTS}"
            );
            println!(
                "BENCH|sharding|cached_kib_per_replica_{replicas}_replicas|{kib:.0}|KiB|mean JSON size of the cached ConfigMaps ({PAYLOAD} B of data each)"
            );
            println!(
                "BENCH|sharding|cache_heap_kib_per_replica_{replicas}_replicas|{heap:.0}|KiB|mean heap held by a cache with a replica's filtered options, synced alone after the run"
            );
        }
    });
}
