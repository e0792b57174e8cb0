//! The simulated Nodes: what a kubelet registers and keeps fresh, and what the node lifecycle
//! controller does when one stops being Ready.
//!
//! Each node `sim-node-<i>` is registered as a kubelet registers itself: capacity and
//! allocatable (CPU, memory, Pods, ephemeral storage, any extended resources), the well-known
//! labels (`kubernetes.io/hostname`, `kubernetes.io/os=linux`, `kubernetes.io/arch`,
//! `node.kubernetes.io/instance-type=sim` and their `beta.` twins) plus the configured ones,
//! the configured taints, `spec.podCIDR` `10.244.<i>.0/24`, an `InternalIP` address, `nodeInfo`
//! and the conditions `Ready=True` and `MemoryPressure`/`DiskPressure`/`PIDPressure=False`.
//! A heartbeat ([`HeartbeatConfig`]) renews each node's Lease in `kube-node-lease` and reports
//! its status (fresh `lastHeartbeatTime`s), as the kubelet's node status and lease loops do.
//!
//! [`SimCluster::set_health`](crate::cluster::SimCluster::set_health) changes a node's
//! [`NodeHealth`]. `NotReady`: its kubelet reports `Ready=False` (reason `KubeletNotReady`).
//! `Unreachable`: its kubelet stops (no Lease renewals, no status, its Pods left as they are)
//! and the node lifecycle controller's view is written: every condition `Unknown`, reason
//! `NodeStatusUnknown`, and the node's Pods marked not Ready. Either way the node is tainted as
//! that controller does (`node.kubernetes.io/not-ready` or `node.kubernetes.io/unreachable`,
//! `NoSchedule` and `NoExecute`), and its taint-eviction controller (`nodes/eviction.rs`) deletes
//! the node's Pods that do not tolerate the `NoExecute` taint, each once its
//! `tolerationSeconds` have passed.

pub(crate) mod eviction;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeSpec, NodeStatus,
    NodeSystemInfo, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use kube_client::core::ObjectMeta;
use rein_client::{Client, ListOptions, Patch, PatchParams, PostParams};
use rein_controller::Request;
use rein_controller::{BoxError, Runnable};
use rein_scheme::ObjectKey;
use tokio_util::sync::CancellationToken;

use crate::scheduler::resources;

/// The namespace of node Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// The annotation marking a Node as one rein-sim simulates (value `"true"`).
pub const SIMULATED_ANNOTATION: &str = "sim.rein.dev/simulated";
/// The taint the node lifecycle controller puts on a node whose `Ready` is `False`.
pub const TAINT_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The taint the node lifecycle controller puts on a node whose `Ready` is `Unknown`.
pub const TAINT_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// The most nodes one simulated cluster has (their Pod CIDRs are `10.244.0.0/24` up to
/// `10.255.255.0/24`).
pub const MAX_NODES: usize = 12 * 256;

/// A simulated node's health, as its kubelet and the node lifecycle controller show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NodeHealth {
    /// The kubelet reports `Ready=True`.
    #[default]
    Ready,
    /// The kubelet reports `Ready=False`; the node is tainted `node.kubernetes.io/not-ready`.
    /// Its Pods keep running, not ready.
    NotReady,
    /// The kubelet stopped reporting (`Ready=Unknown`); the node is tainted
    /// `node.kubernetes.io/unreachable`. Nothing on it changes until it is back: Pods are not
    /// started, their statuses not written, their deletions not finished.
    Unreachable,
}

/// The resources a simulated node offers; allocatable equals capacity.
#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    /// CPU (default `4`).
    pub cpu: Quantity,
    /// Memory (default `16Gi`).
    pub memory: Quantity,
    /// How many Pods fit (default 110, the kubelet's `--max-pods`).
    pub pods: u32,
    /// Ephemeral storage (default `100Gi`).
    pub ephemeral_storage: Quantity,
    /// Extended resources, e.g. `nvidia.com/gpu: 1` (default none).
    pub extended: BTreeMap<String, Quantity>,
}

