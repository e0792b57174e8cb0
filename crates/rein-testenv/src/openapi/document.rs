//! Assembles the Swagger 2.0 document, the OpenAPI v3 index and per-group-version documents.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Map, Value, json};

use super::CrdSchema;
use super::builtin::builtins;
use crate::patch::Gvk;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
const SERVER_VERSION: &str = "v1.33.0";
/// The PATCH content types kube-apiserver advertises for custom resources.
const CUSTOM_PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];
/// The description kube-apiserver gives a custom resource's `metadata`.
const METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: \
    https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// A resource as the documents describe it, built-in or custom.
#[derive(Debug, Clone)]
struct Served {
    gvk: Gvk,
    plural: String,
    namespaced: bool,
    definition: String,
    /// Defined by a CRD: no strategic merge patch.
    custom: bool,
    /// Serves `status` (paths are published for custom resources only).
    status: bool,
    /// Serves `scale` (paths are published for custom resources only).
    scale: bool,
}

/// The Swagger 2.0 document served at `/openapi/v2`.
pub(crate) fn v2_document(crds: &[CrdSchema]) -> Value {
    let mut definitions = builtins().definitions.clone();
    for crd in crds {
        definitions.insert(crd.definition_name(), crd_definition_v2(crd));
    }
    definitions.entry(PATCH).or_insert_with(patch_definition);
    if crds.iter().any(|c| c.scale) {
        add_scale_definitions(&mut definitions);
    }
    let mut paths = Map::new();
    for resource in served(crds) {
        add_paths(&mut paths, &resource, Flavor::V2);
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": SERVER_VERSION},
        "paths": paths,
        "definitions": definitions,
    })
}

/// The OpenAPI v3 discovery index served at `/openapi/v3`.
pub(crate) fn v3_index(crds: &[CrdSchema]) -> Value {
    let mut group_versions: BTreeMap<String, DefaultHasher> = BTreeMap::new();
    for resource in served(crds) {
        let key = gv_path(&resource.gvk.group, &resource.gvk.version);
        group_versions.entry(key.clone()).or_insert_with(|| {
            let mut hasher = DefaultHasher::new();
            SERVER_VERSION.hash(&mut hasher);
            key.hash(&mut hasher);
            hasher
        });
    }
    for crd in crds {
        let key = gv_path(&crd.group, &crd.version);
        if let Some(hasher) = group_versions.get_mut(&key) {
            crd_definition(crd).to_string().hash(hasher);
            crd.plural.hash(hasher);
            crd.namespaced.hash(hasher);
            (crd.status, crd.scale).hash(hasher);
        }
    }
    let paths: Map<String, Value> = group_versions
        .into_iter()
        .map(|(path, hasher)| {
            let url = format!("/openapi/v3/{path}?hash={:016X}", hasher.finish());
            (path, json!({ "serverRelativeURL": url }))
        })
        .collect();
    json!({ "paths": paths })
}

/// The OpenAPI 3.0 document for one group version (`/openapi/v3/apis/apps/v1`); `None` when
/// nothing is served there.
pub(crate) fn v3_group_version(group: &str, version: &str, crds: &[CrdSchema]) -> Option<Value> {
    let resources: Vec<Served> = served(crds)
        .into_iter()
        .filter(|r| r.gvk.group == group && r.gvk.version == version)
        .collect();
    if resources.is_empty() {
        return None;
    }
    let mut pool = builtins().definitions.clone();
    add_scale_definitions(&mut pool);
    for crd in crds
        .iter()
        .filter(|c| c.group == group && c.version == version)
    {
        pool.insert(crd.definition_name(), crd_definition(crd));
    }
    let mut paths = Map::new();
    let mut wanted: Vec<String> = vec!["io.k8s.apimachinery.pkg.apis.meta.v1.Status".to_string()];
    for resource in &resources {
        add_paths(&mut paths, resource, Flavor::V3);
        wanted.push(resource.definition.clone());
        if resource.custom && resource.scale {
            wanted.push(SCALE.to_string());
        }
    }
    let mut schemas = Map::new();
    while let Some(name) = wanted.pop() {
        if schemas.contains_key(&name) {
            continue;
        }
        let Some(schema) = pool.get(&name) else {
            continue;
        };
        let mut refs = BTreeSet::new();
        collect_refs(schema, &mut refs);
        wanted.extend(refs);
        schemas.insert(name, rewrite_refs(schema));
    }
    schemas.entry(PATCH).or_insert_with(patch_definition);
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": SERVER_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

fn patch_definition() -> Value {
    json!({
        "type": "object",
        "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.",
    })
}

/// The definition a CRD contributes: its schema plus `apiVersion`, `kind`, `metadata` (a
/// reference to ObjectMeta) and GVK, as kube-apiserver's CRD OpenAPI builder makes it. The
/// CRD's own extensions (`x-kubernetes-list-type`, `x-kubernetes-map-type`, …) stay; there are
/// no `x-kubernetes-patch-*` ones, as custom resources have no strategic merge patch.
pub(super) fn crd_definition(crd: &CrdSchema) -> Value {
    let mut schema = match &crd.schema {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    strip_patch_extensions(&mut schema);
    schema.insert("type".to_string(), json!("object"));
    let properties = schema
        .entry("properties")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(properties) = properties {
        properties.insert(
            "apiVersion".to_string(),
            json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}),
        );
        properties.insert(
            "kind".to_string(),
            json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}),
        );
        properties.insert(
            "metadata".to_string(),
            json!({"$ref": format!("#/definitions/{OBJECT_META}"), "description": METADATA_DESCRIPTION}),
        );
    }
    schema.insert(
        "x-kubernetes-group-version-kind".to_string(),
        json!([{"group": crd.group, "version": crd.version, "kind": crd.kind}]),
    );
    Value::Object(schema)
}

