//! Writes are decoded and validated as kube-apiserver does it: type errors answer 400 with Go's
//! decoder message, unknown fields are dropped with a warning, metadata and the common kinds
//! are validated (422 with kube's causes and field paths), and bodies and data have size
//! limits. A refused write leaves nothing behind.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube_client::Client;
use kube_client::api::{Api, ListParams};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

use super::http_support;

/// An answer: status code, `Warning` headers, body.
struct Answer {
    code: u16,
    warnings: Vec<String>,
    body: Value,
}

async fn send(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Answer {
    let headers = [("content-type", content_type)];
    let answer = http_support::send(client, method, path, &headers, body).await;
    Answer {
        body: answer.json(),
        code: answer.code,
        warnings: answer.warnings,
    }
}

async fn post(client: &Client, path: &str, body: Value) -> Answer {
    send(
        client,
        "POST",
        path,
        "application/json",
        body.to_string().into_bytes(),
    )
    .await
}

async fn put(client: &Client, path: &str, body: Value) -> Answer {
    send(
        client,
        "PUT",
        path,
        "application/json",
        body.to_string().into_bytes(),
    )
    .await
}

const PODS: &str = "/api/v1/namespaces/default/pods";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const SERVICES: &str = "/api/v1/namespaces/default/services";
const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";
const SECRETS: &str = "/api/v1/namespaces/default/secrets";

/// Asserts a 422 Invalid answer: its message and its (field, reason, message) causes.
fn assert_invalid(answer: &Answer, message: &str, causes: &[(&str, &str, &str)]) {
    assert_eq!(answer.code, 422, "{}", answer.body);
    assert_eq!(answer.body["reason"], "Invalid", "{}", answer.body);
    assert_eq!(answer.body["message"], message);
    let got: Vec<(String, String, String)> = answer.body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            let s = |f: &str| c[f].as_str().unwrap_or_default().to_string();
            (s("field"), s("reason"), s("message"))
        })
        .collect();
    let want: Vec<(String, String, String)> = causes
        .iter()
        .map(|(f, r, m)| (f.to_string(), r.to_string(), m.to_string()))
        .collect();
    assert_eq!(got, want);
}

fn assert_bad_request(answer: &Answer, message: &str) {
    assert_eq!(answer.code, 400, "{}", answer.body);
    assert_eq!(answer.body["reason"], "BadRequest");
    assert_eq!(answer.body["message"], message);
}

fn pod(name: &str, containers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": containers}})
}

fn deployment(name: &str, selector: Value, labels: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
           "spec": {"selector": selector, "template": {"metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

#[tokio::test]
async fn bodies_of_the_wrong_type_answer_the_decoders_400_and_store_nothing() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let before = env.resource_version();

    let mut replicas = deployment(
        "d",
        json!({"matchLabels": {"app": "d"}}),
        json!({"app": "d"}),
    );
    replicas["spec"]["replicas"] = json!("three");
    let mut labels = pod("p", json!([{"name": "c", "image": "nginx"}]));
    labels["metadata"]["labels"] = json!("notamap");
    let port = pod(
        "p",
        json!([{"name": "c", "image": "nginx", "ports": [{"containerPort": 1.5}]}]),
    );
    for (path, body, message) in [
        (
            DEPLOYMENTS,
            replicas,
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot \
             unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            PODS,
            labels,
            "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal string \
             into Go struct field ObjectMeta.metadata.labels of type map[string]string",
        ),
        (
            PODS,
            port,
            "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal number \
             1.5 into Go struct field ContainerPort.spec.containers.ports.containerPort of type \
             int32",
        ),
        (
            CONFIG_MAPS,
            json!({"metadata": {"name": "c"}, "data": {"n": 1}}),
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot \
             unmarshal number into Go struct field ConfigMap.data of type string",
        ),
        (
            SECRETS,
            json!({"metadata": {"name": "s"}, "data": {"k": "not base64!"}}),
            "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at \
             input byte 3",
        ),
        (
            SERVICES,
            json!({"metadata": {"name": "svc"}, "spec": "ClusterIP"}),
            "Service in version \"v1\" cannot be handled as a Service: json: cannot unmarshal \
             string into Go struct field Service.spec of type v1.ServiceSpec",
        ),
    ] {
        assert_bad_request(&post(&client, path, body).await, message);
    }

    assert_eq!(env.resource_version(), before, "nothing was written");
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    assert!(
        pods.list(&ListParams::default())
            .await
            .expect("lists")
            .items
            .is_empty()
    );
}

/// Times are stored as the Go types marshal them back: `metav1.Time` in UTC to the second,
/// `MicroTime` to the microsecond, whatever offset the client sent (a `MicroTime` must carry
/// six fractional digits: `sweep::micro_time_needs_six_fractional_digits`).
#[tokio::test]
async fn times_are_stored_in_the_form_go_writes_them() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let lease = post(
        &client,
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "l"},
               "spec": {"holderIdentity": "a", "renewTime": "2024-05-01T10:11:12.500000+02:00"}}),
    )
    .await;
    assert_eq!(lease.code, 201, "{}", lease.body);
    assert_eq!(
        lease.body["spec"]["renewTime"],
        "2024-05-01T08:11:12.500000Z"
    );
    let event = post(
        &client,
        "/api/v1/namespaces/default/events",
        json!({"apiVersion": "v1", "kind": "Event",
               "metadata": {"name": "e"},
               "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
               "reason": "R", "message": "m", "type": "Normal",
               "firstTimestamp": "2024-05-01T10:11:12.987-01:00"}),
    )
    .await;
    assert_eq!(event.code, 201, "{}", event.body);
    assert_eq!(event.body["firstTimestamp"], "2024-05-01T11:11:12Z");
}

