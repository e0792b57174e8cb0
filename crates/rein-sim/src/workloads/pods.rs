//! What the workload controllers ask of Pods, as kube's `pkg/controller/controller_utils.go` and
//! `podutil` answer it: active, ready, available, terminating, the order in which Pods are
//! deleted first, and Pods made from a template.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// `controller.kubernetes.io/pod-deletion-cost`: Pods with a lower cost are deleted first.
pub(crate) const DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";

/// Now, to the second: what `metav1.Time` keeps on the wire, so a condition written now compares
/// equal to itself read back.
pub(crate) fn now() -> Time {
    Time(Timestamp::from_second(Timestamp::now().as_second()).unwrap_or_else(|_| Timestamp::now()))
}

/// The Pod's phase (`""` when unset).
pub(crate) fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// Succeeded or Failed.
pub(crate) fn is_terminal(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// `controller.IsPodActive`: not terminal and not being deleted.
pub(crate) fn is_active(pod: &Pod) -> bool {
    !is_terminal(pod) && pod.metadata.deletion_timestamp.is_none()
}

/// `controller.IsPodTerminating`: being deleted and not terminal.
pub(crate) fn is_terminating(pod: &Pod) -> bool {
    !is_terminal(pod) && pod.metadata.deletion_timestamp.is_some()
}

/// The Pod's `Ready` condition.
pub(crate) fn ready_condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
}

/// `podutil.IsPodReady`: the `Ready` condition is `True`.
pub(crate) fn is_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some_and(|c| c.status == "True")
}

/// When the Pod became ready, if it is.
fn ready_since(pod: &Pod) -> Option<Timestamp> {
    ready_condition(pod)
        .filter(|c| c.status == "True")?
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
}

/// When a ready Pod becomes available with `min_ready_seconds` (`None` if it is not ready).
pub(crate) fn available_at(pod: &Pod, min_ready_seconds: i32) -> Option<Timestamp> {
    if !is_ready(pod) {
        return None;
    }
    if min_ready_seconds <= 0 {
        return Some(Timestamp::MIN);
    }
    let since = ready_since(pod)?;
    since
        .checked_add(SignedDuration::from_secs(i64::from(min_ready_seconds)))
        .ok()
}

/// `podutil.IsPodAvailable`: ready for at least `min_ready_seconds` by `now`.
pub(crate) fn is_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    match available_at(pod, min_ready_seconds) {
        Some(at) if min_ready_seconds <= 0 => at <= now,
        // kube: `readyTime.Add(minReadySeconds).Before(now)`.
        Some(at) => at < now,
        None => false,
    }
}

/// The controller reference among the owner references.
pub(crate) fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

/// The largest restart count of the Pod's regular containers, then of its sidecars (init
/// containers with `restartPolicy: Always`).
fn max_restarts(pod: &Pod) -> (i32, i32) {
    let Some(status) = pod.status.as_ref() else {
        return (0, 0);
    };
    let regular = status
        .container_statuses
        .iter()
        .flatten()
        .map(|c| c.restart_count)
        .max()
        .unwrap_or(0);
    let sidecars: Vec<&str> = pod
        .spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten())
        .filter(|c| c.restart_policy.as_deref() == Some("Always"))
        .map(|c| c.name.as_str())
        .collect();
    let sidecar = status
        .init_container_statuses
        .iter()
        .flatten()
        .filter(|c| sidecars.contains(&c.name.as_str()))
        .map(|c| c.restart_count)
        .max()
        .unwrap_or(0);
    (regular, sidecar)
}

/// `podPhaseToOrdinal`: Pending < Unknown < Running (anything else sorts with Pending).
fn phase_ordinal(pod: &Pod) -> u8 {
    match phase(pod) {
        "Unknown" => 1,
        "Running" => 2,
        _ => 0,
    }
}

fn deletion_cost(pod: &Pod) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DELETION_COST_ANNOTATION))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn node_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or_default()
}

/// `afterOrZero`: a zero (unknown) time sorts first, then the later time.
fn after_or_zero(a: Option<Timestamp>, b: Option<Timestamp>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => b.cmp(&a),
    }
}

