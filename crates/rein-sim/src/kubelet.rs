//! The kubelet of the simulated nodes: a rein controller on the Pods bound to a simulated
//! node (and on the nodes' readiness) that plays each Pod's life and writes it through the
//! `status` subresource as a kubelet's status manager does, and finishes graceful deletions.
//!
//! A Pod bound to a simulated node is accepted (`startTime`), waits `start_latency` for its
//! sandbox and images (`ContainerCreating` / `PodInitializing`), gets a `podIP` from its
//! node's Pod CIDR (unique per node), runs its init containers one after the other (each
//! exits 0, reason `Completed`; sidecars keep running), then its containers: `Running`, with
//! `containerStatuses` (image, `imageID`, `containerID`, `ready`, `started`, `restartCount`,
//! `state.running.startedAt`), `qosClass`, and the conditions `PodReadyToStartContainers`,
//! `Initialized`, `ContainersReady`, `Ready` and `PodScheduled`. Containers run until the Pod
//! is deleted, except that Pods owned by a Job exit 0 after
//! [`KubeletConfig::job_pod_duration`]; annotations change that per Pod:
//!
//! | annotation | effect |
//! |---|---|
//! | [`START_LATENCY`] `sim.rein.dev/start-latency: 2s` | time before the first container starts |
//! | [`INIT_DURATION`] `sim.rein.dev/init-duration: 1s` | how long each init container runs |
//! | [`RUN_FOR`] `sim.rein.dev/run-for: 5s` | the containers exit after this |
//! | [`EXIT_CODE`] `sim.rein.dev/exit-code: "3"` | their exit code (`Succeeded` on 0, else `Failed`, when not restarted) |
//! | [`CRASH_LOOP`] `sim.rein.dev/crash-loop: "true"` | they crash (exit 1) after `run-for` (default [`KubeletConfig::crash_after`]), restarted per `restartPolicy` with back-off: `CrashLoopBackOff`, `restartCount` rising |
//! | [`IMAGE_PULL_ERROR`] `sim.rein.dev/image-pull-error: "true"` | `ErrImagePull`, then `ImagePullBackOff`; the Pod stays `Pending` |
//! | [`NEVER_READY`] `sim.rein.dev/never-ready: "true"` | the containers run but are never ready |
//! | [`TERMINATION_DELAY`] `sim.rein.dev/termination-delay: 1s` | on deletion the containers stop after this (at most the grace period; default the whole grace period) |
//!
//! A Pod being deleted (`deletionTimestamp`) with a grace period is finished with a grace-0
//! delete once its containers have stopped: when the grace period has passed, or after
//! [`TERMINATION_DELAY`]. (A Pod deleted without grace the API server removes itself.) On a
//! NotReady node ([`crate::cluster::SimCluster::set_health`]) the containers keep running but
//! are not ready; on an unreachable one the kubelet does nothing until the node is back.
//!
//! The kubelet also records the events a kubelet does (`Pulled`, `Created`, `Started`,
//! `BackOff`, `Failed`, `Killing`). Its timings are tokio timers in the caller's runtime:
//! each reconcile writes the status for now and asks to come back when it next changes.

mod behaviour;
mod status;
mod timeline;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ContainerStatus, Node, Pod, PodStatus};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use rein_client::{Client, DeleteParams, ListOptions, PostParams, Preconditions};
use rein_controller::event::{CreateEvent, DeleteEvent, UpdateEvent};
use rein_controller::handler::EnqueueRequestsFromAsyncMapFunc;
use rein_controller::predicate::Predicate;
use rein_controller::recorder::{EventRecorder, EventType, RecorderOptions};
use rein_controller::{
    Action, BuildError, Context, ControllerManagedBy, ControllerOptions, Reconciler, Request,
};
use rein_manager::Manager;
use rein_scheme::ObjectKey;
use tokio::time::Instant;

pub use behaviour::{
    CRASH_LOOP, EXIT_CODE, IMAGE_PULL_ERROR, INIT_DURATION, NEVER_READY, RUN_FOR, START_LATENCY,
    TERMINATION_DELAY,
};

