//! `pods/eviction`: POST a policy/v1 (or v1beta1) `Eviction`, as kube-apiserver's
//! `EvictionREST`. A Pod that is terminal, Pending or already being deleted is deleted without
//! looking at budgets; otherwise the one PodDisruptionBudget selecting it (more than one: 500)
//! must allow a disruption — its `disruptionsAllowed` is decremented and the Pod recorded in
//! `disruptedPods` before the Pod is deleted — or the eviction answers 429 TooManyRequests
//! with a `DisruptionBudget` cause. An unready Pod is deleted without spending the budget when
//! the budget is met (`IfHealthyBudget`, the default) or always (`AlwaysAllow`).
//!
//! Budgets' status comes from rein-testenv's synchronous disruption controller
//! ([`crate::plugins::disruption`]), and the whole eviction runs in one store transaction, so
//! the conflicts the real handler retries cannot happen.

use serde_json::{Value, json};

use super::{Ctx, created_status, plain_error, posted};
use crate::ops::{self, DeleteOpts, Propagation, Target, meta};
use crate::plugins::disruption;
use crate::status::ApiError;
use crate::store::Txn;

/// `MaxDisruptedPodSize`: evictions not yet seen by the controller that a budget may hold.
const MAX_DISRUPTED_PODS: usize = 2000;

/// The 429 message of a blocked eviction.
const BLOCKED: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// POST `pods/{name}/eviction`.
pub(super) fn create(
    ctx: &Ctx<'_>,
    name: &str,
    admitted: Option<Value>,
) -> Result<(u16, Value), ApiError> {
    let eviction = posted(ctx, admitted)?;
    let api_version = eviction
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("policy/v1");
    if !matches!(api_version, "policy/v1" | "policy/v1beta1") {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version (policy/v1)"
        )));
    }
    let kind = eviction
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("Eviction");
    if kind != "Eviction" {
        return Err(ApiError::bad_request(format!(
            "not a Eviction object: *policy.{kind}"
        )));
    }
    if meta::meta_str(&eviction, "name").unwrap_or_default() != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    super::binding::check_namespace(ctx, &eviction)?;
    let options = eviction
        .get("deleteOptions")
        .filter(|o| o.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    let opts = delete_opts(ctx, &options)?;
    let def = &ctx.path.def;
    let namespace = ctx.path.namespace.clone().unwrap_or_default();
    let key = (namespace.clone(), name.to_string());
    let target = Target {
        catalogue: &ctx.state.catalogue,
        def,
        version: &ctx.path.version,
    };
    let mut txn = ctx.state.store.lock();
    let pod = txn
        .get(&def.key(), &key)
        .ok_or_else(|| ApiError::not_found(def, name))?;
    if can_ignore_budgets(&pod) {
        ops::delete(&mut txn, target, &key, &opts)?;
        return Ok(created_status());
    }
    let budgets = budgets_of(&txn, &pod);
    if budgets.len() > 1 {
        return Err(ApiError::new(
            500,
            "",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        ));
    }
    if let Some(budget) = budgets.first() {
        let status = budget.get("status").cloned().unwrap_or_else(|| json!({}));
        let count = |f: &str| status.get(f).and_then(Value::as_i64).unwrap_or(0);
        let unready_may_go = !disruption::is_ready(&pod)
            && (budget.pointer("/spec/unhealthyPodEvictionPolicy") == Some(&json!("AlwaysAllow"))
                || (count("currentHealthy") >= count("desiredHealthy")
                    && count("desiredHealthy") > 0));
        if !unready_may_go {
            spend(&mut txn, budget, name, opts.dry_run)?;
        }
    }
    ops::delete(&mut txn, target, &key, &opts)?;
    Ok(created_status())
}

/// `canIgnorePDB`: a terminal or Pending Pod, or one already being deleted.
fn can_ignore_budgets(pod: &Value) -> bool {
    matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed" | "Pending")
    ) || meta::is_deleting(pod)
}

