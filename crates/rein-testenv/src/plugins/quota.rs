//! ResourceQuota: what an object charges against its namespace's quotas (kube's quota
//! evaluators for Pods, Services, PersistentVolumeClaims and object counts), the admission
//! check with kube's messages, and the quota controller's `status` (`hard`, `used`).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::limits::{self, Resources};
use super::{Op, is_core};
use crate::quantity::Quantity;
use crate::resources::{ResKey, ResourceDef};
use crate::store::{Txn, object_key};

/// The ResourceQuota resource.
pub(super) fn quotas() -> ResKey {
    ResKey {
        group: String::new(),
        plural: "resourcequotas".into(),
    }
}

/// Resources whose quota needs every container to say how much it uses.
const VALIDATION_SET: [&str; 6] = [
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// The plugin on a write of `obj` (over `old`): answers the reason when a quota refuses it.
pub(super) fn admit(
    txn: &Txn<'_>,
    def: &ResourceDef,
    op: Op,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), String> {
    if !def.namespaced {
        return Ok(());
    }
    let res = def.key();
    let handles_update = matches!(
        (res.group.as_str(), res.plural.as_str()),
        ("", "pods" | "services" | "persistentvolumeclaims")
    );
    if op == Op::Update && !handles_update {
        return Ok(());
    }
    let namespace = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut list = txn.list(&quotas(), Some(namespace));
    if list.is_empty() {
        return Ok(());
    }
    list.sort_by(|a, b| name_of(a).cmp(name_of(b)));
    let mut interesting = Vec::new();
    for quota in &list {
        if !matches_scopes(quota, &res, obj) {
            continue;
        }
        let hard = hard_of(quota);
        let restricted: BTreeSet<&str> = hard
            .keys()
            .map(String::as_str)
            .filter(|k| counted_by(k).as_ref() == Some(&res))
            .collect();
        if is_core(def, "pods") {
            constraints(quota, &restricted, obj)?;
        }
        if !restricted.is_empty() {
            interesting.push(quota);
        }
    }
    let mut delta = usage(&res, obj);
    if op == Op::Update
        && let Some(old) = old
    {
        let before = usage(&res, old);
        for (k, v) in delta.iter_mut() {
            if let Some(b) = before.get(k) {
                *v = v.sub(*b);
                if !is_core(def, "pods") && v.is_negative() {
                    *v = Quantity::zero();
                }
            }
        }
    }
    delta.retain(|_, v| !v.is_zero());
    if delta.is_empty() {
        return Ok(());
    }
    for quota in interesting {
        let hard = hard_of(quota);
        let used = used_of(txn, quota);
        let mut exceeded = Vec::new();
        for (k, requested) in delta.iter().filter(|(k, _)| hard.contains_key(*k)) {
            let before = used.get(k).copied().unwrap_or_else(Quantity::zero);
            if before.add(*requested) > hard[k] {
                exceeded.push((k.clone(), *requested, before, hard[k]));
            }
        }
        if exceeded.is_empty() {
            continue;
        }
        let list = |pick: fn(&(String, Quantity, Quantity, Quantity)) -> Quantity| {
            exceeded
                .iter()
                .map(|e| format!("{}={}", e.0, pick(e)))
                .collect::<Vec<_>>()
                .join(",")
        };
        return Err(format!(
            "exceeded quota: {}, requested: {}, used: {}, limited: {}",
            name_of(quota),
            list(|e| e.1),
            list(|e| e.2),
            list(|e| e.3),
        ));
    }
    Ok(())
}

/// The pod evaluator's `Constraints`: when a quota tracks cpu or memory, every container
/// must say how much it requests or limits.
fn constraints(quota: &Value, restricted: &BTreeSet<&str>, pod: &Value) -> Result<(), String> {
    let required: Vec<&str> = VALIDATION_SET
        .into_iter()
        .filter(|r| restricted.contains(r))
        .collect();
    if required.is_empty() {
        return Ok(());
    }
    let mut missing: std::collections::BTreeMap<&str, BTreeSet<String>> = Default::default();
    for list in ["containers", "initContainers"] {
        for c in limits::containers(pod, list) {
            let has = compute_usage(&limits::container_requests(c), &limits::container_limits(c));
            for r in &required {
                if !has.contains_key(*r) {
                    let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
                    missing.entry(r).or_default().insert(name.to_string());
                }
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, names)| {
            format!(
                "{r} for: {}",
                names.iter().cloned().collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    Err(format!(
        "failed quota: {}: must specify {}",
        name_of(quota),
        parts.join("; ")
    ))
}

/// Recomputes the `status` of every quota in `namespace` that counts objects of `res` (all
/// of them when `res` is ResourceQuota), writing those that changed.
pub(super) fn refresh(txn: &mut Txn<'_>, res: &ResKey, namespace: &str) {
    let rq = quotas();
    let list = txn.list(&rq, Some(namespace));
    for quota in list {
        let key = object_key(&quota);
        let Some(current) = txn.get(&rq, &key) else {
            continue;
        };
        if *res != rq
            && !hard_of(&current)
                .keys()
                .any(|k| counted_by(k).as_ref() == Some(res))
        {
            continue;
        }
        let status = status_of(txn, &current);
        if current.get("status") == Some(&status) {
            continue;
        }
        let mut updated = (*current).clone();
        updated["status"] = status;
        txn.replace(&rq, key, updated);
    }
}

/// The quota controller's view of `quota`: `hard` as its spec says, `used` for every hard
/// resource some evaluator counts.
fn status_of(txn: &Txn<'_>, quota: &Value) -> Value {
    let hard = hard_of(quota);
    let used = used_of(txn, quota);
    let to_map = |r: &Resources| -> Map<String, Value> {
        r.iter()
            .map(|(k, v)| (k.clone(), json!(v.canonical())))
            .collect()
    };
    let mut status = json!({"hard": to_map(&hard)});
    if !used.is_empty() {
        status["used"] = Value::Object(to_map(&used));
    }
    status
}

/// What the objects in `quota`'s namespace use of each of its hard resources.
fn used_of(txn: &Txn<'_>, quota: &Value) -> Resources {
    let namespace = quota
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut used = Resources::new();
    let mut by_resource: std::collections::BTreeMap<(String, String), Vec<String>> =
        Default::default();
    for key in hard_of(quota).keys() {
        if let Some(res) = counted_by(key) {
            by_resource
                .entry((res.group, res.plural))
                .or_default()
                .push(key.clone());
        }
    }
    for ((group, plural), keys) in by_resource {
        let res = ResKey { group, plural };
        let mut sum: Resources = keys.iter().map(|k| (k.clone(), Quantity::zero())).collect();
        for obj in txn.list(&res, Some(namespace)) {
            if !matches_scopes(quota, &res, &obj) {
                continue;
            }
            let u = usage(&res, &obj);
            for k in &keys {
                if let Some(v) = u.get(k) {
                    let total = sum[k].add(*v);
                    sum.insert(k.clone(), total);
                }
            }
        }
        used.extend(sum);
    }
    used
}

/// `spec.hard`, parsed.
fn hard_of(quota: &Value) -> Resources {
    limits::resources(quota.pointer("/spec/hard"))
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Which resource's objects a quota resource name counts.
fn counted_by(key: &str) -> Option<ResKey> {
    let core = |plural: &str| {
        Some(ResKey {
            group: String::new(),
            plural: plural.into(),
        })
    };
    if let Some(rest) = key.strip_prefix("count/") {
        let (plural, group) = rest.split_once('.').unwrap_or((rest, ""));
        return Some(ResKey {
            group: group.into(),
            plural: plural.into(),
        });
    }
    match key {
        "pods" | "cpu" | "memory" | "ephemeral-storage" => core("pods"),
        "services" | "services.nodeports" | "services.loadbalancers" => core("services"),
        "persistentvolumeclaims" | "requests.storage" => core("persistentvolumeclaims"),
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => core(key),
        _ if key.ends_with(".storageclass.storage.k8s.io/requests.storage")
            || key.ends_with(".storageclass.storage.k8s.io/persistentvolumeclaims") =>
        {
            core("persistentvolumeclaims")
        }
        _ if key.starts_with("hugepages-") => core("pods"),
        _ => {
            let rest = key
                .strip_prefix("requests.")
                .or_else(|| key.strip_prefix("limits."))?;
            let native = matches!(rest, "cpu" | "memory" | "ephemeral-storage")
                || rest.starts_with("hugepages-");
            let extended = rest.contains('/') && !rest.contains("kubernetes.io/");
            (native || (extended && key.starts_with("requests."))).then(|| core("pods"))?
        }
    }
}

/// What `obj` of `res` charges: kube's evaluators' `Usage`.
fn usage(res: &ResKey, obj: &Value) -> Resources {
    let mut out = Resources::new();
    let one = Quantity::count(1);
    let count_name = if res.group.is_empty() {
        format!("count/{}", res.plural)
    } else {
        format!("count/{}.{}", res.plural, res.group)
    };
    out.insert(count_name, one);
    if !res.group.is_empty() {
        return out;
    }
    match res.plural.as_str() {
        "pods" => {
            let phase = obj.pointer("/status/phase").and_then(Value::as_str);
            if matches!(phase, Some("Succeeded" | "Failed")) {
                return out;
            }
            let requests = limits::pod_total(obj, limits::container_requests);
            let lims = limits::pod_total(obj, limits::container_limits);
            out.extend(compute_usage(&requests, &lims));
        }
        "services" => {
            out.insert("services".into(), one);
            let ports = obj
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            let all = Quantity::count(ports.len() as i64);
            match obj.pointer("/spec/type").and_then(Value::as_str) {
                Some("NodePort") => {
                    out.insert("services.nodeports".into(), all);
                }
                Some("LoadBalancer") => {
                    let allocate = obj
                        .pointer("/spec/allocateLoadBalancerNodePorts")
                        .and_then(Value::as_bool)
                        != Some(false);
                    let with_ports = ports.iter().filter(|p| p.get("nodePort").is_some()).count();
                    let nodeports = if allocate {
                        all
                    } else {
                        Quantity::count(with_ports as i64)
                    };
                    out.insert("services.nodeports".into(), nodeports);
                    out.insert("services.loadbalancers".into(), one);
                }
                _ => {}
            }
        }
        "persistentvolumeclaims" => {
            out.insert("persistentvolumeclaims".into(), one);
            let class = obj
                .pointer("/spec/storageClassName")
                .and_then(Value::as_str)
                .or_else(|| {
                    obj.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
                        .and_then(Value::as_str)
                })
                .filter(|c| !c.is_empty());
            if let Some(class) = class {
                out.insert(
                    format!("{class}.storageclass.storage.k8s.io/persistentvolumeclaims"),
                    one,
                );
            }
            let storage = limits::resources(obj.pointer("/spec/resources/requests"));
            if let Some(s) = storage.get("storage") {
                out.insert("requests.storage".into(), *s);
                if let Some(class) = class {
                    out.insert(
                        format!("{class}.storageclass.storage.k8s.io/requests.storage"),
                        *s,
                    );
                }
            }
        }
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => {
            out.insert(res.plural.clone(), one);
        }
        _ => {}
    }
    out
}

/// kube's `podComputeUsageHelper`: what requests and limits charge.
fn compute_usage(requests: &Resources, lims: &Resources) -> Resources {
    let mut out = Resources::new();
    out.insert("pods".into(), Quantity::count(1));
    for (k, v) in requests {
        let native = matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage")
            || k.starts_with("hugepages-");
        if native {
            out.insert(k.clone(), *v);
            out.insert(format!("requests.{k}"), *v);
        } else if k.contains('/') && !k.contains("kubernetes.io/") {
            out.insert(format!("requests.{k}"), *v);
        }
    }
    for (k, v) in lims {
        if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage") {
            out.insert(format!("limits.{k}"), *v);
        }
    }
    out
}

/// Whether `quota`'s scopes (`spec.scopes` and `spec.scopeSelector`) select `obj`; scopes
/// only ever select Pods.
fn matches_scopes(quota: &Value, res: &ResKey, obj: &Value) -> bool {
    let mut selectors: Vec<(String, String, Vec<String>)> = Vec::new();
    if let Some(scopes) = quota.pointer("/spec/scopes").and_then(Value::as_array) {
        for s in scopes.iter().filter_map(Value::as_str) {
            selectors.push((s.to_string(), "Exists".into(), Vec::new()));
        }
    }
    if let Some(exprs) = quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
    {
        for e in exprs {
            let text = |f: &str| {
                e.get(f)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let values = e
                .get("values")
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            selectors.push((text("scopeName"), text("operator"), values));
        }
    }
    if selectors.is_empty() {
        return true;
    }
    if !(res.group.is_empty() && res.plural == "pods") {
        return false;
    }
    selectors
        .iter()
        .all(|(scope, op, values)| pod_in_scope(obj, scope, op, values))
}

fn pod_in_scope(pod: &Value, scope: &str, op: &str, values: &[String]) -> bool {
    let matched = match scope {
        "Terminating" => pod
            .pointer("/spec/activeDeadlineSeconds")
            .and_then(Value::as_i64)
            .is_some_and(|s| s >= 0),
        "NotTerminating" => !pod_in_scope(pod, "Terminating", "Exists", &[]),
        "BestEffort" => best_effort(pod),
        "NotBestEffort" => !best_effort(pod),
        "PriorityClass" => {
            let class = pod
                .pointer("/spec/priorityClassName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return match op {
                "In" => values.iter().any(|v| v == class),
                "NotIn" => !values.iter().any(|v| v == class),
                "Exists" => !class.is_empty(),
                "DoesNotExist" => class.is_empty(),
                _ => false,
            };
        }
        _ => false,
    };
    match op {
        "DoesNotExist" => !matched,
        _ => matched,
    }
}

/// A Pod whose containers request and limit no cpu or memory (QoS class BestEffort).
fn best_effort(pod: &Value) -> bool {
    ["containers", "initContainers"].iter().all(|list| {
        limits::containers(pod, list).iter().all(|c| {
            let r = limits::container_requests(c);
            !r.contains_key("cpu") && !r.contains_key("memory")
        })
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{counted_by, usage};
    use crate::resources::ResKey;

    fn core(plural: &str) -> ResKey {
        ResKey {
            group: String::new(),
            plural: plural.into(),
        }
    }

    #[test]
    fn quota_names_map_to_the_resources_that_count_them() {
        let apps = ResKey {
            group: "apps".into(),
            plural: "deployments".into(),
        };
        assert_eq!(counted_by("count/deployments.apps"), Some(apps));
        assert_eq!(counted_by("count/pods"), Some(core("pods")));
        assert_eq!(counted_by("requests.cpu"), Some(core("pods")));
        assert_eq!(counted_by("limits.memory"), Some(core("pods")));
        assert_eq!(counted_by("requests.nvidia.com/gpu"), Some(core("pods")));
        assert_eq!(counted_by("hugepages-2Mi"), Some(core("pods")));
        assert_eq!(
            counted_by("requests.storage"),
            Some(core("persistentvolumeclaims"))
        );
        assert_eq!(
            counted_by("gold.storageclass.storage.k8s.io/requests.storage"),
            Some(core("persistentvolumeclaims"))
        );
        assert_eq!(counted_by("services.nodeports"), Some(core("services")));
        assert_eq!(counted_by("secrets"), Some(core("secrets")));
        assert_eq!(counted_by("limits.nvidia.com/gpu"), None);
        assert_eq!(counted_by("widgets"), None);
    }

    #[test]
    fn pods_charge_compute_until_they_finish() {
        let pod = json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
        }});
        let u = usage(&core("pods"), &pod);
        let show = |k: &str| u.get(k).map(|q| q.canonical());
        assert_eq!(show("pods").as_deref(), Some("1"));
        assert_eq!(show("count/pods").as_deref(), Some("1"));
        // The init container needs more on its own than the containers together.
        assert_eq!(show("requests.cpu").as_deref(), Some("2"));
        assert_eq!(show("requests.memory").as_deref(), Some("1536Mi"));
        assert_eq!(show("limits.memory").as_deref(), Some("1Gi"));
        assert_eq!(show("limits.cpu"), None);
        let mut done = pod.clone();
        done["status"] = json!({"phase": "Failed"});
        let u = usage(&core("pods"), &done);
        assert_eq!(u.keys().collect::<Vec<_>>(), ["count/pods"]);
    }
}