/// `logarithmicRankDiff`: compares how long ago `a` and `b` were on a log₂ scale of
/// nanoseconds, so Pods of similar age compare equal.
fn log_rank(t: Timestamp, now: Timestamp) -> i64 {
    let age = now.duration_since(t).as_nanos();
    if age <= 0 {
        return -1;
    }
    // The integer part of log₂ of a positive number: its bit length minus one.
    i64::from(127 - age.leading_zeros())
}

/// Compares two times as `ActivePodsWithRanks` does with `LogarithmicScaleDown`: unknown
/// times first, then the more recent on a logarithmic scale, ties broken by uid.
fn compare_times_logarithmic(
    a: (Option<Timestamp>, &Pod),
    b: (Option<Timestamp>, &Pod),
    now: Timestamp,
) -> Ordering {
    match (a.0, b.0) {
        (Some(ta), Some(tb)) => {
            let diff = log_rank(ta, now) - log_rank(tb, now);
            match diff.cmp(&0) {
                Ordering::Equal => uid(a.1).cmp(uid(b.1)),
                other => other,
            }
        }
        (ta, tb) => after_or_zero(ta, tb),
    }
}

fn uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

fn created(pod: &Pod) -> Option<Timestamp> {
    pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

/// `controller.ActivePodsWithRanks`: the order in which a ReplicaSet deletes Pods — the ones
/// earliest in their life first: unscheduled, then Pending < Unknown < Running, not ready,
/// lower deletion cost, more Pods of the same owner on the node (`rank`), ready for less time,
/// more restarts, created more recently.
pub(crate) fn deletion_order(a: (&Pod, usize), b: (&Pod, usize), now: Timestamp) -> Ordering {
    let (pa, ra) = a;
    let (pb, rb) = b;
    let (na, nb) = (node_name(pa), node_name(pb));
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return if na.is_empty() {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    let by_phase = phase_ordinal(pa).cmp(&phase_ordinal(pb));
    if by_phase != Ordering::Equal {
        return by_phase;
    }
    let (ready_a, ready_b) = (is_ready(pa), is_ready(pb));
    if ready_a != ready_b {
        return if ready_a {
            Ordering::Greater
        } else {
            Ordering::Less
        };
    }
    let by_cost = deletion_cost(pa).cmp(&deletion_cost(pb));
    if by_cost != Ordering::Equal {
        return by_cost;
    }
    let by_rank = rb.cmp(&ra);
    if by_rank != Ordering::Equal {
        return by_rank;
    }
    if ready_a && ready_b {
        let (ta, tb) = (ready_since(pa), ready_since(pb));
        if ta != tb {
            return compare_times_logarithmic((ta, pa), (tb, pb), now);
        }
    }
    let by_restarts = max_restarts(pb).cmp(&max_restarts(pa));
    if by_restarts != Ordering::Equal {
        return by_restarts;
    }
    let (ca, cb) = (created(pa), created(pb));
    if ca != cb {
        return compare_times_logarithmic((ca, pa), (cb, pb), now);
    }
    Ordering::Equal
}

/// `controller.ActivePods`: the order a Job deletes surplus Pods — unscheduled, then Pending <
/// Unknown < Running, not ready, ready for less time, more restarts, created more recently.
pub(crate) fn active_order(pa: &Pod, pb: &Pod) -> Ordering {
    let (na, nb) = (node_name(pa), node_name(pb));
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return if na.is_empty() {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    let by_phase = phase_ordinal(pa).cmp(&phase_ordinal(pb));
    if by_phase != Ordering::Equal {
        return by_phase;
    }
    let (ready_a, ready_b) = (is_ready(pa), is_ready(pb));
    if ready_a != ready_b {
        return if ready_a {
            Ordering::Greater
        } else {
            Ordering::Less
        };
    }
    if ready_a && ready_b {
        let by_ready = after_or_zero(ready_since(pa), ready_since(pb));
        if by_ready != Ordering::Equal {
            return by_ready;
        }
    }
    let by_restarts = max_restarts(pb).0.cmp(&max_restarts(pa).0);
    if by_restarts != Ordering::Equal {
        return by_restarts;
    }
    after_or_zero(created(pa), created(pb))
}

/// The Pods of `pods` ordered for deletion (`getPodsToDelete`), ranked by how many active
/// Pods of `related` share each Pod's node.
pub(crate) fn sort_for_deletion(pods: &mut [Arc<Pod>], related: &[Arc<Pod>]) {
    let mut on_node: BTreeMap<&str, usize> = BTreeMap::new();
    for pod in related.iter().filter(|p| is_active(p)) {
        *on_node.entry(node_name(pod)).or_default() += 1;
    }
    let rank = |pod: &Pod| on_node.get(node_name(pod)).copied().unwrap_or(0);
    let now = Timestamp::now();
    let mut ranked: Vec<(Arc<Pod>, usize)> = pods
        .iter()
        .map(|p| (p.clone(), rank(p)))
        .collect::<Vec<_>>();
    ranked.sort_by(|a, b| deletion_order((&a.0, a.1), (&b.0, b.1), now));
    for (slot, (pod, _)) in pods.iter_mut().zip(ranked) {
        *slot = pod;
    }
}

/// `getPodsPrefix`: `<name>-` when that is a valid generateName, else the name itself.
pub(crate) fn generate_name_prefix(name: &str) -> String {
    if name.len() < 253 {
        format!("{name}-")
    } else {
        name.to_owned()
    }
}

/// `controller.GetPodFromTemplate`: a Pod to create from `template`, named from `prefix`, with
/// the template's labels, annotations and finalizers and the given controller reference.
pub(crate) fn from_template(
    template: &PodTemplateSpec,
    namespace: &str,
    prefix: String,
    controller: OwnerReference,
) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            generate_name: Some(prefix),
            namespace: Some(namespace.to_owned()),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![controller]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{PodSpec, PodStatus};

    use super::*;

    fn pod(name: &str, node: &str, phase: &str, ready: bool) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                uid: Some(format!("uid-{name}")),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: (!node.is_empty()).then(|| node.to_owned()),
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..PodCondition::default()
                }]),
                ..PodStatus::default()
            }),
        })
    }

    #[test]
    fn unscheduled_pending_and_unready_pods_are_deleted_first() {
        let mut pods = vec![
            pod("ready", "n1", "Running", true),
            pod("unready", "n1", "Running", false),
            pod("pending", "n1", "Pending", false),
            pod("unscheduled", "", "Pending", false),
        ];
        let related = pods.clone();
        sort_for_deletion(&mut pods, &related);
        let names: Vec<_> = pods
            .iter()
            .map(|p| p.metadata.name.as_deref().unwrap_or_default())
            .collect();
        assert_eq!(names, ["unscheduled", "pending", "unready", "ready"]);
    }

    #[test]
    fn pods_doubled_up_on_a_node_go_first() {
        let mut pods = vec![
            pod("alone", "n1", "Running", true),
            pod("shared-a", "n2", "Running", true),
            pod("shared-b", "n2", "Running", true),
        ];
        let related = pods.clone();
        sort_for_deletion(&mut pods, &related);
        assert_eq!(pods[2].metadata.name.as_deref(), Some("alone"));
    }

    #[test]
    fn availability_waits_for_min_ready_seconds() {
        let mut p = Arc::unwrap_or_clone(pod("p", "n1", "Running", true));
        let ready_at = Timestamp::now() - SignedDuration::from_secs(5);
        if let Some(c) = p
            .status
            .as_mut()
            .and_then(|s| s.conditions.as_mut())
            .and_then(|c| c.first_mut())
        {
            c.last_transition_time = Some(Time(ready_at));
        }
        let now = Timestamp::now();
        assert!(is_available(&p, 0, now));
        assert!(is_available(&p, 3, now));
        assert!(!is_available(&p, 10, now));
    }

    #[test]
    fn long_names_are_their_own_prefix() {
        assert_eq!(generate_name_prefix("web"), "web-");
        let long = "a".repeat(253);
        assert_eq!(generate_name_prefix(&long), long);
    }
}