/// The Swagger 2.0 flavour: a schema that preserves unknown fields at its root is published
/// as a bare object (as kube-apiserver does, so kubectl's client-side validation lets every
/// field through).
fn crd_definition_v2(crd: &CrdSchema) -> Value {
    if crd.schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return json!({
            "type": "object",
            "x-kubernetes-group-version-kind":
                [{"group": crd.group, "version": crd.version, "kind": crd.kind}],
        });
    }
    crd_definition(crd)
}

/// Removes `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` at every level
/// of a CRD's schema: they would make kubectl compute strategic merge patches, which the
/// server refuses for custom resources.
fn strip_patch_extensions(schema: &mut Map<String, Value>) {
    schema.remove("x-kubernetes-patch-strategy");
    schema.remove("x-kubernetes-patch-merge-key");
    for child in schema.values_mut() {
        match child {
            Value::Object(map) => strip_patch_extensions(map),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(map) = item {
                        strip_patch_extensions(map);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The GVK's definition name, for validation.
pub(super) fn definition_for(gvk: &Gvk, crds: &[CrdSchema]) -> Option<String> {
    served(crds)
        .into_iter()
        .find(|r| &r.gvk == gvk)
        .map(|r| r.definition)
}

fn served(crds: &[CrdSchema]) -> Vec<Served> {
    let mut out: Vec<Served> = builtins()
        .resources
        .iter()
        .map(|r| Served {
            gvk: r.gvk.clone(),
            plural: r.plural.to_string(),
            namespaced: r.namespaced,
            definition: r.definition.clone(),
            custom: false,
            status: false,
            scale: false,
        })
        .collect();
    for crd in crds {
        out.push(Served {
            gvk: Gvk::new(&crd.group, &crd.version, &crd.kind),
            plural: crd.plural.clone(),
            namespaced: crd.namespaced,
            definition: crd.definition_name(),
            custom: true,
            status: crd.status,
            scale: crd.scale,
        });
    }
    out
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    V2,
    V3,
}

fn add_paths(paths: &mut Map<String, Value>, resource: &Served, flavor: Flavor) {
    let prefix = format!("/{}", gv_path(&resource.gvk.group, &resource.gvk.version));
    let scope = if resource.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}", resource.plural)
    } else {
        format!("{prefix}/{}", resource.plural)
    };
    let namespace_param = resource.namespaced.then_some("namespace");
    let collection_params: Vec<&str> = namespace_param.into_iter().collect();
    let mut item_params = collection_params.clone();
    item_params.push("name");

    if crate::auth::create_only(&resource.gvk.group, &resource.plural) {
        // A review: created and answered, never stored, so POST is all there is.
        let mut collection = Map::new();
        collection.insert("post".into(), operation(resource, "post", flavor));
        collection.insert(
            "parameters".into(),
            path_parameters(&collection_params, flavor),
        );
        paths.insert(scope, Value::Object(collection));
        return;
    }
    let mut collection = Map::new();
    collection.insert("get".into(), operation(resource, "list", flavor));
    collection.insert("post".into(), operation(resource, "post", flavor));
    collection.insert(
        "delete".into(),
        operation(resource, "deletecollection", flavor),
    );
    collection.insert(
        "parameters".into(),
        path_parameters(&collection_params, flavor),
    );
    paths.insert(scope.clone(), Value::Object(collection));

    let mut item = Map::new();
    item.insert("get".into(), operation(resource, "get", flavor));
    item.insert("put".into(), operation(resource, "put", flavor));
    item.insert("patch".into(), operation(resource, "patch", flavor));
    item.insert("delete".into(), operation(resource, "delete", flavor));
    item.insert("parameters".into(), path_parameters(&item_params, flavor));
    paths.insert(format!("{scope}/{{name}}"), Value::Object(item));

    if resource.namespaced {
        let mut all = Map::new();
        all.insert("get".into(), operation(resource, "list", flavor));
        paths.insert(format!("{prefix}/{}", resource.plural), Value::Object(all));
    }

    // A custom resource's subresources, as kube-apiserver's CRD OpenAPI builder adds them:
    // get, put and patch of `status` (the resource's own schema) and `scale` (a Scale).
    let subresources = [
        (resource.custom && resource.status, "status", "Status"),
        (resource.custom && resource.scale, "scale", "Scale"),
    ];
    for (_, path, suffix) in subresources.into_iter().filter(|(served, ..)| *served) {
        let mut target = resource.clone();
        if path == "scale" {
            target.gvk = Gvk::new("autoscaling", "v1", "Scale");
            target.definition = SCALE.to_string();
        }
        let mut sub = Map::new();
        for (method, action) in [("get", "get"), ("put", "put"), ("patch", "patch")] {
            let mut op = operation(&target, action, flavor);
            // Named after the parent: `readStableV1NamespacedCronTabScale`.
            op["operationId"] = json!(format!(
                "{}{suffix}",
                operation(resource, action, flavor)["operationId"]
                    .as_str()
                    .unwrap_or_default()
            ));
            sub.insert(method.into(), op);
        }
        sub.insert("parameters".into(), path_parameters(&item_params, flavor));
        paths.insert(format!("{scope}/{{name}}/{path}"), Value::Object(sub));
    }
}

/// `autoscaling/v1` Scale and its parts, for the scale subresources of custom resources (the
/// built-in definitions hold listable kinds only).
fn add_scale_definitions(definitions: &mut Map<String, Value>) {
    definitions.entry(SCALE).or_insert_with(|| {
        json!({
            "description": "Scale represents a scaling request for a resource.",
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
                "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
                "metadata": {"$ref": format!("#/definitions/{OBJECT_META}"), "description": METADATA_DESCRIPTION},
                "spec": {"$ref": "#/definitions/io.k8s.api.autoscaling.v1.ScaleSpec", "description": "spec defines the behavior of the scale."},
                "status": {"$ref": "#/definitions/io.k8s.api.autoscaling.v1.ScaleStatus", "description": "status is the current status of the scale. Read-only."},
            },
            "x-kubernetes-group-version-kind": [{"group": "autoscaling", "kind": "Scale", "version": "v1"}],
        })
    });
    definitions
        .entry("io.k8s.api.autoscaling.v1.ScaleSpec")
        .or_insert_with(|| {
            json!({
                "description": "ScaleSpec describes the attributes of a scale subresource.",
                "type": "object",
                "properties": {"replicas": {"type": "integer", "format": "int32", "description": "replicas is the desired number of instances for the scaled object."}},
            })
        });
    definitions
        .entry("io.k8s.api.autoscaling.v1.ScaleStatus")
        .or_insert_with(|| {
            json!({
                "description": "ScaleStatus represents the current status of a scale subresource.",
                "type": "object",
                "required": ["replicas"],
                "properties": {
                    "replicas": {"type": "integer", "format": "int32", "description": "replicas is the actual number of observed instances of the scaled object."},
                    "selector": {"type": "string", "description": "selector is the label query over pods that should match the replicas count."},
                },
            })
        });
}

fn path_parameters(names: &[&str], flavor: Flavor) -> Value {
    Value::Array(
        names
            .iter()
            .map(|name| parameter(name, "path", "string", true, flavor))
            .collect(),
    )
}

fn parameter(name: &str, location: &str, kind: &str, required: bool, flavor: Flavor) -> Value {
    let mut param = json!({
        "name": name,
        "in": location,
        "description": parameter_description(name),
    });
    if required {
        param["required"] = json!(true);
    }
    match flavor {
        Flavor::V2 => {
            param["type"] = json!(kind);
            param["uniqueItems"] = json!(true);
        }
        Flavor::V3 => param["schema"] = json!({"type": kind, "uniqueItems": true}),
    }
    param
}

fn parameter_description(name: &str) -> &'static str {
    match name {
        "fieldValidation" => {
            "fieldValidation instructs the server on how to handle objects in the request \
             containing unknown or duplicate fields. Valid values are: Ignore, Warn, Strict."
        }
        "dryRun" => "When present, indicates that modifications should not be persisted.",
        "fieldManager" => {
            "fieldManager is a name associated with the actor or entity that is making these changes."
        }
        "force" => "Force is going to \"force\" Apply requests.",
        "name" => "name of the resource",
        "namespace" => "object name and auth scope, such as for teams and projects",
        _ => "",
    }
}

