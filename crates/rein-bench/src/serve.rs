//! The server process: rein-testenv with preloaded Pods, and an update writer driven over stdin.
//!
//! Protocol (one line each): prints `READY <kubeconfig>` once the Pods are loaded; reads
//! `update <n>` and answers `UPDATED <n> <seconds>` after issuing `n` label updates; exits when
//! stdin closes.

use std::time::Instant;

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube_client::api::{Api, Patch, PatchParams, PostParams};
use rein_testenv::TestEnv;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::cli::ServeArgs;
use crate::pods::{NAMESPACE, OWNERS, pod, pod_name, replica_set, status_patch};

/// Requests in flight while preloading and updating.
const IN_FLIGHT: usize = 64;

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let env = TestEnv::start().await.context("starting rein-testenv")?;
    let api: Api<Pod> = Api::namespaced(env.client(), NAMESPACE);
    let started = Instant::now();
    preload(&api, env.client(), args.pods, args.managed_fields).await?;
    let load_secs = started.elapsed().as_secs_f64();
    env.clear_requests();
    if args.pods > 0 {
        let raw = env
            .client()
            .request_text(
                http::Request::get(format!(
                    "/api/v1/namespaces/{NAMESPACE}/pods/{}",
                    pod_name(0)
                ))
                .body(Vec::new())?,
            )
            .await
            .context("reading back a preloaded Pod")?;
        println!(
            "BENCH|side-by-side-info|preloaded Pod size (JSON, with status{}), {} Pods|{}|bytes|loaded in {load_secs:.1} s",
            if args.managed_fields {
                " and managedFields"
            } else {
                ", no managedFields"
            },
            args.pods,
            raw.len()
        );
    }
    env.write_kubeconfig(&args.kubeconfig)
        .context("writing the kubeconfig")?;
    println!("READY {}", args.kubeconfig.display());

    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut generation = 0usize;
    while let Some(line) = lines.next_line().await? {
        let Some(n) = line.strip_prefix("update ") else {
            anyhow::bail!("unknown command {line:?}");
        };
        let n: usize = n.trim().parse().context("parsing the update count")?;
        let started = Instant::now();
        update(&api, args.pods, generation, n).await?;
        generation += n;
        println!("UPDATED {n} {:.3}", started.elapsed().as_secs_f64());
    }
    env.shutdown().await;
    Ok(())
}

/// With `--managed-fields`, the field managers the preloaded Pods are written by, as in a
/// cluster: the ReplicaSet controller creates a Pod, the kubelet writes its status; each
/// records a managedFields entry. (kube-client sends no User-Agent, so without a field
/// manager rein-testenv records none.)
const CREATOR: &str = "kube-controller-manager";
const STATUS_WRITER: &str = "kubelet";
/// The field manager of the watch case's label updates.
const UPDATER: &str = "bench-writer";

/// Creates the owning ReplicaSets, then `pods` Pods, and gives each Pod a running status.
pub(crate) async fn preload(
    api: &Api<Pod>,
    client: kube_client::Client,
    pods: usize,
    managed_fields: bool,
) -> anyhow::Result<()> {
    let manager = |name: &str| managed_fields.then(|| name.to_owned());
    let replica_sets: Api<ReplicaSet> = Api::namespaced(client, NAMESPACE);
    let mut owner_uids = Vec::with_capacity(OWNERS);
    for j in 0..OWNERS {
        let created = replica_sets
            .create(&PostParams::default(), &replica_set(j)?)
            .await
            .context("creating a ReplicaSet")?;
        owner_uids.push(created.metadata.uid.context("a created ReplicaSet's uid")?);
    }
    let owner_uids = &owner_uids;
    let mut results = futures::stream::iter(0..pods)
        .map(|i| {
            let api = api.clone();
            async move {
                let create = PostParams {
                    field_manager: manager(CREATOR),
                    ..PostParams::default()
                };
                api.create(&create, &pod(i, owner_uids))
                    .await
                    .context("creating a Pod")?;
                api.patch_status(
                    &pod_name(i),
                    &PatchParams {
                        field_manager: manager(STATUS_WRITER),
                        ..PatchParams::default()
                    },
                    &Patch::Merge(status_patch(i)),
                )
                .await
                .context("writing a Pod's status")?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(IN_FLIGHT);
    while let Some(result) = results.next().await {
        result?;
    }
    Ok(())
}

/// Issues `n` label updates, Pod after Pod, as fast as the server takes them.
async fn update(api: &Api<Pod>, pods: usize, generation: usize, n: usize) -> anyhow::Result<()> {
    anyhow::ensure!(pods > 0, "no Pods to update");
    let mut results = futures::stream::iter(generation..generation + n)
        .map(|g| {
            let api = api.clone();
            async move {
                let patch = serde_json::json!({"metadata": {"labels": {"bench-generation": g.to_string()}}});
                let params = PatchParams {
                    field_manager: Some(UPDATER.to_owned()),
                    ..PatchParams::default()
                };
                api.patch(&pod_name(g % pods), &params, &Patch::Merge(patch))
                    .await
                    .context("updating a Pod")?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(IN_FLIGHT);
    while let Some(result) = results.next().await {
        result?;
    }
    Ok(())
}
