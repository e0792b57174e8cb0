//! Quickstart: a manager running two ReplicaSet controllers and a Pod watcher, demonstrated
//! against the embedded API server (or a real cluster when a kubeconfig is given). Go originals:
//! controller-runtime's builder example (`replicaset_labeler`) and a ReplicaSet controller
//! (`replicaset_scaler`).
//!
//! ```sh
//! cargo run --example quickstart                      # embedded API server, demo, exit
//! cargo run --example quickstart -- --watch           # keep running until Ctrl-C
//! cargo run --example quickstart -- --kubeconfig ~/.kube/config
//! ```
//!
//! What runs:
//! - `replicaset-scaler` keeps `spec.replicas` Pods named `<rs>-<i>` for every ReplicaSet,
//!   owned by it (creates missing ones, deletes extras), as `replicaset_scaler`;
//! - `replicaset-pod-counter` writes the number of matching Pods into the ReplicaSet's
//!   `pod-count` label, as `replicaset_labeler`;
//! - a Pod watcher (a `Funcs` handler) prints every Pod event as it arrives.
//!
//! The two controllers write the same ReplicaSets, so the pod counter's update sometimes meets a
//! newer copy than its cache had: a Conflict, which it handles by requeueing (shown with
//! `RUST_LOG=quickstart=debug`); the normal run logs no error.
// smoke-args: --quick
// smoke-expect: using the embedded API server
// smoke-expect: replicaset default/frontend has 3 pods, pod-count=3
// smoke-expect: pod default/frontend-1 was re-created
// smoke-expect: replicaset default/frontend has 5 pods, pod-count=5
// smoke-expect: replicaset default/backend has 2 pods, pod-count=2
// smoke-expect: quickstart finished
// The shutdown is clean (issue 28): no read waits on a stopped cache, no Event is lost.
// smoke-forbid: did not reach this client's own write
// smoke-forbid: writing the event failed
// smoke-timeout: 90

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube_client::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube_client::{Api, ResourceExt};
use rein::client::controllerutil::set_controller_reference;
use rein::client::{Client, ListOptions, ignore_already_exists, ignore_not_found};
use rein::controller::handler::Funcs;
use rein::controller::{Action, Context, ControllerManagedBy, Reconciler, Request};
use rein::manager::config::{self, ConfigSources};
use rein::manager::{Manager, signals};
use rein::scheme::ObjectKey;
use rein::scheme::labels::Selector;
use rein_testenv::TestEnv;
use tokio_util::sync::CancellationToken;

#[derive(Parser, Debug)]
#[command(about = "rein quickstart: a manager with real controllers")]
struct Args {
    /// Use this kubeconfig (a real cluster) instead of the embedded API server.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// After the demo, keep the manager running until Ctrl-C.
    #[arg(long)]
    watch: bool,
    /// Quick mode for the test suite (the demo is already quick; this only disables --watch).
    #[arg(long)]
    quick: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    rein_examples::init_logging();
    let args = Args::parse();
    let quick = args.quick || rein_examples::quick_mode();

    // A real cluster when a kubeconfig is given (flag or KUBECONFIG), else the embedded server.
    let use_cluster = args.kubeconfig.is_some() || std::env::var_os("KUBECONFIG").is_some();
    let (_env, kube_config) = if use_cluster {
        let mut sources = ConfigSources::from_env();
        if let Some(path) = &args.kubeconfig {
            sources = sources.kubeconfig(path);
        }
        let cfg = config::load(&sources).await?;
        println!("using the cluster at {}", cfg.cluster_url);
        (None, cfg)
    } else {
        let started = Instant::now();
        let env = TestEnv::start().await?;
        println!(
            "using the embedded API server at {} (started in {} ms)",
            env.base_url(),
            started.elapsed().as_millis()
        );
        let cfg = env.config();
        (Some(env), cfg)
    };

    let mgr = Manager::builder(kube_config).build().await?;

    // As `replicaset_scaler`: keep the Pods of every ReplicaSet; also print every Pod event (the Pod watcher).
    ControllerManagedBy::new(&mgr)
        .named("replicaset-scaler")
        .for_::<ReplicaSet>()
        .owns::<Pod>()
        .watches::<Pod>(
            Funcs::new()
                .on_create(|e, _| {
                    if !e.is_in_initial_list {
                        println!("  event: pod {} added", key_of(&*e.object));
                    }
                })
                .on_delete(|e, _| println!("  event: pod {} deleted", key_of(&*e.object))),
        )
        .complete(Scaler {
            client: mgr.client(),
        })?;
    // As `replicaset_labeler`: label every ReplicaSet with the number of its Pods.
    ControllerManagedBy::new(&mgr)
        .named("replicaset-pod-counter")
        .for_::<ReplicaSet>()
        .owns::<Pod>()
        .complete(PodCounter {
            client: mgr.client(),
        })?;

