//! Discovery documents: `/version`, `/apis`, `/apis/{group}` and the `APIResourceList`s.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use super::components;
use crate::resources::{Catalogue, ResKey, ResourceDef, compare_versions};
use crate::store::Txn;

/// The storage version of each custom resource (the CRD version with `storage: true`);
/// built-in resources store their preferred version.
#[derive(Debug, Default)]
pub(crate) struct StorageVersions(HashMap<ResKey, String>);

impl StorageVersions {
    /// Reads the stored CRDs.
    pub(crate) fn of_crds(txn: &Txn<'_>) -> StorageVersions {
        let crds = ResKey {
            group: "apiextensions.k8s.io".to_string(),
            plural: "customresourcedefinitions".to_string(),
        };
        let mut map = HashMap::new();
        for crd in txn.list(&crds, None) {
            let text = |pointer: &str| crd.pointer(pointer).and_then(Value::as_str);
            let (Some(group), Some(plural)) = (text("/spec/group"), text("/spec/names/plural"))
            else {
                continue;
            };
            let storage = crd
                .pointer("/spec/versions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .and_then(|v| v.get("name"))
                .and_then(Value::as_str);
            if let Some(version) = storage {
                let key = ResKey {
                    group: group.to_string(),
                    plural: plural.to_string(),
                };
                map.insert(key, version.to_string());
            }
        }
        StorageVersions(map)
    }

    fn of<'a>(&'a self, def: &'a ResourceDef) -> Option<&'a str> {
        self.0
            .get(&def.key())
            .map(String::as_str)
            .or_else(|| def.versions.first().map(String::as_str))
    }
}

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

/// `/`: the paths kube-apiserver lists (`metav1.RootPaths`), as its index handler writes them:
/// sorted, each once, indented JSON. Listed are the paths served here: discovery (every
/// group and version, custom resources' included, as the aggregator lists their
/// APIServices), the health endpoints and their checks, OpenAPI and `/version`.
pub(crate) fn root_paths(catalogue: &Catalogue) -> bytes::Bytes {
    let mut paths: std::collections::BTreeSet<String> = [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/",
        "/openapi/v2",
        "/openapi/v3",
        "/openapi/v3/",
        "/version",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    for (group, versions) in group_versions(catalogue) {
        for version in &versions {
            paths.insert(format!("/apis/{group}/{version}"));
        }
        paths.insert(format!("/apis/{group}"));
    }
    paths.extend(super::health::paths());
    let root = json!({"paths": paths});
    serde_json::to_vec_pretty(&root).unwrap_or_default().into()
}

/// Every named group's versions, preferred first.
pub(crate) fn group_versions(catalogue: &Catalogue) -> BTreeMap<String, Vec<String>> {
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

/// `/api/v1` or `/apis/{group}/{version}`: top-level resources (with `storageVersionHash`),
/// each followed by its subresources in name order, as kube-apiserver lists them.
pub(crate) fn resource_list(
    catalogue: &Catalogue,
    storage: &StorageVersions,
    group: &str,
    version: &str,
) -> Option<Value> {
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
    let mut resources = Vec::new();
    for def in catalogue.all() {
        if def.group != group || !def.serves(version) {
            continue;
        }
        let create_only = crate::auth::create_only(&def.group, &def.plural);
        let mut r = json!({
            "name": def.plural,
            "singularName": def.singular,
            "namespaced": def.namespaced,
            "kind": def.kind,
            "verbs": if create_only {
                json!(["create"])
            } else if components::applies(&def) {
                json!(["get", "list"])
            } else {
                verbs.clone()
            },
        });
        if !def.short_names.is_empty() {
            r["shortNames"] = json!(def.short_names);
        }
        if !def.categories.is_empty() {
            r["categories"] = json!(def.categories);
        }
        // Built-ins: the preferred version (an approximation for the few that store another).
        let storage_version = storage.of(&def).unwrap_or(version);
        if !create_only {
            r["storageVersionHash"] = json!(storage_version_hash(
                &def.key().group,
                storage_version,
                &def.kind
            ));
        }
        resources.push(r);
        let mut subs = subresources(&def);
        subs.sort_by(|a, b| a.name.cmp(b.name));
        for sub in subs {
            let mut r = json!({
                "name": format!("{}/{}", def.plural, sub.name),
                "singularName": "",
                "namespaced": def.namespaced,
            });
            if let Some((group, version)) = sub.group_version {
                r["group"] = json!(group);
                r["version"] = json!(version);
            }
            r["kind"] = json!(sub.kind.unwrap_or(&def.kind));
            r["verbs"] = json!(sub.verbs);
            resources.push(r);
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

/// kube-apiserver's `discovery.StorageVersionHash`: the first 8 bytes of the SHA-256 of
/// `group/version/kind` (of the storage version), base64-encoded.
fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine as _;
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{group}/{version}/{kind}").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

/// One subresource as discovery lists it.
struct Subresource {
    name: &'static str,
    /// The response kind when it is not the parent's.
    kind: Option<&'static str>,
    /// The response kind's group and version when not the parent's.
    group_version: Option<(&'static str, &'static str)>,
    verbs: &'static [&'static str],
}

const GET_PATCH_UPDATE: &[&str] = &["get", "patch", "update"];
const CREATE: &[&str] = &["create"];
const CREATE_GET: &[&str] = &["create", "get"];
const PROXY: &[&str] = &["create", "delete", "get", "patch", "update"];

/// The subresources kube-apiserver lists for `def`: `status` and `scale` where served, plus
/// the fixed ones of the core kinds (listed only; most are not served here).
fn subresources(def: &ResourceDef) -> Vec<Subresource> {
    let sub = |name, kind, group_version, verbs| Subresource {
        name,
        kind,
        group_version,
        verbs,
    };
    let mut subs = Vec::new();
    if def.status {
        subs.push(sub("status", None, None, GET_PATCH_UPDATE));
    }
    if def.scale.is_some() {
        subs.push(sub(
            "scale",
            Some("Scale"),
            Some(("autoscaling", "v1")),
            GET_PATCH_UPDATE,
        ));
    }
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => subs.extend([
            sub("attach", Some("PodAttachOptions"), None, CREATE_GET),
            sub("binding", Some("Binding"), None, CREATE),
            sub("ephemeralcontainers", None, None, GET_PATCH_UPDATE),
            sub("eviction", Some("Eviction"), Some(("policy", "v1")), CREATE),
            sub("exec", Some("PodExecOptions"), None, CREATE_GET),
            sub("log", None, None, &["get"]),
            sub(
                "portforward",
                Some("PodPortForwardOptions"),
                None,
                CREATE_GET,
            ),
            sub("proxy", Some("PodProxyOptions"), None, PROXY),
            sub("resize", None, None, GET_PATCH_UPDATE),
        ]),
        ("", "nodes") => subs.push(sub("proxy", Some("NodeProxyOptions"), None, PROXY)),
        ("", "services") => subs.push(sub("proxy", Some("ServiceProxyOptions"), None, PROXY)),
        ("", "serviceaccounts") => subs.push(sub(
            "token",
            Some("TokenRequest"),
            Some(("authentication.k8s.io", "v1")),
            CREATE,
        )),
        ("", "namespaces") => subs.push(sub("finalize", None, None, &["update"])),
        ("certificates.k8s.io", "certificatesigningrequests") => {
            subs.push(sub("approval", None, None, GET_PATCH_UPDATE));
        }
        _ => {}
    }
    subs
}
