//! The two dispatchers: mutating webhooks in order with reinvocation, validating webhooks in
//! parallel; each failure turned into kube-apiserver's error under the webhook's
//! `failurePolicy`.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::hook::Hook;
use super::review::{self, Answer};
use super::{Attributes, Services, call, conditions, matching};
use crate::status::ApiError;

/// What every webhook call of one write shares.
pub(super) struct Call<'a> {
    pub(super) services: &'a Services,
    pub(super) attrs: &'a Attributes,
    pub(super) namespace_labels: Option<&'a Map<String, Value>>,
    pub(super) old: Option<&'a Value>,
}

/// Why a webhook call did not admit the write.
enum Failure {
    /// The webhook could not be called or answered nonsense (`ErrCallingWebhook`): subject
    /// to `failurePolicy`. The text follows `failed calling webhook "<name>": `.
    Calling(String),
    /// The webhook denied the write, or the server refuses it: never ignored.
    Refused(ApiError),
}

/// Runs the mutating webhooks over `object`; answers the mutated object, and whether any
/// webhook changed it (in either round).
pub(super) async fn mutate(
    call: &Call<'_>,
    hooks: &[Hook],
    mut object: Option<Value>,
    warnings: &mut Vec<String>,
) -> Result<(Option<Value>, bool), ApiError> {
    // kube-apiserver's webhookReinvokeContext: the IfNeeded webhooks called since the last
    // change, and those a later change asks to be called again.
    let mut invoked_since_change: HashSet<usize> = HashSet::new();
    let mut reinvoke: HashSet<usize> = HashSet::new();
    let mut changed_any = false;
    let mut mutated = false;
    for round in 0..2 {
        if round == 1 && !changed_any {
            break;
        }
        for (i, hook) in hooks.iter().enumerate() {
            let Some(version) = matches(call, hook, object.as_ref())? else {
                continue;
            };
            if round == 1 && !reinvoke.contains(&i) {
                continue;
            }
            let changed = match call_mutating(call, hook, &version, &mut object, warnings).await {
                Ok(changed) => changed,
                Err(Failure::Calling(_)) if hook.fail_open => false,
                Err(Failure::Calling(why)) => return Err(calling_error(&hook.name, &why)),
                Err(Failure::Refused(e)) => return Err(e),
            };
            mutated |= changed;
            if changed && round == 0 {
                reinvoke.extend(invoked_since_change.drain());
                changed_any = true;
            }
            if hook.reinvoke {
                invoked_since_change.insert(i);
            }
        }
    }
    Ok((object, mutated))
}

/// Runs the validating webhooks over `object`, all at once; the first failure in
/// configuration order is the answer.
pub(super) async fn validate(
    call: &Call<'_>,
    hooks: &[Hook],
    object: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    let mut selected = Vec::new();
    for hook in hooks {
        if let Some(version) = matches(call, hook, object)? {
            selected.push((hook, version));
        }
    }
    let calls = selected.iter().map(|(hook, version)| async move {
        let result = call_hook(call, hook, version, object, false).await;
        (*hook, result)
    });
    let results = futures::future::join_all(calls).await;
    let mut first = None;
    for (hook, result) in results {
        let error = match result {
            Ok(answer) => {
                warnings.extend(answer.warnings.iter().cloned());
                if answer.allowed {
                    continue;
                }
                denied(&hook.name, answer.status.as_ref())
            }
            Err(Failure::Calling(_)) if hook.fail_open => continue,
            Err(Failure::Calling(why)) => calling_error(&hook.name, &why),
            Err(Failure::Refused(e)) => e,
        };
        first.get_or_insert(error);
    }
    first.map_or(Ok(()), Err)
}

/// The version `hook` is called in, when it is called at all: its rules, selectors and
/// `matchConditions` select the request. Conditions that fail under `failurePolicy: Fail`
/// refuse the request (403, as kube-apiserver answers it).
fn matches(
    call: &Call<'_>,
    hook: &Hook,
    object: Option<&Value>,
) -> Result<Option<String>, ApiError> {
    let attrs = call.attrs;
    let Some(version) = matching::matched_version(hook, attrs) else {
        return Ok(None);
    };
    if !matching::selectors_match(hook, attrs, call.namespace_labels, object, call.old) {
        return Ok(None);
    }
    if hook.match_conditions.is_empty() {
        return Ok(Some(version));
    }
    let object = object.map(|o| attrs.object_in(o, &version));
    let old = call.old.map(|o| attrs.object_in(o, &version));
    let mut request = review::request("v1", "", attrs, &version, None, None)["request"].take();
    if let Some(r) = request.as_object_mut() {
        r.remove("object");
        r.remove("oldObject");
    }
    let decision = conditions::decide(
        &hook.match_conditions,
        hook.fail_open,
        object.as_ref(),
        old.as_ref(),
        &request,
    );
    match decision {
        conditions::Decision::Call => Ok(Some(version)),
        conditions::Decision::Skip => Ok(None),
        conditions::Decision::Fail(why) => {
            let resource = if attrs.group.is_empty() {
                attrs.resource.clone()
            } else {
                format!("{}.{}", attrs.resource, attrs.group)
            };
            let mut details = json!({"name": attrs.name, "kind": attrs.resource});
            if !attrs.group.is_empty() {
                details["group"] = json!(attrs.group);
            }
            Err(
                ApiError::forbidden(format!("{resource} {:?} is forbidden: {why}", attrs.name))
                    .with_details(details),
            )
        }
    }
}

