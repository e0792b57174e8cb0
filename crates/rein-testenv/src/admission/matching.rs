//! Which webhooks a request calls: `rules` (operations, groups, versions, resources with
//! subresources, scope) under `matchPolicy`, then `namespaceSelector` and `objectSelector`,
//! as kube-apiserver's `webhook/predicates` do.

use serde_json::{Map, Value};

use super::hook::Hook;
use super::selector;
use super::{Attributes, Operation};

/// The version a matching webhook is called with: the request's own when a rule names it;
/// otherwise, under `matchPolicy: Equivalent`, the first other served version of the same
/// resource that a rule names (the object is then sent in that version).
pub(super) fn matched_version(hook: &Hook, attrs: &Attributes) -> Option<String> {
    if rules_match(hook, attrs, &attrs.version) {
        return Some(attrs.version.clone());
    }
    if hook.exact {
        return None;
    }
    attrs
        .served_versions
        .iter()
        .filter(|v| **v != attrs.version)
        .find(|v| rules_match(hook, attrs, v))
        .cloned()
}

/// Whether any rule of `hook` matches the request in `version`.
fn rules_match(hook: &Hook, attrs: &Attributes, version: &str) -> bool {
    hook.rules
        .iter()
        .any(|rule| rule_matches(rule, attrs, version))
}

fn rule_matches(rule: &Value, attrs: &Attributes, version: &str) -> bool {
    let list = |key: &str| -> Vec<&str> {
        rule.get(key)
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    let has = |key: &str, wanted: &str| list(key).iter().any(|x| *x == "*" || *x == wanted);
    has("operations", attrs.operation.as_str())
        && has("apiGroups", &attrs.group)
        && has("apiVersions", version)
        && list("resources")
            .iter()
            .any(|r| resource_matches(r, &attrs.resource, &attrs.subresource))
        && scope_matches(rule.get("scope").and_then(Value::as_str), attrs.namespaced)
}

/// `*` is every resource but no subresource, `*/*` everything, `pods/*` pods and all their
/// subresources, `*/status` the status of every resource.
fn resource_matches(pattern: &str, resource: &str, subresource: &str) -> bool {
    let (res, sub) = pattern.split_once('/').unwrap_or((pattern, ""));
    (res == "*" || res == resource) && (sub == "*" || sub == subresource)
}

/// `scope`: `*` (the default), `Cluster` (Namespace objects count as cluster-scoped) or
/// `Namespaced`.
fn scope_matches(scope: Option<&str>, namespaced: bool) -> bool {
    match scope {
        Some("Cluster") => !namespaced,
        Some("Namespaced") => namespaced,
        _ => true,
    }
}

/// Whether the selectors of `hook` select the request: `namespaceSelector` against the
/// namespace's labels (a Namespace object's own; ignored for other cluster-scoped objects),
/// `objectSelector` against the new or the old object's labels.
pub(super) fn selectors_match(
    hook: &Hook,
    attrs: &Attributes,
    namespace_labels: Option<&Map<String, Value>>,
    new: Option<&Value>,
    old: Option<&Value>,
) -> bool {
    let namespace_ok = if attrs.is_namespace {
        let obj = match attrs.operation {
            Operation::Delete => old,
            _ => new.or(old),
        };
        let labels = obj.map(selector::labels_of).unwrap_or_default();
        selector::matches(hook.namespace_selector.as_ref(), &labels)
    } else if attrs.namespaced {
        selector::is_empty(hook.namespace_selector.as_ref())
            || selector::matches(
                hook.namespace_selector.as_ref(),
                namespace_labels.unwrap_or(&Map::new()),
            )
    } else {
        true
    };
    if !namespace_ok {
        return false;
    }
    if selector::is_empty(hook.object_selector.as_ref()) {
        return true;
    }
    [new, old]
        .into_iter()
        .flatten()
        .any(|obj| selector::matches(hook.object_selector.as_ref(), &selector::labels_of(obj)))
}

/// Whether the resource is one whose writes no webhook is called for: the admission
/// configuration resources themselves, so a broken webhook can always be removed.
pub(super) fn exempt(group: &str, resource: &str) -> bool {
    group == "admissionregistration.k8s.io"
        && matches!(
            resource,
            "mutatingwebhookconfigurations"
                | "validatingwebhookconfigurations"
                | "validatingadmissionpolicies"
                | "validatingadmissionpolicybindings"
                | "mutatingadmissionpolicies"
                | "mutatingadmissionpolicybindings"
        )
}

#[cfg(test)]
mod tests {
    use super::resource_matches;

    #[test]
    fn resources_with_subresources_match_as_kube_apiserver_matches_them() {
        assert!(resource_matches("*", "pods", ""));
        assert!(!resource_matches("*", "pods", "status"));
        assert!(resource_matches("*/*", "pods", "status"));
        assert!(resource_matches("*/status", "pods", "status"));
        assert!(!resource_matches("*/status", "pods", ""));
        assert!(resource_matches("pods/*", "pods", "status"));
        assert!(resource_matches("pods/*", "pods", ""));
        assert!(resource_matches("pods/status", "pods", "status"));
        assert!(!resource_matches("pods", "pods", "status"));
        assert!(!resource_matches("pods/status", "pods", "scale"));
    }
}
