//! Discovery documents: `/version`, `/apis`, `/apis/{group}` and the `APIResourceList`s.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::resources::{Catalogue, compare_versions};

/// The Kubernetes version this server claims to be.
pub(crate) fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": "v1.33.0",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-04-23T00:00:00Z",
        "goVersion": "go1.24.2",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// Every group's versions, preferred first.
fn group_versions(catalogue: &Catalogue) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for def in catalogue.all() {
        if def.group.is_empty() {
            continue;
        }
        let versions = groups.entry(def.group.clone()).or_default();
        for v in &def.versions {
            if !versions.contains(v) {
                versions.push(v.clone());
            }
        }
    }
    for versions in groups.values_mut() {
        versions.sort_by(|a, b| compare_versions(a, b));
    }
    groups
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(gv),
    })
}

/// `/apis`.
pub(crate) fn group_list(catalogue: &Catalogue) -> Value {
    let groups: Vec<Value> = group_versions(catalogue)
        .iter()
        .map(|(name, versions)| group_json(name, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`.
pub(crate) fn group(catalogue: &Catalogue, name: &str) -> Option<Value> {
    let groups = group_versions(catalogue);
    let versions = groups.get(name)?;
    let mut g = group_json(name, versions);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
}

/// `/api/v1` or `/apis/{group}/{version}`.
pub(crate) fn resource_list(catalogue: &Catalogue, group: &str, version: &str) -> Option<Value> {
    let verbs = json!([
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch"
    ]);
    let sub_verbs = json!(["get", "patch", "update"]);
    let mut resources = Vec::new();
    for def in catalogue.all() {
        if def.group != group || !def.serves(version) {
            continue;
        }
        let mut r = json!({
            "name": def.plural,
            "singularName": def.singular,
            "namespaced": def.namespaced,
            "kind": def.kind,
            "verbs": verbs,
        });
        if !def.short_names.is_empty() {
            r["shortNames"] = json!(def.short_names);
        }
        if !def.categories.is_empty() {
            r["categories"] = json!(def.categories);
        }
        resources.push(r);
        if def.status {
            resources.push(json!({
                "name": format!("{}/status", def.plural),
                "singularName": "",
                "namespaced": def.namespaced,
                "kind": def.kind,
                "verbs": sub_verbs,
            }));
        }
        if def.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", def.plural),
                "singularName": "",
                "namespaced": def.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": sub_verbs,
            }));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}