#[tokio::test]
async fn a_patch_that_breaks_the_type_is_an_invalid_patch() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let cm = json!({"metadata": {"name": "c"}, "data": {"k": "v"}});
    assert_eq!(post(&client, CONFIG_MAPS, cm).await.code, 201);
    let answer = send(
        &client,
        "PATCH",
        &format!("{CONFIG_MAPS}/c"),
        "application/merge-patch+json",
        br#"{"data": {"k": 7}}"#.to_vec(),
    )
    .await;
    assert_eq!(answer.code, 422, "{}", answer.body);
    let cause = &answer.body["details"]["causes"][0];
    assert_eq!(cause["field"], "patch");
    assert!(
        cause["message"].as_str().unwrap_or_default().ends_with(
            "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
        ),
        "{cause}"
    );
}

#[tokio::test]
async fn unknown_fields_are_dropped_with_a_warning_by_default() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let body = json!({"metadata": {"name": "c", "colour": "red"}, "data": {"k": "v"}, "extra": 1});
    let answer = post(&client, CONFIG_MAPS, body.clone()).await;
    assert_eq!(answer.code, 201, "{}", answer.body);
    assert_eq!(
        answer.warnings,
        [
            "299 - \"unknown field \\\"extra\\\"\"",
            "299 - \"unknown field \\\"metadata.colour\\\"\""
        ]
    );
    assert!(answer.body.get("extra").is_none());
    assert!(answer.body["metadata"].get("colour").is_none());
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let stored = cms.get("c").await.expect("gets");
    assert_eq!(stored.data.expect("data")["k"], "v");

    let mut strict = body.clone();
    strict["metadata"]["name"] = json!("strict");
    assert_bad_request(
        &post(
            &client,
            &format!("{CONFIG_MAPS}?fieldValidation=Strict"),
            strict,
        )
        .await,
        "strict decoding error: unknown field \"extra\", unknown field \"metadata.colour\"",
    );
    let mut ignore = body;
    ignore["metadata"]["name"] = json!("ignore");
    let answer = post(
        &client,
        &format!("{CONFIG_MAPS}?fieldValidation=Ignore"),
        ignore,
    )
    .await;
    assert_eq!(answer.code, 201);
    assert!(answer.warnings.is_empty());
    assert!(answer.body.get("extra").is_none());
}

