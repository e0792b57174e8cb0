//! The DaemonSet controller of the simulated cluster, as kube's
//! `pkg/controller/daemon/daemon_controller.go` behaves: one Pod per node that should run the
//! set (`placement.rs`: the template's `nodeName`, `nodeSelector`, required node affinity, and
//! taints against its tolerations plus those every daemon Pod gets), created from the
//! template (`generateName: <ds>-`) with the daemon tolerations, the `controller-revision-hash`
//! label of the current ControllerRevision (`history.rs`) and a required node affinity
//! `metadata.name In [<node>]` that pins it to its node (the scheduler binds it); Pods on
//! nodes that should not run it are deleted (those that tolerate the node's `NoExecute`
//! taints may stay), failed daemon Pods are replaced with a per-node back-off
//! (`FailedDaemonPod`), succeeded ones too (`SucceededDaemonPod`), extra Pods on a node are
//! pruned; `RollingUpdate` (`rolling.rs`, `maxUnavailable` and `maxSurge`) or `OnDelete`
//! rolls out a new template; the status (`status.rs`) has `desiredNumberScheduled`,
//! `currentNumberScheduled`, `numberMisscheduled`, `numberReady`, `updatedNumberScheduled`,
//! `numberAvailable`, `numberUnavailable` and `observedGeneration`, so
//! `kubectl rollout status daemonset/<name>` follows it. Events: `SuccessfulCreate`,
//! `FailedCreate`, `SuccessfulDelete`, `FailedDelete`, `SelectingAll`.
//!
//! As in the ReplicaSet controller, kube's expectations are not needed: the manager's client
//! reads its own writes. A sync that created or deleted Pods leaves the rolling update to the
//! next one, as kube's unsatisfied expectations do.

mod backoff;
mod history;
mod placement;
mod rolling;
mod status;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use rein_client::controllerutil::set_controller_reference;
use rein_client::{Client, ListOptions, ignore_not_found};
use rein_controller::event::UpdateEvent;
use rein_controller::handler::EnqueueRequestsFromAsyncMapFunc;
use rein_controller::predicate::Predicate;
use rein_controller::recorder::EventRecorder;
use rein_controller::{Action, BuildError, Context, ControllerManagedBy, Reconciler, Request};
use rein_manager::Manager;
use rein_scheme::labels::Selector;
use tokio::time::Instant;

use super::Error;
use super::claim::{Claim, describe};
use super::podcontrol::{PodControl, SLOW_START_INITIAL_BATCH_SIZE, slow_start_batch};
use super::pods::{self, controller_of, generate_name_prefix};
use super::revision::POD_REVISION_LABEL;

/// The controller's name (as kube-controller-manager names it).
pub const NAME: &str = "daemonset";

/// The component its events are recorded as.
const COMPONENT: &str = "daemonset-controller";

/// `BurstReplicas`: at most this many Pods are created or deleted in one sync.
const BURST_REPLICAS: usize = 250;

/// `apps.DeprecatedTemplateGeneration`: the template generation kube-apiserver once kept.
const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";

/// `extensions.DaemonSetTemplateGenerationKey`: the Pod label with that generation.
const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";

/// Adds the DaemonSet controller to `mgr`.
pub fn add(mgr: &Manager) -> Result<(), BuildError> {
    let client = mgr.client();
    let orphans = {
        let client = client.clone();
        EnqueueRequestsFromAsyncMapFunc::new(move |pod: Arc<Pod>| {
            let client = client.clone();
            async move { selecting_daemon_sets(&client, &pod).await }
        })
    };
    let every_set = {
        let client = client.clone();
        EnqueueRequestsFromAsyncMapFunc::new(move |_node: Arc<Node>| {
            let client = client.clone();
            async move { all_daemon_sets(&client).await }
        })
    };
    let controller = DaemonSetController {
        pods: PodControl {
            client: client.clone(),
            recorder: mgr.event_recorder(COMPONENT),
        },
        recorder: mgr.event_recorder(COMPONENT),
        backoff: backoff::FailedPodsBackoff::default(),
        client,
    };
    ControllerManagedBy::new(mgr)
        .for_::<DaemonSet>()
        .owns::<Pod>()
        .watches::<Pod>(orphans)
        .owns::<ControllerRevision>()
        .watches_with::<Node>(every_set, vec![Arc::new(PlacementChanged)])
        .named(NAME)
        .with_options(super::controller_options())
        .complete(controller)
        .map(|_| ())
}

