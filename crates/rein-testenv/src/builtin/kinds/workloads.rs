//! Deployments, ReplicaSets, StatefulSets, DaemonSets and ReplicationControllers: a selector
//! that is required, non-empty, matches the template's labels and never changes; replicas not
//! negative; pod templates that restart `Always`.

use serde_json::Value;

use super::{non_negative, pod};
use crate::builtin::field::{FieldError, Path};
use crate::builtin::selector;

/// `ValidateDeployment` / `ValidateDeploymentUpdate`.
pub(crate) fn deployment(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    replicated(obj, "deployment", errs);
    non_negative(
        obj,
        "/spec/revisionHistoryLimit",
        "spec.revisionHistoryLimit",
        errs,
    );
    non_negative(obj, "/spec/minReadySeconds", "spec.minReadySeconds", errs);
    immutable_selector(obj, old, errs);
}

/// `ValidateReplicaSet` / `ValidateReplicaSetUpdate`.
pub(crate) fn replica_set(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    replicated(obj, "deployment", errs);
    immutable_selector(obj, old, errs);
}

/// `ValidateDaemonSet` / `ValidateDaemonSetUpdate`.
pub(crate) fn daemon_set(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    selector_and_template(obj, "daemonset", errs);
    immutable_selector(obj, old, errs);
}

/// `ValidateStatefulSet` / `ValidateStatefulSetUpdate`: beyond the selector, an update may
/// change only replicas, ordinals, template, updateStrategy, the PVC retention policy and
/// minReadySeconds.
pub(crate) fn stateful_set(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    replicated(obj, "statefulset", errs);
    let Some(old) = old else {
        return;
    };
    let strip = |o: &Value| {
        let mut spec = o.get("spec").cloned().unwrap_or(Value::Null);
        if let Some(s) = spec.as_object_mut() {
            for f in [
                "replicas",
                "ordinals",
                "template",
                "updateStrategy",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
            ] {
                s.remove(f);
            }
        }
        spec
    };
    if strip(obj) != strip(old) {
        errs.push(FieldError::forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', \
             'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and \
             'minReadySeconds' are forbidden",
        ));
    }
}

/// `ValidateReplicationController`: its selector is a plain map, defaulted from the template.
pub(crate) fn replication_controller(obj: &Value, errs: &mut Vec<FieldError>) {
    non_negative(obj, "/spec/replicas", "spec.replicas", errs);
    if let Some(template) = obj.pointer("/spec/template") {
        pod::template(template, &Path::new("spec.template"), errs);
        restart_always(template, errs);
    }
}

/// The checks of every kind with `replicas`, a selector and a pod template.
fn replicated(obj: &Value, kind: &str, errs: &mut Vec<FieldError>) {
    non_negative(obj, "/spec/replicas", "spec.replicas", errs);
    selector_and_template(obj, kind, errs);
}

fn selector_and_template(obj: &Value, kind: &str, errs: &mut Vec<FieldError>) {
    let spec = Path::new("spec");
    let selector = obj.pointer("/spec/selector").filter(|s| !s.is_null());
    match selector {
        None => errs.push(FieldError::required(spec.child("selector"), "")),
        Some(sel) => {
            selector::validate(sel, &spec.child("selector"), errs);
            if selector::is_empty(sel) {
                errs.push(FieldError::invalid(
                    spec.child("selector"),
                    sel,
                    format!("empty selector is invalid for {kind}"),
                ));
            }
        }
    }
    let template = obj.pointer("/spec/template").unwrap_or(&Value::Null);
    let labels = template.pointer("/metadata/labels");
    if let Some(sel) = selector
        && !selector::is_empty(sel)
        && !selector::matches(sel, labels)
    {
        errs.push(FieldError::invalid(
            "spec.template.metadata.labels",
            labels.unwrap_or(&Value::Null),
            "`selector` does not match template `labels`",
        ));
    }
    pod::template(template, &spec.child("template"), errs);
    restart_always(template, errs);
}

/// Controllers' pods restart `Always`.
fn restart_always(template: &Value, errs: &mut Vec<FieldError>) {
    let restart = super::text(template, "/spec/restartPolicy");
    if !restart.is_empty() && restart != "Always" {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            restart,
            &["Always"],
        ));
    }
}

/// `spec.selector` may not change (apps/v1).
fn immutable_selector(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let Some(old) = old else {
        return;
    };
    let new = obj.pointer("/spec/selector").unwrap_or(&Value::Null);
    if Some(new) != old.pointer("/spec/selector").or(Some(&Value::Null)) {
        errs.push(FieldError::immutable("spec.selector", new));
    }
}