#[tokio::test]
async fn metadata_is_validated_for_every_kind() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let long = "x".repeat(64);
    let cm = json!({"metadata": {"name": "c", "labels": {"ok": long, "bad key": "v"}}});
    assert_invalid(
        &post(&client, CONFIG_MAPS, cm).await,
        &format!(
            "ConfigMap \"c\" is invalid: [metadata.labels: Invalid value: \"bad key\": name part \
             must consist of alphanumeric characters, '-', '_' or '.', and must start and end \
             with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex \
             used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), \
             metadata.labels: Invalid value: \"{long}\": must be no more than 63 characters]"
        ),
        &[
            (
                "metadata.labels",
                "FieldValueInvalid",
                "Invalid value: \"bad key\": name part must consist of alphanumeric characters, \
                 '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
                 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
                 '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ),
            (
                "metadata.labels",
                "FieldValueInvalid",
                &format!("Invalid value: \"{long}\": must be no more than 63 characters"),
            ),
        ],
    );
    let big = "a".repeat(256 * 1024);
    let cm = json!({"metadata": {"name": "c", "annotations": {"big": big}}});
    assert_invalid(
        &post(&client, CONFIG_MAPS, cm).await,
        "ConfigMap \"c\" is invalid: metadata.annotations: Too long: may not be more than 262144 \
         bytes",
        &[(
            "metadata.annotations",
            "FieldValueTooLong",
            "Too long: may not be more than 262144 bytes",
        )],
    );
    let owner = |name: &str, uid: &str| {
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": uid,
               "controller": true})
    };
    let cm = json!({"metadata": {"name": "c",
        "ownerReferences": [owner("a", ""), owner("b", "u2")]}});
    let answer = post(&client, CONFIG_MAPS, cm).await;
    assert_eq!(answer.code, 422, "{}", answer.body);
    let causes = &answer.body["details"]["causes"];
    assert_eq!(causes[0]["field"], "metadata.ownerReferences[0].uid");
    assert_eq!(causes[0]["message"], "Required value: must not be empty");
    assert_eq!(causes[1]["field"], "metadata.ownerReferences");
    assert!(
        causes[1]["message"].as_str().unwrap_or_default().ends_with(
            "Only one reference can have Controller set to true. Found \"true\" in references \
             for ReplicaSet/a and ReplicaSet/b"
        ),
        "{}",
        causes[1]
    );
    let cm = json!({"metadata": {"name": "c", "finalizers": ["cleanup"]}});
    assert_invalid(
        &post(&client, CONFIG_MAPS, cm).await,
        "ConfigMap \"c\" is invalid: metadata.finalizers[0]: Invalid value: \"cleanup\": name is \
         neither a standard finalizer name nor is it fully qualified",
        &[(
            "metadata.finalizers[0]",
            "FieldValueInvalid",
            "Invalid value: \"cleanup\": name is neither a standard finalizer name nor is it \
             fully qualified",
        )],
    );
    let cm = json!({"metadata": {"name": "c", "finalizers": ["example.com/cleanup"]}});
    assert_eq!(post(&client, CONFIG_MAPS, cm).await.code, 201);
}

#[tokio::test]
async fn pods_need_containers_with_names_and_images_and_keep_their_spec() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    assert_invalid(
        &post(&client, PODS, pod("p", json!([]))).await,
        "Pod \"p\" is invalid: spec.containers: Required value",
        &[("spec.containers", "FieldValueRequired", "Required value")],
    );
    let containers = json!([{"name": "a", "image": "nginx"}, {"name": "a"}]);
    assert_invalid(
        &post(&client, PODS, pod("p", containers)).await,
        "Pod \"p\" is invalid: [spec.containers[1].name: Duplicate value: \"a\", \
         spec.containers[1].image: Required value]",
        &[
            (
                "spec.containers[1].name",
                "FieldValueDuplicate",
                "Duplicate value: \"a\"",
            ),
            (
                "spec.containers[1].image",
                "FieldValueRequired",
                "Required value",
            ),
        ],
    );
    let created = post(
        &client,
        PODS,
        pod("p", json!([{"name": "a", "image": "nginx:1"}])),
    )
    .await;
    assert_eq!(created.code, 201, "{}", created.body);
    let mut changed = created.body.clone();
    changed["spec"]["containers"][0]["image"] = json!("nginx:2");
    let answer = put(&client, &format!("{PODS}/p"), changed.clone()).await;
    assert_eq!(answer.code, 200, "an image may change: {}", answer.body);
    changed["metadata"]["resourceVersion"] = answer.body["metadata"]["resourceVersion"].clone();
    changed["spec"]["hostname"] = json!("other");
    let answer = put(&client, &format!("{PODS}/p"), changed).await;
    assert_eq!(answer.code, 422, "{}", answer.body);
    assert_eq!(answer.body["details"]["causes"][0]["field"], "spec");
    assert!(
        answer.body["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`"),
        "{}",
        answer.body
    );
}

