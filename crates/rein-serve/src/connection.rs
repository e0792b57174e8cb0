//! One connection: HTTP/1.1 or HTTP/2 over a plain or TLS stream, stopped gracefully, closed
//! when the client is too slow to send a request or idles too long; the TLS side peeks at
//! the first byte to refuse plain HTTP and bounds the handshake.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::Request;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;

use crate::{Body, Handler, SHUTDOWN_GRACE, Timeouts};

/// The first byte of a TLS handshake record.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// What a plain-HTTP client of a TLS listener gets (Go's net/http says the same).
const PLAIN_HTTP_ANSWER: &[u8] = b"HTTP/1.0 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// Serves HTTP/1.1 or HTTP/2 on one connection until the peer closes it, `stop` fires (then
/// gracefully: the request in flight completes, idle keep-alives close), or the client runs
/// out of time: no first request within `timeouts.header_read` (the connection is dropped),
/// an HTTP/1.1 request's headers not in within it (hyper closes the connection), or no
/// request in flight for `timeouts.idle` (closed gracefully).
pub(crate) async fn serve_connection<I>(
    io: I,
    handler: Handler,
    stop: CancellationToken,
    timeouts: Timeouts,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Activity::new();
    let mut load = activity.subscribe();
    let service = service_fn(move |req: Request<Incoming>| {
        let handler = handler.clone();
        // Counted from the moment the headers are in until hyper drops the response body
        // (written, or the client went away).
        let in_flight = activity.begin();
        async move {
            let response = handler(req).await;
            Ok::<_, Infallible>(response.map(|body| Tracked {
                body,
                _in_flight: in_flight,
            }))
        }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.header_read);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        _ = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
        expiry = expired(&mut load, timeouts) => {
            match expiry {
                Expiry::NoRequest => {
                    tracing::debug!("no request within the header-read timeout; closing the connection");
                    return;
                }
                Expiry::Idle => {
                    tracing::debug!("connection idle for the idle timeout; closing it");
                    conn.as_mut().graceful_shutdown();
                    // A client that will not finish the goodbye (an HTTP/2 peer ignoring the
                    // GOAWAY) is dropped after the grace period.
                    match tokio::time::timeout(SHUTDOWN_GRACE, conn).await {
                        Ok(result) => result,
                        Err(_) => return,
                    }
                }
            }
        }
    };
    if let Err(err) = result {
        tracing::debug!(error = %err, "connection ended with an error");
    }
}

/// Refuses plain HTTP with a 400, otherwise completes the TLS handshake (within
/// `timeouts.tls_handshake`) and serves HTTP. A connection still handshaking when the server
/// stops is dropped.
pub(crate) async fn serve_tls_connection(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    handler: Handler,
    stop: CancellationToken,
    timeouts: Timeouts,
) {
    let handshake = tokio::time::timeout(timeouts.tls_handshake, handshake(stream, acceptor));
    let tls = tokio::select! {
        _ = stop.cancelled() => return,
        tls = handshake => match tls {
            Ok(tls) => tls,
            Err(_) => {
                tracing::debug!("TLS handshake timed out");
                None
            }
        },
    };
    if let Some(tls) = tls {
        serve_connection(tls, handler, stop, timeouts).await;
    }
}

/// Peeks at the first byte (a TLS record or not) and runs the handshake; the caller bounds
/// the whole.
async fn handshake(mut stream: TcpStream, acceptor: TlsAcceptor) -> Option<TlsStream<TcpStream>> {
    let mut first = [0u8; 1];
    match stream.peek(&mut first).await {
        Ok(1) if first[0] == TLS_HANDSHAKE_RECORD => {}
        Ok(1) => {
            tracing::debug!("refusing a plain-HTTP connection to an HTTPS server");
            let _ = stream.write_all(PLAIN_HTTP_ANSWER).await;
            let _ = stream.shutdown().await;
            return None;
        }
        _ => return None,
    }
    match acceptor.accept(stream).await {
        Ok(tls) => Some(tls),
        Err(err) => {
            tracing::debug!(error = %err, "TLS handshake failed");
            None
        }
    }
}

/// Why a connection ran out of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expiry {
    /// No request started within the header-read timeout of the connection's start.
    NoRequest,
    /// No request in flight for the idle timeout.
    Idle,
}

/// Completes when the connection has run out of time: no request started within
/// `timeouts.header_read` of its start, or none in flight for `timeouts.idle`. Never
/// completes while a request is in flight.
async fn expired(load: &mut watch::Receiver<Load>, timeouts: Timeouts) -> Expiry {
    let opened = Instant::now();
    loop {
        let now = *load.borrow_and_update();
        let deadline = if now.in_flight > 0 {
            None
        } else if !now.started {
            let no_request = opened + timeouts.header_read;
            let idle = now.idle_since + timeouts.idle;
            Some(if no_request <= idle {
                (no_request, Expiry::NoRequest)
            } else {
                (idle, Expiry::Idle)
            })
        } else {
            Some((now.idle_since + timeouts.idle, Expiry::Idle))
        };
        let changed = async {
            if load.changed().await.is_err() {
                // The service (and so the connection) is gone; the caller has finished.
                std::future::pending::<()>().await;
            }
        };
        match deadline {
            None => changed.await,
            Some((at, expiry)) => tokio::select! {
                _ = tokio::time::sleep_until(at) => return expiry,
                _ = changed => {}
            },
        }
    }
}

/// A connection's requests: how many are in flight, whether one ever started, and since
/// when none has been in flight.
#[derive(Debug, Clone, Copy)]
struct Load {
    in_flight: usize,
    started: bool,
    idle_since: Instant,
}

/// Tracks a connection's [`Load`]; the service holds it.
#[derive(Debug, Clone)]
struct Activity(Arc<watch::Sender<Load>>);

impl Activity {
    fn new() -> Self {
        let (tx, _) = watch::channel(Load {
            in_flight: 0,
            started: false,
            idle_since: Instant::now(),
        });
        Self(Arc::new(tx))
    }

    fn subscribe(&self) -> watch::Receiver<Load> {
        self.0.subscribe()
    }

    /// One more request in flight, until the guard drops.
    fn begin(&self) -> InFlight {
        self.0.send_modify(|load| {
            load.in_flight += 1;
            load.started = true;
        });
        InFlight(self.clone())
    }
}

/// A request in flight; dropping it ends the request.
#[derive(Debug)]
struct InFlight(Activity);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.0.send_modify(|load| {
            load.in_flight = load.in_flight.saturating_sub(1);
            if load.in_flight == 0 {
                load.idle_since = Instant::now();
            }
        });
    }
}

/// A response body that keeps its request in flight until hyper is done with it.
#[derive(Debug)]
struct Tracked {
    body: Body,
    /// Held for its `Drop`.
    _in_flight: InFlight,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