    let stop = if args.watch && !quick {
        signals::shutdown_signal()
    } else {
        CancellationToken::new()
    };
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    mgr.elected().await;
    println!("manager started: controllers replicaset-scaler, replicaset-pod-counter");

    let demo_result = demo(mgr.kube_client()).await;
    if demo_result.is_ok() && args.watch && !quick {
        println!("watching; press Ctrl-C to stop");
    } else {
        stop.cancel();
    }
    let run_result = running.await.context("the manager task panicked")?;
    demo_result?;
    run_result?;
    println!("quickstart finished");
    Ok(())
}

/// Keeps `spec.replicas` Pods named `<rs>-<i>`, owned by the ReplicaSet.
struct Scaler {
    client: Client,
}

#[async_trait::async_trait]
impl Reconciler for Scaler {
    type Error = anyhow::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> anyhow::Result<Action> {
        let Some(rs) = ignore_not_found(self.client.get::<ReplicaSet>(&req.key).await)? else {
            return Ok(Action::done());
        };
        if rs.metadata.deletion_timestamp.is_some() {
            return Ok(Action::done());
        }
        let spec = rs.spec.clone().unwrap_or_default();
        let replicas = usize::try_from(spec.replicas.unwrap_or(1)).unwrap_or(0);
        let owned = owned_pods(&self.client, &rs).await?;
        let template = spec.template.unwrap_or_default();
        let ns = req.namespace().unwrap_or("default").to_owned();

        for i in 0..replicas {
            let name = format!("{}-{i}", req.name());
            if owned.iter().any(|p| p.name_any() == name) {
                continue;
            }
            let mut pod = Pod {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(ns.clone()),
                    labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
                    ..ObjectMeta::default()
                },
                spec: template.spec.clone(),
                ..Pod::default()
            };
            set_controller_reference(&*rs, &mut pod, self.client.scheme())?;
            if ignore_already_exists(self.client.create(&pod, &PostParams::default()).await)?
                .is_some()
            {
                println!("  reconcile [replicaset-scaler] {req}: created pod {name}");
            }
        }
        // Scale down: delete the Pods beyond `replicas`, highest index first.
        let mut extra: Vec<&Pod> = owned
            .iter()
            .map(|p| &**p)
            .filter(|p| pod_index(p, req.name()).is_none_or(|i| i >= replicas))
            .collect();
        extra.sort_by_key(|p| std::cmp::Reverse(p.name_any()));
        for pod in extra {
            let key = ObjectKey::from_object(pod);
            if ignore_not_found(
                self.client
                    .delete::<Pod>(&key, &DeleteParams::default())
                    .await,
            )?
            .is_some()
            {
                println!(
                    "  reconcile [replicaset-scaler] {req}: deleted extra pod {}",
                    pod.name_any()
                );
            }
        }
        Ok(Action::done())
    }
}

/// Writes the number of the ReplicaSet's Pods into its `pod-count` label.
struct PodCounter {
    client: Client,
}

#[async_trait::async_trait]
impl Reconciler for PodCounter {
    type Error = anyhow::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> anyhow::Result<Action> {
        // The cache lends its object; `Arc::unwrap_or_clone` gives the copy we modify.
        let Some(mut rs) = ignore_not_found(self.client.get::<ReplicaSet>(&req.key).await)?
            .map(Arc::unwrap_or_clone)
        else {
            return Ok(Action::done());
        };
        let count = owned_pods(&self.client, &rs).await?.len().to_string();
        let labels = rs.metadata.labels.get_or_insert_with(BTreeMap::new);
        if labels.get("pod-count") == Some(&count) {
            return Ok(Action::done());
        }
        labels.insert("pod-count".into(), count.clone());
        // A conflict means the cached copy was stale (another controller wrote the ReplicaSet
        // since): part of life with optimistic concurrency, not a failure. Requeue through the
        // rate limiter; the next reconcile reads the newer copy (controller-runtime's
        // `if apierrors.IsConflict(err) { return ctrl.Result{Requeue: true}, nil }`).
        match self.client.update(&rs, &PostParams::default()).await {
            Ok(_) => {}
            Err(err) if err.is_conflict() => {
                tracing::debug!(%req, "stale ReplicaSet, requeued: {err}");
                return Ok(Action::requeue());
            }
            Err(err) => return Err(err.into()),
        }
        println!("  reconcile [replicaset-pod-counter] {req}: pod-count={count}");
        Ok(Action::done())
    }
}