#[tokio::test]
async fn workloads_need_a_matching_selector_that_never_changes() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let mut d = deployment("d", json!(null), json!({"app": "d"}));
    d["spec"].as_object_mut().expect("spec").remove("selector");
    assert_invalid(
        &post(&client, DEPLOYMENTS, d).await,
        "Deployment.apps \"d\" is invalid: spec.selector: Required value",
        &[("spec.selector", "FieldValueRequired", "Required value")],
    );
    let d = deployment(
        "d",
        json!({"matchLabels": {"app": "d"}}),
        json!({"app": "x"}),
    );
    assert_invalid(
        &post(&client, DEPLOYMENTS, d).await,
        "Deployment.apps \"d\" is invalid: spec.template.metadata.labels: Invalid value: \
         {\"app\":\"x\"}: `selector` does not match template `labels`",
        &[(
            "spec.template.metadata.labels",
            "FieldValueInvalid",
            "Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`",
        )],
    );
    let mut d = deployment(
        "d",
        json!({"matchLabels": {"app": "d"}}),
        json!({"app": "d"}),
    );
    d["spec"]["replicas"] = json!(-1);
    assert_invalid(
        &post(&client, DEPLOYMENTS, d.clone()).await,
        "Deployment.apps \"d\" is invalid: spec.replicas: Invalid value: -1: must be greater \
         than or equal to 0",
        &[(
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: -1: must be greater than or equal to 0",
        )],
    );
    d["spec"]["replicas"] = json!(2);
    let created = post(&client, DEPLOYMENTS, d).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let mut changed = created.body;
    changed["spec"]["selector"] = json!({"matchLabels": {"app": "d", "tier": "web"}});
    changed["spec"]["template"]["metadata"]["labels"] = json!({"app": "d", "tier": "web"});
    assert_invalid(
        &put(&client, &format!("{DEPLOYMENTS}/d"), changed).await,
        "Deployment.apps \"d\" is invalid: spec.selector: Invalid value: \
         {\"matchLabels\":{\"app\":\"d\",\"tier\":\"web\"}}: field is immutable",
        &[(
            "spec.selector",
            "FieldValueInvalid",
            "Invalid value: {\"matchLabels\":{\"app\":\"d\",\"tier\":\"web\"}}: field is immutable",
        )],
    );
}

#[tokio::test]
async fn services_need_ports_named_when_several_and_keep_their_cluster_ip() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let svc = |name: &str, spec: Value| json!({"metadata": {"name": name}, "spec": spec});
    assert_invalid(
        &post(&client, SERVICES, svc("s", json!({}))).await,
        "Service \"s\" is invalid: spec.ports: Required value",
        &[("spec.ports", "FieldValueRequired", "Required value")],
    );
    let headless = svc("headless", json!({"clusterIP": "None"}));
    assert_eq!(post(&client, SERVICES, headless).await.code, 201);
    let two = svc("s", json!({"ports": [{"port": 80}, {"port": 443}]}));
    assert_invalid(
        &post(&client, SERVICES, two).await,
        "Service \"s\" is invalid: [spec.ports[0].name: Required value, spec.ports[1].name: \
         Required value]",
        &[
            ("spec.ports[0].name", "FieldValueRequired", "Required value"),
            ("spec.ports[1].name", "FieldValueRequired", "Required value"),
        ],
    );
    let created = post(
        &client,
        SERVICES,
        svc("s", json!({"ports": [{"port": 80}]})),
    )
    .await;
    assert_eq!(created.code, 201, "{}", created.body);
    let mut changed = created.body;
    changed["spec"]["clusterIP"] = json!("10.96.99.99");
    changed["spec"]["clusterIPs"] = json!(["10.96.99.99"]);
    assert_invalid(
        &put(&client, &format!("{SERVICES}/s"), changed).await,
        "Service \"s\" is invalid: spec.clusterIPs[0]: Invalid value: [\"10.96.99.99\"]: may \
         not change once set",
        &[(
            "spec.clusterIPs[0]",
            "FieldValueInvalid",
            "Invalid value: [\"10.96.99.99\"]: may not change once set",
        )],
    );
}

