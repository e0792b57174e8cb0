//! Structural schemas of custom resources, as kube-apiserver enforces them: value validation
//! with apiextensions-apiserver's 422 causes, CEL rules (transition rules, message
//! expressions), defaulting on write and read, pruning with the three `fieldValidation`
//! modes, and every write path (create, update, patches, apply, status, scale).

use std::time::Duration;

use futures::StreamExt;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Client;
use kube_client::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

const BOUND: Duration = Duration::from_secs(30);
const BASE: &str = "/apis/schema.example.com/v1/namespaces/default/widgets";

/// A server with the `widgets.schema.example.com` CRD (versions v1 and v1beta1).
async fn env() -> TestEnv {
    let env = TestEnv::start().await.expect("starts");
    let crd: CustomResourceDefinition =
        serde_saphyr::from_str(include_str!("../fixtures/widgets-crd.yaml")).expect("fixture");
    Api::<CustomResourceDefinition>::all(env.client())
        .create(&PostParams::default(), &crd)
        .await
        .expect("creates the CRD");
    env
}

fn widgets(env: &TestEnv, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("schema.example.com", version, "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    Api::namespaced_with(env.client(), "default", &ar)
}

fn widget(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "schema.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// One answer: status, JSON body and the `Warning` headers.
struct Answer {
    status: StatusCode,
    body: Value,
    warnings: Vec<String>,
}

async fn send(
    client: &Client,
    method: Method,
    uri: &str,
    content_type: &str,
    body: &Value,
) -> Answer {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(serde_json::to_vec(body).expect("json").into())
        .expect("request");
    let resp = tokio::time::timeout(BOUND, client.send(req))
        .await
        .expect("an answer in time")
        .expect("an answer");
    let status = resp.status();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    Answer {
        status,
        body: serde_json::from_slice(&bytes).expect("JSON body"),
        warnings,
    }
}

async fn post(env: &TestEnv, query: &str, obj: &Value) -> Answer {
    send(
        &env.client(),
        Method::POST,
        &format!("{BASE}{query}"),
        "application/json",
        obj,
    )
    .await
}

/// The `(field, message)` of every cause, after checking the 422 Invalid envelope.
fn causes(answer: &Answer, name: &str) -> Vec<(String, String)> {
    assert_eq!(
        answer.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        answer.body
    );
    let body = &answer.body;
    assert_eq!(body["reason"], "Invalid", "{body}");
    assert_eq!(body["code"], 422);
    assert_eq!(body["details"]["name"], name);
    assert_eq!(body["details"]["group"], "schema.example.com");
    assert_eq!(body["details"]["kind"], "Widget");
    let message = body["message"].as_str().expect("message");
    assert!(
        message.starts_with(&format!(
            "Widget.schema.example.com \"{name}\" is invalid: "
        )),
        "{message}"
    );
    body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            let field = c["field"].as_str().expect("field").to_string();
            let msg = c["message"].as_str().expect("message").to_string();
            assert!(
                message.contains(&format!("{field}: {msg}")),
                "{message} lacks {field}: {msg}"
            );
            (field, msg)
        })
        .collect()
}

fn has(causes: &[(String, String)], field: &str, message: &str) -> bool {
    causes.iter().any(|(f, m)| f == field && m == message)
}

#[track_caller]
fn assert_cause(causes: &[(String, String)], field: &str, message: &str) {
    assert!(
        has(causes, field, message),
        "no {field}: {message} in {causes:#?}"
    );
}

