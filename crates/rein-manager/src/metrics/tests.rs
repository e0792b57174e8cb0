//! Unit tests of the encoder and the work-queue metrics provider.

use std::sync::Arc;

use parking_lot::Mutex;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use rein_workqueue::MetricsProvider;

use super::{WorkqueueMetrics, encode};

#[test]
fn encodes_extra_registries_after_the_global_one_with_one_eof() {
    let registry = Arc::new(Mutex::new(Registry::default()));
    let counter = Counter::<u64>::default();
    registry
        .lock()
        .register("unit_test_things", "Things counted", counter.clone());
    counter.inc_by(3);
    let out = encode(&[registry.clone(), registry]);
    assert!(out.contains("unit_test_things_total 3"), "{out}");
    assert_eq!(out.matches("# EOF").count(), 1, "{out}");
    assert!(out.ends_with("# EOF\n"), "{out}");
}

#[test]
fn workqueue_provider_uses_client_go_names() {
    let metrics = WorkqueueMetrics::new();
    metrics.new_adds_metric("jobs").inc();
    metrics.new_depth_metric("jobs").inc();
    metrics.new_retries_metric("jobs").inc();
    metrics.new_latency_metric("jobs").observe(0.5);
    metrics.new_unfinished_work_seconds_metric("jobs").set(1.5);
    let out = encode(&[metrics.registry()]);
    for line in [
        "workqueue_adds_total{name=\"jobs\"} 1",
        "workqueue_depth{name=\"jobs\"} 1",
        "workqueue_retries_total{name=\"jobs\"} 1",
        "workqueue_queue_duration_seconds_count{name=\"jobs\"} 1",
        "workqueue_unfinished_work_seconds{name=\"jobs\"} 1.5",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
}