impl Default for Capacity {
    fn default() -> Self {
        Capacity {
            cpu: Quantity("4".into()),
            memory: Quantity("16Gi".into()),
            pods: 110,
            ephemeral_storage: Quantity("100Gi".into()),
            extended: BTreeMap::new(),
        }
    }
}

impl Capacity {
    /// The `status.capacity` (and `status.allocatable`) map.
    fn to_list(&self) -> BTreeMap<String, Quantity> {
        let mut list = BTreeMap::from([
            ("cpu".to_owned(), self.cpu.clone()),
            ("memory".to_owned(), self.memory.clone()),
            ("pods".to_owned(), Quantity(self.pods.to_string())),
            (
                "ephemeral-storage".to_owned(),
                self.ephemeral_storage.clone(),
            ),
            ("hugepages-1Gi".to_owned(), Quantity("0".into())),
            ("hugepages-2Mi".to_owned(), Quantity("0".into())),
        ]);
        list.extend(self.extended.clone());
        list
    }

    /// The first quantity that does not parse, if any.
    fn invalid(&self) -> Option<String> {
        [&self.cpu, &self.memory, &self.ephemeral_storage]
            .into_iter()
            .chain(self.extended.values())
            .find(|q| resources::parse(&q.0).is_none())
            .map(|q| q.0.clone())
    }
}

/// One simulated node's configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeConfig {
    /// What it offers.
    pub capacity: Capacity,
    /// Labels beside the well-known ones (which these may override).
    pub labels: BTreeMap<String, String>,
    /// Its taints (registered as the kubelet's `--register-with-taints`).
    pub taints: Vec<Taint>,
}

impl NodeConfig {
    /// Adds a label.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Adds a taint.
    pub fn taint(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
        effect: impl Into<String>,
    ) -> Self {
        let value = value.into();
        self.taints.push(Taint {
            key: key.into(),
            value: (!value.is_empty()).then_some(value),
            effect: effect.into(),
            time_added: None,
        });
        self
    }
}

/// How often the simulated kubelets report in.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatConfig {
    /// The node Leases' `leaseDurationSeconds` (the kubelet's 40 s).
    pub lease_duration: Duration,
    /// How often each Lease's `renewTime` is renewed (the kubelet's quarter of the duration,
    /// 10 s).
    pub lease_renew_interval: Duration,
    /// How often each Node's status is reported when nothing changed, refreshing the
    /// conditions' `lastHeartbeatTime` (the kubelet's `nodeStatusReportFrequency`, 5 min).
    pub status_report_interval: Duration,
}

impl Default for HeartbeatConfig {
    fn default() -> Self {
        HeartbeatConfig {
            lease_duration: Duration::from_secs(40),
            lease_renew_interval: Duration::from_secs(10),
            status_report_interval: Duration::from_secs(300),
        }
    }
}

/// A node operation that failed: what was being done, to which node.
#[derive(Debug)]
pub struct NodeError {
    /// What was being done (`registering`, `renewing the Lease of`, …).
    pub action: &'static str,
    /// The node's name.
    pub node: String,
    /// The API error.
    pub source: rein_client::Error,
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} node {}", self.action, self.node)
    }
}

impl std::error::Error for NodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// A simulated node: its name, its addresses and its configuration.
#[derive(Debug, Clone)]
pub(crate) struct SimNode {
    /// `sim-node-<index>`.
    pub(crate) name: String,
    /// Its `InternalIP`, the `hostIP` of its Pods.
    pub(crate) internal_ip: String,
    /// The first three octets of its Pod CIDR (`10.244.<i>`).
    pub(crate) pod_prefix: [u8; 3],
    config: NodeConfig,
}

