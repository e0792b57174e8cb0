//! Custom resources served as kube-apiserver serves them (issue 15), over raw HTTP: OpenAPI
//! documents without strategic merge patch, 415 for strategic merge patches, printer columns
//! in Tables, server-side apply with the schema's list and map types, deprecation warnings,
//! and the scale subresource.

use std::time::Duration;

use http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Client;
use kube_client::api::{Api, PostParams};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

const BOUND: Duration = Duration::from_secs(30);
const WIDGETS: &str = "/apis/serving.example.com/v1/namespaces/default/widgets";
const APPLY: &str = "application/apply-patch+yaml";
const MERGE: &str = "application/merge-patch+json";

/// What a request got: status, `Warning` headers, JSON body.
struct Reply {
    status: StatusCode,
    warnings: Vec<String>,
    body: Value,
}

async fn send(
    client: &Client,
    method: Method,
    uri: &str,
    content_type: &str,
    accept: &str,
    body: Option<Value>,
) -> Reply {
    let bytes = body.map(|b| serde_json::to_vec(&b).expect("json"));
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, content_type)
        .header(header::ACCEPT, accept)
        .body(bytes.unwrap_or_default().into())
        .expect("request");
    let resp = tokio::time::timeout(BOUND, client.send(req))
        .await
        .expect("an answer in time")
        .expect("an answer");
    let status = resp.status();
    let warnings = resp
        .headers()
        .get_all(header::WARNING)
        .iter()
        .map(|v| v.to_str().expect("ascii warning").to_string())
        .collect();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status,
        warnings,
        body,
    }
}

async fn get(client: &Client, uri: &str) -> Reply {
    send(
        client,
        Method::GET,
        uri,
        "application/json",
        "application/json",
        None,
    )
    .await
}

async fn patch(client: &Client, uri: &str, content_type: &str, body: Value) -> Reply {
    send(
        client,
        Method::PATCH,
        uri,
        content_type,
        "application/json",
        Some(body),
    )
    .await
}

/// Server-side applies `spec` to widget `name` as `manager`.
async fn apply(client: &Client, name: &str, manager: &str, spec: Value) -> Reply {
    let body = json!({
        "apiVersion": "serving.example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec,
    });
    patch(
        client,
        &format!("{WIDGETS}/{name}?fieldManager={manager}&fieldValidation=Strict"),
        APPLY,
        body,
    )
    .await
}

/// A server with the widget CRD registered.
async fn env() -> TestEnv {
    let env = TestEnv::start().await.expect("starts");
    let crd: CustomResourceDefinition =
        serde_saphyr::from_str(include_str!("../fixtures/widget-crd.yaml")).expect("crd fixture");
    Api::<CustomResourceDefinition>::all(env.client())
        .create(&PostParams::default(), &crd)
        .await
        .expect("creates the crd");
    env
}