#[tokio::test]
async fn every_keyword_is_enforced_with_kube_apiservers_causes() {
    let env = env().await;
    let bad = widget(
        "bad",
        json!({
            "name": "A",
            "replicas": "three",
            "ratio": 0.7,
            "mode": "x",
            "tags": ["a", "a", "b", "c"],
            "labels": {"a": "1", "b": "2", "c": "3"},
            "created": "yesterday",
            "id": "nope",
            "port": true,
            "parts": [{"size": 1}],
            "choice": "c",
            "template": {"spec": {}},
        }),
    );
    let answer = post(&env, "", &bad).await;
    let c = causes(&answer, "bad");
    let expected = [
        (
            "spec.name",
            "Invalid value: \"A\": spec.name in body should be at least 3 chars long",
        ),
        (
            "spec.name",
            "Invalid value: \"A\": spec.name in body should match '^[a-z0-9-]+$'",
        ),
        (
            "spec.replicas",
            "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
        ),
        (
            "spec.ratio",
            "Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5",
        ),
        (
            "spec.mode",
            "Unsupported value: \"x\": supported values: \"fast\", \"slow\"",
        ),
        ("spec.tags", "Too many: 4: must have at most 3 items"),
        (
            "spec.tags",
            "Invalid value: \"\": spec.tags in body shouldn't contain duplicates",
        ),
        ("spec.labels", "Too many: 3: must have at most 2 items"),
        (
            "spec.created",
            "Invalid value: \"yesterday\": spec.created in body must be of type date-time: \"yesterday\"",
        ),
        (
            "spec.id",
            "Invalid value: \"nope\": spec.id in body must be of type uuid: \"nope\"",
        ),
        (
            "spec.port",
            "Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
        ),
        ("spec.parts[0].name", "Required value"),
        (
            "<nil>",
            "Invalid value: \"\": \"spec.choice\" must validate at least one schema (anyOf)",
        ),
        (
            "spec.template.apiVersion",
            "Required value: must not be empty",
        ),
        ("spec.template.kind", "Required value: must not be empty"),
        (
            "<nil>",
            "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ),
    ];
    for (field, message) in expected {
        assert_cause(&c, field, message);
    }
    let reasons: Vec<&str> = answer.body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .filter_map(|c| c["reason"].as_str())
        .collect();
    for reason in [
        "FieldValueInvalid",
        "FieldValueTypeInvalid",
        "FieldValueNotSupported",
        "FieldValueTooMany",
        "FieldValueRequired",
    ] {
        assert!(reasons.contains(&reason), "{reason} in {reasons:?}");
    }

    // Bounds, lengths, the root's required fields and nullability.
    let answer = post(
        &env,
        "",
        &widget("bounds", json!({"name": "much-too-long", "replicas": 11, "ratio": 0, "tags": [], "note": null, "limit": 2.5})),
    )
    .await;
    let c = causes(&answer, "bounds");
    assert_cause(&c, "spec.name", "Too long: may not be more than 10 bytes");
    assert_cause(
        &c,
        "spec.replicas",
        "Invalid value: 11: spec.replicas in body should be less than or equal to 10",
    );
    assert_cause(
        &c,
        "spec.ratio",
        "Invalid value: 0: spec.ratio in body should be greater than 0",
    );
    assert_cause(
        &c,
        "spec.tags",
        "Invalid value: 0: spec.tags in body should have at least 1 items",
    );
    assert_cause(
        &c,
        "spec.limit",
        "Invalid value: \"number\": spec.limit in body must be of type integer: \"number\"",
    );
    assert!(
        !c.iter().any(|(f, _)| f == "spec.note"),
        "note is nullable: {c:?}"
    );
    let answer = post(&env, "", &json!({"apiVersion": "schema.example.com/v1", "kind": "Widget", "metadata": {"name": "empty"}})).await;
    assert_eq!(
        causes(&answer, "empty")[0],
        ("spec".to_string(), "Required value".to_string())
    );

    // The typed client sees the same error.
    let obj: DynamicObject = serde_json::from_value(bad).expect("object");
    let err = widgets(&env, "v1")
        .create(&PostParams::default(), &obj)
        .await
        .expect_err("refused");
    let kube_client::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status
            .message
            .contains("spec.mode: Unsupported value: \"x\""),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn cel_rules_transition_rules_and_message_expressions() {
    let env = env().await;
    let api = widgets(&env, "v1");
    let ok = widget(
        "alpha",
        json!({"name": "alpha", "replicas": 2, "minReplicas": 1, "limit": 4}),
    );
    assert_eq!(post(&env, "", &ok).await.status, StatusCode::CREATED);

    let answer = post(
        &env,
        "",
        &widget(
            "beta",
            json!({"name": "beta", "replicas": 2, "minReplicas": 3}),
        ),
    )
    .await;
    assert_eq!(
        causes(&answer, "beta"),
        [(
            "spec.replicas".to_string(),
            "Invalid value: replicas must be at least minReplicas".to_string()
        )]
    );
    let answer = post(
        &env,
        "",
        &widget("gamma", json!({"name": "gamma", "limit": 3})),
    )
    .await;
    assert_eq!(
        causes(&answer, "gamma"),
        [(
            "spec.limit".to_string(),
            "Invalid value: 3: limit must be even, got 3".to_string()
        )]
    );

    // A transition rule: only checked against the stored value, on update.
    let patch = Patch::Merge(json!({"spec": {"name": "renamed"}}));
    let err = api
        .patch("alpha", &PatchParams::default(), &patch)
        .await
        .expect_err("name is immutable");
    let kube_client::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 422);
    assert!(
        status
            .message
            .ends_with("is invalid: spec: Forbidden: name is immutable"),
        "{}",
        status.message
    );
    let patched = api
        .patch(
            "alpha",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("other fields change");
    assert_eq!(patched.data["spec"]["replicas"], 3);
}

#[tokio::test]
async fn defaults_apply_on_create_and_on_read_per_version() {
    let env = env().await;
    let answer = post(
        &env,
        "",
        &widget("plain", json!({"name": "plain", "note": null})),
    )
    .await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    let spec = &answer.body["spec"];
    assert_eq!(
        (
            spec["replicas"].clone(),
            spec["minReplicas"].clone(),
            spec["mode"].clone()
        ),
        (json!(1), json!(0), json!("slow"))
    );
    assert_eq!(spec["note"], Value::Null, "nullable fields keep their null");

    // Served as v1beta1: that version's defaults, and only its fields.
    let beta = widgets(&env, "v1beta1")
        .get("plain")
        .await
        .expect("gets as v1beta1");
    assert_eq!(
        beta.types.as_ref().map(|t| t.api_version.as_str()),
        Some("schema.example.com/v1beta1")
    );
    assert_eq!(beta.data["spec"]["legacy"], "old");
    assert!(beta.data["spec"].get("mode").is_none(), "{}", beta.data);
    let list = widgets(&env, "v1beta1")
        .list(&Default::default())
        .await
        .expect("lists");
    assert_eq!(list.items[0].data["spec"]["legacy"], "old");
    let mut watch = widgets(&env, "v1beta1")
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .expect("watches as v1beta1")
        .boxed();
    let event = tokio::time::timeout(BOUND, watch.next())
        .await
        .expect("an event in time")
        .expect("an event")
        .expect("ok");
    let WatchEvent::Added(added) = event else {
        panic!("{event:?}")
    };
    assert_eq!(added.data["spec"]["legacy"], "old");
    assert!(added.data["spec"].get("mode").is_none());
    let patched = widgets(&env, "v1beta1")
        .patch(
            "plain",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 2}})),
        )
        .await
        .expect("patches as v1beta1");
    assert_eq!(
        patched.data["spec"]["legacy"], "old",
        "patched as v1beta1 sees it"
    );
    assert_eq!(patched.data["spec"]["replicas"], 2);
    let v1 = widgets(&env, "v1").get("plain").await.expect("gets as v1");
    assert_eq!(
        v1.data["spec"]["mode"], "slow",
        "v1's default again, on read"
    );
}

