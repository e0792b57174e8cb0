//! One connection: HTTP/1.1 or HTTP/2 over a plain or TLS stream, stopped gracefully; the TLS
//! side peeks at the first byte to refuse plain HTTP and bounds the handshake.

use std::convert::Infallible;
use std::time::Duration;

use hyper::Request;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;

use crate::Handler;

/// How long a client may take to start and finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The first byte of a TLS handshake record.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// What a plain-HTTP client of a TLS listener gets (Go's net/http says the same).
const PLAIN_HTTP_ANSWER: &[u8] = b"HTTP/1.0 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// Serves HTTP/1.1 or HTTP/2 on one connection until the peer closes it or `stop` fires
/// (then gracefully: the request in flight completes, idle keep-alives close).
pub(crate) async fn serve_connection<I>(io: I, handler: Handler, stop: CancellationToken)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req: Request<Incoming>| {
        let handler = handler.clone();
        async move { Ok::<_, Infallible>(handler(req).await) }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        _ = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(err) = result {
        tracing::debug!(error = %err, "connection ended with an error");
    }
}

/// Refuses plain HTTP with a 400, otherwise completes the TLS handshake and serves HTTP. A
/// connection still handshaking when the server stops is dropped.
pub(crate) async fn serve_tls_connection(
    stream: TcpStream,
    acceptor: TlsAcceptor,
    handler: Handler,
    stop: CancellationToken,
) {
    let tls = tokio::select! {
        _ = stop.cancelled() => return,
        tls = handshake(stream, acceptor) => tls,
    };
    if let Some(tls) = tls {
        serve_connection(tls, handler, stop).await;
    }
}

/// Peeks at the first byte (a TLS record or not) and runs the handshake, each step bounded
/// by [`HANDSHAKE_TIMEOUT`].
async fn handshake(mut stream: TcpStream, acceptor: TlsAcceptor) -> Option<TlsStream<TcpStream>> {
    let mut first = [0u8; 1];
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, stream.peek(&mut first)).await {
        Ok(Ok(1)) if first[0] == TLS_HANDSHAKE_RECORD => {}
        Ok(Ok(1)) => {
            tracing::debug!("refusing a plain-HTTP connection to an HTTPS server");
            let _ = stream.write_all(PLAIN_HTTP_ANSWER).await;
            let _ = stream.shutdown().await;
            return None;
        }
        _ => return None,
    }
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(tls),
        Ok(Err(err)) => {
            tracing::debug!(error = %err, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!("TLS handshake timed out");
            None
        }
    }
}
