//! One policy rule against one request, as kube's `RuleAllows` and the rbac/v1 evaluation
//! helpers match them: `*` wildcards, `resource/subresource` and `*/subresource`,
//! resourceNames, and nonResourceURLs with a trailing `*`.

use serde_json::Value;

use super::Attributes;

/// The strings of a rule's list field.
pub(crate) fn list<'a>(rule: &'a Value, field: &str) -> Vec<&'a str> {
    rule.get(field)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether `rule` allows the request `attrs` describes.
pub(crate) fn allows(attrs: &Attributes, rule: &Value) -> bool {
    if !verb_matches(rule, &attrs.verb) {
        return false;
    }
    if attrs.resource_request {
        let combined = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        api_group_matches(rule, &attrs.api_group)
            && resource_matches(rule, &combined, &attrs.subresource)
            && resource_name_matches(rule, &attrs.name)
    } else {
        non_resource_url_matches(rule, &attrs.path)
    }
}

fn verb_matches(rule: &Value, verb: &str) -> bool {
    list(rule, "verbs").iter().any(|v| *v == "*" || *v == verb)
}

fn api_group_matches(rule: &Value, group: &str) -> bool {
    list(rule, "apiGroups")
        .iter()
        .any(|g| *g == "*" || *g == group)
}

fn resource_matches(rule: &Value, combined: &str, subresource: &str) -> bool {
    list(rule, "resources").iter().any(|r| {
        *r == "*"
            || *r == combined
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

fn resource_name_matches(rule: &Value, name: &str) -> bool {
    let names = list(rule, "resourceNames");
    names.is_empty() || names.contains(&name)
}

fn non_resource_url_matches(rule: &Value, path: &str) -> bool {
    list(rule, "nonResourceURLs").iter().any(|u| {
        *u == "*"
            || *u == path
            || u.strip_suffix('*')
                .is_some_and(|prefix| path.starts_with(prefix))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn resource(verb: &str, group: &str, res: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: res.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Attributes::default()
        }
    }

    #[test]
    fn wildcards_subresources_and_names() {
        let rule = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]});
        assert!(allows(&resource("get", "", "pods", "", "a"), &rule));
        assert!(!allows(&resource("get", "", "pods", "log", "a"), &rule));
        assert!(!allows(&resource("list", "", "pods", "", ""), &rule));
        assert!(!allows(&resource("get", "apps", "pods", "", "a"), &rule));

        let sub = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"]});
        assert!(allows(
            &resource("update", "apps", "deployments", "status", "d"),
            &sub
        ));
        assert!(!allows(
            &resource("update", "apps", "deployments", "", "d"),
            &sub
        ));
        assert!(!allows(
            &resource("update", "apps", "deployments", "scale", "d"),
            &sub
        ));

        let named = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"],
            "resourceNames": ["web"]});
        assert!(allows(&resource("get", "", "pods", "log", "web"), &named));
        assert!(!allows(&resource("get", "", "pods", "log", "db"), &named));
        assert!(!allows(&resource("get", "", "pods", "log", ""), &named));
    }

    #[test]
    fn non_resource_urls() {
        let rule = json!({"verbs": ["get"], "nonResourceURLs": ["/metrics", "/apis/*"]});
        let path = |p: &str| Attributes {
            verb: "get".into(),
            path: p.into(),
            ..Attributes::default()
        };
        assert!(allows(&path("/metrics"), &rule));
        assert!(allows(&path("/apis/apps/v1"), &rule));
        assert!(!allows(&path("/metrics/extra"), &rule));
        assert!(!allows(&path("/api"), &rule));
        let resource_rule = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]});
        assert!(!allows(&path("/metrics"), &resource_rule));
    }
}
