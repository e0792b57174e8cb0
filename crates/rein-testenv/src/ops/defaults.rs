//! Per-kind defaulting, as kube-apiserver applies it when it decodes a write: a small table
//! for the kinds controllers and kubectl use most (Pods and pod templates, workloads, Jobs,
//! CronJobs, Services with ClusterIP and NodePort allocation, Secrets), and the Job
//! strategy's generated selector. Fields the client set are kept.

use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::{Map, Value, json};

use crate::resources::ResourceDef;

/// Fills in the defaults of `obj`'s kind. `old` is the stored object on update (a Service
/// keeps its allocated cluster IPs when an update leaves them out).
pub(crate) fn apply(def: &ResourceDef, obj: &mut Value, old: Option<&Value>) {
    if def.custom {
        return;
    }
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => {
            let spec = at(obj, &["spec"]);
            pod_spec(spec, true);
            requests_from_limits(spec);
        }
        ("", "podtemplates") => pod_spec(at(obj, &["template", "spec"]), true),
        ("", "replicationcontrollers") => {
            let spec = at(obj, &["spec"]);
            default(spec, "replicas", json!(1));
            pod_spec(at_map(spec, &["template", "spec"]), true);
        }
        ("", "services") => service(obj, old),
        ("", "secrets") => default(object(obj), "type", json!("Opaque")),
        ("", "limitranges") => crate::plugins::default_limit_range(obj),
        ("apps", "deployments") => deployment(at(obj, &["spec"])),
        ("apps", "replicasets") => {
            let spec = at(obj, &["spec"]);
            default(spec, "replicas", json!(1));
            pod_spec(at_map(spec, &["template", "spec"]), true);
        }
        ("apps", "statefulsets") => stateful_set(at(obj, &["spec"])),
        ("apps", "daemonsets") => daemon_set(at(obj, &["spec"])),
        ("batch", "jobs") => job(at(obj, &["spec"])),
        ("batch", "cronjobs") => {
            let spec = at(obj, &["spec"]);
            default(spec, "concurrencyPolicy", json!("Allow"));
            default(spec, "suspend", json!(false));
            default(spec, "successfulJobsHistoryLimit", json!(3));
            default(spec, "failedJobsHistoryLimit", json!(1));
            job(at_map(spec, &["jobTemplate", "spec"]));
        }
        _ => {}
    }
}

fn deployment(spec: &mut Map<String, Value>) {
    default(spec, "replicas", json!(1));
    default(spec, "revisionHistoryLimit", json!(10));
    default(spec, "progressDeadlineSeconds", json!(600));
    let strategy = at_map(spec, &["strategy"]);
    default(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type") == Some(&json!("RollingUpdate")) {
        let rolling = at_map(strategy, &["rollingUpdate"]);
        default(rolling, "maxUnavailable", json!("25%"));
        default(rolling, "maxSurge", json!("25%"));
    }
    pod_spec(at_map(spec, &["template", "spec"]), true);
}

fn stateful_set(spec: &mut Map<String, Value>) {
    default(spec, "replicas", json!(1));
    default(spec, "podManagementPolicy", json!("OrderedReady"));
    default(spec, "revisionHistoryLimit", json!(10));
    let strategy = at_map(spec, &["updateStrategy"]);
    default(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type") == Some(&json!("RollingUpdate")) {
        default(at_map(strategy, &["rollingUpdate"]), "partition", json!(0));
    }
    let retention = at_map(spec, &["persistentVolumeClaimRetentionPolicy"]);
    default(retention, "whenDeleted", json!("Retain"));
    default(retention, "whenScaled", json!("Retain"));
    pod_spec(at_map(spec, &["template", "spec"]), true);
}

fn daemon_set(spec: &mut Map<String, Value>) {
    default(spec, "revisionHistoryLimit", json!(10));
    let strategy = at_map(spec, &["updateStrategy"]);
    default(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type") == Some(&json!("RollingUpdate")) {
        let rolling = at_map(strategy, &["rollingUpdate"]);
        default(rolling, "maxUnavailable", json!(1));
        default(rolling, "maxSurge", json!(0));
    }
    pod_spec(at_map(spec, &["template", "spec"]), true);
}

