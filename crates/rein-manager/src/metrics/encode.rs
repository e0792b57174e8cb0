//! Encodes one or more prometheus-client registries as a single text exposition.

use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::encoding::text;
use prometheus_client::registry::Registry;

/// A registry shared between the code that updates metrics and the server that encodes them.
pub type SharedRegistry = Arc<Mutex<Registry>>;

/// Encodes the process-wide registry, the webhook server's
/// ([`rein_webhook::metrics_registry`], empty until a webhook was called), then `extra`
/// registries in the OpenMetrics text format, ending with a single `# EOF`.
pub fn encode(extra: &[SharedRegistry]) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail; an encoder error would be a bug in a metric type,
    // so it is logged and the rest is still served.
    if let Err(err) = text::encode_registry(&mut out, &rein_client::metrics::registry().lock()) {
        tracing::error!(error = %err, "encoding the process-wide metrics registry failed");
    }
    if let Err(err) = text::encode_registry(&mut out, &rein_webhook::metrics_registry().lock()) {
        tracing::error!(error = %err, "encoding the webhook metrics registry failed");
    }
    for registry in extra {
        if let Err(err) = text::encode_registry(&mut out, &registry.lock()) {
            tracing::error!(error = %err, "encoding a user metrics registry failed");
        }
    }
    if let Err(err) = text::encode_eof(&mut out) {
        tracing::error!(error = %err, "encoding the metrics trailer failed");
    }
    out
}
