//! The smaller kinds of the table: Events (both APIs), LimitRanges, PersistentVolumeClaims,
//! Leases, PodDisruptionBudgets, Ingresses, NetworkPolicies, and RBAC roles and bindings.

use serde_json::{Value, json};

use super::non_negative;
use crate::builtin::field::{FieldError, Path};
use crate::builtin::{names, selector};

/// kube's `ValidateEventCreate` and `ValidateEventUpdate` (`old` on update). Both APIs
/// validate the one internal object, so `obj` is the core form of the Event (an
/// events.k8s.io write converted) and causes name the core fields; `strict` for writes
/// through events.k8s.io, which add the new API's rules to the legacy ones.
pub(crate) fn event(obj: &Value, old: Option<&Value>, strict: bool, errs: &mut Vec<FieldError>) {
    legacy_event(obj, errs);
    if !strict {
        return;
    }
    let set = |field: &str| obj.get(field).is_some_and(|v| !v.is_null());
    let Some(old) = old else {
        event_series(obj, errs);
        if !set("eventTime") {
            errs.push(FieldError::required("eventTime", ""));
        }
        let kind = super::text(obj, "/type");
        if kind != "Normal" && kind != "Warning" {
            errs.push(FieldError::invalid_str(
                "type",
                "",
                format!("has invalid value: {kind}"),
            ));
        }
        for field in ["firstTimestamp", "lastTimestamp"] {
            if set(field) {
                errs.push(FieldError::invalid_str(field, "", "needs to be unset"));
            }
        }
        if obj
            .get("count")
            .and_then(Value::as_i64)
            .is_some_and(|n| n != 0)
        {
            errs.push(FieldError::invalid_str("count", "", "needs to be unset"));
        }
        if !super::text(obj, "/source/component").is_empty()
            || !super::text(obj, "/source/host").is_empty()
        {
            errs.push(FieldError::invalid_str("source", "", "needs to be unset"));
        }
        return;
    };
    if obj.get("series") != old.get("series") {
        event_series(obj, errs);
    }
    // In kube's order (`reason` twice, as kube checks it twice).
    for field in [
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "reason",
        "type",
        "eventTime",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    ] {
        if !same_or_zero(obj.get(field), old.get(field)) {
            let at = if field == "reportingComponent" {
                "reportingController"
            } else {
                field
            };
            errs.push(FieldError::immutable(
                at,
                obj.get(field).unwrap_or(&Value::Null),
            ));
        }
    }
}

/// Whether two values of a Go field are equal, absent counting as the zero value.
fn same_or_zero(a: Option<&Value>, b: Option<&Value>) -> bool {
    a == b || (a.is_none_or(zero_value) && b.is_none_or(zero_value))
}

fn zero_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(b) => !b,
        Value::Object(o) => o.values().all(zero_value),
        Value::Array(a) => a.is_empty(),
    }
}

/// `legacyValidateEvent`: the namespaces agree; an Event with `eventTime` names its reporter,
/// action and reason, within kube's lengths.
fn legacy_event(obj: &Value, errs: &mut Vec<FieldError>) {
    let namespace = super::text(obj, "/metadata/namespace");
    let involved = super::text(obj, "/involvedObject/namespace");
    let new_style = obj.get("eventTime").is_some_and(|t| !t.is_null());
    let mismatch = match (involved.is_empty(), new_style) {
        (false, _) => namespace != involved,
        (true, false) => !namespace.is_empty() && namespace != "default",
        (true, true) => namespace != "default" && namespace != "kube-system",
    };
    if mismatch {
        errs.push(FieldError::invalid_str(
            "involvedObject.namespace",
            involved,
            "does not match event.namespace",
        ));
    }
    if !new_style {
        return;
    }
    // The internal field is `ReportingController`, whatever the API calls it.
    let controller = super::text(obj, "/reportingComponent");
    if controller.is_empty() {
        errs.push(FieldError::required("reportingController", ""));
    }
    for msg in names::qualified_name(controller) {
        errs.push(FieldError::invalid_str(
            "reportingController",
            controller,
            msg,
        ));
    }
    for (field, limit) in [("reportingInstance", 128), ("action", 128), ("reason", 128)] {
        let value = super::text(obj, &format!("/{field}"));
        if value.is_empty() {
            errs.push(FieldError::required(field, ""));
        }
        if value.len() > limit {
            errs.push(FieldError::invalid_str(
                field,
                "",
                format!("can have at most {limit} characters"),
            ));
        }
    }
    if super::text(obj, "/message").len() > 1024 {
        errs.push(FieldError::invalid_str(
            "message",
            "",
            "can have at most 1024 characters",
        ));
    }
}