/// A Job's spec (also inside a CronJob's `jobTemplate`). Its pod template gets no
/// `restartPolicy`: a Job must set `Never` or `OnFailure` itself.
fn job(spec: &mut Map<String, Value>) {
    if is_unset(spec.get("completions")) && is_unset(spec.get("parallelism")) {
        spec.insert("completions".into(), json!(1));
    }
    default(spec, "parallelism", json!(1));
    default(spec, "backoffLimit", json!(6));
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    default(spec, "manualSelector", json!(false));
    default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    pod_spec(at_map(spec, &["template", "spec"]), false);
}

fn pod_spec(spec: &mut Map<String, Value>, restart_policy: bool) {
    if restart_policy {
        default(spec, "restartPolicy", json!("Always"));
    }
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default(spec, "securityContext", json!({}));
    default(spec, "enableServiceLinks", json!(true));
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        let Some(Value::Array(containers)) = spec.get_mut(list) else {
            continue;
        };
        for container in containers.iter_mut().filter_map(Value::as_object_mut) {
            container_defaults(container);
        }
    }
}

/// `SetDefaults_Pod`: a container's requests default to its limits, resource by resource
/// (only on Pods, not on pod templates).
fn requests_from_limits(spec: &mut Map<String, Value>) {
    for list in ["containers", "initContainers"] {
        let Some(Value::Array(containers)) = spec.get_mut(list) else {
            continue;
        };
        for container in containers.iter_mut().filter_map(Value::as_object_mut) {
            let Some(Value::Object(resources)) = container.get_mut("resources") else {
                continue;
            };
            let Some(Value::Object(limits)) = resources.get("limits").cloned() else {
                continue;
            };
            let requests = at_map(resources, &["requests"]);
            for (name, quantity) in limits {
                requests.entry(name).or_insert(quantity);
            }
        }
    }
}

/// The Job strategy's `generateSelector` (unless `manualSelector` is true): the template is
/// labelled with the Job's name and uid, and the selector matches the uid.
pub(crate) fn job_selector(obj: &mut Value, name: &str, uid: &str) {
    if obj.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return;
    }
    let spec = at(obj, &["spec"]);
    let labels = at_map(spec, &["template", "metadata", "labels"]);
    for (key, value) in [
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
        ("controller-uid", uid),
        ("job-name", name),
    ] {
        labels.entry(key).or_insert_with(|| json!(value));
    }
    at_map(spec, &["selector", "matchLabels"])
        .entry("batch.kubernetes.io/controller-uid")
        .or_insert_with(|| json!(uid));
}

fn container_defaults(container: &mut Map<String, Value>) {
    default(
        container,
        "terminationMessagePath",
        json!("/dev/termination-log"),
    );
    default(container, "terminationMessagePolicy", json!("File"));
    let image = container
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let policy = if pulls_always(image) {
        "Always"
    } else {
        "IfNotPresent"
    };
    default(container, "imagePullPolicy", json!(policy));
    if let Some(Value::Array(ports)) = container.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            default(port, "protocol", json!("TCP"));
        }
    }
}

/// `:latest` or no tag (and no digest) pulls every time.
fn pulls_always(image: &str) -> bool {
    if image.contains('@') {
        return false;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        None => true,
        Some((_, tag)) => tag == "latest",
    }
}

