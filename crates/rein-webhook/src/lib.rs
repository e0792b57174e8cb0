//! The admission and conversion webhook server (controller-runtime's `pkg/webhook`,
//! `pkg/webhook/admission` and `pkg/webhook/conversion`), HTTPS only.
//!
//! `rein-webhook` sits low in rein's stack: it depends on `rein-serve` (the HTTP serving loop)
//! and kube-core's admission types, and on no crate that talks to an API server. `rein-manager`
//! runs the server of its `Options::webhook` (register handlers on `Manager::webhook_server`)
//! and re-exports this crate as `rein_manager::webhook` (`rein::manager::webhook` in the
//! facade). Any other server runs wherever [`WebhookServer::run`] is awaited; in a manager, as
//! a `RunnableFn` without leader election.
//!
//! - [`WebhookServer`] serves one [`AdmissionHandler`] per path over TLS 1.2/1.3 (certificate
//!   and key from files or PEM, files re-read when rotated; [`GeneratedCertificates`] makes a
//!   CA and serving certificate for tests). A plain-HTTP client gets a `400` and the
//!   connection is closed.
//! - Bodies must be `application/json` `admission.k8s.io/v1` (or `v1beta1`) AdmissionReviews of
//!   at most 7 MiB; anything else is answered with an AdmissionReview whose response has
//!   `allowed: false` and a 400-class `status.code` (413 when too large) — never a crash.
//!   Handler panics are recovered into a 500 response.
//! - [`CustomDefaulter`] answers with a JSON patch computed from the object's change;
//!   [`CustomValidator`] allows (with warnings) or denies. Registered with
//!   [`WebhookServer::register_defaulter`] / [`WebhookServer::register_validator`] at
//!   controller-runtime's paths (`/mutate-<group>-<version>-<kind>`, `/validate-…`).
//! - Conversion webhooks in controller-runtime's hub-and-spoke shape: one [`Hub`] version per
//!   kind, every other version [`Convertible`] to and from it (plain traits on
//!   `#[derive(CustomResource)]` types). [`WebhookServer::register_conversion`] serves a
//!   [`Conversion`] at [`CONVERT_PATH`] (`/convert`, shared by every kind) as
//!   `apiextensions.k8s.io/v1` ConversionReviews; a spoke converts to another spoke through
//!   the hub. Failures (a converter's [`ConversionError`], an unknown kind or version, a
//!   panic, an unreadable review) are answered as a ConversionReview whose `result` is a
//!   `Failure` with a message.
//! - [`AdmissionClient`] with [`review_request`] / [`conversion_request`] calls a webhook the
//!   way the API server does.
//! - [`WebhookServer::started_checker`] tells whether the server accepts connections
//!   (controller-runtime's `StartedChecker`; rein-manager serves it as a readiness check).
//! - The server records `controller_runtime_webhook_*` metrics in [`metrics_registry`], which
//!   rein-manager's metrics server encodes after the process-wide registry.
//!
//! ```
//! use std::sync::Arc;
//!
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use rein_webhook::{
//!     AdmissionClient, AdmissionError, CustomValidator, GeneratedCertificates, Operation,
//!     Warnings, WebhookServer, WebhookServerOptions, review_request,
//! };
//! use tokio_util::sync::CancellationToken;
//!
//! /// Refuses ConfigMaps without data.
//! struct NeedsData;
//!
//! #[async_trait::async_trait]
//! impl CustomValidator<ConfigMap> for NeedsData {
//!     async fn validate_create(&self, cm: &ConfigMap) -> Result<Warnings, AdmissionError> {
//!         match &cm.data {
//!             Some(_) => Ok(Vec::new()),
//!             None => Err(AdmissionError::denied("a ConfigMap needs data")),
//!         }
//!     }
//!
//!     async fn validate_update(
//!         &self,
//!         _old: &ConfigMap,
//!         new: &ConfigMap,
//!     ) -> Result<Warnings, AdmissionError> {
//!         self.validate_create(new).await
//!     }
//! }
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let certs = GeneratedCertificates::generate(&["localhost"])?;
//! let server = Arc::new(
//!     WebhookServer::bind(WebhookServerOptions {
//!         bind_address: "127.0.0.1:0".parse()?,
//!         cert: certs.cert_source(),
//!         ..WebhookServerOptions::default()
//!     })
//!     .await?,
//! );
//! let path = server.register_validator::<ConfigMap, _>(NeedsData)?;
//! let stop = CancellationToken::new();
//! let running = tokio::spawn({
//!     let (server, stop) = (server.clone(), stop.clone());
//!     async move { server.run(stop).await }
//! });
//!
//! // What the API server sends when a ConfigMap without data is created.
//! let client = AdmissionClient::new(server.local_addr(), "localhost", &certs.ca_pem)?;
//! let review = review_request(Operation::Create, Some(&ConfigMap::default()), None)?;
//! let answer = client.review(&path, &review).await?;
//! assert!(!answer.allowed);
//! assert_eq!(answer.result.message, "a ConfigMap needs data");
//!
//! stop.cancel();
//! running.await??;
//! # Ok(()) }
//! ```

mod admission;
mod certwatcher;
mod client;
mod conversion;
mod error;
mod metrics;
mod review;
mod server;
mod tls;
mod typed;

pub use admission::{AdmissionError, AdmissionHandler, AdmissionRequest, Warnings, allowed};
pub use client::{AdmissionClient, conversion_request, review_request};
pub use conversion::{CONVERT_PATH, Conversion, ConversionError, Convertible, Hub};
pub use error::Error;
pub use kube_core::admission::{AdmissionResponse, AdmissionReview, Operation};
pub use kube_core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
pub use metrics::metrics_registry;
pub use server::{StartedChecker, WebhookServer, WebhookServerOptions};
pub use tls::{CertSource, GeneratedCertificates, server_config};
pub use typed::{
    CustomDefaulter, CustomValidator, DefaulterOptions, DefaultingWebhook, ValidatingWebhook,
    WebhookObject, mutate_path, validate_path,
};
