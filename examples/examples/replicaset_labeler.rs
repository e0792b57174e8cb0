//! ControllerManagedBy(mgr).for_::<ReplicaSet>().owns::<Pod>() with a reconciler that counts the ReplicaSet's Pods and writes the count to its `pod-count` label; config found like GetConfigOrDie, stopped by a signal handler (Go original: builder.ControllerManagedBy(mgr).For(&appsv1.ReplicaSet{}).Owns(&corev1.Pod{}).Complete(&ReplicaSetReconciler{}) with config.GetConfigOrDie and signals.SetupSignalHandler).
// smoke-args: --quick
// smoke-expect: labeled replicaset default/frontend pod-count=2
// smoke-expect: labeled replicaset default/frontend pod-count=3
// smoke-expect: replicaset_labeler finished

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use clap::Parser;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use rein::client::controllerutil::set_controller_reference;
use rein::client::{Client, ListOptions, PostParams};
use rein::controller::{Action, Context, ControllerManagedBy, Reconciler, Request};
use rein::manager::{Manager, Options, config, signals};
use rein::scheme::ObjectKey;
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
struct Args {
    /// Run against an embedded API server with a demo ReplicaSet, then exit.
    #[arg(long)]
    quick: bool,
    /// A kubeconfig (also read by config discovery as `--kubeconfig`).
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
}

/// Counts the Pods matching a ReplicaSet's template labels and records it as a label.
struct ReplicaSetReconciler {
    client: Client,
}

#[async_trait]
impl Reconciler for ReplicaSetReconciler {
    type Error = anyhow::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> anyhow::Result<Action> {
        // Read the ReplicaSet (from the cache); it may be gone already.
        // The cache lends its object (`Arc<ReplicaSet>`, no copy); we take an owned copy
        // because we modify it below.
        let mut rs: ReplicaSet = match self.client.get(&req.key).await {
            Ok(rs) => Arc::unwrap_or_clone(rs),
            Err(err) if err.is_not_found() => return Ok(Action::done()),
            Err(err) => return Err(err.into()),
        };
        // List the Pods in its namespace matching its template labels.
        let selector = rs
            .spec
            .as_ref()
            .and_then(|s| s.template.as_ref())
            .and_then(|t| t.metadata.as_ref())
            .and_then(|m| m.labels.clone())
            .unwrap_or_default();
        let pods = self
            .client
            .list::<Pod>(
                &ListOptions::default()
                    .namespace(req.namespace().unwrap_or_default())
                    .matching_labels(selector),
            )
            .await?;
        let count = pods.items.len().to_string();

        // Set the label and update, unless it is already right.
        let labels = rs.metadata.labels.get_or_insert_with(Default::default);
        if labels.get("pod-count") == Some(&count) {
            return Ok(Action::done());
        }
        labels.insert("pod-count".into(), count.clone());
        // A Conflict means our cached copy was stale: requeue and read the newer one.
        match self.client.update(&rs, &PostParams::default()).await {
            Ok(_) => {}
            Err(err) if err.is_conflict() => {
                tracing::debug!(%req, "stale ReplicaSet, requeued: {err}");
                return Ok(Action::requeue());
            }
            Err(err) => return Err(err.into()),
        }
        println!("labeled replicaset {req} pod-count={count}");
        Ok(Action::done())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();
    let quick = args.quick || rein_examples::quick_mode();

    // GetConfigOrDie: --kubeconfig, KUBECONFIG, in-cluster, ~/.kube/config — or the demo server.
    let env = if quick {
        Some(TestEnv::start().await?)
    } else {
        None
    };
    let kube_config = match &env {
        Some(env) => env.config(),
        None => config::get_config_or_exit().await,
    };
    let mgr = Manager::builder(kube_config)
        .options(Options::default())
        .build()
        .await?;
    ControllerManagedBy::new(&mgr)
        .for_::<ReplicaSet>()
        .owns::<Pod>()
        .complete(ReplicaSetReconciler {
            client: mgr.client(),
        })?;

    // The signal handler: first Ctrl-C stops gracefully, a second exits.
    let stop = if quick {
        CancellationToken::new()
    } else {
        signals::shutdown_signal()
    };
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });

    if quick {
        demo(&mgr).await?;
        stop.cancel();
    }
    running.await??;
    println!("replicaset_labeler finished");
    Ok(())
}

/// Creates a ReplicaSet and its Pods one by one, waiting for the label to follow.
async fn demo(mgr: &Manager) -> anyhow::Result<()> {
    let writer = mgr.api_reader();
    let rs: ReplicaSet = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "frontend", "namespace": "default" },
        "spec": {
            "replicas": 3,
            "selector": { "matchLabels": { "app": "frontend" } },
            "template": {
                "metadata": { "labels": { "app": "frontend" } },
                "spec": { "containers": [{ "name": "web", "image": "nginx" }] }
            }
        }
    }))?;
    let rs = writer.create(&rs, &PostParams::default()).await?;
    for (name, expected) in [
        ("frontend-a", None),
        ("frontend-b", Some("2")),
        ("frontend-c", Some("3")),
    ] {
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "namespace": "default", "labels": { "app": "frontend" } },
            "spec": { "containers": [{ "name": "web", "image": "nginx" }] }
        }))?;
        set_controller_reference(&rs, &mut pod, &mgr.scheme())?;
        writer.create(&pod, &PostParams::default()).await?;
        if let Some(expected) = expected {
            wait_for_label(&writer, expected).await?;
        }
    }
    Ok(())
}

async fn wait_for_label(client: &Client, expected: &str) -> anyhow::Result<()> {
    let key = ObjectKey::new("default", "frontend");
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let rs: Arc<ReplicaSet> = client.get(&key).await?;
            let label = rs.metadata.labels.as_ref().and_then(|l| l.get("pod-count"));
            if label.map(String::as_str) == Some(expected) {
                return anyhow::Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .map_err(|_| anyhow::anyhow!("timed out waiting for pod-count={expected}"))?
}
