//! `namespaces/finalize`: PUT a Namespace to change its `spec.finalizers` (and metadata),
//! never its `status`, as kube-apiserver's namespace finalize strategy; each finalizer must
//! be a qualified name. A terminating namespace whose finalizers are all gone is then removed
//! by the namespace controller's next pass.

use serde_json::{Value, json};

use super::{Ctx, decode_object};
use crate::ops::{self, Subresource, Target, WriteOpts, meta};
use crate::schema::Cause;
use crate::status::ApiError;
use crate::store::GcWork;

/// PUT `namespaces/{name}/finalize`.
pub(super) fn update(ctx: &Ctx<'_>, name: &str) -> Result<(u16, Value), ApiError> {
    crate::server::options::check_write("UpdateOptions", ctx.q)?;
    let mut body = decode_object(ctx)?;
    let def = &ctx.path.def;
    if ctx.state.validate {
        let causes: Vec<Cause> = body
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .flat_map(|(i, f)| {
                let f = f.as_str().unwrap_or_default();
                let field = format!("spec.finalizers[{i}]");
                finalizer_problems(f)
                    .into_iter()
                    .map(move |why| Cause::invalid(&field, &json!(f), &why))
            })
            .collect();
        if !causes.is_empty() {
            return Err(ApiError::invalid_causes(def, name, &causes));
        }
    }
    let target = Target {
        catalogue: &ctx.state.catalogue,
        def,
        version: &ctx.path.version,
    };
    let key = (String::new(), name.to_string());
    let mut txn = ctx.state.store.lock();
    let old = txn
        .get(&def.key(), &key)
        .ok_or_else(|| ApiError::not_found(def, name))?;
    match old.get("status") {
        Some(status) => body["status"] = status.clone(),
        None => {
            if let Some(o) = body.as_object_mut() {
                o.remove("status");
            }
        }
    }
    if body.get("spec").is_none() {
        body["spec"] = json!({});
    }
    let opts = WriteOpts {
        dry_run: ctx.q.dry_run,
        field_manager: ctx.q.field_manager.clone().unwrap_or_default(),
        managed_fields_done: false,
        keep_identity: false,
        skip_validation: !ctx.state.validate,
        admission: crate::plugins::Plugins::default(),
    };
    let stored = ops::update(&mut txn, target, &key, body, Subresource::Main, &opts)?;
    if !ctx.q.dry_run && meta::is_deleting(&stored) {
        txn.enqueue_gc(GcWork::Namespace(name.to_string()));
    }
    Ok((200, Value::clone(&stored)))
}

/// `validateFinalizerName` for a namespace finalizer: a qualified name, and a name without a
/// `/` must be a standard one.
fn finalizer_problems(finalizer: &str) -> Vec<String> {
    let mut problems: Vec<String> = crate::builtin::names::qualified_name(finalizer)
        .into_iter()
        .map(|m| m.to_string())
        .collect();
    if problems.is_empty()
        && !finalizer.contains('/')
        && !["kubernetes", "orphan", "foregroundDeletion"].contains(&finalizer)
    {
        problems.push(
            "name is neither a standard finalizer name nor is it fully qualified".to_string(),
        );
    }
    problems
}
