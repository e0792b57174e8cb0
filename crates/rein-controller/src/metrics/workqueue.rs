//! The one `rein_workqueue::MetricsProvider`: client-go's seven `workqueue_*` metrics in
//! prometheus-client families, for controllers' queues and for queues used on their own.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use rein_workqueue::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric,
};

/// Work-queue metrics under client-go's `workqueue_*` names, labelled `{name}` with the
/// queue's name (and `{name, controller}` for a controller's own queue).
///
/// [`WorkqueueMetrics::new`] keeps them in a registry of their own: pass the value to queues
/// (`QueueConfig::metrics_provider`) or install it process-wide with
/// [`rein_workqueue::set_global_metrics_provider`], and serve [`registry`](Self::registry)
/// beside the process-wide one (rein-manager's `MetricsServerOptions::registry`). It is a
/// separate registry because controllers' queues already export `workqueue_*` (labelled with
/// the controller) in the process-wide one, and one registry must not hold a name twice.
#[derive(Clone)]
pub struct WorkqueueMetrics {
    families: Arc<QueueFamilies>,
    /// Where `families` are registered; empty for a controller's provider, whose families
    /// live in the process-wide registry.
    registry: Arc<Mutex<Registry>>,
    /// Set for a controller's queue: added as the `controller` label.
    controller: Option<String>,
}

impl fmt::Debug for WorkqueueMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkqueueMetrics")
            .field("controller", &self.controller)
            .finish_non_exhaustive()
    }
}

impl Default for WorkqueueMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl WorkqueueMetrics {
    /// The seven client-go work-queue metrics, registered in a fresh registry.
    pub fn new() -> Self {
        let families = Arc::new(QueueFamilies::new());
        let mut registry = Registry::default();
        families.register(&mut registry);
        WorkqueueMetrics {
            families,
            registry: Arc::new(Mutex::new(registry)),
            controller: None,
        }
    }

    /// The registry holding these metrics, to serve alongside the process-wide one.
    pub fn registry(&self) -> Arc<Mutex<Registry>> {
        self.registry.clone()
    }

    /// The provider of `controller`'s queue: the process-wide families (in
    /// `rein_client::metrics::registry()`), labelled `{name, controller}`.
    pub(crate) fn for_controller(controller: &str) -> Self {
        WorkqueueMetrics {
            families: controller_families().clone(),
            registry: Arc::new(Mutex::new(Registry::default())),
            controller: Some(controller.to_owned()),
        }
    }

    fn labels(&self, name: &str) -> QueueLabels {
        let mut labels = vec![("name".to_owned(), name.to_owned())];
        if let Some(controller) = &self.controller {
            labels.push(("controller".to_owned(), controller.clone()));
        }
        labels
    }
}

impl MetricsProvider for WorkqueueMetrics {
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        let f = &self.families.depth;
        Box::new(GaugeAdapter(f.get_or_create(&self.labels(name)).clone()))
    }
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        let f = &self.families.adds;
        Box::new(CounterAdapter(f.get_or_create(&self.labels(name)).clone()))
    }
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        let f = &self.families.queue_duration;
        Box::new(HistogramAdapter(
            f.get_or_create(&self.labels(name)).clone(),
        ))
    }
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        let f = &self.families.work_duration;
        Box::new(HistogramAdapter(
            f.get_or_create(&self.labels(name)).clone(),
        ))
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        let f = &self.families.unfinished_work;
        Box::new(FloatGaugeAdapter(
            f.get_or_create(&self.labels(name)).clone(),
        ))
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        let f = &self.families.longest_running;
        Box::new(FloatGaugeAdapter(
            f.get_or_create(&self.labels(name)).clone(),
        ))
    }
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        let f = &self.families.retries;
        Box::new(CounterAdapter(f.get_or_create(&self.labels(name)).clone()))
    }
}

/// `name` first, then `controller` when the queue belongs to one.
type QueueLabels = Vec<(String, String)>;
type FloatGauge = Gauge<f64, AtomicU64>;
type HistogramFamily = Family<QueueLabels, Histogram, fn() -> Histogram>;

