//! The process-wide Prometheus registry (controller-runtime's `metrics.Registry`), the
//! client's read-path counter, client-go's REST client metrics ([`RestClientMetricsLayer`]) and,
//! on Linux, the process collector's `process_*` metrics.

mod process;
mod rest;

use std::sync::OnceLock;

use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

pub use crate::client::{WaitOutcome, read_your_writes_waits};
pub use rest::{RestClientMetrics, RestClientMetricsLayer, rest_client_requests};

/// The registry every rein crate registers its metrics in; rein-manager's metrics server
/// encodes it. It starts with the `process_*` metrics (CPU, memory, file descriptors, start
/// time), as controller-runtime's does.
pub fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(process::ProcessCollector));
        Mutex::new(registry)
    })
}

/// Which path served a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadSource {
    /// The shared informer cache.
    Cache,
    /// The API server.
    ApiServer,
}

impl ReadSource {
    /// The label value: `cache` or `api_server`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cache => "cache",
            Self::ApiServer => "api_server",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReadLabels {
    kind: String,
    verb: String,
    source: String,
}

fn reads() -> &'static Family<ReadLabels, Counter> {
    static READS: OnceLock<Family<ReadLabels, Counter>> = OnceLock::new();
    READS.get_or_init(|| {
        let family = Family::<ReadLabels, Counter>::default();
        registry().lock().register(
            "rein_client_reads",
            "Reads served by the delegating client, by kind, verb and source (cache or api_server)",
            family.clone(),
        );
        family
    })
}

/// Counts one read of `kind` (`get` or `list`) served by `source`.
pub(crate) fn record_read(kind: &str, verb: &str, source: ReadSource) {
    reads()
        .get_or_create(&ReadLabels {
            kind: kind.to_owned(),
            verb: verb.to_owned(),
            source: source.as_str().to_owned(),
        })
        .inc();
}

/// How many reads of `kind` with `verb` the given source has served in this process.
pub fn reads_served(kind: &str, verb: &str, source: ReadSource) -> u64 {
    reads()
        .get_or_create(&ReadLabels {
            kind: kind.to_owned(),
            verb: verb.to_owned(),
            source: source.as_str().to_owned(),
        })
        .get()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_counted_and_encoded() {
        let before = reads_served("TestKind", "get", ReadSource::Cache);
        record_read("TestKind", "get", ReadSource::Cache);
        assert_eq!(
            reads_served("TestKind", "get", ReadSource::Cache),
            before + 1
        );
        assert_eq!(reads_served("TestKind", "get", ReadSource::ApiServer), 0);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry().lock()).unwrap();
        assert!(text.contains("rein_client_reads_total"), "{text}");
        assert!(text.contains("source=\"cache\""), "{text}");
    }
}
