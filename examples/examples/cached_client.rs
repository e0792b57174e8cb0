//! Build a cache-backed client from a kubeconfig file path, start it, and get a Pod by ObjectKey (Go original: controller-runtime manager.New(config.GetConfigOrDie()) + mgr.GetClient().Get).
// smoke-args: --quick
// smoke-expect: got pod default/gateway
// smoke-expect: served by: cache
// smoke-expect: cached_client finished

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube_client::core::ObjectMeta;
use rein::client::cache::{Cache, CacheOptions};
use rein::client::metrics::{ReadSource, reads_served};
use rein::client::{Client, PostParams};
use rein::scheme::ObjectKey;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
struct Args {
    /// Path to a kubeconfig (default: $KUBECONFIG, else an embedded test server whose
    /// kubeconfig is written to a temporary file).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Namespace of the pod.
    #[arg(long, default_value = "default")]
    namespace: String,
    /// Name of the pod.
    #[arg(long, default_value = "gateway")]
    name: String,
    /// Smoke-test mode.
    #[arg(long)]
    quick: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();

    // Out-of-cluster configuration from a kubeconfig file path; without one, start the
    // embedded API server, write its kubeconfig to a file and use that path.
    let mut _env = None;
    let path = match args
        .kubeconfig
        .or_else(|| std::env::var_os("KUBECONFIG").map(PathBuf::from))
    {
        Some(path) => path,
        None => {
            let env = rein_testenv::TestEnv::start().await?;
            let path = std::env::temp_dir()
                .join(format!("rein-example-{}.kubeconfig", std::process::id()));
            env.write_kubeconfig(&path)?;
            // Seed the pod the example reads.
            let seed = Client::new(env.client());
            seed.create(
                &gateway(&args.namespace, &args.name),
                &PostParams::default(),
            )
            .await?;
            _env = Some(env);
            path
        }
    };
    let kubeconfig = kube_client::config::Kubeconfig::read_from(&path)?;
    let config =
        kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    println!("using kubeconfig {}", path.display());
    let kube = kube_client::Client::try_from(config)?;

    // The cache-backed client: reads come from a shared informer cache.
    let cache = Cache::new(kube.clone(), CacheOptions::default());
    let client = Client::builder(kube).cache(cache.clone()).build();
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let cache = cache.clone();
        let stop = stop.clone();
        async move { cache.start(stop).await }
    });
    cache.wait_for_cache_sync().await;

    let key = ObjectKey::new(&args.namespace, &args.name);
    let before = reads_served("Pod", "get", ReadSource::Cache);
    let pod: Arc<Pod> = tokio::time::timeout(Duration::from_secs(30), client.get(&key)).await??;
    let from_cache = reads_served("Pod", "get", ReadSource::Cache) > before;
    println!(
        "got pod {} (phase {:?}, uid {})",
        key,
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        pod.metadata.uid.as_deref().unwrap_or_default()
    );
    println!(
        "served by: {}",
        if from_cache { "cache" } else { "api_server" }
    );

    stop.cancel();
    running.await??;
    if _env.is_some() {
        let _ = std::fs::remove_file(&path);
    }
    println!("cached_client finished");
    Ok(())
}

fn gateway(namespace: &str, name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some(namespace.into()),
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "envoy".into(),
                image: Some("envoyproxy/envoy:v1.31".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}
