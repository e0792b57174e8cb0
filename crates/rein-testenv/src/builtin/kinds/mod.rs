//! The one table of per-kind validation: which checks run for which built-in resource, on
//! create and on update, as kube-apiserver's registry strategies call them.

mod batch;
mod cron;
mod data;
mod misc;
mod pod;
mod service;
mod workloads;

use serde_json::Value;

use super::field::FieldError;
use crate::resources::ResourceDef;

/// Validates `obj` as its kind; `old` is the stored object on update.
pub(crate) fn validate(
    def: &ResourceDef,
    obj: &Value,
    old: Option<&Value>,
    errs: &mut Vec<FieldError>,
) {
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => pod::pod(obj, old, errs),
        ("", "podtemplates") => pod::template_only(obj, "template", errs),
        ("", "services") => service::service(obj, old, errs),
        ("", "configmaps") => data::config_map(obj, old, errs),
        ("", "secrets") => data::secret(obj, old, errs),
        ("", "events") => misc::event(obj, old, false, errs),
        ("", "limitranges") => misc::limit_range(obj, errs),
        ("", "persistentvolumeclaims") => misc::persistent_volume_claim(obj, old, errs),
        ("", "replicationcontrollers") => workloads::replication_controller(obj, errs),
        ("apps", "deployments") => workloads::deployment(obj, old, errs),
        ("apps", "replicasets") => workloads::replica_set(obj, old, errs),
        ("apps", "statefulsets") => workloads::stateful_set(obj, old, errs),
        ("apps", "daemonsets") => workloads::daemon_set(obj, old, errs),
        ("batch", "jobs") => batch::job(obj, old, errs),
        ("batch", "cronjobs") => batch::cron_job(obj, old, errs),
        ("coordination.k8s.io", "leases") => misc::lease(obj, errs),
        ("policy", "poddisruptionbudgets") => misc::pdb(obj, errs),
        ("networking.k8s.io", "ingresses") => misc::ingress(obj, errs),
        ("networking.k8s.io", "networkpolicies") => misc::network_policy(obj, errs),
        ("rbac.authorization.k8s.io", "roles" | "clusterroles") => misc::role(obj, errs),
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => {
            misc::role_binding(obj, old, errs)
        }
        ("events.k8s.io", "events") => {
            // Validated as the core Event both APIs store.
            let core = |o: &Value| crate::resources::to_storage(&def.group, &def.plural, o.clone());
            let old = old.map(core);
            misc::event(&core(obj), old.as_ref(), true, errs);
        }
        _ => {}
    }
}

/// The string at `pointer`, or `""`.
pub(crate) fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The array at `pointer`, or an empty slice.
pub(crate) fn list<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `ValidateNonnegativeField`.
pub(crate) fn non_negative(obj: &Value, pointer: &str, field: &str, errs: &mut Vec<FieldError>) {
    if let Some(n) = obj.pointer(pointer).and_then(Value::as_i64)
        && n < 0
    {
        errs.push(FieldError::invalid(
            field,
            &Value::from(n),
            "must be greater than or equal to 0",
        ));
    }
}

/// `IsValidPortNum`.
pub(crate) fn port_number(
    value: Option<&Value>,
    field: &str,
    required: bool,
    errs: &mut Vec<FieldError>,
) {
    match value.and_then(Value::as_i64) {
        None | Some(0) if required => errs.push(FieldError::required(field, "")),
        None | Some(0) => {}
        Some(n) if !(1..=65535).contains(&n) => errs.push(FieldError::invalid(
            field,
            &Value::from(n),
            "must be between 1 and 65535, inclusive",
        )),
        Some(_) => {}
    }
}
