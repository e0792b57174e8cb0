//! Where a DaemonSet runs, as kube's `NodeShouldRunDaemonPod` and `pkg/controller/daemon/util`
//! decide it: the template's `nodeName`, `nodeSelector` and required node affinity against
//! the node, and its taints against the template's tolerations plus the ones every daemon Pod
//! gets; and how a daemon Pod is pinned to its node (required node affinity on
//! `metadata.name`, not `nodeName`, so the scheduler binds it).

use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PodSpec, Taint, Toleration,
};

use crate::scheduler::{spec_matches_node, tolerates};

/// `v1.TaintNodeNotReady` and the other taints a daemon Pod tolerates, with their effects
/// (`AddOrUpdateDaemonPodTolerations`).
const DAEMON_TOLERATIONS: [(&str, &str); 6] = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
];

/// The one more a host-network daemon Pod tolerates.
const NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";

/// `metav1.ObjectNameField`.
const NAME_FIELD: &str = "metadata.name";

/// What a node means for a DaemonSet (`NodeShouldRunDaemonPod`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fit {
    /// A daemon Pod should be created there if there is none.
    pub(crate) should_run: bool,
    /// A daemon Pod already there may stay.
    pub(crate) should_continue_running: bool,
}

/// `NodeShouldRunDaemonPod` for a DaemonSet whose template spec is `spec`.
pub(crate) fn fit(spec: &PodSpec, node: &Node) -> Fit {
    let nothing = Fit {
        should_run: false,
        should_continue_running: false,
    };
    let node_name = node.metadata.name.as_deref().unwrap_or_default();
    if let Some(wanted) = spec.node_name.as_deref().filter(|n| !n.is_empty())
        && wanted != node_name
    {
        return nothing;
    }
    let mut spec = spec.clone();
    add_daemon_tolerations(&mut spec);
    if !spec_matches_node(&spec, node) {
        return nothing;
    }
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[]);
    let tolerations = spec.tolerations.as_deref().unwrap_or(&[]);
    let untolerated = |effects: &[&str]| {
        taints.iter().any(|taint| {
            effects.contains(&taint.effect.as_str())
                && !tolerations.iter().any(|t| tolerates(t, taint))
        })
    };
    if untolerated(&["NoSchedule", "NoExecute"]) {
        // Daemon Pods already there stay unless a NoExecute taint would evict them.
        return Fit {
            should_run: false,
            should_continue_running: !untolerated(&["NoExecute"]),
        };
    }
    Fit {
        should_run: true,
        should_continue_running: true,
    }
}

/// `AddOrUpdateDaemonPodTolerations`: the tolerations of every daemon Pod, `Exists` for the
/// node-problem taints (and `network-unavailable` with `hostNetwork`), added unless the spec
/// has them.
pub(crate) fn add_daemon_tolerations(spec: &mut PodSpec) {
    let host_network = spec.host_network == Some(true);
    let extra = host_network.then_some((NETWORK_UNAVAILABLE, "NoSchedule"));
    for (key, effect) in DAEMON_TOLERATIONS.into_iter().chain(extra) {
        let toleration = Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some(effect.into()),
            ..Toleration::default()
        };
        add_or_update_toleration(spec, toleration);
    }
}

/// `AddOrUpdateTolerationInPodSpec`: replaces the toleration with the same key, operator,
/// value and effect, or appends it.
fn add_or_update_toleration(spec: &mut PodSpec, toleration: Toleration) {
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    let same = |t: &Toleration| {
        t.key == toleration.key
            && t.operator == toleration.operator
            && t.value == toleration.value
            && t.effect == toleration.effect
    };
    match tolerations.iter_mut().find(|t| same(t)) {
        Some(existing) => *existing = toleration,
        None => tolerations.push(toleration),
    }
}

/// `ReplaceDaemonSetPodNodeNameNodeAffinity`: the required node affinity becomes the one term
/// `metadata.name In [node]` (the DaemonSet checked the rest against the node already).
pub(crate) fn pin_to_node(spec: &mut PodSpec, node: &str) {
    let selector = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_fields: Some(vec![NodeSelectorRequirement {
                key: NAME_FIELD.into(),
                operator: "In".into(),
                values: Some(vec![node.to_owned()]),
            }]),
            match_expressions: None,
        }],
    };
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    let node_affinity = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    node_affinity.required_during_scheduling_ignored_during_execution = Some(selector);
}

