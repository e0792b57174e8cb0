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
//! ([`TestEnv::write_kubeconfig`], or the `rein-apiserver` binary).
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
//! `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap, and a ResourceQuota's
//! `status` shows its usage.

mod admission;
mod builtin;
mod env;
mod error;
mod faults;
mod openapi;
mod ops;
mod patch;
mod plugins;
mod proto;
mod requests;
mod resources;
mod schema;
mod selectors;
mod server;
mod status;
mod store;
mod tls;

pub use env::builder::{CRD_ESTABLISH_TIMEOUT, DEFAULT_TOO_LARGE_RV_WAIT, DEFAULT_WATCH_HISTORY};
#[doc(hidden)]
pub use env::run_until_signal;
pub use env::{TestEnv, TestEnvBuilder};
pub use error::Error;
pub use faults::{Fault, Faults};
pub use plugins::AdmissionPlugin;
pub use requests::{InFlightRequest, RequestRecord, RequestStage};
