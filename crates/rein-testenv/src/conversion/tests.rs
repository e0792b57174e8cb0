//! The answer checks of `review.rs` against kube-apiserver's messages.

use serde_json::{Value, json};

use super::review::{check_converted, converted_objects};

fn answer(response: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response})
}

fn original() -> Value {
    json!({
        "apiVersion": "demo.rein.dev/v2", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "u-1", "generation": 3,
                     "labels": {"a": "1"}, "resourceVersion": "7"},
        "spec": {"size": 1},
    })
}

#[test]
fn the_review_must_be_a_successful_conversion_review_for_the_request() {
    let ok = answer(json!({"uid": "x", "result": {"status": "Success"}, "convertedObjects": [{}]}));
    assert_eq!(converted_objects(&ok, "v1", "x").unwrap().len(), 1);
    let wrong_type = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"});
    assert_eq!(
        converted_objects(&wrong_type, "v1", "x").unwrap_err(),
        "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got \
         admission.k8s.io/v1, Kind=AdmissionReview"
    );
    let none = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"});
    assert_eq!(
        converted_objects(&none, "v1", "x").unwrap_err(),
        "no response provided"
    );
    let other_uid = answer(json!({"uid": "y", "result": {"status": "Success"}}));
    assert_eq!(
        converted_objects(&other_uid, "v1", "x").unwrap_err(),
        "expected response.uid=\"x\", got \"y\""
    );
    let failed = answer(json!({"uid": "x", "result": {"status": "Failure", "message": "nope"}}));
    assert_eq!(converted_objects(&failed, "v1", "x").unwrap_err(), "nope");
    let silent = answer(json!({"uid": "x", "result": {"status": "Failure"}}));
    assert_eq!(
        converted_objects(&silent, "v1", "x").unwrap_err(),
        "response.result.status was 'Failure', not 'Success'"
    );
    // A v1beta1 review is answered as v1beta1.
    let beta = json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview",
                      "response": {"uid": "x", "result": {"status": "Success"}}});
    assert!(converted_objects(&beta, "v1beta1", "x").unwrap().is_empty());
}

#[test]
fn only_labels_and_annotations_may_change_in_metadata() {
    let mut converted = original();
    converted["apiVersion"] = json!("demo.rein.dev/v1");
    converted["spec"] = json!({"replicas": 1});
    converted["metadata"]["generation"] = json!(99);
    converted["metadata"]["resourceVersion"] = json!("100");
    converted["metadata"]["labels"] = json!({"a": "2", "b": "3"});
    converted["metadata"]["annotations"] = json!({"note": "converted"});
    let out = check_converted(&original(), converted, "demo.rein.dev/v1", None).unwrap();
    assert_eq!(out["spec"], json!({"replicas": 1}));
    assert_eq!(out["metadata"]["generation"], 3, "restored");
    assert_eq!(out["metadata"]["resourceVersion"], "7", "restored");
    assert_eq!(
        out["metadata"]["labels"],
        json!({"a": "2", "b": "3"}),
        "kept"
    );
    assert_eq!(
        out["metadata"]["annotations"],
        json!({"note": "converted"}),
        "kept"
    );

    // Dropping the labels drops them.
    let mut converted = original();
    converted["apiVersion"] = json!("demo.rein.dev/v1");
    converted["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("labels");
    let out = check_converted(&original(), converted, "demo.rein.dev/v1", None).unwrap();
    assert!(out["metadata"].get("labels").is_none());
}

#[test]
fn a_wrong_object_is_refused_with_kubes_message() {
    let refuse = |edit: &dyn Fn(&mut Value), index: Option<usize>| {
        let mut converted = original();
        converted["apiVersion"] = json!("demo.rein.dev/v1");
        edit(&mut converted);
        check_converted(&original(), converted, "demo.rein.dev/v1", index).unwrap_err()
    };
    assert_eq!(
        refuse(&|c| c["apiVersion"] = json!("demo.rein.dev/v3"), None),
        "returned invalid object at index 0: invalid groupVersion (expected demo.rein.dev/v1, \
         received demo.rein.dev/v3)"
    );
    assert_eq!(
        refuse(&|c| c["kind"] = json!("Gadget"), Some(2)),
        "returned invalid converted object at index 2: invalid kind (expected Widget, received \
         Gadget)"
    );
    assert_eq!(
        refuse(&|c| c["metadata"]["uid"] = json!("u-2"), None),
        "returned invalid object: must have the same UID: u-1 != u-2"
    );
    assert_eq!(
        refuse(&|c| c["metadata"]["namespace"] = json!("other"), Some(0)),
        "returned invalid converted object at index 0: must have the same namespace: default != \
         other"
    );
    assert_eq!(
        refuse(&|c| c["metadata"]["labels"] = json!({"a": 1}), None),
        "returned invalid metadata: metadata.labels[a] must be a string, but is float64 in \
         converted object"
    );
    assert_eq!(
        refuse(&|c| c["metadata"]["annotations"] = json!("x"), Some(1)),
        "returned invalid metadata in object at index 1: invalid metadata.annotations of type \
         string in converted object"
    );
}
