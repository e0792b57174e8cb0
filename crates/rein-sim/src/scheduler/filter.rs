//! The scheduler's filters, in the default profile's order, each with kube-scheduler's reason
//! strings: NodeUnschedulable, TaintToleration, NodeAffinity (`nodeSelector` and required
//! node affinity), NodePorts and NodeResourcesFit. A node is rejected by the first filter that
//! fails, as the framework's `RunFilterPlugins` stops there.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec, Taint, Toleration,
};

use super::resources::Resources;

/// The NodeUnschedulable filter's reason.
pub(crate) const REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
/// The NodeAffinity filter's reason (`ErrReasonPod`).
pub(crate) const REASON_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
/// The NodePorts filter's reason.
pub(crate) const REASON_PORTS: &str = "node(s) didn't have free ports for the requested pod ports";
/// The NodeResourcesFit reason for the Pod count.
pub(crate) const REASON_TOO_MANY_PODS: &str = "Too many pods";

/// The taint a cordoned node carries (`node.kubernetes.io/unschedulable`).
const TAINT_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// What the scheduler knows of one node while it schedules one Pod.
#[derive(Debug)]
pub(crate) struct NodeInfo<'a> {
    /// The node.
    pub(crate) node: &'a Node,
    /// `status.allocatable`, without `pods`.
    pub(crate) allocatable: Resources,
    /// `status.allocatable.pods`.
    pub(crate) allowed_pods: i64,
    /// What the Pods bound to it (and assumed onto it) request.
    pub(crate) requested: Resources,
    /// The same with the scheduler's non-zero defaults, for scoring.
    pub(crate) non_zero_requested: Resources,
    /// How many Pods are bound to it (and assumed onto it).
    pub(crate) pods: i64,
    /// The host ports in use: (protocol, host IP, port).
    pub(crate) used_ports: Vec<(String, String, i32)>,
}

/// One node's answer to one Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every filter passed.
    Fits,
    /// A filter failed with these reasons.
    Rejected {
        /// The reasons, as kube-scheduler words them.
        reasons: Vec<String>,
        /// Whether preemption could help (`Unschedulable`, not
        /// `UnschedulableAndUnresolvable`): only resource shortages.
        resolvable: bool,
    },
}

impl Verdict {
    fn unresolvable(reason: impl Into<String>) -> Verdict {
        Verdict::Rejected {
            reasons: vec![reason.into()],
            resolvable: false,
        }
    }
}

/// Runs the filters for `pod` (whose effective requests are `requests`) against `info`.
pub(crate) fn filter(pod: &Pod, requests: &Resources, info: &NodeInfo<'_>) -> Verdict {
    let empty = Vec::new();
    let spec = pod.spec.as_ref();
    let tolerations = spec.and_then(|s| s.tolerations.as_ref()).unwrap_or(&empty);
    let node_spec = info.node.spec.as_ref();

    // NodeUnschedulable.
    if node_spec.and_then(|s| s.unschedulable) == Some(true) {
        let cordon = Taint {
            key: TAINT_UNSCHEDULABLE.into(),
            effect: "NoSchedule".into(),
            ..Taint::default()
        };
        if !tolerations.iter().any(|t| tolerates(t, &cordon)) {
            return Verdict::unresolvable(REASON_UNSCHEDULABLE);
        }
    }

    // TaintToleration: NoSchedule and NoExecute taints only.
    let taints = node_spec.and_then(|s| s.taints.as_deref()).unwrap_or(&[]);
    if let Some(taint) = taints.iter().find(|taint| {
        matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
            && !tolerations.iter().any(|t| tolerates(t, taint))
    }) {
        return Verdict::unresolvable(format!(
            "node(s) had untolerated taint {{{}: {}}}",
            taint.key,
            taint.value.as_deref().unwrap_or_default()
        ));
    }

    // NodeAffinity.
    if !matches_node_selector_and_affinity(pod, info.node) {
        return Verdict::unresolvable(REASON_AFFINITY);
    }

    // NodePorts.
    if ports_conflict(pod, &info.used_ports) {
        return Verdict::unresolvable(REASON_PORTS);
    }

    // NodeResourcesFit.
    let mut reasons = Vec::new();
    if info.pods.saturating_add(1) > info.allowed_pods {
        reasons.push(REASON_TOO_MANY_PODS.to_owned());
    }
    if !requests.is_zero() {
        let short = |requested: i64, used: i64, allocatable: i64| {
            requested > 0 && requested > allocatable.saturating_sub(used)
        };
        let (a, u) = (&info.allocatable, &info.requested);
        if short(requests.milli_cpu, u.milli_cpu, a.milli_cpu) {
            reasons.push("Insufficient cpu".to_owned());
        }
        if short(requests.memory, u.memory, a.memory) {
            reasons.push("Insufficient memory".to_owned());
        }
        if short(
            requests.ephemeral_storage,
            u.ephemeral_storage,
            a.ephemeral_storage,
        ) {
            reasons.push("Insufficient ephemeral-storage".to_owned());
        }
        for (name, wanted) in &requests.scalars {
            let have = a.scalars.get(name).copied().unwrap_or(0);
            let used = u.scalars.get(name).copied().unwrap_or(0);
            if short(*wanted, used, have) {
                reasons.push(format!("Insufficient {name}"));
            }
        }
    }
    if reasons.is_empty() {
        Verdict::Fits
    } else {
        Verdict::Rejected {
            reasons,
            resolvable: true,
        }
    }
}

