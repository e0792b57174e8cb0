//! Services (`ValidateService`, `ValidateServiceUpdate`): ports required unless headless or
//! ExternalName, port names when there are several, port numbers and protocols, the type, and
//! cluster IPs that do not change once set.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::{pod, port_number};
use crate::builtin::field::{FieldError, Path};
use crate::builtin::names;

/// A Service; `old` is the stored one on update.
pub(crate) fn service(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let spec = Path::new("spec");
    let kind = super::text(obj, "/spec/type");
    let types = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    if !kind.is_empty() && !types.contains(&kind) {
        errs.push(FieldError::not_supported(spec.child("type"), kind, &types));
    }
    let headless = super::text(obj, "/spec/clusterIP") == "None";
    let ports = super::list(obj, "/spec/ports");
    if ports.is_empty() && !headless && kind != "ExternalName" {
        errs.push(FieldError::required(spec.child("ports"), ""));
    }
    if kind == "ExternalName" && super::text(obj, "/spec/externalName").is_empty() {
        errs.push(FieldError::required(spec.child("externalName"), ""));
    }
    let require_name = ports.len() > 1;
    let mut seen = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let at = spec.child("ports").index(i);
        let name = super::text(port, "/name");
        if name.is_empty() {
            if require_name {
                errs.push(FieldError::required(at.child("name"), ""));
            }
        } else {
            for msg in names::dns1123_label(name) {
                errs.push(FieldError::invalid_str(at.child("name"), name, msg));
            }
            if !seen.insert(name.to_string()) {
                errs.push(FieldError::duplicate(at.child("name"), &json!(name)));
            }
        }
        port_number(
            port.get("port"),
            &String::from(at.child("port")),
            true,
            errs,
        );
        pod::protocol(port, &at, errs);
        match port.get("targetPort") {
            Some(Value::String(named)) => {
                for msg in names::port_name(named) {
                    errs.push(FieldError::invalid_str(at.child("targetPort"), named, msg));
                }
            }
            other => port_number(other, &String::from(at.child("targetPort")), false, errs),
        }
    }
    if let Some(old) = old {
        cluster_ips_update(obj, old, errs);
    }
}

/// `validateServiceClusterIPsRelatedFields` on update: a set cluster IP stays.
fn cluster_ips_update(obj: &Value, old: &Value, errs: &mut Vec<FieldError>) {
    let ips = |o: &Value| -> Vec<Value> { super::list(o, "/spec/clusterIPs").to_vec() };
    let (new_ips, old_ips) = (ips(obj), ips(old));
    if super::text(old, "/spec/type") == "ExternalName"
        || super::text(obj, "/spec/type") == "ExternalName"
    {
        return;
    }
    let headless = |o: &Value| super::text(o, "/spec/clusterIP") == "None";
    if headless(obj) && headless(old) {
        return;
    }
    if new_ips.is_empty() && !old_ips.is_empty() {
        errs.push(FieldError::invalid(
            "spec.clusterIPs[0]",
            &Value::Array(new_ips),
            "primary clusterIP can not be unset",
        ));
        return;
    }
    for (i, ip) in old_ips.iter().enumerate() {
        if new_ips.get(i).is_some_and(|n| n != ip) {
            errs.push(FieldError::invalid(
                format!("spec.clusterIPs[{i}]"),
                &Value::Array(new_ips.clone()),
                "may not change once set",
            ));
        }
    }
}
