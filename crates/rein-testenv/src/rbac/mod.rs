//! Authorization: requests checked against the stored RBAC objects (Roles, ClusterRoles,
//! RoleBindings, ClusterRoleBindings) as kube-apiserver's authorizer chain checks them
//! (`system:masters` first, then RBAC); the `authorization.k8s.io` reviews; the ClusterRole
//! aggregation controller; the bootstrap roles a fresh cluster has; the checks that keep a
//! user from granting, through a Role, ClusterRole or binding, what she does not hold.

pub(crate) mod aggregate;
pub(crate) mod bootstrap;
pub(crate) mod escalation;
pub(crate) mod request;
pub(crate) mod reviews;
mod rules;

use serde_json::{Value, json};

use crate::auth::{SYSTEM_MASTERS, UserInfo, split_service_account};
use crate::resources::ResKey;
use crate::status::ApiError;
use crate::store::Txn;

/// What a request asks to do, as kube-apiserver's `authorizer.Attributes`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Attributes {
    /// Who asks.
    pub(crate) user: UserInfo,
    /// The verb: `get`, `list`, ... for resources; the lowercase HTTP method for paths.
    pub(crate) verb: String,
    /// Whether it is about a resource (else a non-resource path).
    pub(crate) resource_request: bool,
    /// The namespace (empty: cluster scope).
    pub(crate) namespace: String,
    /// The API group.
    pub(crate) api_group: String,
    /// The API version.
    pub(crate) api_version: String,
    /// The resource.
    pub(crate) resource: String,
    /// The subresource.
    pub(crate) subresource: String,
    /// The object name.
    pub(crate) name: String,
    /// The path of a non-resource request.
    pub(crate) path: String,
}

/// An authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Decision {
    /// Whether the request is allowed.
    pub(crate) allowed: bool,
    /// Why (which binding allowed it, or the errors met resolving the rules).
    pub(crate) reason: String,
}

/// Checks `attrs` as kube-apiserver's chain does: `system:masters` may do anything, then the
/// RBAC rules bound to the user.
pub(crate) fn authorize(txn: &Txn<'_>, attrs: &Attributes) -> Decision {
    if attrs.user.groups.iter().any(|g| g == SYSTEM_MASTERS) {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let mut errors = Vec::new();
    let mut allowed_by = None;
    visit_rules(txn, &attrs.user, &attrs.namespace, |source, rule, err| {
        if let (Some(rule), Some(source)) = (rule, source)
            && rules::allows(attrs, rule)
        {
            allowed_by = Some(source.to_string());
            return false;
        }
        if let Some(err) = err {
            errors.push(err.lister_message());
        }
        true
    });
    match allowed_by {
        Some(source) => Decision {
            allowed: true,
            reason: format!("RBAC: allowed by {source}"),
        },
        None => Decision {
            allowed: false,
            reason: if errors.is_empty() {
                String::new()
            } else {
                format!("RBAC: {}", aggregate_errors(&errors))
            },
        },
    }
}

/// The rules that apply to `user` in `namespace` (cluster-wide ones included) and the errors
/// met resolving them, as `SelfSubjectRulesReview` lists them.
pub(crate) fn rules_for(
    txn: &Txn<'_>,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<Value>, Vec<String>) {
    if user.groups.iter().any(|g| g == SYSTEM_MASTERS) {
        return (
            vec![
                json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
                json!({"verbs": ["*"], "nonResourceURLs": ["*"]}),
            ],
            Vec::new(),
        );
    }
    let mut out = Vec::new();
    let mut errors = Vec::new();
    visit_rules(txn, user, namespace, |_, rule, err| {
        if let Some(rule) = rule {
            out.push(rule.clone());
        }
        if let Some(err) = err {
            errors.push(err.lister_message());
        }
        true
    });
    (out, errors)
}

/// `utilerrors.NewAggregate(errs).Error()`: one error as it is, several in brackets.
pub(crate) fn aggregate_errors(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// 403 Forbidden with kube-apiserver's message for `attrs`, and `reason` after it.
pub(crate) fn forbidden(attrs: &Attributes, reason: &str) -> ApiError {
    let user = &attrs.user.name;
    let mut message = if !attrs.resource_request {
        format!(
            "User {} cannot {} path {}",
            quote(user),
            attrs.verb,
            quote(&attrs.path)
        )
    } else {
        let mut resource = attrs.resource.clone();
        if !attrs.subresource.is_empty() {
            resource = format!("{resource}/{}", attrs.subresource);
        }
        let scope = if attrs.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {}", quote(&attrs.namespace))
        };
        format!(
            "User {} cannot {} resource {} in API group {} {scope}",
            quote(user),
            attrs.verb,
            quote(&resource),
            quote(&attrs.api_group)
        )
    };
    message = message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    // apierrors.NewForbidden(GroupResource{group, resource}, name, err).
    let qualified = if attrs.api_group.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}.{}", attrs.resource, attrs.api_group)
    };
    let full = if qualified.is_empty() {
        format!("forbidden: {message}")
    } else if attrs.name.is_empty() {
        format!("{qualified} is forbidden: {message}")
    } else {
        format!("{qualified} {} is forbidden: {message}", quote(&attrs.name))
    };
    let mut details = json!({});
    if !attrs.name.is_empty() {
        details["name"] = json!(attrs.name);
    }
    if !attrs.api_group.is_empty() {
        details["group"] = json!(attrs.api_group);
    }
    if !attrs.resource.is_empty() {
        details["kind"] = json!(attrs.resource);
    }
    ApiError::forbidden(full).with_details(details)
}

