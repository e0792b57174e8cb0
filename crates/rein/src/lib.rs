//! rein: Kubernetes controllers and operators in Rust, in the spirit of client-go and
//! controller-runtime.
//!
//! This facade re-exports the layers, bottom-up: [`workqueue`] (queues and rate limiters),
//! [`scheme`] (GVKs, object keys, selectors, the Scheme), [`informer`] (reflector, FIFOs,
//! indexers, shared informers, listers), [`client`] (typed, dynamic and cache-backed clients),
//! [`controller`] (reconcilers, sources, handlers, predicates, the builder) and [`manager`]
//! (the manager, leader election, probes, metrics, webhooks). Depend on this crate, or on the
//! individual crates. Tests and examples run against `rein-testenv`, an in-process API server.
//!
//! A controller that reconciles ReplicaSets and the Pods they own (`docs/guide.md` maps every
//! client-go / controller-runtime name to its rein name):
//!
//! ```no_run
//! use k8s_openapi::api::apps::v1::ReplicaSet;
//! use k8s_openapi::api::core::v1::Pod;
//! use rein::controller::{Action, Context, ControllerManagedBy, Reconciler, Request};
//! use rein::manager::{Manager, config, signals};
//!
//! struct Labeler { client: rein::client::Client }
//!
//! #[async_trait::async_trait]
//! impl Reconciler for Labeler {
//!     type Error = anyhow::Error;
//!     async fn reconcile(&self, _ctx: Context, req: Request) -> anyhow::Result<Action> {
//!         let rs: ReplicaSet = self.client.get(&req.key).await?;
//!         println!("reconciling {req}: {} replicas", rs.spec.and_then(|s| s.replicas).unwrap_or(1));
//!         Ok(Action::done())
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> anyhow::Result<()> {
//!     let mgr = Manager::builder(config::get_config_or_exit().await).build().await?;
//!     ControllerManagedBy::new(&mgr).for_::<ReplicaSet>().owns::<Pod>()
//!         .complete(Labeler { client: mgr.client() })?;
//!     mgr.start(signals::shutdown_signal()).await?;
//!     Ok(())
//! }
//! ```

#[doc(inline)]
pub use rein_client as client;
#[doc(inline)]
pub use rein_controller as controller;
#[doc(inline)]
pub use rein_informer as informer;
#[doc(inline)]
pub use rein_manager as manager;
#[doc(inline)]
pub use rein_scheme as scheme;
#[doc(inline)]
pub use rein_workqueue as workqueue;
