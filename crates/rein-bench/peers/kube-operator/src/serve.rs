//! The two small HTTP servers (hyper): health probes (`/healthz`, `/readyz`) and metrics
//! (`/metrics`), each stopping when the shutdown signal comes.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::metrics::Metrics;

/// What a server answers.
#[derive(Debug, Clone)]
pub enum Routes {
    /// `/healthz` (always ok while the process serves) and `/readyz` (ok once `ready` is set).
    Probes {
        /// Set when the operator has started.
        ready: Arc<AtomicBool>,
    },
    /// `/metrics`.
    Metrics(Arc<Metrics>),
}

impl Routes {
    fn answer(&self, path: &str) -> Response<Full<Bytes>> {
        let (status, content_type, body) = match (self, path) {
            (Routes::Probes { .. }, "/healthz") => (StatusCode::OK, "text/plain", "ok".to_owned()),
            (Routes::Probes { ready }, "/readyz") if ready.load(Ordering::Relaxed) => {
                (StatusCode::OK, "text/plain", "ok".to_owned())
            }
            (Routes::Probes { .. }, "/readyz") => (
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                "not ready".to_owned(),
            ),
            (Routes::Metrics(metrics), "/metrics") => (
                StatusCode::OK,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                metrics.encode(),
            ),
            _ => (StatusCode::NOT_FOUND, "text/plain", "not found".to_owned()),
        };
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        if let Ok(value) = content_type.parse() {
            response
                .headers_mut()
                .insert(hyper::header::CONTENT_TYPE, value);
        }
        response
    }
}

/// Binds `addr` and serves `routes` on it in a task until `shutdown` turns true; answers the
/// address bound (port 0 picks one).
pub async fn spawn(
    addr: SocketAddr,
    routes: Routes,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = shutdown.wait_for(|stop| *stop) => break,
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let routes = routes.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |request: Request<Incoming>| {
                            let response = routes.answer(request.uri().path());
                            async move { Ok::<_, Infallible>(response) }
                        });
                        if let Err(error) = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await
                        {
                            tracing::debug!(%error, "probe or metrics connection");
                        }
                    });
                }
            }
        }
    });
    Ok(bound)
}