/// The fieldsV1 of `manager`'s entry.
fn fields_of(object: &Value, manager: &str) -> Value {
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["manager"] == manager)
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn openapi_documents_advertise_no_strategic_merge_patch_for_custom_resources() {
    let env = env().await;
    let client = env.client();
    let index = get(&client, "/openapi/v3").await;
    let url = index.body["paths"]["apis/serving.example.com/v1"]["serverRelativeURL"]
        .as_str()
        .expect("the group version is in the v3 index")
        .to_string();
    let doc = get(&client, &url).await.body;
    let item = &doc["paths"]["/apis/serving.example.com/v1/namespaces/{namespace}/widgets/{name}"];
    let mut types: Vec<&String> = item["patch"]["requestBody"]["content"]
        .as_object()
        .expect("patch content types")
        .keys()
        .collect();
    types.sort();
    assert_eq!(
        types,
        [
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json"
        ]
    );
    // The subresources' paths: status with the Widget, scale with a Scale.
    let item_path = "/apis/serving.example.com/v1/namespaces/{namespace}/widgets/{name}";
    let status = &doc["paths"][format!("{item_path}/status")];
    assert_eq!(
        status["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/com.example.serving.v1.Widget"
    );
    let scale = &doc["paths"][format!("{item_path}/scale")];
    assert_eq!(
        scale["put"]["requestBody"]["content"]["*/*"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"
    );
    assert!(
        scale["patch"]["requestBody"]["content"]
            .get("application/strategic-merge-patch+json")
            .is_none()
    );
    assert_eq!(
        doc["components"]["schemas"]["io.k8s.api.autoscaling.v1.ScaleSpec"]["properties"]["replicas"]
            ["type"],
        "integer"
    );
    let widget = &doc["components"]["schemas"]["com.example.serving.v1.Widget"];
    assert_eq!(
        widget["properties"]["metadata"]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let spec = &widget["properties"]["spec"]["properties"];
    assert_eq!(spec["tags"]["x-kubernetes-list-type"], "set");
    assert_eq!(spec["ports"]["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(spec["selector"]["x-kubernetes-map-type"], "atomic");
    assert!(!widget.to_string().contains("x-kubernetes-patch-strategy"));
    assert!(
        doc["components"]["schemas"]
            .get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
            .is_some()
    );

    let v2 = get(&client, "/openapi/v2").await.body;
    let consumes = &v2["paths"]["/apis/serving.example.com/v1/namespaces/{namespace}/widgets/{name}"]
        ["patch"]["consumes"];
    assert_eq!(
        consumes,
        &json!([
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml"
        ])
    );
    // Built-ins still take strategic merge patches.
    let pods = &v2["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]["consumes"];
    assert!(
        pods.as_array()
            .expect("consumes")
            .contains(&json!("application/strategic-merge-patch+json"))
    );
}

#[tokio::test]
async fn strategic_merge_patches_of_custom_resources_answer_415() {
    let env = env().await;
    let client = env.client();
    let created = apply(&client, "w", "creator", json!({"replicas": 1})).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let message = "the body of the request was in an unknown format - accepted media types \
                   include: application/json-patch+json, application/merge-patch+json, \
                   application/apply-patch+yaml";
    for uri in [
        format!("{WIDGETS}/w"),
        format!("{WIDGETS}/w/status"),
        format!("{WIDGETS}/w/scale"),
    ] {
        let reply = patch(
            &client,
            &uri,
            "application/strategic-merge-patch+json",
            json!({"spec": {"replicas": 2}}),
        )
        .await;
        assert_eq!(reply.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{uri}");
        assert_eq!(reply.body["kind"], "Status");
        assert_eq!(reply.body["reason"], "UnsupportedMediaType");
        assert_eq!(reply.body["code"], 415);
        assert_eq!(reply.body["message"], message, "{uri}");
    }
    let merged = patch(
        &client,
        &format!("{WIDGETS}/w"),
        MERGE,
        json!({"spec": {"replicas": 2}}),
    )
    .await;
    assert_eq!(merged.status, StatusCode::OK);
    assert_eq!(merged.body["spec"]["replicas"], 2);
}

#[tokio::test]
async fn strict_server_side_apply_passes_managed_fields_and_refuses_undeclared_fields() {
    let env = env().await;
    let client = env.client();
    let first = apply(&client, "w", "kubectl", json!({"size": "small"})).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    // The stored object now has managedFields: the strict walk must not trip over fieldsV1.
    let again = apply(&client, "w", "kubectl", json!({"size": "large"})).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(again.body["spec"]["size"], "large");
    // A field the schema does not declare fails the typed conversion of the configuration:
    // kube-apiserver answers 500, with no reason, before any field validation.
    let unknown = apply(
        &client,
        "w",
        "kubectl",
        json!({"size": "large", "bogus": 1}),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        unknown.body,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "failed to create typed patch object (/w; serving.example.com/v1, \
                        Kind=Widget): .spec.bogus: field not declared in schema",
            "code": 500,
        })
    );
    // So does a map-list element without its key, and duplicate set or map elements.
    let keyless = apply(
        &client,
        "w",
        "kubectl",
        json!({"tags": ["a", "a"], "ports": [{"port": 80}]}),
    )
    .await;
    assert_eq!(keyless.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        keyless.body["message"],
        "failed to create typed patch object (/w; serving.example.com/v1, Kind=Widget): \
         errors:\n  .spec.ports: element 0: associative list with keys has an element that \
         omits key field \"name\" (and doesn't have default value)\n  .spec.tags: duplicate \
         entries for key [=\"a\"]"
    );
}

#[tokio::test]
async fn tables_carry_the_printer_columns() {
    let env = env().await;
    let client = env.client();
    let created = apply(
        &client,
        "w",
        "creator",
        json!({"replicas": 3, "size": "large", "ports": [{"name": "http", "port": 80}]}),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let status = patch(
        &client,
        &format!("{WIDGETS}/w/status"),
        MERGE,
        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    )
    .await;
    assert_eq!(status.status, StatusCode::OK, "{}", status.body);
    let bare = apply(&client, "bare", "creator", json!({})).await;
    assert_eq!(bare.status, StatusCode::CREATED);

    let table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let table = send(&client, Method::GET, WIDGETS, "", table_accept, None)
        .await
        .body;
    assert_eq!(table["kind"], "Table");
    let columns = table["columnDefinitions"].as_array().expect("columns");
    let names: Vec<&str> = columns.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["Name", "Replicas", "Size", "Ready", "Port", "Age"]);
    assert_eq!(columns[0]["format"], "name");
    assert_eq!(columns[1]["type"], "integer");
    assert_eq!(
        columns[1]["description"],
        "Custom resource definition column (in JSONPath format): .spec.replicas"
    );
    assert_eq!(columns[2]["description"], "How big the widget is.");
    assert_eq!(columns[4]["priority"], 1);
    assert_eq!(columns[5]["type"], "date");
    let rows = table["rows"].as_array().expect("rows");
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["cells"][0] == name)
            .and_then(|r| r["cells"].as_array().cloned())
            .expect("a row")
    };
    let w = row("w");
    assert_eq!(
        w[1..5],
        [json!(3), json!("large"), json!("True"), json!(80)]
    );
    assert!(w[5].as_str().is_some_and(|age| age.ends_with('s')), "{w:?}");
    assert_eq!(
        row("bare")[1..5],
        [Value::Null, Value::Null, Value::Null, Value::Null]
    );
    assert_eq!(rows[0]["object"]["kind"], "PartialObjectMetadata");

    // A single object, and the deprecated version without columns: Name and Age only.
    let one = send(
        &client,
        Method::GET,
        "/apis/serving.example.com/v1beta1/namespaces/default/widgets/w",
        "",
        table_accept,
        None,
    )
    .await
    .body;
    let names: Vec<&str> = one["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["Name", "Age"]);
    assert_eq!(one["columnDefinitions"][1]["type"], "date");
    assert_eq!(one["rows"][0]["cells"][0], "w");
}

#[tokio::test]
async fn apply_merges_set_and_map_lists_per_element() {
    let env = env().await;
    let client = env.client();
    let a = apply(
        &client,
        "w",
        "a",
        json!({"tags": ["x"], "ports": [{"name": "http", "port": 80}], "labels": {"a": "1"}}),
    )
    .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    let b = apply(
        &client,
        "w",
        "b",
        json!({"tags": ["y"], "ports": [{"name": "https", "port": 443}], "labels": {"b": "2"}}),
    )
    .await;
    assert_eq!(b.status, StatusCode::OK, "no conflict: {}", b.body);
    let spec = &b.body["spec"];
    assert_eq!(spec["tags"], json!(["x", "y"]));
    assert_eq!(
        spec["ports"],
        json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}])
    );
    assert_eq!(spec["labels"], json!({"a": "1", "b": "2"}));
    assert_eq!(
        fields_of(&b.body, "a"),
        json!({"f:spec": {
            "f:labels": {"f:a": {}},
            "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
            "f:tags": {"v:\"x\"": {}},
        }})
    );
    assert_eq!(
        fields_of(&b.body, "b")["f:spec"]["f:ports"],
        json!({"k:{\"name\":\"https\"}": {".": {}, "f:name": {}, "f:port": {}}})
    );

    // Changing another manager's element field conflicts, naming the element.
    let clash = apply(
        &client,
        "w",
        "b",
        json!({"ports": [{"name": "http", "port": 8080}]}),
    )
    .await;
    assert_eq!(clash.status, StatusCode::CONFLICT);
    assert_eq!(clash.body["reason"], "Conflict");
    let causes = clash.body["details"]["causes"].to_string();
    assert!(
        causes.contains(".spec.ports[name=\\\"http\\\"].port"),
        "{causes}"
    );

    // a stops applying tag x and its port: they go; b's stay.
    let shrunk = apply(&client, "w", "a", json!({"labels": {"a": "1"}})).await;
    assert_eq!(shrunk.status, StatusCode::OK, "{}", shrunk.body);
    assert_eq!(shrunk.body["spec"]["tags"], json!(["y"]));
    assert_eq!(
        shrunk.body["spec"]["ports"],
        json!([{"name": "https", "port": 443}])
    );
}

#[tokio::test]
async fn atomic_lists_and_maps_are_owned_whole() {
    let env = env().await;
    let client = env.client();
    let a = apply(
        &client,
        "w",
        "a",
        json!({"parts": ["p1"], "selector": {"x": "1", "y": "2"}}),
    )
    .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.body);
    assert_eq!(
        fields_of(&a.body, "a"),
        json!({"f:spec": {"f:parts": {}, "f:selector": {}}})
    );
    // The atomic map is replaced whole, not merged key by key.
    let replaced = apply(
        &client,
        "w",
        "a",
        json!({"parts": ["p1"], "selector": {"x": "1"}}),
    )
    .await;
    assert_eq!(replaced.status, StatusCode::OK, "{}", replaced.body);
    assert_eq!(replaced.body["spec"]["selector"], json!({"x": "1"}));
    // Another manager's different atomic list conflicts on the whole list.
    let clash = apply(&client, "w", "b", json!({"parts": ["p2"]})).await;
    assert_eq!(clash.status, StatusCode::CONFLICT);
    assert!(
        clash.body["message"]
            .as_str()
            .is_some_and(|m| m.contains(".spec.parts")),
        "{}",
        clash.body
    );
    let clash = apply(&client, "w", "b", json!({"selector": {"x": "1", "z": "3"}})).await;
    assert_eq!(clash.status, StatusCode::CONFLICT, "{}", clash.body);
}