#[tokio::test]
async fn unknown_fields_are_pruned_per_field_validation() {
    let env = env().await;
    let obj = |name: &str| {
        let mut w = widget(
            name,
            json!({"name": name, "foo": 1, "extra": {"free": {"form": true}}, "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1}, "spec": {"x": 1}}}),
        );
        w["metadata"]["bogus"] = json!("x");
        w
    };
    let answer = post(&env, "", &obj("warned")).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    for field in ["metadata.bogus", "spec.foo", "spec.template.metadata.bogus"] {
        let line = format!("299 - \"unknown field \\\"{field}\\\"\"");
        assert!(
            answer.warnings.contains(&line),
            "{line} in {:?}",
            answer.warnings
        );
    }
    let body = &answer.body;
    assert!(
        body["spec"].get("foo").is_none() && body["metadata"].get("bogus").is_none(),
        "{body}"
    );
    assert_eq!(
        body["spec"]["extra"],
        json!({"free": {"form": true}}),
        "preserved"
    );
    assert_eq!(
        body["spec"]["template"],
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}})
    );
    let stored = widgets(&env, "v1").get("warned").await.expect("gets");
    assert!(stored.data["spec"].get("foo").is_none());

    let warn = post(&env, "?fieldValidation=Warn", &obj("warn")).await;
    assert_eq!((warn.status, warn.warnings.len()), (StatusCode::CREATED, 3));
    let ignored = post(&env, "?fieldValidation=Ignore", &obj("ignored")).await;
    assert_eq!(ignored.status, StatusCode::CREATED);
    assert!(ignored.warnings.is_empty(), "{:?}", ignored.warnings);
    assert!(ignored.body["spec"].get("foo").is_none());

    let strict = post(&env, "?fieldValidation=Strict", &obj("strict")).await;
    assert_eq!(strict.status, StatusCode::BAD_REQUEST, "{}", strict.body);
    let message = strict.body["message"].as_str().expect("message");
    assert!(message.starts_with("strict decoding error: "), "{message}");
    assert!(message.contains("unknown field \"spec.foo\""), "{message}");
    let err = widgets(&env, "v1")
        .get("strict")
        .await
        .expect_err("not stored");
    assert!(matches!(err, kube_client::Error::Api(s) if s.code == 404));
}

