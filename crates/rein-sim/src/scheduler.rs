//! The scheduler of the simulated cluster: a rein controller on Pods (and Nodes) from the
//! shared cache that binds each Pending Pod without a node, and asking for this scheduler, to
//! a node through the `binding` subresource, as kube-scheduler's default profile does.
//!
//! - Filters (`scheduler/filter.rs`): NodeUnschedulable, TaintToleration (`NoSchedule`, `NoExecute`),
//!   NodeAffinity (`nodeSelector`, required node affinity), NodePorts, NodeResourcesFit
//!   (CPU, memory, ephemeral storage, extended resources, the Pod count) against the node's
//!   allocatable minus what its non-terminal Pods request.
//! - Score: the feasible node with the most free CPU and memory (kube's `LeastAllocated`,
//!   with its non-zero defaults for Pods that request nothing); ties go to fewer Pods, then
//!   the node's name.
//! - A Pod that fits nowhere gets `PodScheduled=False`, reason `Unschedulable`, with
//!   kube-scheduler's message (`scheduler/message.rs`), and a `FailedScheduling` event; it is kept in an
//!   unschedulable set and retried when a node appears or changes in a way that matters, when
//!   a bound Pod goes away or finishes, and after [`SchedulerConfig::unschedulable_retry`].
//! - Like kube-scheduler's cache, Pods it bound are *assumed* on their node until the shared
//!   cache shows the binding, so two Pods scheduled back to back never share the last room.
//!
//! Not simulated: preemption (the message says no node has victims), inter-Pod
//! (anti-)affinity, topology spread, volumes.

mod filter;
mod message;
pub(crate) mod resources;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod};
use kube_client::core::ObjectMeta;
use rein_client::{Client, ListOptions, Patch, PatchParams, PostParams};
use rein_controller::event::{CreateEvent, DeleteEvent, UpdateEvent};
use rein_controller::handler::EventHandler;
use rein_controller::predicate::Predicate;
use rein_controller::recorder::EventRecorder;
use rein_controller::{
    Action, BuildError, Context, ControllerManagedBy, ControllerOptions, Reconciler, Request,
    RequestQueue,
};
use rein_manager::Manager;
use rein_scheme::ObjectKey;

use filter::{NodeInfo, Verdict};
pub(crate) use filter::{spec_matches_node, tolerates};
use resources::Resources;

/// The scheduler name Pods get by default (`spec.schedulerName`).
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// How the simulated scheduler behaves.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// The `spec.schedulerName` it serves (default `default-scheduler`; Pods that name none
    /// are served too when this is the default). Beside a real kube-scheduler, pick another
    /// name and set it on the Pods meant for the simulated nodes.
    pub scheduler_name: String,
    /// How long an unschedulable Pod waits before it is tried again even though nothing it
    /// could be waiting for changed (kube's `podMaxInUnschedulablePodsDuration`, 5 minutes).
    pub unschedulable_retry: Duration,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            scheduler_name: DEFAULT_SCHEDULER_NAME.to_owned(),
            unschedulable_retry: Duration::from_secs(300),
        }
    }
}

/// Adds the scheduler controller to `mgr`.
pub(crate) fn add(mgr: &Manager, config: &SchedulerConfig) -> Result<(), BuildError> {
    let shared = Shared::default();
    let scheduler = Scheduler {
        client: mgr.client(),
        recorder: mgr.event_recorder(DEFAULT_SCHEDULER_NAME),
        config: config.clone(),
        shared: shared.clone(),
    };
    ControllerManagedBy::new(mgr)
        .for_with::<Pod>(vec![Arc::new(SpecOrMetaChanged)])
        .watches::<Node>(RetryOnNodeChange(shared.clone()))
        .watches::<Pod>(RetryOnPodFreed(shared))
        .named("scheduler")
        .with_options(ControllerOptions {
            // One Pod at a time, as kube-scheduler's scheduling cycle.
            max_concurrent_reconciles: 1,
            need_leader_election: false,
            ..ControllerOptions::default()
        })
        .complete(scheduler)
        .map(|_| ())
}