#[tokio::test]
async fn deprecated_versions_answer_with_a_warning() {
    let env = env().await;
    let client = env.client();
    let warning = "299 - \"serving.example.com/v1beta1 Widget is deprecated; use \
                   serving.example.com/v1 Widget\"";
    let list = get(
        &client,
        "/apis/serving.example.com/v1beta1/namespaces/default/widgets",
    )
    .await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.warnings, [warning]);
    let missing = get(
        &client,
        "/apis/serving.example.com/v1beta1/namespaces/default/widgets/nope",
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.warnings, [warning]);
    let created = send(
        &client,
        Method::POST,
        "/apis/serving.example.com/v1beta1/namespaces/default/widgets",
        "application/json",
        "application/json",
        Some(
            json!({"apiVersion": "serving.example.com/v1beta1", "kind": "Widget",
                    "metadata": {"name": "old"}, "spec": {"size": "s"}}),
        ),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.warnings, [warning]);
    let current = get(&client, WIDGETS).await;
    assert!(current.warnings.is_empty(), "{:?}", current.warnings);
}

#[tokio::test]
async fn the_scale_subresource_reads_and_writes_the_configured_paths() {
    let env = env().await;
    let client = env.client();
    let created = apply(&client, "w", "creator", json!({"replicas": 2})).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let status = patch(
        &client,
        &format!("{WIDGETS}/w/status"),
        MERGE,
        json!({"status": {"replicas": 1, "selector": "app=w"}}),
    )
    .await;
    assert_eq!(status.status, StatusCode::OK);

    let scale = get(&client, &format!("{WIDGETS}/w/scale")).await;
    assert_eq!(scale.status, StatusCode::OK);
    assert_eq!(scale.body["kind"], "Scale");
    assert_eq!(scale.body["apiVersion"], "autoscaling/v1");
    assert_eq!(scale.body["spec"]["replicas"], 2);
    assert_eq!(
        scale.body["status"],
        json!({"replicas": 1, "selector": "app=w"})
    );

    let mut desired = scale.body.clone();
    desired["spec"]["replicas"] = json!(4);
    let put = send(
        &client,
        Method::PUT,
        &format!("{WIDGETS}/w/scale?fieldManager=hpa"),
        "application/json",
        "application/json",
        Some(desired),
    )
    .await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    assert_eq!(put.body["spec"]["replicas"], 4);

    let merged = patch(
        &client,
        &format!("{WIDGETS}/w/scale?fieldManager=hpa"),
        MERGE,
        json!({"spec": {"replicas": 5}}),
    )
    .await;
    assert_eq!(merged.body["spec"]["replicas"], 5);
    let json_patched = patch(
        &client,
        &format!("{WIDGETS}/w/scale?fieldManager=hpa"),
        "application/json-patch+json",
        json!([{"op": "replace", "path": "/spec/replicas", "value": 6}]),
    )
    .await;
    assert_eq!(json_patched.body["spec"]["replicas"], 6);
    let widget = get(&client, &format!("{WIDGETS}/w")).await.body;
    assert_eq!(widget["spec"]["replicas"], 6);
    // hpa's writes through /scale took the replicas from the creator (whose entry, owning
    // nothing else, is gone) and are recorded against the scale subresource.
    let entries = widget["metadata"]["managedFields"]
        .as_array()
        .expect("entries");
    let hpa = entries
        .iter()
        .find(|e| e["manager"] == "hpa")
        .expect("hpa's entry");
    assert_eq!(hpa["operation"], "Update");
    assert_eq!(hpa["subresource"], "scale");
    assert_eq!(hpa["apiVersion"], "serving.example.com/v1");
    assert_eq!(hpa["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    assert!(fields_of(&widget, "creator").is_null(), "{widget}");

    let negative = patch(
        &client,
        &format!("{WIDGETS}/w/scale"),
        MERGE,
        json!({"spec": {"replicas": -1}}),
    )
    .await;
    assert_eq!(negative.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        negative.body["message"],
        "Scale.autoscaling \"w\" is invalid: spec.replicas: Invalid value: -1: must be \
         greater than or equal to 0"
    );
    assert_eq!(negative.body["details"]["kind"], "Scale");

    // Apply on /scale: the Scale shows hpa owning the replicas, so a different value
    // conflicts; forced, the applier takes spec.replicas of the parent, recorded against
    // the scale subresource, and hpa's entry loses it.
    let scale_apply = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                             "metadata": {"name": "w"}, "spec": {"replicas": 7}});
    let clash = patch(
        &client,
        &format!("{WIDGETS}/w/scale?fieldManager=scaler"),
        APPLY,
        scale_apply.clone(),
    )
    .await;
    assert_eq!(clash.status, StatusCode::CONFLICT, "{}", clash.body);
    assert_eq!(
        clash.body["message"],
        // The manager's identity keeps the subresource it wrote through (kube's printManager).
        "Apply failed with 1 conflict: conflict with \"hpa\" with subresource \"scale\" using \
         autoscaling/v1: .spec.replicas"
    );
    let applied = patch(
        &client,
        &format!("{WIDGETS}/w/scale?fieldManager=scaler&force=true"),
        APPLY,
        scale_apply,
    )
    .await;
    assert_eq!(applied.status, StatusCode::OK, "{}", applied.body);
    assert_eq!(applied.body["kind"], "Scale");
    assert_eq!(applied.body["spec"]["replicas"], 7);
    let widget = get(&client, &format!("{WIDGETS}/w")).await.body;
    assert_eq!(widget["spec"]["replicas"], 7);
    let entry = widget["metadata"]["managedFields"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["manager"] == "scaler")
        .cloned()
        .expect("the scaler's entry");
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["subresource"], "scale");
    assert_eq!(entry["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    assert_eq!(entry["apiVersion"], "serving.example.com/v1");
    assert!(
        fields_of(&widget, "hpa").is_null(),
        "hpa owned only the replicas: {widget}"
    );
}

#[tokio::test]
async fn watch_tables_carry_the_printer_columns() {
    let env = env().await;
    let client = env.client();
    let created = apply(&client, "w", "creator", json!({"replicas": 3, "size": "s"})).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let req = Request::builder()
        .method(Method::GET)
        .uri(format!("{WIDGETS}?watch=1&resourceVersion=0"))
        .header(
            header::ACCEPT,
            "application/json;as=Table;v=v1;g=meta.k8s.io",
        )
        .body(Vec::new().into())
        .expect("request");
    let resp = tokio::time::timeout(BOUND, client.send(req))
        .await
        .expect("an answer in time")
        .expect("an answer");
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let mut seen = Vec::new();
    let line = loop {
        if let Some(end) = seen.iter().position(|b| *b == b'\n') {
            break seen[..end].to_vec();
        }
        let frame = tokio::time::timeout(BOUND, body.frame())
            .await
            .expect("an event in time")
            .expect("a frame")
            .expect("a good frame");
        if let Ok(data) = frame.into_data() {
            seen.extend_from_slice(&data);
        }
    };
    let event: Value = serde_json::from_slice(&line).expect("a JSON event");
    assert_eq!(event["type"], "ADDED");
    let table = &event["object"];
    assert_eq!(table["kind"], "Table");
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["Name", "Replicas", "Size", "Ready", "Port", "Age"]);
    assert_eq!(table["rows"][0]["cells"][1], 3);
}

