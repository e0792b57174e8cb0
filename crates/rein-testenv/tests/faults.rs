//! Fault injection and the request log.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, ListParams};
use rein_testenv::{Fault, TestEnv};

fn code(err: &kube_client::Error) -> Option<u16> {
    match err {
        kube_client::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

#[tokio::test]
async fn injected_errors_answer_the_next_requests() {
    let env = TestEnv::start().await.expect("starts");
    let mut config = env.config();
    config.default_retry = false;
    let client = kube_client::Client::try_from(config).expect("client without retries");
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    env.faults()
        .inject(Fault::server_error(2).matching("/configmaps"));
    assert_eq!(
        code(&cms.list(&ListParams::default()).await.expect_err("500")),
        Some(500)
    );
    assert_eq!(
        code(&cms.list(&ListParams::default()).await.expect_err("500")),
        Some(500)
    );
    cms.list(&ListParams::default())
        .await
        .expect("third succeeds");

    env.faults()
        .inject(Fault::too_many_requests(1, 7).matching("/api/v1/namespaces/default/configmaps"));
    let err = cms.list(&ListParams::default()).await.expect_err("429");
    assert_eq!(code(&err), Some(429));
    let statuses: Vec<u16> = env.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [500, 500, 200, 429]);
}

#[tokio::test]
async fn faults_only_match_their_path() {
    let env = TestEnv::start().await.expect("starts");
    env.faults()
        .inject(Fault::server_error(1).matching("/secrets"));
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    cms.list(&ListParams::default()).await.expect("unaffected");
    env.faults().clear();
}

#[tokio::test]
async fn pause_holds_requests_until_resume() {
    let env = TestEnv::start().await.expect("starts");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    env.faults().pause();
    let pending = tokio::spawn(async move {
        cms.list(&ListParams::default())
            .await
            .map(|l| l.items.len())
    });
    tokio::task::yield_now().await;
    assert!(!pending.is_finished());
    assert!(env.requests().is_empty(), "held requests are not answered");
    env.faults().resume();
    let listed = tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .expect("in time");
    assert_eq!(listed.expect("joins").expect("lists"), 0);
}

#[tokio::test]
async fn latency_and_request_log() {
    let env = TestEnv::start().await.expect("starts");
    env.faults().set_latency(Duration::from_millis(20));
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    cms.list(&ListParams::default().labels("a=b"))
        .await
        .expect("lists");
    env.faults().set_latency(Duration::ZERO);
    let log = env.requests();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].method, "GET");
    assert_eq!(log[0].path, "/api/v1/namespaces/default/configmaps");
    assert!(log[0].has_query("labelSelector", "a=b"));
    env.clear_requests();
    assert!(env.requests().is_empty());
}