impl SimNode {
    fn new(index: usize, config: NodeConfig) -> SimNode {
        // `index < MAX_NODES`, so every octet fits.
        let octet = |v: usize| u8::try_from(v).unwrap_or(u8::MAX);
        SimNode {
            name: format!("sim-node-{index}"),
            internal_ip: format!("172.18.{}.{}", index / 250, index % 250 + 2),
            pod_prefix: [10, octet(244 + index / 256), octet(index % 256)],
            config,
        }
    }

    /// `spec.podCIDR`.
    pub(crate) fn pod_cidr(&self) -> String {
        let [a, b, c] = self.pod_prefix;
        format!("{a}.{b}.{c}.0/24")
    }

    /// The labels it registers with.
    fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            ("beta.kubernetes.io/arch".to_owned(), "amd64".to_owned()),
            ("beta.kubernetes.io/os".to_owned(), "linux".to_owned()),
            ("kubernetes.io/arch".to_owned(), "amd64".to_owned()),
            ("kubernetes.io/hostname".to_owned(), self.name.clone()),
            ("kubernetes.io/os".to_owned(), "linux".to_owned()),
            (
                "node.kubernetes.io/instance-type".to_owned(),
                "sim".to_owned(),
            ),
        ]);
        labels.extend(self.config.labels.clone());
        labels
    }

    /// The Node as the kubelet registers it.
    fn object(&self) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                labels: Some(self.labels()),
                annotations: Some(BTreeMap::from([
                    ("node.alpha.kubernetes.io/ttl".to_owned(), "0".to_owned()),
                    (SIMULATED_ANNOTATION.to_owned(), "true".to_owned()),
                    (
                        "volumes.kubernetes.io/controller-managed-attach-detach".to_owned(),
                        "true".to_owned(),
                    ),
                ])),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec {
                pod_cidr: Some(self.pod_cidr()),
                pod_cidrs: Some(vec![self.pod_cidr()]),
                taints: (!self.config.taints.is_empty()).then(|| self.config.taints.clone()),
                ..NodeSpec::default()
            }),
            status: None,
        }
    }

    /// A stable hex identifier derived from the name (machine ID, system UUID, boot ID).
    fn id(&self, salt: &str) -> String {
        stable_hex(&format!("{salt}/{}", self.name), 2)
    }

    /// The status the kubelet reports, with the given health.
    fn status(&self, health: &Health, now: &Time) -> NodeStatus {
        let heartbeat = match health.state {
            NodeHealth::Unreachable => health.last_heartbeat.clone(),
            NodeHealth::Ready | NodeHealth::NotReady => now.clone(),
        };
        let condition =
            |type_: &str, status: &str, reason: &str, message: &str, since: &Time| NodeCondition {
                type_: type_.to_owned(),
                status: status.to_owned(),
                reason: Some(reason.to_owned()),
                message: Some(message.to_owned()),
                last_heartbeat_time: Some(heartbeat.clone()),
                last_transition_time: Some(since.clone()),
            };
        let since = &health.since;
        let pressure = |type_: &str, reason: &str, message: &str| match health.state {
            NodeHealth::Unreachable => condition(
                type_,
                "Unknown",
                "NodeStatusUnknown",
                "Kubelet stopped posting node status.",
                since,
            ),
            NodeHealth::Ready | NodeHealth::NotReady => {
                condition(type_, "False", reason, message, &health.registered)
            }
        };
        let conditions = vec![
            pressure(
                "MemoryPressure",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            pressure(
                "DiskPressure",
                "KubeletHasNoDiskPressure",
                "kubelet has no disk pressure",
            ),
            pressure(
                "PIDPressure",
                "KubeletHasSufficientPID",
                "kubelet has sufficient PID available",
            ),
            match health.state {
                NodeHealth::Ready => condition(
                    "Ready",
                    "True",
                    "KubeletReady",
                    "kubelet is posting ready status",
                    since,
                ),
                NodeHealth::NotReady => condition(
                    "Ready",
                    "False",
                    "KubeletNotReady",
                    "container runtime network not ready: NetworkReady=false (simulated)",
                    since,
                ),
                NodeHealth::Unreachable => condition(
                    "Ready",
                    "Unknown",
                    "NodeStatusUnknown",
                    "Kubelet stopped posting node status.",
                    since,
                ),
            },
        ];
        // 32 hex digits as a UUID: 8-4-4-4-12.
        let hex = self.id("system-uuid");
        let part = |range: std::ops::Range<usize>| hex.get(range).unwrap_or_default();
        let uuid = format!(
            "{}-{}-{}-{}-{}",
            part(0..8),
            part(8..12),
            part(12..16),
            part(16..20),
            part(20..32)
        );
        NodeStatus {
            capacity: Some(self.config.capacity.to_list()),
            allocatable: Some(self.config.capacity.to_list()),
            conditions: Some(conditions),
            addresses: Some(vec![
                NodeAddress {
                    type_: "InternalIP".into(),
                    address: self.internal_ip.clone(),
                },
                NodeAddress {
                    type_: "Hostname".into(),
                    address: self.name.clone(),
                },
            ]),
            daemon_endpoints: Some(NodeDaemonEndpoints {
                kubelet_endpoint: Some(DaemonEndpoint { port: 10250 }),
            }),
            node_info: Some(NodeSystemInfo {
                architecture: "amd64".into(),
                boot_id: self.id("boot"),
                container_runtime_version: concat!("rein-sim://", env!("CARGO_PKG_VERSION")).into(),
                kernel_version: "6.8.0-rein-sim".into(),
                kube_proxy_version: String::new(),
                kubelet_version: "v1.33.0-rein-sim".into(),
                machine_id: self.id("machine"),
                operating_system: "linux".into(),
                os_image: "rein-sim".into(),
                swap: None,
                system_uuid: uuid,
            }),
            ..NodeStatus::default()
        }
    }
}

