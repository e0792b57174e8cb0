//! The HTTPS webhook server: one admission handler per path, TLS 1.2+ only, plain HTTP
//! refused.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use hyper::StatusCode;
use parking_lot::{Mutex, RwLock};
use rustls::ServerConfig;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::admission::AdmissionHandler;
use super::error::Error;
use super::metrics::InFlight;
use super::review::{self, DEFAULT_MAX_BODY_BYTES};
use super::tls::{CertSource, server_config};
use super::typed::{
    CustomDefaulter, CustomValidator, DefaultingWebhook, ValidatingWebhook, WebhookObject,
    mutate_path, validate_path,
};
use crate::healthz::http::{self, Handler, SHUTDOWN_GRACE};
use crate::healthz::{CheckError, Checker};

/// How long a client may take to start and finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The first byte of a TLS handshake record.
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// What a plain-HTTP client gets (Go's net/http says the same).
const PLAIN_HTTP_ANSWER: &[u8] = b"HTTP/1.0 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// Where the webhook server listens and which certificate it serves.
#[derive(Debug, Clone)]
pub struct WebhookServerOptions {
    /// The address to bind; `0.0.0.0:9443` by default (the API server must reach it).
    pub bind_address: SocketAddr,
    /// The serving certificate and key; `<tmp>/k8s-webhook-server/serving-certs/tls.{crt,key}`
    /// by default.
    pub cert: CertSource,
    /// The largest AdmissionReview accepted (7 MiB by default); larger ones are refused
    /// with code 413.
    pub max_body_bytes: usize,
}