/// Go's `%q` of a string.
fn quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// The storage key of an `rbac.authorization.k8s.io` resource.
pub(crate) fn rbac_key(plural: &str) -> ResKey {
    ResKey {
        group: RBAC_GROUP.to_string(),
        plural: plural.to_string(),
    }
}

/// Calls `visit(source, rule, error)` for each rule bound to `user` (ClusterRoleBindings
/// first, then the RoleBindings of `namespace`) and each error resolving a binding's role,
/// until it answers `false`, as kube's `DefaultRuleResolver.VisitRulesFor`.
fn visit_rules(
    txn: &Txn<'_>,
    user: &UserInfo,
    namespace: &str,
    mut visit: impl FnMut(Option<&str>, Option<&Value>, Option<&RoleRefError>) -> bool,
) {
    for binding in txn.list(&rbac_key("clusterrolebindings"), None) {
        let Some(subject) = applies_to(user, &binding, "") else {
            continue;
        };
        let role_ref = binding.get("roleRef").cloned().unwrap_or_default();
        match role_rules(txn, &role_ref, "") {
            Err(err) => {
                if !visit(None, None, Some(&err)) {
                    return;
                }
            }
            Ok(rules) => {
                let source = format!(
                    "ClusterRoleBinding {} of {} {} to {}",
                    quote(name_of(&binding)),
                    str_at(&role_ref, "kind"),
                    quote(str_at(&role_ref, "name")),
                    describe_subject(&subject, "")
                );
                for rule in &rules {
                    if !visit(Some(&source), Some(rule), None) {
                        return;
                    }
                }
            }
        }
    }
    if namespace.is_empty() {
        return;
    }
    for binding in txn.list(&rbac_key("rolebindings"), Some(namespace)) {
        let Some(subject) = applies_to(user, &binding, namespace) else {
            continue;
        };
        let role_ref = binding.get("roleRef").cloned().unwrap_or_default();
        match role_rules(txn, &role_ref, namespace) {
            Err(err) => {
                if !visit(None, None, Some(&err)) {
                    return;
                }
            }
            Ok(rules) => {
                let source = format!(
                    "RoleBinding {} of {} {} to {}",
                    quote(&format!("{}/{namespace}", name_of(&binding))),
                    str_at(&role_ref, "kind"),
                    quote(str_at(&role_ref, "name")),
                    describe_subject(&subject, namespace)
                );
                for rule in &rules {
                    if !visit(Some(&source), Some(rule), None) {
                        return;
                    }
                }
            }
        }
    }
}