/// What the simulated kubelet of one node reports about itself.
#[derive(Debug, Clone)]
struct Health {
    state: NodeHealth,
    /// When the state last changed.
    since: Time,
    /// The last time the kubelet reported (kept while it is unreachable).
    last_heartbeat: Time,
    /// When the node registered (the pressure conditions' transition time).
    registered: Time,
    /// The Node's uid, once registered (the Lease's owner).
    uid: Option<String>,
}

/// The simulated nodes: their configuration and health, shared by the cluster (which changes
/// health), the heartbeat, the kubelet and the taint-eviction controller.
#[derive(Clone)]
pub(crate) struct Nodes {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    heartbeat: HeartbeatConfig,
    nodes: Vec<SimNode>,
    by_name: HashMap<String, usize>,
    health: Mutex<HashMap<String, Health>>,
}

impl fmt::Debug for Nodes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nodes")
            .field("nodes", &self.inner.by_name.len())
            .finish_non_exhaustive()
    }
}

/// `words × 16` hex digits derived from `text` (FNV-1a with a different seed per word):
/// stable across runs, for the IDs a real node or runtime would make up.
pub(crate) fn stable_hex(text: &str, words: usize) -> String {
    (0..words)
        .map(|word| {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ (word as u64).wrapping_mul(0x9e37_79b9);
            for b in text.bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
            format!("{h:016x}")
        })
        .collect()
}

/// The requests of every cached Pod bound to `node`.
pub(crate) async fn pods_on(client: &Client, node: Option<&str>) -> Vec<Request> {
    let Some(node) = node else { return Vec::new() };
    match client.list::<Pod>(&ListOptions::default()).await {
        Ok(pods) => pods
            .items
            .iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
            .map(|p| Request::from_object(p.as_ref()))
            .collect(),
        Err(err) => {
            tracing::debug!(error = %err, node, "listing the Pods of a node");
            Vec::new()
        }
    }
}

/// Now, as an API time.
pub(crate) fn now() -> Time {
    Time(Timestamp::now())
}

