//! Timeouts and accept back-off of rein-testenv's own server, and watch churn: hostile clients
//! over real connections — headers sent byte by byte, nothing sent at all (plain or TLS), idle
//! keep-alives (HTTP/1.1 and HTTP/2) — are cut off after the configured timeouts while a
//! connection carrying a quiet watch stays open; hundreds of watches opened and dropped leave
//! nothing behind in the server. Each test checks the server goes on serving. (The accept
//! loop's back-off is unit-tested under the paused clock in `src/server/conn.rs`.)
//!
//! The server runs on its own runtime thread, so the timeouts are short real-time ones and
//! each wait for the server is bounded by [`CLOSED_WITHIN`].

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::core::v1::PodTemplate;
use kube_client::Api;
use kube_client::api::PostParams;
use rein_testenv::TestEnv;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// Timeouts short enough for a test; `LONG` for the ones a test does not exercise.
const SHORT: Duration = Duration::from_millis(300);
const LONG: Duration = Duration::from_secs(60);

/// How long a test waits for the server to close a connection it must close after `SHORT`
/// (before the fix: never).
const CLOSED_WITHIN: Duration = Duration::from_secs(10);

/// PodTemplates: a resource nothing in the server writes, so a watch on it sees no event
/// unless the test makes one.
const WATCH: &str = "/api/v1/namespaces/default/podtemplates?watch=true";

/// A server with these header-read, idle and TLS-handshake timeouts.
async fn start(
    header_read: Duration,
    idle: Duration,
    tls_handshake: Duration,
    tls: bool,
) -> TestEnv {
    TestEnv::builder()
        .header_read_timeout(header_read)
        .idle_timeout(idle)
        .tls_handshake_timeout(tls_handshake)
        .tls(tls)
        .start()
        .await
        .expect("starts")
}

/// The server's `host:port`.
fn addr(env: &TestEnv) -> String {
    let url = env.base_url();
    let rest = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    rest.trim_end_matches('/').to_string()
}

async fn connect(env: &TestEnv) -> TcpStream {
    TcpStream::connect(addr(env)).await.expect("connects")
}

/// The server answers `/readyz` (through the env's own client, plain or TLS).
async fn still_serves(env: &TestEnv) {
    let ready = crate::http_support::send(&env.client(), "GET", "/readyz", &[], Vec::new()).await;
    assert_eq!(ready.code, 200, "{}", ready.text());
}

/// Reads until the server closes the connection (EOF or a reset), failing the test if it
/// stays open for [`CLOSED_WITHIN`]; what was read.
async fn closed_by_server(mut conn: impl AsyncRead + Unpin) -> String {
    let read = async {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => return seen,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    };
    let seen = tokio::time::timeout(CLOSED_WITHIN, read)
        .await
        .expect("the server must close the connection");
    String::from_utf8_lossy(&seen).into_owned()
}

