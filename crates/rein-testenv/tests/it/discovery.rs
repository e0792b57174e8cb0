//! Discovery in both forms: the legacy documents (`APIGroupList`, `APIResourceList`) and
//! aggregated discovery (`APIGroupDiscoveryList`), through kube-client's `Discovery` and raw
//! requests, with and without a CRD.

use http::header;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::api::{Api, PostParams};
use kube_client::discovery::{Discovery, Scope};
use kube_client::{Client, core::discovery::v2::ACCEPT_AGGREGATED_DISCOVERY_V2};
use rein_testenv::TestEnv;
use serde_json::{Value, json};

use super::http_support::{open, send};

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

async fn with_crontab_crd(env: &TestEnv) {
    let crd: CustomResourceDefinition =
        serde_saphyr::from_str(include_str!("../fixtures/crontab-crd.yaml")).expect("crd fixture");
    Api::<CustomResourceDefinition>::all(env.client())
        .create(&PostParams::default(), &crd)
        .await
        .expect("creates the crd");
}

/// GETs `path` with `accept`; answers (status, content type, etag, body).
async fn get(client: &Client, path: &str, accept: &str) -> (u16, String, String, Value) {
    let resp = open(client, "GET", path, &[("accept", accept)], Vec::new()).await;
    let status = resp.status().as_u16();
    let text = |name| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let (content_type, etag) = (text(header::CONTENT_TYPE), text(header::ETAG));
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("reads")
        .to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, content_type, etag, body)
}

fn resource<'a>(list: &'a Value, version: usize, name: &str) -> &'a Value {
    list["versions"][version]["resources"]
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["resource"] == name))
        .unwrap_or_else(|| panic!("no {name} in {list}"))
}