use crate::nodes::{NodeHealth, Nodes, SimNode, pods_on};
use crate::scheduler::is_terminal;
use behaviour::Planned;
use timeline::{Phase, Snapshot};

/// The simulated kubelet's defaults (each Pod may override them with annotations).
#[derive(Debug, Clone, PartialEq)]
pub struct KubeletConfig {
    /// From acceptance to the first container start: sandbox and image pulls (default 0).
    pub start_latency: Duration,
    /// How long each init container runs (default 0: they complete at once, in order).
    pub init_container_duration: Duration,
    /// How long the containers of a Pod owned by a Job run before they exit 0 (default 1 s).
    pub job_pod_duration: Duration,
    /// How long a crash-looping container runs before each crash (default 1 s).
    pub crash_after: Duration,
    /// The first restart back-off after a crash (the kubelet's 10 s); it doubles.
    pub restart_backoff: Duration,
    /// The longest restart back-off (the kubelet's 5 min).
    pub max_restart_backoff: Duration,
}

impl Default for KubeletConfig {
    fn default() -> Self {
        KubeletConfig {
            start_latency: Duration::ZERO,
            init_container_duration: Duration::ZERO,
            job_pod_duration: Duration::from_secs(1),
            crash_after: Duration::from_secs(1),
            restart_backoff: Duration::from_secs(10),
            max_restart_backoff: Duration::from_secs(300),
        }
    }
}

impl KubeletConfig {
    /// Why the configuration cannot be used, if it cannot.
    pub(crate) fn invalid(&self) -> Option<&'static str> {
        if self.restart_backoff.is_zero() {
            return Some("the restart back-off must be positive");
        }
        if self.max_restart_backoff < self.restart_backoff {
            return Some("the longest restart back-off is shorter than the first");
        }
        None
    }
}

/// Adds the kubelet controller for the simulated nodes to `mgr`.
pub(crate) fn add(mgr: &Manager, nodes: Nodes, config: &KubeletConfig) -> Result<(), BuildError> {
    let client = mgr.client();
    let map_client = client.clone();
    ControllerManagedBy::new(mgr)
        .for_with::<Pod>(vec![Arc::new(OnSimulatedNode(nodes.clone()))])
        .watches_with::<Node>(
            EnqueueRequestsFromAsyncMapFunc::new(move |node: Arc<Node>| {
                let client = map_client.clone();
                async move { pods_on(&client, node.metadata.name.as_deref()).await }
            }),
            vec![Arc::new(ReadyChanged)],
        )
        .named("kubelet")
        .with_options(ControllerOptions {
            max_concurrent_reconciles: 8,
            need_leader_election: false,
            ..ControllerOptions::default()
        })
        .complete(Kubelet {
            kube: mgr.kube_client(),
            client,
            nodes,
            config: config.clone(),
            state: Mutex::new(State::default()),
        })
        .map(|_| ())
}

/// Pods bound to a simulated node.
struct OnSimulatedNode(Nodes);

impl OnSimulatedNode {
    fn ours(&self, pod: &Pod) -> bool {
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| self.0.get(n).is_some())
    }
}

impl Predicate<Pod> for OnSimulatedNode {
    fn create(&self, e: &CreateEvent<Pod>) -> bool {
        self.ours(&e.object)
    }
    fn update(&self, e: &UpdateEvent<Pod>) -> bool {
        self.ours(&e.object_new)
    }
    fn delete(&self, e: &DeleteEvent<Pod>) -> bool {
        self.ours(&e.object)
    }
}

/// Node updates that change its `Ready` condition.
struct ReadyChanged;

impl Predicate<Node> for ReadyChanged {
    fn update(&self, e: &UpdateEvent<Node>) -> bool {
        let ready = |n: &Node| {
            n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
                .map(|c| c.status.clone())
        };
        ready(&e.object_old) != ready(&e.object_new)
    }
}

/// What the kubelet remembers of one Pod.
#[derive(Debug)]
struct Record {
    uid: String,
    node: String,
    /// When it was accepted, on the wall clock (status times) and on tokio's (timers).
    accepted: Timestamp,
    accepted_at: Instant,
    planned: Planned,
    ip: Option<u8>,
    killing_reported: bool,
}

