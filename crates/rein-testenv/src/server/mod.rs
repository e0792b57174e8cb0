//! The HTTP server: accepts connections (plain or TLS, with client certificates),
//! authenticates and authorizes, applies injected faults, logs requests and dispatches them
//! to the discovery, OpenAPI and resource handlers.

mod accept;
mod access;
mod admitted;
mod aggregated;
mod body;
mod components;
mod converted;
mod discovery;
mod dispatch;
mod health;
mod jsonpath;
mod list;
mod objects;
mod openapi;
mod options;
mod query;
mod represent;
mod route;
mod scale;
mod subresources;
mod table;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::auth::PeerUser;
use crate::faults::Faults;
use crate::resources::Catalogue;
use crate::store::Store;

/// Everything the handlers share.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) catalogue: Catalogue,
    pub(crate) store: Arc<Store>,
    pub(crate) faults: Faults,
    pub(crate) log: Mutex<crate::requests::RequestLog>,
    /// Requests received and not answered yet.
    pub(crate) in_flight: crate::requests::InFlight,
    /// Credentials: the admin token, users, the service-account token key, the client CA.
    pub(crate) auth: crate::auth::Authn,
    /// Whether every request is authorized against the stored RBAC objects.
    pub(crate) enforce_rbac: bool,
    pub(crate) bookmark_interval: Duration,
    /// How long a request waits for a resourceVersion the store has not reached.
    pub(crate) too_large_rv_wait: Duration,
    /// Whether writes get metadata and per-kind validation (`TestEnvBuilder::validate_objects`).
    pub(crate) validate: bool,
    pub(crate) shutdown: CancellationToken,
    pub(crate) server_address: String,
    /// Local addresses of the services webhook configurations name.
    pub(crate) webhook_services: crate::admission::Services,
    /// How long a CRD's conversion webhook has to answer.
    pub(crate) conversion_timeout: Duration,
    /// The built-in admission plugins that are on.
    pub(crate) plugins: crate::plugins::Plugins,
}

/// Accepts connections until `state.shutdown` is cancelled.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    state: Arc<State>,
) {
    tokio::spawn(collect_garbage(state.clone()));
    tokio::spawn(crate::rbac::aggregate::run(state.clone()));
    loop {
        let accepted = tokio::select! {
            () = state.shutdown.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _peer)) = accepted else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let service = |peer: PeerUser| {
                let state = state.clone();
                service_fn(move |mut req| {
                    req.extensions_mut().insert(peer.clone());
                    dispatch::handle(state.clone(), req)
                })
            };
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            match tls {
                None => {
                    let service = service(PeerUser::default());
                    let conn = builder.serve_connection(TokioIo::new(stream), service);
                    tokio::select! {
                        _ = conn => {}
                        () = state.shutdown.cancelled() => {}
                    }
                }
                Some(acceptor) => {
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    // The client certificate, verified against the CA by the handshake.
                    let peer = stream
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|certs| certs.first())
                        .and_then(crate::auth::user_of);
                    let service = service(PeerUser(peer));
                    let conn = builder.serve_connection(TokioIo::new(stream), service);
                    tokio::select! {
                        _ = conn => {}
                        () = state.shutdown.cancelled() => {}
                    }
                }
            }
        });
    }
}

/// The garbage collector: runs queued work a step at a time (one transaction each, yielding
/// between steps so API calls interleave, as with a real controller) until shutdown; it
/// stands still while the server is paused. A step that panics is logged and dropped (the
/// work item was already taken off the queue), so one bad object cannot stop collection.
async fn collect_garbage(state: Arc<State>) {
    loop {
        tokio::select! {
            () = state.shutdown.cancelled() => return,
            () = state.store.gc_queued() => {}
        }
        loop {
            state.faults.inner.wait_unpaused().await;
            let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                crate::ops::collect_garbage(&mut state.store.lock(), &state.catalogue)
            }));
            let worked = step.unwrap_or_else(|_| {
                tracing::error!("a garbage-collection step panicked; its work item is dropped");
                true
            });
            if !worked {
                break;
            }
            tokio::task::yield_now().await;
        }
    }
}