/// `v1helper.ToleratesTaint`: an empty effect matches every effect; an empty key with
/// `Exists` matches every taint; `Exists` ignores the value; `Equal` (or no operator)
/// compares it.
pub(crate) fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or_default();
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or_default();
    let operator = toleration.operator.as_deref().unwrap_or("Equal");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match operator {
        "Exists" => true,
        "Equal" | "" => {
            toleration.value.as_deref().unwrap_or_default()
                == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

/// `nodeSelector` (every pair) and required node affinity (any term).
pub(crate) fn matches_node_selector_and_affinity(pod: &Pod, node: &Node) -> bool {
    pod.spec
        .as_ref()
        .is_none_or(|spec| spec_matches_node(spec, node))
}

/// `nodeaffinity.GetRequiredNodeAffinity(spec).Match(node)`: every `nodeSelector` pair, and
/// one term of the required node affinity (a term with no requirement matches nothing). The
/// scheduler asks it of a Pod, the DaemonSet controller of its template.
pub(crate) fn spec_matches_node(spec: &PodSpec, node: &Node) -> bool {
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    if let Some(selector) = &spec.node_selector
        && selector.iter().any(|(k, v)| labels.get(k) != Some(v))
    {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    match required {
        None => true,
        Some(selector) => selector
            .node_selector_terms
            .iter()
            .any(|term| term_matches(term, labels, node.metadata.name.as_deref())),
    }
}

/// A term matches when it has requirements and all of them match; an empty term matches no
/// node (`nodeaffinity.NodeSelector`).
fn term_matches(
    term: &NodeSelectorTerm,
    labels: &BTreeMap<String, String>,
    name: Option<&str>,
) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    expressions
        .iter()
        .all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields.iter().all(|r| {
            // `metadata.name` is the only supported field.
            r.key == "metadata.name"
                && matches!(r.operator.as_str(), "In" | "NotIn")
                && requirement_matches(r, name)
        })
}

/// One requirement against the label's value (`None`: the node has no such label).
fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or(&[]);
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), [bound]) = (value, values) else {
                return false;
            };
            let (Ok(v), Ok(bound)) = (v.parse::<i64>(), bound.parse::<i64>()) else {
                return false;
            };
            if r.operator == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

/// The host ports a Pod asks for: (protocol, host IP, port).
pub(crate) fn host_ports(pod: &Pod) -> Vec<(String, String, i32)> {
    let Some(spec) = &pod.spec else {
        return Vec::new();
    };
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            let port = p.host_port.filter(|p| *p > 0)?;
            let protocol = p.protocol.clone().unwrap_or_else(|| "TCP".into());
            let ip = p
                .host_ip
                .clone()
                .filter(|ip| !ip.is_empty())
                .unwrap_or_else(|| "0.0.0.0".into());
            Some((protocol, ip, port))
        })
        .collect()
}

