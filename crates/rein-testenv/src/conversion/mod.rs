//! CRD conversion with `strategy: Webhook` (apiextensions-apiserver's `webhookConverter`):
//! objects of such a resource are stored in the CRD's storage version and converted by the
//! CRD's conversion webhook whenever a request reads or writes them in another version.
//!
//! The server's handlers call [`convert`] at their edges (`server/converted.rs`): a read
//! converts what the store holds to the requested version; a write converts the client's
//! object to the storage version before the ordinary write path stores it. The call goes
//! through the admission webhooks' HTTPS client (`clientConfig.url` or `.service` mapped with
//! `TestEnvBuilder::webhook_service`, TLS verified against `caBundle`), and the answer is
//! checked as kube-apiserver checks it: the review's type and `uid`, `result.status`, the
//! number of objects, each object's `apiVersion` and `kind`, and metadata — only labels and
//! annotations may change; everything else is restored from the original. Any failure is
//! kube-apiserver's 500 with `conversion webhook for <group>/<version>, Kind=<kind> failed: …`.

mod review;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde_json::Value;

use crate::admission::hook::Hook;
use crate::resources::ResourceDef;
use crate::server::State;
use crate::status::ApiError;

/// The ConversionReview versions this server speaks, preferred first.
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// A CRD's conversion webhook, read when the CRD is registered.
#[derive(Debug)]
pub(crate) struct WebhookConversion {
    /// The CRD's storage version (`spec.versions[].storage`).
    storage_version: String,
    /// `spec.conversion.webhook.clientConfig`.
    client_config: Option<Value>,
    /// `spec.conversion.webhook.conversionReviewVersions`.
    review_versions: Vec<String>,
    /// The CRD's name, which names the webhook.
    crd_name: String,
}

impl WebhookConversion {
    /// The webhook conversion of the CRD `crd_name` with spec `spec`; `None` unless its
    /// strategy is `Webhook` and it has a storage version.
    pub(crate) fn from_crd(crd_name: &str, spec: &Value) -> Option<Arc<WebhookConversion>> {
        let conversion = spec.get("conversion")?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let storage_version = spec
            .get("versions")
            .and_then(Value::as_array)?
            .iter()
            .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))?
            .get("name")
            .and_then(Value::as_str)?
            .to_string();
        let webhook = conversion.get("webhook");
        Some(Arc::new(WebhookConversion {
            storage_version,
            client_config: webhook.and_then(|w| w.get("clientConfig")).cloned(),
            review_versions: webhook
                .and_then(|w| w.get("conversionReviewVersions"))
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            crd_name: crd_name.to_string(),
        }))
    }

    /// The version objects are stored in.
    pub(crate) fn storage_version(&self) -> &str {
        &self.storage_version
    }
}

/// `objects` (each of `def`'s kind) in `version`: those already in it are kept, the others
/// sent to the CRD's conversion webhook in one ConversionReview. `list_kind` says the objects
/// are a list's items (errors then name the list and the index).
pub(crate) async fn convert(
    state: &State,
    def: &ResourceDef,
    objects: Vec<Value>,
    version: &str,
    list: bool,
) -> Result<Vec<Value>, ApiError> {
    let desired = def.api_version(version);
    let Some(conversion) = &def.conversion else {
        return Ok(objects);
    };
    let pending: Vec<usize> = (0..objects.len())
        .filter(|&i| api_version_of(&objects[i]) != desired)
        .collect();
    if pending.is_empty() {
        return Ok(objects);
    }
    // Errors name the input's group, version and kind, as Go's GroupVersionKind prints it.
    let source = api_version_of(&objects[pending[0]]).to_string();
    let kind = if list {
        def.list_kind()
    } else {
        def.kind.clone()
    };
    let gvk = format!("{source}, Kind={kind}");
    let fail = |why: String| ApiError::new(500, "", format!("conversion webhook for {gvk} {why}"));
    let review_version = conversion
        .review_versions
        .iter()
        .find_map(|v| REVIEW_VERSIONS.iter().find(|k| **k == v.as_str()).copied())
        .ok_or_else(|| {
            ApiError::new(
                500,
                "",
                "no supported conversion review versions".to_string(),
            )
        })?;
    let uid = crate::ops::meta::new_uid();
    let to_convert: Vec<&Value> = pending.iter().map(|&i| &objects[i]).collect();
    let request = serde_json::json!({
        "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": to_convert},
    });
    let hook = Hook::endpoint_only(
        &format!("conversion_webhook_for_{}", conversion.crd_name),
        conversion.client_config.as_ref(),
        state.conversion_timeout.as_secs().max(1),
    );
    let answer = crate::admission::call::post(&hook, &state.webhook_services, &request)
        .await
        .map_err(|why| {
            let why = why.strip_prefix("failed to call webhook: ").unwrap_or(&why);
            fail(format!("failed: {why}"))
        })?;
    let converted = review::converted_objects(&answer, review_version, &uid)
        .map_err(|why| fail(format!("failed: {why}")))?;
    if converted.len() != pending.len() {
        return Err(fail(format!(
            "returned {} objects, expected {}",
            converted.len(),
            pending.len()
        )));
    }
    let mut out = objects;
    for (index, (slot, converted)) in pending.into_iter().zip(converted).enumerate() {
        let at = list.then_some(index);
        out[slot] = review::check_converted(&out[slot], converted, &desired, at).map_err(fail)?;
    }
    Ok(out)
}

/// `obj`'s `apiVersion`, empty when it has none.
fn api_version_of(obj: &Value) -> &str {
    obj.get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
}
