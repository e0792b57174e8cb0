//! The admission webhook server (controller-runtime's `pkg/webhook` and
//! `pkg/webhook/admission`), HTTPS only.
//!
//! - [`WebhookServer`] serves one [`AdmissionHandler`] per path over TLS 1.2/1.3 (certificate
//!   and key from files or PEM; [`GeneratedCertificates`] makes a CA and serving certificate
//!   for tests). A plain-HTTP client gets a `400` and the connection is closed.
//! - Bodies must be `application/json` `admission.k8s.io/v1` (or `v1beta1`) AdmissionReviews of
//!   at most 7 MiB; anything else is answered with an AdmissionReview whose response has
//!   `allowed: false` and a 400-class `status.code` (413 when too large) — never a crash.
//!   Handler panics are recovered into a 500 response.
//! - [`CustomDefaulter`] answers with a JSON patch computed from the object's change;
//!   [`CustomValidator`] allows (with warnings) or denies. Registered with
//!   [`WebhookServer::register_defaulter`] / [`WebhookServer::register_validator`] at
//!   controller-runtime's paths (`/mutate-<group>-<version>-<kind>`, `/validate-…`).
//! - [`AdmissionClient`] and [`review_request`] call a webhook the way the API server does.
//!
//! The server is a rein-controller `Runnable` that does not need leader election, and records
//! `controller_runtime_webhook_*` metrics in the process-wide registry.

mod admission;
mod certwatcher;
mod client;
mod error;
mod metrics;
mod review;
mod server;
#[cfg(test)]
mod tests;
mod tls;
mod typed;

pub use admission::{AdmissionError, AdmissionHandler, AdmissionRequest, Warnings, allowed};
pub use client::{AdmissionClient, review_request};
pub use error::Error;
pub use kube_core::admission::{AdmissionResponse, AdmissionReview, Operation};
pub use server::{WebhookServer, WebhookServerOptions};
pub use tls::{CertSource, GeneratedCertificates};
pub use typed::{
    CustomDefaulter, CustomValidator, DefaulterOptions, DefaultingWebhook, ValidatingWebhook,
    WebhookObject, mutate_path, validate_path,
};