#[tokio::test]
async fn config_maps_and_secrets_keep_their_type_immutability_and_size() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let tls = json!({"metadata": {"name": "t"}, "type": "kubernetes.io/tls", "data": {}});
    assert_invalid(
        &post(&client, SECRETS, tls).await,
        "Secret \"t\" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]",
        &[
            ("data[tls.crt]", "FieldValueRequired", "Required value"),
            ("data[tls.key]", "FieldValueRequired", "Required value"),
        ],
    );
    let created = post(
        &client,
        SECRETS,
        json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}}),
    )
    .await;
    assert_eq!(created.code, 201, "{}", created.body);
    let mut changed = created.body;
    changed["type"] = json!("example.com/other");
    assert_invalid(
        &put(&client, &format!("{SECRETS}/s"), changed).await,
        "Secret \"s\" is invalid: type: Invalid value: \"example.com/other\": field is immutable",
        &[(
            "type",
            "FieldValueInvalid",
            "Invalid value: \"example.com/other\": field is immutable",
        )],
    );

    let cm = json!({"metadata": {"name": "frozen"}, "data": {"k": "v"}, "immutable": true});
    let created = post(&client, CONFIG_MAPS, cm).await;
    assert_eq!(created.code, 201);
    let mut changed = created.body.clone();
    changed["data"]["k"] = json!("w");
    assert_invalid(
        &put(&client, &format!("{CONFIG_MAPS}/frozen"), changed).await,
        "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` \
         is set",
        &[(
            "data",
            "FieldValueForbidden",
            "Forbidden: field is immutable when `immutable` is set",
        )],
    );
    let mut labelled = created.body;
    labelled["metadata"]["labels"] = json!({"still": "fine"});
    assert_eq!(
        put(&client, &format!("{CONFIG_MAPS}/frozen"), labelled)
            .await
            .code,
        200
    );

    let big = "a".repeat(1024 * 1024 + 1);
    let cm = json!({"metadata": {"name": "big"}, "data": {"k": big}});
    assert_invalid(
        &post(&client, CONFIG_MAPS, cm).await,
        "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes",
        &[(
            "[]",
            "FieldValueTooLong",
            "Too long: may not be more than 1048576 bytes",
        )],
    );
    let secret = json!({"metadata": {"name": "big"}, "stringData": {"k": big}});
    assert_invalid(
        &post(&client, SECRETS, secret).await,
        "Secret \"big\" is invalid: data: Too long: may not be more than 1048576 bytes",
        &[(
            "data",
            "FieldValueTooLong",
            "Too long: may not be more than 1048576 bytes",
        )],
    );
}

#[tokio::test]
async fn bodies_over_three_mebibytes_are_refused_unread() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let before = env.resource_version();
    let big = "a".repeat(3 * 1024 * 1024);
    let cm = json!({"metadata": {"name": "huge"}, "data": {"k": big}});
    let answer = post(&client, CONFIG_MAPS, cm).await;
    assert_eq!(answer.code, 413, "{}", answer.body);
    assert_eq!(answer.body["reason"], "RequestEntityTooLarge");
    assert_eq!(
        answer.body["message"],
        "Request entity too large: limit is 3145728"
    );
    assert_eq!(env.resource_version(), before);
}