/// The addresses handed out on one node: host octet → Pod.
#[derive(Debug, Default)]
struct NodeIps {
    used: BTreeMap<u8, ObjectKey>,
    last: u8,
    seeded: bool,
}

#[derive(Debug, Default)]
struct State {
    pods: HashMap<ObjectKey, Record>,
    ips: HashMap<String, NodeIps>,
    recorders: HashMap<String, EventRecorder>,
}

impl State {
    /// Forgets a Pod and frees its address.
    fn forget(&mut self, key: &ObjectKey) {
        if let Some(record) = self.pods.remove(key)
            && let Some(octet) = record.ip
            && let Some(ips) = self.ips.get_mut(&record.node)
            && ips.used.get(&octet) == Some(key)
        {
            ips.used.remove(&octet);
        }
    }
}

struct Kubelet {
    kube: kube_client::Client,
    client: Client,
    nodes: Nodes,
    config: KubeletConfig,
    state: Mutex<State>,
}

/// The last octet of `ip` when it lies in `prefix`'s /24.
fn octet_in(ip: &str, prefix: [u8; 3]) -> Option<u8> {
    let parts: Vec<u8> = ip
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    match parts.as_slice() {
        [a, b, c, d] if [*a, *b, *c] == prefix && (2..=254).contains(d) => Some(*d),
        _ => None,
    }
}

fn format_ip(prefix: [u8; 3], octet: u8) -> String {
    let [a, b, c] = prefix;
    format!("{a}.{b}.{c}.{octet}")
}

impl Kubelet {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The recorder for `node`'s kubelet (made on first use, inside the runtime).
    fn recorder(&self, node: &str) -> EventRecorder {
        self.lock()
            .recorders
            .entry(node.to_owned())
            .or_insert_with(|| {
                EventRecorder::new(
                    self.kube.clone(),
                    "kubelet",
                    RecorderOptions {
                        host: Some(node.to_owned()),
                        ..RecorderOptions::default()
                    },
                )
            })
            .clone()
    }

    /// The Pod's record, made when first seen: accepted now, or — when its status already
    /// has a `startTime` (a restarted simulation) — then. Returns whether it is new.
    fn ensure_record(&self, key: &ObjectKey, pod: &Pod, node: &str) -> bool {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let mut state = self.lock();
        if state.pods.get(key).is_some_and(|r| r.uid == uid) {
            return false;
        }
        state.forget(key);
        let now = Timestamp::now();
        let started = pod
            .status
            .as_ref()
            .and_then(|s| s.start_time.as_ref())
            .map(|t| t.0);
        let (accepted, accepted_at) = match started {
            Some(t) if t <= now => {
                let ago = now.duration_since(t).unsigned_abs();
                let at = Instant::now().checked_sub(ago).unwrap_or_else(Instant::now);
                (t, at)
            }
            _ => (now, Instant::now()),
        };
        state.pods.insert(
            key.clone(),
            Record {
                uid,
                node: node.to_owned(),
                accepted,
                accepted_at,
                planned: behaviour::plan(pod, &self.config),
                ip: None,
                killing_reported: false,
            },
        );
        true
    }

