//! The `/metrics` HTTP server.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use async_trait::async_trait;
use hyper::StatusCode;
use rein_serve::{Handler, Listener, text};
use tokio_util::sync::CancellationToken;

use super::encode::{SharedRegistry, encode};
use super::error::Error;
use super::secure::{AccessFilter, SecureServing};

/// Where [`MetricsServerOptions::debug_queues`] serves the controllers' queues.
pub const DEBUG_QUEUES_PATH: &str = "/debug/queues";

/// The OpenMetrics content type prometheus-client's text encoder produces.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Where the metrics server listens and what it serves besides the process-wide registry.
#[derive(Clone)]
pub struct MetricsServerOptions {
    /// The address to bind; loopback port 8080 by default (port 0 picks a free port).
    pub bind_address: SocketAddr,
    /// The path metrics are served at, `/metrics` by default.
    pub path: String,
    /// The user's own registries, encoded after the process-wide one.
    pub extra_registries: Vec<SharedRegistry>,
    /// Serve `GET /debug/queues` (default: off): every controller's queue as JSON — the keys
    /// waiting, those in flight with their age, those backing off with their next attempt
    /// and failure count ([`rein_controller::QueueSnapshot::to_json`]). It shows object
    /// names, so turn it on only where the metrics endpoint is private.
    pub debug_queues: bool,
    /// Serve over HTTPS, checking scrapers against the API server (default: plain HTTP, for
    /// development on loopback). See [`SecureServing`].
    pub secure: Option<SecureServing>,
}

impl fmt::Debug for MetricsServerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsServerOptions")
            .field("bind_address", &self.bind_address)
            .field("path", &self.path)
            .field("extra_registries", &self.extra_registries.len())
            .field("debug_queues", &self.debug_queues)
            .field("secure", &self.secure)
            .finish()
    }
}

impl Default for MetricsServerOptions {
    fn default() -> Self {
        Self {
            bind_address: SocketAddr::from((Ipv4Addr::LOCALHOST, 8080)),
            path: "/metrics".to_owned(),
            extra_registries: Vec::new(),
            debug_queues: false,
            secure: None,
        }
    }
}

impl MetricsServerOptions {
    /// Adds a user registry to serve after the process-wide one.
    pub fn registry(mut self, registry: SharedRegistry) -> Self {
        self.extra_registries.push(registry);
        self
    }
}

/// The metrics HTTP server. [`bind`](Self::bind) opens the socket at once;
/// [`run`](Self::run) serves until the stop token fires.
pub struct MetricsServer {
    options: MetricsServerOptions,
    listener: Listener,
    /// With [`MetricsServerOptions::secure`]: the TLS configuration.
    tls: Option<Arc<rustls::ServerConfig>>,
    /// With [`MetricsServerOptions::secure`] and authorization: the access filter.
    filter: Option<Arc<AccessFilter>>,
}

impl fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsServer")
            .field("local_addr", &self.local_addr())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl MetricsServer {
    /// Binds `options.bind_address`; with [`MetricsServerOptions::secure`], also loads (or
    /// generates) the serving certificate, and fails without a client for the reviews
    /// unless authorization is skipped.
    pub async fn bind(options: MetricsServerOptions) -> Result<Self, Error> {
        let addr = options.bind_address;
        let (tls, filter) = match &options.secure {
            None => (None, None),
            Some(secure) => {
                let source = match &secure.cert {
                    Some(source) => source.clone(),
                    None => {
                        let ip = addr.ip().to_string();
                        let mut hosts = vec!["localhost", "127.0.0.1"];
                        if !addr.ip().is_unspecified() && !hosts.contains(&ip.as_str()) {
                            hosts.push(&ip);
                        }
                        rein_webhook::GeneratedCertificates::generate(&hosts)
                            .map_err(Error::Certificate)?
                            .cert_source()
                    }
                };
                let tls = rein_webhook::server_config(&source).map_err(Error::Certificate)?;
                let filter = if secure.skip_authorization {
                    None
                } else {
                    let client = secure.client.clone().ok_or(Error::NoReviewClient)?;
                    Some(AccessFilter::new(client))
                };
                (Some(tls), filter)
            }
        };
        let listener = Listener::bind("metrics", addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        Ok(Self {
            options,
            listener,
            tls,
            filter,
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr()
    }

    /// The access filter, with secure serving and authorization.
    #[cfg(test)]
    pub(super) fn access_filter(&self) -> Option<&Arc<AccessFilter>> {
        self.filter.as_ref()
    }

    /// Serves until `stop` fires, then finishes in-flight scrapes.
    pub async fn run(&self, stop: CancellationToken) -> Result<(), Error> {
        let handler = match &self.filter {
            Some(filter) => filter.clone().wrap(self.handler()),
            None => self.handler(),
        };
        let served = match &self.tls {
            Some(tls) => self.listener.serve_tls(tls.clone(), handler, stop).await,
            None => self.listener.serve(handler, stop).await,
        };
        served.map_err(|_| Error::AlreadyRunning)
    }

    fn handler(&self) -> Handler {
        let path = self.options.path.clone();
        let extra = Arc::new(self.options.extra_registries.clone());
        let debug_queues = self.options.debug_queues;
        Arc::new(move |req| {
            let response = if debug_queues && req.uri().path() == DEBUG_QUEUES_PATH {
                if req.method() != hyper::Method::GET {
                    text(StatusCode::METHOD_NOT_ALLOWED, "only GET is supported\n")
                } else {
                    let queues: Vec<serde_json::Value> = rein_controller::queue_snapshots()
                        .iter()
                        .map(rein_controller::QueueSnapshot::to_json)
                        .collect();
                    let body = serde_json::json!({ "controllers": queues }).to_string();
                    let mut resp = text(StatusCode::OK, body);
                    resp.headers_mut().insert(
                        http::header::CONTENT_TYPE,
                        http::HeaderValue::from_static("application/json"),
                    );
                    resp
                }
            } else if req.uri().path() != path {
                text(StatusCode::NOT_FOUND, "404 page not found\n")
            } else if req.method() != hyper::Method::GET && req.method() != hyper::Method::HEAD {
                text(StatusCode::METHOD_NOT_ALLOWED, "only GET is supported\n")
            } else {
                let mut resp = text(StatusCode::OK, encode(&extra));
                resp.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static(CONTENT_TYPE),
                );
                resp
            };
            Box::pin(std::future::ready(response))
        })
    }
}

#[async_trait]
impl rein_controller::Runnable for MetricsServer {
    async fn start(&self, stop: CancellationToken) -> Result<(), rein_controller::BoxError> {
        self.run(stop).await.map_err(Into::into)
    }

    fn needs_leader_election(&self) -> bool {
        false
    }
}
