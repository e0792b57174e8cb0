//! One policy rule against one request, as kube's `RuleAllows` and the rbac/v1 evaluation
//! helpers match them: `*` wildcards, `resource/subresource` and `*/subresource`,
//! resourceNames, and nonResourceURLs with a trailing `*`; and rules against rules, as kube's
//! `validation.Covers` compares them for the escalation checks.

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
    list(rule, "nonResourceURLs")
        .iter()
        .any(|u| url_covers(u, path))
}

/// Whether the rule URL `owner` (exact, or a prefix ending in `*`; `*` is every path) takes in
/// `path`.
fn url_covers(owner: &str, path: &str) -> bool {
    owner == path
        || owner
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

/// One verb on one group, resource and resource name, or one verb on one non-resource URL: a
/// piece of a rule as kube's `BreakdownRule` cuts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part<'a> {
    /// A verb on a resource (`name`: one of the rule's resourceNames, if it has any).
    Resource {
        /// The API group.
        group: &'a str,
        /// The resource (or `resource/subresource`).
        resource: &'a str,
        /// The resource name.
        name: Option<&'a str>,
        /// The verb.
        verb: &'a str,
    },
    /// A verb on a non-resource URL.
    Url {
        /// The URL.
        url: &'a str,
        /// The verb.
        verb: &'a str,
    },
}

/// How many parts [`breakdown`] cuts `rule` into (saturating).
pub(crate) fn part_count(rule: &Value) -> usize {
    let len = |field: &str| list(rule, field).len();
    let verbs = len("verbs");
    len("apiGroups")
        .saturating_mul(len("resources"))
        .saturating_mul(verbs)
        .saturating_mul(len("resourceNames").max(1))
        .saturating_add(len("nonResourceURLs").saturating_mul(verbs))
}

/// kube's `BreakdownRule`: a part per group, resource, verb and resource name, then one per
/// non-resource URL and verb.
pub(crate) fn breakdown(rule: &Value) -> Vec<Part<'_>> {
    let verbs = list(rule, "verbs");
    let names = list(rule, "resourceNames");
    let names: Vec<Option<&str>> = if names.is_empty() {
        vec![None]
    } else {
        names.into_iter().map(Some).collect()
    };
    let mut parts = Vec::new();
    for group in list(rule, "apiGroups") {
        for resource in list(rule, "resources") {
            for verb in &verbs {
                for name in &names {
                    parts.push(Part::Resource {
                        group,
                        resource,
                        name: *name,
                        verb,
                    });
                }
            }
        }
    }
    for url in list(rule, "nonResourceURLs") {
        for verb in &verbs {
            parts.push(Part::Url { url, verb });
        }
    }
    parts
}

/// The parts of `servant` (rules being granted) that no rule of `owner` (rules held) covers,
/// in order, as kube's `validation.Covers` finds them. Empty: `owner` covers `servant`.
pub(crate) fn uncovered<'a>(owner: &[Value], servant: &'a [Value]) -> Vec<Part<'a>> {
    servant
        .iter()
        .flat_map(breakdown)
        .filter(|part| !owner.iter().any(|rule| covers(rule, part)))
        .collect()
}

/// kube's `ruleCovers`: whether the rule `owner` allows everything `part` does.
pub(crate) fn covers(owner: &Value, part: &Part<'_>) -> bool {
    let held = |field: &str, value: &str| {
        let values = list(owner, field);
        values.contains(&"*") || values.contains(&value)
    };
    let names = list(owner, "resourceNames");
    match *part {
        Part::Resource {
            group,
            resource,
            name,
            verb,
        } => {
            held("verbs", verb)
                && held("apiGroups", group)
                && resource_covered(owner, resource)
                && (names.is_empty() || name.is_some_and(|n| names.contains(&n)))
        }
        // A URL part has no groups, resources or names: those of `owner` cover it trivially,
        // but not its resourceNames.
        Part::Url { url, verb } => {
            held("verbs", verb)
                && names.is_empty()
                && list(owner, "nonResourceURLs")
                    .iter()
                    .any(|u| url_covers(u, url))
        }
    }
}

/// kube's `resourceCoversAll` for one resource: `*`, the resource itself, or
/// `*/subresource` for a subresource.
fn resource_covered(owner: &Value, resource: &str) -> bool {
    let held = list(owner, "resources");
    held.contains(&"*")
        || held.contains(&resource)
        || resource
            .split_once('/')
            .is_some_and(|(_, sub)| held.iter().any(|h| h.strip_prefix("*/") == Some(sub)))
}

/// Whether the single rule `owner` covers every part of `servant` (what [`uncovered`] would
/// find by cutting it into parts, decided without doing so).
pub(crate) fn covers_whole(owner: &Value, servant: &Value) -> bool {
    let verbs = list(servant, "verbs");
    let groups = list(servant, "apiGroups");
    let resources = list(servant, "resources");
    let urls = list(servant, "nonResourceURLs");
    let resource_parts = !groups.is_empty() && !resources.is_empty();
    if verbs.is_empty() || (!resource_parts && urls.is_empty()) {
        return true;
    }
    let all_held = |field: &str, wanted: &[&str]| {
        let values = list(owner, field);
        values.contains(&"*") || wanted.iter().all(|v| values.contains(v))
    };
    let names = list(owner, "resourceNames");
    let wanted_names = list(servant, "resourceNames");
    let resources_covered = !resource_parts
        || (all_held("apiGroups", &groups)
            && resources.iter().all(|r| resource_covered(owner, r))
            && (names.is_empty()
                || (!wanted_names.is_empty() && wanted_names.iter().all(|n| names.contains(n)))));
    let urls_covered = urls.is_empty()
        || (names.is_empty()
            && urls.iter().all(|path| {
                list(owner, "nonResourceURLs")
                    .iter()
                    .any(|u| url_covers(u, path))
            }));
    all_held("verbs", &verbs) && resources_covered && urls_covered
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

    #[test]
    fn covering_a_whole_rule_agrees_with_covering_its_parts() {
        let owners = [
            json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
            json!({"verbs": ["get", "list"], "apiGroups": ["", "apps"],
                   "resources": ["pods", "*/status"]}),
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"],
                   "resourceNames": ["a", "b"]}),
            json!({"verbs": ["get"], "nonResourceURLs": ["/debug/*", "/metrics"]}),
        ];
        let servants = [
            json!({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods", "x/status"]}),
            json!({"verbs": ["get", "watch"], "apiGroups": [""], "resources": ["pods"]}),
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"],
                   "resourceNames": ["b"]}),
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}),
            json!({"verbs": ["get"], "nonResourceURLs": ["/debug/pprof", "/metrics"]}),
            json!({"verbs": ["post"], "nonResourceURLs": ["/metrics"]}),
            json!({"verbs": [], "apiGroups": ["*"], "resources": ["*"]}),
        ];
        for owner in &owners {
            for servant in &servants {
                let by_parts = breakdown(servant).iter().all(|p| covers(owner, p));
                assert_eq!(
                    covers_whole(owner, servant),
                    by_parts,
                    "{owner} over {servant}"
                );
            }
        }
        let servant = &servants[0];
        assert_eq!(part_count(servant), breakdown(servant).len());
        assert_eq!(uncovered(&owners, &servants[..3]), Vec::new());
        assert_eq!(
            uncovered(&owners[1..], &servants[3..4]),
            vec![Part::Resource {
                group: "",
                resource: "secrets",
                name: None,
                verb: "get"
            }]
        );
    }
}