fn operation(resource: &Served, action: &str, flavor: Flavor) -> Value {
    let gvk = &resource.gvk;
    let verb = match action {
        "post" => "create",
        "put" => "replace",
        other => other,
    };
    let scope = if resource.namespaced {
        "Namespaced"
    } else {
        ""
    };
    let group_id: String = if gvk.group.is_empty() {
        "Core".to_string()
    } else {
        gvk.group
            .split('.')
            .next()
            .map(capitalise)
            .unwrap_or_default()
    };
    let operation_id = format!(
        "{verb}{group_id}{}{scope}{}",
        capitalise(&gvk.version),
        gvk.kind
    );
    let mut parameters = vec![parameter("pretty", "query", "string", false, flavor)];
    if matches!(action, "post" | "put" | "patch") {
        parameters.push(parameter("dryRun", "query", "string", false, flavor));
        parameters.push(parameter("fieldManager", "query", "string", false, flavor));
        parameters.push(parameter(
            "fieldValidation",
            "query",
            "string",
            false,
            flavor,
        ));
    }
    if action == "patch" {
        parameters.push(parameter("force", "query", "boolean", false, flavor));
    }
    let schema_ref = match flavor {
        Flavor::V2 => format!("#/definitions/{}", resource.definition),
        Flavor::V3 => format!("#/components/schemas/{}", resource.definition),
    };
    let response = match flavor {
        Flavor::V2 => json!({"description": "OK", "schema": {"$ref": schema_ref}}),
        Flavor::V3 => json!({
            "description": "OK",
            "content": {"application/json": {"schema": {"$ref": schema_ref}}},
        }),
    };
    let mut op = json!({
        "operationId": operation_id,
        "description": format!("{action} {}", gvk.kind),
        "tags": [format!("{}{}", group_id.to_lowercase(), gvk.version)],
        "responses": {"200": response},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": gvk.group, "version": gvk.version, "kind": gvk.kind},
    });
    // As kube-apiserver: custom resources take no strategic merge patch, and kubectl's
    // client-side apply looks here to pick between a strategic and a JSON merge patch.
    let consumes: Vec<&str> = match action {
        "patch" if resource.custom => CUSTOM_PATCH_TYPES.to_vec(),
        "patch" => vec![
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ],
        _ => vec!["*/*"],
    };
    if matches!(action, "post" | "put" | "patch") {
        let body_ref = if action == "patch" {
            match flavor {
                Flavor::V2 => format!("#/definitions/{PATCH}"),
                Flavor::V3 => format!("#/components/schemas/{PATCH}"),
            }
        } else {
            schema_ref.clone()
        };
        match flavor {
            Flavor::V2 => parameters.push(json!({
                "name": "body", "in": "body", "required": true, "schema": {"$ref": body_ref},
            })),
            Flavor::V3 => {
                let content: Map<String, Value> = consumes
                    .iter()
                    .map(|c| (c.to_string(), json!({"schema": {"$ref": body_ref}})))
                    .collect();
                op["requestBody"] = json!({"content": content, "required": true});
            }
        }
    }
    op["parameters"] = Value::Array(parameters);
    if flavor == Flavor::V2 {
        op["consumes"] = json!(consumes);
        op["produces"] = json!(["application/json", "application/yaml"]);
        op["schemes"] = json!(["https"]);
    }
    op
}

fn capitalise(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn collect_refs(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if key == "$ref"
                    && let Some(name) = child
                        .as_str()
                        .and_then(|r| r.strip_prefix("#/definitions/"))
                {
                    out.insert(name.to_string());
                }
                collect_refs(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, out)),
        _ => {}
    }
}

fn rewrite_refs(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, child)| {
                    let child = match (key.as_str(), child.as_str()) {
                        ("$ref", Some(r)) => {
                            Value::String(r.replacen("#/definitions/", "#/components/schemas/", 1))
                        }
                        _ => rewrite_refs(child),
                    };
                    (key.clone(), child)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(rewrite_refs).collect()),
        other => other.clone(),
    }
}
