//! A `rein_workqueue::MetricsProvider` feeding prometheus-client metrics under client-go's
//! `workqueue_*` names.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use rein_workqueue::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric,
};

use super::encode::SharedRegistry;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct QueueName {
    name: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;
type HistogramFamily = Family<QueueName, Histogram, fn() -> Histogram>;

/// client-go's work-queue histogram buckets: 10^-8 … 10^1 seconds.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 10))
}

/// Work-queue metrics in a registry of their own, labelled `{name}` with the queue's name.
///
/// Pass it to queues (`QueueConfig::metrics_provider`) or install it process-wide with
/// [`rein_workqueue::set_global_metrics_provider`], and serve [`registry`](Self::registry)
/// through [`MetricsServerOptions::registry`](super::MetricsServerOptions::registry). It keeps
/// its own registry because controllers' queues already export `workqueue_*` (labelled with
/// the controller) in the process-wide one, and one registry must not hold a name twice.
#[derive(Clone)]
pub struct WorkqueueMetrics {
    registry: SharedRegistry,
    depth: Family<QueueName, Gauge>,
    adds: Family<QueueName, Counter>,
    retries: Family<QueueName, Counter>,
    latency: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished_work: Family<QueueName, FloatGauge>,
    longest_running: Family<QueueName, FloatGauge>,
}

impl fmt::Debug for WorkqueueMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkqueueMetrics").finish_non_exhaustive()
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
        let this = Self {
            registry: Arc::new(Mutex::new(Registry::default())),
            depth: Family::default(),
            adds: Family::default(),
            retries: Family::default(),
            latency: Family::new_with_constructor(duration_histogram),
            work_duration: Family::new_with_constructor(duration_histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
        };
        {
            let mut r = this.registry.lock();
            r.register(
                "workqueue_depth",
                "Current depth of workqueue",
                this.depth.clone(),
            );
            r.register(
                "workqueue_adds",
                "Total number of adds handled by workqueue",
                this.adds.clone(),
            );
            r.register(
                "workqueue_retries",
                "Total number of retries handled by workqueue",
                this.retries.clone(),
            );
            r.register(
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested",
                this.latency.clone(),
            );
            r.register(
                "workqueue_work_duration_seconds",
                "How long in seconds processing an item from workqueue takes",
                this.work_duration.clone(),
            );
            r.register(
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
                this.unfinished_work.clone(),
            );
            r.register(
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running",
                this.longest_running.clone(),
            );
        }
        this
    }

    /// The registry holding these metrics, to serve alongside the process-wide one.
    pub fn registry(&self) -> SharedRegistry {
        self.registry.clone()
    }
}

fn label(name: &str) -> QueueName {
    QueueName {
        name: name.to_owned(),
    }
}

struct GaugeHandle(Gauge);
impl GaugeMetric for GaugeHandle {
    fn inc(&self) {
        self.0.inc();
    }
    fn dec(&self) {
        self.0.dec();
    }
}

struct CounterHandle(Counter);
impl CounterMetric for CounterHandle {
    fn inc(&self) {
        self.0.inc();
    }
}

struct HistogramHandle(Histogram);
impl HistogramMetric for HistogramHandle {
    fn observe(&self, value: f64) {
        self.0.observe(value);
    }
}

struct FloatGaugeHandle(FloatGauge);
impl SettableGaugeMetric for FloatGaugeHandle {
    fn set(&self, value: f64) {
        self.0.set(value);
    }
}

impl MetricsProvider for WorkqueueMetrics {
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        Box::new(GaugeHandle(self.depth.get_or_create(&label(name)).clone()))
    }
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(CounterHandle(self.adds.get_or_create(&label(name)).clone()))
    }
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(HistogramHandle(
            self.latency.get_or_create(&label(name)).clone(),
        ))
    }
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(HistogramHandle(
            self.work_duration.get_or_create(&label(name)).clone(),
        ))
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(FloatGaugeHandle(
            self.unfinished_work.get_or_create(&label(name)).clone(),
        ))
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        Box::new(FloatGaugeHandle(
            self.longest_running.get_or_create(&label(name)).clone(),
        ))
    }
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(CounterHandle(
            self.retries.get_or_create(&label(name)).clone(),
        ))
    }
}
