//! Queue configuration: the metrics name and provider shared by every queue kind.

use std::fmt;
use std::sync::Arc;

use crate::metrics::MetricsProvider;

/// Configuration common to every queue (client-go's `TypedQueueConfig`).
///
/// An empty name (the default) means the queue records no metrics. A named queue uses
/// `metrics_provider`, or the process-wide provider
/// ([`set_global_metrics_provider`](crate::set_global_metrics_provider)) when that is `None`.
#[derive(Clone, Default)]
pub struct QueueConfig {
    /// The queue's name in metrics; controllers name their queue after the controller.
    pub name: String,
    /// Where the queue's metrics go.
    pub metrics_provider: Option<Arc<dyn MetricsProvider>>,
}

impl QueueConfig {
    /// A configuration with the given metrics name and the global provider.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            metrics_provider: None,
        }
    }

    /// Uses `provider` for this queue's metrics.
    pub fn metrics_provider(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics_provider = Some(provider);
        self
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics_provider", &self.metrics_provider)
            .finish()
    }
}