    /// The Pod's address on `node`: the one it has, or the next free one of the node's /24.
    /// `None` when the node has none left.
    async fn pod_ip(
        &self,
        key: &ObjectKey,
        pod: &Pod,
        node: &SimNode,
    ) -> Result<Option<String>, rein_client::Error> {
        if let Some(octet) = self.lock().pods.get(key).and_then(|r| r.ip) {
            return Ok(Some(format_ip(node.pod_prefix, octet)));
        }
        let seeded = self
            .lock()
            .ips
            .get(&node.name)
            .is_some_and(|ips| ips.seeded);
        // A restarted simulation: learn which addresses the node's Pods already have.
        let existing = if seeded {
            None
        } else {
            Some(self.client.list::<Pod>(&ListOptions::default()).await?)
        };
        let mut state = self.lock();
        let ips = state.ips.entry(node.name.clone()).or_default();
        if let Some(existing) = existing
            && !ips.seeded
        {
            for other in &existing.items {
                let on_node = other.spec.as_ref().and_then(|s| s.node_name.as_deref())
                    == Some(node.name.as_str());
                let ip = other.status.as_ref().and_then(|s| s.pod_ip.as_deref());
                let other_key = ObjectKey::from_object(other.as_ref());
                if let (true, false, Some(octet)) = (
                    on_node,
                    is_terminal(other),
                    ip.and_then(|ip| octet_in(ip, node.pod_prefix)),
                ) && other_key != *key
                {
                    ips.used.entry(octet).or_insert(other_key);
                }
            }
            ips.seeded = true;
        }
        let own = pod
            .status
            .as_ref()
            .and_then(|s| s.pod_ip.as_deref())
            .and_then(|ip| octet_in(ip, node.pod_prefix))
            .filter(|o| ips.used.get(o).is_none_or(|k| k == key));
        let octet = own.or_else(|| {
            // host-local's order: the next free address after the last one handed out.
            (0..253u16)
                .map(|i| {
                    let start = u16::from(ips.last.max(1)) - 1;
                    u8::try_from((start + i) % 253 + 2).unwrap_or(2)
                })
                .find(|o| !ips.used.contains_key(o))
        });
        let Some(octet) = octet else {
            return Ok(None);
        };
        ips.used.insert(octet, key.clone());
        ips.last = octet;
        if let Some(record) = state.pods.get_mut(key) {
            record.ip = Some(octet);
        }
        Ok(Some(format_ip(node.pod_prefix, octet)))
    }

    /// Finishes a Pod being deleted once its containers have stopped.
    async fn terminate(
        &self,
        key: &ObjectKey,
        pod: &Pod,
        node: &str,
    ) -> Result<Action, rein_client::Error> {
        let deadline = pod
            .metadata
            .deletion_timestamp
            .as_ref()
            .map_or_else(Timestamp::now, |t| t.0);
        let grace = pod
            .metadata
            .deletion_grace_period_seconds
            .unwrap_or(0)
            .max(0);
        if grace == 0 {
            // Deleted without grace, or this kubelet's delete is done: only finalizers hold
            // it now, and they are not the kubelet's.
            self.lock().forget(key);
            return Ok(Action::done());
        }
        let delay = self
            .lock()
            .pods
            .get(key)
            .and_then(|r| r.planned.termination_delay);
        let stop_at = match delay {
            Some(delay) => {
                let began = deadline
                    .checked_sub(SignedDuration::from_secs(grace))
                    .unwrap_or(deadline);
                let delay = SignedDuration::try_from(delay).unwrap_or(SignedDuration::MAX);
                began.checked_add(delay).unwrap_or(deadline).min(deadline)
            }
            None => deadline,
        };
        let first_sight = match self.lock().pods.get_mut(key) {
            Some(r) => !std::mem::replace(&mut r.killing_reported, true),
            None => true,
        };
        if first_sight && !is_terminal(pod) {
            let recorder = self.recorder(node);
            for c in pod.spec.iter().flat_map(|s| s.containers.iter()) {
                recorder.normal(pod, "Killing", &format!("Stopping container {}", c.name));
            }
        }
        let now = Timestamp::now();
        if now < stop_at {
            let wait = now.duration_until(stop_at).unsigned_abs();
            return Ok(Action::requeue_after(wait.max(Duration::from_millis(10))));
        }
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match self.client.delete::<Pod>(key, &params).await {
            Ok(()) => {}
            Err(err) if err.is_not_found() || err.is_conflict() => {}
            Err(err) => return Err(err),
        }
        self.lock().forget(key);
        Ok(Action::done())
    }

