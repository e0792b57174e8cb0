//! Pods and pod templates (`ValidatePodSpec`, `ValidatePodTemplateSpec`, `ValidatePodUpdate`):
//! containers, their names, images and ports, the restart and DNS policies, and which fields
//! of a Pod's spec an update may change.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::port_number;
use crate::builtin::field::{FieldError, Path};
use crate::builtin::{meta, names};

/// A Pod: its spec, and on update the fields that may not change.
pub(crate) fn pod(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    pod_spec(spec, &Path::new("spec"), errs);
    if let Some(old) = old {
        spec_update(spec, old.get("spec").unwrap_or(&Value::Null), errs);
    }
}

/// A PodTemplate object: its `template`.
pub(crate) fn template_only(obj: &Value, field: &str, errs: &mut Vec<FieldError>) {
    template(
        obj.get(field).unwrap_or(&Value::Null),
        &Path::new(field),
        errs,
    );
}

/// `ValidatePodTemplateSpec` at `path`: the template's labels and annotations, its spec.
pub(crate) fn template(template: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let meta_path = path.child("metadata");
    let template_meta = template.get("metadata").unwrap_or(&Value::Null);
    meta::labels(
        template_meta.get("labels"),
        &meta_path.child("labels"),
        errs,
    );
    meta::annotations(
        template_meta.get("annotations"),
        &meta_path.child("annotations"),
        errs,
    );
    pod_spec(
        template.get("spec").unwrap_or(&Value::Null),
        &path.child("spec"),
        errs,
    );
}

/// `ValidatePodSpec` (the parts operators trip over).
pub(crate) fn pod_spec(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let containers = super::list(spec, "/containers");
    let init = super::list(spec, "/initContainers");
    if containers.is_empty() {
        errs.push(FieldError::required(path.child("containers"), ""));
    }
    let mut names = HashSet::new();
    container_list(init, &path.child("initContainers"), &mut names, errs);
    container_list(containers, &path.child("containers"), &mut names, errs);
    let restart = super::text(spec, "/restartPolicy");
    if !restart.is_empty() && !["Always", "OnFailure", "Never"].contains(&restart) {
        errs.push(FieldError::not_supported(
            path.child("restartPolicy"),
            restart,
            &["Always", "OnFailure", "Never"],
        ));
    }
    let dns = super::text(spec, "/dnsPolicy");
    let dns_values = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
    if !dns.is_empty() && !dns_values.contains(&dns) {
        errs.push(FieldError::not_supported(
            path.child("dnsPolicy"),
            dns,
            &dns_values,
        ));
    }
}

fn container_list(
    containers: &[Value],
    path: &Path,
    names: &mut HashSet<String>,
    errs: &mut Vec<FieldError>,
) {
    for (i, c) in containers.iter().enumerate() {
        let at = path.index(i);
        let name = super::text(c, "/name");
        if name.is_empty() {
            errs.push(FieldError::required(at.child("name"), ""));
        } else {
            for msg in names::dns1123_label(name) {
                errs.push(FieldError::invalid_str(at.child("name"), name, msg));
            }
        }
        if !names.insert(name.to_string()) {
            errs.push(FieldError::duplicate(at.child("name"), &json!(name)));
        }
        if super::text(c, "/image").is_empty() {
            errs.push(FieldError::required(at.child("image"), ""));
        }
        let pull = super::text(c, "/imagePullPolicy");
        if !pull.is_empty() && !["Always", "IfNotPresent", "Never"].contains(&pull) {
            errs.push(FieldError::not_supported(
                at.child("imagePullPolicy"),
                pull,
                &["Always", "IfNotPresent", "Never"],
            ));
        }
        ports(super::list(c, "/ports"), &at.child("ports"), errs);
    }
}

fn ports(ports: &[Value], path: &Path, errs: &mut Vec<FieldError>) {
    let mut seen = HashSet::new();
    for (i, p) in ports.iter().enumerate() {
        let at = path.index(i);
        let name = super::text(p, "/name");
        if !name.is_empty() {
            let problems = names::port_name(name);
            if !problems.is_empty() {
                for msg in problems {
                    errs.push(FieldError::invalid_str(at.child("name"), name, msg));
                }
            } else if !seen.insert(name.to_string()) {
                errs.push(FieldError::duplicate(at.child("name"), &json!(name)));
            }
        }
        port_number(
            p.get("containerPort"),
            &String::from(at.child("containerPort")),
            true,
            errs,
        );
        port_number(
            p.get("hostPort"),
            &String::from(at.child("hostPort")),
            false,
            errs,
        );
        protocol(p, &at, errs);
    }
}

/// A port's `protocol`: TCP, UDP or SCTP.
pub(crate) fn protocol(port: &Value, at: &Path, errs: &mut Vec<FieldError>) {
    let protocol = super::text(port, "/protocol");
    if !protocol.is_empty() && !["SCTP", "TCP", "UDP"].contains(&protocol) {
        errs.push(FieldError::not_supported(
            at.child("protocol"),
            protocol,
            &["SCTP", "TCP", "UDP"],
        ));
    }
}

/// `ValidatePodUpdate`: only images, `activeDeadlineSeconds`, added tolerations,
/// `terminationGracePeriodSeconds` and removed scheduling gates may change.
fn spec_update(new: &Value, old: &Value, errs: &mut Vec<FieldError>) {
    let mut allowed = old.clone();
    for list in ["containers", "initContainers"] {
        let new_list = super::list(new, &format!("/{list}"));
        if let Some(Value::Array(items)) = allowed.get_mut(list)
            && items.len() == new_list.len()
        {
            for (item, updated) in items.iter_mut().zip(new_list) {
                if let (Some(item), Some(image)) = (item.as_object_mut(), updated.get("image")) {
                    item.insert("image".into(), image.clone());
                }
            }
        }
    }
    for field in [
        "activeDeadlineSeconds",
        "tolerations",
        "terminationGracePeriodSeconds",
        "schedulingGates",
    ] {
        if let Some(o) = allowed.as_object_mut() {
            match new.get(field) {
                Some(v) => o.insert(field.into(), v.clone()),
                None => o.remove(field),
            };
        }
    }
    if &allowed != new {
        errs.push(FieldError::forbidden(
            "spec",
            "pod updates may not change fields other than `spec.containers[*].image`,\
             `spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` \
             (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` \
             (allow it to be set to 1 if it was previously negative)",
        ));
    }
}
