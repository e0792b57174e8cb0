//! Safe network defaults, tested: the manager's probe and metrics servers bind loopback, the
//! webhook server refuses plain HTTP and anything below TLS 1.2, and rein-testenv listens on
//! loopback and enforces its bearer token.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rein::manager::healthz::HealthProbeOptions;
use rein::manager::metrics::MetricsServerOptions;
use rein::manager::webhook::{GeneratedCertificates, WebhookServer, WebhookServerOptions};
use rein::manager::{Manager, Options};
use rein_testenv::TestEnv;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ProtocolVersion, RootCertStore, SupportedProtocolVersion};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

/// Sends `request` over a fresh connection and returns everything the server sent back.
async fn exchange(addr: SocketAddr, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request).await.expect("send");
    let mut response = Vec::new();
    // A reset after the answer is fine: keep what arrived.
    let _ = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut response))
        .await
        .expect("the server answers and closes");
    response
}

/// The status code of an HTTP/1.x response.
fn status(response: &[u8]) -> u16 {
    let text = String::from_utf8_lossy(response);
    text.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:.200}"))
}

#[tokio::test]
async fn manager_probe_and_metrics_servers_bind_loopback_by_default() {
    let options = Options::default();
    assert!(options.health_probes.is_none() && options.metrics.is_none());
    assert!(
        options.webhook.is_none(),
        "no server is on unless asked for"
    );
    let probes = HealthProbeOptions::default();
    let metrics = MetricsServerOptions::default();
    assert!(probes.bind_address.ip().is_loopback(), "{probes:?}");
    assert!(metrics.bind_address.ip().is_loopback(), "{metrics:?}");
    assert!(
        metrics.secure.is_none(),
        "plain HTTP on loopback is the default"
    );

    // Enabled with the default addresses (only the port freed, so tests do not collide): what
    // the manager actually bound is loopback.
    let env = TestEnv::start().await.unwrap();
    let options = Options {
        health_probes: Some(HealthProbeOptions {
            bind_address: SocketAddr::new(probes.bind_address.ip(), 0),
            ..probes
        }),
        metrics: Some(MetricsServerOptions {
            bind_address: SocketAddr::new(metrics.bind_address.ip(), 0),
            ..metrics
        }),
        ..Options::default()
    };
    let manager = Manager::builder(env.config())
        .options(options)
        .build()
        .await
        .unwrap();
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (manager, stop) = (manager.clone(), stop.clone());
        async move { manager.start(stop).await }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while manager.health_probe_address().is_none() || manager.metrics_address().is_none() {
        assert!(tokio::time::Instant::now() < deadline, "servers not bound");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let probe_addr = manager.health_probe_address().unwrap();
    let metrics_addr = manager.metrics_address().unwrap();
    assert!(probe_addr.ip().is_loopback(), "{probe_addr}");
    assert!(metrics_addr.ip().is_loopback(), "{metrics_addr}");
    let healthz = exchange(probe_addr, b"GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n").await;
    assert_eq!(status(&healthz), 200);

    stop.cancel();
    task.await.unwrap().unwrap();
}

/// A webhook server on loopback with a fresh CA; returns its address and the CA.
async fn webhook_server() -> (SocketAddr, String, CancellationToken) {
    let certs = GeneratedCertificates::generate(&["127.0.0.1", "localhost"]).unwrap();
    let server = Arc::new(
        WebhookServer::bind(WebhookServerOptions {
            bind_address: SocketAddr::from(([127, 0, 0, 1], 0)),
            cert: certs.cert_source(),
            ..WebhookServerOptions::default()
        })
        .await
        .unwrap(),
    );
    let stop = CancellationToken::new();
    tokio::spawn({
        let (server, stop) = (server.clone(), stop.clone());
        async move { server.run(stop).await }
    });
    (server.local_addr(), certs.ca_pem, stop)
}

#[tokio::test]
async fn webhook_server_refuses_plain_http() {
    let (addr, _, stop) = webhook_server().await;
    let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#;
    let mut request = format!(
        "POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    let response = exchange(addr, &request).await;
    // Go's answer to a plain request on a TLS port, then the connection is closed: no
    // admission decision is ever made in the clear.
    assert_eq!(status(&response), 400);
    let text = String::from_utf8_lossy(&response);
    assert!(
        text.contains("Client sent an HTTP request to an HTTPS server."),
        "{text}"
    );
    assert!(!text.contains("AdmissionReview"), "{text}");
    stop.cancel();
}

/// A TLS handshake limited to `version`, then a request; returns the negotiated version.
async fn handshake(
    addr: SocketAddr,
    ca_pem: &str,
    version: &'static SupportedProtocolVersion,
) -> ProtocolVersion {
    let mut roots = RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_protocol_versions(&[version])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("handshake");
    let negotiated = tls.get_ref().1.protocol_version().unwrap();
    tls.write_all(b"GET /no-such-webhook HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = Vec::new();
    let _ = tls.read_to_end(&mut response).await;
    assert_eq!(status(&response), 404, "served over {negotiated:?}");
    negotiated
}

/// A raw ClientHello offering only `version` (e.g. 0x0302 for TLS 1.1), which rustls cannot
/// send: it offers nothing below TLS 1.2.
fn legacy_client_hello(version: u16) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&version.to_be_bytes());
    body.extend_from_slice(&[7u8; 32]); // random
    body.push(0); // no session id
    // TLS_RSA_WITH_AES_128_CBC_SHA, TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA.
    body.extend_from_slice(&[0x00, 0x04, 0x00, 0x2f, 0xc0, 0x09]);
    body.extend_from_slice(&[0x01, 0x00]); // null compression
    body.extend_from_slice(&[0x00, 0x00]); // no extensions
    let mut handshake = vec![0x01, 0x00];
    handshake.extend_from_slice(&u16::try_from(body.len()).unwrap().to_be_bytes());
    handshake.extend_from_slice(&body);
    let mut record = vec![0x16, 0x03, 0x01];
    record.extend_from_slice(&u16::try_from(handshake.len()).unwrap().to_be_bytes());
    record.extend_from_slice(&handshake);
    record
}

#[tokio::test]
async fn webhook_server_speaks_tls_1_2_and_1_3_and_nothing_older() {
    let (addr, ca_pem, stop) = webhook_server().await;
    assert_eq!(
        handshake(addr, &ca_pem, &rustls::version::TLS13).await,
        ProtocolVersion::TLSv1_3
    );
    assert_eq!(
        handshake(addr, &ca_pem, &rustls::version::TLS12).await,
        ProtocolVersion::TLSv1_2
    );
    // SSL 3.0, TLS 1.0 and TLS 1.1 get a fatal alert, never a ServerHello.
    for version in [0x0300u16, 0x0301, 0x0302] {
        let answer = exchange(addr, &legacy_client_hello(version)).await;
        assert!(
            answer.first() == Some(&0x15),
            "version {version:#06x}: expected an alert record, got {answer:02x?}"
        );
        // Fatal (2), protocol_version (70) or handshake_failure (40).
        assert_eq!(answer.get(5), Some(&2), "{answer:02x?}");
        assert!(
            matches!(answer.get(6), Some(70 | 40)),
            "version {version:#06x}: expected a fatal handshake alert, got {answer:02x?}"
        );
    }
    stop.cancel();
}

#[tokio::test]
async fn testenv_listens_on_loopback_and_enforces_its_token() {
    let open = TestEnv::start().await.unwrap();
    let addr: SocketAddr = open
        .base_url()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    assert!(addr.ip().is_loopback(), "{addr}");
    drop(open);

    let env = TestEnv::builder().token("s3cret").start().await.unwrap();
    let addr: SocketAddr = env
        .base_url()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    assert!(addr.ip().is_loopback(), "{addr}");
    let get = |auth: &str| {
        format!("GET /api/v1/namespaces HTTP/1.0\r\nHost: x\r\n{auth}\r\n").into_bytes()
    };
    assert_eq!(status(&exchange(addr, &get("")).await), 401);
    assert_eq!(
        status(&exchange(addr, &get("Authorization: Bearer wrong\r\n")).await),
        401
    );
    assert_eq!(
        status(&exchange(addr, &get("Authorization: Basic czNjcmV0\r\n")).await),
        401
    );
    assert_eq!(
        status(&exchange(addr, &get("Authorization: Bearer s3cret\r\n")).await),
        200
    );
    // The client the env hands out carries the token.
    let namespaces: kube_client::Api<k8s_openapi::api::core::v1::Namespace> =
        kube_client::Api::all(env.client());
    assert!(
        !namespaces
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}