/// Writes `bytes` one at a time every 50 ms and then one `a` every 50 ms, forever — headers
/// (or a handshake) that never end — until the server closes the connection.
fn trickle(mut write: tokio::net::tcp::OwnedWriteHalf, bytes: &'static [u8]) -> JoinHandle<()> {
    tokio::spawn(async move {
        for byte in bytes.iter().chain(std::iter::repeat(&b'a')) {
            if write.write_all(&[*byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
}

/// Reads from `conn` into `seen` until `done(seen)`, within [`CLOSED_WITHIN`]; fails if the
/// connection ends first.
async fn read_until(
    conn: &mut (impl AsyncRead + Unpin),
    seen: &mut Vec<u8>,
    done: impl Fn(&[u8]) -> bool,
) {
    let read = async {
        let mut buf = [0u8; 4096];
        while !done(seen) {
            let n = conn.read(&mut buf).await.expect("reads");
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(seen));
            seen.extend_from_slice(&buf[..n]);
        }
    };
    tokio::time::timeout(CLOSED_WITHIN, read)
        .await
        .unwrap_or_else(|_| panic!("not seen in time: {}", String::from_utf8_lossy(seen)));
}

fn has_head(seen: &[u8]) -> bool {
    seen.windows(4).any(|w| w == b"\r\n\r\n")
}

fn contains(seen: &[u8], needle: &str) -> bool {
    seen.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Opens a raw HTTP/1.1 watch of `path` and reads its response head (by then the server has
/// registered the watch).
async fn raw_watch(env: &TestEnv, path: &str) -> (TcpStream, Vec<u8>) {
    let mut conn = connect(env).await;
    conn.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .expect("writes");
    let mut seen = Vec::new();
    read_until(&mut conn, &mut seen, has_head).await;
    assert!(
        seen.starts_with(b"HTTP/1.1 200 OK"),
        "{}",
        String::from_utf8_lossy(&seen)
    );
    (conn, seen)
}

async fn create_template(env: &TestEnv, name: &str) {
    let api: Api<PodTemplate> = Api::namespaced(env.client(), "default");
    let template: PodTemplate = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    }))
    .expect("a PodTemplate");
    api.create(&PostParams::default(), &template)
        .await
        .expect("creates");
}

/// An HTTP/2 (prior knowledge) connection to the server: its sender and the connection task,
/// which ends when the server closes the connection.
async fn h2(
    env: &TestEnv,
) -> (
    hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
    JoinHandle<Result<(), hyper::Error>>,
) {
    let tcp = connect(env).await;
    let (sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .expect("HTTP/2 handshake");
    (sender, tokio::spawn(conn))
}

fn get(uri: String) -> hyper::Request<Empty<Bytes>> {
    hyper::Request::get(uri)
        .body(Empty::<Bytes>::new())
        .expect("request")
}

#[tokio::test]
async fn headers_sent_byte_by_byte_are_cut_off_after_the_header_read_timeout() {
    let env = start(SHORT, LONG, LONG, false).await;
    let (read, write) = connect(&env).await.into_split();
    let writer = trickle(write, b"GET /readyz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    let answer = closed_by_server(read).await;
    assert!(!answer.contains("200 OK"), "{answer}");
    writer.await.expect("the writer ends");

    // On a kept-alive connection, the next request's headers are timed too.
    let (mut read, mut write) = connect(&env).await.into_split();
    write
        .write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("writes");
    let mut seen = Vec::new();
    read_until(&mut read, &mut seen, |s| has_head(s) && s.ends_with(b"ok")).await;
    assert!(
        seen.starts_with(b"HTTP/1.1 200 OK"),
        "{}",
        String::from_utf8_lossy(&seen)
    );
    let writer = trickle(write, b"GET /readyz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    let answer = closed_by_server(read).await;
    assert!(!answer.contains("200 OK"), "{answer}");
    writer.await.expect("the writer ends");
    still_serves(&env).await;
}

#[tokio::test]
async fn a_client_that_sends_nothing_is_closed_after_the_header_read_timeout() {
    let env = start(SHORT, LONG, LONG, false).await;
    assert_eq!(closed_by_server(connect(&env).await).await, "");
    // Half an HTTP/2 preface, then nothing: still undecided between HTTP/1.1 and HTTP/2.
    let mut half = connect(&env).await;
    half.write_all(b"PRI * HTTP/2.0").await.expect("writes");
    assert_eq!(closed_by_server(half).await, "");
    still_serves(&env).await;
}

#[tokio::test]
async fn an_idle_http1_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let env = start(LONG, SHORT, LONG, false).await;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(connect(&env).await))
            .await
            .expect("handshake");
    let conn = tokio::spawn(conn);
    // Kept alive between requests, and not cut off while a request (a watch that ends after
    // a second) outlasts the idle timeout.
    for path in [
        "/readyz",
        "/api/v1/namespaces/default/podtemplates?watch=true&timeoutSeconds=1",
        "/readyz",
    ] {
        let request = hyper::Request::get(path)
            .header("host", "x")
            .body(Empty::<Bytes>::new())
            .expect("request");
        let response = sender.send_request(request).await.expect("answered");
        assert_eq!(response.status(), 200);
        response.into_body().collect().await.expect("the body");
    }
    tokio::time::timeout(CLOSED_WITHIN, conn)
        .await
        .expect("the server must close the idle connection")
        .expect("the connection task")
        .expect("closed cleanly");
    still_serves(&env).await;
}

#[tokio::test]
async fn an_idle_http2_connection_is_closed_after_the_idle_timeout() {
    let env = start(LONG, SHORT, LONG, false).await;
    let (mut sender, conn) = h2(&env).await;
    let base = env.base_url();
    for path in [
        "/readyz",
        "/api/v1/namespaces/default/podtemplates?watch=true&timeoutSeconds=1",
    ] {
        let response = sender
            .send_request(get(format!("{base}{path}")))
            .await
            .expect("answered");
        assert_eq!(response.status(), 200);
        assert_eq!(response.version(), http::Version::HTTP_2);
        response.into_body().collect().await.expect("the body");
    }
    tokio::time::timeout(CLOSED_WITHIN, conn)
        .await
        .expect("the server must close the idle HTTP/2 connection")
        .expect("the connection task")
        .expect("closed cleanly");
    still_serves(&env).await;
}

#[tokio::test]
async fn a_connection_carrying_a_quiet_watch_is_not_closed_as_idle() {
    // Both timeouts short: neither may close a connection whose watch is open.
    let env = start(SHORT, SHORT, LONG, false).await;
    let (mut conn, mut seen) = raw_watch(&env, &format!("{WATCH}&timeoutSeconds=3")).await;
    let (mut sender, h2_conn) = h2(&env).await;
    let response = sender
        .send_request(get(format!("{}{WATCH}", env.base_url())))
        .await
        .expect("answered");
    assert_eq!(response.status(), 200);
    let mut h2_body = response.into_body();

    // Five idle timeouts without a byte on either connection.
    tokio::time::sleep(SHORT * 5).await;
    create_template(&env, "late").await;
    read_until(&mut conn, &mut seen, |s| {
        contains(s, "\"ADDED\"") && contains(s, "\"late\"")
    })
    .await;
    let event = tokio::time::timeout(CLOSED_WITHIN, h2_body.frame())
        .await
        .expect("the HTTP/2 watch gets the event")
        .expect("a frame")
        .expect("data");
    let event = event.into_data().expect("a data frame");
    let event = String::from_utf8_lossy(&event);
    assert!(
        event.contains("\"ADDED\"") && event.contains("\"late\""),
        "{event}"
    );

    // Once the watch ends (`timeoutSeconds`), the connection is idle and closed.
    let rest = closed_by_server(conn).await;
    assert!(
        rest.ends_with("0\r\n\r\n"),
        "the watch ends cleanly first: {rest}"
    );
    drop(h2_body);
    tokio::time::timeout(CLOSED_WITHIN, h2_conn)
        .await
        .expect("the server must close the HTTP/2 connection once its watch is gone")
        .expect("the connection task")
        .expect("closed cleanly");
    still_serves(&env).await;
}

/// A rustls client trusting the server's CA.
fn tls_client(env: &TestEnv) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for der in env.config().root_cert.expect("a TLS server's CA") {
        roots.add(der.into()).expect("the CA");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

#[tokio::test]
async fn a_tls_client_that_never_finishes_its_handshake_is_closed_after_the_handshake_timeout() {
    let env = start(LONG, LONG, SHORT, true).await;
    // Connects and never sends a ClientHello.
    assert_eq!(closed_by_server(connect(&env).await).await, "");
    // Starts a handshake record (512 bytes announced) and sends it a byte at a time.
    let (read, write) = connect(&env).await.into_split();
    let writer = trickle(write, &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]);
    assert_eq!(closed_by_server(read).await, "");
    writer.await.expect("the writer ends");
    still_serves(&env).await;
}

#[tokio::test]
async fn a_tls_client_that_sends_no_request_after_its_handshake_is_closed() {
    let env = start(SHORT, LONG, LONG, true).await;
    let ip: std::net::IpAddr = addr(&env)
        .rsplit_once(':')
        .and_then(|(ip, _)| ip.parse().ok())
        .expect("an IP address");
    let tls = tls_client(&env)
        .connect(ip.into(), connect(&env).await)
        .await
        .expect("the TLS handshake");
    assert_eq!(closed_by_server(tls).await, "");
    still_serves(&env).await;
}

/// Polls [`TestEnv::open_watches`] until it is `want`, failing after [`CLOSED_WITHIN`].
async fn open_watches_reach(env: &TestEnv, want: usize, what: &str) {
    let poll = async {
        while env.open_watches() != want {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    if tokio::time::timeout(CLOSED_WITHIN, poll).await.is_err() {
        panic!("{what}: {} watches held, want {want}", env.open_watches());
    }
}

/// 500 concurrent watches of a resource that gets no writes, opened and dropped, twice, left
/// each one's store subscription behind (~1.4 MB a cycle); so did HTTP/2 watch streams reset
/// on a connection that stays open. Now the server lets go of each as its client goes, and
/// goes on serving watches and requests.
#[tokio::test]
async fn dropped_watches_leave_no_state_behind() {
    let env = TestEnv::start().await.expect("starts");
    // The server's own controllers watch too (the ClusterRole aggregation controller).
    let baseline = env.open_watches();
    for cycle in 0..2 {
        let mut watches = Vec::new();
        for _ in 0..5 {
            let batch = futures::future::join_all((0..100).map(|_| raw_watch(&env, WATCH))).await;
            watches.extend(batch);
        }
        assert_eq!(
            env.open_watches(),
            baseline + 500,
            "cycle {cycle}: all open"
        );
        drop(watches);
        open_watches_reach(
            &env,
            baseline,
            &format!("cycle {cycle}: HTTP/1.1 watches dropped"),
        )
        .await;
    }

    // 100 HTTP/2 watch streams on one connection, reset by the client; the connection stays.
    let (mut sender, _h2_conn) = h2(&env).await;
    let uri = format!("{}{WATCH}", env.base_url());
    let mut bodies = Vec::new();
    for _ in 0..100 {
        let response = sender
            .send_request(get(uri.clone()))
            .await
            .expect("answered");
        assert_eq!(response.status(), 200);
        bodies.push(response.into_body());
    }
    assert_eq!(env.open_watches(), baseline + 100);
    drop(bodies);
    open_watches_reach(&env, baseline, "HTTP/2 watch streams reset").await;
    let response = sender
        .send_request(get(format!("{}/readyz", env.base_url())))
        .await
        .expect("the HTTP/2 connection still serves");
    assert_eq!(response.status(), 200);

    // A new watch still gets events.
    let (mut conn, mut seen) = raw_watch(&env, WATCH).await;
    create_template(&env, "after-churn").await;
    read_until(&mut conn, &mut seen, |s| contains(s, "\"after-churn\"")).await;
    still_serves(&env).await;
}
