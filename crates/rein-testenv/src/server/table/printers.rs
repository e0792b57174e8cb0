//! kube-apiserver's printer columns for built-in kinds (kube's
//! `pkg/printers/internalversion/printers.go`): each kind's column definitions (with
//! `priority: 1` for the columns `kubectl get -o wide` adds) and the cells of one object's row.

use std::borrow::Cow;

use serde_json::{Value, json};

use super::format::{
    access_modes, containers, int, label_selector, labels, list, or, selector, since,
    storage_class, text, time, with_more,
};
use crate::openapi::field_description;

/// One column definition.
#[derive(Debug, Clone)]
pub(super) struct Column {
    pub(super) name: &'static str,
    pub(super) kind: &'static str,
    pub(super) format: &'static str,
    pub(super) description: Cow<'static, str>,
    pub(super) priority: u8,
}

/// One row's cells and, for finished Pods, its conditions.
#[derive(Debug, Default)]
pub(super) struct Row {
    pub(super) cells: Vec<Value>,
    pub(super) conditions: Option<Value>,
}

/// How one object's row is printed, given the time now.
pub(super) type RowFn = fn(&Value, jiff::Timestamp) -> Row;

/// A kind's columns and its row function.
#[derive(Debug)]
pub(super) struct Printer {
    pub(super) columns: Vec<Column>,
    pub(super) row: RowFn,
}

