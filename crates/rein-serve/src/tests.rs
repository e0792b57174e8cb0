//! Unit tests of the listener: served once, the serving flag, plain HTTP refused on TLS.

use std::sync::Arc;

use hyper::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::{Handler, Listener, text};

fn hello() -> Handler {
    Arc::new(|_req| Box::pin(async { text(StatusCode::OK, "hello") }))
}

async fn exchange(listener: &Listener, request: &[u8]) -> String {
    let mut conn = TcpStream::connect(listener.local_addr()).await.unwrap();
    conn.write_all(request).await.unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.unwrap();
    answer
}

#[tokio::test]
async fn a_listener_serves_once_and_reports_when_it_serves() {
    let listener = Arc::new(
        Listener::bind("test", "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap(),
    );
    let serving = listener.serving();
    assert!(!serving.is_serving());
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (listener, stop) = (listener.clone(), stop.clone());
        async move { listener.serve(hello(), stop).await }
    });
    let answer = exchange(&listener, b"GET / HTTP/1.0\r\nHost: x\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.0 200 OK"), "{answer}");
    assert!(
        answer.contains("x-content-type-options: nosniff"),
        "{answer}"
    );
    assert!(serving.is_serving());
    stop.cancel();
    task.await.unwrap().unwrap();
    assert!(!serving.is_serving());
    let again = listener.serve(hello(), CancellationToken::new()).await;
    let err = again.expect_err("served twice");
    assert!(err.to_string().contains("already served"), "{err}");
}

#[tokio::test]
async fn a_tls_listener_answers_plain_http_with_a_400() {
    let listener = Arc::new(
        Listener::bind("test", "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap(),
    );
    // No certificate is needed to refuse a client that does not speak TLS.
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_cert_resolver(Arc::new(NoCert));
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (listener, stop) = (listener.clone(), stop.clone());
        async move { listener.serve_tls(Arc::new(config), hello(), stop).await }
    });
    let answer = exchange(&listener, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.0 400 Bad Request"), "{answer}");
    assert!(answer.ends_with("Client sent an HTTP request to an HTTPS server.\n"));
    stop.cancel();
    task.await.unwrap().unwrap();
}

#[derive(Debug)]
struct NoCert;

impl rustls::server::ResolvesServerCert for NoCert {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        None
    }
}
