//! Tests for the metrics hooks: client-go's `metrics_test.go` recording rules on a paused clock.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::timeout;

use super::*;
use crate::{DelayingQueue, PriorityQueue, PriorityQueueConfig, Queue, QueueConfig};

/// Every value recorded, by "queue/metric".
#[derive(Debug, Default)]
struct Recorded {
    values: BTreeMap<String, f64>,
    observations: BTreeMap<String, Vec<f64>>,
}

#[derive(Debug, Default, Clone)]
struct TestProvider {
    recorded: Arc<Mutex<Recorded>>,
}

impl TestProvider {
    fn value(&self, key: &str) -> f64 {
        self.recorded
            .lock()
            .unwrap()
            .values
            .get(key)
            .copied()
            .unwrap_or(0.0)
    }

    fn observed(&self, key: &str) -> Vec<f64> {
        let recorded = self.recorded.lock().unwrap();
        recorded.observations.get(key).cloned().unwrap_or_default()
    }

    fn metric(&self, name: &str, metric: &str) -> Box<Metric> {
        Box::new(Metric {
            key: format!("{name}/{metric}"),
            recorded: self.recorded.clone(),
        })
    }
}

struct Metric {
    key: String,
    recorded: Arc<Mutex<Recorded>>,
}

impl Metric {
    fn change(&self, key: &str, by: f64) {
        *self
            .recorded
            .lock()
            .unwrap()
            .values
            .entry(key.to_string())
            .or_default() += by;
    }
}

impl GaugeMetric for Metric {
    fn inc(&self) {
        self.change(&self.key, 1.0);
    }
    fn dec(&self) {
        self.change(&self.key, -1.0);
    }
}

impl DepthMetricWithPriority for Metric {
    fn inc(&self, priority: i32) {
        self.change(&format!("{}/{priority}", self.key), 1.0);
    }
    fn dec(&self, priority: i32) {
        self.change(&format!("{}/{priority}", self.key), -1.0);
    }
}

impl CounterMetric for Metric {
    fn inc(&self) {
        self.change(&self.key, 1.0);
    }
}

impl SettableGaugeMetric for Metric {
    fn set(&self, value: f64) {
        self.recorded
            .lock()
            .unwrap()
            .values
            .insert(self.key.clone(), value);
    }
}

impl HistogramMetric for Metric {
    fn observe(&self, value: f64) {
        let mut recorded = self.recorded.lock().unwrap();
        recorded
            .observations
            .entry(self.key.clone())
            .or_default()
            .push(value);
    }
}

impl MetricsProvider for TestProvider {
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        self.metric(name, "depth")
    }
    fn new_depth_metric_with_priority(&self, name: &str) -> Box<dyn DepthMetricWithPriority> {
        self.metric(name, "depth")
    }
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        self.metric(name, "adds")
    }
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        self.metric(name, "latency")
    }
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        self.metric(name, "work")
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        self.metric(name, "unfinished")
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        self.metric(name, "longest")
    }
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        self.metric(name, "retries")
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// client-go `TestMetrics`, step by step.
#[tokio::test(start_paused = true)]
async fn queue_records_client_go_metrics() {
    let provider = TestProvider::default();
    let queue =
        Queue::with_config(QueueConfig::named("test").metrics_provider(Arc::new(provider.clone())));
    queue.add("foo");
    queue.add("foo"); // de-duplicated: not counted
    assert_eq!(provider.value("test/adds"), 1.0);
    assert_eq!(provider.value("test/depth"), 1.0);

    tokio::time::advance(Duration::from_millis(50)).await;
    let item = queue.get().await.unwrap();
    assert_eq!(provider.value("test/depth"), 0.0);
    assert_eq!(provider.observed("test/latency"), [0.05]);

    queue.add("foo"); // while processing: counted once more
    queue.add("foo");
    assert_eq!(provider.value("test/adds"), 2.0);
    assert_eq!(provider.value("test/depth"), 1.0);

    // The unfinished-work gauges refresh every 500 ms.
    tokio::time::sleep(Duration::from_millis(460)).await;
    assert!(
        close(provider.value("test/unfinished"), 0.45),
        "{:?}",
        provider.recorded
    );
    assert!(close(provider.value("test/longest"), 0.45));

    tokio::time::advance(Duration::from_millis(90)).await;
    queue.done(&item);
    let work = provider.observed("test/work");
    assert_eq!(work.len(), 1);
    assert!(close(work[0], 0.55));

    let item = queue.get().await.unwrap();
    let latency = provider.observed("test/latency");
    assert!(close(latency[1], 0.55), "queued since the re-add at 50 ms");
    assert_eq!(provider.value("test/depth"), 0.0);
    queue.done(&item);

    // The refresh task stops on shut-down.
    queue.shut_down();
    let metrics = tokio::runtime::Handle::current().metrics();
    timeout(Duration::from_secs(10), async {
        while metrics.num_alive_tasks() > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("metrics task ended");
}

#[tokio::test(start_paused = true)]
async fn delayed_adds_count_retries() {
    let provider = TestProvider::default();
    let queue = DelayingQueue::with_config(
        QueueConfig::named("delayed").metrics_provider(Arc::new(provider.clone())),
    );
    queue.add_after("a", Duration::ZERO);
    queue.add_after("b", Duration::from_millis(10));
    assert_eq!(provider.value("delayed/retries"), 2.0);
    queue.add("c");
    assert_eq!(provider.value("delayed/retries"), 2.0);
    assert_eq!(provider.value("delayed/adds"), 2.0);
}

#[tokio::test(start_paused = true)]
async fn unnamed_queues_record_nothing() {
    let provider = TestProvider::default();
    let queue =
        Queue::with_config(QueueConfig::default().metrics_provider(Arc::new(provider.clone())));
    queue.add(1);
    assert!(provider.recorded.lock().unwrap().values.is_empty());
    assert_eq!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        0
    );
}

#[tokio::test(start_paused = true)]
async fn priority_queue_depth_is_labelled_by_priority() {
    let provider = TestProvider::default();
    let queue = PriorityQueue::with_config(
        PriorityQueueConfig::named("pq").metrics_provider(Arc::new(provider.clone())),
    );
    queue.add_with_opts(crate::AddOptions::priority(-100), "a");
    assert_eq!(provider.value("pq/depth/-100"), 1.0);
    queue.add("a");
    assert_eq!(provider.value("pq/depth/-100"), 0.0);
    assert_eq!(provider.value("pq/depth/0"), 1.0);
    queue.add_after("b", Duration::from_millis(5));
    assert_eq!(provider.value("pq/retries"), 1.0);
    assert_eq!(
        provider.value("pq/depth/0"),
        1.0,
        "waiting items are not in depth"
    );
    queue.get().await.unwrap();
    queue.get().await.unwrap();
    assert_eq!(provider.value("pq/depth/0"), 0.0);
    assert_eq!(provider.value("pq/adds"), 2.0);
    queue.shut_down();
}

#[test]
fn noop_provider_defaults_record_nothing() {
    let provider = NoopMetricsProvider;
    provider.new_depth_metric("x").inc();
    provider.new_depth_metric_with_priority("x").dec(3);
    provider.new_adds_metric("x").inc();
    provider.new_latency_metric("x").observe(1.0);
    provider.new_unfinished_work_seconds_metric("x").set(1.0);
}
