//! `pods/binding`: POST a `Binding` to assign a Pod to a node, as kube-apiserver's
//! `BindingREST`: `spec.nodeName` set, the Binding's annotations copied onto the Pod, the
//! `PodScheduled` condition set to `True`; a Pod already bound, being deleted or held by
//! scheduling gates answers 409 Conflict on `pods/binding`.

use serde_json::{Value, json};

use super::{Ctx, created_status, plain_error, posted};
use crate::ops::meta;
use crate::status::ApiError;

/// POST `pods/{name}/binding`.
pub(super) fn create(
    ctx: &Ctx<'_>,
    name: &str,
    admitted: Option<Value>,
) -> Result<(u16, Value), ApiError> {
    let binding = posted(ctx, admitted)?;
    if meta::meta_str(&binding, "name").unwrap_or_default() != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    check_namespace(ctx, &binding)?;
    // `ValidatePodBinding`, whose errors reach the client as a plain (500) error.
    let kind = text(&binding, "/target/kind");
    let target = text(&binding, "/target/name");
    let mut errors = Vec::new();
    if !kind.is_empty() && kind != "Node" {
        errors.push(format!(
            "target.kind: Unsupported value: \"{kind}\": supported values: \"Node\", \"<empty>\""
        ));
    }
    if target.is_empty() {
        errors.push("target.name: Required value".to_string());
    }
    match errors.len() {
        0 => {}
        1 => return Err(plain_error(errors.remove(0))),
        _ => return Err(plain_error(format!("[{}]", errors.join(", ")))),
    }
    let def = &ctx.path.def;
    let key = (
        ctx.path.namespace.clone().unwrap_or_default(),
        name.to_string(),
    );
    let mut txn = ctx.state.store.lock();
    let pod = txn
        .get(&def.key(), &key)
        .ok_or_else(|| ApiError::not_found(def, name))?;
    let uid = meta::meta_str(&binding, "uid").unwrap_or_default();
    if !uid.is_empty() && Some(uid) != meta::meta_str(&pod, "uid") {
        return Err(ApiError::conflict(
            def,
            name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta::meta_str(&pod, "uid").unwrap_or_default()
            ),
        ));
    }
    let rv = meta::meta_str(&binding, "resourceVersion").unwrap_or_default();
    if !rv.is_empty() && Some(rv) != meta::meta_str(&pod, "resourceVersion") {
        return Err(ApiError::conflict_modified(def, name));
    }
    let refuse = |why: String| {
        ApiError::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on pods/binding \"{name}\": {why}"),
        )
        .with_details(json!({"name": name, "kind": "pods/binding"}))
    };
    if meta::is_deleting(&pod) {
        return Err(refuse(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        )));
    }
    let bound = text(&pod, "/spec/nodeName");
    if !bound.is_empty() {
        return Err(refuse(format!(
            "pod {name} is already assigned to node \"{bound}\""
        )));
    }
    if pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty())
    {
        return Err(refuse(format!(
            "pod {name} has non-empty .spec.schedulingGates"
        )));
    }
    let mut updated = (*pod).clone();
    updated["spec"]["nodeName"] = json!(target);
    if let Some(Value::Object(annotations)) = binding.pointer("/metadata/annotations") {
        let m = meta::meta_mut(&mut updated);
        let into = m.entry("annotations").or_insert_with(|| json!({}));
        if let Some(into) = into.as_object_mut() {
            for (k, v) in annotations {
                into.insert(k.clone(), v.clone());
            }
        }
    }
    set_scheduled(&mut updated);
    if !ctx.q.dry_run {
        txn.replace(&def.key(), key, updated);
    }
    Ok(created_status())
}

/// The object's namespace, when it gives one, must be the request's.
pub(super) fn check_namespace(ctx: &Ctx<'_>, obj: &Value) -> Result<(), ApiError> {
    let ns = meta::meta_str(obj, "namespace").unwrap_or_default();
    if !ns.is_empty() && Some(ns) != ctx.path.namespace.as_deref() {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// `UpdatePodCondition` with `PodScheduled: True`.
fn set_scheduled(pod: &mut Value) {
    if !pod.get("status").is_some_and(Value::is_object) {
        pod["status"] = json!({});
    }
    if !pod["status"].get("conditions").is_some_and(Value::is_array) {
        pod["status"]["conditions"] = json!([]);
    }
    let Some(conditions) = pod["status"]["conditions"].as_array_mut() else {
        return;
    };
    let now = meta::now();
    match conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled"))
    {
        Some(c) => {
            if c.get("status").and_then(Value::as_str) != Some("True") {
                c["status"] = json!("True");
                c["lastTransitionTime"] = json!(now);
            }
        }
        None => conditions.push(json!({
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": null,
            "lastTransitionTime": now,
        })),
    }
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}
