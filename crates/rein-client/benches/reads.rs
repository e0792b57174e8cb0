//! Benchmarks of the delegating client's read paths against rein-testenv: cached get/list
//! (label selector, field index) versus a live get from the API server.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube_client::core::ObjectMeta;
use rein_client::cache::{Cache, CacheOptions};
use rein_client::{Client, ListOptions, PostParams};
use rein_scheme::ObjectKey;
use tokio_util::sync::CancellationToken;

const PODS: usize = 1_000;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("building the runtime: {e}"));
    runtime.block_on(run());
}

fn pod(i: usize) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(format!("pod-{i}")),
            labels: Some([("app".to_string(), format!("app-{}", i % 10))].into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: Some(format!("node-{}", i % 50)),
            containers: vec![Container {
                name: "c".into(),
                image: Some("nginx".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn per_op(elapsed: Duration, n: usize) -> f64 {
    elapsed.as_secs_f64() * 1e6 / n as f64
}

async fn run() {
    let env = rein_testenv::TestEnv::start()
        .await
        .unwrap_or_else(|e| panic!("starting the test server: {e}"));
    let live = Client::new(env.client());
    for i in 0..PODS {
        live.create(&pod(i), &PostParams::default())
            .await
            .unwrap_or_else(|e| panic!("seeding: {e}"));
    }
    let cache = Cache::new(env.client(), CacheOptions::default());
    cache
        .index_field::<Pod>("spec.nodeName", |p: &Pod| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .into_iter()
                .collect()
        })
        .unwrap_or_else(|e| panic!("indexing: {e}"));
    let client = Client::builder(env.client()).cache(cache.clone()).build();
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (cache, stop) = (cache.clone(), stop.clone());
        async move { cache.start(stop).await }
    });
    assert!(cache.wait_for_cache_sync().await, "the cache syncs");

    let key = ObjectKey::new("default", "pod-7");
    let n = 20_000;
    let start = Instant::now();
    for _ in 0..n {
        let _: Pod = client.get(&key).await.unwrap_or_else(|e| panic!("{e}"));
    }
    println!(
        "BENCH|client reads|cached get (1k pods cached)|{:.2}|us/op|includes a deep copy",
        per_op(start.elapsed(), n)
    );

    let n = 300;
    let start = Instant::now();
    for _ in 0..n {
        let _: Pod = live.get(&key).await.unwrap_or_else(|e| panic!("{e}"));
    }
    println!(
        "BENCH|client reads|live get from the API server|{:.1}|us/op|rein-testenv over loopback HTTP",
        per_op(start.elapsed(), n)
    );

    let n = 500;
    let by_label = ListOptions::default()
        .namespace("default")
        .matching_labels([("app", "app-3")]);
    let start = Instant::now();
    for _ in 0..n {
        let list = client
            .list::<Pod>(&by_label)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(list.items.len(), PODS / 10);
    }
    println!(
        "BENCH|client reads|cached list by label, 100 of 1k match|{:.1}|us/op|",
        per_op(start.elapsed(), n)
    );

    let by_field = ListOptions::default().matching_fields([("spec.nodeName", "node-3")]);
    let n = 5_000;
    let start = Instant::now();
    for _ in 0..n {
        let list = client
            .list::<Pod>(&by_field)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(list.items.len(), PODS / 50);
    }
    println!(
        "BENCH|client reads|cached list by field index, 20 of 1k match|{:.1}|us/op|",
        per_op(start.elapsed(), n)
    );

    stop.cancel();
    let _ = task.await;
}
