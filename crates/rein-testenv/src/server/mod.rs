//! The HTTP server: accepts connections (plain or TLS, with client certificates),
//! authenticates and authorizes, applies injected faults, logs requests and dispatches them
//! to the discovery, OpenAPI and resource handlers.

mod accept;
mod access;
mod admitted;
mod aggregated;
mod body;
mod components;
mod conn;
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

use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub(crate) use conn::Timeouts;

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
    /// The file each authenticated resource request is appended to, if any.
    pub(crate) request_export: Option<crate::request_export::RequestExport>,
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
    /// How long a client may take over its TLS handshake or a request's headers, or idle.
    pub(crate) timeouts: Timeouts,
}

/// Accepts connections until `state.shutdown` is cancelled, one task per connection, backing
/// off after accept errors; each connection is bounded by `state.timeouts`.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    state: Arc<State>,
) {
    tokio::spawn(collect_garbage(state.clone()));
    tokio::spawn(crate::rbac::aggregate::run(state.clone()));
    let shutdown = state.shutdown.clone();
    conn::accept_loop(&listener, &shutdown, |stream| {
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        match &tls {
            None => tokio::spawn(conn::serve_plain(stream, state)),
            Some(acceptor) => tokio::spawn(conn::serve_tls(stream, acceptor.clone(), state)),
        };
    })
    .await;
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
