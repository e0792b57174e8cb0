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
    // Only the namespace's root CA ConfigMap.
    assert_eq!(listed.expect("joins").expect("lists"), 1);
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

#[tokio::test]
async fn a_panicking_handler_answers_500_and_the_server_keeps_serving() {
    let env = TestEnv::start().await.expect("starts");
    let mut config = env.config();
    config.default_retry = false;
    let client = kube_client::Client::try_from(config).expect("client without retries");
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let cm = |name: &str| ConfigMap {
        metadata: kube_client::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    env.faults().inject(Fault::panic(1).matching("/configmaps"));
    let err = cms
        .create(&Default::default(), &cm("first"))
        .await
        .expect_err("the handler panicked");
    match &err {
        kube_client::Error::Api(s) => {
            assert_eq!(s.code, 500);
            assert_eq!(s.reason, "InternalError");
            assert!(s.message.contains("panicked"), "{}", s.message);
        }
        other => panic!("expected a Status, got {other:?}"),
    }
    // The panic happened while the store was locked: the lock must be free again (a poisoned
    // or leaked lock would hang this create), and nothing of the failed request was written.
    let created = tokio::time::timeout(
        Duration::from_secs(10),
        cms.create(&Default::default(), &cm("second")),
    )
    .await
    .expect("the store is not left locked")
    .expect("creates");
    assert_eq!(created.metadata.name.as_deref(), Some("second"));
    let names: Vec<String> = cms
        .list(&ListParams::default())
        .await
        .expect("lists")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n != crate::ROOT_CA)
        .collect();
    assert_eq!(names, ["second"]);
    let statuses: Vec<u16> = env.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [500, 201, 200], "the panic is logged as a 500");
}

/// Sends one GET on an open HTTP/1.1 connection and reads the answer's status and body.
async fn get_on(stream: &mut tokio::net::TcpStream, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("writes");
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.expect("reads");
        assert!(n > 0, "the server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let status: u16 = head[9..12].parse().expect("status code");
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .expect("a sized body");
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.expect("reads");
        assert!(n > 0, "the server closed the connection mid-body");
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..head_end + length]).to_string();
    (status, body)
}

#[tokio::test]
async fn a_panicking_handler_does_not_close_the_connection() {
    let env = TestEnv::start().await.expect("starts");
    let address = env
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut stream = tokio::net::TcpStream::connect(&address)
        .await
        .expect("connects");
    env.faults().inject(Fault::panic(1).matching("/configmaps"));
    let path = "/api/v1/namespaces/default/configmaps";
    let (status, body) = tokio::time::timeout(Duration::from_secs(10), get_on(&mut stream, path))
        .await
        .expect("answered");
    assert_eq!(status, 500);
    assert!(body.contains("\"reason\":\"InternalError\""), "{body}");
    let (status, body) = tokio::time::timeout(Duration::from_secs(10), get_on(&mut stream, path))
        .await
        .expect("answered on the same connection");
    assert_eq!(status, 200);
    assert!(body.contains("\"kind\":\"ConfigMapList\""), "{body}");
}