/// `validateV1EventSeries`: a series counts at least 2 and has its last observed time.
fn event_series(obj: &Value, errs: &mut Vec<FieldError>) {
    let Some(series) = obj.get("series").filter(|s| !s.is_null()) else {
        return;
    };
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errs.push(FieldError::invalid_str(
            "series.count",
            "",
            "should be at least 2",
        ));
    }
    if series.get("lastObservedTime").is_none_or(Value::is_null) {
        errs.push(FieldError::required("series.lastObservedTime", ""));
    }
}

/// `ValidateLimitRange`: each limit's type is a standard one or fully qualified.
pub(crate) fn limit_range(obj: &Value, errs: &mut Vec<FieldError>) {
    for (i, limit) in super::list(obj, "/spec/limits").iter().enumerate() {
        let at = Path::new("spec.limits").index(i).child("type");
        let kind = super::text(limit, "/type");
        let problems = names::qualified_name(kind);
        if !problems.is_empty() {
            for msg in problems {
                errs.push(FieldError::invalid_str(&at, kind, msg));
            }
        } else if !kind.contains('/')
            && !["Pod", "Container", "PersistentVolumeClaim"].contains(&kind)
        {
            errs.push(FieldError::invalid_str(
                &at,
                kind,
                "must be a standard limit type or fully qualified",
            ));
        }
    }
}

/// `ValidateLease`: a positive duration, transitions not negative.
pub(crate) fn lease(obj: &Value, errs: &mut Vec<FieldError>) {
    if let Some(n) = obj
        .pointer("/spec/leaseDurationSeconds")
        .and_then(Value::as_i64)
        && n <= 0
    {
        errs.push(FieldError::invalid(
            "spec.leaseDurationSeconds",
            &Value::from(n),
            "must be greater than 0",
        ));
    }
    non_negative(obj, "/spec/leaseTransitions", "spec.leaseTransitions", errs);
}

