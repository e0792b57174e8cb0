//! Printers of cluster-wide and networking kinds: RBAC, networking, policy, storage, scheduling, admission, certificates, flow control, ….

use super::*;

/// The printer for `group`/`plural` in this area, if any.
pub(super) fn printer(group: &str, plural: &str) -> Option<Printer> {
    let (columns, row): (Vec<Column>, RowFn) = match (group, plural) {
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
                    num(o, "/status/disruptionsAllowed"),
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
                int_col("Value", "scheduling.v1.PriorityClass", "value"),
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
                    num(o, "/value"),
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
                    .map_or("<none>".to_string(), human_duration);
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
                    num(o, "/spec/matchingPrecedence"),
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