#[tokio::test]
async fn jobs_events_limit_ranges_leases_and_bindings_are_validated() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let job = json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "busybox"}]}}}});
    assert_invalid(
        &post(&client, "/apis/batch/v1/namespaces/default/jobs", job).await,
        "Job.batch \"j\" is invalid: spec.template.spec.restartPolicy: Required value: valid \
         values: \"OnFailure\", \"Never\"",
        &[(
            "spec.template.spec.restartPolicy",
            "FieldValueRequired",
            "Required value: valid values: \"OnFailure\", \"Never\"",
        )],
    );
    let event = json!({"metadata": {"name": "e"}, "eventTime": "2025-01-01T00:00:00.000000Z",
        "reportingController": "example.com/c", "reportingInstance": "i", "action": "A",
        "reason": "R", "type": "Fatal"});
    assert_invalid(
        &post(
            &client,
            "/apis/events.k8s.io/v1/namespaces/default/events",
            event,
        )
        .await,
        "Event.events.k8s.io \"e\" is invalid: type: Invalid value: \"\": has invalid value: \
         Fatal",
        &[(
            "type",
            "FieldValueInvalid",
            "Invalid value: \"\": has invalid value: Fatal",
        )],
    );
    let range = json!({"metadata": {"name": "l"}, "spec": {"limits": [{"type": "Node"}]}});
    assert_invalid(
        &post(&client, "/api/v1/namespaces/default/limitranges", range).await,
        "LimitRange \"l\" is invalid: spec.limits[0].type: Invalid value: \"Node\": must be a \
         standard limit type or fully qualified",
        &[(
            "spec.limits[0].type",
            "FieldValueInvalid",
            "Invalid value: \"Node\": must be a standard limit type or fully qualified",
        )],
    );
    let claim = json!({"metadata": {"name": "c"}, "spec": {}});
    assert_invalid(
        &post(
            &client,
            "/api/v1/namespaces/default/persistentvolumeclaims",
            claim,
        )
        .await,
        "PersistentVolumeClaim \"c\" is invalid: [spec.accessModes: Required value: at least 1 \
         access mode is required, spec.resources[storage]: Required value]",
        &[
            (
                "spec.accessModes",
                "FieldValueRequired",
                "Required value: at least 1 access mode is required",
            ),
            (
                "spec.resources[storage]",
                "FieldValueRequired",
                "Required value",
            ),
        ],
    );
    let lease = json!({"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 0}});
    assert_invalid(
        &post(
            &client,
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            lease,
        )
        .await,
        "Lease.coordination.k8s.io \"l\" is invalid: spec.leaseDurationSeconds: Invalid value: \
         0: must be greater than 0",
        &[(
            "spec.leaseDurationSeconds",
            "FieldValueInvalid",
            "Invalid value: 0: must be greater than 0",
        )],
    );
    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings";
    let binding = json!({"metadata": {"name": "b"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "Robot", "name": "x"}]});
    assert_invalid(
        &post(&client, bindings, binding.clone()).await,
        "RoleBinding.rbac.authorization.k8s.io \"b\" is invalid: subjects[0].kind: Unsupported \
         value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
        &[(
            "subjects[0].kind",
            "FieldValueNotSupported",
            "Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
        )],
    );
    let mut binding = binding;
    binding["subjects"] = json!([{"kind": "ServiceAccount", "name": "default"}]);
    let created = post(&client, bindings, binding).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let mut changed = created.body;
    changed["roleRef"]["name"] = json!("other");
    assert_invalid(
        &put(&client, &format!("{bindings}/b"), changed).await,
        "RoleBinding.rbac.authorization.k8s.io \"b\" is invalid: roleRef: Invalid value: \
         {\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"other\"}: \
         cannot change roleRef",
        &[(
            "roleRef",
            "FieldValueInvalid",
            "Invalid value: {\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\
             \"name\":\"other\"}: cannot change roleRef",
        )],
    );
}

#[tokio::test]
async fn validation_can_be_relaxed_for_a_test_that_stores_odd_objects() {
    let env = TestEnv::builder()
        .validate_objects(false)
        .start()
        .await
        .expect("starts");
    let client = env.client();
    let created = post(&client, PODS, pod("bare", json!([]))).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let mut p = pod("typed", json!([]));
    p["spec"]["containers"] = json!("none");
    assert_eq!(
        post(&client, PODS, p).await.code,
        400,
        "bodies are still decoded"
    );
}

#[test]
fn kubectl_shows_the_servers_validation_errors() {
    let server = crate::kubectl::Server::start();
    let manifest = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  \
                    selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      \
                    labels:\n        app: other\n    spec:\n      containers:\n      - name: c\n        \
                    image: nginx\n";
    let output = server.run(&["create", "-f", "-"], Some(manifest));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "The Deployment \"web\" is invalid: spec.template.metadata.labels: Invalid value: \
             {\"app\":\"other\"}: `selector` does not match template `labels`"
        ),
        "{stderr}"
    );
    let output = server.run(&["get", "deployments", "-o", "name"], None);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "",
        "nothing was stored"
    );
}

#[tokio::test]
async fn free_form_json_in_built_in_kinds_takes_any_value() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.demo.rein.dev"},
        "spec": {"group": "demo.rein.dev", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "image": {"type": "string", "default": "nginx"},
                        "replicas": {"type": "integer", "default": 1},
                        "items": {"type": "array", "items": {"type": "string"}}}}}}}}]},
    });
    let answer = post(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        crd,
    )
    .await;
    assert_eq!(answer.code, 201, "{}", answer.body);
    let revision = json!({"metadata": {"name": "r"}, "revision": 1, "data": "anything"});
    let answer = post(
        &client,
        "/apis/apps/v1/namespaces/default/controllerrevisions",
        revision,
    )
    .await;
    assert_eq!(answer.code, 201, "{}", answer.body);
}
