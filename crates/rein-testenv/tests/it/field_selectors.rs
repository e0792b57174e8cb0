//! Field selectors as kube-apiserver takes them: `metadata.name`, `metadata.namespace` and the
//! kind's own labels (a CRD's `selectableFields`); any other label answers 400 BadRequest, for
//! lists, watches and deletecollection alike.

use std::time::Duration;

use futures::StreamExt;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Node, Pod, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Client;
use kube_client::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams, WatchEvent,
    WatchParams,
};
use rein_testenv::TestEnv;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const BOUND: Duration = Duration::from_secs(30);

/// Sends a request and answers the status and the body as JSON.
async fn send(client: &Client, method: Method, uri: &str) -> (StatusCode, Value) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .body(Vec::new().into())
        .expect("request");
    let resp = tokio::time::timeout(BOUND, client.send(req))
        .await
        .expect("an answer in time")
        .expect("an answer");
    let status = resp.status();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&body).expect("JSON body"))
}

fn encode(selector: &str) -> String {
    form_urlencoded::byte_serialize(selector.as_bytes()).collect()
}

/// Asserts a `Status` 400 BadRequest with `message`.
fn assert_refused(status: StatusCode, body: &Value, message: &str) {
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "BadRequest");
    assert_eq!(body["code"], 400);
    assert_eq!(body["message"], message);
}

async fn create<K>(api: &Api<K>, value: Value) -> K
where
    K: kube_client::Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(value).expect("object");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("creates")
}

async fn names<K>(api: &Api<K>, selector: &str) -> Vec<String>
where
    K: kube_client::Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.list(&ListParams::default().fields(selector))
        .await
        .unwrap_or_else(|e| panic!("{selector}: {e}"))
        .items
        .into_iter()
        .filter_map(|o| o.meta().name.clone())
        .filter(|n| n != crate::ROOT_CA)
        .collect()
}

#[tokio::test]
async fn unsupported_labels_answer_400_for_list_watch_and_deletecollection() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    create(
        &cms,
        json!({"metadata": {"name": "keep"}, "data": {"k": "v"}}),
    )
    .await;
    let unknown =
        "\"data.k\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"";
    let base = "/api/v1/namespaces/default/configmaps";
    let sel = encode("data.k=v");
    for (method, uri) in [
        (Method::GET, format!("{base}?fieldSelector={sel}")),
        (
            Method::GET,
            format!("{base}?watch=true&fieldSelector={sel}"),
        ),
        (Method::DELETE, format!("{base}?fieldSelector={sel}")),
    ] {
        let (status, body) = send(&client, method, &uri).await;
        assert_refused(status, &body, unknown);
    }
    assert_eq!(
        names(&cms, "").await,
        ["keep"],
        "deletecollection deleted nothing"
    );

    // Pods have their own labels; others are "not supported", also beside a good one.
    let sel = encode("spec.nodeName=n,spec.containers=x");
    let (status, body) = send(
        &client,
        Method::GET,
        &format!("/api/v1/namespaces/default/pods?fieldSelector={sel}"),
    )
    .await;
    assert_refused(status, &body, "field label not supported: spec.containers");
    // A cluster-scoped kind with its own function does not take metadata.namespace.
    let (status, body) = send(
        &client,
        Method::GET,
        &format!(
            "/api/v1/nodes?fieldSelector={}",
            encode("metadata.namespace=")
        ),
    )
    .await;
    assert_refused(
        status,
        &body,
        "field label not supported: metadata.namespace",
    );
    // Jobs word it their own way.
    let (status, body) = send(
        &client,
        Method::GET,
        &format!(
            "/apis/batch/v1/jobs?fieldSelector={}",
            encode("status.succeeded=1")
        ),
    )
    .await;
    assert_refused(
        status,
        &body,
        "field label \"status.succeeded\" not supported for batchv1.Job",
    );
    // kube-client surfaces the typed error.
    let err = cms
        .list(&ListParams::default().fields("data.k=v"))
        .await
        .expect_err("refused");
    assert!(matches!(err, kube_client::Error::Api(s) if s.code == 400));
}