/// Calls one mutating webhook and applies its patch; answers whether the object changed.
async fn call_mutating(
    call: &Call<'_>,
    hook: &Hook,
    version: &str,
    object: &mut Option<Value>,
    warnings: &mut Vec<String>,
) -> Result<bool, Failure> {
    let answer = call_hook(call, hook, version, object.as_ref(), true).await?;
    warnings.extend(answer.warnings.iter().cloned());
    if !answer.allowed {
        return Err(Failure::Refused(denied(&hook.name, answer.status.as_ref())));
    }
    let Some(patch) = answer.patch else {
        return Ok(false);
    };
    if answer.patch_type.as_deref() != Some("JSONPatch") {
        return Err(Failure::Calling(format!(
            "unsupported patch type {:?}",
            answer.patch_type.unwrap_or_default()
        )));
    }
    let patch: json_patch::Patch = serde_json::from_slice(&patch).map_err(|e| {
        Failure::Calling(format!(
            "received undecodable patch in webhook response: {e}"
        ))
    })?;
    if patch.0.is_empty() {
        return Ok(false);
    }
    let Some(current) = object.as_mut() else {
        return Err(Failure::Refused(internal_error(&format!(
            "admission webhook {:?} attempted to modify the object, which is not supported for \
             this operation",
            hook.name
        ))));
    };
    let mut patched = call.attrs.object_in(current, version);
    json_patch::patch(&mut patched, &patch)
        .map_err(|e| Failure::Refused(internal_error(&e.to_string())))?;
    if !patched.is_object() {
        return Err(Failure::Refused(internal_error(
            "Object 'Kind' is missing in the patched object",
        )));
    }
    let patched = call.attrs.object_in(&patched, &call.attrs.version);
    let changed = patched != *current;
    *current = patched;
    Ok(changed)
}

/// Sends one AdmissionReview and checks the answer.
async fn call_hook(
    call: &Call<'_>,
    hook: &Hook,
    version: &str,
    object: Option<&Value>,
    mutating: bool,
) -> Result<Answer, Failure> {
    let attrs = call.attrs;
    if attrs.dry_run && !hook.dry_run_safe() {
        if hook.side_effects.is_none() {
            return Err(Failure::Calling("Webhook SideEffects is nil".to_string()));
        }
        return Err(Failure::Refused(ApiError::bad_request(format!(
            "admission webhook {:?} does not support dry run",
            hook.name
        ))));
    }
    let review_version = review::version_for(hook).map_err(Failure::Calling)?;
    let uid = crate::ops::meta::new_uid();
    let object = object.map(|o| attrs.object_in(o, version));
    let old = call.old.map(|o| attrs.object_in(o, version));
    let request = review::request(
        review_version,
        &uid,
        attrs,
        version,
        object.as_ref(),
        old.as_ref(),
    );
    let answer = call::post(hook, call.services, &request)
        .await
        .map_err(Failure::Calling)?;
    review::verify(review_version, &uid, mutating, &answer)
        .map_err(|e| Failure::Calling(format!("received invalid webhook response: {e}")))
}

/// `ToStatusErr`: the webhook's status, its code at least 400, its message prefixed with
/// which webhook denied the request.
fn denied(name: &str, status: Option<&Value>) -> ApiError {
    let field = |k: &str| {
        status
            .and_then(|s| s.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let code = status
        .and_then(|s| s.get("code"))
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(400);
    let denied_by = format!("admission webhook {name:?} denied the request");
    let message = match (field("message"), field("reason")) {
        (m, _) if !m.is_empty() => format!("{denied_by}: {m}"),
        (_, r) if !r.is_empty() => format!("{denied_by}: {r}"),
        _ => format!("{denied_by} without explanation"),
    };
    let mut error = ApiError::new(code, known_reason(field("reason")), message);
    error.details = status.and_then(|s| s.get("details")).cloned();
    error
}

/// `NewInternalError` of a failed webhook call.
fn calling_error(name: &str, why: &str) -> ApiError {
    internal_error(&format!("failed calling webhook {name:?}: {why}"))
}

/// `apierrors.NewInternalError(err)`.
fn internal_error(err: &str) -> ApiError {
    ApiError::new(
        500,
        "InternalError",
        format!("Internal error occurred: {err}"),
    )
    .with_details(json!({"causes": [{"message": err}]}))
}

/// A webhook's `status.reason` when it is one of apimachinery's reasons (any other is
/// answered as the unknown reason, which a Status omits).
fn known_reason(reason: &str) -> &'static str {
    const REASONS: [&str; 19] = [
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "StoreReadError",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
    ];
    REASONS
        .iter()
        .find(|r| **r == reason)
        .copied()
        .unwrap_or("")
}
