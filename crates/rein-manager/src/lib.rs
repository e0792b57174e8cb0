//! controller-runtime's manager: runnables, leader election, health probes, metrics and admission webhooks.
//!
//! `rein-manager` is the top layer of rein. It sits on `rein-controller` (controllers are
//! [`Runnable`](rein_controller::Runnable)s, built with `ControllerManagedBy::new(&manager)` through the
//! [`ControllerHost`](rein_controller::ControllerHost) trait the [`Manager`] implements), `rein-client` (the cache-backed client
//! and the shared cache) and, through them, `rein-informer`, `rein-scheme` and
//! `rein-workqueue`. It composes three crates that know nothing of it: `rein-leaderelection`
//! (re-exported as [`leaderelection`]), `rein-webhook` (re-exported as [`webhook`]) and
//! `rein-serve`, the HTTP serving loop of the probe, metrics and webhook servers.
//!
//! - [`Manager`]: built from a `kube_client::Config` and [`Options`]; owns the shared cache
//!   and client; [`Manager::start`] runs the cache, the servers, then (after the caches
//!   synced, and after winning the election when enabled) the controllers; stops gracefully
//!   in reverse order.
//! - [`config`]: find a client config like `GetConfigOrDie` (`--kubeconfig`, `KUBECONFIG`,
//!   in-cluster, `~/.kube/config`).
//! - [`leaderelection`]: client-go's Lease-based leader election, usable on its own.
//! - [`sharding`]: active-active sharding across replicas ([`Options::sharding`],
//!   [`Manager::sharded`]).
//! - [`signals`]: first SIGINT/SIGTERM stops gracefully, a second exits.
//! - [`healthz`], [`metrics`], [`webhook`]: the probe, metrics and webhook servers the
//!   manager starts when its options enable them (the webhook server serves admission handlers
//!   and, with `register_conversion`, CRD conversions at `/convert`).
//!
//! ```
//! use std::sync::Arc;
//!
//! use rein_manager::{Manager, Options, RunnableFn};
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // An embedded API server stands in for a cluster (see `config::get_config` for real ones).
//! let env = rein_testenv::TestEnv::start().await?;
//! let mgr = Manager::builder(env.config()).options(Options::default()).build().await?;
//!
//! // A runnable: here one that stops the manager once it ran; controllers are runnables too.
//! let stop = CancellationToken::new();
//! let stopper = stop.clone();
//! mgr.add(Arc::new(RunnableFn::new(move |_token| {
//!     let stopper = stopper.clone();
//!     async move {
//!         stopper.cancel();
//!         Ok(())
//!     }
//! })))?;
//! mgr.start(stop).await?;
//! # Ok(()) }
//! ```

pub mod config;
pub mod healthz;
mod manager;
pub mod metrics;
pub mod rbac;
pub mod signals;

#[doc(inline)]
pub use rein_leaderelection as leaderelection;
#[doc(inline)]
pub use rein_sharding as sharding;
#[doc(inline)]
pub use rein_webhook as webhook;

pub use manager::{Error, LeaderElectionOptions, Manager, ManagerBuilder, Options, RunnableFn};
/// The token [`Manager::start`] stops on (tokio-util's), so an operator needs no tokio-util
/// dependency of its own: cancel it, or use [`signals::shutdown_signal`].
pub use tokio_util::sync::CancellationToken;
