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
//!         let rs = self.client.get::<ReplicaSet>(&req.key).await?;
//!         let replicas = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
//!         println!("reconciling {req}: {replicas} replicas");
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
//!
//! # Custom resources from a derive
//!
//! With the default `derive` feature, `#[derive(CustomResource)]` (kube-derive, re-exported
//! here) turns a spec struct into a custom resource type: the root struct (`Widget` from
//! `WidgetSpec`), its `Resource` impl, and [`CustomResourceExt::crd`], the
//! CustomResourceDefinition with an OpenAPI schema derived by schemars. The type works
//! everywhere rein takes an object: [`Scheme::register`](scheme::Scheme::register) (derive
//! `Default` with `#[kube(derive = "Default")]`), the controller builder's `for_`/`owns`/
//! `watches`, the cache, [`Client`](client::Client) and its status subresource.
//! [`client::crd::install`] creates the CRD and waits until it is `Established`.
//!
//! An operator crate needs rein, serde, schemars 1 and an async runtime; serde_json,
//! k8s-openapi, kube-core, kube-client's transport and tokio-util's `CancellationToken`
//! ([`manager::CancellationToken`]) come through rein. `cargo rein new` writes this list (its
//! scaffold is built and tested by rein's suite), with rein-testenv as a dev-dependency only:
//!
//! ```toml
//! [dependencies]
//! rein = "0.1"
//! serde = { version = "1", features = ["derive"] }
//! schemars = "1"
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! async-trait = "0.1"   # for `impl Reconciler`
//! anyhow = "1"          # or any error type for `Reconciler::Error`
//!
//! [dev-dependencies]
//! rein-testenv = "0.1"  # the API server the tests run against
//! ```
//!
//! (`TestEnv::client()` is a kube-client `Client`; `rein::client::Client::new` wraps it, so
//! tests need no kube-client dependency of their own.)
//!
//! kube-derive's expansion names `::kube::core`, `::k8s_openapi` and `::serde_json`.
//! [`#[rein::resource]`](resource), placed above the derive, points them at rein's
//! re-exports, so no kube crate is needed; it does the same for `#[derive(KubeSchema)]`, which
//! adds field-level CEL rules (`#[x_kube(validation = ...)]`). (Without it, write the
//! overrides yourself: `#[kube(crates(kube_core = "::rein::core", k8s_openapi =
//! "::rein::k8s_openapi", serde_json = "::rein::serde_json"))]`.)
//!
//! ```
//! use rein::{CustomResource, CustomResourceExt, KubeSchema};
//! use serde::{Deserialize, Serialize};
//!
//! #[rein::resource]
//! #[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
//! #[kube(group = "demo.rein.dev", version = "v1", kind = "Widget", namespaced)]
//! #[kube(status = "WidgetStatus", derive = "Default", derive = "PartialEq")]
//! #[kube(printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}"#)]
//! pub struct WidgetSpec {
//!     #[serde(default = "one")]
//!     #[x_kube(validation = "self <= 10")]
//!     pub replicas: i32,
//! }
//!
//! #[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, schemars::JsonSchema)]
//! pub struct WidgetStatus {
//!     pub ready_replicas: i32,
//! }
//!
//! fn one() -> i32 {
//!     1
//! }
//!
//! let crd = Widget::crd();
//! assert_eq!(crd.metadata.name.as_deref(), Some("widgets.demo.rein.dev"));
//! let json = rein::serde_json::to_string(&crd).unwrap();
//! assert!(json.contains(r#""rule":"self <= 10""#) && json.contains(r#""default":1"#));
//!
//! let mut scheme = rein::scheme::Scheme::with_builtins();
//! scheme.register::<Widget>();
//! let widget = Widget::new("demo", WidgetSpec { replicas: 3 });
//! assert_eq!(widget.spec.replicas, 3);
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

#[doc(inline)]
pub use kube_core as core;
#[doc(inline)]
pub use kube_core::CustomResourceExt;
#[cfg(feature = "derive")]
#[doc(inline)]
pub use kube_derive::{CustomResource, KubeSchema};
#[cfg(feature = "derive")]
#[doc(inline)]
pub use rein_macros::resource;

/// The k8s-openapi crate rein is built on (Kubernetes 1.33 types); derived custom resources
/// name it through `#[kube(crates(k8s_openapi = "::rein::k8s_openapi"))]`.
pub use k8s_openapi;
/// serde_json, as derived custom resources name it
/// (`#[kube(crates(serde_json = "::rein::serde_json"))]`).
pub use serde_json;
