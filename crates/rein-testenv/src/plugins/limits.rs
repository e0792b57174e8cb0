//! LimitRanger: a namespace's LimitRanges default a new Pod's container resources and bound
//! the resources of Containers, Pods and PersistentVolumeClaims, with kube's messages.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Op, is_core};
use crate::quantity::Quantity;
use crate::resources::{ResKey, ResourceDef};
use crate::store::Txn;

/// A resource list (`cpu: 100m`), parsed; entries that are no quantity are left out
/// (validation refused them before admission runs).
pub(super) type Resources = BTreeMap<String, Quantity>;

/// The `ResourceList` at `value`.
pub(super) fn resources(value: Option<&Value>) -> Resources {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(v.as_str()?).ok()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// A container's requests as the API server sees them after defaulting: a resource with a
/// limit and no request requests its limit.
pub(super) fn container_requests(container: &Value) -> Resources {
    let mut requests = resources(container.pointer("/resources/requests"));
    for (k, v) in resources(container.pointer("/resources/limits")) {
        requests.entry(k).or_insert(v);
    }
    requests
}

/// A container's limits.
pub(super) fn container_limits(container: &Value) -> Resources {
    resources(container.pointer("/resources/limits"))
}

/// The containers of a Pod's `spec` in `list` (`containers`, `initContainers`).
pub(super) fn containers<'a>(pod: &'a Value, list: &str) -> &'a [Value] {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// What a Pod requests (or limits) as a whole, as `resourcehelper.PodRequests`: the sum over
/// its containers and restartable (sidecar) init containers, and at least what any other
/// init container needs on its own.
pub(super) fn pod_total(pod: &Value, of: fn(&Value) -> Resources) -> Resources {
    let mut total = Resources::new();
    for c in containers(pod, "containers") {
        add_into(&mut total, &of(c));
    }
    let mut sidecars = Resources::new();
    let mut init_peak = Resources::new();
    for c in containers(pod, "initContainers") {
        let own = of(c);
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add_into(&mut total, &own);
            add_into(&mut sidecars, &own);
        } else {
            let mut with_sidecars = sidecars.clone();
            add_into(&mut with_sidecars, &own);
            max_into(&mut init_peak, &with_sidecars);
        }
    }
    max_into(&mut total, &init_peak);
    total
}

/// `into[k] += from[k]` for every `k`.
pub(super) fn add_into(into: &mut Resources, from: &Resources) {
    for (k, v) in from {
        let sum = match into.get(k) {
            Some(have) => have.add(*v),
            None => *v,
        };
        into.insert(k.clone(), sum);
    }
}

fn max_into(into: &mut Resources, from: &Resources) {
    for (k, v) in from {
        let max = into.get(k).map_or(*v, |have| (*have).max(*v));
        into.insert(k.clone(), max);
    }
}

/// kube's `SetDefaults_LimitRangeItem` on a LimitRange: for `Container` items, `default` from
/// `max`, `defaultRequest` from `default`, then from `min`.
pub(crate) fn default_limit_range(obj: &mut Value) {
    let Some(limits) = obj
        .pointer_mut("/spec/limits")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for item in limits.iter_mut().filter_map(Value::as_object_mut) {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let max = item.get("max").and_then(Value::as_object).cloned();
        fill(item, "default", max.as_ref());
        let default = item.get("default").and_then(Value::as_object).cloned();
        fill(item, "defaultRequest", default.as_ref());
        let min = item.get("min").and_then(Value::as_object).cloned();
        fill(item, "defaultRequest", min.as_ref());
        for key in ["default", "defaultRequest"] {
            if item
                .get(key)
                .and_then(Value::as_object)
                .is_some_and(Map::is_empty)
            {
                item.remove(key);
            }
        }
    }
}

