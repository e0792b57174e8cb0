//! TLS with a generated CA, bearer tokens, the kubeconfig, and start-up.

use k8s_openapi::api::core::v1::Namespace;
use kube_client::api::{Api, ListParams};
use rein_testenv::TestEnv;

#[tokio::test]
async fn tls_and_token_work_through_the_kubeconfig() {
    let env = TestEnv::builder()
        .tls(true)
        .token("s3cret")
        .start()
        .await
        .expect("starts");
    assert!(env.base_url().starts_with("https://127.0.0.1:"));
    let nss: Api<Namespace> = Api::all(env.client());
    assert_eq!(
        nss.list(&ListParams::default())
            .await
            .expect("lists")
            .items
            .len(),
        4
    );

    let kubeconfig = env.kubeconfig();
    let cluster = kubeconfig.clusters[0].cluster.as_ref().expect("cluster");
    assert!(cluster.certificate_authority_data.is_some());
    let dir = std::env::temp_dir().join(format!("rein-testenv-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("kubeconfig");
    env.write_kubeconfig(&path).expect("writes");
    let text = std::fs::read_to_string(&path).expect("reads");
    assert!(text.contains("s3cret") && text.contains(&env.base_url()));
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn requests_without_the_token_get_401() {
    let env = TestEnv::builder()
        .token("right")
        .start()
        .await
        .expect("starts");
    let mut config = env.config();
    config.auth_info.token = None;
    let client = kube_client::Client::try_from(config).expect("client");
    let nss: Api<Namespace> = Api::all(client);
    let err = nss
        .list(&ListParams::default())
        .await
        .expect_err("unauthorized");
    assert!(matches!(err, kube_client::Error::Api(s) if s.code == 401));
}

#[tokio::test]
async fn shutdown_stops_serving() {
    let env = TestEnv::start().await.expect("starts");
    let client = env.client();
    env.shutdown().await;
    let nss: Api<Namespace> = Api::all(client);
    assert!(nss.list(&ListParams::default()).await.is_err());
}
