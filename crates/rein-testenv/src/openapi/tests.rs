//! Tests for the OpenAPI documents and strict field validation.

use serde_json::{Value, json};

use super::*;
use crate::patch::Gvk;

fn crontab(schema: Value) -> CrdSchema {
    CrdSchema {
        group: "stable.example.com".to_string(),
        version: "v1".to_string(),
        kind: "CronTab".to_string(),
        plural: "crontabs".to_string(),
        namespaced: true,
        schema,
        status: true,
        scale: true,
    }
}

fn crontab_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "cronSpec": {"type": "string", "description": "the schedule"},
                    "replicas": {"type": "integer"},
                    "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                    "steps": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
                }
            },
            "status": {"type": "object"}
        }
    })
}

fn no_v2_refs(value: &Value) -> bool {
    !value.to_string().contains("#/definitions/")
}

#[test]
fn crd_definition_names_reverse_the_group() {
    assert_eq!(
        crontab(json!({})).definition_name(),
        "com.example.stable.v1.CronTab"
    );
}

#[test]
fn v2_document_has_definitions_gvks_and_patch_parameters() {
    let doc = v2_document(&[crontab(crontab_schema())]);
    assert_eq!(doc["swagger"], "2.0");
    let pod = &doc["definitions"]["io.k8s.api.core.v1.Pod"];
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "Pod"}])
    );
    assert_eq!(
        pod["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let containers = &doc["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
    let finalizers = &doc["definitions"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]
        ["finalizers"];
    assert_eq!(finalizers["x-kubernetes-list-type"], "set");

    let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "version": "v1", "kind": "Pod"})
    );
    assert_eq!(patch["x-kubernetes-action"], "patch");
    assert_eq!(patch["operationId"], "patchCoreV1NamespacedPod");
    let names: Vec<&str> = patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"fieldValidation")
            && names.contains(&"fieldManager")
            && names.contains(&"force")
    );
    assert!(doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["post"].is_object());
    assert!(doc["paths"]["/api/v1/nodes/{name}"]["get"].is_object());
    assert!(
        doc["paths"]
            .get("/api/v1/namespaces/{namespace}/nodes")
            .is_none()
    );

    let crd = &doc["definitions"]["com.example.stable.v1.CronTab"];
    assert_eq!(crd["x-kubernetes-group-version-kind"][0]["kind"], "CronTab");
    assert_eq!(
        crd["properties"]["spec"]["properties"]["cronSpec"]["type"],
        "string"
    );
    assert!(
        doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]["patch"]
            .is_object()
    );
    // Every reference resolves.
    let text = doc.to_string();
    for piece in text.split("\"$ref\":\"#/definitions/").skip(1) {
        let name = piece.split('"').next().unwrap();
        assert!(
            doc["definitions"].get(name).is_some(),
            "dangling $ref {name}"
        );
    }
}

#[test]
fn v3_index_lists_group_versions_and_hash_follows_crds() {
    let index = v3_index(&[]);
    let url = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    assert!(url.starts_with("/openapi/v3/api/v1?hash="), "{url}");
    assert!(index["paths"]["apis/apps/v1"].is_object());
    assert!(index["paths"].get("apis/stable.example.com/v1").is_none());

    let with_crd = v3_index(&[crontab(crontab_schema())]);
    let first = with_crd["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"].clone();
    assert!(
        first
            .as_str()
            .unwrap()
            .starts_with("/openapi/v3/apis/stable.example.com/v1?hash=")
    );
    let changed = v3_index(&[crontab(json!({"type": "object"}))]);
    assert_ne!(
        changed["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"],
        first
    );
    assert_eq!(with_crd["paths"]["api/v1"], index["paths"]["api/v1"]);
}

#[test]
fn v3_group_version_documents_are_self_contained() {
    let doc = v3_group_version("apps", "v1", &[]).unwrap();
    assert_eq!(doc["openapi"], "3.0.0");
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    assert!(schemas.contains_key("io.k8s.api.apps.v1.Deployment"));
    assert!(schemas.contains_key("io.k8s.api.core.v1.PodSpec"));
    assert!(schemas.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
    assert!(
        !schemas.contains_key("io.k8s.api.core.v1.Pod"),
        "only what apps/v1 references"
    );
    assert!(no_v2_refs(&doc));
    let text = doc.to_string();
    for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = piece.split('"').next().unwrap();
        assert!(schemas.contains_key(name), "dangling $ref {name}");
    }
    let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"]["kind"],
        "Deployment"
    );
    let validation = patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "fieldValidation")
        .unwrap();
    assert_eq!(validation["in"], "query");
    assert_eq!(validation["schema"]["type"], "string");
    assert!(patch["requestBody"]["content"]["application/apply-patch+yaml"].is_object());

    let crd_doc =
        v3_group_version("stable.example.com", "v1", &[crontab(crontab_schema())]).unwrap();
    assert!(crd_doc["components"]["schemas"]["com.example.stable.v1.CronTab"].is_object());
    assert!(
        crd_doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]
            .is_object()
    );
    assert!(v3_group_version("nothing.example.com", "v1", &[]).is_none());
}

#[test]
fn unknown_fields_of_a_pod() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"any": "thing"}, "bogus": 1},
        "spec": {"containers": [{"name": "c", "image": "i", "foo": true, "resources": {"limits": {"cpu": "1"}}}]},
        "extra": {}
    });
    let unknown = unknown_fields(&Gvk::new("", "v1", "Pod"), &[], &pod);
    assert_eq!(
        unknown,
        vec!["extra", "metadata.bogus", "spec.containers[0].foo"]
    );
    let valid = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}});
    assert!(unknown_fields(&Gvk::new("", "v1", "Pod"), &[], &valid).is_empty());
}

#[test]
fn unknown_fields_of_a_custom_resource_prune_like_a_structural_schema() {
    let crds = [crontab(crontab_schema())];
    let gvk = Gvk::new("stable.example.com", "v1", "CronTab");
    let object = json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "c", "annotations": {"a": "b"}},
        "spec": {
            "cronSpec": "* * * * */5", "image": "unknown",
            "template": {"anything": {"goes": 1}},
            "tags": {"x": "y"},
            "steps": [{"name": "a"}, {"name": "b", "extra": 1}]
        },
        "status": {"whatever": 1}
    });
    let unknown = unknown_fields(&gvk, &crds, &object);
    assert_eq!(
        unknown,
        vec!["spec.image", "spec.steps[1].extra", "status.whatever"]
    );
}

#[test]
fn kinds_without_a_schema_have_no_unknown_fields() {
    let unknown = unknown_fields(&Gvk::new("x.io", "v1", "Nope"), &[], &json!({"a": 1}));
    assert!(unknown.is_empty());
}
