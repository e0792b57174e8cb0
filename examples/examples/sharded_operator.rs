//! A sharded operator: replicas share the ConfigMaps of a namespace through a ring (per-replica Leases, an elected coordinator, assignment labels, label-filtered caches); three replicas in one process, one killed mid-run, its ConfigMaps taken over once its Lease expired (design: timebertt/kubernetes-controller-sharding). With `--kubeconfig` (or in a cluster) it runs one replica, ready for a Deployment.
// smoke-args: --quick
// smoke-expect: 3 replicas own all 12 ConfigMaps
// smoke-expect: killed r2
// smoke-expect: 2 replicas own all 12 ConfigMaps
// smoke-expect: sharded_operator finished

use std::collections::BTreeMap;
use std::time::Duration;

use clap::Parser;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::Api;
use kube_client::api::{ListParams, PostParams};
use rein::client::{Patch, PatchParams};
use rein::controller::{Action, Context, ControllerManagedBy, Request};
use rein::manager::leaderelection::LeaderElectionConfig;
use rein::manager::sharding::ShardingOptions;
use rein::manager::{Manager, Options};
use tokio_util::sync::CancellationToken;

/// The ConfigMaps the quick run creates.
const CONFIGMAPS: usize = 12;
const RING: &str = "configmaps";

#[derive(Parser, Debug)]
struct Args {
    /// Path to a kubeconfig; without one (and without KUBECONFIG) an embedded API server is used.
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// This replica's shard id (default: $POD_NAME, else $HOSTNAME).
    #[arg(long)]
    id: Option<String>,
    /// The namespace of the shard Leases and of the ConfigMaps (default: the Pod's).
    #[arg(long)]
    namespace: Option<String>,
    /// Three in-process replicas on an embedded API server, one killed; exits by itself.
    #[arg(long)]
    quick: bool,
}

/// One replica's manager: a ring over ConfigMaps, and a controller that writes the id of the
/// replica reconciling each ConfigMap into its data.
async fn replica(
    config: kube_client::Config,
    id: Option<String>,
    namespace: Option<String>,
    lease: LeaderElectionConfig,
) -> anyhow::Result<Manager> {
    let mut sharding = ShardingOptions::new(RING).lease(lease).kind::<ConfigMap>();
    sharding.shard_id = id;
    sharding.namespace = namespace.clone();
    let mut options = Options::default().sharding(sharding);
    if let Some(ns) = namespace {
        options = options.namespace(ns);
    }
    let mgr = Manager::builder(config).options(options).build().await?;
    let me = mgr
        .sharding()
        .map(|s| s.shard_id().to_owned())
        .unwrap_or_default();
    let client = mgr.client();
    let reconciler = rein::controller::reconciler_fn(move |_ctx: Context, req: Request| {
        let (client, me) = (client.clone(), me.clone());
        async move {
            // Reads come from this replica's cache, which holds only its own ConfigMaps.
            let cm: std::sync::Arc<ConfigMap> = client.get(&req.key).await?;
            let owner = cm.data.as_ref().and_then(|d| d.get("reconciled-by"));
            if owner != Some(&me) {
                let patch = serde_json::json!({ "data": { "reconciled-by": me } });
                client
                    .patch::<ConfigMap, _>(&req.key, &Patch::Merge(patch), &PatchParams::default())
                    .await?;
                tracing::info!("{me} took over {req}");
            }
            Ok::<_, rein::client::Error>(Action::done())
        }
    });
    ControllerManagedBy::new(&mgr)
        .for_::<ConfigMap>()
        .named(format!(
            "configmap-owner-{}",
            mgr.sharding().map(|s| s.shard_id()).unwrap_or("")
        ))
        // Every replica runs it (no leader election), each on its own shard's ConfigMaps.
        .sharded()
        .complete(reconciler)?;
    Ok(mgr)
}

/// A replica on its own runtime, so that killing it drops every task it had (as killing its
/// process would).
struct Replica {
    runtime: Option<tokio::runtime::Runtime>,
    stop: CancellationToken,
    done: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Replica {
    async fn start(config: kube_client::Config, id: &str) -> anyhow::Result<Replica> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let stop = CancellationToken::new();
        let lease = LeaderElectionConfig {
            lease_duration: Duration::from_secs(2),
            renew_deadline: Duration::from_secs(1),
            retry_period: Duration::from_millis(200),
            ..LeaderElectionConfig::default()
        };
        let (id, token) = (id.to_owned(), stop.clone());
        let done = runtime.spawn(async move {
            let mgr = replica(config, Some(id), Some("default".into()), lease).await?;
            mgr.start(token).await?;
            Ok(())
        });
        Ok(Replica {
            runtime: Some(runtime),
            stop,
            done,
        })
    }

    fn kill(mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }

    async fn stop(mut self) -> anyhow::Result<()> {
        self.stop.cancel();
        (&mut self.done).await??;
        self.kill();
        Ok(())
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Who reconciled each ConfigMap last, by replica.
async fn owners(api: &Api<ConfigMap>) -> anyhow::Result<BTreeMap<String, usize>> {
    let mut owners = BTreeMap::new();
    for cm in api.list(&ListParams::default()).await?.items {
        let name = cm.metadata.name.unwrap_or_default();
        if let Some(by) = cm.data.and_then(|d| d.get("reconciled-by").cloned())
            && name.starts_with("cm-")
        {
            *owners.entry(by).or_default() += 1;
        }
    }
    Ok(owners)
}

/// Waits until exactly `replicas` own all ConfigMaps; prints the split.
async fn wait_owned(api: &Api<ConfigMap>, replicas: &[&str]) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let owners = owners(api).await?;
        let total: usize = owners.values().sum();
        if total == CONFIGMAPS && owners.keys().all(|o| replicas.contains(&o.as_str())) {
            println!(
                "{} replicas own all {CONFIGMAPS} ConfigMaps: {owners:?}",
                replicas.len()
            );
            return Ok(());
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "ConfigMaps not owned by {replicas:?}: {owners:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();
    let quick = args.quick || rein_examples::quick_mode();
    let (env, config) = rein_examples::cluster_config(quick).await?;

    if env.is_none() {
        // One replica of a Deployment: shard id from the Pod name, until SIGTERM.
        let mgr = replica(
            config,
            args.id,
            args.namespace,
            LeaderElectionConfig::default(),
        )
        .await?;
        mgr.start(rein::manager::signals::shutdown_signal()).await?;
        println!("sharded_operator finished");
        return Ok(());
    }

    let api: Api<ConfigMap> =
        Api::namespaced(kube_client::Client::try_from(config.clone())?, "default");
    for i in 0..CONFIGMAPS {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("cm-{i}")),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        api.create(&PostParams::default(), &cm).await?;
    }
    let r0 = Replica::start(config.clone(), "r0").await?;
    let r1 = Replica::start(config.clone(), "r1").await?;
    let r2 = Replica::start(config.clone(), "r2").await?;
    wait_owned(&api, &["r0", "r1", "r2"]).await?;

    // Killed: no graceful stop, its Lease is left to expire (2 s here).
    r2.kill();
    println!("killed r2");
    wait_owned(&api, &["r0", "r1"]).await?;

    r0.stop().await?;
    r1.stop().await?;
    println!("sharded_operator finished");
    Ok(())
}