/// The printer kube-apiserver has for `group`/`plural`, if any (others get the default
/// Name and Created At columns).
pub(super) fn printer(group: &str, plural: &str) -> Option<Printer> {
    let (columns, row): (Vec<Column>, RowFn) = match (group, plural) {
        ("", "pods") => (pod_columns(), pod_row),
        ("", "nodes") => (node_columns(), node_row),
        ("", "namespaces") => (
            vec![
                name(),
                col("Status", "string", "The status of the namespace"),
                age(),
            ],
            |o, now| cells(vec![n(o), s(text(o, "/status/phase")), a(o, now)]),
        ),
        ("", "services") => (service_columns(), service_row),
        ("", "endpoints") => (
            vec![
                name(),
                col("Endpoints", "string", doc("core.v1.Endpoints", "subsets")),
                age(),
            ],
            |o, now| cells(vec![n(o), s(&endpoints(o)), a(o, now)]),
        ),
        ("", "events") => (event_columns(), event_row),
        ("", "configmaps") => (
            vec![
                name(),
                col("Data", "integer", doc("core.v1.ConfigMap", "data")),
                age(),
            ],
            |o, now| {
                let count = keys(o, "/data") + keys(o, "/binaryData");
                cells(vec![n(o), json!(count), a(o, now)])
            },
        ),
        ("", "secrets") => (
            vec![
                name(),
                col("Type", "string", doc("core.v1.Secret", "type")),
                col("Data", "integer", doc("core.v1.Secret", "data")),
                age(),
            ],
            |o, now| {
                cells(vec![
                    n(o),
                    s(text(o, "/type")),
                    json!(keys(o, "/data")),
                    a(o, now),
                ])
            },
        ),
        ("", "serviceaccounts") => (
            vec![
                name(),
                col(
                    "Secrets",
                    "string",
                    doc("core.v1.ServiceAccount", "secrets"),
                ),
                age(),
            ],
            |o, now| cells(vec![n(o), json!(list(o, "/secrets").len()), a(o, now)]),
        ),
        ("", "persistentvolumeclaims") => (pvc_columns(), pvc_row),
        ("", "persistentvolumes") => (pv_columns(), pv_row),
        ("apps", "deployments") => (deployment_columns(), deployment_row),
        ("apps", "replicasets") => (
            workload(
                vec![
                    name(),
                    col(
                        "Desired",
                        "integer",
                        doc("apps.v1.ReplicaSetSpec", "replicas"),
                    ),
                    col(
                        "Current",
                        "integer",
                        doc("apps.v1.ReplicaSetStatus", "replicas"),
                    ),
                    col(
                        "Ready",
                        "integer",
                        doc("apps.v1.ReplicaSetStatus", "readyReplicas"),
                    ),
                    age(),
                ],
                Some(doc("apps.v1.ReplicaSetSpec", "selector")),
            ),
            |o, now| {
                let mut c = vec![
                    n(o),
                    json!(replicas(o)),
                    json!(int(o, "/status/replicas")),
                    json!(int(o, "/status/readyReplicas")),
                    a(o, now),
                ];
                template_cells(&mut c, o, "/spec/template/spec");
                c.push(s(&label_selector(o.pointer("/spec/selector"))));
                cells(c)
            },
        ),
        ("apps", "statefulsets") => (
            workload(
                vec![
                    name(),
                    col("Ready", "string", "Number of the pod with ready state"),
                    age(),
                ],
                None,
            ),
            |o, now| {
                let ready = format!("{}/{}", int(o, "/status/readyReplicas"), replicas(o));
                let mut c = vec![n(o), s(&ready), a(o, now)];
                template_cells(&mut c, o, "/spec/template/spec");
                cells(c)
            },
        ),
        ("apps", "daemonsets") => (daemonset_columns(), daemonset_row),
        ("apps", "controllerrevisions") => (
            vec![
                name(),
                col("Controller", "string", "Controller of the object"),
                col(
                    "Revision",
                    "string",
                    doc("apps.v1.ControllerRevision", "revision"),
                ),
                age(),
            ],
            |o, now| {
                let controller = list(o, "/metadata/ownerReferences")
                    .iter()
                    .find(|r| r.get("controller") == Some(&json!(true)))
                    .map_or("<none>".to_string(), |r| {
                        let api_version = text(r, "/apiVersion");
                        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
                        let kind = text(r, "/kind").to_lowercase();
                        let gk = if group.is_empty() {
                            kind
                        } else {
                            format!("{kind}.{group}")
                        };
                        format!("{gk}/{}", text(r, "/name"))
                    });
                cells(vec![
                    n(o),
                    s(&controller),
                    json!(int(o, "/revision")),
                    a(o, now),
                ])
            },
        ),
        ("batch", "jobs") => (job_columns(), job_row),
        ("batch", "cronjobs") => (cronjob_columns(), cronjob_row),
        ("coordination.k8s.io", "leases") => (
            vec![
                name(),
                col(
                    "Holder",
                    "string",
                    doc("coordination.v1.LeaseSpec", "holderIdentity"),
                ),
                age(),
            ],
            |o, now| cells(vec![n(o), s(text(o, "/spec/holderIdentity")), a(o, now)]),
        ),
        ("policy", "poddisruptionbudgets") => (
            vec![
                name(),
                col(
                    "Min Available",
                    "string",
                    "The minimum number of pods that must be available.",
                ),
                col(
                    "Max Unavailable",
                    "string",
                    "The maximum number of pods that may be unavailable.",
                ),
                col(
                    "Allowed Disruptions",
                    "integer",
                    "Calculated number of pods that may be disrupted at this time.",
                ),
                age(),
            ],
            |o, now| {
                let bound = |at: &str| match o.pointer(at) {
                    Some(Value::String(v)) => v.clone(),
                    Some(Value::Number(v)) => v.to_string(),
                    _ => "N/A".to_string(),
                };
                cells(vec![
                    n(o),
                    s(&bound("/spec/minAvailable")),
                    s(&bound("/spec/maxUnavailable")),
                    json!(int(o, "/status/disruptionsAllowed")),
                    a(o, now),
                ])
            },
        ),
        ("networking.k8s.io", "ingresses") => (ingress_columns(), ingress_row),
        ("networking.k8s.io", "ingressclasses") => (
            vec![
                name(),
                col(
                    "Controller",
                    "string",
                    "Controller that is responsible for handling this class",
                ),
                col(
                    "Parameters",
                    "string",
                    "A reference to a resource with additional parameters",
                ),
                age(),
            ],
            |o, now| {
                let parameters = o
                    .pointer("/spec/parameters")
                    .map_or("<none>".to_string(), |p| {
                        let group = text(p, "/apiGroup");
                        let kind = if group.is_empty() {
                            text(p, "/kind").to_string()
                        } else {
                            format!("{}.{group}", text(p, "/kind"))
                        };
                        format!("{kind}/{}", text(p, "/name"))
                    });
                cells(vec![
                    n(o),
                    s(text(o, "/spec/controller")),
                    s(&parameters),
                    a(o, now),
                ])
            },
        ),
        ("networking.k8s.io", "networkpolicies") => (
            vec![
                name(),
                col(
                    "Pod-Selector",
                    "string",
                    doc("networking.v1.NetworkPolicySpec", "podSelector"),
                ),
                age(),
            ],
            |o, now| {
                let sel = label_selector(o.pointer("/spec/podSelector"));
                cells(vec![n(o), s(&sel), a(o, now)])
            },
        ),
        ("discovery.k8s.io", "endpointslices") => (
            vec![
                name(),
                col(
                    "AddressType",
                    "string",
                    doc("discovery.v1.EndpointSlice", "addressType"),
                ),
                col(
                    "Ports",
                    "string",
                    doc("discovery.v1.EndpointSlice", "ports"),
                ),
                col(
                    "Endpoints",
                    "string",
                    doc("discovery.v1.EndpointSlice", "endpoints"),
                ),
                age(),
            ],
            |o, now| {
                let ports: Vec<String> = list(o, "/ports")
                    .iter()
                    .map(
                        |p| match (p.get("port").and_then(Value::as_i64), p.get("name")) {
                            (Some(port), _) => port.to_string(),
                            (None, Some(Value::String(name))) => name.clone(),
                            _ => "*".to_string(),
                        },
                    )
                    .collect();
                let addresses: Vec<String> = list(o, "/endpoints")
                    .iter()
                    .flat_map(|e| list(e, "/addresses"))
                    .filter_map(|a| a.as_str().map(str::to_string))
                    .collect();
                cells(vec![
                    n(o),
                    s(text(o, "/addressType")),
                    s(&with_more(&ports, 3)),
                    s(&with_more(&addresses, 3)),
                    a(o, now),
                ])
            },
        ),
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => {
            let (kind, holder) = if plural == "rolebindings" {
                ("rbac.v1.RoleBinding", "roleBinding")
            } else {
                ("rbac.v1.ClusterRoleBinding", "clusterRoleBinding")
            };
            let columns = vec![
                name(),
                col("Role", "string", doc(kind, "roleRef")),
                age(),
                wide("Users", "string", format!("Users in the {holder}")),
                wide("Groups", "string", format!("Groups in the {holder}")),
                wide(
                    "ServiceAccounts",
                    "string",
                    format!("ServiceAccounts in the {holder}"),
                ),
            ];
            (columns, binding_row)
        }
        ("rbac.authorization.k8s.io", "roles" | "clusterroles") => (
            vec![
                name(),
                Column {
                    name: "Created At",
                    kind: "date",
                    format: "",
                    description: meta("creationTimestamp").into(),
                    priority: 0,
                },
            ],
            |o, _| cells(vec![n(o), created_at(o)]),
        ),
        ("scheduling.k8s.io", "priorityclasses") => (
            vec![
                name(),
                col(
                    "Value",
                    "integer",
                    doc("scheduling.v1.PriorityClass", "value"),
                ),
                col(
                    "Global-Default",
                    "boolean",
                    doc("scheduling.v1.PriorityClass", "globalDefault"),
                ),
                age(),
                col(
                    "PreemptionPolicy",
                    "string",
                    doc("scheduling.v1.PriorityClass", "preemptionPolicy"),
                ),
            ],
            |o, now| {
                cells(vec![
                    n(o),
                    json!(int(o, "/value")),
                    json!(
                        o.get("globalDefault")
                            .and_then(Value::as_bool)
                            .unwrap_or(false)
                    ),
                    a(o, now),
                    s(text(o, "/preemptionPolicy")),
                ])
            },
        ),
        ("storage.k8s.io", "storageclasses") => (
            vec![
                name(),
                col(
                    "Provisioner",
                    "string",
                    doc("storage.v1.StorageClass", "provisioner"),
                ),
                col(
                    "ReclaimPolicy",
                    "string",
                    doc("storage.v1.StorageClass", "reclaimPolicy"),
                ),
                col(
                    "VolumeBindingMode",
                    "string",
                    doc("storage.v1.StorageClass", "volumeBindingMode"),
                ),
                col(
                    "AllowVolumeExpansion",
                    "string",
                    doc("storage.v1.StorageClass", "allowVolumeExpansion"),
                ),
                age(),
            ],
            |o, now| {
                let default = [
                    "storageclass.kubernetes.io/is-default-class",
                    "storageclass.beta.kubernetes.io/is-default-class",
                ]
                .iter()
                .any(|k| {
                    o.pointer("/metadata/annotations").and_then(|m| m.get(*k))
                        == Some(&json!("true"))
                });
                let name = if default {
                    format!("{} (default)", text(o, "/metadata/name"))
                } else {
                    text(o, "/metadata/name").to_string()
                };
                cells(vec![
                    s(&name),
                    s(text(o, "/provisioner")),
                    s(or(text(o, "/reclaimPolicy"), "Delete")),
                    s(or(text(o, "/volumeBindingMode"), "Immediate")),
                    json!(
                        o.get("allowVolumeExpansion")
                            .and_then(Value::as_bool)
                            .unwrap_or(false)
                    ),
                    a(o, now),
                ])
            },
        ),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => (
            vec![
                name(),
                col(
                    "Webhooks",
                    "integer",
                    "Webhooks indicates the number of webhooks registered in this configuration",
                ),
                age(),
            ],
            |o, now| cells(vec![n(o), json!(list(o, "/webhooks").len()), a(o, now)]),
        ),
        ("", "replicationcontrollers") => (
            workload(
                vec![
                    name(),
                    col(
                        "Desired",
                        "integer",
                        doc("core.v1.ReplicationControllerSpec", "replicas"),
                    ),
                    col(
                        "Current",
                        "integer",
                        doc("core.v1.ReplicationControllerStatus", "replicas"),
                    ),
                    col(
                        "Ready",
                        "integer",
                        doc("core.v1.ReplicationControllerStatus", "readyReplicas"),
                    ),
                    age(),
                ],
                Some(doc("core.v1.ReplicationControllerSpec", "selector")),
            ),
            |o, now| {
                let mut c = vec![
                    n(o),
                    json!(replicas(o)),
                    json!(int(o, "/status/replicas")),
                    json!(int(o, "/status/readyReplicas")),
                    a(o, now),
                ];
                template_cells(&mut c, o, "/spec/template/spec");
                c.push(s(&labels(o.pointer("/spec/selector"))));
                cells(c)
            },
        ),
        ("", "podtemplates") => (
            vec![
                name(),
                col(
                    "Containers",
                    "string",
                    "Names of each container in the template.",
                ),
                col(
                    "Images",
                    "string",
                    "Images referenced by each container in the template.",
                ),
                col("Pod Labels", "string", "The labels for the pod template."),
            ],
            |o, _| {
                let mut c = vec![n(o)];
                template_cells(&mut c, o, "/template/spec");
                c.push(s(&labels(o.pointer("/template/metadata/labels"))));
                cells(c)
            },
        ),
        ("", "resourcequotas") => (
            vec![
                name(),
                age(),
                col(
                    "Request",
                    "string",
                    "Request represents a minimum amount of cpu/memory that a container may consume.",
                ),
                col(
                    "Limit",
                    "string",
                    "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
                ),
            ],
            |o, now| {
                let hard = o.pointer("/status/hard").and_then(Value::as_object);
                let mut names: Vec<&String> = hard.into_iter().flat_map(|h| h.keys()).collect();
                names.sort();
                let (mut requests, mut limits) = (Vec::new(), Vec::new());
                for resource in names {
                    let used = o
                        .pointer("/status/used")
                        .and_then(|u| u.get(resource))
                        .and_then(Value::as_str)
                        .unwrap_or("0");
                    let limit = hard
                        .and_then(|h| h.get(resource))
                        .and_then(Value::as_str)
                        .unwrap_or("0");
                    let entry = format!("{resource}: {used}/{limit}");
                    if resource.split('.').next() == Some("limits") && resource.contains('.') {
                        limits.push(entry);
                    } else {
                        requests.push(entry);
                    }
                }
                cells(vec![
                    n(o),
                    a(o, now),
                    s(&requests.join(", ")),
                    s(&limits.join(", ")),
                ])
            },
        ),
        ("autoscaling", "horizontalpodautoscalers") => (
            vec![
                name(),
                col(
                    "Reference",
                    "string",
                    doc(
                        "autoscaling.v2.HorizontalPodAutoscalerSpec",
                        "scaleTargetRef",
                    ),
                ),
                col(
                    "Targets",
                    "string",
                    doc("autoscaling.v2.HorizontalPodAutoscalerSpec", "metrics"),
                ),
                col(
                    "MinPods",
                    "string",
                    doc("autoscaling.v2.HorizontalPodAutoscalerSpec", "minReplicas"),
                ),
                col(
                    "MaxPods",
                    "string",
                    doc("autoscaling.v2.HorizontalPodAutoscalerSpec", "maxReplicas"),
                ),
                col(
                    "Replicas",
                    "string",
                    doc(
                        "autoscaling.v2.HorizontalPodAutoscalerStatus",
                        "currentReplicas",
                    ),
                ),
                age(),
            ],
            hpa_row,
        ),
        ("certificates.k8s.io", "certificatesigningrequests") => (
            vec![
                name(),
                age(),
                col(
                    "SignerName",
                    "string",
                    doc(
                        "certificates.v1.CertificateSigningRequestSpec",
                        "signerName",
                    ),
                ),
                col(
                    "Requestor",
                    "string",
                    doc("certificates.v1.CertificateSigningRequestSpec", "request"),
                ),
                col(
                    "RequestedDuration",
                    "string",
                    doc(
                        "certificates.v1.CertificateSigningRequestSpec",
                        "expirationSeconds",
                    ),
                ),
                col(
                    "Condition",
                    "string",
                    doc(
                        "certificates.v1.CertificateSigningRequestStatus",
                        "conditions",
                    ),
                ),
            ],
            |o, now| {
                let has = |kind: &str| {
                    list(o, "/status/conditions")
                        .iter()
                        .any(|c| text(c, "/type") == kind)
                };
                let mut condition = if has("Denied") {
                    "Denied"
                } else if has("Approved") {
                    "Approved"
                } else {
                    "Pending"
                }
                .to_string();
                if has("Failed") {
                    condition.push_str(",Failed");
                }
                if !text(o, "/status/certificate").is_empty() {
                    condition.push_str(",Issued");
                }
                let duration = o
                    .pointer("/spec/expirationSeconds")
                    .and_then(Value::as_i64)
                    .map_or("<none>".to_string(), super::format::human_duration);
                cells(vec![
                    n(o),
                    a(o, now),
                    s(or(text(o, "/spec/signerName"), "<none>")),
                    s(text(o, "/spec/username")),
                    s(&duration),
                    s(&condition),
                ])
            },
        ),
        ("node.k8s.io", "runtimeclasses") => (
            vec![name(), col("Handler", "string", meta("handler")), age()],
            |o, now| cells(vec![n(o), s(text(o, "/handler")), a(o, now)]),
        ),
        ("storage.k8s.io", "volumeattachments") => (
            vec![
                name(),
                Column {
                    format: "name",
                    ..col(
                        "Attacher",
                        "string",
                        doc("storage.v1.VolumeAttachmentSpec", "attacher"),
                    )
                },
                col(
                    "PV",
                    "string",
                    doc("storage.v1.VolumeAttachmentSource", "persistentVolumeName"),
                ),
                col(
                    "Node",
                    "string",
                    doc("storage.v1.VolumeAttachmentSpec", "nodeName"),
                ),
                col(
                    "Attached",
                    "boolean",
                    doc("storage.v1.VolumeAttachmentStatus", "attached"),
                ),
                age(),
            ],
            |o, now| {
                cells(vec![
                    n(o),
                    s(text(o, "/spec/attacher")),
                    s(text(o, "/spec/source/persistentVolumeName")),
                    s(text(o, "/spec/nodeName")),
                    json!(
                        o.pointer("/status/attached")
                            .and_then(Value::as_bool)
                            .unwrap_or(false)
                    ),
                    a(o, now),
                ])
            },
        ),
        ("storage.k8s.io", "csinodes") => (
            vec![
                name(),
                col(
                    "Drivers",
                    "integer",
                    "Drivers indicates the number of CSI drivers registered on the node",
                ),
                age(),
            ],
            |o, now| cells(vec![n(o), json!(list(o, "/spec/drivers").len()), a(o, now)]),
        ),
        ("storage.k8s.io", "csidrivers") => (
            vec![
                name(),
                col(
                    "AttachRequired",
                    "boolean",
                    doc("storage.v1.CSIDriverSpec", "attachRequired"),
                ),
                col(
                    "PodInfoOnMount",
                    "boolean",
                    doc("storage.v1.CSIDriverSpec", "podInfoOnMount"),
                ),
                col(
                    "StorageCapacity",
                    "boolean",
                    doc("storage.v1.CSIDriverSpec", "storageCapacity"),
                ),
                col(
                    "TokenRequests",
                    "string",
                    doc("storage.v1.CSIDriverSpec", "tokenRequests"),
                ),
                col(
                    "RequiresRepublish",
                    "boolean",
                    doc("storage.v1.CSIDriverSpec", "requiresRepublish"),
                ),
                col(
                    "Modes",
                    "string",
                    doc("storage.v1.CSIDriverSpec", "volumeLifecycleModes"),
                ),
                age(),
            ],
            |o, now| {
                let flag = |at: &str, default: bool| {
                    json!(o.pointer(at).and_then(Value::as_bool).unwrap_or(default))
                };
                let tokens = match o.pointer("/spec/tokenRequests").and_then(Value::as_array) {
                    Some(requests) => requests
                        .iter()
                        .map(|t| text(t, "/audience"))
                        .collect::<Vec<_>>()
                        .join(","),
                    None => "<unset>".to_string(),
                };
                let modes: Vec<&str> = list(o, "/spec/volumeLifecycleModes")
                    .iter()
                    .filter_map(Value::as_str)
                    .collect();
                cells(vec![
                    n(o),
                    flag("/spec/attachRequired", true),
                    flag("/spec/podInfoOnMount", false),
                    flag("/spec/storageCapacity", false),
                    s(&tokens),
                    flag("/spec/requiresRepublish", false),
                    s(or(&modes.join(","), "<none>")),
                    a(o, now),
                ])
            },
        ),
        ("storage.k8s.io", "csistoragecapacities") => (
            vec![
                name(),
                col(
                    "StorageClassName",
                    "string",
                    doc("storage.v1.CSIStorageCapacity", "storageClassName"),
                ),
                col(
                    "Capacity",
                    "string",
                    doc("storage.v1.CSIStorageCapacity", "capacity"),
                ),
            ],
            |o, _| {
                let capacity = o
                    .get("capacity")
                    .and_then(Value::as_str)
                    .unwrap_or("<unset>");
                cells(vec![n(o), s(text(o, "/storageClassName")), s(capacity)])
            },
        ),
        ("flowcontrol.apiserver.k8s.io", "flowschemas") => (
            vec![
                name(),
                col(
                    "PriorityLevel",
                    "string",
                    doc("flowcontrol.v1.PriorityLevelConfigurationReference", "name"),
                ),
                col(
                    "MatchingPrecedence",
                    "string",
                    doc("flowcontrol.v1.FlowSchemaSpec", "matchingPrecedence"),
                ),
                col(
                    "DistinguisherMethod",
                    "string",
                    doc("flowcontrol.v1.FlowSchemaSpec", "distinguisherMethod"),
                ),
                age(),
                col(
                    "MissingPL",
                    "string",
                    "references a broken or non-existent PriorityLevelConfiguration",
                ),
            ],
            |o, now| {
                let missing = list(o, "/status/conditions")
                    .iter()
                    .find(|c| text(c, "/type") == "Dangling")
                    .map_or("?", |c| text(c, "/status"));
                cells(vec![
                    n(o),
                    s(text(o, "/spec/priorityLevelConfiguration/name")),
                    json!(int(o, "/spec/matchingPrecedence")),
                    s(or(text(o, "/spec/distinguisherMethod/type"), "<none>")),
                    a(o, now),
                    s(missing),
                ])
            },
        ),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations") => (
            vec![
                name(),
                col(
                    "Type",
                    "string",
                    doc("flowcontrol.v1.PriorityLevelConfigurationSpec", "type"),
                ),
                col(
                    "NominalConcurrencyShares",
                    "string",
                    doc(
                        "flowcontrol.v1.LimitedPriorityLevelConfiguration",
                        "nominalConcurrencyShares",
                    ),
                ),
                col(
                    "Queues",
                    "string",
                    doc("flowcontrol.v1.QueuingConfiguration", "queues"),
                ),
                col(
                    "HandSize",
                    "string",
                    doc("flowcontrol.v1.QueuingConfiguration", "handSize"),
                ),
                col(
                    "QueueLengthLimit",
                    "string",
                    doc("flowcontrol.v1.QueuingConfiguration", "queueLengthLimit"),
                ),
                age(),
            ],
            |o, now| {
                let none = || s("<none>");
                let limited = o.pointer("/spec/limited");
                let queuing = limited.and_then(|l| l.pointer("/limitResponse/queuing"));
                let of = |v: Option<&Value>, at: &str| v.map_or_else(none, |v| json!(int(v, at)));
                cells(vec![
                    n(o),
                    s(text(o, "/spec/type")),
                    of(limited, "/nominalConcurrencyShares"),
                    of(queuing, "/queues"),
                    of(queuing, "/handSize"),
                    of(queuing, "/queueLengthLimit"),
                    a(o, now),
                ])
            },
        ),
        _ => return None,
    };
    Some(Printer { columns, row })
}

