//! RBAC from what the operator does: the rules its manifests grant its ServiceAccount, the
//! requests its tests made (rein-testenv's exported request log), which of those the rules do
//! not allow, and the minimal rules that add them.

mod log;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

pub use log::{Request, parse as parse_log, read as read_log};

use crate::Error;
use crate::manifests::Manifests;

/// One rule of a ClusterRole or Role, with where it applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// `None`: everywhere (a ClusterRole bound by a ClusterRoleBinding); else this namespace.
    pub namespace: Option<String>,
    /// `apiGroups`.
    pub groups: Vec<String>,
    /// `resources` (`plural` or `plural/subresource`).
    pub resources: Vec<String>,
    /// `verbs`.
    pub verbs: Vec<String>,
    /// `resourceNames` (empty: any).
    pub resource_names: Vec<String>,
}

/// One permission a request needs: a verb on a resource, in a namespace or cluster-wide.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Need {
    /// `None`: cluster-wide (a ClusterRole); else the operator's own namespace (its Role).
    pub namespace: Option<String>,
    /// The API group.
    pub group: String,
    /// `plural` or `plural/subresource`.
    pub resource: String,
    /// The verb.
    pub verb: String,
}

impl std::fmt::Display for Need {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        write!(f, "{} {} ({group})", self.verb, self.resource)?;
        match &self.namespace {
            Some(ns) => write!(f, " in namespace {ns}"),
            None => write!(f, " cluster-wide"),
        }
    }
}

impl Grant {
    /// Whether this rule allows `request`.
    pub fn allows(&self, request: &Request) -> bool {
        let scope = match &self.namespace {
            None => true,
            Some(ns) => !request.namespace.is_empty() && *ns == request.namespace,
        };
        let any_or = |list: &[String], value: &str| list.iter().any(|v| v == "*" || v == value);
        let resource = request.rbac_resource();
        let resource_ok = self.resources.iter().any(|r| {
            r == "*"
                || *r == resource
                || (r.starts_with("*/")
                    && !request.subresource.is_empty()
                    && r[2..] == request.subresource)
        });
        let name_ok = self.resource_names.is_empty()
            || (!request.name.is_empty() && self.resource_names.contains(&request.name));
        scope
            && any_or(&self.groups, &request.group)
            && resource_ok
            && any_or(&self.verbs, &request.verb)
            && name_ok
    }
}

/// The rules the manifests grant the ServiceAccount `namespace/name`: every ClusterRole bound to
/// it by a ClusterRoleBinding (everywhere), and every Role or ClusterRole bound by a
/// RoleBinding (in the binding's namespace).
pub fn granted(manifests: &Manifests, namespace: &str, name: &str) -> Vec<Grant> {
    let binds_us = |binding: &Value| {
        binding["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| {
                s["kind"] == "ServiceAccount"
                    && s["name"] == name
                    && s["namespace"].as_str().unwrap_or("default") == namespace
            })
    };
    let role = |kind: &str, role_name: &str, ns: Option<&str>| {
        manifests.of_kind(kind).find(|r| {
            r["metadata"]["name"] == role_name
                && (ns.is_none() || r["metadata"]["namespace"].as_str() == ns)
        })
    };
    let mut grants = Vec::new();
    for binding in manifests
        .of_kind("ClusterRoleBinding")
        .filter(|b| binds_us(b))
    {
        let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
        if let Some(r) = role("ClusterRole", role_name, None) {
            grants.extend(rules_of(r, None));
        }
    }
    for binding in manifests.of_kind("RoleBinding").filter(|b| binds_us(b)) {
        let ns = binding["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default");
        let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
        let found = match binding["roleRef"]["kind"].as_str() {
            Some("ClusterRole") => role("ClusterRole", role_name, None),
            _ => role("Role", role_name, Some(ns)),
        };
        if let Some(r) = found {
            grants.extend(rules_of(r, Some(ns)));
        }
    }
    grants
}

fn rules_of(role: &Value, namespace: Option<&str>) -> Vec<Grant> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    role["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["nonResourceURLs"].is_null())
        .map(|r| Grant {
            namespace: namespace.map(str::to_owned),
            groups: strings(&r["apiGroups"]),
            resources: strings(&r["resources"]),
            verbs: strings(&r["verbs"]),
            resource_names: strings(&r["resourceNames"]),
        })
        .collect()
}

/// What `user` did that `grants` do not allow, as permissions: a request in `own_namespace`
/// (the operator's) needs a Role there, any other a ClusterRole.
pub fn uncovered(
    grants: &[Grant],
    requests: &[Request],
    user: &str,
    own_namespace: &str,
) -> BTreeSet<Need> {
    requests
        .iter()
        .filter(|r| r.user == user && !grants.iter().any(|g| g.allows(r)))
        .map(|r| Need {
            namespace: (r.namespace == own_namespace).then(|| own_namespace.to_owned()),
            group: r.group.clone(),
            resource: r.rbac_resource(),
            verb: r.verb.clone(),
        })
        .collect()
}

