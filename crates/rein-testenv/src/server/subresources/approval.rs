//! `certificatesigningrequests/approval`: GET answers the CSR; PUT and PATCH change nothing
//! but `status.conditions`, as kube-apiserver's approval strategy (each condition without
//! times gets them now), validated as its `ValidateCertificateSigningRequestApprovalUpdate`:
//! a condition needs a type and a status; `Approved`, `Denied` and `Failed` must be `True`,
//! appear once, and may not be removed; `Approved` and `Denied` exclude each other.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Ctx, current, update_body};
use crate::ops::{self, Subresource, Target, WriteOpts, meta};
use crate::patch;
use crate::schema::Cause;
use crate::status::ApiError;

/// The condition types the approval subresource guards.
const GUARDED: [&str; 3] = ["Approved", "Denied", "Failed"];

/// PUT or PATCH (`patch`) `certificatesigningrequests/{name}/approval`.
pub(super) fn update(ctx: &Ctx<'_>, name: &str, patch: bool) -> Result<(u16, Value), ApiError> {
    let old = current(ctx, name)?;
    let body = update_body(
        ctx,
        &old,
        &patch::Gvk::new("certificates.k8s.io", "v1", "CertificateSigningRequest"),
        patch,
    )?;
    let now = meta::now();
    let conditions: Vec<Value> = body
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut c| {
            for time in ["lastUpdateTime", "lastTransitionTime"] {
                if c.get(time).is_none_or(Value::is_null) {
                    c[time] = json!(now);
                }
            }
            c
        })
        .collect();
    let def = &ctx.path.def;
    if ctx.state.validate {
        let causes = validate(&old, &conditions);
        if !causes.is_empty() {
            return Err(ApiError::invalid_causes(def, name, &causes));
        }
    }
    let mut new = Value::clone(&old);
    if !new.get("status").is_some_and(Value::is_object) {
        new["status"] = json!({});
    }
    if conditions.is_empty() {
        if let Some(status) = new["status"].as_object_mut() {
            status.remove("conditions");
        }
    } else {
        new["status"]["conditions"] = Value::Array(conditions);
    }
    match body.pointer("/metadata/resourceVersion") {
        Some(rv @ Value::String(_)) => {
            meta::meta_mut(&mut new).insert("resourceVersion".into(), rv.clone())
        }
        _ => meta::meta_mut(&mut new).remove("resourceVersion"),
    };
    let target = Target {
        catalogue: &ctx.state.catalogue,
        def,
        version: &ctx.path.version,
    };
    let opts = WriteOpts {
        dry_run: ctx.q.dry_run,
        field_manager: ctx.q.field_manager.clone().unwrap_or_default(),
        managed_fields_done: false,
        keep_identity: false,
        skip_validation: true,
        admission: crate::plugins::Plugins::default(),
    };
    let key = (String::new(), name.to_string());
    let mut txn = ctx.state.store.lock();
    let stored = ops::update(&mut txn, target, &key, new, Subresource::Status, &opts)?;
    Ok((200, Value::clone(&stored)))
}

/// The approval update's checks of `conditions` against the stored CSR.
fn validate(old: &Arc<Value>, conditions: &[Value]) -> Vec<Cause> {
    let mut causes = Vec::new();
    let text = |c: &Value, f: &str| {
        c.get(f)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut seen: Vec<String> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let path = format!("status.conditions[{i}]");
        let kind = text(c, "type");
        let status = text(c, "status");
        if kind.is_empty() {
            causes.push(Cause::required(&format!("{path}.type"), ""));
        }
        if status.is_empty() {
            causes.push(Cause::required(&format!("{path}.status"), ""));
        } else if GUARDED.contains(&kind.as_str()) && status != "True" {
            causes.push(Cause::not_supported(
                &format!("{path}.status"),
                &json!(status),
                &["True".to_string()],
            ));
        } else if !["True", "False", "Unknown"].contains(&status.as_str()) {
            causes.push(Cause::not_supported(
                &format!("{path}.status"),
                &json!(status),
                &[
                    "False".to_string(),
                    "True".to_string(),
                    "Unknown".to_string(),
                ],
            ));
        }
        if GUARDED.contains(&kind.as_str()) {
            if seen.contains(&kind) {
                causes.push(Cause::duplicate(&format!("{path}.type"), &json!(kind)));
            }
            seen.push(kind);
        }
    }
    let count = |list: &[Value], kind: &str| {
        list.iter()
            .filter(|c| c.get("type").and_then(Value::as_str) == Some(kind))
            .count()
    };
    let before: Vec<Value> = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if count(conditions, "Approved") > 0
        && count(conditions, "Denied") > 0
        && !(count(&before, "Approved") > 0 && count(&before, "Denied") > 0)
    {
        causes.push(Cause::forbidden(
            "status.conditions",
            "Approved and Denied conditions are mutually exclusive",
        ));
    }
    for kind in GUARDED {
        if count(conditions, kind) < count(&before, kind) {
            causes.push(Cause::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {kind:?}"),
            ));
        }
    }
    causes
}