/// Node updates that may change where DaemonSets run (labels, taints, cordon); heartbeats
/// pass over it.
struct PlacementChanged;

impl Predicate<Node> for PlacementChanged {
    fn update(&self, e: &UpdateEvent<Node>) -> bool {
        placement::placement_changed(&e.object_old, &e.object_new)
    }
}

/// Every DaemonSet (a node appeared or changed: kube re-checks each set against it).
async fn all_daemon_sets(client: &Client) -> Vec<Request> {
    let Ok(list) = client.list::<DaemonSet>(&ListOptions::default()).await else {
        return Vec::new();
    };
    list.items
        .iter()
        .map(|ds| Request::from_object(&**ds))
        .collect()
}

/// `getDaemonSetsForPod`: for a Pod without a controller, the DaemonSets whose selector
/// matches it.
async fn selecting_daemon_sets(client: &Client, pod: &Pod) -> Vec<Request> {
    if controller_of(&pod.metadata).is_some() {
        return Vec::new();
    }
    let Some(namespace) = pod.metadata.namespace.as_deref() else {
        return Vec::new();
    };
    let Ok(list) = client
        .list::<DaemonSet>(&ListOptions::default().namespace(namespace))
        .await
    else {
        return Vec::new();
    };
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    list.items
        .iter()
        .filter(|ds| {
            ds.spec
                .as_ref()
                .and_then(|s| Selector::from_label_selector(&s.selector).ok())
                .is_some_and(|sel| !sel.is_everything() && sel.matches(&labels))
        })
        .map(|ds| Request::from_object(&**ds))
        .collect()
}

/// The set's Pod template.
fn template(ds: &DaemonSet) -> PodTemplateSpec {
    ds.spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default()
}

fn min_ready_seconds(ds: &DaemonSet) -> i32 {
    ds.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

/// `GetTemplateGeneration`: the deprecated template generation annotation, if it parses.
fn template_generation(ds: &DaemonSet) -> Option<i64> {
    ds.metadata
        .annotations
        .as_ref()?
        .get(TEMPLATE_GENERATION_ANNOTATION)?
        .parse()
        .ok()
}

/// `IsPodUpdated`: the Pod carries the current hash (or the current template generation).
fn is_updated(ds: &DaemonSet, pod: &Pod, hash: &str) -> bool {
    let labels = pod.metadata.labels.as_ref();
    let label = |key: &str| labels.and_then(|l| l.get(key));
    let generation_matches = template_generation(ds)
        .is_some_and(|g| label(TEMPLATE_GENERATION_LABEL) == Some(&g.to_string()));
    let hash_matches =
        !hash.is_empty() && label(POD_REVISION_LABEL).map(String::as_str) == Some(hash);
    hash_matches || generation_matches
}

/// `podByCreationTimestampAndPhase`: scheduled Pods first, then the oldest, then by name.
fn by_creation_and_phase(a: &Pod, b: &Pod) -> Ordering {
    let scheduled = |p: &Pod| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| !n.is_empty())
    };
    scheduled(b)
        .cmp(&scheduled(a))
        .then_with(|| {
            let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
            created(a).cmp(&created(b))
        })
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// The controller reference to `ds` (`metav1.NewControllerRef`).
fn controller_reference(client: &Client, ds: &DaemonSet) -> Result<OwnerReference, Error> {
    let mut probe = Pod::default();
    probe.metadata.namespace = ds.metadata.namespace.clone();
    set_controller_reference(ds, &mut probe, client.scheme())?;
    controller_of(&probe.metadata)
        .cloned()
        .ok_or_else(|| Error::Invalid {
            object: describe(ds),
            problem: "no controller reference could be made".into(),
        })
}

