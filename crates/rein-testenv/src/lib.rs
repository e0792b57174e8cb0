//! An embedded, in-process Kubernetes API server for tests: envtest without binaries.
//!
//! Part of [rein](https://example.invalid/rein): every layer above the workqueue talks to a
//! Kubernetes API server, and every rein test talks to this one over real HTTP. It sits
//! beside the stack, not in it: it depends on no other rein crate, and rein crates use it only
//! as a dev-dependency (examples use it when no kubeconfig is given).
//!
//! [`TestEnv::start`] serves every built-in k8s-openapi resource (and CRD-defined ones once the
//! CRD is created) on an ephemeral loopback port, on its own runtime thread, and hands back a
//! ready `kube_client::Client`. The real `kubectl` works against it too
//! ([`TestEnv::write_kubeconfig`], or the `rein-apiserver` binary). Objects are written as
//! kube-apiserver writes them (Go's field order, empty structs, list items of built-in kinds
//! without `kind`/`apiVersion`), so a client that decodes rein-testenv's answers decodes a
//! real server's; `events.k8s.io/v1` Events are a view of the core Events, as on a cluster.
//!
//! It calls webhooks as kube-apiserver does: admission webhooks named by stored
//! Mutating/ValidatingWebhookConfigurations, and the conversion webhook of a CRD with
//! `spec.conversion.strategy: Webhook` — objects are stored in the CRD's storage version and
//! converted through the webhook for every read (get, list, watch) and write in another
//! version ([`TestEnvBuilder::webhook_service`] maps `clientConfig.service` references to local
//! addresses; [`TestEnvBuilder::conversion_webhook_timeout`] bounds a conversion call).
//!
//! Authentication and authorization work as a cluster's: the default client is an admin in
//! `system:masters`; [`TestEnvBuilder::user`] adds users with tokens,
//! [`TestEnv::kubeconfig_for`] hands out a kubeconfig (token or CA-issued client certificate)
//! per user, ServiceAccount tokens come from TokenRequest, and impersonation headers work.
//! The `authorization.k8s.io` reviews answer from the stored RBAC objects, and
//! [`TestEnvBuilder::enforce_rbac`] checks every request against them, so a test can show
//! that an operator's RBAC manifest is enough:
//!
//! ```
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::Pod;
//! use kube_client::api::{Api, ListParams};
//! use rein_testenv::{TestEnv, User};
//!
//! let alice = User::new("alice").token("alice-token");
//! let env = TestEnv::builder().enforce_rbac(true).user(alice.clone()).start().await?;
//! let pods: Api<Pod> = Api::namespaced(env.client_for(&alice).await?, "default");
//! let err = pods.list(&ListParams::default()).await.unwrap_err();
//! assert!(err.to_string().contains(
//!     r#"User "alice" cannot list resource "pods" in API group "" in the namespace "default""#
//! ));
//! # Ok(())
//! # }
//! # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
//! ```
//!
//! ```
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube_client::api::{Api, PostParams};
//!
//! let env = rein_testenv::TestEnv::start().await?;
//! let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! let created = cms.create(&PostParams::default(), &cm).await?;
//! assert!(created.metadata.uid.is_some());
//! # Ok(())
//! # }
//! # tokio::runtime::Runtime::new().unwrap().block_on(demo()).unwrap();
//! ```
//!
//! Writes go through kube-apiserver's built-in admission plugins as on a real cluster
//! (ResourceQuota, LimitRanger, ServiceAccount, Priority, DefaultTolerationSeconds; each one
//! can be turned off with [`TestEnvBuilder::admission_plugin`]), then through the admission
//! webhooks the stored configurations name. As on a real cluster, every namespace has the
//! `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap, a ResourceQuota's
//! `status` shows its usage, and a PodDisruptionBudget's `status` is kept as the disruption
//! controller keeps it, so `pods/eviction` (and `kubectl drain`) answers 429 when a budget
//! blocks. A Pod bound to a node is deleted gracefully, as on a cluster: it stays with a
//! `deletionTimestamp` until a grace-0 delete, unless [`TestEnvBuilder::kubelet`] says a
//! kubelet finishes it.

mod admission;
mod auth;
mod builtin;
mod canonical;
pub mod cli;
mod conversion;
mod env;
mod error;
mod faults;
mod kubelet;
mod openapi;
mod ops;
mod patch;
mod plugins;
mod proto;
mod quantity;
mod rbac;
mod request_export;
mod requests;
mod resources;
mod schema;
mod selectors;
mod server;
mod status;
mod store;
mod tls;
mod yaml;

pub use auth::{ADMIN_USER, User};
pub use env::builder::{CRD_ESTABLISH_TIMEOUT, DEFAULT_TOO_LARGE_RV_WAIT, DEFAULT_WATCH_HISTORY};
#[doc(hidden)]
pub use env::run_until_signal;
pub use env::{TestEnv, TestEnvBuilder};
pub use error::Error;
pub use faults::{Fault, Faults};
pub use kubelet::Kubelet;
pub use plugins::AdmissionPlugin;
pub use request_export::REQUEST_LOG_ENV;
pub use requests::{InFlightRequest, RequestRecord, RequestStage};
