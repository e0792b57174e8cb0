//! List semantics through kube-client: limit/continue over one snapshot, expired continue
//! tokens, field selectors and `resourceVersionMatch=Exact`.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube_client::api::{Api, ListParams, PostParams, VersionMatch};
use rein_testenv::TestEnv;
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}})).expect("cm")
}

#[tokio::test]
async fn pages_list_one_consistent_snapshot() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..5 {
        cms.create(&PostParams::default(), &cm(&format!("c{i}")))
            .await
            .expect("creates");
    }
    let first = cms
        .list(&ListParams::default().limit(2))
        .await
        .expect("page 1");
    assert_eq!(first.items.len(), 2);
    // Three of them and the namespace's root CA ConfigMap.
    assert_eq!(first.metadata.remaining_item_count, Some(4));
    let token = first.metadata.continue_.clone().expect("more pages");
    cms.create(&PostParams::default(), &cm("c9-new"))
        .await
        .expect("creates");
    cms.delete("c4", &Default::default())
        .await
        .expect("deletes");
    let mut seen: Vec<String> = first
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    let mut token = Some(token);
    while let Some(t) = token {
        let page = cms
            .list(&ListParams::default().limit(2).continue_token(&t))
            .await
            .expect("page");
        assert_eq!(
            page.metadata.resource_version,
            first.metadata.resource_version
        );
        seen.extend(page.items.into_iter().filter_map(|c| c.metadata.name));
        token = page.metadata.continue_;
    }
    seen.retain(|n| n != crate::ROOT_CA);
    assert_eq!(
        seen,
        ["c0", "c1", "c2", "c3", "c4"],
        "later changes are not in the snapshot"
    );
}

#[tokio::test]
async fn expired_continue_tokens_answer_410() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..3 {
        cms.create(&PostParams::default(), &cm(&format!("c{i}")))
            .await
            .expect("creates");
    }
    let first = cms
        .list(&ListParams::default().limit(1))
        .await
        .expect("page 1");
    cms.create(&PostParams::default(), &cm("later"))
        .await
        .expect("creates");
    env.faults().compact();
    let token = first.metadata.continue_.expect("more");
    let err = cms
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .expect_err("expired");
    let kube_client::Error::Api(status) = err else {
        panic!("api error")
    };
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
}

#[tokio::test]
async fn exact_resource_version_lists_the_past() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let a = cms
        .create(&PostParams::default(), &cm("a"))
        .await
        .expect("creates");
    cms.create(&PostParams::default(), &cm("b"))
        .await
        .expect("creates");
    let rv = a.metadata.resource_version.expect("rv");
    let past = cms
        .list(&ListParams::default().at(&rv).matching(VersionMatch::Exact))
        .await
        .expect("lists");
    // `a` and the namespace's root CA ConfigMap.
    assert_eq!(past.items.len(), 2);
    assert_eq!(past.metadata.resource_version.as_deref(), Some(rv.as_str()));
}

#[tokio::test]
async fn field_selectors_filter_by_name_and_spec() {
    let env = TestEnv::start().await.expect("starts");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    for (name, node) in [("a", "n1"), ("b", "n2")] {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
        }))
        .expect("pod");
        pods.create(&PostParams::default(), &p)
            .await
            .expect("creates");
    }
    let by = |sel: &str| ListParams::default().fields(sel);
    let names = |l: kube_client::core::ObjectList<Pod>| -> Vec<String> {
        l.items
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect()
    };
    assert_eq!(
        names(pods.list(&by("spec.nodeName=n2")).await.expect("list")),
        ["b"]
    );
    assert_eq!(
        names(pods.list(&by("metadata.name!=b")).await.expect("list")),
        ["a"]
    );
    assert_eq!(
        names(
            pods.list(&by("status.phase=Pending,metadata.namespace=default"))
                .await
                .expect("list")
        ),
        ["a", "b"]
    );
}