/// `GetTargetNodeName`: the node a daemon Pod is bound to, or pinned to by its affinity.
pub(crate) fn target_node(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(node) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        return Some(node.to_owned());
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    terms
        .iter()
        .flat_map(|t| t.match_fields.iter().flatten())
        .find(|r| r.key == NAME_FIELD && r.operator == "In")
        .and_then(|r| match r.values.as_deref() {
            Some([node]) => Some(node.clone()),
            _ => None,
        })
}

/// Whether the node's taints changed in a way [`fit`] looks at, or its labels, or whether it
/// is cordoned (kube's `shouldIgnoreNodeUpdate` compares the whole node but its conditions'
/// timestamps; these are what a DaemonSet's placement depends on).
pub(crate) fn placement_changed(old: &Node, new: &Node) -> bool {
    let taints = |n: &Node| -> Vec<Taint> {
        n.spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
    };
    old.metadata.labels != new.metadata.labels
        || taints(old) != taints(new)
        || old.spec.as_ref().and_then(|s| s.unschedulable)
            != new.spec.as_ref().and_then(|s| s.unschedulable)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::NodeSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn node(name: &str, labels: &[(&str, &str)], taints: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).into(), (*v).into()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec {
                taints: Some(
                    taints
                        .iter()
                        .map(|(key, effect)| Taint {
                            key: (*key).into(),
                            effect: (*effect).into(),
                            ..Taint::default()
                        })
                        .collect(),
                ),
                ..NodeSpec::default()
            }),
            status: None,
        }
    }

    const RUN: Fit = Fit {
        should_run: true,
        should_continue_running: true,
    };

    #[test]
    fn node_problems_are_tolerated_other_taints_are_not() {
        let spec = PodSpec::default();
        let problems = node(
            "a",
            &[],
            &[
                ("node.kubernetes.io/not-ready", "NoExecute"),
                ("node.kubernetes.io/unschedulable", "NoSchedule"),
            ],
        );
        assert_eq!(fit(&spec, &problems), RUN);
        let gpu = node("b", &[], &[("gpu", "NoSchedule")]);
        assert_eq!(
            fit(&spec, &gpu),
            Fit {
                should_run: false,
                should_continue_running: true
            }
        );
        let evicting = node("c", &[], &[("gpu", "NoExecute")]);
        assert!(!fit(&spec, &evicting).should_continue_running);
        let tolerant = PodSpec {
            tolerations: Some(vec![Toleration {
                key: Some("gpu".into()),
                operator: Some("Exists".into()),
                ..Toleration::default()
            }]),
            ..PodSpec::default()
        };
        assert_eq!(fit(&tolerant, &gpu), RUN);
    }

    #[test]
    fn node_selectors_and_names_restrict_the_nodes() {
        let spec = PodSpec {
            node_selector: Some([("disk".to_owned(), "ssd".to_owned())].into()),
            ..PodSpec::default()
        };
        assert_eq!(fit(&spec, &node("a", &[("disk", "ssd")], &[])), RUN);
        assert!(!fit(&spec, &node("b", &[("disk", "hdd")], &[])).should_run);
        let named = PodSpec {
            node_name: Some("a".into()),
            ..PodSpec::default()
        };
        assert!(!fit(&named, &node("b", &[], &[])).should_continue_running);
    }

    #[test]
    fn a_pinned_pod_names_its_node() {
        let mut spec = PodSpec::default();
        pin_to_node(&mut spec, "sim-node-1");
        let pod = Pod {
            spec: Some(spec.clone()),
            ..Pod::default()
        };
        assert_eq!(target_node(&pod).as_deref(), Some("sim-node-1"));
        assert!(spec_matches_node(&spec, &node("sim-node-1", &[], &[])));
        assert!(!spec_matches_node(&spec, &node("sim-node-2", &[], &[])));
    }

    #[test]
    fn daemon_tolerations_are_added_once() {
        let mut spec = PodSpec::default();
        add_daemon_tolerations(&mut spec);
        add_daemon_tolerations(&mut spec);
        assert_eq!(spec.tolerations.as_ref().map(Vec::len), Some(6));
    }
}