/// The `Created At` cell of kube-apiserver's default table convertor (RFC 3339, UTC).
pub(super) fn created_at(o: &Value) -> Value {
    match time(o, "/metadata/creationTimestamp") {
        Some(t) => json!(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
        None => json!("0001-01-01T00:00:00Z"),
    }
}

/// ObjectMeta's description of `field`.
pub(super) fn meta(field: &str) -> &'static str {
    field_description("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", field)
}

/// The description of `field` in `io.k8s.api.<definition>`.
fn doc(definition: &str, field: &str) -> &'static str {
    field_description(&format!("io.k8s.api.{definition}"), field)
}

fn name() -> Column {
    Column {
        name: "Name",
        kind: "string",
        format: "name",
        description: meta("name").into(),
        priority: 0,
    }
}

fn age() -> Column {
    col("Age", "string", meta("creationTimestamp"))
}

fn col(
    name: &'static str,
    kind: &'static str,
    description: impl Into<Cow<'static, str>>,
) -> Column {
    Column {
        name,
        kind,
        format: "",
        description: description.into(),
        priority: 0,
    }
}

fn wide(
    name: &'static str,
    kind: &'static str,
    description: impl Into<Cow<'static, str>>,
) -> Column {
    Column {
        priority: 1,
        ..col(name, kind, description)
    }
}

