//! Connections: the accept loop (backing off after accept errors, as Go's net/http does) and
//! one connection's serving — HTTP/1.1 or HTTP/2 over a plain or TLS stream, closed when the
//! client is too slow to finish its TLS handshake or send a request's headers, or idles too
//! long with no request in flight, as kube-apiserver's `http.Server` closes them.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::Request;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::State;
use super::body::Body;
use crate::auth::PeerUser;

/// The default [`Timeouts::header_read`]: 32 s, kube-apiserver's `ReadHeaderTimeout`.
pub(crate) const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);

/// The default [`Timeouts::idle`]: 90 s, kube-apiserver's `IdleTimeout`.
pub(crate) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The default [`Timeouts::tls_handshake`]: 32 s, as Go's `http.Server` bounds the TLS
/// handshake by its `ReadHeaderTimeout`.
pub(crate) const DEFAULT_TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(32);

/// A timeout longer than this is this long: as good as never, and far from overflowing the
/// clock (`Instant + Duration::MAX` panics, in hyper's header timer too).
const LONGEST_TIMEOUT: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// How long a connection closed for idling may take over its goodbye (an HTTP/2 client
/// ignoring the `GOAWAY`) before it is dropped.
const IDLE_CLOSE_GRACE: Duration = Duration::from_secs(5);

/// The accept loop's first back-off after an accept error (Go's net/http: 5 ms).
pub(crate) const ACCEPT_BACKOFF_FIRST: Duration = Duration::from_millis(5);

/// The accept loop's longest back-off (Go's net/http: 1 s).
pub(crate) const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// How long a client may hold a connection without making progress
/// (`TestEnvBuilder::header_read_timeout`, `idle_timeout`, `tls_handshake_timeout`). A zero
/// duration times the connection out at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timeouts {
    /// How long a client may take to send a request's headers: on a new connection from the
    /// accept (after the TLS handshake, over TLS) until its first request's headers are in; on
    /// a kept-alive HTTP/1.1 connection from the end of the previous response (hyper's
    /// `header_read_timeout` starts when it starts waiting for the next request, so there it
    /// also bounds an idle connection). The connection is closed when it runs out.
    pub(crate) header_read: Duration,
    /// How long a connection may stay open with no request in flight before it is closed
    /// gracefully (HTTP/2: a `GOAWAY`). A request is in flight from its headers until its
    /// response body is done with, so a connection carrying an open watch is never idle.
    pub(crate) idle: Duration,
    /// How long a TLS client may take from the accept to the end of its handshake; the
    /// connection is dropped when it runs out.
    pub(crate) tls_handshake: Duration,
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

impl Timeouts {
    /// Each timeout at most [`LONGEST_TIMEOUT`].
    fn capped(self) -> Self {
        Self {
            header_read: self.header_read.min(LONGEST_TIMEOUT),
            idle: self.idle.min(LONGEST_TIMEOUT),
            tls_handshake: self.tls_handshake.min(LONGEST_TIMEOUT),
        }
    }
}

/// A source of connections: the listening socket, or a scripted one in tests.
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

/// Accepts connections until `shutdown` fires, handing each to `serve`; after an accept error
/// (out of file descriptors, say) it waits as [`AcceptBackoff`] says instead of spinning.
pub(crate) async fn accept_loop<A: Accept>(
    socket: &A,
    shutdown: &CancellationToken,
    mut serve: impl FnMut(A::Stream),
) {
    let mut backoff = AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = socket.accept() => accepted,
        };
        match accepted {
            Ok(stream) => {
                backoff.reset();
                serve(stream);
            }
            Err(err) => {
                // EMFILE, ENFILE and the like: accepting again at once would fail again at
                // once, so wait, longer each time.
                let delay = backoff.next_delay();
                tracing::warn!(error = %err, retry_in = ?delay, "rein-apiserver: accepting a connection failed");
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(delay) => {}
                }
            }
        }
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

/// Serves one plain-HTTP connection (no client certificate).
pub(crate) async fn serve_plain(stream: TcpStream, state: Arc<State>) {
    serve_connection(stream, PeerUser::default(), state).await;
}

/// Completes the TLS handshake within [`Timeouts::tls_handshake`] and serves the connection
/// as the user its client certificate names, if any (verified against the CA by the
/// handshake). A connection still handshaking when the server stops is dropped.
pub(crate) async fn serve_tls(stream: TcpStream, acceptor: TlsAcceptor, state: Arc<State>) {
    let limit = state.timeouts.capped().tls_handshake;
    let handshake = tokio::time::timeout(limit, acceptor.accept(stream));
    let stream = tokio::select! {
        () = state.shutdown.cancelled() => return,
        handshake = handshake => match handshake {
            Ok(Ok(stream)) => stream,
            Ok(Err(err)) => {
                tracing::debug!(error = %err, "TLS handshake failed");
                return;
            }
            Err(_) => {
                tracing::debug!("TLS handshake timed out");
                return;
            }
        },
    };
    let peer = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|certs| certs.first())
        .and_then(crate::auth::user_of);
    serve_connection(stream, PeerUser(peer), state).await;
}

