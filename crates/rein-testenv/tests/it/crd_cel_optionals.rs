//! CEL optionals in CRD validation rules, over HTTP: cel-go's optional types library
//! (`optional.of`, `.orValue()`, `optMap`, `a.?b`, `m[?k]`, `[?x]`) compiles in a CRD, and a
//! rule with `optionalOldSelf: true` runs on create with `oldSelf` = `optional.none()` and on
//! update with `optional.of(old)` (kube-rs's `crd_derive_schema` example).

use serde_json::{Value, json};

use rein_testenv::TestEnv;

use crate::crd_support::{CRDS, assert_cause, causes, create_crd, raw, raw_typed};

const THINGS: &str = "/apis/optionals.example.com/v1/namespaces/default/things";

/// `things.optionals.example.com` with the given `spec` schema.
fn crd(spec: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.optionals.example.com"},
        "spec": {
            "group": "optionals.example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": spec},
                }},
            }],
        },
    })
}

fn thing(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "optionals.example.com/v1",
        "kind": "Thing",
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// PUTs `spec` over the stored object `name`, with its current resourceVersion.
async fn put_spec(env: &TestEnv, name: &str, spec: Value) -> (u16, Value) {
    let path = format!("{THINGS}/{name}");
    let (code, current) = raw(env, "GET", &path, None).await;
    assert_eq!(code, 200, "{current}");
    let mut next = current.clone();
    next["spec"] = spec;
    raw(env, "PUT", &path, Some(&next)).await
}

/// Asserts a 422 Invalid answer for the Thing `name` with exactly these (field, message)s.
fn assert_invalid(status: &Value, name: &str, want: &[(&str, &str)]) {
    assert_eq!(status["code"], 422, "{status}");
    assert_eq!(status["reason"], "Invalid", "{status}");
    assert_eq!(status["details"]["name"], name, "{status}");
    assert_eq!(status["details"]["kind"], "Thing", "{status}");
    let got: Vec<(String, String)> = causes(status)
        .into_iter()
        .map(|(_, field, message)| (field, message))
        .collect();
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(f, m)| (f.to_string(), m.to_string()))
        .collect();
    assert_eq!(got, want, "{status}");
}