#[tokio::test]
async fn status_and_scale_writes_are_validated() {
    let env = env().await;
    let api = widgets(&env, "v1");
    assert_eq!(
        post(&env, "", &widget("www", json!({"name": "www"})))
            .await
            .status,
        StatusCode::CREATED
    );

    let status = send(
        &env.client(),
        Method::PATCH,
        &format!("{BASE}/www/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Gone", "replicas": -1}}),
    )
    .await;
    let c = causes(&status, "www");
    assert_cause(
        &c,
        "status.phase",
        "Unsupported value: \"Gone\": supported values: \"Ready\", \"Pending\"",
    );
    assert_cause(
        &c,
        "status.replicas",
        "Invalid value: -1: status.replicas in body should be greater than or equal to 0",
    );
    let ok = api
        .patch_status(
            "www",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Ready"}})),
        )
        .await
        .expect("a valid status");
    assert_eq!(ok.data["status"]["phase"], "Ready");

    let scale = send(
        &env.client(),
        Method::PATCH,
        &format!("{BASE}/www/scale"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 11}}),
    )
    .await;
    assert_eq!(
        causes(&scale, "www"),
        [(
            "spec.replicas".to_string(),
            "Invalid value: 11: spec.replicas in body should be less than or equal to 10"
                .to_string()
        )]
    );
    let scaled = api
        .patch_scale(
            "www",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await
        .expect("scales within bounds");
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(4));
}

