//! The check registry (`HealthProbes`) and the HTTP server that serves it.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use parking_lot::RwLock;
use rein_serve::{Handler, Listener, text};
use tokio_util::sync::CancellationToken;

use super::checker::Checker;
use super::error::Error;
use super::handler::{self, NamedChecks, ProbeQuery};

/// Where and how the health-probe server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthProbeOptions {
    /// The address to bind; loopback port 8081 by default (port 0 picks a free port).
    pub bind_address: SocketAddr,
    /// The liveness endpoint, `/healthz` by default.
    pub liveness_path: String,
    /// The readiness endpoint, `/readyz` by default.
    pub readiness_path: String,
}

impl Default for HealthProbeOptions {
    fn default() -> Self {
        Self {
            bind_address: SocketAddr::from((Ipv4Addr::LOCALHOST, 8081)),
            liveness_path: "/healthz".to_owned(),
            readiness_path: "/readyz".to_owned(),
        }
    }
}

#[derive(Default)]
struct Registry {
    healthz: BTreeMap<String, Arc<dyn Checker>>,
    readyz: BTreeMap<String, Arc<dyn Checker>>,
}

/// The named liveness and readiness checks: a cheap `Clone` handle shared with the server.
#[derive(Clone, Default)]
pub struct HealthProbes {
    registry: Arc<RwLock<Registry>>,
    started: Arc<AtomicBool>,
}

impl fmt::Debug for HealthProbes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let registry = self.registry.read();
        f.debug_struct("HealthProbes")
            .field("healthz", &registry.healthz.keys().collect::<Vec<_>>())
            .field("readyz", &registry.readyz.keys().collect::<Vec<_>>())
            .field("started", &self.started.load(Ordering::Relaxed))
            .finish()
    }
}

impl HealthProbes {
    /// An empty set of checks (each endpoint answers with the built-in `ping` until a check
    /// of its kind is added).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a liveness check served under `/healthz` (`AddHealthzCheck`). Fails once the
    /// server has started, for a duplicate name, or for a name containing `/`.
    pub fn add_healthz_check(
        &self,
        name: impl Into<String>,
        checker: impl Checker,
    ) -> Result<(), Error> {
        self.add(name.into(), Arc::new(checker), false)
    }

    /// Adds a readiness check served under `/readyz` (`AddReadyzCheck`); same rules as
    /// [`add_healthz_check`](Self::add_healthz_check).
    pub fn add_readyz_check(
        &self,
        name: impl Into<String>,
        checker: impl Checker,
    ) -> Result<(), Error> {
        self.add(name.into(), Arc::new(checker), true)
    }

    fn add(&self, name: String, checker: Arc<dyn Checker>, ready: bool) -> Result<(), Error> {
        if name.is_empty() || name.contains('/') {
            return Err(Error::InvalidName { name });
        }
        let mut registry = self.registry.write();
        if self.started.load(Ordering::SeqCst) {
            return Err(Error::AlreadyStarted { name });
        }
        let map = if ready {
            &mut registry.readyz
        } else {
            &mut registry.healthz
        };
        if map.contains_key(&name) {
            return Err(Error::DuplicateCheck { name });
        }
        map.insert(name, checker);
        Ok(())
    }

    fn snapshot(&self, ready: bool) -> NamedChecks {
        let registry = self.registry.read();
        let map = if ready {
            &registry.readyz
        } else {
            &registry.healthz
        };
        map.iter().map(|(n, c)| (n.clone(), c.clone())).collect()
    }

    fn mark_started(&self) {
        let _guard = self.registry.write();
        self.started.store(true, Ordering::SeqCst);
    }
}

/// The health-probe HTTP server (the manager's `HealthProbeBindAddress` listener).
///
/// [`bind`](Self::bind) opens the socket at once (so the address is known and bind errors
/// surface early); [`run`](Self::run) serves until the stop token fires.
pub struct HealthProbeServer {
    probes: HealthProbes,
    options: HealthProbeOptions,
    listener: Listener,
}

impl fmt::Debug for HealthProbeServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HealthProbeServer")
            .field("local_addr", &self.local_addr())
            .field("options", &self.options)
            .field("probes", &self.probes)
            .finish_non_exhaustive()
    }
}

impl HealthProbeServer {
    /// Binds `options.bind_address` and serves the checks in `probes` once run.
    pub async fn bind(options: HealthProbeOptions, probes: HealthProbes) -> Result<Self, Error> {
        let addr = options.bind_address;
        let listener = Listener::bind("health probes", addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        Ok(Self {
            probes,
            options,
            listener,
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr()
    }

    /// The checks this server serves (add checks here before running it).
    pub fn probes(&self) -> &HealthProbes {
        &self.probes
    }

    /// Serves until `stop` fires, then finishes in-flight requests. No checks can be added
    /// once this has been called.
    pub async fn run(&self, stop: CancellationToken) -> Result<(), Error> {
        // Closed to new checks before the first request can be answered.
        self.probes.mark_started();
        self.listener
            .serve(self.handler(), stop)
            .await
            .map_err(|_| Error::AlreadyRunning)
    }

    fn handler(&self) -> Handler {
        let probes = self.probes.clone();
        let live = self.options.liveness_path.clone();
        let ready = self.options.readiness_path.clone();
        Arc::new(move |req| {
            let probes = probes.clone();
            let path = req.uri().path().to_owned();
            let query = ProbeQuery::parse(req.uri().query());
            let route = route(&path, &live, &ready);
            Box::pin(async move {
                match route {
                    Route::Aggregated { ready } => {
                        handler::aggregated(probes.snapshot(ready), &query).await
                    }
                    Route::Single { ready, name } => {
                        handler::single(probes.snapshot(ready), &name).await
                    }
                    Route::NotFound => text(hyper::StatusCode::NOT_FOUND, "404 page not found\n"),
                }
            })
        })
    }
}

enum Route {
    Aggregated { ready: bool },
    Single { ready: bool, name: String },
    NotFound,
}

fn route(path: &str, live: &str, ready: &str) -> Route {
    for (prefix, is_ready) in [(live, false), (ready, true)] {
        let Some(rest) = path.strip_prefix(prefix) else {
            continue;
        };
        if rest.is_empty() || rest == "/" {
            return Route::Aggregated { ready: is_ready };
        }
        if let Some(name) = rest.strip_prefix('/') {
            return Route::Single {
                ready: is_ready,
                name: name.to_owned(),
            };
        }
    }
    Route::NotFound
}

#[async_trait]
impl rein_controller::Runnable for HealthProbeServer {
    async fn start(&self, stop: CancellationToken) -> Result<(), rein_controller::BoxError> {
        self.run(stop).await.map_err(Into::into)
    }

    fn needs_leader_election(&self) -> bool {
        false
    }
}
