//! `Listener`: a socket bound at once and served once, plain or over TLS, until a stop token
//! fires; the accept loop and the graceful drain.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rustls::ServerConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::connection::{serve_connection, serve_tls_connection};
use crate::{Handler, SHUTDOWN_GRACE};

/// How long the accept loop backs off after an accept error (e.g. out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A bound socket that serves HTTP once: [`serve`](Self::serve) for plain HTTP,
/// [`serve_tls`](Self::serve_tls) for HTTPS.
pub struct Listener {
    name: &'static str,
    local_addr: SocketAddr,
    socket: Mutex<Option<TcpListener>>,
    serving: Serving,
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listener")
            .field("name", &self.name)
            .field("local_addr", &self.local_addr)
            .field("serving", &self.serving.is_serving())
            .finish_non_exhaustive()
    }
}

impl Listener {
    /// Binds `addr` for the server called `name` (used in logs: "serving `<name>`").
    pub async fn bind(name: &'static str, addr: SocketAddr) -> io::Result<Self> {
        let socket = TcpListener::bind(addr).await?;
        let local_addr = socket.local_addr()?;
        Ok(Self {
            name,
            local_addr,
            socket: Mutex::new(Some(socket)),
            serving: Serving::default(),
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// A handle telling whether this listener is accepting connections.
    pub fn serving(&self) -> Serving {
        self.serving.clone()
    }

    /// Serves plain HTTP/1.1 and HTTP/2 with `handler` until `stop` fires, then lets requests
    /// in flight finish (up to [`SHUTDOWN_GRACE`]). Fails if the listener has served before.
    pub async fn serve(
        &self,
        handler: Handler,
        stop: CancellationToken,
    ) -> Result<(), AlreadyServed> {
        let socket = self.take()?;
        tracing::info!(addr = %self.local_addr, "serving {}", self.name);
        self.accept_loop(socket, &stop, |stream| {
            serve_connection(stream, handler.clone(), stop.clone())
        })
        .await;
        Ok(())
    }

    /// Serves HTTPS with `tls` (its protocol versions and ALPN as configured) like
    /// [`serve`](Self::serve). A client that does not start a TLS handshake gets a plain-HTTP
    /// `400` and the connection is closed; a handshake must start and finish within ten
    /// seconds each; a connection still handshaking when `stop` fires is dropped.
    pub async fn serve_tls(
        &self,
        tls: Arc<ServerConfig>,
        handler: Handler,
        stop: CancellationToken,
    ) -> Result<(), AlreadyServed> {
        let socket = self.take()?;
        let acceptor = TlsAcceptor::from(tls);
        tracing::info!(addr = %self.local_addr, "serving {} over HTTPS", self.name);
        self.accept_loop(socket, &stop, |stream| {
            serve_tls_connection(stream, acceptor.clone(), handler.clone(), stop.clone())
        })
        .await;
        Ok(())
    }

    fn take(&self) -> Result<TcpListener, AlreadyServed> {
        self.socket.lock().take().ok_or(AlreadyServed {
            name: self.name,
            addr: self.local_addr,
        })
    }

    /// Accepts until `stop` fires, one task per connection; then stops accepting (the socket
    /// closes) and waits up to [`SHUTDOWN_GRACE`] for the connections to finish.
    async fn accept_loop<F, Fut>(
        &self,
        socket: TcpListener,
        stop: &CancellationToken,
        connection: F,
    ) where
        F: Fn(TcpStream) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let tracker = TaskTracker::new();
        self.serving.set(true);
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => break,
                accepted = socket.accept() => accepted,
            };
            match accepted {
                Ok((stream, _peer)) => {
                    tracker.spawn(connection(stream));
                }
                Err(err) => {
                    tracing::warn!(server = self.name, error = %err, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
        self.serving.set(false);
        drop(socket);
        tracker.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                server = self.name,
                "connections still open after the shutdown grace period; dropping them"
            );
        }
    }
}

/// Whether a [`Listener`] is accepting connections: true from the start of
/// [`Listener::serve`] (or `serve_tls`) until its stop token fires. A cheap `Clone` handle.
#[derive(Debug, Clone, Default)]
pub struct Serving(Arc<AtomicBool>);

impl Serving {
    /// Whether the listener accepts connections now.
    pub fn is_serving(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    fn set(&self, serving: bool) {
        self.0.store(serving, Ordering::SeqCst);
    }
}

/// [`Listener::serve`] or [`Listener::serve_tls`] was called on a listener that has already
/// served (or is serving).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlreadyServed {
    name: &'static str,
    addr: SocketAddr,
}

impl fmt::Display for AlreadyServed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "serving {} on {}: the listener has already served",
            self.name, self.addr
        )
    }
}

impl std::error::Error for AlreadyServed {}
