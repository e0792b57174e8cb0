//! controller-runtime's webhook metrics, in a registry of their own:
//! `controller_runtime_webhook_requests_total{webhook,code}`,
//! `controller_runtime_webhook_requests_in_flight{webhook}`,
//! `controller_runtime_webhook_latency_seconds{webhook}` and
//! `controller_runtime_webhook_panics_total`.

use std::sync::OnceLock;

use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The registry holding this process's `controller_runtime_webhook_*` metrics, shared by every
/// [`WebhookServer`](crate::WebhookServer). It stays empty until the first admission request,
/// so a process without webhooks exports none of them; rein-manager's metrics server encodes
/// it after the process-wide registry.
pub fn metrics_registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| Mutex::new(Registry::default()))
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct WebhookLabel {
    webhook: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CodeLabels {
    webhook: String,
    code: String,
}

struct Families {
    requests: Family<CodeLabels, Counter>,
    in_flight: Family<WebhookLabel, Gauge>,
    latency: Family<WebhookLabel, Histogram, fn() -> Histogram>,
    panics: Counter,
}

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 12))
}

fn families() -> &'static Families {
    static FAMILIES: OnceLock<Families> = OnceLock::new();
    FAMILIES.get_or_init(|| {
        let f = Families {
            requests: Family::default(),
            in_flight: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            panics: Counter::default(),
        };
        let mut r = metrics_registry().lock();
        r.register(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code",
            f.requests.clone(),
        );
        r.register(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served",
            f.in_flight.clone(),
        );
        r.register(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            f.latency.clone(),
        );
        r.register(
            "controller_runtime_webhook_panics",
            "Total number of webhook panics",
            f.panics.clone(),
        );
        drop(r);
        f
    })
}

/// Tracks one request to `path` from start to answer.
pub(crate) struct InFlight {
    path: String,
    started: std::time::Instant,
}

impl InFlight {
    /// Counts a request to `path` as in flight.
    pub(crate) fn start(path: &str) -> Self {
        families()
            .in_flight
            .get_or_create(&WebhookLabel {
                webhook: path.to_owned(),
            })
            .inc();
        Self {
            path: path.to_owned(),
            started: std::time::Instant::now(),
        }
    }

    /// Records the answer's HTTP status and latency.
    pub(crate) fn finish(self, code: u16) {
        let f = families();
        let label = WebhookLabel {
            webhook: self.path.clone(),
        };
        f.in_flight.get_or_create(&label).dec();
        f.latency
            .get_or_create(&label)
            .observe(self.started.elapsed().as_secs_f64());
        f.requests
            .get_or_create(&CodeLabels {
                webhook: self.path,
                code: code.to_string(),
            })
            .inc();
    }
}

/// Counts a recovered handler panic.
pub(crate) fn record_panic() {
    families().panics.inc();
}
