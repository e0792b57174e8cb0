//! The decoder's messages for the shapes of Go types: structs, slices, maps, pointers to
//! scalars, IntOrString and Quantity, and unknown-field paths.

use serde_json::{Value, json};

use super::decode;

fn check(group: &str, kind: &str, mut obj: Value) -> Result<(Vec<String>, Value), String> {
    let (root, definitions) =
        crate::openapi::builtin_schema(group, "v1", kind).expect("a built-in kind");
    decode::check(root, definitions, &mut obj).map(|unknown| (unknown, obj))
}

fn error(group: &str, kind: &str, obj: Value) -> String {
    check(group, kind, obj).expect_err("a type error")
}

#[test]
fn type_errors_name_the_go_struct_field_and_type() {
    assert_eq!(
        error("", "Pod", json!({"spec": {"containers": {"name": "c"}}})),
        "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type \
         []v1.Container"
    );
    assert_eq!(
        error("", "Pod", json!({"spec": {"containers": [{"args": "x"}]}})),
        "json: cannot unmarshal string into Go struct field Container.spec.containers.args of \
         type []string"
    );
    assert_eq!(
        error("", "Pod", json!({"metadata": {"annotations": {"a": true}}})),
        "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.annotations of \
         type string"
    );
    assert_eq!(
        error(
            "",
            "Service",
            json!({"spec": {"ports": [{"port": 80, "targetPort": true}]}})
        ),
        "json: cannot unmarshal bool into Go struct field ServicePort.spec.ports.targetPort of \
         type int32"
    );
    assert_eq!(
        error(
            "apps",
            "Deployment",
            json!({"spec": {"replicas": 4_294_967_296_i64}})
        ),
        "json: cannot unmarshal number 4294967296 into Go struct field DeploymentSpec.spec.\
         replicas of type int32"
    );
    assert!(
        error(
            "",
            "Pod",
            json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "lots"}}}]}})
        )
        .starts_with("quantities must match the regular expression")
    );
    assert!(
        error(
            "",
            "Pod",
            json!({"metadata": {"creationTimestamp": "yesterday"}})
        )
        .starts_with("parsing time \"yesterday\"")
    );
}

#[test]
fn nulls_numbers_and_quantities_that_go_accepts_pass() {
    let pod = json!({"metadata": {"labels": null}, "spec": {"containers": [{
        "name": "c", "image": "i",
        "resources": {"limits": {"cpu": 2, "memory": "1Gi"}},
        "ports": [{"containerPort": 80}]}]}});
    let (unknown, _) = check("", "Pod", pod).expect("decodes");
    assert!(unknown.is_empty());
}

#[test]
fn unknown_fields_are_reported_in_document_order_and_removed() {
    let obj = json!({"metadata": {"name": "c", "x": 1}, "spec": {"containers": [
        {"name": "c", "image": "i", "y": 2}]}, "z": 3});
    let (unknown, obj) = check("", "Pod", obj).expect("decodes");
    assert_eq!(unknown, ["metadata.x", "spec.containers[0].y", "z"]);
    assert_eq!(
        obj,
        json!({"metadata": {"name": "c"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    );
}
