//! The metrics server (controller-runtime's `pkg/metrics/server`) and a Prometheus-backed
//! work-queue metrics provider.
//!
//! [`MetricsServer`] serves `/metrics` in the Prometheus/OpenMetrics text format, encoding the
//! process-wide registry ([`rein_client::metrics::registry()`], where rein's controller,
//! work-queue and client metrics live), the webhook server's
//! ([`rein_webhook::metrics_registry()`]), then any registries the user adds. It binds to
//! loopback by default and is a rein-controller `Runnable` that does not need leader election.
//! With [`MetricsServerOptions::secure`] ([`SecureServing`]) it serves HTTPS and lets in only
//! scrapers the API server authenticates (TokenReview) and authorizes (SubjectAccessReview
//! for `get` on the metrics path), as controller-runtime's
//! `filters.WithAuthenticationAndAuthorization`.
//!
//! [`WorkqueueMetrics`] (rein-controller's, re-exported here) implements
//! [`rein_workqueue::MetricsProvider`] with client-go's `workqueue_*` names for queues used
//! outside controllers, in a registry of its own to serve here (controllers' own queues report
//! under these names, labelled with the controller, in the process-wide registry).

mod cache;
mod encode;
mod error;
mod secure;
#[cfg(test)]
mod secure_tests;
mod server;
#[cfg(test)]
mod tests;

pub use encode::{SharedRegistry, encode};
pub use error::Error;
#[doc(inline)]
pub use rein_controller::WorkqueueMetrics;
pub use secure::{
    ALLOW_CACHE_TTL, DECISION_CACHE_CAPACITY, DENY_CACHE_TTL, SecureServing, TOKEN_CACHE_CAPACITY,
    TOKEN_CACHE_TTL,
};
pub use server::{DEBUG_QUEUES_PATH, MetricsServer, MetricsServerOptions};
