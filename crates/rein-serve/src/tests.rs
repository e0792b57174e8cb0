//! Unit tests of the listener: served once, the serving flag, plain HTTP refused on TLS;
//! hostile clients over real connections — headers sent byte by byte, nothing sent at all
//! (plain or TLS), idle keep-alives (HTTP/1.1 and HTTP/2) — cut off after the configured
//! timeouts while the server keeps serving; the accept loop's back-off under the paused clock.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::StatusCode;
use hyper_util::rt::{TokioExecutor, TokioIo};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::listener::{
    ACCEPT_BACKOFF_FIRST, ACCEPT_BACKOFF_MAX, Accept, AcceptBackoff, Serving, accept_loop,
};
use crate::{Handler, Listener, Timeouts, text};

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

/// Timeouts short enough for a test; `long` for the ones a test does not exercise.
const SHORT: Duration = Duration::from_millis(300);
const LONG: Duration = Duration::from_secs(60);

/// How long a test waits for the server to close a connection it must close after `SHORT`:
/// well under the pre-fix behaviour (never, or ten seconds for a silent TLS client).
const CLOSED_WITHIN: Duration = Duration::from_secs(5);

/// `hello`, or after a second for `/slow` (a request in flight longer than `SHORT`).
fn hello_or_slow() -> Handler {
    Arc::new(|req| {
        Box::pin(async move {
            if req.uri().path() == "/slow" {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            text(StatusCode::OK, "hello")
        })
    })
}

/// A listener on loopback serving `hello_or_slow` with `timeouts`, plain or with `tls`.
async fn start(
    timeouts: Timeouts,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> (Arc<Listener>, CancellationToken, JoinHandle<()>) {
    let listener = Arc::new(
        Listener::bind("test", "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap()
            .with_timeouts(timeouts),
    );
    assert_eq!(listener.timeouts(), timeouts);
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (listener, stop) = (listener.clone(), stop.clone());
        async move {
            match tls {
                Some(tls) => listener.serve_tls(tls, hello_or_slow(), stop).await,
                None => listener.serve(hello_or_slow(), stop).await,
            }
            .unwrap();
        }
    });
    (listener, stop, task)
}

/// Reads until the server closes the connection (EOF or a reset), failing the test if it
/// stays open for `CLOSED_WITHIN`; what was read.
async fn closed_by_server(mut conn: impl AsyncRead + Unpin) -> String {
    let read = async {
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
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
/// that never end — until the server closes the connection.
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

/// Reads one `hello` response of a kept-alive HTTP/1.1 connection.
async fn read_hello(conn: &mut (impl AsyncRead + Unpin)) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !(seen.windows(4).any(|w| w == b"\r\n\r\n") && seen.ends_with(b"hello")) {
        let n = conn.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// `GET path` over HTTP/1.1 on a new connection (plain, or TLS trusting `ca`): the status.
async fn get(listener: &Listener, path: &str, ca: Option<&rcgen::CertifiedKey>) -> StatusCode {
    let tcp = TcpStream::connect(listener.local_addr()).await.unwrap();
    let request = hyper::Request::get(path)
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = match ca {
        None => {
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                .await
                .unwrap();
            tokio::spawn(conn);
            sender.send_request(request).await.unwrap()
        }
        Some(ca) => {
            let tls = tls_client(ca).connect(localhost(), tcp).await.unwrap();
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                .await
                .unwrap();
            tokio::spawn(conn);
            sender.send_request(request).await.unwrap()
        }
    };
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"hello");
    status
}

fn timeouts(header_read: Duration, idle: Duration, tls_handshake: Duration) -> Timeouts {
    Timeouts {
        header_read,
        idle,
        tls_handshake,
    }
}

#[test]
fn the_default_timeouts_are_controller_runtimes() {
    let defaults = Timeouts::default();
    assert_eq!(defaults.header_read, Duration::from_secs(32));
    assert_eq!(defaults.idle, Duration::from_secs(90));
    assert_eq!(defaults.tls_handshake, Duration::from_secs(32));
}

#[tokio::test]
async fn a_client_sending_headers_byte_by_byte_is_cut_off_after_the_header_read_timeout() {
    let (listener, stop, task) = start(timeouts(SHORT, LONG, LONG), None).await;
    let (read, write) = TcpStream::connect(listener.local_addr())
        .await
        .unwrap()
        .into_split();
    let writer = trickle(write, b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    let answer = closed_by_server(read).await;
    assert!(!answer.contains("200 OK"), "{answer}");
    writer.await.unwrap();
    // The server goes on serving.
    assert_eq!(get(&listener, "/", None).await, StatusCode::OK);
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn a_kept_alive_connection_trickling_its_next_request_is_cut_off() {
    // The first request is answered; hyper's header-read timeout (not the idle timeout, a
    // minute here) closes the connection when the next one's headers do not come.
    let (listener, stop, task) = start(timeouts(SHORT, LONG, LONG), None).await;
    let (mut read, mut write) = TcpStream::connect(listener.local_addr())
        .await
        .unwrap()
        .into_split();
    write
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let first = read_hello(&mut read).await;
    assert!(first.starts_with("HTTP/1.1 200 OK"), "{first}");
    let writer = trickle(write, b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    let answer = closed_by_server(read).await;
    assert!(!answer.contains("200 OK"), "{answer}");
    writer.await.unwrap();
    assert_eq!(get(&listener, "/", None).await, StatusCode::OK);
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn a_client_that_sends_nothing_is_closed_after_the_header_read_timeout() {
    let (listener, stop, task) = start(timeouts(SHORT, LONG, LONG), None).await;
    let silent = TcpStream::connect(listener.local_addr()).await.unwrap();
    assert_eq!(closed_by_server(silent).await, "");
    // Half an HTTP/2 preface, then nothing: still undecided between HTTP/1.1 and HTTP/2.
    let mut half = TcpStream::connect(listener.local_addr()).await.unwrap();
    half.write_all(b"PRI * HTTP/2.0").await.unwrap();
    assert_eq!(closed_by_server(half).await, "");
    assert_eq!(get(&listener, "/", None).await, StatusCode::OK);
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn an_idle_http1_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let (listener, stop, task) = start(timeouts(LONG, SHORT, LONG), None).await;
    let tcp = TcpStream::connect(listener.local_addr()).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    for path in ["/", "/slow", "/"] {
        // Kept alive between requests, and not cut off while a request outlasts the idle
        // timeout.
        let request = hyper::Request::get(path)
            .header("host", "x")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        response.into_body().collect().await.unwrap();
    }
    tokio::time::timeout(CLOSED_WITHIN, conn)
        .await
        .expect("the server must close the idle connection")
        .unwrap()
        .unwrap();
    assert_eq!(get(&listener, "/", None).await, StatusCode::OK);
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn an_idle_http2_connection_is_closed_after_the_idle_timeout() {
    let (listener, stop, task) = start(timeouts(LONG, SHORT, LONG), None).await;
    let tcp = TcpStream::connect(listener.local_addr()).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
    let conn = tokio::spawn(conn);
    for path in ["/", "/slow"] {
        let request = hyper::Request::get(format!("http://x{path}"))
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.version(), http::Version::HTTP_2);
        response.into_body().collect().await.unwrap();
    }
    tokio::time::timeout(CLOSED_WITHIN, conn)
        .await
        .expect("the server must close the idle HTTP/2 connection")
        .unwrap()
        .unwrap();
    assert_eq!(get(&listener, "/", None).await, StatusCode::OK);
    stop.cancel();
    task.await.unwrap();
}

/// A self-signed certificate for `localhost` and a server configuration serving it.
fn tls_server() -> (rcgen::CertifiedKey, Arc<rustls::ServerConfig>) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        certified.key_pair.serialize_der(),
    ));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![certified.cert.der().clone()], key)
    .unwrap();
    (certified, Arc::new(config))
}

fn tls_client(ca: &rcgen::CertifiedKey) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.cert.der().clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

fn localhost() -> rustls::pki_types::ServerName<'static> {
    rustls::pki_types::ServerName::try_from("localhost").unwrap()
}

#[tokio::test]
async fn a_tls_client_that_never_finishes_its_handshake_is_closed_after_the_handshake_timeout() {
    let (ca, config) = tls_server();
    let (listener, stop, task) = start(timeouts(LONG, LONG, SHORT), Some(config)).await;
    // Connects and never sends a ClientHello.
    let silent = TcpStream::connect(listener.local_addr()).await.unwrap();
    assert_eq!(closed_by_server(silent).await, "");
    // Starts a handshake record (512 bytes announced) and sends it a byte at a time.
    let (read, write) = TcpStream::connect(listener.local_addr())
        .await
        .unwrap()
        .into_split();
    let writer = trickle(write, &[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]);
    assert_eq!(closed_by_server(read).await, "");
    writer.await.unwrap();
    // The server goes on serving HTTPS.
    assert_eq!(get(&listener, "/", Some(&ca)).await, StatusCode::OK);
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn a_tls_client_that_sends_no_request_after_its_handshake_is_closed() {
    let (ca, config) = tls_server();
    let (listener, stop, task) = start(timeouts(SHORT, LONG, LONG), Some(config)).await;
    let tcp = TcpStream::connect(listener.local_addr()).await.unwrap();
    let tls = tls_client(&ca).connect(localhost(), tcp).await.unwrap();
    assert_eq!(closed_by_server(tls).await, "");
    assert_eq!(get(&listener, "/", Some(&ca)).await, StatusCode::OK);
    stop.cancel();
    task.await.unwrap();
}

#[test]
fn the_accept_backoff_doubles_from_5ms_to_1s_and_starts_over_after_a_success() {
    let mut backoff = AcceptBackoff::default();
    let ms = |n| Duration::from_millis(n);
    let delays: Vec<Duration> = (0..10).map(|_| backoff.next_delay()).collect();
    assert_eq!(
        delays,
        [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000].map(ms)
    );
    assert_eq!(ACCEPT_BACKOFF_FIRST, ms(5));
    assert_eq!(ACCEPT_BACKOFF_MAX, ms(1000));
    backoff.reset();
    assert_eq!(backoff.next_delay(), ms(5));
    assert_eq!(backoff.next_delay(), ms(10));
}

/// An acceptor following a script of results (`Err` as EMFILE), recording when each accept
/// was called; once the script is done it cancels `done` and accepts nothing more.
struct Scripted {
    script: Mutex<VecDeque<bool>>,
    calls: Arc<Mutex<Vec<Instant>>>,
    done: CancellationToken,
}

impl Accept for Scripted {
    type Stream = ();

    fn accept(&self) -> impl Future<Output = io::Result<()>> + Send {
        self.calls.lock().push(Instant::now());
        let next = self.script.lock().pop_front();
        let done = self.done.clone();
        async move {
            match next {
                Some(true) => Ok(()),
                Some(false) => Err(io::Error::from_raw_os_error(24)), // EMFILE
                None => {
                    done.cancel();
                    std::future::pending().await
                }
            }
        }
    }
}

/// Runs the accept loop over `script` (forever failing when `None`) until `stop` fires;
/// the instants of the accept calls.
fn run_scripted(
    script: Option<Vec<bool>>,
    stop: &CancellationToken,
) -> (Arc<Mutex<Vec<Instant>>>, JoinHandle<()>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let script = match script {
        Some(script) => script.into(),
        None => std::iter::repeat_n(false, 10_000).collect(),
    };
    let acceptor = Scripted {
        script: Mutex::new(script),
        calls: calls.clone(),
        done: stop.clone(),
    };
    let stop = stop.clone();
    let task = tokio::spawn(async move {
        accept_loop("test", &Serving::default(), acceptor, &stop, |()| async {}).await;
    });
    (calls, task)
}

#[tokio::test(start_paused = true)]
async fn the_accept_loop_backs_off_after_accept_errors_and_starts_over_after_a_success() {
    let stop = CancellationToken::new();
    let mut script = vec![false; 11];
    script.extend([true, false, false]);
    let (calls, task) = run_scripted(Some(script), &stop);
    task.await.unwrap();
    let calls = calls.lock();
    let gaps: Vec<u64> = calls
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis() as u64)
        .collect();
    assert_eq!(
        gaps,
        [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000, 0, 5, 10]
    );
}

#[tokio::test(start_paused = true)]
async fn the_accept_loop_does_not_spin_on_accept_errors_and_stops_while_backing_off() {
    let stop = CancellationToken::new();
    let (calls, task) = run_scripted(None, &stop);
    tokio::time::sleep(Duration::from_secs(3)).await;
    // At 0, 5, 15, 35, 75, 155, 315, 635, 1275 and 2275 ms; the next would be at 3275.
    assert_eq!(calls.lock().len(), 10);
    // Stopping interrupts the one-second wait.
    stop.cancel();
    tokio::time::timeout(Duration::from_millis(1), task)
        .await
        .expect("the accept loop stops at once")
        .unwrap();
}
