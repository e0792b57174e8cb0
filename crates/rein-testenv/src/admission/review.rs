//! AdmissionReview bodies: the request kube-apiserver sends and the checks it makes of the
//! answer (`VerifyAdmissionResponse`).

use base64::Engine as _;
use serde_json::{Value, json};

use super::Attributes;
use super::hook::Hook;

/// What a webhook answered, once checked.
#[derive(Debug)]
pub(super) struct Answer {
    /// `response.allowed`.
    pub(super) allowed: bool,
    /// `response.status`, when given.
    pub(super) status: Option<Value>,
    /// The decoded `response.patch` (mutating webhooks only).
    pub(super) patch: Option<Vec<u8>>,
    /// `response.patchType`.
    pub(super) patch_type: Option<String>,
    /// `response.warnings`.
    pub(super) warnings: Vec<String>,
}

/// The AdmissionReview versions this server speaks, preferred first.
const VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// The AdmissionReview version to send `hook`: the first it lists that this server speaks.
pub(super) fn version_for(hook: &Hook) -> Result<&'static str, String> {
    hook.review_versions
        .iter()
        .find_map(|v| VERSIONS.iter().find(|known| **known == v.as_str()).copied())
        .ok_or_else(|| {
            "could not create admission objects: webhook does not accept known \
             AdmissionReview versions (v1, v1beta1)"
                .to_string()
        })
}

/// The request sent to a webhook called in `version` of the resource.
pub(super) fn request(
    review_version: &str,
    uid: &str,
    attrs: &Attributes,
    version: &str,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Value {
    let kind = |version: &str| {
        let (group, version, kind) = attrs.kind_in(version);
        json!({"group": group, "version": version, "kind": kind})
    };
    let resource = |version: &str| json!({"group": attrs.group, "version": version, "resource": attrs.resource});
    let mut request = json!({
        "uid": uid,
        "kind": kind(version),
        "resource": resource(version),
        "requestKind": kind(&attrs.version),
        "requestResource": resource(&attrs.version),
        "name": attrs.name,
        "operation": attrs.operation.as_str(),
        "userInfo": {
            "username": "system:admin",
            "groups": ["system:masters", "system:authenticated"],
        },
        "object": object,
        "oldObject": old,
        "dryRun": attrs.dry_run,
        "options": attrs.options,
    });
    if !attrs.subresource.is_empty() {
        request["subResource"] = json!(attrs.subresource);
        request["requestSubResource"] = json!(attrs.subresource);
    }
    if !attrs.namespace.is_empty() {
        request["namespace"] = json!(attrs.namespace);
    }
    json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{review_version}"),
        "request": request,
    })
}

/// Checks a webhook's answer as kube-apiserver does; the error is the text that follows
/// `received invalid webhook response: `.
pub(super) fn verify(
    review_version: &str,
    uid: &str,
    mutating: bool,
    answer: &Value,
) -> Result<Answer, String> {
    let Some(response) = answer.get("response").filter(|r| !r.is_null()) else {
        return Err("webhook response was absent".to_string());
    };
    let got_uid = response
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let api_version = answer
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = answer
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let expected = format!("admission.k8s.io/{review_version}");
    if api_version != expected || kind != "AdmissionReview" {
        let got = if api_version.contains('/') {
            format!("{api_version}, Kind={kind}")
        } else {
            format!("/{api_version}, Kind={kind}")
        };
        return Err(format!(
            "expected webhook response of {expected}, Kind=AdmissionReview, got {got}"
        ));
    }
    let patch = patch_bytes(response.get("patch"))?.filter(|p| !p.is_empty());
    let patch_type = response
        .get("patchType")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    if mutating && patch.is_some() && patch_type.is_none() {
        return Err("webhook returned response.patch but not response.patchType".to_string());
    }
    if mutating && patch.is_none() && patch_type.is_some() {
        return Err("webhook returned response.patchType but not response.patch".to_string());
    }
    let warnings = response
        .get("warnings")
        .and_then(Value::as_array)
        .map(|w| {
            w.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok(Answer {
        allowed: response.get("allowed").and_then(Value::as_bool) == Some(true),
        status: response.get("status").filter(|s| s.is_object()).cloned(),
        patch: patch.filter(|_| mutating),
        patch_type: patch_type.filter(|_| mutating),
        warnings,
    })
}

/// `response.patch` as Go's JSON decoder reads a `[]byte`: a base64 string, or an array of
/// byte values (as kube-rs's `AdmissionResponse` writes it).
fn patch_bytes(patch: Option<&Value>) -> Result<Option<Vec<u8>>, String> {
    match patch {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map(Some)
            .map_err(|e| format!("illegal base64 data in response.patch: {e}")),
        Some(Value::Array(items)) => items
            .iter()
            .map(|b| {
                b.as_u64()
                    .and_then(|b| u8::try_from(b).ok())
                    .ok_or_else(|| {
                        format!("cannot unmarshal {b} into response.patch of type uint8")
                    })
            })
            .collect::<Result<Vec<u8>, String>>()
            .map(Some),
        Some(other) => Err(format!(
            "cannot unmarshal {other} into response.patch of type []uint8"
        )),
    }
}