#[tokio::test]
async fn a_scale_without_desired_replicas_answers_as_kube_apiserver() {
    let env = env().await;
    let client = env.client();
    let created = apply(&client, "w", "creator", json!({"size": "s"})).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let scale = get(&client, &format!("{WIDGETS}/w/scale")).await;
    assert_eq!(scale.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(scale.body["reason"], "InternalError");
    assert_eq!(
        scale.body["message"],
        "Internal error occurred: the spec replicas field \".spec.replicas\" does not exist"
    );
    // A patch that leaves the replicas unset cannot be applied; one that sets them can.
    let unset = patch(
        &client,
        &format!("{WIDGETS}/w/scale"),
        MERGE,
        json!({"metadata": {"labels": {"x": "y"}}}),
    )
    .await;
    assert_eq!(unset.status, StatusCode::BAD_REQUEST, "{}", unset.body);
    assert_eq!(
        unset.body["message"],
        "the spec replicas field \".spec.replicas\" cannot be empty"
    );
    let set = patch(
        &client,
        &format!("{WIDGETS}/w/scale"),
        MERGE,
        json!({"spec": {"replicas": 2}}),
    )
    .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    assert_eq!(set.body["spec"]["replicas"], 2);
    assert_eq!(set.body["status"], json!({"replicas": 0}));
}

#[tokio::test]
async fn status_writes_are_recorded_against_the_status_subresource() {
    let env = env().await;
    let client = env.client();
    // The main resource resets status: an apply naming it neither sets nor owns it.
    let created = patch(
        &client,
        &format!("{WIDGETS}/w?fieldManager=creator"),
        APPLY,
        json!({"apiVersion": "serving.example.com/v1", "kind": "Widget",
               "metadata": {"name": "w"}, "spec": {"replicas": 1},
               "status": {"replicas": 9}}),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert!(created.body.get("status").is_none(), "{}", created.body);
    assert_eq!(
        fields_of(&created.body, "creator"),
        json!({"f:spec": {"f:replicas": {}}})
    );
    let updated = patch(
        &client,
        &format!("{WIDGETS}/w/status?fieldManager=ctrl"),
        MERGE,
        json!({"status": {"replicas": 1}}),
    )
    .await;
    assert_eq!(updated.status, StatusCode::OK, "{}", updated.body);
    let applied = patch(
        &client,
        &format!("{WIDGETS}/w/status?fieldManager=ctrl-apply"),
        APPLY,
        json!({"apiVersion": "serving.example.com/v1", "kind": "Widget",
               "metadata": {"name": "w", "labels": {"ignored": "yes"}},
               "spec": {"replicas": 5},
               "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    )
    .await;
    assert_eq!(applied.status, StatusCode::OK, "{}", applied.body);
    // Through status, metadata and spec are reset: unchanged and not owned.
    assert_eq!(applied.body["spec"]["replicas"], 1);
    assert!(applied.body["metadata"].get("labels").is_none());
    let entries: Vec<(Value, Value, Value)> = applied.body["metadata"]["managedFields"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["manager"].clone(),
                e["operation"].clone(),
                e["subresource"].clone(),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            (json!("creator"), json!("Apply"), Value::Null),
            (json!("ctrl"), json!("Update"), json!("status")),
            (json!("ctrl-apply"), json!("Apply"), json!("status")),
        ]
    );
    assert_eq!(
        fields_of(&applied.body, "ctrl-apply"),
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {
            ".": {}, "f:status": {}, "f:type": {}
        }}}})
    );
}

#[tokio::test]
async fn built_in_applies_reset_status_too() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let reply = patch(
        &client,
        "/apis/apps/v1/namespaces/default/deployments/web?fieldManager=deployer",
        APPLY,
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx"}]},
                },
            },
            "status": {"replicas": 3},
        }),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let fields = fields_of(&reply.body, "deployer");
    assert!(fields.get("f:spec").is_some(), "{fields}");
    assert!(fields.get("f:status").is_none(), "{fields}");
}
