//! The small HTTP serving loop rein's probe, metrics and webhook servers share.
//!
//! `rein-serve` sits at the bottom of rein's stack beside `rein-workqueue`: it knows nothing of
//! Kubernetes, probes, metrics or admission, and depends on no rein crate. `rein-webhook` serves
//! admission reviews with it; `rein-manager`'s health-probe and metrics servers serve with it.
//!
//! - [`Listener::bind`] opens the socket at once, so the address is known
//!   ([`Listener::local_addr`], useful with port 0) and bind errors surface before anything
//!   runs.
//! - [`Listener::serve`] (plain HTTP) or [`Listener::serve_tls`] (TLS through rustls; a
//!   plain-HTTP client gets a `400` and the connection is closed) takes the socket — a listener
//!   serves once — and accepts HTTP/1.1 and HTTP/2 connections until the stop token fires, then
//!   lets requests in flight finish for up to [`SHUTDOWN_GRACE`].
//! - A [`Handler`] answers one request; it never fails (errors become responses). [`text`]
//!   builds a plain-text response.
//! - [`Serving`] tells whether the listener is accepting connections (a webhook server's
//!   readiness check).
//! - [`Timeouts`] ([`Listener::with_timeouts`]) bounds what a client may hold open without
//!   sending: the request headers (and the TLS handshake) within 32 s, an idle connection
//!   closed after 90 s — Go's net/http as kube-apiserver and controller-runtime configure it.
//!   When accepting fails (out of file descriptors, say) the accept loop backs off as Go's
//!   does, 5 ms doubling to 1 s, instead of spinning.
//!
//! ```
//! use std::sync::Arc;
//!
//! use hyper::StatusCode;
//! use rein_serve::{Handler, Listener, text};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let listener = Arc::new(Listener::bind("greeting", "127.0.0.1:0".parse()?).await?);
//! let handler: Handler = Arc::new(|req| {
//!     let body = format!("hello from {}\n", req.uri().path());
//!     Box::pin(async move { text(StatusCode::OK, body) })
//! });
//! let stop = CancellationToken::new();
//! let server = tokio::spawn({
//!     let (listener, stop) = (listener.clone(), stop.clone());
//!     async move { listener.serve(handler, stop).await }
//! });
//!
//! let mut conn = tokio::net::TcpStream::connect(listener.local_addr()).await?;
//! conn.write_all(b"GET /there HTTP/1.0\r\nHost: x\r\n\r\n").await?;
//! let mut answer = String::new();
//! conn.read_to_string(&mut answer).await?;
//! assert!(answer.starts_with("HTTP/1.0 200 OK"), "{answer}");
//! assert!(answer.ends_with("hello from /there\n"), "{answer}");
//!
//! stop.cancel();
//! server.await??;
//! // A listener serves once.
//! assert!(listener.serve(Arc::new(|_| Box::pin(async { unreachable!() })), stop).await.is_err());
//! # Ok(()) }
//! ```

mod connection;
mod listener;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

pub use listener::{AlreadyServed, Listener, Serving};

/// The response body every rein server sends: one buffered chunk.
pub type Body = Full<Bytes>;

/// Answers one request. Handlers never fail: errors become responses.
pub type Handler =
    Arc<dyn Fn(Request<Incoming>) -> BoxFuture<'static, Response<Body>> + Send + Sync>;

/// How long a stopping server waits for requests in flight before dropping them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The default [`Timeouts::header_read`]: 32 s, the `ReadHeaderTimeout` kube-apiserver and
/// controller-runtime's servers set.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);

/// The default [`Timeouts::idle`]: 90 s, the `IdleTimeout` kube-apiserver and
/// controller-runtime's servers set.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The default [`Timeouts::tls_handshake`]: 32 s, the header-read timeout, as Go's
/// `http.Server` bounds the TLS handshake by its `ReadHeaderTimeout`.
pub const DEFAULT_TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(32);

/// How long a client may keep a connection open without making progress
/// ([`Listener::with_timeouts`]). The defaults match the `ReadHeaderTimeout` and
/// `IdleTimeout` kube-apiserver and controller-runtime give Go's `http.Server`.
///
/// Each duration should be non-zero: a zero duration times the connection out at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// How long a client may take to send a request's headers; the connection is closed when
    /// it runs out. For a new connection (HTTP/1.1 or HTTP/2) it counts from the accept (after
    /// the TLS handshake, over TLS) until the first request's headers are in. For a kept-alive
    /// HTTP/1.1 connection it counts from the end of the previous response — hyper's
    /// `header_read_timeout` starts when it begins waiting for the next request — so there it
    /// also bounds an idle connection when shorter than [`idle`](Self::idle). Default:
    /// [`DEFAULT_HEADER_READ_TIMEOUT`] (32 s).
    pub header_read: Duration,
    /// How long a connection may stay open with no request in flight (from the end of its
    /// last response) before the server closes it gracefully (HTTP/2: a `GOAWAY`). Default:
    /// [`DEFAULT_IDLE_TIMEOUT`] (90 s).
    pub idle: Duration,
    /// How long a TLS client may take from the accept to the end of its handshake (sending
    /// its first byte included); the connection is dropped when it runs out. Default:
    /// [`DEFAULT_TLS_HANDSHAKE_TIMEOUT`] (32 s).
    pub tls_handshake: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            header_read: DEFAULT_HEADER_READ_TIMEOUT,
            idle: DEFAULT_IDLE_TIMEOUT,
            tls_handshake: DEFAULT_TLS_HANDSHAKE_TIMEOUT,
        }
    }
}

/// A plain-text response (`text/plain; charset=utf-8`, `x-content-type-options: nosniff`).
pub fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(Full::new(body.into()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp.headers_mut().insert(
        "x-content-type-options",
        http::HeaderValue::from_static("nosniff"),
    );
    resp
}