fn service(obj: &mut Value, old: Option<&Value>) {
    let spec = at(obj, &["spec"]);
    default(spec, "type", json!("ClusterIP"));
    default(spec, "sessionAffinity", json!("None"));
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            default(port, "protocol", json!("TCP"));
            if let Some(number) = port.get("port").cloned() {
                default(port, "targetPort", number);
            }
        }
    }
    if kind == "ExternalName" {
        return;
    }
    default(spec, "internalTrafficPolicy", json!("Cluster"));
    if kind == "NodePort" || kind == "LoadBalancer" {
        default(spec, "externalTrafficPolicy", json!("Cluster"));
        if kind == "LoadBalancer" {
            default(spec, "allocateLoadBalancerNodePorts", json!(true));
        }
        let allocates =
            kind == "NodePort" || spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false));
        if allocates {
            node_ports(spec, old);
        }
    }
    let kept = old.and_then(|o| o.pointer("/spec/clusterIP")).cloned();
    if is_unset(spec.get("clusterIP"))
        && let Some(ip) = kept
    {
        spec.insert("clusterIP".into(), ip);
        if let Some(ips) = old.and_then(|o| o.pointer("/spec/clusterIPs")) {
            spec.insert("clusterIPs".into(), ips.clone());
        }
    }
    if is_unset(spec.get("clusterIP")) {
        spec.insert("clusterIP".into(), json!(allocate_cluster_ip()));
    }
    if let Some(ip) = spec.get("clusterIP").cloned() {
        default(spec, "clusterIPs", json!([ip]));
    }
    if spec.get("clusterIP") != Some(&json!("None")) {
        default(spec, "ipFamilies", json!(["IPv4"]));
        default(spec, "ipFamilyPolicy", json!("SingleStack"));
    }
}

/// Gives every port without a `nodePort` one: the port's own from `old` (matched by port and
/// protocol) on update, else a new one from the node-port range 30000–32767.
fn node_ports(spec: &mut Map<String, Value>, old: Option<&Value>) {
    let old_ports = old
        .and_then(|o| o.pointer("/spec/ports"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(Value::Array(ports)) = spec.get_mut("ports") else {
        return;
    };
    for port in ports.iter_mut().filter_map(Value::as_object_mut) {
        if port
            .get("nodePort")
            .and_then(Value::as_i64)
            .is_some_and(|n| n != 0)
        {
            continue;
        }
        let kept = old_ports.iter().find_map(|o| {
            let same =
                o.get("port") == port.get("port") && o.get("protocol") == port.get("protocol");
            same.then(|| o.get("nodePort").cloned()).flatten()
        });
        let node_port = kept.unwrap_or_else(|| json!(allocate_node_port()));
        port.insert("nodePort".into(), node_port);
    }
}

/// The next port of the node-port range 30000–32767, wrapping within it.
fn allocate_node_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const FIRST: u32 = 30000;
    const SIZE: u32 = 32768 - FIRST;
    u16::try_from(FIRST + NEXT.fetch_add(1, Ordering::Relaxed) % SIZE).unwrap_or(30000)
}

/// The next address of the service range 10.96.0.0/12 (10.96.0.1 is the `kubernetes`
/// Service's on a real cluster; allocation starts above it and wraps within the range).
fn allocate_cluster_ip() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const SIZE: u32 = 1 << 20;
    let offset = 10 + NEXT.fetch_add(1, Ordering::Relaxed) % (SIZE - 11);
    let base: u32 = (10 << 24) | (96 << 16);
    std::net::Ipv4Addr::from(base + offset).to_string()
}

fn is_unset(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    }
}

/// Sets `key` unless the client set it.
fn default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if is_unset(map.get(key)) {
        map.insert(key.to_string(), value);
    }
}

/// The object at `path` under `obj`'s root map, created (as `{}`) where missing.
fn at<'a>(obj: &'a mut Value, path: &[&str]) -> &'a mut Map<String, Value> {
    at_map(object(obj), path)
}

fn at_map<'a>(map: &'a mut Map<String, Value>, path: &[&str]) -> &'a mut Map<String, Value> {
    let mut current = map;
    for key in path {
        let entry = current.entry(key.to_string()).or_insert_with(|| json!({}));
        current = object(entry);
    }
    current
}

/// `value` as a map, replacing a non-object (which validation would have refused).
fn object(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = json!({});
    }
    match value {
        Value::Object(map) => map,
        _ => unreachable!("just made an object"),
    }
}

#[cfg(test)]
mod tests {
    use super::pulls_always;

    #[test]
    fn image_pull_policy_follows_the_tag() {
        assert!(pulls_always("nginx"));
        assert!(pulls_always("nginx:latest"));
        assert!(pulls_always("registry:5000/team/app"));
        assert!(!pulls_always("registry:5000/team/app:1.2"));
        assert!(!pulls_always("nginx:1.27"));
        assert!(!pulls_always("nginx@sha256:abc"));
    }
}