    /// Records the events a kubelet records for what changed between two statuses.
    fn record_transitions(&self, pod: &Pod, node: &str, old: Option<&PodStatus>, new: &PodStatus) {
        let empty = Vec::new();
        let old_all: Vec<&ContainerStatus> = old
            .iter()
            .flat_map(|s| {
                s.init_container_statuses
                    .iter()
                    .flatten()
                    .chain(s.container_statuses.iter().flatten())
            })
            .collect();
        let new_all = new
            .init_container_statuses
            .as_ref()
            .unwrap_or(&empty)
            .iter()
            .chain(new.container_statuses.as_ref().unwrap_or(&empty));
        let images: HashMap<&str, &str> = pod
            .spec
            .iter()
            .flat_map(|s| {
                s.containers
                    .iter()
                    .chain(s.init_containers.iter().flatten())
            })
            .map(|c| (c.name.as_str(), c.image.as_deref().unwrap_or_default()))
            .collect();
        let mut events: Vec<(EventType, &str, String)> = Vec::new();
        for c in new_all {
            let before = old_all.iter().find(|o| o.name == c.name);
            let image = images.get(c.name.as_str()).copied().unwrap_or_default();
            let state = c.state.as_ref();
            let waiting = |s: Option<&k8s_openapi::api::core::v1::ContainerState>| {
                s.and_then(|s| s.waiting.as_ref())
                    .and_then(|w| w.reason.clone())
            };
            let was_waiting = waiting(before.and_then(|b| b.state.as_ref()));
            if state.and_then(|s| s.running.as_ref()).is_some()
                && before.and_then(|b| b.container_id.as_ref()) != c.container_id.as_ref()
            {
                events.push((
                    EventType::Normal,
                    "Pulled",
                    format!("Container image \"{image}\" already present on machine"),
                ));
                events.push((
                    EventType::Normal,
                    "Created",
                    format!("Created container: {}", c.name),
                ));
                events.push((
                    EventType::Normal,
                    "Started",
                    format!("Started container {}", c.name),
                ));
            }
            let now_waiting = waiting(state);
            if now_waiting != was_waiting {
                match now_waiting.as_deref() {
                    Some("CrashLoopBackOff") => events.push((
                        EventType::Warning,
                        "BackOff",
                        format!(
                            "Back-off restarting failed container {} in pod {}",
                            c.name,
                            pod_id(pod)
                        ),
                    )),
                    Some("ErrImagePull") => {
                        events.push((
                            EventType::Normal,
                            "Pulling",
                            format!("Pulling image \"{image}\""),
                        ));
                        events.push((
                            EventType::Warning,
                            "Failed",
                            format!("Failed to pull image \"{image}\": not found (simulated)"),
                        ));
                        events.push((EventType::Warning, "Failed", "Error: ErrImagePull".into()));
                    }
                    Some("ImagePullBackOff") => {
                        events.push((
                            EventType::Normal,
                            "BackOff",
                            format!("Back-off pulling image \"{image}\""),
                        ));
                        events.push((
                            EventType::Warning,
                            "Failed",
                            "Error: ImagePullBackOff".into(),
                        ));
                    }
                    _ => {}
                }
            }
        }
        if events.is_empty() {
            return;
        }
        let recorder = self.recorder(node);
        for (kind, reason, message) in events {
            recorder.event(pod, kind, reason, &message);
        }
    }
}

/// `name_namespace(uid)`, as the kubelet names Pods in messages.
fn pod_id(pod: &Pod) -> String {
    let m = &pod.metadata;
    format!(
        "{}_{}({})",
        m.name.as_deref().unwrap_or_default(),
        m.namespace.as_deref().unwrap_or_default(),
        m.uid.as_deref().unwrap_or_default()
    )
}

