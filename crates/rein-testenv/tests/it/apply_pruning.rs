//! Server-side apply removes what its manager stopped sending, as structured-merge-diff does:
//! a struct whose fields only that manager owned goes with them (kube-rs's `crd_derive_schema`
//! example, which kube-apiserver answers 200).

use serde_json::{Value, json};

use crate::crd_support::{create_crd, raw, raw_typed};
use rein_testenv::TestEnv;

const FOOS: &str = "/apis/clux.dev/v1/namespaces/default/foos";

fn foo_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.clux.dev"},
        "spec": {
            "group": "clux.dev",
            "scope": "Namespaced",
            "names": {"plural": "foos", "kind": "Foo"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "fooSubSpec": {
                                "type": "object",
                                "required": ["field"],
                                "properties": {
                                    "field": {"type": "string"},
                                    "other": {"type": "string"},
                                },
                            },
                        },
                    }},
                }},
            }],
        },
    })
}

async fn apply(env: &TestEnv, manager: &str, body: Value) -> (u16, Value) {
    raw_typed(
        env,
        "PATCH",
        &format!("{FOOS}/f?fieldManager={manager}"),
        Some(&body),
        "application/apply-patch+yaml",
    )
    .await
}

async fn served(env: &TestEnv) {
    for _ in 0..200 {
        let (code, _) = raw(env, "GET", FOOS, None).await;
        if code == 200 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the CRD is never served");
}

#[tokio::test]
async fn a_struct_its_only_manager_stopped_sending_is_removed() {
    let env = TestEnv::start().await.expect("starts");
    let (code, crd) = create_crd(&env, &foo_crd()).await;
    assert_eq!(code, 201, "{crd}");
    served(&env).await;
    let foo = |spec: Value| json!({"apiVersion": "clux.dev/v1", "kind": "Foo", "metadata": {"name": "f"}, "spec": spec});

    let (code, first) = apply(
        &env,
        "m",
        foo(json!({"name": "a", "fooSubSpec": {"field": "x"}})),
    )
    .await;
    assert_eq!(code, 201, "{first}");
    let (code, second) = apply(&env, "m", foo(json!({"name": "a"}))).await;
    assert_eq!(code, 200, "{second}");
    assert_eq!(second["spec"], json!({"name": "a"}), "{second}");

    // A struct another manager still holds a field of stays, with that field.
    let (code, _) = apply(
        &env,
        "m",
        foo(json!({"name": "a", "fooSubSpec": {"field": "x"}})),
    )
    .await;
    assert_eq!(code, 200);
    let (code, other) = apply(
        &env,
        "n",
        foo(json!({"name": "a", "fooSubSpec": {"field": "x", "other": "o"}})),
    )
    .await;
    assert_eq!(code, 200, "{other}");
    let (code, kept) = apply(&env, "m", foo(json!({"name": "a"}))).await;
    assert_eq!(code, 200, "{kept}");
    assert_eq!(
        kept["spec"]["fooSubSpec"],
        json!({"field": "x", "other": "o"}),
        "{kept}"
    );
}

/// A CRD of two versions and the `None` conversion strategy, `storage` on `storage`.
fn multi_crd(storage: &str) -> Value {
    let version = |name: &str, props: Value| {
        json!({"name": name, "served": true, "storage": name == storage,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": props}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "multis.clux.dev"},
        "spec": {
            "group": "clux.dev",
            "scope": "Namespaced",
            "names": {"plural": "multis", "kind": "Multi"},
            "versions": [
                version("v1", json!({"name": {"type": "string"}, "oldprop": {"type": "integer"}})),
                version("v2", json!({"name": {"type": "string"}, "extra": {"type": "string"}})),
            ],
        },
    })
}

/// kube-rs's `crd_derive_multi`: a write through a version that is not the storage version
/// is converted to the storage version and pruned by its schema before it is stored, so a
/// field only the written version knows is gone when the object is read back, through either
/// version.
#[tokio::test]
async fn writes_are_pruned_by_the_storage_versions_schema() {
    for (storage, written, field, value) in [
        ("v2", "v1", "oldprop", json!(5)),
        ("v1", "v2", "extra", json!("x")),
    ] {
        let env = TestEnv::start().await.expect("starts");
        let (code, crd) = create_crd(&env, &multi_crd(storage)).await;
        assert_eq!(code, 201, "{crd}");
        let path = |v: &str| format!("/apis/clux.dev/{v}/namespaces/default/multis");
        for _ in 0..200 {
            if raw(&env, "GET", &path(written), None).await.0 == 200 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let mut spec = json!({"name": "n"});
        spec[field] = value.clone();
        let (code, applied) = raw_typed(
            &env,
            "PATCH",
            &format!("{}/m?fieldManager=kube-rs", path(written)),
            Some(
                &json!({"apiVersion": format!("clux.dev/{written}"), "kind": "Multi",
                "metadata": {"name": "m"}, "spec": spec}),
            ),
            "application/apply-patch+yaml",
        )
        .await;
        assert_eq!(code, 201, "{applied}");
        for read in ["v1", "v2"] {
            let (code, got) = raw(&env, "GET", &format!("{}/m", path(read)), None).await;
            assert_eq!(code, 200, "{got}");
            assert_eq!(got["apiVersion"], format!("clux.dev/{read}"));
            assert_eq!(
                got["spec"],
                json!({"name": "n"}),
                "storage {storage}, read {read}: {got}"
            );
        }
    }
}