/// `columns`, then the wide Containers and Images (and Selector when described).
fn workload(mut columns: Vec<Column>, selector: Option<&'static str>) -> Vec<Column> {
    columns.push(wide(
        "Containers",
        "string",
        "Names of each container in the template.",
    ));
    columns.push(wide(
        "Images",
        "string",
        "Images referenced by each container in the template.",
    ));
    if let Some(description) = selector {
        columns.push(wide("Selector", "string", description));
    }
    columns
}

fn template_cells(c: &mut Vec<Value>, o: &Value, spec: &str) {
    let (names, images) = o.pointer(spec).map(containers).unwrap_or_default();
    c.push(s(&names));
    c.push(s(&images));
}

fn cells(cells: Vec<Value>) -> Row {
    Row {
        cells,
        conditions: None,
    }
}

fn n(o: &Value) -> Value {
    o.pointer("/metadata/name").cloned().unwrap_or(Value::Null)
}

fn s(v: &str) -> Value {
    json!(v)
}

fn a(o: &Value, now: jiff::Timestamp) -> Value {
    json!(since(o, "/metadata/creationTimestamp", now))
}

fn keys(o: &Value, at: &str) -> usize {
    o.pointer(at)
        .and_then(Value::as_object)
        .map_or(0, |m| m.len())
}

fn replicas(o: &Value) -> i64 {
    int(o, "/spec/replicas")
}

fn pod_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Ready",
            "string",
            "The aggregate readiness state of this pod for accepting traffic.",
        ),
        col(
            "Status",
            "string",
            "The aggregate status of the containers in this pod.",
        ),
        col(
            "Restarts",
            "string",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        ),
        age(),
        wide("IP", "string", doc("core.v1.PodStatus", "podIP")),
        wide("Node", "string", doc("core.v1.PodSpec", "nodeName")),
        wide(
            "Nominated Node",
            "string",
            doc("core.v1.PodStatus", "nominatedNodeName"),
        ),
        wide(
            "Readiness Gates",
            "string",
            doc("core.v1.PodSpec", "readinessGates"),
        ),
    ]
}