/// A Pod bound by this scheduler that the cache does not show bound yet.
#[derive(Debug, Clone)]
struct Assumed {
    node: String,
    requests: Resources,
    ports: Vec<(String, String, i32)>,
}

/// The scheduler's own bookkeeping, shared with its event handlers.
#[derive(Debug, Default)]
struct Queues {
    assumed: HashMap<ObjectKey, Assumed>,
    unschedulable: BTreeSet<ObjectKey>,
}

#[derive(Debug, Default, Clone)]
struct Shared(Arc<Mutex<Queues>>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queues> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// kube's `MoveAllToActiveOrBackoffQueue`: every unschedulable Pod is tried again.
    fn retry_all(&self, queue: &RequestQueue) {
        let keys: Vec<ObjectKey> = self.lock().unschedulable.iter().cloned().collect();
        for key in keys {
            queue.add(Request::from(key));
        }
    }

    fn forget(&self, key: &ObjectKey) {
        let mut q = self.lock();
        q.unschedulable.remove(key);
        q.assumed.remove(key);
    }
}

/// Whether `pod` is bound to a node.
fn bound_node(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// Whether `pod` has finished (`Succeeded` or `Failed`).
pub(crate) fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Pod updates that may change a scheduling decision: spec, labels, annotations, deletion.
/// The scheduler's own status writes (and the kubelet's) pass over it.
struct SpecOrMetaChanged;

impl Predicate<Pod> for SpecOrMetaChanged {
    fn update(&self, e: &UpdateEvent<Pod>) -> bool {
        let (old, new) = (&e.object_old, &e.object_new);
        old.spec != new.spec
            || old.metadata.labels != new.metadata.labels
            || old.metadata.annotations != new.metadata.annotations
            || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
    }
}

/// Retries unschedulable Pods when a node appears or changes what filters look at.
struct RetryOnNodeChange(Shared);

impl EventHandler<Node> for RetryOnNodeChange {
    fn create(&self, _e: &CreateEvent<Node>, queue: &RequestQueue) {
        self.0.retry_all(queue);
    }

    fn update(&self, e: &UpdateEvent<Node>, queue: &RequestQueue) {
        let (old, new) = (&e.object_old, &e.object_new);
        let relevant = old.metadata.labels != new.metadata.labels
            || old.spec != new.spec
            || old.status.as_ref().map(|s| &s.allocatable)
                != new.status.as_ref().map(|s| &s.allocatable);
        if relevant {
            self.0.retry_all(queue);
        }
    }
}

/// Retries unschedulable Pods when a bound Pod stops holding resources: deleted, or finished.
struct RetryOnPodFreed(Shared);

impl EventHandler<Pod> for RetryOnPodFreed {
    fn update(&self, e: &UpdateEvent<Pod>, queue: &RequestQueue) {
        if bound_node(&e.object_new).is_some()
            && !is_terminal(&e.object_old)
            && is_terminal(&e.object_new)
        {
            self.0.retry_all(queue);
        }
    }

    fn delete(&self, e: &DeleteEvent<Pod>, queue: &RequestQueue) {
        if bound_node(&e.object).is_some() {
            self.0.retry_all(queue);
        }
    }
}

/// The scheduler's reconciler: one scheduling cycle per Pod.
struct Scheduler {
    client: Client,
    recorder: EventRecorder,
    config: SchedulerConfig,
    shared: Shared,
}

impl Scheduler {
    /// Whether this scheduler is to place `pod` now.
    fn responsible_for(&self, pod: &Pod) -> bool {
        let Some(spec) = &pod.spec else { return false };
        let name = spec.scheduler_name.as_deref().unwrap_or_default();
        let ours = name == self.config.scheduler_name
            || (name.is_empty() && self.config.scheduler_name == DEFAULT_SCHEDULER_NAME);
        ours && bound_node(pod).is_none()
            && pod.metadata.deletion_timestamp.is_none()
            && !is_terminal(pod)
    }

    /// Every node with what its Pods (and the Pods assumed onto it) use.
    fn node_infos<'a>(&self, nodes: &'a [Arc<Node>], pods: &[Arc<Pod>]) -> Vec<NodeInfo<'a>> {
        let mut infos: Vec<NodeInfo<'a>> = nodes
            .iter()
            .map(|node| {
                let allocatable_list = node.status.as_ref().and_then(|s| s.allocatable.as_ref());
                let allowed_pods = allocatable_list
                    .and_then(|a| a.get("pods"))
                    .and_then(|q| resources::parse(&q.0))
                    .map_or(0, |p| p.value());
                NodeInfo {
                    node,
                    allocatable: Resources::from_list(allocatable_list),
                    allowed_pods,
                    requested: Resources::default(),
                    non_zero_requested: Resources::default(),
                    pods: 0,
                    used_ports: Vec::new(),
                }
            })
            .collect();
        let index: HashMap<&str, usize> = infos
            .iter()
            .enumerate()
            .filter_map(|(i, info)| Some((info.node.metadata.name.as_deref()?, i)))
            .collect();
        let mut charge = |node: &str, requests: &Resources, ports: &[(String, String, i32)]| {
            if let Some(info) = index.get(node).and_then(|i| infos.get_mut(*i)) {
                info.requested.add(requests);
                info.non_zero_requested.add(&requests.non_zero());
                info.pods += 1;
                info.used_ports.extend_from_slice(ports);
            }
        };
        let mut queues = self.shared.lock();
        let mut seen = BTreeSet::new();
        for pod in pods {
            let key = ObjectKey::from_object(pod.as_ref());
            let bound = bound_node(pod);
            if bound.is_some() {
                // The cache shows the binding: the assumption is confirmed.
                queues.assumed.remove(&key);
            }
            seen.insert(key);
            let (Some(node), false) = (bound, is_terminal(pod)) else {
                continue;
            };
            let Some(spec) = &pod.spec else { continue };
            charge(
                node,
                &resources::pod_requests(spec),
                &filter::host_ports(pod),
            );
        }
        // Assumed Pods the cache no longer has were deleted meanwhile.
        queues.assumed.retain(|key, _| seen.contains(key));
        for assumed in queues.assumed.values() {
            charge(&assumed.node, &assumed.requests, &assumed.ports);
        }
        infos
    }

    /// Sets `PodScheduled=False` (unless it already says the same) and records the event.
    async fn report_unschedulable(
        &self,
        pod: &Pod,
        reason: &str,
        message: &str,
    ) -> Result<(), rein_client::Error> {
        let current = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"));
        let same = current.is_some_and(|c| {
            c.status == "False"
                && c.reason.as_deref() == Some(reason)
                && c.message.as_deref() == Some(message)
        });
        if reason == "Unschedulable" {
            self.recorder.warning(pod, "FailedScheduling", message);
        }
        if same {
            return Ok(());
        }
        let transition = match current {
            Some(c) if c.status == "False" => c.last_transition_time.clone(),
            _ => None,
        }
        .unwrap_or_else(now);
        let patch = serde_json::json!({
            "status": {
                "conditions": [{
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                    "lastProbeTime": null,
                    "lastTransitionTime": transition,
                }]
            }
        });
        let key = ObjectKey::from_object(pod);
        match self
            .client
            .status()
            .patch::<Pod, _>(&key, &Patch::Strategic(patch), &PatchParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(err) if err.is_not_found() => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// POSTs the Binding; `false` when the Pod is gone or already bound (nothing to do).
    async fn bind(&self, pod: &Pod, node: &str) -> Result<bool, rein_client::Error> {
        let binding = Binding {
            metadata: ObjectMeta {
                name: pod.metadata.name.clone(),
                namespace: pod.metadata.namespace.clone(),
                uid: pod.metadata.uid.clone(),
                ..ObjectMeta::default()
            },
            target: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(node.to_owned()),
                ..ObjectReference::default()
            },
        };
        let key = ObjectKey::from_object(pod);
        let posted: Result<serde_json::Value, _> = self
            .client
            .sub_resource("binding")
            .create::<Pod, _, _>(&key, &binding, &PostParams::default())
            .await;
        match posted {
            Ok(_) => Ok(true),
            Err(err) if err.is_not_found() || err.is_conflict() => Ok(false),
            Err(err) => Err(err),
        }
    }
}

