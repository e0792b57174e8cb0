//! Canonical form: Go struct order, empty structs and zero fields, omitempty drops, and the
//! kinds without a generated table.

use serde_json::json;

use super::*;

fn text(v: &Value) -> String {
    String::from_utf8(to_vec(v)).expect("utf-8")
}

#[test]
fn built_ins_marshal_as_go_does() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "finalizers": [], "labels": {}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], "hostNetwork": false},
    });
    assert_eq!(
        text(&pod),
        r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"default","creationTimestamp":null},"spec":{"containers":[{"name":"c","image":"nginx","resources":{}}]},"status":{}}"#
    );
    let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod"}, "message": "m", "series": null});
    assert_eq!(
        text(&event),
        r#"{"kind":"Event","apiVersion":"v1","metadata":{"name":"e","creationTimestamp":null},"involvedObject":{"kind":"Pod"},"message":"m","source":{},"firstTimestamp":null,"lastTimestamp":null,"eventTime":null,"reportingComponent":"","reportingInstance":""}"#
    );
    let status = json!({"apiVersion": "v1", "kind": "Status", "code": 404, "status": "Failure",
        "message": "m", "reason": "NotFound", "metadata": {}});
    assert_eq!(
        text(&status),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"m","reason":"NotFound","code":404}"#
    );
}

#[test]
fn custom_resources_and_unknown_kinds_keep_sorted_keys() {
    let cr = json!({"kind": "Widget", "apiVersion": "apps.example.com/v1",
        "metadata": {"name": "w", "finalizers": []}, "spec": {"b": 1, "a": 2}});
    assert_eq!(
        text(&cr),
        r#"{"apiVersion":"apps.example.com/v1","kind":"Widget","metadata":{"finalizers":[],"name":"w"},"spec":{"a":2,"b":1}}"#
    );
    assert_eq!(package("gateway.networking.k8s.io"), None);
    assert_eq!(package("networking.k8s.io"), Some("networking"));
}

#[test]
fn list_items_lose_their_type_only_in_canonical_form() {
    let item = |json: &[u8]| {
        let mut out = b"[1,".to_vec();
        out.extend_from_slice(json);
        untype_list_item(&mut out, 3);
        String::from_utf8(out).expect("utf-8")
    };
    assert_eq!(
        item(br#"{"kind":"Pod","apiVersion":"v1","metadata":{}}"#),
        r#"[1,{"metadata":{}}"#
    );
    assert_eq!(item(br#"{"kind":"Pod","apiVersion":"v1"}"#), "[1,{}");
    assert_eq!(
        item(br#"{"apiVersion":"x/v1","kind":"W"}"#),
        r#"[1,{"apiVersion":"x/v1","kind":"W"}"#
    );
}

#[test]
fn crd_subresources_survive() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced",
        "versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "subresources": {"status": {}}}]}});
    eprintln!("{}", text(&crd));
}
