//! `spec.conversion`: the strategy, and for `Webhook` the client config and the
//! ConversionReview versions (reported at the internal type's paths,
//! `spec.conversion.webhookClientConfig` and `spec.conversion.conversionReviewVersions`).

use serde_json::Value;

use super::super::field::{FieldError, dns1035_label, quote, string_slice};
use super::{str_at, strings_at};

/// The ConversionReview versions this server understands.
const ACCEPTED_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

/// Whether `crd` has no webhook review versions or one this server understands (on update
/// the requirement is only enforced when the old object met it).
pub(super) fn has_recognized_review_version_or_none(crd: &Value) -> bool {
    let versions = strings_at(crd, "/spec/conversion/webhook/conversionReviewVersions");
    versions.is_empty()
        || versions
            .iter()
            .any(|v| ACCEPTED_REVIEW_VERSIONS.contains(&v.as_str()))
}

/// `validateCustomResourceConversion` (and the strategy-vs-preserveUnknownFields rule).
pub(super) fn validate(crd: &Value, require_recognized: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(conversion) = crd.pointer("/spec/conversion").filter(|c| !c.is_null()) else {
        return errs;
    };
    let strategy = str_at(conversion, "/strategy");
    let preserve = crd.pointer("/spec/preserveUnknownFields") == Some(&Value::Bool(true));
    if strategy != "None" && preserve {
        errs.push(FieldError::invalid_str(
            "spec.conversion.strategy",
            strategy,
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    if strategy.is_empty() {
        errs.push(FieldError::required("spec.conversion.strategy", ""));
    } else if strategy != "None" && strategy != "Webhook" {
        errs.push(FieldError::not_supported(
            "spec.conversion.strategy",
            strategy,
            &["None", "Webhook"],
        ));
    }
    let client_config = conversion
        .pointer("/webhook/clientConfig")
        .filter(|c| !c.is_null());
    let review_versions = strings_at(conversion, "/webhook/conversionReviewVersions");
    let config_path = "spec.conversion.webhookClientConfig";
    let review_path = "spec.conversion.conversionReviewVersions";
    if strategy != "Webhook" {
        if client_config.is_some() {
            errs.push(FieldError::forbidden(
                config_path,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review_versions.is_empty() {
            errs.push(FieldError::forbidden(
                review_path,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        return errs;
    }
    match client_config {
        None => errs.push(FieldError::required(
            config_path,
            "required when strategy is set to Webhook",
        )),
        Some(cc) => {
            let url = cc.get("url").and_then(Value::as_str);
            let service = cc.get("service").filter(|s| !s.is_null());
            match (url, service) {
                (Some(url), None) => errs.extend(webhook_url(url, &format!("{config_path}.url"))),
                (None, Some(service)) => {
                    errs.extend(webhook_service(service, &format!("{config_path}.service")));
                }
                _ => errs.push(FieldError::required(
                    config_path,
                    "exactly one of url or service is required",
                )),
            }
        }
    }
    errs.extend(review_versions_causes(
        &review_versions,
        require_recognized,
        review_path,
    ));
    errs
}

/// `validateConversionReviewVersions`.
fn review_versions_causes(
    versions: &[String],
    require_recognized: bool,
    path: &str,
) -> Vec<FieldError> {
    if versions.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errs = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let mut recognized = false;
    for (i, v) in versions.iter().enumerate() {
        if seen.contains(&v.as_str()) {
            errs.push(FieldError::invalid_str(
                format!("{path}[{i}]"),
                v,
                "duplicate version",
            ));
            continue;
        }
        seen.push(v);
        for why in dns1035_label(v) {
            errs.push(FieldError::invalid_str(format!("{path}[{i}]"), v, why));
        }
        recognized |= ACCEPTED_REVIEW_VERSIONS.contains(&v.as_str());
    }
    if require_recognized && !recognized {
        errs.push(FieldError::invalid(
            path,
            string_slice(versions),
            format!(
                "must include at least one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    errs
}

/// `webhook.ValidateWebhookURL` with https required.
fn webhook_url(url: &str, path: &str) -> Vec<FieldError> {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut errs = Vec::new();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (rest, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let authority = if scheme.is_empty() {
        ""
    } else {
        rest.split('/').next().unwrap_or_default()
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    if scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            quote(scheme),
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            quote(host),
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = user {
        errs.push(FieldError::invalid_str(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid_str(
            path,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid_str(
            path,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// `webhook.ValidateWebhookService`.
fn webhook_service(service: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if str_at(service, "/namespace").is_empty() {
        errs.push(FieldError::required(
            format!("{path}.namespace"),
            "service namespace is required",
        ));
    }
    if str_at(service, "/name").is_empty() {
        errs.push(FieldError::required(
            format!("{path}.name"),
            "service name is required",
        ));
    }
    let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            format!("{path}.port"),
            port.to_string(),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let url_path = str_at(service, "/path");
    if url_path.is_empty() || url_path == "/" {
        return errs;
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid_str(
            format!("{path}.path"),
            url_path,
            "must start with a '/'",
        ));
    }
    errs
}