/// Now, as an API time.
fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now())
}

/// kube's `LeastAllocated` score for one resource: the free share after placing the Pod,
/// 0 to 100.
fn least_allocated(allocatable: i64, requested: i64) -> i64 {
    if allocatable <= 0 || requested > allocatable {
        return 0;
    }
    (allocatable - requested).saturating_mul(100) / allocatable
}

#[async_trait]
impl Reconciler for Scheduler {
    type Error = rein_client::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Self::Error> {
        let pod = match self.client.get::<Pod>(&req.key).await {
            Ok(pod) => pod,
            Err(err) if err.is_not_found() => {
                self.shared.forget(&req.key);
                return Ok(Action::done());
            }
            Err(err) => return Err(err),
        };
        if !self.responsible_for(&pod) {
            self.shared.lock().unschedulable.remove(&req.key);
            return Ok(Action::done());
        }
        if self.shared.lock().assumed.contains_key(&req.key) {
            // Bound already; the cache has not caught up.
            return Ok(Action::done());
        }
        let spec = pod.spec.clone().unwrap_or_default();
        if spec
            .scheduling_gates
            .as_ref()
            .is_some_and(|g| !g.is_empty())
        {
            self.report_unschedulable(
                &pod,
                "SchedulingGated",
                "Scheduling is blocked due to non-empty scheduling gates",
            )
            .await?;
            return Ok(Action::done());
        }

        let nodes = self.client.list::<Node>(&ListOptions::default()).await?;
        let pods = self.client.list::<Pod>(&ListOptions::default()).await?;
        let requests = resources::pod_requests(&spec);
        let infos = self.node_infos(&nodes.items, &pods.items);
        let verdicts: Vec<Verdict> = infos
            .iter()
            .map(|info| filter::filter(&pod, &requests, info))
            .collect();
        let wanted = requests.non_zero();
        let best = infos
            .iter()
            .zip(&verdicts)
            .filter(|(_, v)| **v == Verdict::Fits)
            .map(|(info, _)| {
                let cpu = least_allocated(
                    info.allocatable.milli_cpu,
                    info.non_zero_requested.milli_cpu + wanted.milli_cpu,
                );
                let memory = least_allocated(
                    info.allocatable.memory,
                    info.non_zero_requested.memory + wanted.memory,
                );
                (info, (cpu + memory) / 2)
            })
            // Highest score, then fewest Pods, then the first name.
            .min_by(|(a, sa), (b, sb)| {
                sb.cmp(sa)
                    .then(a.pods.cmp(&b.pods))
                    .then(a.node.metadata.name.cmp(&b.node.metadata.name))
            })
            .map(|(info, _)| info.node.metadata.name.clone().unwrap_or_default());

        let Some(node) = best else {
            let may_preempt = spec.preemption_policy.as_deref() != Some("Never");
            let message = message::unschedulable(&verdicts, may_preempt);
            tracing::debug!(pod = %req.key, %message, "unschedulable");
            self.shared.lock().unschedulable.insert(req.key.clone());
            self.report_unschedulable(&pod, "Unschedulable", &message)
                .await?;
            return Ok(Action::requeue_after(self.config.unschedulable_retry));
        };
        self.shared.lock().unschedulable.remove(&req.key);
        if self.bind(&pod, &node).await? {
            self.shared.lock().assumed.insert(
                req.key.clone(),
                Assumed {
                    node: node.clone(),
                    requests,
                    ports: filter::host_ports(&pod),
                },
            );
            self.recorder.normal(
                pod.as_ref(),
                "Scheduled",
                &format!("Successfully assigned {} to {node}", req.key),
            );
        }
        Ok(Action::done())
    }
}
