//! `pods/ephemeralcontainers`: GET answers the Pod; PUT and PATCH change nothing but
//! `spec.ephemeralContainers`, as kube-apiserver's ephemeral-containers strategy (the rest of
//! the body is ignored), validated as `ValidatePodEphemeralContainersUpdate`: containers may
//! only be added — an existing one may be neither removed nor changed — each named uniquely
//! across all the Pod's containers, with an image, without the fields ephemeral containers
//! may not set, and targeting an existing container.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{Ctx, current, update_body};
use crate::ops::{self, Subresource, Target, WriteOpts, meta};
use crate::patch;
use crate::schema::Cause;
use crate::status::ApiError;

/// The fields an ephemeral container may not set (`validateEphemeralContainers`).
const FORBIDDEN: [&str; 7] = [
    "ports",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "resizePolicy",
    "restartPolicy",
];

/// PUT or PATCH (`patch`) `pods/{name}/ephemeralcontainers`.
pub(super) fn update(ctx: &Ctx<'_>, name: &str, patch: bool) -> Result<(u16, Value), ApiError> {
    let old = current(ctx, name)?;
    let body = update_body(ctx, &old, &patch::Gvk::new("", "v1", "Pod"), patch)?;
    // Everything but the ephemeral containers (and the version the client saw) comes from
    // the stored Pod.
    let mut new = Value::clone(&old);
    match body.pointer("/spec/ephemeralContainers") {
        Some(list) if !list.is_null() => new["spec"]["ephemeralContainers"] = list.clone(),
        _ => {
            if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("ephemeralContainers");
            }
        }
    }
    match body.pointer("/metadata/resourceVersion") {
        Some(rv @ Value::String(_)) => {
            meta::meta_mut(&mut new).insert("resourceVersion".into(), rv.clone())
        }
        _ => meta::meta_mut(&mut new).remove("resourceVersion"),
    };
    let def = &ctx.path.def;
    let target = Target {
        catalogue: &ctx.state.catalogue,
        def,
        version: &ctx.path.version,
    };
    let key = (
        ctx.path.namespace.clone().unwrap_or_default(),
        name.to_string(),
    );
    let opts = |dry_run| WriteOpts {
        dry_run,
        field_manager: ctx.q.field_manager.clone().unwrap_or_default(),
        managed_fields_done: false,
        keep_identity: false,
        skip_validation: true,
        admission: crate::plugins::Plugins::default(),
    };
    let mut txn = ctx.state.store.lock();
    // Defaulted as it would be stored, then checked against the stored Pod.
    let defaulted = ops::update(
        &mut txn,
        target,
        &key,
        new.clone(),
        Subresource::Main,
        &opts(true),
    )?;
    if ctx.state.validate {
        let causes = validate(&old, &defaulted);
        if !causes.is_empty() {
            return Err(ApiError::invalid_causes(def, name, &causes));
        }
    }
    let stored = ops::update(
        &mut txn,
        target,
        &key,
        new,
        Subresource::Main,
        &opts(ctx.q.dry_run),
    )?;
    Ok((200, Value::clone(&stored)))
}

/// `ValidatePodEphemeralContainersUpdate` (the ephemeral containers' part).
fn validate(old: &Arc<Value>, new: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let list = |pod: &Value| -> Vec<Value> {
        pod.pointer("/spec/ephemeralContainers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let names = |pod: &Value, field: &str| -> Vec<String> {
        pod.pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
            .collect()
    };
    let mut seen: HashSet<String> = names(new, "containers").into_iter().collect();
    seen.extend(names(new, "initContainers"));
    let targets = names(new, "containers");
    let new_list = list(new);
    for (i, c) in new_list.iter().enumerate() {
        let path = format!("spec.ephemeralContainers[{i}]");
        let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.is_empty() {
            causes.push(Cause::required(&format!("{path}.name"), ""));
        } else if !seen.insert(name.to_string()) {
            causes.push(Cause::duplicate(&format!("{path}.name"), &json!(name)));
        }
        if c.get("image")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            causes.push(Cause::required(&format!("{path}.image"), ""));
        }
        for field in FORBIDDEN {
            if c.get(field).is_some_and(|v| !v.is_null()) {
                causes.push(Cause::forbidden(
                    &format!("{path}.{field}"),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
        if c.get("resources")
            .and_then(Value::as_object)
            .is_some_and(|r| !r.is_empty())
        {
            causes.push(Cause::forbidden(
                &format!("{path}.resources"),
                "cannot be set for an Ephemeral Container",
            ));
        }
        if let Some(target) = c.get("targetContainerName").and_then(Value::as_str)
            && !target.is_empty()
            && !targets.iter().any(|t| t == target)
        {
            causes.push(Cause {
                reason: "FieldValueNotFound",
                field: format!("{path}.targetContainerName"),
                message: format!("Not found: {}", json!(target)),
                value: Some(json!(target).to_string()),
                detail: String::new(),
            });
        }
    }
    for before in list(old) {
        let name = before
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match new_list
            .iter()
            .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
        {
            None => causes.push(Cause::forbidden(
                "spec.ephemeralContainers",
                &format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            Some(after) if *after != before => causes.push(Cause::forbidden(
                &format!("spec.ephemeralContainers[{name}]"),
                &format!("existing ephemeral containers {name:?} may not be changed\n"),
            )),
            Some(_) => {}
        }
    }
    causes
}
