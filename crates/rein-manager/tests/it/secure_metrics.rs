//! Secure metrics against rein-testenv over real HTTPS, RBAC enforced: a manager (running as
//! a ServiceAccount with `system:auth-delegator`) serving `/metrics` with TokenReview
//! authentication and SubjectAccessReview authorization (401 without a token, 403 for a
//! scraper RBAC does not allow, the metrics for one it does); a certificate from
//! files re-read when they change; a generated certificate.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube_client::Api;
use kube_client::api::PostParams;
use rein_manager::metrics::{MetricsServer, MetricsServerOptions, SecureServing};
use rein_manager::{Manager, Options};
use rein_testenv::TestEnv;
use rein_webhook::GeneratedCertificates;
use rustls::pki_types::ServerName;
use tokio_util::sync::CancellationToken;

/// An answer: status, content type, body.
type Answer = (u16, String, String);

/// `method path` over HTTPS to `addr`, trusting only `ca_pem`, with an optional bearer token.
async fn https(
    addr: SocketAddr,
    ca_pem: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> Result<Answer, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots
            .add(cert.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let tls = connector
        .connect(ServerName::try_from("localhost").expect("name"), tcp)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut req = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost");
    if let Some(token) = token {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    let resp = sender
        .send_request(req.body(Full::new(Bytes::new())).expect("request"))
        .await
        .map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((
        status,
        content_type,
        String::from_utf8_lossy(&body).into_owned(),
    ))
}

/// Retries `https` until the server answers (it binds before it serves), for up to 10 s.
async fn scrape(addr: SocketAddr, ca_pem: &str, method: &str, token: Option<&str>) -> Answer {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match https(addr, ca_pem, method, "/metrics", token).await {
            Ok(answer) => return answer,
            Err(err) => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "no answer from {addr}: {err}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("rein-secure-metrics-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir
}

/// A token for a new ServiceAccount `default/<name>`.
async fn service_account_token(client: &kube_client::Client, name: &str) -> String {
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let mut sa = ServiceAccount::default();
    sa.metadata.name = Some(name.to_string());
    sas.create(&PostParams::default(), &sa)
        .await
        .expect("creates the ServiceAccount");
    let request = TokenRequest {
        spec: TokenRequestSpec::default(),
        ..TokenRequest::default()
    };
    sas.create_token_request(name, &PostParams::default(), &request)
        .await
        .expect("TokenRequest")
        .status
        .expect("status")
        .token
}

#[tokio::test]
async fn a_secure_manager_serves_metrics_only_to_scrapers_rbac_allows() {
    let env = TestEnv::builder()
        .tls(true)
        .enforce_rbac(true)
        .start()
        .await
        .expect("testenv starts");
    let admin = env.client();
    let certs = GeneratedCertificates::generate(&["localhost", "127.0.0.1"]).expect("certificates");
    let dir = temp_dir("manager");
    let source = certs.write_to_dir(&dir).expect("writes the certificates");
    let metrics = MetricsServerOptions {
        bind_address: "127.0.0.1:0".parse().expect("addr"),
        secure: Some(SecureServing {
            cert: Some(source),
            ..SecureServing::default()
        }),
        ..MetricsServerOptions::default()
    };
    // The manager runs as its own ServiceAccount with only `system:auth-delegator`: the RBAC
    // an operator's manifest grants for secure metrics, shown to be enough.
    let manager_token = service_account_token(&admin, "controller").await;
    let delegator: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "controller-auth-delegator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "system:auth-delegator"},
        "subjects": [{"kind": "ServiceAccount", "name": "controller", "namespace": "default"}],
    }))
    .expect("binding");
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &delegator)
        .await
        .expect("creates the ClusterRoleBinding");
    let config = env.config_with_token(&manager_token).await.expect("config");
    let mgr = Manager::builder(config)
        .options(Options::default().metrics(metrics))
        .build()
        .await
        .expect("manager builds");
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });

    let reader: ClusterRole = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "metrics-reader"},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }))
    .expect("role");
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &reader)
        .await
        .expect("creates the ClusterRole");
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "scraper-reads-metrics"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": "default"}],
    }))
    .expect("binding");
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .expect("creates the ClusterRoleBinding");
    let scraper = service_account_token(&admin, "scraper").await;
    let nosy = service_account_token(&admin, "nosy").await;

    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let addr = loop {
        if let Some(addr) = mgr.metrics_address() {
            break addr;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the metrics server never bound"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let ca = &certs.ca_pem;
    let (status, _, body) = scrape(addr, ca, "GET", None).await;
    assert_eq!((status, body.as_str()), (401, "Unauthorized\n"));
    let (status, _, body) = scrape(addr, ca, "GET", Some("not-a-token")).await;
    assert_eq!((status, body.as_str()), (500, "Authentication failed\n"));
    let (status, _, body) = scrape(addr, ca, "GET", Some(&nosy)).await;
    assert_eq!(
        (status, body.as_str()),
        (
            403,
            "Authorization denied for user system:serviceaccount:default:nosy\n"
        )
    );
    let (status, content_type, body) = scrape(addr, ca, "GET", Some(&scraper)).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    // The verb is the lowercase method: `post` on /metrics is not allowed.
    let (status, _, _) = scrape(addr, ca, "POST", Some(&scraper)).await;
    assert_eq!(status, 403);

    stop.cancel();
    task.await.expect("joins").expect("manager stops cleanly");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn certificate_files_are_reread_when_they_change() {
    let first = GeneratedCertificates::generate(&["localhost"]).expect("certificates");
    let dir = temp_dir("reload");
    let source = first.write_to_dir(&dir).expect("writes");
    let server = Arc::new(
        MetricsServer::bind(MetricsServerOptions {
            bind_address: "127.0.0.1:0".parse().expect("addr"),
            secure: Some(SecureServing {
                cert: Some(source),
                skip_authorization: true,
                client: None,
            }),
            ..MetricsServerOptions::default()
        })
        .await
        .expect("binds"),
    );
    let stop = CancellationToken::new();
    tokio::spawn({
        let (server, stop) = (server.clone(), stop.clone());
        async move { server.run(stop).await }
    });
    let addr = server.local_addr();
    assert_eq!(scrape(addr, &first.ca_pem, "GET", None).await.0, 200);

    let second = GeneratedCertificates::generate(&["localhost"]).expect("certificates");
    second.write_to_dir(&dir).expect("rewrites");
    // The watcher re-reads the files at most once a second, at a handshake.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while https(addr, &second.ca_pem, "GET", "/metrics", None)
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        https(addr, &first.ca_pem, "GET", "/metrics", None)
            .await
            .is_err()
    );
    stop.cancel();
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_generated_certificate_serves_https_and_reviews_need_a_client() {
    let options = |skip| MetricsServerOptions {
        bind_address: "127.0.0.1:0".parse().expect("addr"),
        secure: Some(SecureServing {
            cert: None,
            skip_authorization: skip,
            client: None,
        }),
        ..MetricsServerOptions::default()
    };
    assert!(matches!(
        MetricsServer::bind(options(false)).await,
        Err(rein_manager::metrics::Error::NoReviewClient)
    ));
    let server = Arc::new(MetricsServer::bind(options(true)).await.expect("binds"));
    let stop = CancellationToken::new();
    tokio::spawn({
        let (server, stop) = (server.clone(), stop.clone());
        async move { server.run(stop).await }
    });
    // A TLS client that does not trust the generated certificate fails its handshake.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let stranger = GeneratedCertificates::generate(&["localhost"]).expect("certificates");
    loop {
        let err = https(
            server.local_addr(),
            &stranger.ca_pem,
            "GET",
            "/metrics",
            None,
        )
        .await
        .expect_err("an unknown issuer");
        if err.contains("UnknownIssuer") || err.contains("invalid peer certificate") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "unexpected error: {err}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.cancel();
}