#[tokio::test]
async fn per_kind_labels_select_what_kube_apiserver_selects() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();

    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let container = json!([{"name": "c", "image": "i"}]);
    create(
        &pods,
        json!({"metadata": {"name": "on-a"}, "spec": {"nodeName": "a", "containers": container}}),
    )
    .await;
    create(&pods, json!({"metadata": {"name": "host"}, "spec": {"hostNetwork": true, "containers": container}})).await;
    assert_eq!(
        names(&pods, "spec.host=a").await,
        ["on-a"],
        "the old name of spec.nodeName"
    );
    assert_eq!(
        names(&pods, "spec.hostNetwork=false").await,
        ["on-a"],
        "unset reads false"
    );
    assert_eq!(
        names(&pods, "spec.restartPolicy=Always,status.phase=Pending")
            .await
            .len(),
        2
    );
    assert_eq!(
        names(&pods, "status.podIPs=10.0.0.1").await,
        Vec::<String>::new()
    );

    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    create(&secrets, json!({"metadata": {"name": "plain"}})).await;
    create(
        &secrets,
        json!({"metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": "", "tls.key": ""}}),
    )
    .await;
    assert_eq!(names(&secrets, "type=Opaque").await, ["plain"]);
    assert_eq!(names(&secrets, "type!=Opaque").await, ["tls"]);

    let nodes: Api<Node> = Api::all(client.clone());
    create(&nodes, json!({"metadata": {"name": "n1"}})).await;
    create(
        &nodes,
        json!({"metadata": {"name": "n2"}, "spec": {"unschedulable": true}}),
    )
    .await;
    assert_eq!(names(&nodes, "spec.unschedulable=false").await, ["n1"]);
    assert_eq!(names(&nodes, "spec.unschedulable=true").await, ["n2"]);

    let namespaces: Api<Namespace> = Api::all(client.clone());
    assert_eq!(
        names(&namespaces, "status.phase=Active,metadata.name=default").await,
        ["default"]
    );

    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    create(
        &events,
        json!({"metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "on-a"},
        "reason": "Started", "type": "Normal", "reportingComponent": "kubelet"}),
    )
    .await;
    create(
        &events,
        json!({"metadata": {"name": "e2"}, "involvedObject": {"kind": "Pod", "name": "host"},
        "reason": "Failed", "type": "Warning", "source": {"component": "scheduler"}}),
    )
    .await;
    assert_eq!(names(&events, "involvedObject.name=on-a").await, ["e1"]);
    assert_eq!(
        names(&events, "source=kubelet").await,
        ["e1"],
        "falls back to reportingComponent"
    );
    assert_eq!(
        names(&events, "source=scheduler,type=Warning").await,
        ["e2"]
    );

    // events.k8s.io spells them its own way, over the same storage: the core Event e1 is
    // selected too.
    let gvk = GroupVersionKind::gvk("events.k8s.io", "v1", "Event");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "events");
    let new_events: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    create(
        &new_events,
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "n1"}, "eventTime": "2024-01-02T03:04:05.000000Z",
        "regarding": {"kind": "Pod", "name": "on-a"}, "reason": "Started", "action": "Start",
        "type": "Normal", "reportingController": "kubelet", "reportingInstance": "k1"}),
    )
    .await;
    assert_eq!(
        names(
            &new_events,
            "regarding.name=on-a,reportingController=kubelet"
        )
        .await,
        ["e1", "n1"]
    );

    // Jobs select on status.successful, read from status.succeeded (0 when unset).
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(client.clone(), "default");
    create(
        &jobs,
        json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": container}}}}),
    )
    .await;
    assert_eq!(names(&jobs, "status.successful=0").await, ["j"]);
}

#[tokio::test]
async fn custom_resources_select_on_the_crd_selectable_fields() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "selectableFields": [{"jsonPath": ".spec.color"}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "color": {"type": "string"}, "size": {"type": "integer"}}}}}},
            }],
        },
    }))
    .expect("crd");
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .expect("creates the crd");
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    for (name, color) in [("r", "red"), ("b", "blue")] {
        create(
            &widgets,
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": {"color": color, "size": 1}}),
        )
        .await;
    }
    assert_eq!(names(&widgets, "spec.color=red").await, ["r"]);
    assert_eq!(
        names(&widgets, "spec.color!=red,metadata.namespace=default").await,
        ["b"]
    );
    let (status, body) = send(
        &client,
        Method::GET,
        &format!(
            "/apis/example.com/v1/namespaces/default/widgets?fieldSelector={}",
            encode("spec.size=1")
        ),
    )
    .await;
    assert_refused(status, &body, "field label not supported: spec.size");

    // Watches take them too.
    let mut stream = widgets
        .watch(&WatchParams::default().fields("spec.color=blue"), "0")
        .await
        .expect("watches")
        .boxed();
    let event = tokio::time::timeout(BOUND, stream.next())
        .await
        .expect("an event in time")
        .expect("open")
        .expect("well formed");
    match event {
        WatchEvent::Added(w) => assert_eq!(w.metadata.name.as_deref(), Some("b")),
        _ => panic!("expected ADDED b"),
    }
}

#[tokio::test]
async fn escaped_commas_equals_and_backslashes_select_as_kube_apiserver_does() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    for (name, kind) in [("odd", r"example.com/a,b=c\d"), ("plain", "example.com/a")] {
        create(&secrets, json!({"metadata": {"name": name}, "type": kind})).await;
    }
    // `fields.EscapeValue` of the type: `\` -> `\\`, `,` -> `\,`, `=` -> `\=`.
    assert_eq!(
        names(&secrets, r"type=example.com/a\,b\=c\\d").await,
        ["odd"]
    );
    assert_eq!(
        names(&secrets, r"type!=example.com/a\,b\=c\\d,metadata.name!=x").await,
        ["plain"]
    );
    assert_eq!(names(&secrets, "type=example.com/a").await, ["plain"]);

    let list = |selector: &str| {
        format!(
            "/api/v1/namespaces/default/secrets?fieldSelector={}",
            encode(selector)
        )
    };
    for (selector, message) in [
        (
            r"type=example.com/a\",
            r"invalid field selector: invalid escape sequence: \",
        ),
        (
            r"type=a\b",
            r"invalid field selector: invalid escape sequence: \b",
        ),
        (
            "type=a=b",
            "invalid field selector: unescaped character in value: 61",
        ),
    ] {
        let (status, body) = send(&client, Method::GET, &list(selector)).await;
        assert_refused(status, &body, message);
        let (status, body) = send(
            &client,
            Method::GET,
            &format!("{}&watch=true", list(selector)),
        )
        .await;
        assert_refused(status, &body, message);
    }
}
