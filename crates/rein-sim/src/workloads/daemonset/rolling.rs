//! A DaemonSet's `RollingUpdate`, as kube's `rollingUpdate` (`pkg/controller/daemon/update.go`)
//! chooses: without surge, delete old Pods while at most `maxUnavailable` nodes lack an
//! available Pod (the main loop then creates the new ones); with `maxSurge`, create new Pods
//! beside old available ones on at most `maxSurge` nodes at a time and delete each old Pod
//! once its replacement is available.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use super::super::intstr::scaled_value;
use super::super::pods;
use super::{is_updated, min_ready_seconds, placement};

/// What a rolling update step does: Pods to delete, nodes to create a Pod on.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Step {
    pub(super) delete: Vec<String>,
    pub(super) create: Vec<String>,
}

/// `intstr.GetScaledValueFromIntOrPercent` rounding up (an invalid value counts as 0).
fn scaled(value: Option<&IntOrString>, total: i32) -> i32 {
    value
        .and_then(|v| scaled_value(v, total, true))
        .unwrap_or(0)
}

/// Whether `ds` rolls out with `RollingUpdate`.
pub(super) fn is_rolling(ds: &DaemonSet) -> bool {
    let strategy = ds.spec.as_ref().and_then(|s| s.update_strategy.as_ref());
    strategy
        .and_then(|s| s.type_.as_deref())
        .is_none_or(|t| t == "RollingUpdate")
}

/// `SurgeCount`: the Pods `ds` may add beyond one per node, out of `total`.
pub(super) fn surge_count(ds: &DaemonSet, total: i32) -> i32 {
    if !is_rolling(ds) {
        return 0;
    }
    let rolling = ds
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref());
    scaled(rolling.and_then(|r| r.max_surge.as_ref()), total)
}

/// `UnavailableCount`: the nodes that may lack an available Pod, out of `total`.
fn unavailable_count(ds: &DaemonSet, total: i32) -> i32 {
    if !is_rolling(ds) {
        return 0;
    }
    let rolling = ds
        .spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref());
    scaled(rolling.and_then(|r| r.max_unavailable.as_ref()), total)
}

/// `findUpdatedPodsOnNode`: the new and the old Pod not being deleted, or `None` when the node
/// has more than one of either (the main loop prunes it first).
type OnNode<'a> = Option<(Option<&'a Arc<Pod>>, Option<&'a Arc<Pod>>)>;

fn updated_and_old<'a>(ds: &DaemonSet, pods: &'a [Arc<Pod>], hash: &str) -> OnNode<'a> {
    let (mut new, mut old) = (None, None);
    for pod in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let slot = if is_updated(ds, pod, hash) {
            &mut new
        } else {
            &mut old
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(pod);
    }
    Some((new, old))
}

fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

/// `rollingUpdate`: the step to take now.
pub(super) fn step(
    ds: &DaemonSet,
    nodes: &[Arc<Node>],
    node_pods: &BTreeMap<String, Vec<Arc<Pod>>>,
    hash: &str,
) -> Step {
    let spec = super::template(ds).spec.unwrap_or_default();
    let min_ready = min_ready_seconds(ds);
    let now = Timestamp::now();
    let available = |pod: &Pod| pods::is_available(pod, min_ready, now);
    let should_run = |node: &str| {
        nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(node))
            .is_some_and(|n| placement::fit(&spec, n).should_run)
    };

    // `updatedDesiredNodeCounts`: every node that should run the set is considered.
    let mut node_pods = node_pods.clone();
    let mut desired = 0;
    for node in nodes {
        if placement::fit(&spec, node).should_run {
            desired += 1;
            node_pods
                .entry(node.metadata.name.clone().unwrap_or_default())
                .or_default();
        }
    }
    let mut max_unavailable = unavailable_count(ds, desired);
    let max_surge = surge_count(ds, desired);
    if desired > 0 && max_unavailable == 0 && max_surge == 0 {
        max_unavailable = 1;
    }

    if max_surge == 0 {
        let mut unavailable = 0;
        let mut replacements = Vec::new();
        let mut candidates = Vec::new();
        for pods in node_pods.values() {
            let Some((new, old)) = updated_and_old(ds, pods, hash) else {
                unavailable += 1;
                continue;
            };
            match (new, old) {
                (None, None) | (Some(_), Some(_)) => unavailable += 1,
                (Some(new), None) => {
                    if !available(new) {
                        unavailable += 1;
                    }
                }
                (None, Some(old)) => {
                    if !available(old) {
                        replacements.push(name(old));
                        unavailable += 1;
                    } else if unavailable < max_unavailable {
                        candidates.push(name(old));
                    }
                }
            }
        }
        let room = usize::try_from(max_unavailable - unavailable)
            .unwrap_or(0)
            .min(candidates.len());
        replacements.extend(candidates.into_iter().take(room));
        return Step {
            delete: replacements,
            create: Vec::new(),
        };
    }

    let mut delete = Vec::new();
    let mut should_not_run = Vec::new();
    let mut candidates = Vec::new();
    let mut allowed = Vec::new();
    let mut surging = 0;
    let mut available_nodes = 0;
    for (node, pods) in &node_pods {
        let Some((new, old)) = updated_and_old(ds, pods, hash) else {
            surging += 1;
            continue;
        };
        if let Some(pod) = old.or(new)
            && available(pod)
        {
            available_nodes += 1;
        }
        match (new, old) {
            (_, None) => {}
            (None, Some(old)) => {
                if !available(old) {
                    if !should_run(node) {
                        delete.push(name(old));
                        continue;
                    }
                    allowed.push(node.clone());
                } else {
                    if !should_run(node) {
                        should_not_run.push(name(old));
                        continue;
                    }
                    if surging >= max_surge {
                        continue;
                    }
                    candidates.push(node.clone());
                }
            }
            (Some(new), Some(old)) => {
                if !available(new) {
                    surging += 1;
                    continue;
                }
                delete.push(name(old));
            }
        }
    }
    // Pods on nodes that should no longer run the set go only once as many Pods are
    // available elsewhere as the set wants.
    let deletable = usize::try_from(available_nodes - desired)
        .unwrap_or(0)
        .min(should_not_run.len());
    delete.extend(should_not_run.into_iter().take(deletable));
    let room = usize::try_from(max_surge - surging)
        .unwrap_or(0)
        .min(candidates.len());
    allowed.extend(candidates.into_iter().take(room));
    Step {
        delete,
        create: allowed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_up() {
        let pct = |s: &str| IntOrString::String(s.into());
        assert_eq!(scaled(Some(&pct("10%")), 3), 1);
        assert_eq!(scaled(Some(&pct("50%")), 3), 2);
        assert_eq!(scaled(Some(&IntOrString::Int(2)), 3), 2);
        assert_eq!(scaled(None, 3), 0);
    }
}