#[async_trait]
impl Reconciler for Kubelet {
    type Error = rein_client::Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Self::Error> {
        let key = &req.key;
        let pod = match self.client.get::<Pod>(key).await {
            Ok(pod) => pod,
            Err(err) if err.is_not_found() => {
                self.lock().forget(key);
                return Ok(Action::done());
            }
            Err(err) => return Err(err),
        };
        let node_name = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        let Some(node) = node_name
            .as_deref()
            .and_then(|n| self.nodes.get(n))
            .cloned()
        else {
            self.lock().forget(key);
            return Ok(Action::done());
        };
        let health = self.nodes.health_of(&node.name);
        if health == NodeHealth::Unreachable {
            // A kubelet that stopped does nothing; the node's Ready change requeues its Pods.
            return Ok(Action::done());
        }
        let new = self.ensure_record(key, &pod, &node.name);
        if pod.metadata.deletion_timestamp.is_some() {
            return self.terminate(key, &pod, &node.name).await;
        }
        if is_terminal(&pod) {
            self.lock().forget(key);
            return Ok(Action::done());
        }
        let (plan, accepted, accepted_at, invalid) = {
            let state = self.lock();
            let Some(record) = state.pods.get(key) else {
                return Ok(Action::done());
            };
            (
                record.planned.plan.clone(),
                record.accepted,
                record.accepted_at,
                record.planned.invalid.clone(),
            )
        };
        if new && !invalid.is_empty() {
            let recorder = self.recorder(&node.name);
            for (name, value) in &invalid {
                recorder.warning(
                    pod.as_ref(),
                    "InvalidSimAnnotation",
                    &format!("ignoring annotation {name}={value:?}"),
                );
            }
        }
        let spec = pod.spec.clone().unwrap_or_default();
        let sidecars: Vec<bool> = spec
            .init_containers
            .iter()
            .flatten()
            .map(crate::scheduler::resources::is_sidecar)
            .collect();
        let elapsed = accepted_at.elapsed();
        let snapshot: Snapshot =
            timeline::snapshot(&plan, &sidecars, spec.containers.len(), elapsed);
        let pod_ip = if snapshot.sandbox {
            match self.pod_ip(key, &pod, &node).await? {
                Some(ip) => Some(ip),
                None => {
                    self.recorder(&node.name).warning(
                        pod.as_ref(),
                        "FailedCreatePodSandBox",
                        "Failed to create pod sandbox: no IP addresses available in range set",
                    );
                    return Ok(Action::requeue_after(Duration::from_secs(10)));
                }
            }
        } else {
            None
        };
        let inputs = status::Inputs {
            pod: &pod,
            snapshot: &snapshot,
            accepted,
            now: Timestamp::now(),
            host_ip: &node.internal_ip,
            pod_ip: pod_ip.as_deref(),
            node_ready: health == NodeHealth::Ready,
        };
        let built = status::build(&inputs);
        if pod.status.as_ref() != Some(&built) {
            let mut updated = Arc::unwrap_or_clone(pod.clone());
            updated.status = Some(built.clone());
            match self
                .client
                .status()
                .update(&updated, &PostParams::default())
                .await
            {
                Ok(_) => {}
                Err(err) if err.is_not_found() => {
                    self.lock().forget(key);
                    return Ok(Action::done());
                }
                Err(err) => return Err(err),
            }
            self.record_transitions(&pod, &node.name, pod.status.as_ref(), &built);
        }
        if matches!(snapshot.phase, Phase::Succeeded | Phase::Failed) {
            self.lock().forget(key);
            return Ok(Action::done());
        }
        Ok(match snapshot.next {
            Some(next) => {
                let wait = next.saturating_sub(accepted_at.elapsed());
                Action::requeue_after(wait.max(Duration::from_millis(1)))
            }
            None => Action::done(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_addresses_stay_in_the_node_range() {
        let prefix = [10, 244, 3];
        assert_eq!(octet_in("10.244.3.7", prefix), Some(7));
        assert_eq!(octet_in("10.244.4.7", prefix), None);
        assert_eq!(octet_in("10.244.3.255", prefix), None);
        assert_eq!(octet_in("10.244.3.1", prefix), None);
        assert_eq!(octet_in("not an ip", prefix), None);
        assert_eq!(format_ip(prefix, 9), "10.244.3.9");
    }

    #[test]
    fn the_default_configuration_is_valid() {
        assert_eq!(KubeletConfig::default().invalid(), None);
        let zero = KubeletConfig {
            restart_backoff: Duration::ZERO,
            ..KubeletConfig::default()
        };
        assert!(zero.invalid().is_some());
    }
}
