//! Printers of the core group: Pods, Nodes, Services, Events, storage claims, quotas, …

use super::*;

/// The printer for `group`/`plural` in this area, if any.
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
        ("", "events") | ("events.k8s.io", "events") => (event_columns(), event_row),
        ("", "configmaps") => (
            vec![name(), int_col("Data", "core.v1.ConfigMap", "data"), age()],
            |o, now| {
                let count = keys(o, "/data") + keys(o, "/binaryData");
                cells(vec![n(o), json!(count), a(o, now)])
            },
        ),
        ("", "secrets") => (
            vec![
                name(),
                col("Type", "string", doc("core.v1.Secret", "type")),
                int_col("Data", "core.v1.Secret", "data"),
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
        ("", "replicationcontrollers") => (
            replica_columns("core.v1.ReplicationController"),
            |o, now| replica_row(o, now, labels),
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
        _ => return None,
    };
    Some(Printer { columns, row })
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
pub(super) fn pod_row(pod: &Value, now: jiff::Timestamp) -> Row {
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
            human_duration(now.as_second() - at.as_second())
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
pub(super) fn node_row(node: &Value, now: jiff::Timestamp) -> Row {
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
pub(super) fn event_row(e: &Value, now: jiff::Timestamp) -> Row {
    let modern = e.get("regarding").is_some() || e.get("note").is_some();
    let field = |core: &str, events: &str| {
        if modern {
            events.to_string()
        } else {
            core.to_string()
        }
    };
    let ago = |at: jiff::Timestamp| human_duration(now.as_second() - at.as_second());
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