/// `printPod`: READY counts ready running containers (and started restartable init
/// containers); STATUS is the phase or reason refined by init and container states, then
/// `Terminating` for a deleted Pod that has not finished.
fn pod_row(pod: &Value, now: jiff::Timestamp) -> Row {
    let phase = text(pod, "/status/phase");
    let mut reason = or(text(pod, "/status/reason"), phase).to_string();
    let conditions = list(pod, "/status/conditions");
    if conditions
        .iter()
        .any(|c| text(c, "/type") == "PodScheduled" && text(c, "/reason") == "SchedulingGated")
    {
        reason = "SchedulingGated".to_string();
    }
    let row_conditions = match phase {
        "Succeeded" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}]),
        ),
        "Failed" => Some(
            json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]),
        ),
        _ => None,
    };
    let init_specs = list(pod, "/spec/initContainers");
    let restartable = |name: &str| {
        init_specs
            .iter()
            .any(|c| text(c, "/name") == name && text(c, "/restartPolicy") == "Always")
    };
    let total = list(pod, "/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| text(c, "/restartPolicy") == "Always")
            .count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut restartable_restarts = 0;
    let mut last_restart: Option<jiff::Timestamp> = None;
    let mut last_restartable_restart: Option<jiff::Timestamp> = None;
    let later = |a: Option<jiff::Timestamp>, b: Option<jiff::Timestamp>| match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    let mut initializing = false;
    for (i, c) in list(pod, "/status/initContainerStatuses")
        .iter()
        .enumerate()
    {
        let count = int(c, "/restartCount");
        restarts += count;
        let finished = time(c, "/lastState/terminated/finishedAt");
        last_restart = later(last_restart, finished);
        let name = text(c, "/name");
        if restartable(name) {
            restartable_restarts += count;
            last_restartable_restart = later(last_restartable_restart, finished);
        }
        let terminated = c.pointer("/state/terminated");
        let waiting_reason = text(c, "/state/waiting/reason");
        match terminated {
            Some(t) if int(t, "/exitCode") == 0 => continue,
            _ if restartable(name) && c.get("started") == Some(&json!(true)) => {
                if c.get("ready") == Some(&json!(true)) {
                    ready += 1;
                }
                continue;
            }
            Some(t) => {
                reason = match (text(t, "/reason"), int(t, "/signal")) {
                    ("", 0) => format!("Init:ExitCode:{}", int(t, "/exitCode")),
                    ("", signal) => format!("Init:Signal:{signal}"),
                    (r, _) => format!("Init:{r}"),
                };
            }
            None if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" => {
                reason = format!("Init:{waiting_reason}");
            }
            None => reason = format!("Init:{i}/{}", init_specs.len()),
        }
        initializing = true;
        break;
    }
    let initialized = conditions
        .iter()
        .any(|c| text(c, "/type") == "Initialized" && text(c, "/status") == "True");
    if !initializing || initialized {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        for c in list(pod, "/status/containerStatuses").iter().rev() {
            restarts += int(c, "/restartCount");
            last_restart = later(last_restart, time(c, "/lastState/terminated/finishedAt"));
            let waiting = text(c, "/state/waiting/reason");
            let terminated = c.pointer("/state/terminated");
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(t) = terminated {
                reason = match (text(t, "/reason"), int(t, "/signal")) {
                    ("", 0) => format!("ExitCode:{}", int(t, "/exitCode")),
                    ("", signal) => format!("Signal:{signal}"),
                    (r, _) => r.to_string(),
                };
            } else if c.get("ready") == Some(&json!(true)) && c.pointer("/state/running").is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = conditions
                .iter()
                .any(|c| text(c, "/type") == "Ready" && text(c, "/status") == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.to_string();
        }
    }
    let deleting = pod.pointer("/metadata/deletionTimestamp").is_some();
    if deleting && text(pod, "/status/reason") == "NodeLost" {
        reason = "Unknown".to_string();
    } else if deleting && !matches!(phase, "Succeeded" | "Failed") {
        reason = "Terminating".to_string();
    }
    let restarts_cell = match last_restart {
        Some(at) if restarts != 0 => format!(
            "{restarts} ({} ago)",
            super::format::human_duration(now.as_second() - at.as_second())
        ),
        _ => restarts.to_string(),
    };
    let ip = list(pod, "/status/podIPs")
        .first()
        .map(|p| text(p, "/ip"))
        .unwrap_or("");
    let gates = list(pod, "/spec/readinessGates");
    let gates_cell = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let passed = gates
            .iter()
            .filter(|g| {
                let kind = text(g, "/conditionType");
                conditions
                    .iter()
                    .find(|c| text(c, "/type") == kind)
                    .is_some_and(|c| text(c, "/status") == "True")
            })
            .count();
        format!("{passed}/{}", gates.len())
    };
    Row {
        cells: vec![
            n(pod),
            s(&format!("{ready}/{total}")),
            s(&reason),
            s(&restarts_cell),
            a(pod, now),
            s(or(ip, "<none>")),
            s(or(text(pod, "/spec/nodeName"), "<none>")),
            s(or(text(pod, "/status/nominatedNodeName"), "<none>")),
            s(&gates_cell),
        ],
        conditions: row_conditions,
    }
}

fn node_columns() -> Vec<Column> {
    vec![
        name(),
        col("Status", "string", "The status of the node"),
        col("Roles", "string", "The roles of the node"),
        age(),
        col(
            "Version",
            "string",
            doc("core.v1.NodeSystemInfo", "kubeletVersion"),
        ),
        wide(
            "Internal-IP",
            "string",
            doc("core.v1.NodeStatus", "addresses"),
        ),
        wide(
            "External-IP",
            "string",
            doc("core.v1.NodeStatus", "addresses"),
        ),
        wide(
            "OS-Image",
            "string",
            doc("core.v1.NodeSystemInfo", "osImage"),
        ),
        wide(
            "Kernel-Version",
            "string",
            doc("core.v1.NodeSystemInfo", "kernelVersion"),
        ),
        wide(
            "Container-Runtime",
            "string",
            doc("core.v1.NodeSystemInfo", "containerRuntimeVersion"),
        ),
    ]
}

/// `printNode`: `Ready`/`NotReady` from the Ready condition (`Unknown` without one), then
/// `SchedulingDisabled` when cordoned; roles from `node-role.kubernetes.io/<role>` and
/// `kubernetes.io/role` labels.
fn node_row(node: &Value, now: jiff::Timestamp) -> Row {
    let ready = list(node, "/status/conditions")
        .iter()
        .rev()
        .find(|c| text(c, "/type") == "Ready");
    let mut status = vec![match ready {
        Some(c) if text(c, "/status") == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if node.pointer("/spec/unschedulable") == Some(&json!(true)) {
        status.push("SchedulingDisabled");
    }
    let mut roles: Vec<String> = node
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => Some(role.to_string()),
            Some(_) => None,
            None if k == "kubernetes.io/role" => {
                v.as_str().filter(|r| !r.is_empty()).map(str::to_string)
            }
            None => None,
        })
        .collect();
    // kube joins a set's unsorted list; sorted here so the order is stable.
    roles.sort();
    roles.dedup();
    let address = |kind: &str| {
        list(node, "/status/addresses")
            .iter()
            .find(|a| text(a, "/type") == kind)
            .map_or("<none>", |a| text(a, "/address"))
    };
    let info = |field: &str| {
        or(
            text(node, &format!("/status/nodeInfo/{field}")),
            "<unknown>",
        )
    };
    cells(vec![
        n(node),
        s(&status.join(",")),
        s(&if roles.is_empty() {
            "<none>".to_string()
        } else {
            roles.join(",")
        }),
        a(node, now),
        s(text(node, "/status/nodeInfo/kubeletVersion")),
        s(address("InternalIP")),
        s(address("ExternalIP")),
        s(info("osImage")),
        s(info("kernelVersion")),
        s(info("containerRuntimeVersion")),
    ])
}