/// Serves HTTP/1.1 or HTTP/2 on one connection until the client closes it, the server stops
/// (the connection is dropped), or the client runs out of time: no first request within
/// `header_read` (dropped), an HTTP/1.1 request's headers not in within it (hyper closes the
/// connection), or no request in flight for `idle` (closed gracefully).
async fn serve_connection<I>(io: I, peer: PeerUser, state: Arc<State>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let timeouts = state.timeouts.capped();
    let activity = Activity::new();
    let mut load = activity.subscribe();
    let service = {
        let state = state.clone();
        service_fn(move |mut req: Request<Incoming>| {
            req.extensions_mut().insert(peer.clone());
            // In flight from now until hyper drops the response body (written to the end, or
            // the client went away): a watch is in flight as long as its stream is open.
            let in_flight = activity.begin();
            let handled = super::dispatch::handle(state.clone(), req);
            async move {
                let Ok(response) = handled.await;
                Ok::<_, Infallible>(response.map(|body| Tracked {
                    body,
                    _in_flight: in_flight,
                }))
            }
        })
    };
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.header_read);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        () = state.shutdown.cancelled() => return,
        expiry = expired(&mut load, timeouts) => match expiry {
            Expiry::NoRequest => {
                tracing::debug!("no request within the header-read timeout; closing the connection");
                return;
            }
            Expiry::Idle => {
                tracing::debug!("connection idle for the idle timeout; closing it");
                conn.as_mut().graceful_shutdown();
                tokio::select! {
                    closed = tokio::time::timeout(IDLE_CLOSE_GRACE, conn) => match closed {
                        Ok(result) => result,
                        Err(_) => return,
                    },
                    () = state.shutdown.cancelled() => return,
                }
            }
        },
    };
    if let Err(err) = result {
        tracing::debug!(error = %err, "connection ended with an error");
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
/// `header_read` of its start, or none in flight for `idle`. Never completes while a request
/// is in flight.
async fn expired(load: &mut watch::Receiver<Load>, timeouts: Timeouts) -> Expiry {
    let opened = Instant::now();
    loop {
        let now = *load.borrow_and_update();
        let idle = (now.idle_since + timeouts.idle, Expiry::Idle);
        let deadline = if now.in_flight > 0 {
            None
        } else if now.started {
            Some(idle)
        } else {
            let no_request = (opened + timeouts.header_read, Expiry::NoRequest);
            Some(if no_request.0 <= idle.0 {
                no_request
            } else {
                idle
            })
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
                () = tokio::time::sleep_until(at) => return expiry,
                () = changed => {}
            },
        }
    }
}

/// A connection's requests: how many are in flight, whether one ever started, and since when
/// none has been in flight.
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

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use parking_lot::Mutex;
    use tokio::task::JoinHandle;

    use super::*;

    #[test]
    fn the_default_timeouts_are_kube_apiservers() {
        let defaults = Timeouts::default();
        assert_eq!(defaults.header_read, Duration::from_secs(32));
        assert_eq!(defaults.idle, Duration::from_secs(90));
        assert_eq!(defaults.tls_handshake, Duration::from_secs(32));
    }

    #[test]
    fn timeouts_too_long_for_the_clock_are_capped() {
        let huge = Timeouts {
            header_read: Duration::MAX,
            idle: Duration::MAX,
            tls_handshake: Duration::MAX,
        }
        .capped();
        let now = std::time::Instant::now();
        for timeout in [huge.header_read, huge.idle, huge.tls_handshake] {
            assert_eq!(timeout, LONGEST_TIMEOUT);
            assert!(now.checked_add(timeout).is_some());
        }
        assert_eq!(Timeouts::default().capped(), Timeouts::default());
    }

    #[test]
    fn the_accept_backoff_doubles_from_5ms_to_1s_and_starts_over_after_a_success() {
        let mut backoff = AcceptBackoff::default();
        let ms = Duration::from_millis;
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

    /// An acceptor following a script of results (`false` as EMFILE), recording when each
    /// accept was called; once the script is done it cancels `done` and accepts nothing more.
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

    /// An accept loop running over a script.
    struct Run {
        /// When each accept was called.
        calls: Arc<Mutex<Vec<Instant>>>,
        /// How many connections were handed on.
        served: Arc<Mutex<usize>>,
        task: JoinHandle<()>,
    }

    /// Runs the accept loop over `script` until `stop` fires.
    fn run_scripted(script: Vec<bool>, stop: &CancellationToken) -> Run {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let served = Arc::new(Mutex::new(0));
        let acceptor = Scripted {
            script: Mutex::new(script.into()),
            calls: calls.clone(),
            done: stop.clone(),
        };
        let stop = stop.clone();
        let count = served.clone();
        let task = tokio::spawn(async move {
            accept_loop(&acceptor, &stop, |()| *count.lock() += 1).await;
        });
        Run {
            calls,
            served,
            task,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_accept_loop_backs_off_after_accept_errors_and_starts_over_after_a_success() {
        let stop = CancellationToken::new();
        let mut script = vec![false; 11];
        script.extend([true, false, false]);
        let Run {
            calls,
            served,
            task,
        } = run_scripted(script, &stop);
        task.await.unwrap();
        let gaps: Vec<u128> = calls
            .lock()
            .windows(2)
            .map(|w| (w[1] - w[0]).as_millis())
            .collect();
        assert_eq!(
            gaps,
            [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000, 0, 5, 10]
        );
        assert_eq!(*served.lock(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_accept_loop_does_not_spin_on_accept_errors_and_stops_while_backing_off() {
        let stop = CancellationToken::new();
        let Run { calls, task, .. } = run_scripted(vec![false; 10_000], &stop);
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
}
