//! The entry point: [`SimCluster::start`] builds a rein [`Manager`] for an API server,
//! registers the simulated nodes, adds the scheduler, the kubelet, the taint-eviction
//! controller, the node heartbeat and (unless turned off) the workload controllers, starts
//! the manager on a task and waits until its caches have synced; [`SimCluster::shutdown`]
//! stops it all.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use rein_manager::{Manager, Options};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::kubelet::{self, KubeletConfig};
use crate::nodes::{self, HeartbeatConfig, NodeConfig, NodeError, NodeHealth, Nodes};
use crate::scheduler::{self, SchedulerConfig};
use crate::workloads;

/// Everything a simulated cluster is made of. `Default`: three nodes of 4 CPUs, 16 GiB and
/// 110 Pods each, kube's heartbeat and back-off timings, Pods starting at once.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The nodes, named `sim-node-0`, `sim-node-1`, … in this order.
    pub nodes: Vec<NodeConfig>,
    /// How often the nodes' kubelets renew their Leases and report their status.
    pub heartbeat: HeartbeatConfig,
    /// The kubelet's timings.
    pub kubelet: KubeletConfig,
    /// The scheduler's name and retry period.
    pub scheduler: SchedulerConfig,
    /// Whether the workload controllers run ([`workloads::add_all`]: ReplicaSet, Deployment,
    /// Job, EndpointSlice, …; default `true`). Beside a real kube-controller-manager, turn them
    /// off: its own controllers already do their work, and two ReplicaSet controllers would
    /// fight over the same Pods.
    pub workload_controllers: bool,
    /// How long [`SimCluster::start`] waits for the caches to sync (default 60 s).
    pub start_timeout: Duration,
    /// How long [`SimCluster::shutdown`] waits for the controllers to stop (default 10 s).
    pub shutdown_timeout: Duration,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig::with_nodes(3)
    }
}

impl SimConfig {
    /// `count` nodes of the default size, and the other defaults.
    pub fn with_nodes(count: usize) -> Self {
        SimConfig {
            nodes: vec![NodeConfig::default(); count],
            heartbeat: HeartbeatConfig::default(),
            kubelet: KubeletConfig::default(),
            scheduler: SchedulerConfig::default(),
            workload_controllers: true,
            start_timeout: Duration::from_secs(60),
            shutdown_timeout: Duration::from_secs(10),
        }
    }
}