fn service_columns() -> Vec<Column> {
    vec![
        name(),
        col("Type", "string", doc("core.v1.ServiceSpec", "type")),
        col(
            "Cluster-IP",
            "string",
            doc("core.v1.ServiceSpec", "clusterIP"),
        ),
        col(
            "External-IP",
            "string",
            doc("core.v1.ServiceSpec", "externalIPs"),
        ),
        col("Port(s)", "string", doc("core.v1.ServiceSpec", "ports")),
        age(),
        wide("Selector", "string", doc("core.v1.ServiceSpec", "selector")),
    ]
}

fn service_row(svc: &Value, now: jiff::Timestamp) -> Row {
    let kind = text(svc, "/spec/type");
    let cluster_ip = list(svc, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let external: Vec<&str> = list(svc, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let external_ip = match kind {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => "<none>".to_string(),
        "LoadBalancer" => {
            let mut found: Vec<&str> = Vec::new();
            for ingress in list(svc, "/status/loadBalancer/ingress") {
                let value = or(text(ingress, "/ip"), text(ingress, "/hostname"));
                if !value.is_empty() && !found.contains(&value) {
                    found.push(value);
                }
            }
            found.extend(external.iter().copied());
            if found.is_empty() {
                "<pending>".to_string()
            } else {
                found.join(",")
            }
        }
        "ExternalName" => text(svc, "/spec/externalName").to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = list(svc, "/spec/ports")
        .iter()
        .map(|p| {
            let protocol = text(p, "/protocol");
            match int(p, "/nodePort") {
                0 => format!("{}/{protocol}", int(p, "/port")),
                node_port => format!("{}:{node_port}/{protocol}", int(p, "/port")),
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    };
    cells(vec![
        n(svc),
        s(kind),
        s(cluster_ip),
        s(&external_ip),
        s(&ports),
        a(svc, now),
        s(&labels(svc.pointer("/spec/selector"))),
    ])
}

/// `formatEndpoints`: up to three `ip:port` (or bare IPs for port-less subsets).
fn endpoints(o: &Value) -> String {
    let subsets = list(o, "/subsets");
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    let mut shown: Vec<String> = Vec::new();
    let mut count = 0usize;
    let mut more = false;
    for subset in subsets {
        let addresses = list(subset, "/addresses");
        let ports = list(subset, "/ports");
        if ports.is_empty() {
            count += addresses.len();
            for address in addresses {
                if shown.len() == 3 {
                    more = true;
                    break;
                }
                shown.push(text(address, "/ip").to_string());
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for address in addresses {
                if shown.len() == 3 {
                    more = true;
                    break;
                }
                let ip = text(address, "/ip");
                let p = int(port, "/port");
                shown.push(if ip.contains(':') {
                    format!("[{ip}]:{p}")
                } else {
                    format!("{ip}:{p}")
                });
            }
        }
    }
    let joined = shown.join(",");
    if more {
        format!("{joined} + {} more...", count - 3)
    } else {
        joined
    }
}

fn event_columns() -> Vec<Column> {
    vec![
        col("Last Seen", "string", doc("core.v1.Event", "lastTimestamp")),
        col("Type", "string", doc("core.v1.Event", "type")),
        col("Reason", "string", doc("core.v1.Event", "reason")),
        col("Object", "string", doc("core.v1.Event", "involvedObject")),
        wide(
            "Subobject",
            "string",
            doc("core.v1.ObjectReference", "fieldPath"),
        ),
        wide("Source", "string", doc("core.v1.Event", "source")),
        col("Message", "string", doc("core.v1.Event", "message")),
        wide(
            "First Seen",
            "string",
            doc("core.v1.Event", "firstTimestamp"),
        ),
        wide("Count", "string", doc("core.v1.Event", "count")),
        Column {
            priority: 1,
            ..name()
        },
    ]
}

/// `printEvent`, for `core/v1` Events and (through their deprecated fields)
/// `events.k8s.io/v1` ones.
fn event_row(e: &Value, now: jiff::Timestamp) -> Row {
    let modern = e.get("regarding").is_some() || e.get("note").is_some();
    let field = |core: &str, events: &str| {
        if modern {
            events.to_string()
        } else {
            core.to_string()
        }
    };
    let ago = |at: jiff::Timestamp| super::format::human_duration(now.as_second() - at.as_second());
    let first = time(e, &field("/firstTimestamp", "/deprecatedFirstTimestamp"))
        .or_else(|| time(e, "/eventTime"))
        .map_or("<unknown>".to_string(), ago);
    let mut last = time(e, &field("/lastTimestamp", "/deprecatedLastTimestamp"))
        .map_or_else(|| first.clone(), ago);
    let mut count = int(e, &field("/count", "/deprecatedCount"));
    if let Some(series) = e.get("series").filter(|s| s.is_object()) {
        last = time(series, "/lastObservedTime").map_or("<unknown>".to_string(), ago);
        count = int(series, "/count");
    } else if count == 0 {
        count = 1;
    }
    let object = field("/involvedObject", "/regarding");
    let kind = text(e, &format!("{object}/kind")).to_lowercase();
    let target_name = text(e, &format!("{object}/name"));
    let target = if target_name.is_empty() {
        kind
    } else {
        format!("{kind}/{target_name}")
    };
    let source = field("/source", "/deprecatedSource");
    let component = or(
        text(e, &format!("{source}/component")),
        text(e, "/reportingController"),
    );
    let host = or(
        text(e, &format!("{source}/host")),
        text(e, "/reportingInstance"),
    );
    let source_cell = if host.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {host}")
    };
    cells(vec![
        s(&last),
        s(text(e, "/type")),
        s(text(e, "/reason")),
        s(&target),
        s(text(e, &format!("{object}/fieldPath"))),
        s(&source_cell),
        s(text(e, &field("/message", "/note")).trim()),
        s(&first),
        json!(count),
        n(e),
    ])
}

fn pvc_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Status",
            "string",
            doc("core.v1.PersistentVolumeClaimStatus", "phase"),
        ),
        col(
            "Volume",
            "string",
            doc("core.v1.PersistentVolumeClaimSpec", "volumeName"),
        ),
        col(
            "Capacity",
            "string",
            doc("core.v1.PersistentVolumeClaimStatus", "capacity"),
        ),
        col(
            "Access Modes",
            "string",
            doc("core.v1.PersistentVolumeClaimStatus", "accessModes"),
        ),
        col("StorageClass", "string", "StorageClass of the pvc"),
        col(
            "VolumeAttributesClass",
            "string",
            "VolumeAttributesClass of the pvc",
        ),
        age(),
        wide(
            "VolumeMode",
            "string",
            doc("core.v1.PersistentVolumeClaimSpec", "volumeMode"),
        ),
    ]
}

fn pvc_row(o: &Value, now: jiff::Timestamp) -> Row {
    let phase = if o.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else {
        text(o, "/status/phase")
    };
    let volume = text(o, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            text(o, "/status/capacity/storage").to_string(),
            access_modes(list(o, "/status/accessModes")),
        )
    };
    cells(vec![
        n(o),
        s(phase),
        s(volume),
        s(&capacity),
        s(&modes),
        s(&storage_class(o)),
        s(or(text(o, "/spec/volumeAttributesClassName"), "<unset>")),
        a(o, now),
        s(or(text(o, "/spec/volumeMode"), "<unset>")),
    ])
}

fn pv_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Capacity",
            "string",
            doc("core.v1.PersistentVolumeSpec", "capacity"),
        ),
        col(
            "Access Modes",
            "string",
            doc("core.v1.PersistentVolumeSpec", "accessModes"),
        ),
        col(
            "Reclaim Policy",
            "string",
            doc(
                "core.v1.PersistentVolumeSpec",
                "persistentVolumeReclaimPolicy",
            ),
        ),
        col(
            "Status",
            "string",
            doc("core.v1.PersistentVolumeStatus", "phase"),
        ),
        col(
            "Claim",
            "string",
            doc("core.v1.PersistentVolumeSpec", "claimRef"),
        ),
        col("StorageClass", "string", "StorageClass of the pv"),
        col(
            "VolumeAttributesClass",
            "string",
            "VolumeAttributesClass of the pv",
        ),
        col(
            "Reason",
            "string",
            doc("core.v1.PersistentVolumeStatus", "reason"),
        ),
        age(),
        wide(
            "VolumeMode",
            "string",
            doc("core.v1.PersistentVolumeSpec", "volumeMode"),
        ),
    ]
}

