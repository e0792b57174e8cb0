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
use crate::{Handler, SHUTDOWN_GRACE, Timeouts};

/// The accept loop's first back-off after an accept error (Go's net/http: 5 ms).
pub(crate) const ACCEPT_BACKOFF_FIRST: Duration = Duration::from_millis(5);

/// The accept loop's longest back-off (Go's net/http: 1 s).
pub(crate) const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// A bound socket that serves HTTP once: [`serve`](Self::serve) for plain HTTP,
/// [`serve_tls`](Self::serve_tls) for HTTPS.
pub struct Listener {
    name: &'static str,
    local_addr: SocketAddr,
    socket: Mutex<Option<TcpListener>>,
    serving: Serving,
    timeouts: Timeouts,
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listener")
            .field("name", &self.name)
            .field("local_addr", &self.local_addr)
            .field("serving", &self.serving.is_serving())
            .field("timeouts", &self.timeouts)
            .finish_non_exhaustive()
    }
}

impl Listener {
    /// Binds `addr` for the server called `name` (used in logs: "serving `<name>`"), with
    /// the default [`Timeouts`].
    pub async fn bind(name: &'static str, addr: SocketAddr) -> io::Result<Self> {
        let socket = TcpListener::bind(addr).await?;
        let local_addr = socket.local_addr()?;
        Ok(Self {
            name,
            local_addr,
            socket: Mutex::new(Some(socket)),
            serving: Serving::default(),
            timeouts: Timeouts::default(),
        })
    }

    /// Serves with `timeouts` instead of the defaults (32 s to send headers or finish a TLS
    /// handshake, 90 s idle, as controller-runtime's and kube-apiserver's servers).
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// The timeouts this listener serves with.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
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
        let timeouts = self.timeouts;
        tracing::info!(addr = %self.local_addr, "serving {}", self.name);
        accept_loop(self.name, &self.serving, socket, &stop, |stream| {
            serve_connection(stream, handler.clone(), stop.clone(), timeouts)
        })
        .await;
        Ok(())
    }

    /// Serves HTTPS with `tls` (its protocol versions and ALPN as configured) like
    /// [`serve`](Self::serve). A client that does not start a TLS handshake gets a plain-HTTP
    /// `400` and the connection is closed; a client must start and finish its handshake
    /// within [`Timeouts::tls_handshake`]; a connection still handshaking when `stop` fires
    /// is dropped.
    pub async fn serve_tls(
        &self,
        tls: Arc<ServerConfig>,
        handler: Handler,
        stop: CancellationToken,
    ) -> Result<(), AlreadyServed> {
        let socket = self.take()?;
        let acceptor = TlsAcceptor::from(tls);
        let timeouts = self.timeouts;
        tracing::info!(addr = %self.local_addr, "serving {} over HTTPS", self.name);
        accept_loop(self.name, &self.serving, socket, &stop, |stream| {
            serve_tls_connection(
                stream,
                acceptor.clone(),
                handler.clone(),
                stop.clone(),
                timeouts,
            )
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
}

/// A source of connections: the listener's socket, or a scripted one in tests.
pub(crate) trait Accept {
    /// One accepted connection.
    type Stream;

    /// The next connection, or why accepting failed.
    fn accept(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send;
}

impl Accept for TcpListener {
    type Stream = TcpStream;

    async fn accept(&self) -> io::Result<TcpStream> {
        TcpListener::accept(self)
            .await
            .map(|(stream, _peer)| stream)
    }
}

/// Accepts until `stop` fires, one task per connection, backing off after accept errors
/// ([`AcceptBackoff`]); then stops accepting (the socket closes) and waits up to
/// [`SHUTDOWN_GRACE`] for the connections to finish.
pub(crate) async fn accept_loop<A, F, Fut>(
    name: &'static str,
    serving: &Serving,
    socket: A,
    stop: &CancellationToken,
    connection: F,
) where
    A: Accept,
    F: Fn(A::Stream) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let tracker = TaskTracker::new();
    let mut backoff = AcceptBackoff::default();
    serving.set(true);
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = socket.accept() => accepted,
        };
        match accepted {
            Ok(stream) => {
                backoff.reset();
                tracker.spawn(connection(stream));
            }
            Err(err) => {
                // Out of file descriptors (EMFILE, ENFILE) and the like: accepting again at
                // once would fail again at once, so wait, longer each time.
                let delay = backoff.next_delay();
                tracing::warn!(server = name, error = %err, retry_in = ?delay, "accepting a connection failed");
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(delay) => {}
                }
            }
        }
    }
    serving.set(false);
    drop(socket);
    tracker.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            server = name,
            "connections still open after the shutdown grace period; dropping them"
        );
    }
}

/// How long the accept loop waits after consecutive accept errors: Go's net/http's
/// `tempDelay`, [`ACCEPT_BACKOFF_FIRST`] (5 ms) doubling up to [`ACCEPT_BACKOFF_MAX`] (1 s),
/// back to the start after a successful accept.
#[derive(Debug, Clone, Default)]
pub(crate) struct AcceptBackoff {
    last: Option<Duration>,
}

impl AcceptBackoff {
    /// The wait after one more accept error.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let delay = match self.last {
            None => ACCEPT_BACKOFF_FIRST,
            Some(last) => last.saturating_mul(2).min(ACCEPT_BACKOFF_MAX),
        };
        self.last = Some(delay);
        delay
    }

    /// An accept succeeded: the next error waits [`ACCEPT_BACKOFF_FIRST`] again.
    pub(crate) fn reset(&mut self) {
        self.last = None;
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