/// Why a simulated cluster could not start, stop or do what it was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot be simulated.
    #[error("invalid simulated cluster configuration: {problem}")]
    InvalidConfig {
        /// What is wrong.
        problem: String,
    },
    /// Building the manager failed.
    #[error("building the manager")]
    Manager(#[source] rein_manager::Error),
    /// Adding one of the controllers failed.
    #[error("adding the {controller} controller")]
    AddController {
        /// The controller.
        controller: &'static str,
        /// What the builder said.
        #[source]
        source: rein_controller::BuildError,
    },
    /// Adding the node heartbeat to the manager failed.
    #[error("adding the node heartbeat")]
    AddHeartbeat(#[source] rein_manager::Error),
    /// Registering or changing a node failed.
    #[error(transparent)]
    Node(#[from] NodeError),
    /// The manager stopped with an error.
    #[error("running the manager")]
    Run(#[source] rein_manager::Error),
    /// The manager's task ended before its caches synced, without an error.
    #[error("the manager stopped before its caches synced")]
    StoppedEarly,
    /// The caches did not sync in time.
    #[error("the caches did not sync within {0:?}")]
    SyncTimeout(Duration),
    /// Reading from the caches failed while waiting for them.
    #[error("waiting for the {kind} cache")]
    Cache {
        /// The kind whose informer was awaited.
        kind: &'static str,
        /// The cache's error.
        #[source]
        source: rein_client::Error,
    },
    /// The manager did not stop within the shutdown timeout and was aborted.
    #[error("the manager did not stop within {0:?}")]
    ShutdownTimeout(Duration),
    /// The manager's task panicked or was aborted.
    #[error("the manager's task failed")]
    Task(#[source] tokio::task::JoinError),
    /// No simulated node has that name.
    #[error("no simulated node is called {0:?}")]
    UnknownNode(String),
}

/// A running simulated cluster: its manager, nodes and controllers. Dropping it stops the
/// manager without waiting; [`SimCluster::shutdown`] waits.
#[derive(Debug)]
pub struct SimCluster {
    manager: Manager,
    nodes: Nodes,
    stop: CancellationToken,
    task: Option<JoinHandle<Result<(), rein_manager::Error>>>,
    shutdown_timeout: Duration,
}

impl SimCluster {
    /// Starts a simulated cluster against the API server of `kube` (rein-testenv's
    /// `TestEnv::config()`, or any cluster's): builds a manager, registers the nodes, adds
    /// the scheduler, kubelet and taint-eviction controllers, the workload controllers
    /// (unless [`SimConfig::workload_controllers`] is off) and the node heartbeat, starts the
    /// manager on a task of the current runtime and returns once the Pod and Node caches have
    /// synced.
    pub async fn start(kube: kube_client::Config, config: SimConfig) -> Result<SimCluster, Error> {
        if let Some(problem) = config.kubelet.invalid() {
            return Err(Error::InvalidConfig {
                problem: problem.to_owned(),
            });
        }
        let options = Options {
            graceful_shutdown_timeout: Some(config.shutdown_timeout),
            cache_sync_timeout: Some(config.start_timeout),
            ..Options::default()
        };
        let manager = Manager::builder(kube)
            .options(options)
            .build()
            .await
            .map_err(Error::Manager)?;
        let nodes = Nodes::new(manager.client(), &config.nodes, config.heartbeat.clone())
            .map_err(|problem| Error::InvalidConfig { problem })?;
        nodes.register().await?;

        let controller =
            |controller: &'static str| move |source| Error::AddController { controller, source };
        scheduler::add(&manager, &config.scheduler).map_err(controller("scheduler"))?;
        kubelet::add(&manager, nodes.clone(), &config.kubelet).map_err(controller("kubelet"))?;
        nodes::eviction::add(&manager, nodes.clone()).map_err(controller("taint-eviction"))?;
        if config.workload_controllers {
            workloads::add_all(&manager).map_err(controller("workload"))?;
        }
        manager
            .add(nodes.heartbeat())
            .map_err(Error::AddHeartbeat)?;

        let stop = CancellationToken::new();
        let mut task = tokio::spawn({
            let (manager, stop) = (manager.clone(), stop.clone());
            async move { manager.start(stop).await }
        });
        let synced = async {
            manager.elected().await;
            let cache = manager.cache();
            cache
                .informer_for::<Pod>()
                .await
                .map_err(|source| Error::Cache {
                    kind: "Pod",
                    source,
                })?;
            cache
                .informer_for::<Node>()
                .await
                .map_err(|source| Error::Cache {
                    kind: "Node",
                    source,
                })?;
            Ok::<(), Error>(())
        };
        let outcome = tokio::select! {
            synced = tokio::time::timeout(config.start_timeout, synced) => match synced {
                Ok(result) => result,
                Err(_) => Err(Error::SyncTimeout(config.start_timeout)),
            },
            ended = &mut task => Err(match ended {
                Ok(Ok(())) => Error::StoppedEarly,
                Ok(Err(err)) => Error::Run(err),
                Err(err) => Error::Task(err),
            }),
        };
        if let Err(err) = outcome {
            stop.cancel();
            task.abort();
            return Err(err);
        }
        Ok(SimCluster {
            manager,
            nodes,
            stop,
            task: Some(task),
            shutdown_timeout: config.shutdown_timeout,
        })
    }

    /// The manager the simulation runs on (its client, cache, event recorders).
    pub fn manager(&self) -> &Manager {
        &self.manager
    }

    /// The simulated nodes' names, in order.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.names()
    }

    /// Makes a node Ready or NotReady: [`SimCluster::set_health`] with
    /// [`NodeHealth::Ready`] or [`NodeHealth::NotReady`].
    pub async fn set_ready(&self, node: &str, ready: bool) -> Result<(), Error> {
        let health = if ready {
            NodeHealth::Ready
        } else {
            NodeHealth::NotReady
        };
        self.set_health(node, health).await
    }

    /// Changes a node's health, as its kubelet and kube-controller-manager's node lifecycle
    /// controller would show it:
    ///
    /// - `NotReady`: the kubelet reports `Ready=False` (`KubeletNotReady`); its Pods keep
    ///   running but stop being ready; the node is tainted `node.kubernetes.io/not-ready`.
    /// - `Unreachable`: the kubelet stops (no Lease renewals, no status; its Pods are left as
    ///   they are, deletions unfinished); the node's conditions become `Unknown`
    ///   (`NodeStatusUnknown`), its Pods are marked not Ready, and it is tainted
    ///   `node.kubernetes.io/unreachable`.
    /// - `Ready`: the kubelet reports Ready again, the taints go, and it catches up with its
    ///   Pods.
    ///
    /// The taints have the effects `NoSchedule` (nothing new is scheduled there) and
    /// `NoExecute`: the node's Pods are evicted once their `tolerationSeconds` for the taint
    /// have passed (300 s for Pods the API server gave the default tolerations; at once for
    /// Pods that tolerate neither).
    pub async fn set_health(&self, node: &str, health: NodeHealth) -> Result<(), Error> {
        if self.nodes.set_health(node, health).await? {
            Ok(())
        } else {
            Err(Error::UnknownNode(node.to_owned()))
        }
    }

    /// Stops the manager (controllers, heartbeat, caches) and waits for it, at most the
    /// shutdown timeout (then it is aborted). The Nodes and their Leases stay in the API
    /// server, as a stopped kubelet leaves them.
    pub async fn shutdown(mut self) -> Result<(), Error> {
        self.stop.cancel();
        let Some(mut task) = self.task.take() else {
            return Ok(());
        };
        // The manager itself bounds its stop by the same timeout; allow a little more.
        let limit = self.shutdown_timeout.saturating_add(Duration::from_secs(5));
        match tokio::time::timeout(limit, &mut task).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(err))) => Err(Error::Run(err)),
            Ok(Err(err)) => Err(Error::Task(err)),
            Err(_) => {
                task.abort();
                Err(Error::ShutdownTimeout(self.shutdown_timeout))
            }
        }
    }
}

impl Drop for SimCluster {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
