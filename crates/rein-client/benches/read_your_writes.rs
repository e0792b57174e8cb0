//! What read-your-own-writes costs: cached reads with no recent writes (on vs off), and a
//! write followed at once by a read of the same object (on: the read waits for the informer
//! to deliver the write; off: it answers at once, possibly stale).

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec};
use kube_client::core::ObjectMeta;
use rein_client::cache::{Cache, CacheOptions};
use rein_client::{
    Client, ClientOptions, ListOptions, Patch, PatchParams, PostParams, ReadYourWrites,
};
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

fn client(env: &rein_testenv::TestEnv, cache: &Cache, ryow: ReadYourWrites) -> Client {
    Client::builder(env.client())
        .cache(cache.clone())
        .options(ClientOptions::default().read_your_writes(ryow))
        .build()
}

async fn gets(client: &Client, key: &ObjectKey, n: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let _: Arc<Pod> = client.get(key).await.unwrap_or_else(|e| panic!("{e}"));
    }
    per_op(start.elapsed(), n)
}

async fn lists(client: &Client, opts: &ListOptions, n: usize) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        let list = client
            .list::<Pod>(opts)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(list.items.len(), PODS / 10);
    }
    per_op(start.elapsed(), n)
}

/// `n` rounds of patch-then-get of one ConfigMap; counts the reads that saw the patch.
async fn write_then_read(client: &Client, key: &ObjectKey, n: usize) -> (f64, usize) {
    let mut fresh = 0;
    let start = Instant::now();
    for i in 0..n {
        let patch = Patch::Merge(serde_json::json!({"data": {"i": i.to_string()}}));
        let written: ConfigMap = client
            .patch(key, &patch, &PatchParams::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let read: Arc<ConfigMap> = client.get(key).await.unwrap_or_else(|e| panic!("{e}"));
        if read.metadata.resource_version == written.metadata.resource_version {
            fresh += 1;
        }
    }
    (per_op(start.elapsed(), n), fresh)
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
    let cm = ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some("cm".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    live.create(&cm, &PostParams::default())
        .await
        .unwrap_or_else(|e| panic!("seeding: {e}"));
    let cache = Cache::new(env.client(), CacheOptions::default());
    let on = client(&env, &cache, ReadYourWrites::default());
    let off = client(&env, &cache, ReadYourWrites::disabled());
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (cache, stop) = (cache.clone(), stop.clone());
        async move { cache.start(stop).await }
    });
    assert!(cache.wait_for_cache_sync().await, "the cache syncs");
    let cm_key = ObjectKey::new("default", "cm");
    let _: Arc<ConfigMap> = on.get(&cm_key).await.unwrap_or_else(|e| panic!("{e}"));

    // Reads with no write still open: `on` has written the pod (so it follows Pods) and read
    // it back (so nothing is open); `off` does not track at all.
    let key = ObjectKey::new("default", "pod-7");
    let label = Patch::Merge(serde_json::json!({"metadata": {"labels": {"touched": "yes"}}}));
    let _: Pod = on
        .patch(&key, &label, &PatchParams::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let _: Arc<Pod> = on.get(&key).await.unwrap_or_else(|e| panic!("{e}"));
    let by_label = ListOptions::default()
        .namespace("default")
        .matching_labels([("app", "app-3")]);
    let _ = gets(&on, &key, 2_000).await;
    let _ = gets(&off, &key, 2_000).await;
    let n = 20_000;
    let (mut get_off, mut get_on) = (f64::MAX, f64::MAX);
    let (mut list_off, mut list_on) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        get_off = get_off.min(gets(&off, &key, n).await);
        get_on = get_on.min(gets(&on, &key, n).await);
        list_off = list_off.min(lists(&off, &by_label, 300).await);
        list_on = list_on.min(lists(&on, &by_label, 300).await);
    }
    println!(
        "BENCH|read your writes|cached get, no recent writes, off|{get_off:.2}|us/op|best of 3; 1k pods cached"
    );
    println!(
        "BENCH|read your writes|cached get, no recent writes, on|{get_on:.2}|us/op|best of 3; aim: same as off"
    );
    println!(
        "BENCH|read your writes|cached list by label, no recent writes, off|{list_off:.1}|us/op|best of 3; 100 of 1k match"
    );
    println!(
        "BENCH|read your writes|cached list by label, no recent writes, on|{list_on:.1}|us/op|best of 3; aim: same as off"
    );

    // Write then read the same object at once.
    let n = 300;
    let _ = write_then_read(&off, &cm_key, 50).await;
    let _ = write_then_read(&on, &cm_key, 50).await;
    let (wr_off, fresh_off) = write_then_read(&off, &cm_key, n).await;
    let (wr_on, fresh_on) = write_then_read(&on, &cm_key, n).await;
    println!(
        "BENCH|read your writes|patch then get, off|{wr_off:.1}|us/op|{fresh_off} of {n} reads saw the patch"
    );
    println!(
        "BENCH|read your writes|patch then get, on|{wr_on:.1}|us/op|{fresh_on} of {n} reads saw the patch; the difference is the informer's delivery latency"
    );

    stop.cancel();
    let _ = task.await;
}