/// Whether a wanted host port is taken: same protocol and port, and the same host IP or
/// either one the wildcard `0.0.0.0`.
fn ports_conflict(pod: &Pod, used: &[(String, String, i32)]) -> bool {
    host_ports(pod).iter().any(|(protocol, ip, port)| {
        used.iter().any(|(p, i, n)| {
            p == protocol && n == port && (i == ip || i == "0.0.0.0" || ip == "0.0.0.0")
        })
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, NodeSelector, NodeSpec};
    use kube_client::core::ObjectMeta;

    use super::*;

    fn node(name: &str, labels: &[(&str, &str)], taints: Vec<Taint>) -> Node {
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
                taints: Some(taints),
                ..NodeSpec::default()
            }),
            ..Node::default()
        }
    }

    fn info(node: &Node) -> NodeInfo<'_> {
        NodeInfo {
            node,
            allocatable: Resources {
                milli_cpu: 4000,
                memory: 1 << 34,
                ..Resources::default()
            },
            allowed_pods: 110,
            requested: Resources::default(),
            non_zero_requested: Resources::default(),
            pods: 0,
            used_ports: Vec::new(),
        }
    }

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: Some(value.into()).filter(|v: &String| !v.is_empty()),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> Toleration {
        Toleration {
            key: Some(key.into()).filter(|k: &String| !k.is_empty()),
            operator: Some(operator.into()),
            value: Some(value.into()).filter(|v: &String| !v.is_empty()),
            effect: Some(effect.into()).filter(|e: &String| !e.is_empty()),
            toleration_seconds: None,
        }
    }

    fn pod_with(spec: PodSpec) -> Pod {
        Pod {
            spec: Some(spec),
            ..Pod::default()
        }
    }

    #[test]
    fn tolerations_match_as_kube_does() {
        let t = taint("dedicated", "gpu", "NoSchedule");
        assert!(tolerates(
            &toleration("dedicated", "Equal", "gpu", "NoSchedule"),
            &t
        ));
        assert!(tolerates(&toleration("dedicated", "Equal", "gpu", ""), &t));
        assert!(tolerates(&toleration("dedicated", "Exists", "", ""), &t));
        assert!(tolerates(&toleration("", "Exists", "", ""), &t));
        assert!(!tolerates(&toleration("dedicated", "Equal", "cpu", ""), &t));
        assert!(!tolerates(
            &toleration("dedicated", "Equal", "gpu", "NoExecute"),
            &t
        ));
        assert!(!tolerates(&toleration("other", "Exists", "", ""), &t));
        assert!(!tolerates(&toleration("", "Equal", "", ""), &t));
    }

    #[test]
    fn taints_reject_with_their_key_and_value() {
        let tainted = node(
            "n",
            &[],
            vec![
                taint("soft", "", "PreferNoSchedule"),
                taint("dedicated", "gpu", "NoSchedule"),
            ],
        );
        let verdict = filter(
            &pod_with(PodSpec::default()),
            &Resources::default(),
            &info(&tainted),
        );
        assert_eq!(
            verdict,
            Verdict::Rejected {
                reasons: vec!["node(s) had untolerated taint {dedicated: gpu}".into()],
                resolvable: false,
            }
        );
        let tolerant = pod_with(PodSpec {
            tolerations: Some(vec![toleration("dedicated", "Exists", "", "")]),
            ..PodSpec::default()
        });
        assert_eq!(
            filter(&tolerant, &Resources::default(), &info(&tainted)),
            Verdict::Fits
        );
    }

    fn affinity(terms: Vec<NodeSelectorTerm>) -> PodSpec {
        PodSpec {
            affinity: Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                        node_selector_terms: terms,
                    }),
                    ..NodeAffinity::default()
                }),
                ..Affinity::default()
            }),
            ..PodSpec::default()
        }
    }

    fn req(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: Some(values.iter().map(|v| (*v).into()).collect()),
        }
    }

    #[test]
    fn node_affinity_operators() {
        let n = node("sim-node-1", &[("zone", "a"), ("cores", "8")], vec![]);
        let check = |exprs: Vec<NodeSelectorRequirement>| {
            matches_node_selector_and_affinity(
                &pod_with(affinity(vec![NodeSelectorTerm {
                    match_expressions: Some(exprs),
                    match_fields: None,
                }])),
                &n,
            )
        };
        assert!(check(vec![req("zone", "In", &["a", "b"])]));
        assert!(!check(vec![req("zone", "NotIn", &["a"])]));
        assert!(check(vec![req("rack", "NotIn", &["a"])]));
        assert!(check(vec![req("zone", "Exists", &[])]));
        assert!(check(vec![req("rack", "DoesNotExist", &[])]));
        assert!(check(vec![req("cores", "Gt", &["4"])]));
        assert!(!check(vec![req("cores", "Lt", &["4"])]));
        assert!(!check(vec![req("zone", "Gt", &["4"])]));
        assert!(!check(vec![
            req("zone", "In", &["a"]),
            req("cores", "Lt", &["4"])
        ]));
        // Terms are ORed; an empty term matches nothing.
        let by_name = pod_with(affinity(vec![
            NodeSelectorTerm::default(),
            NodeSelectorTerm {
                match_expressions: None,
                match_fields: Some(vec![req("metadata.name", "In", &["sim-node-1"])]),
            },
        ]));
        assert!(matches_node_selector_and_affinity(&by_name, &n));
        let only_empty = pod_with(affinity(vec![NodeSelectorTerm::default()]));
        assert!(!matches_node_selector_and_affinity(&only_empty, &n));
        let selector = pod_with(PodSpec {
            node_selector: Some([("zone".to_owned(), "b".to_owned())].into()),
            ..PodSpec::default()
        });
        assert!(!matches_node_selector_and_affinity(&selector, &n));
    }

    #[test]
    fn resources_list_every_shortage() {
        let n = node("n", &[], vec![]);
        let mut full = info(&n);
        full.requested.milli_cpu = 3500;
        full.pods = 110;
        let wants = Resources {
            milli_cpu: 1000,
            memory: 1 << 20,
            scalars: [("nvidia.com/gpu".to_owned(), 1)].into(),
            ..Resources::default()
        };
        assert_eq!(
            filter(&pod_with(PodSpec::default()), &wants, &full),
            Verdict::Rejected {
                reasons: vec![
                    "Too many pods".into(),
                    "Insufficient cpu".into(),
                    "Insufficient nvidia.com/gpu".into()
                ],
                resolvable: true,
            }
        );
    }
}