impl Nodes {
    /// The nodes of `configs`, not yet registered; an error names the first bad setting.
    pub(crate) fn new(
        client: Client,
        configs: &[NodeConfig],
        heartbeat: HeartbeatConfig,
    ) -> Result<Nodes, String> {
        if configs.len() > MAX_NODES {
            return Err(format!(
                "{} nodes asked for, at most {MAX_NODES} are simulated",
                configs.len()
            ));
        }
        if heartbeat.lease_renew_interval.is_zero() || heartbeat.status_report_interval.is_zero() {
            return Err("heartbeat intervals must be positive".into());
        }
        let mut nodes = Vec::with_capacity(configs.len());
        for (index, config) in configs.iter().enumerate() {
            if let Some(bad) = config.capacity.invalid() {
                return Err(format!("node {index}: {bad:?} is not a quantity"));
            }
            nodes.push(SimNode::new(index, config.clone()));
        }
        let by_name = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.clone(), i))
            .collect();
        Ok(Nodes {
            inner: Arc::new(Inner {
                client,
                heartbeat,
                nodes,
                by_name,
                health: Mutex::new(HashMap::new()),
            }),
        })
    }

    fn health(&self) -> MutexGuard<'_, HashMap<String, Health>> {
        self.inner.health.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The simulated node called `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&SimNode> {
        self.inner
            .by_name
            .get(name)
            .and_then(|i| self.inner.nodes.get(*i))
    }

    /// The names, in order.
    pub(crate) fn names(&self) -> Vec<String> {
        self.inner.nodes.iter().map(|n| n.name.clone()).collect()
    }

    /// The health of the simulated node `name` (`Ready` for names it does not know).
    pub(crate) fn health_of(&self, name: &str) -> NodeHealth {
        self.health()
            .get(name)
            .map_or(NodeHealth::Ready, |h| h.state)
    }

    fn error(action: &'static str, node: &str) -> impl FnOnce(rein_client::Error) -> NodeError {
        let node = node.to_owned();
        move |source| NodeError {
            action,
            node,
            source,
        }
    }

    /// Registers every node (creating it, or taking over one of the same name) with its
    /// status and Lease.
    pub(crate) async fn register(&self) -> Result<(), NodeError> {
        for node in &self.inner.nodes {
            self.register_one(node).await?;
        }
        Ok(())
    }

    async fn register_one(&self, node: &SimNode) -> Result<(), NodeError> {
        let client = &self.inner.client;
        let object = node.object();
        let uid = match client.create(&object, &PostParams::default()).await {
            Ok(created) => created.metadata.uid,
            Err(err) if err.is_already_exists() => {
                // A node of that name exists (a restarted simulation): take it over.
                let patch = serde_json::json!({
                    "metadata": {
                        "labels": object.metadata.labels,
                        "annotations": object.metadata.annotations,
                    },
                    "spec": {"taints": object.spec.as_ref().and_then(|s| s.taints.clone())},
                });
                let key = ObjectKey::cluster_scoped(&node.name);
                let patched: Node = client
                    .patch(&key, &Patch::Merge(&patch), &PatchParams::default())
                    .await
                    .map_err(Self::error("taking over", &node.name))?;
                patched.metadata.uid
            }
            Err(err) => return Err(Self::error("registering", &node.name)(err)),
        };
        let now = now();
        self.health().insert(
            node.name.clone(),
            Health {
                state: NodeHealth::Ready,
                since: now.clone(),
                last_heartbeat: now.clone(),
                registered: now,
                uid,
            },
        );
        self.report_status(node).await?;
        self.renew_lease(node).await
    }

    /// Writes the node's status as its kubelet sees it now.
    async fn report_status(&self, node: &SimNode) -> Result<(), NodeError> {
        let now = now();
        let health = {
            let mut all = self.health();
            let Some(health) = all.get_mut(&node.name) else {
                return Ok(());
            };
            if health.state != NodeHealth::Unreachable {
                health.last_heartbeat = now.clone();
            }
            health.clone()
        };
        let status = node.status(&health, &now);
        let patch = serde_json::json!({ "status": status });
        let key = ObjectKey::cluster_scoped(&node.name);
        self.inner
            .client
            .status()
            .patch::<Node, _>(&key, &Patch::Merge(&patch), &PatchParams::default())
            .await
            .map(|_| ())
            .map_err(Self::error("reporting the status of", &node.name))
    }

    /// Renews the node's Lease, creating it when missing.
    async fn renew_lease(&self, node: &SimNode) -> Result<(), NodeError> {
        let client = &self.inner.client;
        let key = ObjectKey::new(NODE_LEASE_NAMESPACE, &node.name);
        let renew = serde_json::json!({
            "spec": {"holderIdentity": node.name, "renewTime": MicroTime(Timestamp::now())}
        });
        match client
            .patch::<Lease, _>(&key, &Patch::Merge(&renew), &PatchParams::default())
            .await
        {
            Ok(_) => return Ok(()),
            Err(err) if err.is_not_found() => {}
            Err(err) => return Err(Self::error("renewing the Lease of", &node.name)(err)),
        }
        let uid = self.health().get(&node.name).and_then(|h| h.uid.clone());
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(node.name.clone()),
                namespace: Some(NODE_LEASE_NAMESPACE.into()),
                owner_references: uid.map(|uid| {
                    vec![OwnerReference {
                        api_version: "v1".into(),
                        kind: "Node".into(),
                        name: node.name.clone(),
                        uid,
                        ..OwnerReference::default()
                    }]
                }),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(node.name.clone()),
                lease_duration_seconds: Some(
                    i32::try_from(self.inner.heartbeat.lease_duration.as_secs()).unwrap_or(40),
                ),
                renew_time: Some(MicroTime(Timestamp::now())),
                ..LeaseSpec::default()
            }),
        };
        match client.create(&lease, &PostParams::default()).await {
            Ok(_) => Ok(()),
            Err(err) if err.is_already_exists() => Ok(()),
            Err(err) => Err(Self::error("creating the Lease of", &node.name)(err)),
        }
    }

    /// Changes a simulated node's health: its status is written at once (by its kubelet, or
    /// for `Unreachable` as the node lifecycle controller marks it), and its
    /// `not-ready`/`unreachable` taints set to match. `false` for unknown names.
    pub(crate) async fn set_health(
        &self,
        name: &str,
        state: NodeHealth,
    ) -> Result<bool, NodeError> {
        let Some(node) = self.get(name).cloned() else {
            return Ok(false);
        };
        {
            let mut health = self.health();
            if let Some(h) = health.get_mut(name)
                && h.state != state
            {
                h.state = state;
                h.since = now();
            }
        }
        self.report_status(&node).await?;
        let taint = match state {
            NodeHealth::Ready => None,
            NodeHealth::NotReady => Some(TAINT_NOT_READY),
            NodeHealth::Unreachable => Some(TAINT_UNREACHABLE),
        };
        self.set_health_taints(&node, taint).await?;
        Ok(true)
    }

    /// Replaces the `not-ready`/`unreachable` taints by `taint` (`NoSchedule` and `NoExecute`),
    /// or removes them, with an optimistic-concurrency update retried on conflicts.
    async fn set_health_taints(
        &self,
        node: &SimNode,
        taint: Option<&str>,
    ) -> Result<(), NodeError> {
        let reader = self.inner.client.api_reader();
        let key = ObjectKey::cluster_scoped(&node.name);
        let mut attempts = 0;
        loop {
            attempts += 1;
            let current = reader
                .get::<Node>(&key)
                .await
                .map_err(Self::error("reading", &node.name))?;
            let mut updated = Arc::unwrap_or_clone(current);
            let spec = updated.spec.get_or_insert_with(NodeSpec::default);
            let mut taints: Vec<Taint> = spec
                .taints
                .take()
                .unwrap_or_default()
                .into_iter()
                .filter(|t| t.key != TAINT_NOT_READY && t.key != TAINT_UNREACHABLE)
                .collect();
            if let Some(key) = taint {
                for effect in ["NoSchedule", "NoExecute"] {
                    taints.push(Taint {
                        key: key.into(),
                        value: None,
                        effect: effect.into(),
                        time_added: (effect == "NoExecute").then(now),
                    });
                }
            }
            spec.taints = (!taints.is_empty()).then_some(taints);
            match self
                .inner
                .client
                .update(&updated, &PostParams::default())
                .await
            {
                Ok(_) => return Ok(()),
                Err(err) if err.is_conflict() && attempts < 10 => continue,
                Err(err) => return Err(Self::error("tainting", &node.name)(err)),
            }
        }
    }

    /// The nodes whose kubelet still reports (not `Unreachable`).
    fn reporting(&self) -> Vec<&SimNode> {
        let health = self.health();
        self.inner
            .nodes
            .iter()
            .filter(|n| {
                health
                    .get(&n.name)
                    .is_none_or(|h| h.state != NodeHealth::Unreachable)
            })
            .collect()
    }

    /// The heartbeat as a runnable of the manager.
    pub(crate) fn heartbeat(&self) -> Arc<dyn Runnable> {
        Arc::new(Heartbeat(self.clone()))
    }
}

/// Renews the Leases every `lease_renew_interval` and reports every node's status every
/// `status_report_interval`, until stopped; failures are logged and retried next time.
struct Heartbeat(Nodes);

#[async_trait]
impl Runnable for Heartbeat {
    async fn start(&self, stop: CancellationToken) -> Result<(), BoxError> {
        let nodes = &self.0;
        let config = &nodes.inner.heartbeat;
        let mut renew = tokio::time::interval(config.lease_renew_interval);
        let mut report = tokio::time::interval(config.status_report_interval);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        report.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Both fire at once; registration has just done both.
        renew.tick().await;
        report.tick().await;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return Ok(()),
                _ = renew.tick() => {
                    for node in nodes.reporting() {
                        if let Err(err) = nodes.renew_lease(node).await {
                            tracing::warn!(error = %err, source = %err.source, "node heartbeat");
                        }
                    }
                }
                _ = report.tick() => {
                    for node in nodes.reporting() {
                        if let Err(err) = nodes.report_status(node).await {
                            tracing::warn!(error = %err, source = %err.source, "node status");
                        }
                    }
                }
            }
        }
    }

    fn needs_leader_election(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_follow_the_index() {
        let first = SimNode::new(0, NodeConfig::default());
        assert_eq!(first.name, "sim-node-0");
        assert_eq!(first.pod_cidr(), "10.244.0.0/24");
        assert_eq!(first.internal_ip, "172.18.0.2");
        let far = SimNode::new(300, NodeConfig::default());
        assert_eq!(far.pod_cidr(), "10.245.44.0/24");
        assert_eq!(far.internal_ip, "172.18.1.52");
        let last = SimNode::new(MAX_NODES - 1, NodeConfig::default());
        assert_eq!(last.pod_cidr(), "10.255.255.0/24");
    }

    #[test]
    fn configured_labels_and_taints_are_registered() {
        let node = SimNode::new(
            1,
            NodeConfig::default()
                .label("zone", "a")
                .taint("dedicated", "gpu", "NoSchedule"),
        );
        let object = node.object();
        let labels = object.metadata.labels.unwrap_or_default();
        assert_eq!(labels.get("zone").map(String::as_str), Some("a"));
        assert_eq!(
            labels.get("kubernetes.io/hostname").map(String::as_str),
            Some("sim-node-1")
        );
        let taints = object.spec.and_then(|s| s.taints).unwrap_or_default();
        assert_eq!(taints.len(), 1);
        assert_eq!(taints[0].value.as_deref(), Some("gpu"));
        assert_eq!(node.id("machine"), node.id("machine"));
        assert_ne!(
            node.id("machine"),
            SimNode::new(2, NodeConfig::default()).id("machine")
        );
    }
}