fn subresource_names(resource: &Value) -> Vec<&str> {
    resource["subresources"]
        .as_array()
        .map(|subs| {
            subs.iter()
                .filter_map(|s| s["subresource"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn kube_client_discovery_finds_the_same_groups_both_ways() {
    let env = TestEnv::start().await.expect("starts");
    with_crontab_crd(&env).await;
    let legacy = Discovery::new(env.client()).run().await.expect("legacy");
    let aggregated = Discovery::new(env.client())
        .run_aggregated()
        .await
        .expect("aggregated");
    let names = |d: &Discovery| {
        d.groups_alphabetical()
            .iter()
            .map(|g| g.name().to_string())
            .collect::<Vec<_>>()
    };
    assert!(names(&aggregated).len() > 10, "{:?}", names(&aggregated));
    assert_eq!(names(&legacy), names(&aggregated));
    for d in [&legacy, &aggregated] {
        let core = d.get("").expect("core group");
        let (pods, caps) = core
            .recommended_resources()
            .into_iter()
            .find(|(r, _)| r.plural == "pods")
            .expect("pods");
        assert_eq!(
            (pods.kind.as_str(), caps.scope.clone()),
            ("Pod", Scope::Namespaced)
        );
        let subs: Vec<String> = caps
            .subresources
            .iter()
            .map(|(r, _)| r.plural.clone())
            .collect();
        for sub in [
            "status",
            "eviction",
            "binding",
            "log",
            "exec",
            "attach",
            "portforward",
        ] {
            assert!(subs.iter().any(|s| s == sub), "pods/{sub} in {subs:?}");
        }
        let (crontabs, caps) = d
            .get("stable.example.com")
            .expect("crd group")
            .recommended_kind("CronTab")
            .expect("crontabs");
        assert_eq!(crontabs.plural, "crontabs");
        assert_eq!(caps.scope, Scope::Namespaced);
        assert!(caps.operations.iter().any(|v| v == "watch"));
    }
}

#[tokio::test]
async fn aggregated_documents_match_kube_apiserver() {
    let env = TestEnv::start().await.expect("starts");
    with_crontab_crd(&env).await;
    let client = env.client();

    let (status, content_type, etag, core) =
        get(&client, "/api", ACCEPT_AGGREGATED_DISCOVERY_V2).await;
    assert_eq!((status, content_type.as_str()), (200, AGGREGATED));
    assert!(etag.starts_with('"') && etag.len() == 130, "{etag}");
    assert_eq!(core["kind"], "APIGroupDiscoveryList");
    assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2");
    let group = &core["items"][0];
    assert_eq!(group["metadata"], json!({"creationTimestamp": null}));
    assert_eq!(group["versions"][0]["version"], "v1");
    assert_eq!(group["versions"][0]["freshness"], "Current");
    let pods = resource(group, 0, "pods");
    assert_eq!(
        pods["responseKind"],
        json!({"group": "", "version": "v1", "kind": "Pod"})
    );
    assert_eq!(pods["scope"], "Namespaced");
    assert_eq!(pods["singularResource"], "pod");
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["categories"], json!(["all"]));
    assert_eq!(
        subresource_names(pods),
        [
            "attach",
            "binding",
            "ephemeralcontainers",
            "eviction",
            "exec",
            "log",
            "portforward",
            "proxy",
            "resize",
            "status"
        ]
    );
    let eviction = &pods["subresources"][3];
    assert_eq!(
        eviction,
        &json!({"subresource": "eviction", "verbs": ["create"],
                "responseKind": {"group": "policy", "version": "v1", "kind": "Eviction"}})
    );
    assert_eq!(
        subresource_names(resource(group, 0, "serviceaccounts")),
        ["token"]
    );
    assert_eq!(
        subresource_names(resource(group, 0, "namespaces")),
        ["finalize", "status"]
    );
    assert_eq!(resource(group, 0, "namespaces")["scope"], "Cluster");

    // The same ETag comes back as 304 Not Modified.
    let headers = [("accept", AGGREGATED), ("if-none-match", etag.as_str())];
    let answer = send(&client, "GET", "/api", &headers, Vec::new()).await;
    assert_eq!(answer.code, 304);

    let (_, _, _, apis) = get(&client, "/apis", AGGREGATED).await;
    let apps = apis["items"]
        .as_array()
        .and_then(|gs| gs.iter().find(|g| g["metadata"]["name"] == "apps"))
        .expect("apps");
    let deployments = resource(apps, 0, "deployments");
    assert_eq!(subresource_names(deployments), ["scale", "status"]);
    assert_eq!(
        deployments["subresources"][0]["responseKind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    let crd_group = apis["items"]
        .as_array()
        .and_then(|gs| {
            gs.iter()
                .find(|g| g["metadata"]["name"] == "stable.example.com")
        })
        .expect("the CRD's group");
    let crontabs = resource(crd_group, 0, "crontabs");
    assert_eq!(crontabs["shortNames"], json!(["ct"]));
    assert_eq!(crontabs["singularResource"], "crontab");
    assert_eq!(subresource_names(crontabs), ["status"]);
}

#[tokio::test]
async fn legacy_documents_are_served_unless_aggregated_v2_is_asked_for() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    // v2beta1 is no longer served by 1.33 (AggregatedDiscoveryRemoveBetaType): the next clause wins.
    for accept in [
        "application/json",
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
        "application/vnd.kubernetes.protobuf,application/json",
    ] {
        let (status, content_type, _, groups) = get(&client, "/apis", accept).await;
        assert_eq!(
            (status, content_type.as_str()),
            (200, "application/json"),
            "{accept}"
        );
        assert_eq!(groups["kind"], "APIGroupList", "{accept}");
        let (_, _, _, versions) = get(&client, "/api", accept).await;
        assert_eq!(versions["kind"], "APIVersions", "{accept}");
    }

    let (_, _, _, core) = get(&client, "/api/v1", "application/json").await;
    let by_name = |name: &str| {
        core["resources"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["name"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("no {name}"))
    };
    // kube-apiserver's StorageVersionHash("", "v1", "Pod").
    assert_eq!(by_name("pods")["storageVersionHash"], "xPOwRZ+Yhw8=");
    assert_eq!(
        by_name("pods/eviction"),
        json!({"name": "pods/eviction", "singularName": "", "namespaced": true,
               "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
    );
    assert_eq!(
        by_name("serviceaccounts/token"),
        json!({"name": "serviceaccounts/token", "singularName": "", "namespaced": true,
               "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest",
               "verbs": ["create"]})
    );
    assert_eq!(by_name("namespaces/finalize")["verbs"], json!(["update"]));
    assert_eq!(by_name("pods/log")["kind"], "Pod");
    assert!(by_name("pods/status").get("storageVersionHash").is_none());
}

/// A custom resource's `storageVersionHash` names its storage version in every served version,
/// as apiextensions-apiserver computes it.
#[tokio::test]
async fn custom_resources_hash_their_storage_version() {
    use base64::Engine as _;
    let env = TestEnv::start().await.expect("starts");
    let mut crd: Value =
        serde_saphyr::from_str(include_str!("../fixtures/crontab-crd.yaml")).expect("crd fixture");
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    crd["spec"]["versions"]
        .as_array_mut()
        .expect("versions")
        .push(v2);
    let crd: CustomResourceDefinition = serde_json::from_value(crd).expect("crd");
    Api::<CustomResourceDefinition>::all(env.client())
        .create(&PostParams::default(), &crd)
        .await
        .expect("creates the crd");
    let digest = ring::digest::digest(&ring::digest::SHA256, b"stable.example.com/v1/CronTab");
    let expected = base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8]);
    for version in ["v1", "v2"] {
        let (status, _, _, list) = get(
            &env.client(),
            &format!("/apis/stable.example.com/{version}"),
            "application/json",
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(
            list["resources"][0]["storageVersionHash"],
            json!(expected),
            "{version}"
        );
    }
}