#[tokio::test]
async fn patches_and_apply_are_validated_and_failed_writes_leave_nothing() {
    let env = env().await;
    let api = widgets(&env, "v1");
    assert_eq!(
        post(&env, "", &widget("ppp", json!({"name": "ppp"})))
            .await
            .status,
        StatusCode::CREATED
    );
    let rv = env.resource_version();
    let mut events = api
        .watch(&WatchParams::default().disable_bookmarks(), &rv.to_string())
        .await
        .expect("watches")
        .boxed();

    let merge = send(
        &env.client(),
        Method::PATCH,
        &format!("{BASE}/ppp"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": -1}}),
    )
    .await;
    assert_cause(
        &causes(&merge, "ppp"),
        "spec.replicas",
        "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
    );
    let json_patch = send(
        &env.client(),
        Method::PATCH,
        &format!("{BASE}/ppp"),
        "application/json-patch+json",
        &json!([{"op": "replace", "path": "/spec/mode", "value": "x"}]),
    )
    .await;
    assert_cause(
        &causes(&json_patch, "ppp"),
        "spec.mode",
        "Unsupported value: \"x\": supported values: \"fast\", \"slow\"",
    );
    let apply = send(
        &env.client(),
        Method::PATCH,
        &format!("{BASE}/ppp?fieldManager=test"),
        "application/apply-patch+yaml",
        &widget("ppp", json!({"name": "ppp", "tags": ["a", "a"]})),
    )
    .await;
    assert_cause(
        &causes(&apply, "ppp"),
        "spec.tags",
        "Invalid value: \"\": spec.tags in body shouldn't contain duplicates",
    );
    let apply_new = send(
        &env.client(),
        Method::PATCH,
        &format!("{BASE}/fresh?fieldManager=test"),
        "application/apply-patch+yaml",
        &widget("fresh", json!({"name": "x"})),
    )
    .await;
    assert_cause(
        &causes(&apply_new, "fresh"),
        "spec.name",
        "Invalid value: \"x\": spec.name in body should be at least 3 chars long",
    );
    let mut update = api.get("ppp").await.expect("gets");
    update.data["spec"]["replicas"] = json!("many");
    let err = api
        .replace("ppp", &PostParams::default(), &update)
        .await
        .expect_err("invalid put");
    assert!(matches!(err, kube_client::Error::Api(s) if s.code == 422));
    assert_eq!(
        env.resource_version(),
        rv,
        "no failed write consumed a resourceVersion"
    );

    let good = api
        .patch(
            "ppp",
            &PatchParams::apply("test").force(),
            &Patch::Apply(widget("ppp", json!({"name": "ppp", "tags": ["a"]}))),
        )
        .await
        .expect("a valid apply");
    assert_eq!(good.data["spec"]["tags"], json!(["a"]));
    let first = tokio::time::timeout(BOUND, events.next())
        .await
        .expect("an event in time")
        .expect("an event")
        .expect("ok");
    match first {
        WatchEvent::Modified(obj) => assert_eq!(
            obj.data["spec"]["tags"],
            json!(["a"]),
            "the first event is the valid write"
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn kubectl_apply_of_an_invalid_object_reports_the_error() {
    let env = env().await;
    let dir = std::env::temp_dir().join(format!("rein-crd-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("kubeconfig");
    env.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let manifest =
        serde_json::to_string(&widget("kay", json!({"name": "kay", "mode": "x"}))).expect("json");
    let output = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cache-dir")
            .arg(dir.join("cache"))
            .args(["apply", "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl must be on PATH");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(manifest.as_bytes())
            .expect("writes the manifest");
        child.wait_with_output().expect("kubectl runs")
    })
    .await
    .expect("joins");
    assert!(!output.status.success(), "kubectl apply must fail");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("The Widget \"kay\" is invalid")
            && stderr.contains(
                "spec.mode: Unsupported value: \"x\": supported values: \"fast\", \"slow\""
            ),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_tightened_schema_ratchets_unchanged_fields_on_update() {
    let env = env().await;
    let api = widgets(&env, "v1");
    assert_eq!(
        post(
            &env,
            "",
            &widget("loose", json!({"name": "loose-name", "replicas": 9}))
        )
        .await
        .status,
        StatusCode::CREATED
    );
    // Tighten the schema: replicas at most 5, names at most 5 characters.
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let mut crd = crds
        .get("widgets.schema.example.com")
        .await
        .expect("gets the CRD");
    let mut value = serde_json::to_value(&crd).expect("json");
    let spec = &mut value["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"];
    spec["replicas"]["maximum"] = json!(5);
    spec["name"]["maxLength"] = json!(5);
    crd = serde_json::from_value(value).expect("crd");
    crds.replace("widgets.schema.example.com", &PostParams::default(), &crd)
        .await
        .expect("updates the CRD");

    let ok = api
        .patch(
            "loose",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"mode": "fast"}})),
        )
        .await
        .expect("unchanged invalid fields ratchet");
    assert_eq!(ok.data["spec"]["mode"], "fast");
    let changed = send(
        &env.client(),
        Method::PATCH,
        &format!("{BASE}/loose"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 8}}),
    )
    .await;
    assert_eq!(
        causes(&changed, "loose"),
        [(
            "spec.replicas".to_string(),
            "Invalid value: 8: spec.replicas in body should be less than or equal to 5".to_string()
        )]
    );
    let fresh = post(&env, "", &widget("fresh", json!({"name": "too-long"}))).await;
    assert_eq!(
        causes(&fresh, "fresh"),
        [
            ("spec.name".to_string(), "Too long: may not be more than 5 bytes".to_string()),
            ("<nil>".to_string(), "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".to_string()),
        ]
    );
}

#[tokio::test]
async fn a_crd_with_a_non_structural_schema_or_a_bad_rule_is_refused() {
    let env = TestEnv::start().await.expect("starts");
    let mut crd: Value =
        serde_saphyr::from_str(include_str!("../fixtures/widgets-crd.yaml")).expect("fixture");
    let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    spec["x-kubernetes-validations"][0]["rule"] = json!("self.replicas.isBetween(1, 3)");
    spec["properties"]["tags"]
        .as_object_mut()
        .expect("tags")
        .remove("items");
    let answer = send(
        &env.client(),
        Method::POST,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        &crd,
    )
    .await;
    assert_eq!(
        answer.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        answer.body
    );
    let causes: Vec<(String, String)> = answer.body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or_default().to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let base = "spec.versions[0].schema.openAPIV3Schema.properties[spec]";
    assert!(
        causes.contains(&(
            format!("{base}.properties[tags].items"),
            "Required value: must be specified".to_string()
        )),
        "{causes:#?}"
    );
    let rule = causes
        .iter()
        .find(|(f, _)| f == &format!("{base}.x-kubernetes-validations[0].rule"))
        .expect("the rule's compile error");
    assert!(
        rule.1.starts_with(
            "Invalid value: apiextensions.ValidationRule{Rule:\"self.replicas.isBetween(1, 3)\""
        ) && rule.1.contains("compilation failed: ERROR: <input>:1:")
            && rule
                .1
                .contains("undeclared reference to 'isBetween' (in container '')"),
        "{}",
        rule.1
    );
}
