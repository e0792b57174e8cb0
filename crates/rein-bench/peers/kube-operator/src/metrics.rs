//! The operator's Prometheus metrics (prometheus-client): reconciles by result, their
//! duration, and whether this replica leads.

use std::sync::atomic::AtomicI64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    controller: String,
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

/// The registry and the metrics in it.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ReconcileLabels, Counter>,
    errors: Family<ControllerLabel, Counter>,
    duration: Family<ControllerLabel, Histogram>,
    leader: Gauge<i64, AtomicI64>,
}

impl Default for Metrics {
    fn default() -> Self {
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        let errors = Family::<ControllerLabel, Counter>::default();
        let duration = Family::<ControllerLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.005, 2.0, 14))
        });
        let leader = Gauge::<i64, AtomicI64>::default();
        let mut registry = Registry::default();
        registry.register(
            "controller_runtime_reconcile",
            "Reconciles by controller and result",
            reconciles.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Reconciles that failed, by controller",
            errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "How long a reconcile took, by controller",
            duration.clone(),
        );
        registry.register(
            "leader_election_master_status",
            "1 while this replica holds the leader Lease",
            leader.clone(),
        );
        Metrics {
            registry,
            reconciles,
            errors,
            duration,
            leader,
        }
    }
}

impl Metrics {
    /// Counts one reconcile of `controller` and its duration.
    pub fn observe_reconcile(&self, controller: &str, ok: bool, took: Duration) {
        let result = if ok { "success" } else { "error" };
        self.reconciles
            .get_or_create(&ReconcileLabels {
                controller: controller.to_owned(),
                result: result.to_owned(),
            })
            .inc();
        let label = ControllerLabel {
            controller: controller.to_owned(),
        };
        if !ok {
            self.errors.get_or_create(&label).inc();
        }
        self.duration
            .get_or_create(&label)
            .observe(took.as_secs_f64());
    }

    /// Sets the leader gauge.
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// The OpenMetrics text of every metric.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}
