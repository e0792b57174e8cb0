//! The one `rein_workqueue::MetricsProvider`: client-go's seven `workqueue_*` metrics in
//! prometheus-client families, for controllers' queues and for queues used on their own, with
//! controller-runtime's `priority` label on the depth of priority queues.

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
    CounterMetric, DepthMetricWithPriority, GaugeMetric, HistogramMetric, MetricsProvider,
    SettableGaugeMetric,
};

/// Work-queue metrics under client-go's `workqueue_*` names, labelled `{name}` with the
/// queue's name (and `{name, controller}` for a controller's own queue).
///
/// `workqueue_depth` of a priority queue (every controller's queue) is broken down by
/// priority, as controller-runtime publishes it: `{name, controller, priority}` with the
/// priority as a decimal string (`"0"`, `"-100"` for the initial list and resyncs); a plain
/// queue of a controller has `priority=""`. A queue used on its own keeps client-go's
/// `{name}` when it is a plain queue and gains `priority` when it is a priority queue. As in
/// controller-runtime, a queue that has seen more than 25 distinct priorities counts all of
/// its depth changes from then on under `priority="exceeded_cardinality_limit"`.
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

    /// The labels of a plain queue's depth: a controller's carry controller-runtime's empty
    /// `priority`, a standalone queue's are client-go's `{name}`.
    fn plain_depth_labels(&self, name: &str) -> QueueLabels {
        let mut labels = self.labels(name);
        if self.controller.is_some() {
            labels.push((PRIORITY_LABEL.to_owned(), String::new()));
        }
        labels
    }
}

impl MetricsProvider for WorkqueueMetrics {
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        let f = &self.families.depth;
        Box::new(GaugeAdapter(
            f.get_or_create(&self.plain_depth_labels(name)).clone(),
        ))
    }
    fn new_depth_metric_with_priority(&self, name: &str) -> Box<dyn DepthMetricWithPriority> {
        Box::new(DepthByPriority {
            family: self.families.depth.clone(),
            labels: self.labels(name),
            series: Mutex::new(PrioritySeries::default()),
        })
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

/// `name` first, then `controller` when the queue belongs to one (and `priority` last on the
/// depth of a priority queue).
type QueueLabels = Vec<(String, String)>;

/// The depth label controller-runtime adds for priority queues.
const PRIORITY_LABEL: &str = "priority";

/// How many distinct priorities one queue's depth is broken down by (controller-runtime's
/// `maxRecommendedUniquePriorities`).
const MAX_PRIORITIES: usize = 25;

/// The `priority` value once a queue has seen more than [`MAX_PRIORITIES`] priorities.
const PRIORITY_OVERFLOW: &str = "exceeded_cardinality_limit";
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
            "Current depth of workqueue by workqueue and priority",
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

/// One queue's depth by priority (controller-runtime's `depthWithPriorityMetric`): the gauge
/// of each priority seen, created on first use and kept, so an add or get costs one short
/// lock and a scan of a few entries, not a label lookup in the family.
struct DepthByPriority {
    family: Family<QueueLabels, Gauge>,
    /// The queue's labels, without `priority`.
    labels: QueueLabels,
    series: Mutex<PrioritySeries>,
}

#[derive(Default)]
struct PrioritySeries {
    /// The gauge of each priority seen so far (at most [`MAX_PRIORITIES`]).
    by_priority: Vec<(i32, Gauge)>,
    /// Set once the queue has seen too many priorities: every change goes here from then on.
    overflow: Option<Gauge>,
}

impl DepthByPriority {
    fn gauge(&self, priority: i32) -> Gauge {
        let mut series = self.series.lock();
        if let Some(gauge) = &series.overflow {
            return gauge.clone();
        }
        if let Some((_, gauge)) = series.by_priority.iter().find(|(p, _)| *p == priority) {
            return gauge.clone();
        }
        if series.by_priority.len() == MAX_PRIORITIES {
            let gauge = self.series_for(PRIORITY_OVERFLOW.to_owned());
            series.by_priority = Vec::new();
            series.overflow = Some(gauge.clone());
            return gauge;
        }
        let gauge = self.series_for(priority.to_string());
        series.by_priority.push((priority, gauge.clone()));
        gauge
    }

    fn series_for(&self, priority: String) -> Gauge {
        let mut labels = self.labels.clone();
        labels.push((PRIORITY_LABEL.to_owned(), priority));
        self.family.get_or_create(&labels).clone()
    }
}

impl DepthMetricWithPriority for DepthByPriority {
    fn inc(&self, priority: i32) {
        self.gauge(priority).inc();
    }
    fn dec(&self, priority: i32) {
        self.gauge(priority).dec();
    }
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
    use std::sync::Arc;

    use prometheus_client::encoding::text::encode;
    use rein_workqueue::{AddOptions, MetricsProvider, PriorityQueue, PriorityQueueConfig};

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
                "workqueue_depth{name=\"unit-test-queue\",controller=\"unit-test-ctrl\",priority=\"\"} 1"
            ),
            "{out}"
        );
        assert!(
            text(&metrics).lines().all(|l| l.starts_with('#')),
            "own registry unused"
        );
    }

    #[tokio::test]
    async fn a_priority_queue_publishes_its_depth_by_priority() {
        let metrics = WorkqueueMetrics::new();
        let queue = PriorityQueue::with_config(
            PriorityQueueConfig::named("by-priority").metrics_provider(Arc::new(metrics.clone())),
        );
        queue.add_with_opts(AddOptions::priority(-100), "resync-1");
        queue.add_with_opts(AddOptions::priority(-100), "resync-2");
        queue.add("event");
        let out = text(&metrics);
        for series in [
            "workqueue_depth{name=\"by-priority\",priority=\"-100\"} 2",
            "workqueue_depth{name=\"by-priority\",priority=\"0\"} 1",
        ] {
            assert!(out.contains(series), "{series} missing:\n{out}");
        }
        // Raising a waiting item's priority moves it between series; a get takes it out.
        queue.add_with_opts(AddOptions::priority(0), "resync-2");
        assert_eq!(queue.get().await, Some("event"));
        let out = text(&metrics);
        for series in [
            "workqueue_depth{name=\"by-priority\",priority=\"-100\"} 1",
            "workqueue_depth{name=\"by-priority\",priority=\"0\"} 1",
        ] {
            assert!(out.contains(series), "{series} missing:\n{out}");
        }
        queue.shut_down();
    }

    #[test]
    fn more_than_25_priorities_collapse_into_one_series() {
        let metrics = WorkqueueMetrics::new();
        let depth = metrics.new_depth_metric_with_priority("many");
        for priority in 0..25 {
            depth.inc(priority);
        }
        depth.inc(25); // the 26th distinct priority
        depth.inc(0); // seen before, but the limit is reached: counted as overflow too
        let out = text(&metrics);
        assert!(
            out.contains("workqueue_depth{name=\"many\",priority=\"24\"} 1"),
            "{out}"
        );
        assert!(!out.contains("priority=\"25\""), "{out}");
        assert!(
            out.contains(
                "workqueue_depth{name=\"many\",priority=\"exceeded_cardinality_limit\"} 2"
            ),
            "{out}"
        );
    }
}