#[tokio::test]
async fn list_options_are_validated_like_kube_apiserver() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let code_of = |query: &'static str| {
        let client = client.clone();
        async move {
            let request =
                http::Request::get(format!("/api/v1/namespaces/default/configmaps?{query}"))
                    .body(Vec::new())
                    .expect("request");
            match client.request_text(request).await {
                Ok(_) => 200,
                Err(kube_client::Error::Api(s)) => {
                    if s.code == 422 {
                        assert_eq!(s.reason, "Invalid", "{query}");
                        assert!(s.message.contains("resourceVersionMatch"), "{}", s.message);
                    }
                    s.code
                }
                Err(e) => panic!("{query}: {e}"),
            }
        }
    };
    assert_eq!(code_of("resourceVersionMatch=NotOlderThan").await, 422);
    assert_eq!(
        code_of("resourceVersionMatch=Exact&resourceVersion=0").await,
        422
    );
    assert_eq!(
        code_of("resourceVersionMatch=Newest&resourceVersion=1").await,
        422
    );
    assert_eq!(
        code_of("resourceVersionMatch=NotOlderThan&resourceVersion=0").await,
        200
    );
    assert_eq!(code_of("resourceVersion=0").await, 200);
    assert_eq!(code_of("resourceVersion=5&continue=abc").await, 400);
}

/// A list larger than one response chunk (256 KB) is streamed from the stored objects: it
/// arrives whole and in order, as JSON, as YAML and as `PartialObjectMetadataList`, and a
/// field selector on a Pod field the store keeps beside each object still filters it.
#[tokio::test]
async fn large_lists_arrive_whole_in_every_representation() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let filler = "x".repeat(1024);
    let count = 400;
    futures::future::try_join_all((0..count).map(|i| {
        let cms = cms.clone();
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": format!("big-{i:04}")}, "data": {"filler": filler}}),
        )
        .expect("cm");
        async move { cms.create(&PostParams::default(), &cm).await }
    }))
    .await
    .expect("creates");
    let listed = cms.list(&ListParams::default()).await.expect("lists");
    // The namespace's own `kube-root-ca.crt` aside.
    let names: Vec<String> = listed
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .filter(|n| n.starts_with("big-"))
        .collect();
    let expected: Vec<String> = (0..count).map(|i| format!("big-{i:04}")).collect();
    assert_eq!(names, expected);
    assert!(
        listed
            .items
            .iter()
            .filter(|c| c.metadata.name.as_deref() != Some("kube-root-ca.crt"))
            .all(|c| c.data.as_ref().and_then(|d| d.get("filler")) == Some(&filler))
    );

    let request = |accept: &str| {
        http::Request::get("/api/v1/namespaces/default/configmaps")
            .header("Accept", accept)
            .body(Vec::new())
            .expect("request")
    };
    let yaml = env
        .client()
        .request_text(request("application/yaml"))
        .await
        .expect("lists as YAML");
    let yaml: serde_json::Value = serde_saphyr::from_str(&yaml).expect("YAML");
    // The ConfigMaps and the namespace's `kube-root-ca.crt`.
    assert_eq!(yaml["items"].as_array().map(Vec::len), Some(count + 1));
    let partial: serde_json::Value = env
        .client()
        .request(request(
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        ))
        .await
        .expect("lists metadata");
    assert_eq!(partial["kind"], "PartialObjectMetadataList");
    let items = partial["items"].as_array().expect("items");
    assert_eq!(items.len(), count + 1);
    assert!(items.iter().all(|i| i.get("data").is_none()));
    assert_eq!(items[count - 1]["metadata"]["name"], "big-0399");

    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    for (name, node) in [("on-a", "node-a"), ("on-b", "node-b")] {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}
        }))
        .expect("pod");
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("creates");
    }
    let on_b = pods
        .list(&ListParams::default().fields("spec.nodeName=node-b"))
        .await
        .expect("lists by node");
    let names: Vec<_> = on_b
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(names, ["on-b"]);
}
