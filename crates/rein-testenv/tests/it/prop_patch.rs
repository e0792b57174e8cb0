//! Property tests of patch application in rein-testenv over real HTTP: JSON merge patch obeys
//! RFC 7386 (against a reference written here, and json-patch's `merge`), a JSON patch `test`
//! operation gates the whole patch, strategic merge keeps list items a patch does not mention,
//! server-side apply of the same configuration twice changes nothing, and no patch body of any
//! type gets a 5xx or a dropped connection: an object or a 4xx `Status`.
//!
//! Server-backed properties run 48 to 96 cases by default; set `PROPTEST_CASES` for a longer
//! run.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Client;
use kube_client::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use rein_testenv::TestEnv;
use serde_json::{Map, Value, json};
use tokio::runtime::Runtime;

use crate::prop_config::config;

/// A runtime for the client side, and a server with the `Widget` CRD (a free-form `spec`).
fn start() -> (Runtime, TestEnv) {
    let rt = Runtime::new().expect("runtime");
    let env = rt.block_on(TestEnv::start()).expect("starts");
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.prop.example.com"},
        "spec": {
            "group": "prop.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                    }},
                }},
            }],
        },
    }))
    .expect("crd");
    rt.block_on(async {
        Api::<CustomResourceDefinition>::all(env.client())
            .create(&PostParams::default(), &crd)
            .await
            .expect("creates the crd");
    });
    (rt, env)
}

fn widgets(client: &Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("prop.example.com", "v1", "Widget");
    Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    )
}

fn widget(name: &str, spec: &Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "prop.example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec,
    }))
    .expect("widget")
}

/// A fresh object name per case.
fn next_name(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}-{}", N.fetch_add(1, Ordering::Relaxed))
}

fn fail(what: &str, e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(format!("{what}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// JSON values and the RFC 7386 reference
// ---------------------------------------------------------------------------------------------

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec!["a", "b", "c", "d"]).prop_map(str::to_string),
        1 => any::<String>(),
    ]
}

/// JSON without nulls (what a stored object holds): integers, strings, booleans, nesting.
fn plain_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z]{0,4}".prop_map(Value::String),
        any::<bool>().prop_map(Value::Bool),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn plain_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(key(), plain_json(), 0..4).prop_map(|m| m.into_iter().collect())
}