/// Copies the entries of `from` that `item[key]` lacks.
fn fill(item: &mut Map<String, Value>, key: &str, from: Option<&Map<String, Value>>) {
    let Some(from) = from else { return };
    let target = item.entry(key).or_insert_with(|| json!({}));
    if !target.is_object() {
        *target = json!({});
    }
    if let Some(target) = target.as_object_mut() {
        for (k, v) in from {
            target.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}

/// The LimitRanges of `namespace`, defaulted as stored by kube-apiserver.
fn ranges(txn: &Txn<'_>, namespace: &str) -> Vec<Value> {
    let res = ResKey {
        group: String::new(),
        plural: "limitranges".into(),
    };
    txn.list(&res, Some(namespace))
        .into_iter()
        .map(|lr| {
            let mut lr = (*lr).clone();
            default_limit_range(&mut lr);
            lr
        })
        .collect()
}

fn items(range: &Value) -> &[Value] {
    range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The mutating half on a Pod create: each LimitRange's Container `default` and
/// `defaultRequest` fill in what a container does not set, recorded in the
/// `kubernetes.io/limit-ranger` annotation.
pub(super) fn default_pod(txn: &Txn<'_>, namespace: &str, pod: &mut Value) {
    for range in ranges(txn, namespace) {
        let mut requests = Map::new();
        let mut limits = Map::new();
        for item in items(&range) {
            if item.get("type").and_then(Value::as_str) != Some("Container") {
                continue;
            }
            if let Some(m) = item.get("defaultRequest").and_then(Value::as_object) {
                requests.extend(m.clone());
            }
            if let Some(m) = item.get("default").and_then(Value::as_object) {
                limits.extend(m.clone());
            }
        }
        if requests.is_empty() && limits.is_empty() {
            continue;
        }
        let mut notes = Vec::new();
        for (list, what) in [
            ("containers", "container"),
            ("initContainers", "init container"),
        ] {
            let Some(cs) = pod
                .pointer_mut(&format!("/spec/{list}"))
                .and_then(Value::as_array_mut)
            else {
                continue;
            };
            for c in cs.iter_mut() {
                merge_container(c, &requests, &limits, what, &mut notes);
            }
        }
        if !notes.is_empty() {
            let meta = crate::ops::meta::meta_mut(pod);
            let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(a) = annotations.as_object_mut() {
                a.insert(
                    "kubernetes.io/limit-ranger".into(),
                    json!(format!("LimitRanger plugin set: {}", notes.join("; "))),
                );
            }
        }
    }
}

/// kube's `mergeContainerResources`: what the container lacks, from the defaults.
fn merge_container(
    container: &mut Value,
    requests: &Map<String, Value>,
    limits: &Map<String, Value>,
    what: &str,
    notes: &mut Vec<String>,
) {
    let name = container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(c) = container.as_object_mut() else {
        return;
    };
    let res = c.entry("resources").or_insert_with(|| json!({}));
    if !res.is_object() {
        *res = json!({});
    }
    let Some(res) = res.as_object_mut() else {
        return;
    };
    // Defaulting already copied limits into missing requests on a real server.
    let own_limits = res.get("limits").and_then(Value::as_object).cloned();
    if let Some(own) = &own_limits {
        let req = res.entry("requests").or_insert_with(|| json!({}));
        if let Some(req) = req.as_object_mut() {
            for (k, v) in own {
                req.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    let mut set = |key: &str, defaults: &Map<String, Value>| {
        let mut names = Vec::new();
        let list = res.entry(key).or_insert_with(|| json!({}));
        if let Some(list) = list.as_object_mut() {
            for (k, v) in defaults {
                if !list.contains_key(k) {
                    list.insert(k.clone(), v.clone());
                    names.push(k.clone());
                }
            }
        }
        names.sort();
        names
    };
    let set_limits = set("limits", limits);
    let set_requests = set("requests", requests);
    for key in ["limits", "requests"] {
        if res
            .get(key)
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            res.remove(key);
        }
    }
    if !set_requests.is_empty() {
        notes.push(format!(
            "{} request for {what} {name}",
            set_requests.join(", ")
        ));
    }
    if !set_limits.is_empty() {
        notes.push(format!("{} limit for {what} {name}", set_limits.join(", ")));
    }
}

/// The validating half: a new Pod's containers and totals, and a PersistentVolumeClaim on
/// create or update, against every LimitRange of the namespace. Answers the reason (kube's
/// aggregate of every violation) when refused.
pub(super) fn validate(
    txn: &Txn<'_>,
    def: &ResourceDef,
    op: Op,
    obj: &Value,
) -> Result<(), String> {
    let pod = is_core(def, "pods");
    let pvc = is_core(def, "persistentvolumeclaims");
    if !(pvc || pod && op == Op::Create) {
        return Ok(());
    }
    let namespace = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut errors = Vec::new();
    for range in ranges(txn, namespace) {
        for item in items(&range) {
            let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
            let min = resources(item.get("min"));
            let max = resources(item.get("max"));
            let ratio = resources(item.get("maxLimitRequestRatio"));
            match (kind, pod) {
                ("Container", true) => {
                    for list in ["containers", "initContainers"] {
                        for c in containers(obj, list) {
                            let req = container_requests(c);
                            let lim = container_limits(c);
                            check_bounds(kind, &min, &max, &ratio, &req, &lim, &mut errors);
                        }
                    }
                }
                ("Pod", true) => {
                    let req = pod_total(obj, container_requests);
                    let lim = pod_total(obj, container_limits);
                    check_bounds(kind, &min, &max, &ratio, &req, &lim, &mut errors);
                }
                ("PersistentVolumeClaim", false) => {
                    let req = resources(obj.pointer("/spec/resources/requests"));
                    for (k, v) in &min {
                        errors.extend(min_constraint(kind, k, *v, &req, &Resources::new()));
                    }
                    for (k, v) in &max {
                        errors.extend(max_request_constraint(kind, k, *v, &req));
                    }
                }
                _ => {}
            }
        }
    }
    match aggregate(errors) {
        None => Ok(()),
        Some(message) => Err(message),
    }
}

fn check_bounds(
    kind: &str,
    min: &Resources,
    max: &Resources,
    ratio: &Resources,
    req: &Resources,
    lim: &Resources,
    errors: &mut Vec<String>,
) {
    for (k, v) in min {
        errors.extend(min_constraint(kind, k, *v, req, lim));
    }
    for (k, v) in max {
        errors.extend(max_constraint(kind, k, *v, req, lim));
    }
    for (k, v) in ratio {
        errors.extend(ratio_constraint(kind, k, *v, req, lim));
    }
}

fn min_constraint(
    kind: &str,
    name: &str,
    enforced: Quantity,
    req: &Resources,
    lim: &Resources,
) -> Option<String> {
    let Some(r) = req.get(name) else {
        return Some(format!(
            "minimum {name} usage per {kind} is {enforced}.  No request is specified"
        ));
    };
    if *r < enforced {
        return Some(format!(
            "minimum {name} usage per {kind} is {enforced}, but request is {r}"
        ));
    }
    match lim.get(name) {
        Some(l) if *l < enforced => Some(format!(
            "minimum {name} usage per {kind} is {enforced}, but limit is {l}"
        )),
        _ => None,
    }
}

fn max_constraint(
    kind: &str,
    name: &str,
    enforced: Quantity,
    req: &Resources,
    lim: &Resources,
) -> Option<String> {
    let Some(l) = lim.get(name) else {
        return Some(format!(
            "maximum {name} usage per {kind} is {enforced}.  No limit is specified"
        ));
    };
    if *l > enforced {
        return Some(format!(
            "maximum {name} usage per {kind} is {enforced}, but limit is {l}"
        ));
    }
    match req.get(name) {
        Some(r) if *r > enforced => Some(format!(
            "maximum {name} usage per {kind} is {enforced}, but request is {r}"
        )),
        _ => None,
    }
}

fn max_request_constraint(
    kind: &str,
    name: &str,
    enforced: Quantity,
    req: &Resources,
) -> Option<String> {
    match req.get(name) {
        None => Some(format!(
            "maximum {name} usage per {kind} is {enforced}.  No request is specified"
        )),
        Some(r) if *r > enforced => Some(format!(
            "maximum {name} usage per {kind} is {enforced}, but request is {r}"
        )),
        Some(_) => None,
    }
}

fn ratio_constraint(
    kind: &str,
    name: &str,
    enforced: Quantity,
    req: &Resources,
    lim: &Resources,
) -> Option<String> {
    let r = req.get(name).filter(|r| !r.is_zero());
    let l = lim.get(name).filter(|l| !l.is_zero());
    let Some(r) = r else {
        return Some(format!(
            "{name} max limit to request ratio per {kind} is {enforced}, but no request is \
             specified or request is 0"
        ));
    };
    let Some(l) = l else {
        return Some(format!(
            "{name} max limit to request ratio per {kind} is {enforced}, but no limit is \
             specified or limit is 0"
        ));
    };
    let observed = l.milli_value() as f64 / r.milli_value() as f64;
    let allowed = enforced.milli_value() as f64 / 1000.0;
    (observed > allowed).then(|| {
        format!(
            "{name} max limit to request ratio per {kind} is {enforced}, but provided ratio \
             is {observed:.6}"
        )
    })
}

/// apimachinery's error aggregate: one message as it is, several (without repeats) as
/// `[a, b]`.
fn aggregate(errors: Vec<String>) -> Option<String> {
    let mut seen = Vec::new();
    for e in errors {
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    match seen.len() {
        0 => None,
        1 => seen.pop(),
        _ => Some(format!("[{}]", seen.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{aggregate, default_limit_range};

    #[test]
    fn limit_ranges_are_defaulted_as_kube_stores_them() {
        let mut lr = json!({"spec": {"limits": [
            {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}},
            {"type": "Pod", "max": {"cpu": "4"}},
        ]}});
        default_limit_range(&mut lr);
        assert_eq!(lr["spec"]["limits"][0]["default"], json!({"cpu": "2"}));
        assert_eq!(
            lr["spec"]["limits"][0]["defaultRequest"],
            json!({"cpu": "2", "memory": "64Mi"})
        );
        assert!(lr["spec"]["limits"][1].get("default").is_none());
    }

    #[test]
    fn errors_aggregate_as_apimachinery_words_them() {
        assert_eq!(aggregate(Vec::new()), None);
        assert_eq!(aggregate(vec!["a".into()]).as_deref(), Some("a"));
        assert_eq!(
            aggregate(vec!["a".into(), "b".into(), "a".into()]).as_deref(),
            Some("[a, b]")
        );
    }
}
