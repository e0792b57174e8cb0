//! A manager built from a kubeconfig file path; once started, its cache-backed client gets Pod default/gateway (Go original: manager.New(config, manager.Options{}) + mgr.GetClient().Get(ctx, client.ObjectKey{Namespace: "default", Name: "gateway"}, &pod)).
// smoke-args: --quick
// smoke-expect: got pod default/gateway
// smoke-expect: manager_client finished

use std::path::PathBuf;

use clap::Parser;
use k8s_openapi::api::core::v1::Pod;
use kube_client::Api;
use kube_client::api::PostParams;
use rein::manager::config::{self, ConfigSources};
use rein::manager::{Manager, Options, signals};
use rein::scheme::ObjectKey;
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
struct Args {
    /// A kubeconfig file; without one an embedded API server is started and written to a temp file.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Exit right after the read instead of running until Ctrl-C.
    #[arg(long)]
    quick: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();
    let quick = args.quick || rein_examples::quick_mode();

    let (_env, path) = match &args.kubeconfig {
        Some(path) => (None, path.clone()),
        None => {
            let env = TestEnv::start().await?;
            let path = std::env::temp_dir()
                .join(format!("rein-example-{}.kubeconfig", std::process::id()));
            env.write_kubeconfig(&path)?;
            let gateway: Pod = serde_json::from_value(serde_json::json!({
                "metadata": { "name": "gateway", "namespace": "default", "labels": { "app": "gateway" } },
                "spec": { "containers": [{ "name": "envoy", "image": "envoyproxy/envoy:v1.31" }] }
            }))?;
            Api::<Pod>::namespaced(env.client(), "default")
                .create(&PostParams::default(), &gateway)
                .await?;
            (Some(env), path)
        }
    };

    // Build the manager from the kubeconfig file path.
    let config = config::load(&ConfigSources::empty().kubeconfig(&path)).await?;
    let mgr = Manager::builder(config)
        .options(Options::default())
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
    // Everything runs once the caches have synced (no leader election configured).
    mgr.elected().await;

    // Reads go through the shared cache: an informer for Pods is started on first use.
    let key = ObjectKey::new("default", "gateway");
    match mgr.client().get::<Pod>(&key).await {
        Ok(pod) => {
            let image = pod
                .spec
                .as_ref()
                .and_then(|s| s.containers.first())
                .and_then(|c| c.image.clone())
                .unwrap_or_default();
            println!("got pod {key} (image {image})");
        }
        Err(err) if err.is_not_found() => println!("no pod {key}: create one first"),
        Err(err) => return Err(err.into()),
    }

    if !quick {
        println!("running until Ctrl-C");
        stop.cancelled().await;
    }
    stop.cancel();
    running.await??;
    if args.kubeconfig.is_none() {
        let _ = std::fs::remove_file(&path);
    }
    println!("manager_client finished");
    Ok(())
}