fn pv_row(o: &Value, now: jiff::Timestamp) -> Row {
    let claim = o.pointer("/spec/claimRef").map_or(String::new(), |c| {
        format!("{}/{}", text(c, "/namespace"), text(c, "/name"))
    });
    let phase = if o.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else {
        text(o, "/status/phase")
    };
    let capacity = o
        .pointer("/spec/capacity/storage")
        .and_then(Value::as_str)
        .unwrap_or("0");
    cells(vec![
        n(o),
        s(capacity),
        s(&access_modes(list(o, "/spec/accessModes"))),
        s(text(o, "/spec/persistentVolumeReclaimPolicy")),
        s(phase),
        s(&claim),
        s(&storage_class(o)),
        s(or(text(o, "/spec/volumeAttributesClassName"), "<unset>")),
        s(text(o, "/status/reason")),
        a(o, now),
        s(or(text(o, "/spec/volumeMode"), "<unset>")),
    ])
}

fn deployment_columns() -> Vec<Column> {
    workload(
        vec![
            name(),
            col("Ready", "string", "Number of the pod with ready state"),
            col(
                "Up-to-date",
                "integer",
                doc("apps.v1.DeploymentStatus", "updatedReplicas"),
            ),
            col(
                "Available",
                "integer",
                doc("apps.v1.DeploymentStatus", "availableReplicas"),
            ),
            age(),
        ],
        Some(doc("apps.v1.DeploymentSpec", "selector")),
    )
}

fn deployment_row(o: &Value, now: jiff::Timestamp) -> Row {
    let mut c = vec![
        n(o),
        s(&format!(
            "{}/{}",
            int(o, "/status/readyReplicas"),
            replicas(o)
        )),
        json!(int(o, "/status/updatedReplicas")),
        json!(int(o, "/status/availableReplicas")),
        a(o, now),
    ];
    template_cells(&mut c, o, "/spec/template/spec");
    c.push(s(&selector(o.pointer("/spec/selector"))));
    cells(c)
}

fn daemonset_columns() -> Vec<Column> {
    workload(
        vec![
            name(),
            col(
                "Desired",
                "integer",
                doc("apps.v1.DaemonSetStatus", "desiredNumberScheduled"),
            ),
            col(
                "Current",
                "integer",
                doc("apps.v1.DaemonSetStatus", "currentNumberScheduled"),
            ),
            col(
                "Ready",
                "integer",
                doc("apps.v1.DaemonSetStatus", "numberReady"),
            ),
            col(
                "Up-to-date",
                "integer",
                doc("apps.v1.DaemonSetStatus", "updatedNumberScheduled"),
            ),
            col(
                "Available",
                "integer",
                doc("apps.v1.DaemonSetStatus", "numberAvailable"),
            ),
            col(
                "Node Selector",
                "string",
                doc("core.v1.PodSpec", "nodeSelector"),
            ),
            age(),
        ],
        Some(doc("apps.v1.DaemonSetSpec", "selector")),
    )
}

fn daemonset_row(o: &Value, now: jiff::Timestamp) -> Row {
    let mut c = vec![
        n(o),
        json!(int(o, "/status/desiredNumberScheduled")),
        json!(int(o, "/status/currentNumberScheduled")),
        json!(int(o, "/status/numberReady")),
        json!(int(o, "/status/updatedNumberScheduled")),
        json!(int(o, "/status/numberAvailable")),
        s(&labels(o.pointer("/spec/template/spec/nodeSelector"))),
        a(o, now),
    ];
    template_cells(&mut c, o, "/spec/template/spec");
    c.push(s(&label_selector(o.pointer("/spec/selector"))));
    cells(c)
}

fn job_columns() -> Vec<Column> {
    workload(
        vec![
            name(),
            col("Status", "string", "Status of the job."),
            col(
                "Completions",
                "string",
                doc("batch.v1.JobStatus", "succeeded"),
            ),
            col("Duration", "string", "Time required to complete the job."),
            age(),
        ],
        Some(doc("batch.v1.JobSpec", "selector")),
    )
}