/// `ValidatePodDisruptionBudget`: not both bounds, each an integer or a percentage.
pub(crate) fn pdb(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let (min, max) = (spec.get("minAvailable"), spec.get("maxUnavailable"));
    if min.is_some_and(|v| !v.is_null()) && max.is_some_and(|v| !v.is_null()) {
        errs.push(FieldError::invalid(
            "spec",
            spec,
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (field, value) in [("minAvailable", min), ("maxUnavailable", max)] {
        int_or_percent(value, &format!("spec.{field}"), errs);
    }
    if let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) {
        selector::validate(sel, &Path::new("spec.selector"), errs);
    }
    let policy = super::text(spec, "/unhealthyPodEvictionPolicy");
    if !policy.is_empty() && !["AlwaysAllow", "IfHealthyBudget"].contains(&policy) {
        errs.push(FieldError::not_supported(
            "spec.unhealthyPodEvictionPolicy",
            policy,
            &["AlwaysAllow", "IfHealthyBudget"],
        ));
    }
}

fn int_or_percent(value: Option<&Value>, field: &str, errs: &mut Vec<FieldError>) {
    match value {
        Some(Value::Number(n)) if n.as_i64().is_some_and(|i| i < 0) => {
            errs.push(FieldError::invalid(
                field,
                &Value::Number(n.clone()),
                "must be greater than or equal to 0",
            ))
        }
        Some(Value::String(s)) => {
            let percent = s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok());
            match percent {
                None => errs.push(FieldError::invalid_str(
                    field,
                    s,
                    "a valid percent string must be a numeric string followed by an ending '%' \
                     (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )),
                Some(p) if p > 100 => errs.push(FieldError::invalid_str(
                    field,
                    s,
                    "must not be greater than 100%",
                )),
                Some(_) => {}
            }
        }
        _ => {}
    }
}

/// An Ingress host, as `validateIngressRules` and `validateIngressTLS` check it: a DNS name,
/// not an IP address; with a `*`, a wildcard subdomain.
fn ingress_host(at: &Path, host: &str, ip_check: bool, errs: &mut Vec<FieldError>) {
    if ip_check && host.parse::<std::net::IpAddr>().is_ok() {
        errs.push(FieldError::invalid_str(
            at,
            host,
            "must be a DNS name, not an IP address",
        ));
    }
    let problems = if host.contains('*') {
        names::wildcard_dns1123_subdomain(host)
    } else {
        names::dns1123_subdomain(host)
    };
    for problem in problems {
        errs.push(FieldError::invalid_str(at, host, problem));
    }
}

/// `ValidateIngressSpec`: a default backend or rules; TLS and rule hosts; paths with a type,
/// absolute where the type is Exact or Prefix.
pub(crate) fn ingress(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let rules = super::list(spec, "/rules");
    if rules.is_empty() && spec.get("defaultBackend").is_none_or(Value::is_null) {
        errs.push(FieldError::invalid(
            "spec",
            &Value::Array(Vec::new()),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    for (i, rule) in rules.iter().enumerate() {
        let host = super::text(rule, "/host");
        if !host.is_empty() {
            let at = Path::new("spec.rules").index(i).child("host");
            ingress_host(&at, host, true, errs);
        }
        let paths_at = Path::new("spec.rules")
            .index(i)
            .child("http")
            .child("paths");
        if rule.pointer("/http").is_some_and(|h| !h.is_null())
            && super::list(rule, "/http/paths").is_empty()
        {
            errs.push(FieldError::required(&paths_at, ""));
        }
        for (j, path) in super::list(rule, "/http/paths").iter().enumerate() {
            let at = paths_at.index(j);
            let kind = super::text(path, "/pathType");
            let kinds = ["Exact", "ImplementationSpecific", "Prefix"];
            if kind.is_empty() {
                errs.push(FieldError::required(
                    at.child("pathType"),
                    "pathType must be specified",
                ));
            } else if !kinds.contains(&kind) {
                errs.push(FieldError::not_supported(
                    at.child("pathType"),
                    kind,
                    &kinds,
                ));
            } else if kind != "ImplementationSpecific"
                && !super::text(path, "/path").starts_with('/')
            {
                errs.push(FieldError::invalid_str(
                    at.child("path"),
                    super::text(path, "/path"),
                    "must be an absolute path",
                ));
            }
            let backend = path.get("backend").unwrap_or(&Value::Null);
            let service = backend.get("service").filter(|s| !s.is_null());
            let resource = backend.get("resource").filter(|s| !s.is_null());
            match (service, resource) {
                (Some(_), Some(_)) => errs.push(FieldError::invalid(
                    at.child("backend"),
                    backend,
                    "cannot set both resource and service backends",
                )),
                (None, None) => errs.push(FieldError::invalid(
                    at.child("backend"),
                    backend,
                    "resource or service backend is required",
                )),
                (Some(svc), None) if super::text(svc, "/name").is_empty() => errs.push(
                    FieldError::required(at.child("backend").child("service").child("name"), ""),
                ),
                _ => {}
            }
        }
    }
    for (i, tls) in super::list(spec, "/tls").iter().enumerate() {
        let at = Path::new("spec.tls").index(i);
        for (j, host) in super::list(tls, "/hosts").iter().enumerate() {
            let host = host.as_str().unwrap_or_default();
            ingress_host(&at.child("hosts").index(j), host, false, errs);
        }
        let secret = super::text(tls, "/secretName");
        if !secret.is_empty() {
            for problem in names::dns1123_subdomain(secret) {
                errs.push(FieldError::invalid_str(
                    at.child("secretName"),
                    secret,
                    problem,
                ));
            }
        }
    }
}

/// `ValidateNetworkPolicySpec`: the pod selector, policy types, port protocols.
pub(crate) fn network_policy(obj: &Value, errs: &mut Vec<FieldError>) {
    if let Some(sel) = obj.pointer("/spec/podSelector").filter(|s| !s.is_null()) {
        selector::validate(sel, &Path::new("spec.podSelector"), errs);
    }
    let types = super::list(obj, "/spec/policyTypes");
    for (i, t) in types.iter().enumerate() {
        let t = t.as_str().unwrap_or_default();
        if t != "Ingress" && t != "Egress" {
            errs.push(FieldError::not_supported(
                Path::new("spec.policyTypes").index(i),
                t,
                &["Egress", "Ingress"],
            ));
        }
    }
    if types.len() > 2 {
        errs.push(FieldError::invalid(
            "spec.policyTypes",
            &Value::Array(types.to_vec()),
            "may not specify more than two policyTypes",
        ));
    }
    for direction in ["ingress", "egress"] {
        for (i, rule) in super::list(obj, &format!("/spec/{direction}"))
            .iter()
            .enumerate()
        {
            for (j, port) in super::list(rule, "/ports").iter().enumerate() {
                let at = Path::new("spec")
                    .child(direction)
                    .index(i)
                    .child("ports")
                    .index(j);
                super::pod::protocol(port, &at, errs);
            }
        }
    }
}

/// `ValidateRole` / `ValidateClusterRole`: each rule has verbs and what they apply to.
pub(crate) fn role(obj: &Value, errs: &mut Vec<FieldError>) {
    let namespaced = !super::text(obj, "/metadata/namespace").is_empty();
    for (i, rule) in super::list(obj, "/rules").iter().enumerate() {
        let at = Path::new("rules").index(i);
        let count = |f: &str| super::list(rule, &format!("/{f}")).len();
        if count("verbs") == 0 {
            errs.push(FieldError::required(
                at.child("verbs"),
                "verbs must contain at least one value",
            ));
        }
        if count("nonResourceURLs") > 0 {
            let urls = rule.get("nonResourceURLs").unwrap_or(&Value::Null);
            if namespaced {
                errs.push(FieldError::invalid(
                    at.child("nonResourceURLs"),
                    urls,
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if count("apiGroups") + count("resources") + count("resourceNames") > 0 {
                errs.push(FieldError::invalid(
                    at.child("nonResourceURLs"),
                    urls,
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if count("apiGroups") == 0 {
            errs.push(FieldError::required(
                at.child("apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if count("resources") == 0 {
            errs.push(FieldError::required(
                at.child("resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
}

/// `ValidateRoleBinding` / `ValidateClusterRoleBinding` and their updates: a role reference
/// that never changes, well-formed subjects.
pub(crate) fn role_binding(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    const GROUP: &str = "rbac.authorization.k8s.io";
    let namespaced = !super::text(obj, "/metadata/namespace").is_empty();
    let api_group = super::text(obj, "/roleRef/apiGroup");
    if api_group != GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            api_group,
            &[GROUP],
        ));
    }
    let kind = super::text(obj, "/roleRef/kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported("roleRef.kind", kind, kinds));
    }
    if super::text(obj, "/roleRef/name").is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    }
    for (i, subject) in super::list(obj, "/subjects").iter().enumerate() {
        let at = Path::new("subjects").index(i);
        if super::text(subject, "/name").is_empty() {
            errs.push(FieldError::required(at.child("name"), ""));
        }
        let group = super::text(subject, "/apiGroup");
        match super::text(subject, "/kind") {
            "ServiceAccount" => {
                if !group.is_empty() {
                    errs.push(FieldError::not_supported(
                        at.child("apiGroup"),
                        group,
                        &[""],
                    ));
                }
                if !namespaced && super::text(subject, "/namespace").is_empty() {
                    errs.push(FieldError::required(at.child("namespace"), ""));
                }
            }
            "User" | "Group" => {
                if group != GROUP {
                    errs.push(FieldError::not_supported(
                        at.child("apiGroup"),
                        group,
                        &[GROUP],
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                at.child("kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    if let Some(old) = old {
        let role_ref = |o: &Value| {
            json!({
                "apiGroup": super::text(o, "/roleRef/apiGroup"),
                "kind": super::text(o, "/roleRef/kind"),
                "name": super::text(o, "/roleRef/name"),
            })
        };
        if role_ref(obj) != role_ref(old) {
            errs.push(FieldError::invalid(
                "roleRef",
                &role_ref(obj),
                "cannot change roleRef",
            ));
        }
    }
}

/// `ValidatePersistentVolumeClaimSpec` on create: access modes and a storage request.
pub(crate) fn persistent_volume_claim(
    obj: &Value,
    old: Option<&Value>,
    errs: &mut Vec<FieldError>,
) {
    if old.is_some() {
        return;
    }
    let modes = super::list(obj, "/spec/accessModes");
    if modes.is_empty() {
        errs.push(FieldError::required(
            "spec.accessModes",
            "at least 1 access mode is required",
        ));
    }
    let supported = [
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ];
    for mode in modes.iter().filter_map(Value::as_str) {
        if !supported.contains(&mode) {
            errs.push(FieldError::not_supported(
                "spec.accessModes",
                mode,
                &supported,
            ));
        }
    }
    if obj.pointer("/spec/resources/requests/storage").is_none() {
        errs.push(FieldError::required("spec.resources[storage]", ""));
    }
}
