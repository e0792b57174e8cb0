//! `manager.cache().informer_for::<Pod>()` hands out the shared informer whose indexer lists keys, in a manager restricted to one namespace (Go original: mgr.GetCache().GetInformer(ctx, &v1.Pod{}) + informer.(cache.SharedIndexInformer).GetIndexer().ListKeys() with manager.Options{Cache: cache.Options{DefaultNamespaces: ...}}).
// smoke-args: --quick
// smoke-expect: cached pod keys: default/api, default/web
// smoke-expect: same informer: true
// smoke-expect: namespaced_cache finished

use std::sync::Arc;

use clap::Parser;
use k8s_openapi::api::core::v1::Pod;
use kube_client::Api;
use kube_client::api::PostParams;
use rein::manager::{Manager, Options, config, signals};
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
struct Args {
    /// A kubeconfig file (default: KUBECONFIG / in-cluster / ~/.kube/config when set, else an embedded API server).
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// The only namespace the manager caches.
    #[arg(long, default_value = "default")]
    namespace: String,
    /// Exit after listing instead of running until Ctrl-C.
    #[arg(long)]
    quick: bool,
}

fn pod(namespace: &str, name: &str) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "namespace": namespace },
        "spec": { "containers": [{ "name": "c", "image": "nginx" }] }
    }))?)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();
    let quick = args.quick || rein_examples::quick_mode();

    let (_env, kube_config) = match &args.kubeconfig {
        Some(path) => (
            None,
            config::load(&config::ConfigSources::from_env().kubeconfig(path)).await?,
        ),
        None => {
            let env = TestEnv::start().await?;
            // Pods in two namespaces; the manager will only see the first.
            for (ns, name) in [
                ("default", "web"),
                ("default", "api"),
                ("kube-system", "dns"),
            ] {
                Api::<Pod>::namespaced(env.client(), ns)
                    .create(&PostParams::default(), &pod(ns, name)?)
                    .await?;
            }
            let config = env.config();
            (Some(env), config)
        }
    };

    let mgr = Manager::builder(kube_config)
        .options(Options::default().namespace(&args.namespace))
        .build()
        .await?;
    let stop = if quick {
        CancellationToken::new()
    } else {
        signals::shutdown_signal()
    };
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;

    // The shared informer: asking twice gives the same one.
    let informer = mgr.cache().informer_for::<Pod>().await?;
    let again = mgr.cache().informer_for::<Pod>().await?;
    let mut keys = informer.indexer().list_keys();
    keys.sort();
    println!("cached pod keys: {}", keys.join(", "));
    println!("same informer: {}", Arc::ptr_eq(&informer, &again));

    if !quick {
        println!("running until Ctrl-C");
        stop.cancelled().await;
    }
    stop.cancel();
    running.await??;
    println!("namespaced_cache finished");
    Ok(())
}