fn str_at<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or_default()
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Why the role a binding names could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RoleRefError {
    /// No such Role in the binding's namespace, or no such ClusterRole.
    NotFound {
        /// `roles` or `clusterroles`.
        plural: &'static str,
        /// The name looked up.
        name: String,
    },
    /// A Role looked up without a namespace (a ClusterRoleBinding naming a Role).
    NoNamespace {
        /// The name looked up.
        name: String,
    },
    /// `roleRef.kind` is neither `Role` nor `ClusterRole`.
    Unsupported(String),
}

impl RoleRefError {
    /// The error as the authorizer's listers word it (`role.rbac.authorization.k8s.io "x" not
    /// found`), in authorization reasons and rules reviews.
    pub(crate) fn lister_message(&self) -> String {
        match self {
            RoleRefError::NotFound { plural, name } => {
                let singular = plural.trim_end_matches('s');
                format!("{singular}.{RBAC_GROUP} {} not found", quote(name))
            }
            RoleRefError::NoNamespace { name } => {
                format!("role.{RBAC_GROUP} {} not found", quote(name))
            }
            RoleRefError::Unsupported(kind) => {
                format!("unsupported role reference kind: {}", quote(kind))
            }
        }
    }

    /// The error as the RBAC registry's own rule resolver (the escalation checks) meets it:
    /// the roles' storage answering a get.
    pub(crate) fn to_api_error(&self) -> ApiError {
        match self {
            RoleRefError::NotFound { plural, name } => ApiError::new(
                404,
                "NotFound",
                format!("{plural}.{RBAC_GROUP} {} not found", quote(name)),
            )
            .with_details(json!({"name": name, "group": RBAC_GROUP, "kind": plural})),
            RoleRefError::NoNamespace { .. } => {
                ApiError::bad_request("Namespace parameter required.")
            }
            // Not an API status: kube-apiserver answers 500 with no reason.
            RoleRefError::Unsupported(_) => ApiError::new(500, "", self.lister_message()),
        }
    }
}

/// The API group of the RBAC resources.
pub(crate) const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The rules of the role `role_ref` names, for a binding in `namespace` (empty: a
/// ClusterRoleBinding).
fn role_rules(
    txn: &Txn<'_>,
    role_ref: &Value,
    namespace: &str,
) -> Result<Vec<Value>, RoleRefError> {
    let name = str_at(role_ref, "name");
    let (plural, namespace) = match str_at(role_ref, "kind") {
        "Role" if namespace.is_empty() => {
            return Err(RoleRefError::NoNamespace {
                name: name.to_string(),
            });
        }
        "Role" => ("roles", namespace),
        "ClusterRole" => ("clusterroles", ""),
        other => return Err(RoleRefError::Unsupported(other.to_string())),
    };
    let found = txn
        .get(
            &rbac_key(plural),
            &(namespace.to_string(), name.to_string()),
        )
        .ok_or_else(|| RoleRefError::NotFound {
            plural,
            name: name.to_string(),
        })?;
    Ok(found
        .get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// The first subject of `binding` that `user` is, if any.
fn applies_to(user: &UserInfo, binding: &Value, namespace: &str) -> Option<Value> {
    let subjects = binding.get("subjects").and_then(Value::as_array)?;
    subjects
        .iter()
        .find(|s| applies_to_user(user, s, namespace))
        .cloned()
}

fn applies_to_user(user: &UserInfo, subject: &Value, namespace: &str) -> bool {
    let name = str_at(subject, "name");
    match str_at(subject, "kind") {
        "User" => user.name == name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let sa_namespace = match str_at(subject, "namespace") {
                "" => namespace,
                ns => ns,
            };
            !sa_namespace.is_empty()
                && split_service_account(&user.name) == Some((sa_namespace, name))
        }
        _ => false,
    }
}

fn describe_subject(subject: &Value, binding_namespace: &str) -> String {
    let kind = str_at(subject, "kind");
    let name = str_at(subject, "name");
    if kind == "ServiceAccount" {
        let ns = match str_at(subject, "namespace") {
            "" => binding_namespace,
            ns => ns,
        };
        format!("{kind} {}", quote(&format!("{name}/{ns}")))
    } else {
        format!("{kind} {}", quote(name))
    }
}
