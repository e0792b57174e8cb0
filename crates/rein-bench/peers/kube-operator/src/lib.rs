//! kube-operator-peer: the operator `cargo rein new` scaffolds, written on kube-rs instead of
//! rein, as the yardstick of `cargo xtask bench build-weight` (cold build time, binary size).
//!
//! - [`api`]: the `Backup` custom resource (kube-derive);
//! - [`controller`]: the kube-runtime `Controller`, owning a ConfigMap and a CronJob per
//!   Backup, with a finalizer, a `Ready` condition and Events;
//! - [`leader`]: leader election on a Lease;
//! - [`metrics`], [`serve`]: Prometheus metrics and the probe and metrics servers;
//! - [`manifests`]: the CRD, RBAC, Deployment and Service;
//! - [`run`]: all of it together, with a graceful shutdown.

pub mod api;
pub mod controller;
pub mod leader;
pub mod manifests;
pub mod metrics;
pub mod serve;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Client, Config};
use tokio::sync::watch;

/// How to run the operator: where its servers listen and whether it campaigns for leadership.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// A kubeconfig to read (default: `KUBECONFIG`, `~/.kube/config`, or in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// The health probe server's address (`/healthz`, `/readyz`).
    pub health_probe_bind_address: SocketAddr,
    /// The metrics server's address (`/metrics`).
    pub metrics_bind_address: SocketAddr,
    /// Leader election on the Lease [`LEADER_ELECTION_ID`], in this namespace (`None`: the
    /// client's default namespace); off when `leader_elect` is false.
    pub leader_election_namespace: Option<String>,
    /// Whether to elect a leader, so that of several replicas one reconciles.
    pub leader_elect: bool,
    /// How long a graceful shutdown may take before the operator gives up on its reconciles.
    pub graceful_shutdown_timeout: Duration,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            kubeconfig: None,
            health_probe_bind_address: SocketAddr::from(([127, 0, 0, 1], 8081)),
            metrics_bind_address: SocketAddr::from(([127, 0, 0, 1], 8080)),
            leader_election_namespace: None,
            leader_elect: false,
            graceful_shutdown_timeout: Duration::from_secs(30),
        }
    }
}

/// The Lease the replicas of this operator elect their leader on.
pub const LEADER_ELECTION_ID: &str = "kube-operator-peer-leader";

/// The client for `run.kubeconfig`, or the one inferred from the environment.
pub async fn client(run: &RunOptions) -> anyhow::Result<Client> {
    let config = match &run.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("reading {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => Config::infer().await?,
    };
    Ok(Client::try_from(config)?)
}

/// Runs the operator until `shutdown` turns true: the probe and metrics servers, leader
/// election when asked, then the controller; on shutdown the controller finishes its
/// reconciles (within the timeout) and the Lease is released. Losing the Lease ends the
/// process, as controller-runtime's managers do.
pub async fn run(
    client: Client,
    run: &RunOptions,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let metrics = Arc::new(metrics::Metrics::default());
    let ready = Arc::new(AtomicBool::new(false));
    let probes = serve::spawn(
        run.health_probe_bind_address,
        serve::Routes::Probes {
            ready: ready.clone(),
        },
        shutdown.clone(),
    )
    .await
    .context("binding the health probe address")?;
    let metrics_address = serve::spawn(
        run.metrics_bind_address,
        serve::Routes::Metrics(metrics.clone()),
        shutdown.clone(),
    )
    .await
    .context("binding the metrics address")?;
    tracing::info!(%probes, metrics = %metrics_address, leader_elect = run.leader_elect, "starting");
    ready.store(true, Ordering::Relaxed);

    let election = if run.leader_elect {
        let namespace = run
            .leader_election_namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_owned());
        let election =
            leader::LeaderElection::new(client.clone(), &namespace, LEADER_ELECTION_ID, identity());
        if !election.acquire(&mut shutdown).await {
            return Ok(());
        }
        metrics.set_leader(true);
        let holder = election.clone();
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            if !holder.hold(&mut stop).await {
                tracing::error!("leader election lost");
                std::process::exit(1);
            }
        });
        Some(election)
    } else {
        None
    };

    let mut stop = shutdown.clone();
    let stopping = async move {
        let _ = stop.wait_for(|stop| *stop).await;
    };
    let controller = tokio::spawn(controller::run(client, metrics.clone(), stopping));
    let _ = shutdown.wait_for(|stop| *stop).await;
    tracing::info!("shutting down");
    match tokio::time::timeout(run.graceful_shutdown_timeout, controller).await {
        Ok(joined) => joined.context("the controller task")?,
        Err(_) => {
            tracing::warn!("the reconciles did not finish within the graceful shutdown timeout")
        }
    }
    if let Some(election) = election {
        election.release().await;
        metrics.set_leader(false);
    }
    Ok(())
}

/// This replica's identity in the Lease: its host name (the Pod's name) and a unique suffix.
fn identity() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "kube-operator-peer".to_owned());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{host}_{}_{nanos:x}", std::process::id())
}
