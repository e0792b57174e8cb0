//! The delegating client reads cached kinds from the shared informer cache and uncached kinds (and dynamic objects) from the API server, and says which path served each read (Go original: controller-runtime client.New with CacheOptions{Reader, DisableFor, Unstructured}).
// smoke-args: --quick
// smoke-expect: Pod default/web-0: served by cache
// smoke-expect: Secret default/token: served by api_server
// smoke-expect: dynamic ConfigMap default/settings: served by api_server
// smoke-expect: cached_and_uncached_reads finished

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec, Secret};
use kube_client::core::ObjectMeta;
use rein::client::cache::{Cache, CacheOptions};
use rein::client::metrics::{ReadSource, reads_served};
use rein::client::{Client, ClientOptions, ListOptions, PostParams};
use rein::scheme::GroupVersionKind;
use rein::scheme::ObjectKey;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let env = rein_testenv::TestEnv::start().await?;
    let seed = Client::new(env.client());
    for i in 0..3 {
        seed.create(&pod(&format!("web-{i}")), &PostParams::default())
            .await?;
    }
    seed.create(
        &Secret {
            metadata: meta("token"),
            string_data: Some([("token".to_string(), "s3cr3t".to_string())].into()),
            ..Default::default()
        },
        &PostParams::default(),
    )
    .await?;
    seed.create(
        &ConfigMap {
            metadata: meta("settings"),
            data: Some([("mode".to_string(), "fast".to_string())].into()),
            ..Default::default()
        },
        &PostParams::default(),
    )
    .await?;

    // Secrets are never cached (as many operators choose); dynamic objects are read live
    // unless `cache_unstructured(true)`.
    let cache = Cache::new(env.client(), CacheOptions::default());
    let client = Client::builder(env.client())
        .cache(cache.clone())
        .options(ClientOptions::default().uncached::<Secret>())
        .build();
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (cache, stop) = (cache.clone(), stop.clone());
        async move { cache.start(stop).await }
    });
    // Reads before the cache runs fail with `CacheNotRunning` (controller-runtime's
    // ErrCacheNotStarted): wait until it has started and synced.
    anyhow::ensure!(cache.wait_for_cache_sync().await, "the cache did not start");

    let key = ObjectKey::new("default", "web-0");
    let first: Arc<Pod> = tokio::time::timeout(Duration::from_secs(30), client.get(&key)).await??;
    report("Pod", &key, "get");
    env.clear_requests();
    for _ in 0..10 {
        let again: Arc<Pod> = client.get(&key).await?;
        assert_eq!(again.metadata.uid, first.metadata.uid);
    }
    let pods = client
        .list::<Pod>(&ListOptions::default().namespace("default"))
        .await?;
    println!(
        "10 more gets and a list of {} pods sent {} requests to the API server",
        pods.items.len(),
        env.requests()
            .iter()
            .filter(
                |r| r.method == "GET" && !r.query.as_deref().unwrap_or_default().contains("watch")
            )
            .count()
    );

    let secret_key = ObjectKey::new("default", "token");
    let _secret: Arc<Secret> = client.get(&secret_key).await?;
    report("Secret", &secret_key, "get");

    let cm_key = ObjectKey::new("default", "settings");
    let configmaps = client
        .dynamic()
        .resource(&GroupVersionKind::new("", "v1", "ConfigMap"))
        .await?;
    let cm = configmaps.get(&cm_key).await?;
    println!("dynamic ConfigMap data: {}", cm.data["data"]);
    print!("dynamic ");
    report("ConfigMap", &cm_key, "get");

    // The uncached API reader is always available.
    let live: Arc<Pod> = client.api_reader().get(&key).await?;
    println!(
        "api_reader got {} live",
        live.metadata.name.as_deref().unwrap_or_default()
    );

    stop.cancel();
    running.await??;
    println!("cached_and_uncached_reads finished");
    Ok(())
}

/// Says which path served the latest read of `kind`, from the read counters.
fn report(kind: &str, key: &ObjectKey, verb: &str) {
    static SEEN: std::sync::Mutex<Vec<(String, u64, u64)>> = std::sync::Mutex::new(Vec::new());
    let cache = reads_served(kind, verb, ReadSource::Cache);
    let live = reads_served(kind, verb, ReadSource::ApiServer);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let (prev_cache, prev_live) = seen
        .iter()
        .find(|(k, _, _)| k == kind)
        .map(|(_, c, l)| (*c, *l))
        .unwrap_or((0, 0));
    seen.retain(|(k, _, _)| k != kind);
    seen.push((kind.to_string(), cache, live));
    let source = if cache > prev_cache {
        "cache"
    } else if live > prev_live {
        "api_server"
    } else {
        "unknown"
    };
    println!("{kind} {key}: served by {source}");
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: Some("default".into()),
        name: Some(name.into()),
        ..Default::default()
    }
}

fn pod(name: &str) -> Pod {
    Pod {
        metadata: meta(name),
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