struct DaemonSetController {
    client: Client,
    pods: PodControl,
    recorder: EventRecorder,
    backoff: backoff::FailedPodsBackoff,
}

#[async_trait]
impl Reconciler for DaemonSetController {
    type Error = Error;

    async fn reconcile(&self, _ctx: Context, req: Request) -> Result<Action, Error> {
        let Some(ds) = ignore_not_found(self.client.get::<DaemonSet>(&req.key).await)? else {
            return Ok(Action::done());
        };
        self.sync(&ds).await
    }
}

/// What one sync of the Pods did.
#[derive(Debug, Default)]
struct Outcome {
    /// Whether it created or deleted Pods (kube's expectations are then unsatisfied).
    wrote: bool,
    /// When to come back for a failed Pod in back-off.
    retry_after: Option<Duration>,
}

impl DaemonSetController {
    /// `syncDaemonSet`.
    async fn sync(&self, ds: &DaemonSet) -> Result<Action, Error> {
        let spec = ds.spec.clone().unwrap_or_default();
        let selector = match Selector::from_label_selector(&spec.selector) {
            Ok(selector) => selector,
            Err(source) => {
                let err = Error::Selector {
                    object: describe(ds),
                    source,
                };
                tracing::warn!(error = %err, "not syncing DaemonSet");
                return Ok(Action::done());
            }
        };
        let nodes = self.client.list::<Node>(&ListOptions::default()).await?;
        let nodes = nodes.items;
        let everything = spec
            .selector
            .match_labels
            .as_ref()
            .is_none_or(|l| l.is_empty())
            && spec
                .selector
                .match_expressions
                .as_ref()
                .is_none_or(|e| e.is_empty());
        if everything {
            self.recorder.warning(
                ds,
                "SelectingAll",
                "This daemon set is selecting all pods. A non-empty selector is required.",
            );
            return Ok(Action::done());
        }
        // Which revisions (and Pods) it still owns is unknowable while it is being deleted.
        if ds.metadata.deletion_timestamp.is_some() {
            return Ok(Action::done());
        }
        let claimed = self.claim_pods(ds, &selector).await?;
        let history = history::construct(&self.client, ds, &selector, &claimed).await?;
        let hash = history.hash();

        let node_pods = by_node(&claimed, false);
        let mut outcome = Outcome::default();
        let mut result = self
            .manage(ds, &nodes, &node_pods, &hash, &mut outcome)
            .await;
        if result.is_ok() && !outcome.wrote && rolling::is_rolling(ds) {
            let step = rolling::step(ds, &nodes, &node_pods, &hash);
            result = self
                .sync_nodes(ds, &step.delete, &step.create, &hash)
                .await
                .map(|_| ());
        }
        // The Pods as they are now, for the history (deleted terminal Pods count) and status.
        let claimed = self.claim_pods(ds, &selector).await?;
        if result.is_ok() {
            result = history::cleanup(&self.client, ds, history.old, &claimed).await;
        }
        let counts = status::count(ds, &nodes, &by_node(&claimed, false), &hash);
        let stored = status::store(&self.client, ds, counts).await;
        result?;
        stored?;
        let min_ready = min_ready_seconds(ds);
        let mut action = Action::done();
        if min_ready > 0 && counts.ready != counts.available {
            let wait = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0));
            action = Action::requeue_after(wait);
        }
        if let Some(retry) = outcome.retry_after {
            let sooner = action.requeue_after_duration().is_none_or(|d| retry < d);
            if sooner {
                action = Action::requeue_after(retry);
            }
        }
        Ok(action)
    }

    /// `getDaemonPods`: the Pods of the namespace `ds` claims (adopting orphans it selects,
    /// releasing its Pods it no longer selects).
    async fn claim_pods(
        &self,
        ds: &DaemonSet,
        selector: &Selector,
    ) -> Result<Vec<Arc<Pod>>, Error> {
        let namespace = ds.metadata.namespace.clone().unwrap_or_default();
        let all = self
            .client
            .list::<Pod>(&ListOptions::default().namespace(&namespace))
            .await?;
        Claim {
            client: &self.client,
            owner: ds,
            selector,
            finalizers: &[],
        }
        .run(all.items)
        .await
    }

    /// `manage`: creates the Pods missing on nodes that should run the set, deletes the ones
    /// on nodes that should not, failed and succeeded Pods and extra ones.
    async fn manage(
        &self,
        ds: &DaemonSet,
        nodes: &[Arc<Node>],
        node_pods: &BTreeMap<String, Vec<Arc<Pod>>>,
        hash: &str,
        outcome: &mut Outcome,
    ) -> Result<(), Error> {
        let spec = template(ds).spec.unwrap_or_default();
        let surge = rolling::surge_count(ds, 1) > 0;
        let mut create = Vec::new();
        let mut delete = Vec::new();
        for node in nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            let fit = placement::fit(&spec, node);
            let on_node = node_pods.get(&name);
            match on_node {
                None if fit.should_run => create.push(name),
                Some(pods) if fit.should_continue_running => {
                    let plan = self.prune(ds, &name, pods, hash, surge, fit.should_run, outcome);
                    create.extend(plan.create);
                    delete.extend(plan.delete);
                }
                Some(pods) if !fit.should_continue_running => delete.extend(
                    pods.iter()
                        .filter(|p| p.metadata.deletion_timestamp.is_none())
                        .filter_map(|p| p.metadata.name.clone()),
                ),
                _ => {}
            }
        }
        // Pods pinned to nodes that are gone never get scheduled: delete them.
        for (node, pods) in node_pods {
            if nodes
                .iter()
                .any(|n| n.metadata.name.as_deref() == Some(node))
            {
                continue;
            }
            delete.extend(
                pods.iter()
                    .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_none())
                    .filter_map(|p| p.metadata.name.clone()),
            );
        }
        outcome.wrote = !create.is_empty() || !delete.is_empty();
        self.sync_nodes(ds, &delete, &create, hash).await
    }

    /// The `shouldContinueRunning` case of `podsShouldBeOnNode` for one node.
    #[allow(clippy::too_many_arguments)]
    fn prune(
        &self,
        ds: &DaemonSet,
        node: &str,
        pods: &[Arc<Pod>],
        hash: &str,
        surge: bool,
        should_run: bool,
        outcome: &mut Outcome,
    ) -> rolling::Step {
        let mut step = rolling::Step::default();
        let mut running: Vec<&Arc<Pod>> = Vec::new();
        let namespace = ds.metadata.namespace.as_deref().unwrap_or_default();
        for pod in pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
        {
            let name = pod.metadata.name.clone().unwrap_or_default();
            match pods::phase(pod) {
                "Failed" => {
                    let key = format!(
                        "{}/{}/{node}",
                        ds.metadata.uid.as_deref().unwrap_or_default(),
                        ds.status
                            .as_ref()
                            .and_then(|s| s.observed_generation)
                            .unwrap_or(0)
                    );
                    let now = Instant::now();
                    if let Some(wait) = self.backoff.waiting(&key, now) {
                        outcome.retry_after =
                            Some(outcome.retry_after.map_or(wait, |w| w.min(wait)));
                        continue;
                    }
                    self.backoff.next(&key, now);
                    self.recorder.warning(
                        ds,
                        "FailedDaemonPod",
                        &format!(
                            "Found failed daemon pod {namespace}/{name} on node {node}, will try to kill it"
                        ),
                    );
                    step.delete.push(name);
                }
                "Succeeded" => {
                    self.recorder.normal(
                        ds,
                        "SucceededDaemonPod",
                        &format!(
                            "Found succeeded daemon pod {namespace}/{name} on node {node}, will try to delete it"
                        ),
                    );
                    step.delete.push(name);
                }
                _ => running.push(pod),
            }
        }
        running.sort_by(|a, b| by_creation_and_phase(a, b));
        if !surge {
            // All but the oldest go.
            step.delete.extend(
                running
                    .iter()
                    .skip(1)
                    .filter_map(|p| p.metadata.name.clone()),
            );
            return step;
        }
        if running.len() <= 1 {
            if running.is_empty() && should_run {
                step.create.push(node.to_owned());
            }
            return step;
        }
        // Surging: an old and a new Pod may share the node while the new one is not yet
        // available (or the old one not ready); the rest go.
        let (mut oldest_new, mut oldest_old) = (None, None);
        for pod in running {
            let slot = if is_updated(ds, pod, hash) {
                &mut oldest_new
            } else {
                &mut oldest_old
            };
            if slot.is_none() {
                *slot = Some(pod);
            } else if let Some(name) = pod.metadata.name.clone() {
                step.delete.push(name);
            }
        }
        if let (Some(new), Some(old)) = (oldest_new, oldest_old) {
            let now = k8s_openapi::jiff::Timestamp::now();
            if !pods::is_ready(old) || pods::is_available(new, min_ready_seconds(ds), now) {
                step.delete.extend(old.metadata.name.clone());
            }
        }
        step
    }

    /// `syncNodes`: deletes `delete` and creates a daemon Pod on each node of `create` (at
    /// most [`BURST_REPLICAS`] of each, creations in slow-start batches).
    async fn sync_nodes(
        &self,
        ds: &DaemonSet,
        delete: &[String],
        create: &[String],
        hash: &str,
    ) -> Result<(), Error> {
        let create = &create[..create.len().min(BURST_REPLICAS)];
        let delete = &delete[..delete.len().min(BURST_REPLICAS)];
        let mut first_error = None;

        if !create.is_empty() {
            let template = pod_template(ds, hash);
            let prefix = generate_name_prefix(ds.metadata.name.as_deref().unwrap_or_default());
            let next = AtomicUsize::new(0);
            let (_, err) = slow_start_batch(create.len(), SLOW_START_INITIAL_BATCH_SIZE, || {
                let index = next.fetch_add(1, AtomicOrdering::Relaxed);
                let mut template = template.clone();
                if let Some(node) = create.get(index) {
                    placement::pin_to_node(template.spec.get_or_insert_default(), node);
                }
                let prefix = prefix.clone();
                async move { self.pods.create(&template, ds, prefix).await }
            })
            .await;
            first_error = err;
        }

        let deletes = delete.iter().map(|name| async move {
            match self.pods.delete(name, ds).await {
                Ok(()) => Ok(()),
                Err(err) if err.is_not_found() => Ok(()),
                Err(err) => Err(Error::from(err)),
            }
        });
        for result in futures::future::join_all(deletes).await {
            if let Err(err) = result {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// `CreatePodTemplate`: the template with the daemon tolerations, the template generation
/// label (when the set has the annotation) and the revision hash label.
fn pod_template(ds: &DaemonSet, hash: &str) -> PodTemplateSpec {
    let mut template = template(ds);
    placement::add_daemon_tolerations(template.spec.get_or_insert_default());
    let labels = template
        .metadata
        .get_or_insert_default()
        .labels
        .get_or_insert_default();
    if let Some(generation) = template_generation(ds) {
        labels.insert(TEMPLATE_GENERATION_LABEL.into(), generation.to_string());
    }
    if !hash.is_empty() {
        labels.insert(POD_REVISION_LABEL.into(), hash.to_owned());
    }
    template
}

/// `getNodesToDaemonPods`: the claimed Pods by the node they run on or are pinned to (deleted
/// Pods that finished only when `include_deleted_terminal`).
fn by_node(pods: &[Arc<Pod>], include_deleted_terminal: bool) -> BTreeMap<String, Vec<Arc<Pod>>> {
    let mut map: BTreeMap<String, Vec<Arc<Pod>>> = BTreeMap::new();
    for pod in pods {
        if !include_deleted_terminal
            && pods::is_terminal(pod)
            && pod.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let Some(node) = placement::target_node(pod) else {
            continue;
        };
        map.entry(node).or_default().push(pod.clone());
    }
    map
}