#[tokio::test]
async fn crd_with_an_opt_map_rule_on_an_optional_old_self_ratchets() {
    let env = TestEnv::start().await.expect("starts");
    let (code, created) = create_crd(
        &env,
        &crd(json!({"type": "object", "properties": {
            "name": {"type": "string", "x-kubernetes-validations": [{
                "rule": "oldSelf.optMap(o, o == self).orValue(true)",
                "optionalOldSelf": true,
                "message": "may not change once set",
            }]},
            "replicas": {"type": "integer"},
        }})),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let rule = &created["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["name"]["x-kubernetes-validations"][0];
    assert_eq!(rule["optionalOldSelf"], true, "{created}");

    // Create: no old object, oldSelf is optional.none(), so orValue(true).
    let (code, body) = raw(
        &env,
        "POST",
        THINGS,
        Some(&thing("one", json!({"name": "a", "replicas": 1}))),
    )
    .await;
    assert_eq!(code, 201, "{body}");

    // Update to a different value: optional.of("a").optMap(o, o == "b") is false.
    let (code, body) = put_spec(&env, "one", json!({"name": "b", "replicas": 1})).await;
    assert_eq!(code, 422, "{body}");
    assert_invalid(
        &body,
        "one",
        &[("spec.name", "Invalid value: \"b\": may not change once set")],
    );
    assert_eq!(
        body["message"],
        "Thing.optionals.example.com \"one\" is invalid: spec.name: Invalid value: \"b\": may not \
         change once set"
    );

    // Update to the same value (another field changed): allowed.
    let (code, body) = put_spec(&env, "one", json!({"name": "a", "replicas": 2})).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["spec"], json!({"name": "a", "replicas": 2}));

    // A merge patch changing it is refused the same way; one leaving it alone is allowed.
    let merge = "application/merge-patch+json";
    let path = format!("{THINGS}/one");
    let (code, body) = raw_typed(
        &env,
        "PATCH",
        &path,
        Some(&json!({"spec": {"name": "c"}})),
        merge,
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_invalid(
        &body,
        "one",
        &[("spec.name", "Invalid value: \"c\": may not change once set")],
    );
    let (code, body) = raw_typed(
        &env,
        "PATCH",
        &path,
        Some(&json!({"spec": {"replicas": 3}})),
        merge,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["spec"]["name"], "a");

    // An object created without the field may set it later: its old value is none.
    let (code, body) = raw(
        &env,
        "POST",
        THINGS,
        Some(&thing("two", json!({"replicas": 1}))),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = put_spec(&env, "two", json!({"name": "late", "replicas": 1})).await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = put_spec(&env, "two", json!({"name": "later", "replicas": 1})).await;
    assert_eq!(code, 422, "{body}");
    assert_invalid(
        &body,
        "two",
        &[(
            "spec.name",
            "Invalid value: \"later\": may not change once set",
        )],
    );
}

#[tokio::test]
async fn crd_rules_use_the_optional_library_and_syntax() {
    let env = TestEnv::start().await.expect("starts");
    let rules = json!([
        {"rule": "self.?limits.?cpu.orValue(0) <= 8", "message": "at most 8 cpus"},
        {"rule": "self.?labels[?'tier'].orValue('web') in ['web', 'db']", "message": "bad tier"},
        {"rule": "self.?ports[?0].optMap(p, p > 1024).orValue(true)", "message": "first port must be above 1024"},
        {"rule": "[?self.?limits.?cpu, ?self.?limits.?memory].size() <= 1", "message": "cpu or memory"},
        {"rule": "{?'n': optional.ofNonZeroValue(self.?name.orValue(''))}.size() == 1 || !has(self.name)", "message": "name may not be empty"},
        {"rule": "optional.none().or(self.?name).optFlatMap(n, optional.of(n.size())).orValue(1) < 10", "message": "name too long"},
        {"rule": "!oldSelf.hasValue() || oldSelf.value().?limits.?cpu.orValue(0) <= self.?limits.?cpu.orValue(0)",
         "optionalOldSelf": true, "message": "cpu may not shrink"},
    ]);
    let (code, created) = create_crd(
        &env,
        &crd(
            json!({"type": "object", "x-kubernetes-validations": rules, "properties": {
                "name": {"type": "string"},
                "limits": {"type": "object", "additionalProperties": {"type": "integer"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "ports": {"type": "array", "items": {"type": "integer"}},
            }}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{created}");

    for (name, spec) in [
        ("empty", json!({})),
        (
            "full",
            json!({"name": "x", "limits": {"cpu": 2}, "labels": {"tier": "db"}, "ports": [8080]}),
        ),
    ] {
        let (code, body) = raw(&env, "POST", THINGS, Some(&thing(name, spec))).await;
        assert_eq!(code, 201, "{name}: {body}");
    }
    let (code, body) = raw(
        &env,
        "POST",
        THINGS,
        Some(&thing(
            "bad",
            json!({"name": "", "limits": {"cpu": 9, "memory": 1}, "labels": {"tier": "x"}, "ports": [80]}),
        )),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_invalid(
        &body,
        "bad",
        &[
            ("spec", "Invalid value: at most 8 cpus"),
            ("spec", "Invalid value: bad tier"),
            ("spec", "Invalid value: first port must be above 1024"),
            ("spec", "Invalid value: cpu or memory"),
            ("spec", "Invalid value: name may not be empty"),
        ],
    );
    let (code, body) = put_spec(&env, "full", json!({"name": "x", "limits": {"cpu": 1}})).await;
    assert_eq!(code, 422, "{body}");
    assert_invalid(
        &body,
        "full",
        &[("spec", "Invalid value: cpu may not shrink")],
    );
}

#[tokio::test]
async fn crd_optional_old_self_without_old_self_or_unknown_optional_functions_are_refused() {
    let env = TestEnv::start().await.expect("starts");
    let name = "things.optionals.example.com";
    // One version: kube reports the schema at its internal version's `spec.validation`.
    let base = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]";
    let (code, status) = create_crd(
        &env,
        &crd(json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "optional.of(self).hasValue()", "optionalOldSelf": true},
        ]})),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_cause(
        &status,
        name,
        &format!("{base}.optionalOldSelf"),
        "FieldValueInvalid",
        "Invalid value: true: may not be set if oldSelf is not used in rule",
    );

    let (code, status) = create_crd(
        &env,
        &crd(json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "optional.some(self).hasValue()"},
        ]})),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    let (_, field, message) = causes(&status).into_iter().next().expect("a cause");
    assert_eq!(field, format!("{base}.rule"));
    assert!(
        message.contains("compilation failed: ERROR: <input>:1:")
            && message.contains("undeclared reference to 'some' (in container '')"),
        "{message}"
    );
    let (code, _) = raw(&env, "GET", &format!("{CRDS}/{name}"), None).await;
    assert_eq!(code, 404, "an invalid CRD is not stored");
}
