//! The server process: rein-testenv with preloaded Pods, and an update writer driven over stdin.
//!
//! Protocol (one line each): prints `READY <kubeconfig>` once the Pods are loaded; reads
//! `update <n>` and answers `UPDATED <n> <seconds>` after issuing `n` label updates; exits when
//! stdin closes.

use std::time::Instant;

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube_client::api::{Api, Patch, PatchParams, PostParams};
use rein_testenv::TestEnv;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::cli::ServeArgs;
use crate::pods::{OWNERS, namespace_of, pod, pod_name, replica_set, status_patch};

/// Requests in flight while preloading and updating.
const IN_FLIGHT: usize = 64;

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let env = TestEnv::start().await.context("starting rein-testenv")?;
    let started = Instant::now();
    preload(
        env.client(),
        args.pods,
        args.namespaces,
        args.managed_fields,
    )
    .await?;
    let load_secs = started.elapsed().as_secs_f64();
    env.clear_requests();
    if args.pods > 0 {
        let raw = env
            .client()
            .request_text(
                http::Request::get(format!(
                    "/api/v1/namespaces/{}/pods/{}",
                    namespace_of(0, args.namespaces),
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
        update(&env.client(), args.pods, args.namespaces, generation, n).await?;
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

/// Creates the namespaces (more than one: `bench-0` …), the owning ReplicaSets in each, then
/// `pods` Pods spread over the namespaces, and gives each Pod a running status.
pub(crate) async fn preload(
    client: kube_client::Client,
    pods: usize,
    namespaces: usize,
    managed_fields: bool,
) -> anyhow::Result<()> {
    let manager = |name: &str| managed_fields.then(|| name.to_owned());
    let mut owner_uids = Vec::with_capacity(namespaces.max(1));
    for n in 0..namespaces.max(1) {
        let namespace = namespace_of(n, namespaces);
        if namespaces > 1 {
            let ns: Namespace =
                serde_json::from_value(serde_json::json!({"metadata": {"name": namespace}}))?;
            Api::<Namespace>::all(client.clone())
                .create(&PostParams::default(), &ns)
                .await
                .context("creating a namespace")?;
        }
        let replica_sets: Api<ReplicaSet> = Api::namespaced(client.clone(), &namespace);
        let mut uids = Vec::with_capacity(OWNERS);
        for j in 0..OWNERS {
            let created = replica_sets
                .create(&PostParams::default(), &replica_set(j, &namespace)?)
                .await
                .context("creating a ReplicaSet")?;
            uids.push(created.metadata.uid.context("a created ReplicaSet's uid")?);
        }
        owner_uids.push(uids);
    }
    let owner_uids = &owner_uids;
    let mut results = futures::stream::iter(0..pods)
        .map(|i| {
            let namespace = namespace_of(i, namespaces);
            let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
            async move {
                let create = PostParams {
                    field_manager: manager(CREATOR),
                    ..PostParams::default()
                };
                let owners = &owner_uids[i % owner_uids.len()];
                api.create(&create, &pod(i, &namespace, owners))
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
async fn update(
    client: &kube_client::Client,
    pods: usize,
    namespaces: usize,
    generation: usize,
    n: usize,
) -> anyhow::Result<()> {
    anyhow::ensure!(pods > 0, "no Pods to update");
    let mut results = futures::stream::iter(generation..generation + n)
        .map(|g| {
            let api: Api<Pod> = Api::namespaced(client.clone(), &namespace_of(g % pods, namespaces));
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