/// The fewest `PolicyRule`s (JSON) that grant `needs` of one scope: resources of one group
/// needing the same verbs share a rule.
pub fn minimal_rules<'a>(needs: impl IntoIterator<Item = &'a Need>) -> Vec<Value> {
    let mut verbs: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for need in needs {
        verbs
            .entry((need.group.clone(), need.resource.clone()))
            .or_default()
            .insert(need.verb.clone());
    }
    let mut rules: BTreeMap<(String, Vec<String>), Vec<String>> = BTreeMap::new();
    for ((group, resource), verbs) in verbs {
        rules
            .entry((group, verbs.into_iter().collect()))
            .or_default()
            .push(resource);
    }
    rules
        .into_iter()
        .map(|((group, verbs), resources)| json!({"apiGroups": [group], "resources": resources, "verbs": verbs}))
        .collect()
}

/// The manifests with `needs` added: cluster-wide ones to the ClusterRole bound to the
/// ServiceAccount, namespaced ones to its Role in that namespace (each created when missing,
/// with its binding). Answers the changed roles and bindings.
pub fn merge(manifests: &mut Manifests, needs: &BTreeSet<Need>) -> Result<Vec<Value>, Error> {
    let (sa_namespace, sa_name) = manifests.service_account()?;
    let subject = json!([{"kind": "ServiceAccount", "name": sa_name, "namespace": sa_namespace}]);
    let mut changed = Vec::new();
    let cluster: Vec<&Need> = needs.iter().filter(|n| n.namespace.is_none()).collect();
    if !cluster.is_empty() {
        let role_name = bound_role(
            manifests,
            "ClusterRoleBinding",
            None,
            &sa_namespace,
            &sa_name,
        )
        .unwrap_or_else(|| sa_name.clone());
        let mut role = manifests
            .of_kind("ClusterRole")
            .find(|r| r["metadata"]["name"] == role_name.as_str())
            .cloned()
            .unwrap_or_else(|| json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role_name}}));
        append_rules(&mut role, cluster);
        manifests.replace(role.clone());
        changed.push(role);
        if bound_role(
            manifests,
            "ClusterRoleBinding",
            None,
            &sa_namespace,
            &sa_name,
        )
        .is_none()
        {
            let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": role_name}, "subjects": subject,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name}});
            manifests.replace(binding.clone());
            changed.push(binding);
        }
    }
    let namespaces: BTreeSet<&String> = needs.iter().filter_map(|n| n.namespace.as_ref()).collect();
    for ns in namespaces {
        let role_name = bound_role(manifests, "RoleBinding", Some(ns), &sa_namespace, &sa_name)
            .unwrap_or_else(|| format!("{sa_name}-observed"));
        let mut role = manifests
            .of_kind("Role")
            .find(|r| r["metadata"]["name"] == role_name.as_str() && r["metadata"]["namespace"] == ns.as_str())
            .cloned()
            .unwrap_or_else(|| json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": role_name, "namespace": ns}}));
        append_rules(
            &mut role,
            needs
                .iter()
                .filter(|n| n.namespace.as_ref() == Some(ns))
                .collect(),
        );
        manifests.replace(role.clone());
        changed.push(role);
        if bound_role(manifests, "RoleBinding", Some(ns), &sa_namespace, &sa_name).is_none() {
            let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": role_name, "namespace": ns}, "subjects": subject,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name}});
            manifests.replace(binding.clone());
            changed.push(binding);
        }
    }
    Ok(changed)
}

/// The name of the role a binding of `kind` (in `namespace`) gives the ServiceAccount.
fn bound_role(
    manifests: &Manifests,
    kind: &str,
    namespace: Option<&str>,
    sa_namespace: &str,
    sa_name: &str,
) -> Option<String> {
    manifests
        .of_kind(kind)
        .filter(|b| namespace.is_none() || b["metadata"]["namespace"].as_str() == namespace)
        .filter(|b| kind == "ClusterRoleBinding" || b["roleRef"]["kind"] == "Role")
        .find(|b| {
            b["subjects"].as_array().into_iter().flatten().any(|s| {
                s["kind"] == "ServiceAccount"
                    && s["name"] == sa_name
                    && s["namespace"].as_str().unwrap_or("default") == sa_namespace
            })
        })
        .and_then(|b| b["roleRef"]["name"].as_str().map(str::to_owned))
}

fn append_rules(role: &mut Value, needs: Vec<&Need>) {
    let mut rules = role["rules"].as_array().cloned().unwrap_or_default();
    rules.extend(minimal_rules(needs));
    role["rules"] = Value::Array(rules);
}
