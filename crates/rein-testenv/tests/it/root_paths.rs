//! `GET /`: the paths kube-apiserver lists (`metav1.RootPaths`), over real HTTP.

use rein_testenv::TestEnv;
use serde_json::Value;

use super::pod_support::raw;

#[tokio::test]
async fn the_root_lists_every_served_path_sorted() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    let (code, content_type, root) = raw(&client, "GET", "/", "", &Value::Null).await;
    assert_eq!((code, content_type.as_str()), (200, "application/json"));
    let paths: Vec<&str> = root["paths"]
        .as_array()
        .expect("a paths list")
        .iter()
        .map(|p| p.as_str().expect("a string"))
        .collect();
    let mut sorted = paths.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(paths, sorted, "sorted, each once, as kube's index handler");
    for expected in [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/",
        "/apis/apps",
        "/apis/apps/v1",
        "/apis/autoscaling/v2",
        "/healthz",
        "/healthz/ping",
        "/livez/etcd",
        "/readyz",
        "/readyz/shutdown",
        "/openapi/v2",
        "/openapi/v3",
        "/version",
    ] {
        assert!(paths.contains(&expected), "{expected} in {paths:?}");
    }
    // Every listed path is served.
    for path in &paths {
        let (code, _, body) = raw(&client, "GET", path, "", &Value::Null).await;
        assert_eq!(code, 200, "GET {path}: {body}");
    }
    let (code, _, index) = raw(&client, "GET", "/index.html", "", &Value::Null).await;
    assert_eq!((code, index), (200, root));
}