/// A merge patch: like [`plain_json`] but with nulls, which delete.
fn patch_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        2 => Just(Value::Null),
        1 => any::<i32>().prop_map(|n| json!(n)),
        1 => "[a-z]{0,4}".prop_map(Value::String),
        1 => any::<bool>().prop_map(Value::Bool),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            1 => prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            3 => prop::collection::btree_map(key(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn patch_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(key(), patch_json(), 0..4).prop_map(|m| m.into_iter().collect())
}

/// RFC 7386 section 2, as pseudo-code there.
fn merge_reference(target: &Value, patch: &Value) -> Value {
    let Value::Object(patch) = patch else {
        return patch.clone();
    };
    let mut out = match target {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    for (name, value) in patch {
        if value.is_null() {
            out.remove(name);
        } else {
            let current = out.get(name).cloned().unwrap_or(Value::Null);
            out.insert(name.clone(), merge_reference(&current, value));
        }
    }
    Value::Object(out)
}

proptest! {
    #![proptest_config(config(256))]

    /// The reference and json-patch's `merge` (which the server uses) agree, and the RFC's
    /// laws hold: a patch without nulls is idempotent, and the empty patch changes nothing.
    #[test]
    fn json_patch_merge_agrees_with_rfc_7386(target in plain_json(), patch in patch_json()) {
        let want = merge_reference(&target, &patch);
        let mut got = target.clone();
        json_patch::merge(&mut got, &patch);
        prop_assert_eq!(&got, &want);
        let mut again = got.clone();
        json_patch::merge(&mut again, &patch);
        prop_assert_eq!(&again, &got, "applying a merge patch twice is applying it once");
        let mut unchanged = target.clone();
        json_patch::merge(&mut unchanged, &json!({}));
        if target.is_object() {
            prop_assert_eq!(unchanged, target);
        }
    }
}

/// A merge patch of a stored object's `spec` gives what the reference gives.
#[test]
fn merge_patches_follow_rfc_7386_on_the_server() {
    let (rt, env) = start();
    let api = widgets(&env.client());
    let mut runner = TestRunner::new(config(64));
    runner
        .run(&(plain_object(), patch_object()), |(spec, patch)| {
            rt.block_on(async {
                let name = next_name("merge");
                let spec = Value::Object(spec);
                api.create(&PostParams::default(), &widget(&name, &spec))
                    .await
                    .map_err(|e| fail("creating", e))?;
                let patch = json!({"spec": patch});
                let patched = api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(|e| fail("patching", e))?;
                let want = merge_reference(&json!({"spec": spec}), &patch);
                prop_assert_eq!(patched.data.get("spec"), want.get("spec"));
                Ok(())
            })
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

// ---------------------------------------------------------------------------------------------
// JSON patch `test`
// ---------------------------------------------------------------------------------------------

/// Every JSON pointer into `value` (below `prefix`) with the value found there.
fn pointers(prefix: &str, value: &Value, out: &mut Vec<(String, Value)>) {
    out.push((prefix.to_string(), value.clone()));
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let escaped = k.replace('~', "~0").replace('/', "~1");
                pointers(&format!("{prefix}/{escaped}"), v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                pointers(&format!("{prefix}/{i}"), v, out);
            }
        }
        _ => {}
    }
}

/// A `test` op that holds lets the rest of the patch apply; one that fails gets 422 and
/// leaves the object (and its resourceVersion) as it was.
#[test]
fn json_patch_test_ops_gate_the_patch() {
    let (rt, env) = start();
    let api = widgets(&env.client());
    let mut runner = TestRunner::new(config(64));
    runner
        .run(
            &(
                plain_object(),
                any::<prop::sample::Index>(),
                plain_json(),
                any::<bool>(),
            ),
            |(spec, pick, other, same)| {
                let spec = Value::Object(spec);
                let mut all = Vec::new();
                pointers("/spec", &spec, &mut all);
                let (pointer, found) = all[pick.index(all.len())].clone();
                let expected = if same { found.clone() } else { other };
                let holds = expected == found;
                rt.block_on(async {
                    let name = next_name("test");
                    let created = api
                        .create(&PostParams::default(), &widget(&name, &spec))
                        .await
                        .map_err(|e| fail("creating", e))?;
                    let ops: json_patch::Patch = serde_json::from_value(json!([
                        {"op": "test", "path": pointer, "value": expected},
                        {"op": "add", "path": "/metadata/labels", "value": {"tested": "yes"}},
                    ]))
                    .map_err(|e| fail("building the patch", e))?;
                    let result = api
                        .patch(&name, &PatchParams::default(), &Patch::<()>::Json(ops))
                        .await;
                    let now = api.get(&name).await.map_err(|e| fail("getting", e))?;
                    match result {
                        Ok(patched) => {
                            prop_assert!(holds, "a failing test op let {} through", pointer);
                            let labels = patched.metadata.labels.unwrap_or_default();
                            prop_assert_eq!(labels.get("tested").map(String::as_str), Some("yes"));
                        }
                        Err(kube_client::Error::Api(status)) => {
                            prop_assert!(
                                !holds,
                                "a holding test op at {} failed: {:?}",
                                pointer,
                                status
                            );
                            prop_assert_eq!(status.code, 422);
                            prop_assert_eq!(
                                now.metadata.resource_version,
                                created.metadata.resource_version
                            );
                        }
                        Err(e) => return Err(fail("patching", e)),
                    }
                    Ok(())
                })
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
}

// ---------------------------------------------------------------------------------------------
// Strategic merge of lists with merge keys
// ---------------------------------------------------------------------------------------------

const NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

fn deployment(name: &str, containers: &BTreeMap<String, String>) -> Deployment {
    let containers: Vec<Value> = containers
        .iter()
        .map(|(n, image)| json!({"name": n, "image": image}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": containers},
            },
        },
    }))
    .expect("deployment")
}

/// What a patch does to one container, by name.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Touch {
    SetImage,
    Delete,
}

/// Containers merge by `name`: those the patch does not mention keep their image and stay,
/// those it mentions change or go, new ones are added.
#[test]
fn strategic_merge_keeps_unmentioned_list_items() {
    let (rt, env) = start();
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    let containers = prop::collection::btree_map(
        prop::sample::select(&NAMES[..]).prop_map(str::to_string),
        "img-[0-9]".prop_map(|s| s.to_string()),
        1..5,
    );
    let touches = prop::collection::btree_map(
        prop::sample::select(&NAMES[..]).prop_map(str::to_string),
        prop_oneof![3 => Just(Touch::SetImage), 1 => Just(Touch::Delete)],
        0..4,
    );
    let mut runner = TestRunner::new(config(64));
    runner
        .run(&(containers, touches), |(initial, touches)| {
            let patch_items: Vec<Value> = touches
                .iter()
                .map(|(n, t)| match t {
                    Touch::SetImage => json!({"name": n, "image": "patched"}),
                    Touch::Delete => json!({"name": n, "$patch": "delete"}),
                })
                .collect();
            let mut want = initial.clone();
            for (n, t) in &touches {
                match t {
                    Touch::SetImage => {
                        want.insert(n.clone(), "patched".to_string());
                    }
                    Touch::Delete => {
                        want.remove(n);
                    }
                }
            }
            rt.block_on(async {
                let name = next_name("smp");
                api.create(&PostParams::default(), &deployment(&name, &initial))
                    .await
                    .map_err(|e| fail("creating", e))?;
                let patch = json!({"spec": {"template": {"spec": {"containers": patch_items}}}});
                let result = api
                    .patch(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                    .await;
                if want.is_empty() {
                    // A Deployment must keep one container: refusing is right, 5xx is not.
                    return match result {
                        Err(kube_client::Error::Api(s)) if s.code < 500 => Ok(()),
                        Ok(_) => Ok(()),
                        Err(e) => Err(fail("patching away every container", e)),
                    };
                }
                let patched = result.map_err(|e| fail("patching", e))?;
                let got: BTreeMap<String, String> = patched
                    .spec
                    .and_then(|s| s.template.spec)
                    .map(|s| s.containers)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|c| (c.name, c.image.unwrap_or_default()))
                    .collect();
                prop_assert_eq!(got, want);
                Ok(())
            })
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

// ---------------------------------------------------------------------------------------------
// Server-side apply
// ---------------------------------------------------------------------------------------------

/// Applying the same configuration twice as the same manager is a no-op the second time: the
/// resourceVersion and the object stay as they were.
#[test]
fn server_side_apply_of_the_same_config_twice_is_a_no_op() {
    let (rt, env) = start();
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let api = widgets(&env.client());
    let data = prop::collection::btree_map("[a-z][a-z0-9._-]{0,8}", any::<String>(), 0..4);
    let labels = prop::collection::btree_map("[a-z]{1,5}", "[a-z0-9]{0,5}", 0..3);
    let mut runner = TestRunner::new(config(48));
    runner
        .run(&(data, labels, plain_object()), |(data, labels, spec)| {
            rt.block_on(async {
                let params = PatchParams::apply("prop-test");
                let name = next_name("ssa");
                let cm = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": labels},
                    "data": data,
                });
                let first = cms
                    .patch(&name, &params, &Patch::Apply(&cm))
                    .await
                    .map_err(|e| fail("applying", e))?;
                let second = cms
                    .patch(&name, &params, &Patch::Apply(&cm))
                    .await
                    .map_err(|e| fail("applying again", e))?;
                prop_assert_eq!(
                    &first.metadata.resource_version,
                    &second.metadata.resource_version
                );
                prop_assert_eq!(first, second);

                let w = json!({
                    "apiVersion": "prop.example.com/v1", "kind": "Widget",
                    "metadata": {"name": name}, "spec": spec,
                });
                let first = api
                    .patch(&name, &params, &Patch::Apply(&w))
                    .await
                    .map_err(|e| fail("applying a widget", e))?;
                let second = api
                    .patch(&name, &params, &Patch::Apply(&w))
                    .await
                    .map_err(|e| fail("applying a widget again", e))?;
                prop_assert_eq!(
                    &first.metadata.resource_version,
                    &second.metadata.resource_version
                );
                prop_assert_eq!(first.data.get("spec"), second.data.get("spec"));
                Ok(())
            })
        })
        .unwrap_or_else(|e| panic!("{e}"));
}

// ---------------------------------------------------------------------------------------------
// Arbitrary patch bodies
// ---------------------------------------------------------------------------------------------

const CONTENT_TYPES: [&str; 6] = [
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/apply-patch+json",
    "application/json",
];

const POINTERS: [&str; 18] = [
    "",
    "/",
    "/metadata",
    "/metadata/name",
    "/metadata/labels",
    "/metadata/labels/x",
    "/metadata/resourceVersion",
    "/metadata/managedFields",
    "/spec",
    "/spec/replicas",
    "/spec/template/spec/containers/0",
    "/spec/template/spec/containers/-",
    "/data",
    "/data/a",
    "/kind",
    "/apiVersion",
    "/a~1b/~0",
    "/~2/x",
];

fn json_patch_ops() -> impl Strategy<Value = Value> {
    let op = (
        prop::sample::select(vec![
            "add", "remove", "replace", "move", "copy", "test", "bogus",
        ]),
        prop::sample::select(&POINTERS[..]),
        prop::sample::select(&POINTERS[..]),
        patch_json(),
        prop::bool::weighted(0.85),
    )
        .prop_map(|(op, path, from, value, with_value)| {
            let mut o = json!({"op": op, "path": path, "from": from});
            if with_value {
                o["value"] = value;
            }
            o
        });
    prop::collection::vec(op, 0..4).prop_map(Value::Array)
}

/// Strategic merge patches with directives in odd places.
fn smp_body() -> impl Strategy<Value = Value> {
    let directive = prop_oneof![
        Just(json!("merge")),
        Just(json!("replace")),
        Just(json!("delete")),
        Just(json!("nonsense")),
        Just(json!(7)),
    ];
    (directive, patch_json(), patch_json(), any::<bool>()).prop_map(|(d, a, b, list)| {
        let containers = if list {
            json!([{"name": "a", "$patch": d}, a, {"name": "z", "image": b}])
        } else {
            json!({"$patch": d, "x": a})
        };
        json!({
            "$retainKeys": b,
            "metadata": {"labels": a, "$patch": d},
            "spec": {"template": {"spec": {
                "containers": containers,
                "$setElementOrder/containers": [{"name": "z"}],
            }}},
            "data": {"$deleteFromPrimitiveList/x": a},
            "$deleteFromPrimitiveList/finalizers": b,
        })
    })
}

/// A JSON body.
fn to_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("serialises")
}

/// Apply configurations: odd YAML, and objects right or wrong in kind, name and shape.
fn apply_body() -> impl Strategy<Value = Vec<u8>> {
    let obj = (
        prop::sample::select(vec!["ConfigMap", "Deployment", "Widget", "Pod", ""]),
        prop::sample::select(vec!["v1", "apps/v1", "prop.example.com/v1", "x/y/z"]),
        prop::sample::select(vec!["target", "target", "other", ""]),
        patch_json(),
        any::<bool>(),
    )
        .prop_map(|(kind, api_version, name, spec, data)| {
            let mut object = json!({
                "apiVersion": api_version, "kind": kind, "metadata": {"name": name},
            });
            if data {
                object["data"] = json!({"a": "1", "b": spec.to_string()});
            } else {
                object["spec"] = spec;
            }
            to_bytes(&object)
        });
    prop_oneof![
        obj,
        "[a-z:{}\\[\\]\"'&*!|>#% \n-]{0,60}".prop_map(String::into_bytes),
        Just(b"a: &x [*x, *x]\nb: *x\n".to_vec()),
        Just(b"--- {}\n--- {}\n".to_vec()),
        Just(b"!!binary aGVsbG8=".to_vec()),
        Just(
            b"kind: ConfigMap\napiVersion: v1\nmetadata: {name: target}\ndata: {a: !!int 1}\n"
                .to_vec()
        ),
    ]
}

/// A content type and a body mostly of the kind it names (so patches get applied, not only
/// refused at decoding), sometimes of another kind or raw bytes.
fn typed_body() -> impl Strategy<Value = (&'static str, Vec<u8>)> {
    prop::sample::select(&CONTENT_TYPES[..]).prop_flat_map(|content_type| {
        let fitting = match content_type {
            "application/merge-patch+json" => patch_object()
                .prop_map(|m| to_bytes(&Value::Object(m)))
                .boxed(),
            "application/json-patch+json" => json_patch_ops().prop_map(|v| to_bytes(&v)).boxed(),
            "application/strategic-merge-patch+json" => prop_oneof![
                smp_body().prop_map(|v| to_bytes(&v)),
                patch_object().prop_map(|m| to_bytes(&Value::Object(m))),
            ]
            .boxed(),
            _ => apply_body().boxed(),
        };
        let other = prop_oneof![
            any::<Vec<u8>>(),
            patch_json().prop_map(|v| to_bytes(&v)),
            json_patch_ops().prop_map(|v| to_bytes(&v)),
            smp_body().prop_map(|v| to_bytes(&v)),
            apply_body(),
        ];
        (Just(content_type), prop_oneof![3 => fitting, 1 => other])
    })
}

/// Sends one raw PATCH and reads the whole answer.
async fn raw_patch(
    client: &Client,
    uri: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<(StatusCode, Bytes), TestCaseError> {
    let req = Request::builder()
        .method(Method::PATCH)
        .uri(uri)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(body.into())
        .map_err(|e| fail("building the request", e))?;
    let resp = tokio::time::timeout(Duration::from_secs(30), client.send(req))
        .await
        .map_err(|_| TestCaseError::fail("no answer within 30s"))?
        .map_err(|e| fail("no answer (connection lost?)", e))?;
    let status = resp.status();
    let bytes = tokio::time::timeout(Duration::from_secs(30), resp.into_body().collect_bytes())
        .await
        .map_err(|_| TestCaseError::fail("the body never ended"))?
        .map_err(|e| fail("reading the body", e))?;
    Ok((status, bytes))
}

/// Any body, as any patch type, on a ConfigMap, a Deployment (lists with merge keys), a custom
/// resource and a missing object: a patched object (200/201) or a 4xx Status, never a 5xx
/// (except kube-apiserver's 500 for an apply configuration outside a custom resource's schema).
#[test]
fn arbitrary_patches_give_an_object_or_a_4xx_status() {
    let (rt, env) = start();
    let client = env.client();
    rt.block_on(async {
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": "target"}, "data": {"a": "1"}}))
                .expect("cm");
        cms.create(&PostParams::default(), &cm)
            .await
            .expect("creates");
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
        let containers = BTreeMap::from([("a".to_string(), "img".to_string())]);
        deployments
            .create(&PostParams::default(), &deployment("target", &containers))
            .await
            .expect("creates");
        widgets(&client)
            .create(
                &PostParams::default(),
                &widget("target", &json!({"a": [1, 2]})),
            )
            .await
            .expect("creates");
    });
    let uris = prop::sample::select(vec![
        "/api/v1/namespaces/default/configmaps/target",
        "/apis/apps/v1/namespaces/default/deployments/target",
        "/apis/apps/v1/namespaces/default/deployments/target/scale",
        "/apis/apps/v1/namespaces/default/deployments/target/status",
        "/apis/prop.example.com/v1/namespaces/default/widgets/target",
        "/api/v1/namespaces/default/configmaps/missing",
    ]);
    let queries = prop::sample::select(vec![
        "",
        "?fieldManager=prop",
        "?fieldManager=other&force=true",
        "?fieldManager=prop&dryRun=All",
        "?fieldValidation=Strict&fieldManager=prop",
    ]);
    let mut runner = TestRunner::new(config(160));
    runner
        .run(
            &(uris, queries, typed_body()),
            |(uri, query, (content_type, body))| {
                let uri = format!("{uri}{query}");
                rt.block_on(async {
                    let (status, bytes) = raw_patch(&client, &uri, content_type, body).await?;
                    let answer: Value = serde_json::from_slice(&bytes).map_err(|e| {
                        fail(&format!("{uri} {content_type}: {status}, body not JSON"), e)
                    })?;
                    // The one 5xx kube-apiserver gives a bad body too: an apply configuration
                    // that does not convert to a custom resource's structural schema.
                    let typed_patch_refusal = status == StatusCode::INTERNAL_SERVER_ERROR
                        && answer["message"]
                            .as_str()
                            .is_some_and(|m| m.starts_with("failed to create typed patch object"));
                    prop_assert!(
                        status.is_success() || status.is_client_error() || typed_patch_refusal,
                        "{} {}: {} {}",
                        uri,
                        content_type,
                        status,
                        answer
                    );
                    prop_assert!(answer.is_object(), "{}", answer);
                    if status.is_client_error() || typed_patch_refusal {
                        prop_assert_eq!(answer["kind"].as_str(), Some("Status"), "{}", answer);
                        prop_assert_eq!(answer["code"].as_u64(), Some(u64::from(status.as_u16())));
                    } else {
                        prop_assert!(answer["kind"].is_string(), "{}", answer);
                        prop_assert!(answer["metadata"]["name"].is_string(), "{}", answer);
                    }
                    Ok(())
                })
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
}
