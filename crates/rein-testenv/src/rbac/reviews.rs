//! `authorization.k8s.io/v1` reviews: SubjectAccessReview, SelfSubjectAccessReview,
//! LocalSubjectAccessReview and SelfSubjectRulesReview, answered from the stored RBAC
//! objects (whether or not every request is checked against them).

use serde_json::{Value, json};

use super::{Attributes, aggregate_errors, authorize, rules, rules_for};
use crate::auth::UserInfo;
use crate::status::ApiError;
use crate::store::Txn;

/// The API group of the reviews.
pub(crate) const GROUP: &str = "authorization.k8s.io";

/// Answers a create of `plural` (one of the four reviews) with `body`, from `user`, in
/// `namespace` (LocalSubjectAccessReview only).
pub(crate) fn answer(
    txn: &Txn<'_>,
    plural: &str,
    namespace: Option<&str>,
    user: &UserInfo,
    mut body: Value,
) -> Result<Value, ApiError> {
    let kind = match plural {
        "subjectaccessreviews" => "SubjectAccessReview",
        "selfsubjectaccessreviews" => "SelfSubjectAccessReview",
        "localsubjectaccessreviews" => "LocalSubjectAccessReview",
        "selfsubjectrulesreviews" => "SelfSubjectRulesReview",
        _ => return Err(ApiError::no_route()),
    };
    body["apiVersion"] = json!(format!("{GROUP}/v1"));
    body["kind"] = json!(kind);
    if !body.get("metadata").is_some_and(Value::is_object) {
        body["metadata"] = json!({});
    }
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    if kind == "SelfSubjectRulesReview" {
        let ns = spec
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        body["status"] = rules_status(txn, user, ns);
        return Ok(body);
    }
    let subject = match kind {
        "SelfSubjectAccessReview" => user.clone(),
        _ => {
            let subject = UserInfo::from_spec(&spec, "user");
            if subject.name.is_empty() && subject.groups.is_empty() {
                return Err(invalid(
                    kind,
                    "spec.user",
                    "\"\"",
                    "at least one of user or group must be specified",
                ));
            }
            subject
        }
    };
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    let attrs = match (resource, non_resource) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                kind,
                "spec.nonResourceAttributes",
                &go_struct(non_resource),
                "cannot be specified in combination with resourceAttributes",
            ));
        }
        (None, None) => {
            return Err(invalid(
                kind,
                "spec.resourceAttributes",
                "\"null\"",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
        }
        (Some(r), None) => {
            let text = |f: &str| {
                r.get(f)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            Attributes {
                user: subject,
                verb: text("verb"),
                resource_request: true,
                namespace: text("namespace"),
                api_group: text("group"),
                api_version: text("version"),
                resource: text("resource"),
                subresource: text("subresource"),
                name: text("name"),
                path: String::new(),
            }
        }
        (None, Some(n)) => {
            let text = |f: &str| {
                n.get(f)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            Attributes {
                user: subject,
                verb: text("verb"),
                path: text("path"),
                ..Attributes::default()
            }
        }
    };
    if kind == "LocalSubjectAccessReview" {
        let ns = namespace.unwrap_or_default();
        if non_resource.is_some() {
            return Err(invalid(
                kind,
                "spec.nonResourceAttributes",
                &go_struct(non_resource),
                "disallowed on this kind of request",
            ));
        }
        if attrs.namespace != ns {
            return Err(invalid(
                kind,
                "spec.resourceAttributes.namespace",
                &Value::String(attrs.namespace.clone()).to_string(),
                "must match metadata.namespace",
            ));
        }
        body["metadata"]["namespace"] = json!(ns);
    }
    let decision = authorize(txn, &attrs);
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    body["status"] = status;
    Ok(body)
}

/// The `status` of a SelfSubjectRulesReview.
fn rules_status(txn: &Txn<'_>, user: &UserInfo, namespace: &str) -> Value {
    let (found, errors) = rules_for(txn, user, namespace);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in &found {
        let field = |f: &str| json!(rules::list(rule, f));
        if !rules::list(rule, "resources").is_empty() {
            let mut r = json!({
                "verbs": field("verbs"),
                "apiGroups": field("apiGroups"),
                "resources": field("resources"),
            });
            if !rules::list(rule, "resourceNames").is_empty() {
                r["resourceNames"] = field("resourceNames");
            }
            resource_rules.push(r);
        }
        if !rules::list(rule, "nonResourceURLs").is_empty() {
            non_resource_rules.push(json!({
                "verbs": field("verbs"),
                "nonResourceURLs": field("nonResourceURLs"),
            }));
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": false,
    });
    if !errors.is_empty() {
        status["evaluationError"] = json!(aggregate_errors(&errors));
    }
    status
}

/// 422 Invalid, worded as kube-apiserver words a review's validation error.
fn invalid(kind: &str, field: &str, value: &str, why: &str) -> ApiError {
    let message = format!("Invalid value: {value}: {why}");
    ApiError::new(
        422,
        "Invalid",
        format!("{kind}.{GROUP} \"\" is invalid: {field}: {message}"),
    )
    .with_details(json!({
        "group": GROUP,
        "kind": kind,
        "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field}],
    }))
}

/// A rough Go `%v` of an attributes object, for error messages.
fn go_struct(value: Option<&Value>) -> String {
    value.map(Value::to_string).unwrap_or_else(|| "null".into())
}