/// The live Pods matching the ReplicaSet's selector and controlled by it, read from the cache.
async fn owned_pods(client: &Client, rs: &ReplicaSet) -> anyhow::Result<Vec<Arc<Pod>>> {
    let spec = rs.spec.clone().unwrap_or_default();
    let selector = Selector::from_label_selector(&spec.selector)?;
    let pods = client
        .list::<Pod>(
            &ListOptions::default()
                .namespace(rs.namespace().unwrap_or_default())
                .labels(selector),
        )
        .await?;
    let uid = rs.metadata.uid.clone();
    Ok(pods
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            p.owner_references()
                .iter()
                .any(|o| o.controller == Some(true) && Some(&o.uid) == uid.as_ref())
        })
        .collect())
}

/// `frontend-3` → `Some(3)` for the ReplicaSet `frontend`.
fn pod_index(pod: &Pod, rs_name: &str) -> Option<usize> {
    pod.name_any()
        .strip_prefix(rs_name)?
        .strip_prefix('-')?
        .parse()
        .ok()
}

fn key_of<K: ResourceExt>(obj: &K) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
}

fn replica_set(name: &str, replicas: i32) -> anyhow::Result<ReplicaSet> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "namespace": "default" },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": "main", "image": "nginx:1.27" }] }
            }
        }
    }))?)
}

/// Creates two ReplicaSets, deletes a Pod, scales one up, and prints what the controllers did.
async fn demo(kube: kube_client::Client) -> anyhow::Result<()> {
    let sets: Api<ReplicaSet> = Api::namespaced(kube.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(kube, "default");

    println!("\n== step 1: create ReplicaSets frontend (3) and backend (2)");
    for (name, replicas) in [("frontend", 3), ("backend", 2)] {
        let rs = replica_set(name, replicas)?;
        match sets.create(&PostParams::default(), &rs).await {
            Ok(_) => {}
            // Left over from an earlier run against a real cluster: reuse it.
            Err(kube_client::Error::Api(s)) if s.code == 409 => {}
            Err(err) => return Err(err.into()),
        }
    }
    converge(&sets, &pods, "frontend", 3).await?;
    converge(&sets, &pods, "backend", 2).await?;

    println!("\n== step 2: delete pod frontend-1");
    let old_uid = pods.get("frontend-1").await?.metadata.uid;
    pods.delete("frontend-1", &DeleteParams::default()).await?;
    wait_until(|| async {
        matches!(pods.get_opt("frontend-1").await,
            Ok(Some(p)) if p.metadata.uid != old_uid && p.metadata.deletion_timestamp.is_none())
    })
    .await
    .context("waiting for frontend-1 to be re-created")?;
    println!("pod default/frontend-1 was re-created");
    converge(&sets, &pods, "frontend", 3).await?;

    println!("\n== step 3: scale frontend to 5");
    sets.patch(
        "frontend",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "spec": { "replicas": 5 } })),
    )
    .await?;
    converge(&sets, &pods, "frontend", 5).await?;

    println!("\n== summary");
    println!(
        "{:<14} {:>8} {:>10}  pods",
        "replicaset", "replicas", "pod-count"
    );
    for rs in sets.list(&Default::default()).await? {
        let name = rs.name_any();
        let mut names: Vec<String> = pods
            .list(&kube_client::api::ListParams::default().labels(&format!("app={name}")))
            .await?
            .items
            .iter()
            .map(ResourceExt::name_any)
            .collect();
        names.sort();
        println!(
            "{:<14} {:>8} {:>10}  {}",
            name,
            rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
            rs.labels().get("pod-count").map_or("-", String::as_str),
            names.join(", ")
        );
    }
    Ok(())
}

/// Waits until the ReplicaSet has `want` Pods and its `pod-count` label says so.
async fn converge(
    sets: &Api<ReplicaSet>,
    pods: &Api<Pod>,
    name: &str,
    want: usize,
) -> anyhow::Result<()> {
    let label = want.to_string();
    let selector = format!("app={name}");
    wait_until(|| async {
        let count = pods
            .list(&kube_client::api::ListParams::default().labels(&selector))
            .await
            .map_or(0, |l| {
                l.items
                    .iter()
                    .filter(|p| p.metadata.deletion_timestamp.is_none())
                    .count()
            });
        let labelled = sets
            .get(name)
            .await
            .is_ok_and(|rs| rs.labels().get("pod-count") == Some(&label));
        count == want && labelled
    })
    .await
    .with_context(|| format!("waiting for replicaset {name} to reach {want} pods"))?;
    println!("replicaset default/{name} has {want} pods, pod-count={want}");
    Ok(())
}

/// Polls `check` until it holds, for at most 30 seconds.
async fn wait_until<F, Fut>(check: F) -> anyhow::Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    tokio::time::timeout(Duration::from_secs(30), async {
        while !check().await {
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    })
    .await
    .context("timed out after 30 s")
}