/// client-go's work-queue histogram buckets: 10^-8 … 10^1 seconds.
fn queue_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 10))
}

/// The seven families of one registry.
struct QueueFamilies {
    depth: Family<QueueLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    retries: Family<QueueLabels, Counter>,
    queue_duration: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished_work: Family<QueueLabels, FloatGauge>,
    longest_running: Family<QueueLabels, FloatGauge>,
}

impl QueueFamilies {
    fn new() -> Self {
        QueueFamilies {
            depth: Family::default(),
            adds: Family::default(),
            retries: Family::default(),
            queue_duration: Family::new_with_constructor(queue_histogram),
            work_duration: Family::new_with_constructor(queue_histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
        }
    }

    fn register(&self, r: &mut Registry) {
        r.register(
            "workqueue_depth",
            "Current depth of workqueue",
            self.depth.clone(),
        );
        r.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            self.adds.clone(),
        );
        r.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            self.retries.clone(),
        );
        r.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            self.queue_duration.clone(),
        );
        r.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            self.work_duration.clone(),
        );
        r.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
            self.unfinished_work.clone(),
        );
        r.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            self.longest_running.clone(),
        );
    }
}

/// The families controllers' queues share, registered once in the process-wide registry.
fn controller_families() -> &'static Arc<QueueFamilies> {
    static FAMILIES: OnceLock<Arc<QueueFamilies>> = OnceLock::new();
    FAMILIES.get_or_init(|| {
        let families = QueueFamilies::new();
        families.register(&mut rein_client::metrics::registry().lock());
        Arc::new(families)
    })
}

struct GaugeAdapter(Gauge);
struct CounterAdapter(Counter);
struct HistogramAdapter(Histogram);
struct FloatGaugeAdapter(FloatGauge);

impl GaugeMetric for GaugeAdapter {
    fn inc(&self) {
        self.0.inc();
    }
    fn dec(&self) {
        self.0.dec();
    }
}

impl CounterMetric for CounterAdapter {
    fn inc(&self) {
        self.0.inc();
    }
}

impl HistogramMetric for HistogramAdapter {
    fn observe(&self, value: f64) {
        self.0.observe(value);
    }
}

impl SettableGaugeMetric for FloatGaugeAdapter {
    fn set(&self, value: f64) {
        self.0.set(value);
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::encoding::text::encode;
    use rein_workqueue::MetricsProvider;

    use super::WorkqueueMetrics;

    fn text(metrics: &WorkqueueMetrics) -> String {
        let mut out = String::new();
        encode(&mut out, &metrics.registry().lock()).unwrap();
        out
    }

    #[test]
    fn a_standalone_provider_labels_by_queue_name_in_its_own_registry() {
        let metrics = WorkqueueMetrics::new();
        metrics.new_adds_metric("jobs").inc();
        metrics
            .new_longest_running_processor_seconds_metric("jobs")
            .set(2.0);
        let out = text(&metrics);
        assert!(
            out.contains("workqueue_adds_total{name=\"jobs\"} 1"),
            "{out}"
        );
        assert!(
            out.contains("workqueue_longest_running_processor_seconds{name=\"jobs\"} 2.0"),
            "{out}"
        );
    }

    #[test]
    fn a_controller_provider_writes_the_process_wide_families() {
        let metrics = WorkqueueMetrics::for_controller("unit-test-ctrl");
        metrics.new_depth_metric("unit-test-queue").inc();
        let mut out = String::new();
        encode(&mut out, &rein_client::metrics::registry().lock()).unwrap();
        assert!(
            out.contains(
                "workqueue_depth{name=\"unit-test-queue\",controller=\"unit-test-ctrl\"} 1"
            ),
            "{out}"
        );
        assert!(
            text(&metrics).lines().all(|l| l.starts_with('#')),
            "own registry unused"
        );
    }
}