impl Default for WebhookServerOptions {
    fn default() -> Self {
        Self {
            bind_address: SocketAddr::from((Ipv4Addr::UNSPECIFIED, 9443)),
            cert: CertSource::default_dir(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

type Handlers = Arc<RwLock<BTreeMap<String, Arc<dyn AdmissionHandler>>>>;

/// The admission webhook server (controller-runtime's `webhook.Server`).
///
/// [`bind`](Self::bind) loads the certificate and opens the socket; handlers can be
/// registered before or after [`run`](Self::run) starts serving.
pub struct WebhookServer {
    options: WebhookServerOptions,
    tls: Arc<ServerConfig>,
    local_addr: SocketAddr,
    listener: Mutex<Option<TcpListener>>,
    handlers: Handlers,
    started: Arc<AtomicBool>,
}

impl fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookServer")
            .field("local_addr", &self.local_addr)
            .field("options", &self.options)
            .field("paths", &self.paths())
            .finish_non_exhaustive()
    }
}

impl WebhookServer {
    /// Loads the certificate and binds `options.bind_address`.
    pub async fn bind(options: WebhookServerOptions) -> Result<Self, Error> {
        let tls = server_config(&options.cert)?;
        let addr = options.bind_address;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| Error::Bind { addr, source })?;
        Ok(Self {
            options,
            tls,
            local_addr,
            listener: Mutex::new(Some(listener)),
            handlers: Arc::default(),
            started: Arc::default(),
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The registered paths, sorted.
    pub fn paths(&self) -> Vec<String> {
        self.handlers.read().keys().cloned().collect()
    }

    /// Serves `handler` at `path`; a path can be registered once.
    pub fn register(
        &self,
        path: impl Into<String>,
        handler: impl AdmissionHandler,
    ) -> Result<(), Error> {
        let path = path.into();
        if !path.starts_with('/') {
            return Err(Error::InvalidPath { path });
        }
        let mut handlers = self.handlers.write();
        if handlers.contains_key(&path) {
            return Err(Error::DuplicatePath { path });
        }
        tracing::info!(%path, "registering webhook");
        handlers.insert(path, Arc::new(handler));
        Ok(())
    }

    /// Serves `defaulter` for `K` at [`mutate_path::<K>()`](mutate_path) and returns the path.
    pub fn register_defaulter<K, D>(&self, defaulter: D) -> Result<String, Error>
    where
        K: WebhookObject,
        D: CustomDefaulter<K>,
    {
        let path = mutate_path::<K>();
        self.register(path.clone(), DefaultingWebhook::<K, D>::new(defaulter))?;
        Ok(path)
    }

    /// Serves `validator` for `K` at [`validate_path::<K>()`](validate_path) and returns the
    /// path.
    pub fn register_validator<K, V>(&self, validator: V) -> Result<String, Error>
    where
        K: WebhookObject,
        V: CustomValidator<K>,
    {
        let path = validate_path::<K>();
        self.register(path.clone(), ValidatingWebhook::<K, V>::new(validator))?;
        Ok(path)
    }

    /// A readiness check that passes once the server accepts connections
    /// (controller-runtime's `StartedChecker`).
    pub fn started_checker(&self) -> impl Checker + use<> {
        StartedChecker {
            started: self.started.clone(),
        }
    }

    /// Serves HTTPS until `stop` fires, then finishes in-flight reviews.
    pub async fn run(&self, stop: CancellationToken) -> Result<(), Error> {
        let listener = self.listener.lock().take().ok_or(Error::AlreadyRunning)?;
        let acceptor = TlsAcceptor::from(self.tls.clone());
        let handler = self.handler();
        let tracker = TaskTracker::new();
        self.started.store(true, Ordering::SeqCst);
        tracing::info!(addr = %self.local_addr, "serving admission webhooks over HTTPS");
        loop {
            let accepted = tokio::select! {
                _ = stop.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok((stream, _peer)) => {
                    tracker.spawn(serve_tls(
                        stream,
                        acceptor.clone(),
                        handler.clone(),
                        stop.clone(),
                    ));
                }
                Err(err) => {
                    tracing::warn!(error = %err, "accepting a webhook connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        self.started.store(false, Ordering::SeqCst);
        drop(listener);
        tracker.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("webhook connections still open after the grace period; dropping them");
        }
        Ok(())
    }

    fn handler(&self) -> Handler {
        let handlers = self.handlers.clone();
        let max_body_bytes = self.options.max_body_bytes;
        Arc::new(move |req| {
            let path = req.uri().path().to_owned();
            let handler = handlers.read().get(&path).cloned();
            Box::pin(async move {
                let Some(handler) = handler else {
                    return http::text(StatusCode::NOT_FOUND, "404 page not found\n");
                };
                let in_flight = InFlight::start(&path);
                let resp = review::serve(handler, req, max_body_bytes).await;
                in_flight.finish(resp.status().as_u16());
                resp
            })
        })
    }
}

/// Refuses plain HTTP with a 400, otherwise completes the TLS handshake and serves HTTP. A
/// connection still handshaking when the server stops is dropped.
async fn serve_tls(
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
        http::serve_connection(tls, handler, stop).await;
    }
}

/// Peeks at the first byte (a TLS record or not) and runs the handshake, each step bounded
/// by [`HANDSHAKE_TIMEOUT`].
async fn handshake(
    mut stream: TcpStream,
    acceptor: TlsAcceptor,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    let mut first = [0u8; 1];
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, stream.peek(&mut first)).await {
        Ok(Ok(1)) if first[0] == TLS_HANDSHAKE_RECORD => {}
        Ok(Ok(1)) => {
            tracing::debug!("refusing a plain-HTTP connection to the webhook server");
            let _ = stream.write_all(PLAIN_HTTP_ANSWER).await;
            let _ = stream.shutdown().await;
            return None;
        }
        _ => return None,
    }
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(tls),
        Ok(Err(err)) => {
            tracing::debug!(error = %err, "webhook TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!("webhook TLS handshake timed out");
            None
        }
    }
}

#[derive(Debug)]
struct StartedChecker {
    started: Arc<AtomicBool>,
}

#[async_trait]
impl Checker for StartedChecker {
    async fn check(&self) -> Result<(), CheckError> {
        if self.started.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err("the webhook server is not serving".into())
        }
    }
}

#[async_trait]
impl rein_controller::Runnable for WebhookServer {
    async fn start(&self, stop: CancellationToken) -> Result<(), rein_controller::BoxError> {
        self.run(stop).await.map_err(Into::into)
    }

    fn needs_leader_election(&self) -> bool {
        false
    }
}
