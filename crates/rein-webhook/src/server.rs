//! The HTTPS webhook server: one admission handler per path plus the conversion path, TLS
//! 1.2+ only, plain HTTP refused.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use hyper::StatusCode;
use parking_lot::RwLock;
use rein_serve::{Handler, Listener, Serving};
use rustls::ServerConfig;
use tokio_util::sync::CancellationToken;

use crate::admission::AdmissionHandler;
use crate::conversion::{self, CONVERT_PATH, Conversion, ConversionWebhook, Hub};
use crate::error::Error;
use crate::metrics::InFlight;
use crate::review::{self, DEFAULT_MAX_BODY_BYTES};
use crate::tls::{CertSource, server_config};
use crate::typed::{
    CustomDefaulter, CustomValidator, DefaultingWebhook, ValidatingWebhook, WebhookObject,
    mutate_path, validate_path,
};

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

/// What a path serves.
#[derive(Clone)]
enum Route {
    /// AdmissionReviews, to one handler.
    Admission(Arc<dyn AdmissionHandler>),
    /// ConversionReviews, to the converter of each object's kind.
    Conversion(Arc<ConversionWebhook>),
}

type Handlers = Arc<RwLock<BTreeMap<String, Route>>>;

/// The admission webhook server (controller-runtime's `webhook.Server`).
///
/// [`bind`](Self::bind) loads the certificate and opens the socket; handlers can be
/// registered before or after [`run`](Self::run) starts serving.
pub struct WebhookServer {
    options: WebhookServerOptions,
    tls: Arc<ServerConfig>,
    listener: Listener,
    handlers: Handlers,
}

impl fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookServer")
            .field("local_addr", &self.local_addr())
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
        let listener = Listener::bind("admission webhooks", addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        Ok(Self {
            options,
            tls,
            listener,
            handlers: Arc::default(),
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr()
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
        handlers.insert(path, Route::Admission(Arc::new(handler)));
        Ok(())
    }

    /// Serves `conversion` (one kind's hub and spokes) at [`CONVERT_PATH`], where every
    /// kind's conversions share one handler, and returns the path; a kind can be registered
    /// once. Fails when a spoke is of another kind or a version is registered twice.
    pub fn register_conversion<H: Hub>(&self, conversion: Conversion<H>) -> Result<String, Error> {
        let converter = conversion.build()?;
        let mut handlers = self.handlers.write();
        let route = handlers
            .entry(CONVERT_PATH.to_owned())
            .or_insert_with(|| Route::Conversion(Arc::default()));
        let Route::Conversion(webhook) = route else {
            return Err(Error::DuplicatePath {
                path: CONVERT_PATH.to_owned(),
            });
        };
        tracing::info!(path = CONVERT_PATH, kind = %H::kind(&()), "registering conversion webhook");
        webhook.add(converter)?;
        Ok(CONVERT_PATH.to_owned())
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

    /// Whether the server accepts connections (controller-runtime's `StartedChecker`):
    /// rein-manager serves it as the `webhook` readiness check.
    pub fn started_checker(&self) -> StartedChecker {
        StartedChecker {
            serving: self.listener.serving(),
        }
    }

    /// Serves HTTPS until `stop` fires, then finishes in-flight reviews.
    pub async fn run(&self, stop: CancellationToken) -> Result<(), Error> {
        self.listener
            .serve_tls(self.tls.clone(), self.handler(), stop)
            .await
            .map_err(|_| Error::AlreadyRunning)
    }

    fn handler(&self) -> Handler {
        let handlers = self.handlers.clone();
        let max_body_bytes = self.options.max_body_bytes;
        Arc::new(move |req| {
            let path = req.uri().path().to_owned();
            let handler = handlers.read().get(&path).cloned();
            Box::pin(async move {
                let Some(handler) = handler else {
                    return rein_serve::text(StatusCode::NOT_FOUND, "404 page not found\n");
                };
                let in_flight = InFlight::start(&path);
                let resp = match handler {
                    Route::Admission(handler) => review::serve(handler, req, max_body_bytes).await,
                    Route::Conversion(webhook) => {
                        conversion::serve(webhook, req, max_body_bytes).await
                    }
                };
                in_flight.finish(resp.status().as_u16());
                resp
            })
        })
    }
}

/// Tells whether a [`WebhookServer`] accepts connections: from the start of
/// [`run`](WebhookServer::run) until its stop token fires. A cheap `Clone` handle.
#[derive(Debug, Clone)]
pub struct StartedChecker {
    serving: Serving,
}

impl StartedChecker {
    /// Whether the server accepts connections now.
    pub fn is_started(&self) -> bool {
        self.serving.is_serving()
    }
}