/// The budgets in the Pod's namespace whose (non-empty, valid) selector matches it.
fn budgets_of(txn: &Txn<'_>, pod: &Value) -> Vec<Value> {
    let namespace = meta::meta_str(pod, "namespace").unwrap_or_default();
    txn.list(&disruption::budgets(), Some(namespace))
        .into_iter()
        .filter(|b| {
            b.pointer("/spec/selector").is_some_and(|sel| {
                sel.is_object()
                    && !crate::builtin::selector::is_empty(sel)
                    && crate::builtin::selector::matches(sel, pod.pointer("/metadata/labels"))
            })
        })
        .map(|b| (*b).clone())
        .collect()
}

/// `checkAndDecrement`: the budget must be up to date and allow a disruption; it is spent
/// and the Pod recorded in `disruptedPods` (not on a dry run).
fn spend(txn: &mut Txn<'_>, budget: &Value, pod: &str, dry_run: bool) -> Result<(), ApiError> {
    let name = meta::meta_str(budget, "name").unwrap_or_default();
    let status = budget.get("status").cloned().unwrap_or_else(|| json!({}));
    let count = |f: &str| status.get(f).and_then(Value::as_i64).unwrap_or(0);
    let generation = budget
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if count("observedGeneration") < generation {
        let mut err = too_many(format!(
            "The disruption budget {name} is still being processed by the server."
        ));
        err.retry_after = Some(10);
        return Err(err);
    }
    let forbidden = |why: &str| {
        ApiError::new(
            403,
            "Forbidden",
            format!("poddisruptionbudget.policy \"{name}\" is forbidden: {why}"),
        )
        .with_details(json!({"name": name, "group": "policy", "kind": "poddisruptionbudget"}))
    };
    if count("disruptionsAllowed") < 0 {
        return Err(forbidden("pdb disruptions allowed is negative"));
    }
    let disrupted = status
        .get("disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, |m| m.len());
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(forbidden(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if count("disruptionsAllowed") == 0 {
        return Err(too_many(format!(
            "The disruption budget {name} needs {} healthy pods and has {} currently",
            count("desiredHealthy"),
            count("currentHealthy")
        )));
    }
    if dry_run {
        return Ok(());
    }
    let mut updated = budget.clone();
    let allowed = count("disruptionsAllowed") - 1;
    updated["status"]["disruptionsAllowed"] = json!(allowed);
    if allowed == 0 {
        disruption::set_allowed_condition(&mut updated["status"]);
    }
    if !updated["status"]
        .get("disruptedPods")
        .is_some_and(Value::is_object)
    {
        updated["status"]["disruptedPods"] = json!({});
    }
    updated["status"]["disruptedPods"][pod] = json!(meta::now());
    txn.replace(
        &disruption::budgets(),
        crate::store::object_key(budget),
        updated,
    );
    Ok(())
}

/// 429 TooManyRequests with a `DisruptionBudget` cause.
fn too_many(cause: String) -> ApiError {
    ApiError::new(429, "TooManyRequests", BLOCKED).with_details(json!({
        "causes": [{"reason": "DisruptionBudget", "message": cause}],
    }))
}

/// The eviction's `deleteOptions`, with the request's dry run propagated into them
/// (`propagateDryRun`; differing values are a plain error).
fn delete_opts(ctx: &Ctx<'_>, options: &Value) -> Result<DeleteOpts, ApiError> {
    let body_dry: Vec<String> = options
        .get("dryRun")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let query_dry = &ctx.q.dry_run_values;
    if !body_dry.is_empty() && !query_dry.is_empty() && body_dry != *query_dry {
        return Err(plain_error(format!(
            "Non-matching dry-run options in request and content: [{}] and [{}]",
            query_dry.join(" "),
            body_dry.join(" ")
        )));
    }
    let dry_run = ctx.q.dry_run || body_dry.iter().any(|d| d == "All");
    let propagation = match options.get("propagationPolicy").and_then(Value::as_str) {
        Some("Foreground") => Some(Propagation::Foreground),
        Some("Background") => Some(Propagation::Background),
        Some("Orphan") => Some(Propagation::Orphan),
        _ => match options.get("orphanDependents").and_then(Value::as_bool) {
            Some(true) => Some(Propagation::Orphan),
            Some(false) => Some(Propagation::Background),
            None => None,
        },
    };
    Ok(DeleteOpts {
        propagation,
        grace_period: options.get("gracePeriodSeconds").and_then(Value::as_i64),
        precondition_uid: options
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string),
        precondition_rv: options
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string),
        dry_run,
        orphan_dependents: None,
    })
}