fn job_row(o: &Value, now: jiff::Timestamp) -> Row {
    let succeeded = int(o, "/status/succeeded");
    let completions = match o.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(total) => format!("{succeeded}/{total}"),
        None => match int(o, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (
        time(o, "/status/startTime"),
        time(o, "/status/completionTime"),
    ) {
        (None, _) => String::new(),
        (Some(start), None) => super::format::human_duration(now.as_second() - start.as_second()),
        (Some(start), Some(end)) => {
            super::format::human_duration(end.as_second() - start.as_second())
        }
    };
    let conditions = list(o, "/status/conditions");
    let has = |kind: &str| {
        conditions
            .iter()
            .find(|c| text(c, "/type") == kind)
            .is_some_and(|c| text(c, "/status") == "True")
    };
    let status = if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if o.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let mut c = vec![n(o), s(status), s(&completions), s(&duration), a(o, now)];
    template_cells(&mut c, o, "/spec/template/spec");
    c.push(s(&label_selector(o.pointer("/spec/selector"))));
    cells(c)
}

fn cronjob_columns() -> Vec<Column> {
    workload(
        vec![
            name(),
            col(
                "Schedule",
                "string",
                doc("batch.v1.CronJobSpec", "schedule"),
            ),
            col(
                "Timezone",
                "string",
                doc("batch.v1.CronJobSpec", "timeZone"),
            ),
            col("Suspend", "boolean", doc("batch.v1.CronJobSpec", "suspend")),
            col("Active", "integer", doc("batch.v1.CronJobStatus", "active")),
            col(
                "Last Schedule",
                "string",
                doc("batch.v1.CronJobStatus", "lastScheduleTime"),
            ),
            age(),
        ],
        Some(doc("batch.v1.JobSpec", "selector")),
    )
}

fn cronjob_row(o: &Value, now: jiff::Timestamp) -> Row {
    let last = if o.pointer("/status/lastScheduleTime").is_some() {
        since(o, "/status/lastScheduleTime", now)
    } else {
        "<none>".to_string()
    };
    let suspend = match o.pointer("/spec/suspend").and_then(Value::as_bool) {
        Some(b) => json!(b),
        None => json!("<unset>"),
    };
    let mut c = vec![
        n(o),
        s(text(o, "/spec/schedule")),
        s(or(text(o, "/spec/timeZone"), "<none>")),
        suspend,
        json!(list(o, "/status/active").len()),
        s(&last),
        a(o, now),
    ];
    template_cells(&mut c, o, "/spec/jobTemplate/spec/template/spec");
    c.push(s(&label_selector(
        o.pointer("/spec/jobTemplate/spec/selector"),
    )));
    cells(c)
}

fn ingress_columns() -> Vec<Column> {
    vec![
        name(),
        col(
            "Class",
            "string",
            "The name of the IngressClass resource that should be used for additional configuration",
        ),
        col(
            "Hosts",
            "string",
            "Hosts that incoming requests are matched against before the ingress rule",
        ),
        col(
            "Address",
            "string",
            "Address is a list containing ingress points for the load-balancer",
        ),
        col("Ports", "string", "Ports of TLS configurations that open"),
        age(),
    ]
}

fn ingress_row(o: &Value, now: jiff::Timestamp) -> Row {
    let rules = list(o, "/spec/rules");
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == 3 {
            more = true;
        }
        let host = text(rule, "/host");
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    let hosts = match (hosts.is_empty(), more) {
        (true, _) => "*".to_string(),
        (false, true) => format!("{} + {} more...", hosts.join(","), rules.len() - 3),
        (false, false) => hosts.join(","),
    };
    let mut address: Vec<&str> = Vec::new();
    for ingress in list(o, "/status/loadBalancer/ingress") {
        let value = or(text(ingress, "/ip"), text(ingress, "/hostname"));
        if !value.is_empty() && !address.contains(&value) {
            address.push(value);
        }
    }
    let ports = if list(o, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    cells(vec![
        n(o),
        s(or(text(o, "/spec/ingressClassName"), "<none>")),
        s(&hosts),
        s(&address.join(",")),
        s(ports),
        a(o, now),
    ])
}

/// `printRoleBinding`: `Kind/name` of the role, then users, groups and
/// `namespace/name` service accounts.
fn binding_row(o: &Value, now: jiff::Timestamp) -> Row {
    let role = format!("{}/{}", text(o, "/roleRef/kind"), text(o, "/roleRef/name"));
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for subject in list(o, "/subjects") {
        let name = text(subject, "/name");
        match text(subject, "/kind") {
            "User" => users.push(name.to_string()),
            "Group" => groups.push(name.to_string()),
            "ServiceAccount" => sas.push(format!("{}/{name}", text(subject, "/namespace"))),
            _ => {}
        }
    }
    cells(vec![
        n(o),
        s(&role),
        a(o, now),
        s(&users.join(", ")),
        s(&groups.join(", ")),
        s(&sas.join(", ")),
    ])
}

/// `printHorizontalPodAutoscaler`, for `autoscaling/v2` objects and `v1` ones (whose CPU
/// target reads as a Resource metric, as the internal version holds it).
fn hpa_row(o: &Value, now: jiff::Timestamp) -> Row {
    let reference = format!(
        "{}/{}",
        text(o, "/spec/scaleTargetRef/kind"),
        text(o, "/spec/scaleTargetRef/name")
    );
    let targets = if let Some(cpu) = o.pointer("/spec/targetCPUUtilizationPercentage") {
        let current = o
            .pointer("/status/currentCPUUtilizationPercentage")
            .and_then(Value::as_i64)
            .map_or("<unknown>".to_string(), |c| format!("{c}%"));
        format!("cpu: {current}/{}%", cpu.as_i64().unwrap_or(0))
    } else {
        hpa_metrics(list(o, "/spec/metrics"), list(o, "/status/currentMetrics"))
    };
    let min = o
        .pointer("/spec/minReplicas")
        .and_then(Value::as_i64)
        .map_or("<unset>".to_string(), |m| m.to_string());
    cells(vec![
        n(o),
        s(&reference),
        s(&targets),
        s(&min),
        json!(int(o, "/spec/maxReplicas")),
        json!(int(o, "/status/currentReplicas")),
        a(o, now),
    ])
}

/// `formatHPAMetrics`: `current/target` per metric, at most two then `+ N more...`.
fn hpa_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let unknown = || "<unknown>".to_string();
    let quantity = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let mut shown = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i);
        let kind = text(spec, "/type");
        let source = match kind {
            "External" => "external",
            "Pods" => "pods",
            "Object" => "object",
            "Resource" => "resource",
            "ContainerResource" => "containerResource",
            _ => {
                shown.push("<unknown type>".to_string());
                continue;
            }
        };
        let target = spec
            .pointer(&format!("/{source}/target"))
            .cloned()
            .unwrap_or_default();
        let current = status.and_then(|s| s.pointer(&format!("/{source}/current")).cloned());
        let entry = match kind {
            "Pods" => format!(
                "{}/{}",
                quantity(current.as_ref().and_then(|c| c.get("averageValue")))
                    .unwrap_or_else(unknown),
                text(&target, "/averageValue")
            ),
            "External" | "Object" => match target.get("averageValue") {
                Some(avg) => format!(
                    "{}/{} (avg)",
                    quantity(current.as_ref().and_then(|c| c.get("averageValue")))
                        .unwrap_or_else(unknown),
                    avg.as_str().unwrap_or("")
                ),
                None => format!(
                    "{}/{}",
                    quantity(current.as_ref().and_then(|c| c.get("value"))).unwrap_or_else(unknown),
                    text(&target, "/value")
                ),
            },
            _ => {
                let name = text(spec, &format!("/{source}/name"));
                match target.get("averageValue") {
                    Some(avg) => format!(
                        "{name}: {}/{}",
                        quantity(current.as_ref().and_then(|c| c.get("averageValue")))
                            .unwrap_or_else(unknown),
                        avg.as_str().unwrap_or("")
                    ),
                    None => {
                        let current = current
                            .as_ref()
                            .and_then(|c| c.get("averageUtilization"))
                            .and_then(Value::as_i64)
                            .map_or_else(unknown, |u| format!("{u}%"));
                        let target = target
                            .get("averageUtilization")
                            .and_then(Value::as_i64)
                            .map_or("<auto>".to_string(), |u| format!("{u}%"));
                        format!("{name}: {current}/{target}")
                    }
                }
            }
        };
        shown.push(entry);
    }
    let count = shown.len();
    if count > 2 {
        format!("{} + {} more...", shown[..2].join(", "), count - 2)
    } else {
        shown.join(", ")
    }
}
