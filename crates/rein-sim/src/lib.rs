//! A simulated cluster built on rein's own manager, controllers and shared cache: simulated
//! Nodes, a scheduler, a kubelet, and the workload controllers (ReplicaSet, Deployment, Job),
//! so that workloads an operator creates on rein-testenv (or beside real nodes on any API
//! server, as kwok does) actually run: Pods are scheduled, become Running and Ready, Jobs
//! complete, Deployments become Available.
//!
//! The seam with rein-testenv: everything an API server itself does (validation, the binding
//! and eviction subresources, garbage collection) stays in rein-testenv; everything a
//! controller, the scheduler or a kubelet does lives here, written against the API like the
//! real components.
//!
//! - [`cluster`]: the entry point, [`cluster::SimCluster::start`] with a [`cluster::SimConfig`]
//!   (nodes, their capacity, labels and taints, heartbeat, kubelet and scheduler timings).
//! - [`nodes`]: the simulated Nodes, their heartbeat and Leases, NotReady and taint eviction.
//! - [`scheduler`]: binds Pending Pods through the `binding` subresource (filters, spread,
//!   kube-scheduler's Unschedulable message).
//! - [`kubelet`]: plays the Pods bound to simulated nodes (IPs, container statuses,
//!   conditions, exits, crash loops, graceful deletion), per-Pod behaviour from
//!   `sim.rein.dev/...` annotations.
//! - [`workloads`]: the ReplicaSet, Deployment and Job controllers.
//!
//! ```
//! use std::time::Duration;
//!
//! use k8s_openapi::api::core::v1::Pod;
//! use kube_client::Api;
//! use kube_client::api::PostParams;
//! use rein_sim::cluster::{SimCluster, SimConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // An in-process API server, and a simulated cluster of three nodes on it.
//! let env = rein_testenv::TestEnv::start().await?;
//! let sim = SimCluster::start(env.config(), SimConfig::default()).await?;
//!
//! let pods: Api<Pod> = Api::namespaced(env.client(), "default");
//! let web: Pod = serde_json::from_value(serde_json::json!({
//!     "metadata": {"name": "web"},
//!     "spec": {"containers": [{"name": "app", "image": "nginx"}]}
//! }))?;
//! pods.create(&PostParams::default(), &web).await?;
//!
//! // The scheduler binds it and the kubelet runs it: wait (at most 30 s) until it is Ready.
//! let is_ready = |pod: &Pod| {
//!     let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
//!     conditions.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
//! };
//! let running = tokio::time::timeout(Duration::from_secs(30), async {
//!     loop {
//!         let pod = pods.get("web").await?;
//!         if is_ready(&pod) {
//!             return Ok::<Pod, kube_client::Error>(pod);
//!         }
//!         tokio::time::sleep(Duration::from_millis(50)).await;
//!     }
//! })
//! .await??;
//! let status = running.status.unwrap_or_default();
//! assert_eq!(status.phase.as_deref(), Some("Running"));
//! assert!(status.pod_ip.is_some_and(|ip| ip.starts_with("10.244.")));
//! assert!(running.spec.and_then(|s| s.node_name).is_some_and(|n| n.starts_with("sim-node-")));
//!
//! sim.shutdown().await?;
//! # Ok(())
//! # }
//! ```

pub mod cluster;
pub mod kubelet;
pub mod nodes;
pub mod scheduler;
pub mod workloads;
