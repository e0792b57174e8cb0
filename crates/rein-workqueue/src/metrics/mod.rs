//! Metrics hooks: the client-go workqueue metric set behind a provider trait, no-op by default.
//!
//! A queue records metrics only when it has a name and a provider (its own, or the process-wide
//! one set with [`set_global_metrics_provider`]); otherwise it does no metrics work at all.
//! Recording follows client-go exactly: `adds` and `depth` count an item when it newly needs
//! processing (de-duplicated adds do not count), `get` observes the queue latency, `done`
//! observes the work duration, and every 500 ms the unfinished-work and longest-running gauges
//! are refreshed until the queue shuts down. `retries` counts every delayed add.

pub(crate) mod recorder;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::{Arc, OnceLock};

/// A gauge that goes up and down (queue depth).
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
}

/// A gauge set to a value (unfinished work seconds, longest running processor seconds).
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the value.
    fn set(&self, value: f64);
}

/// A monotonically increasing counter (adds, retries).
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A distribution of observed values in seconds (queue latency, work duration).
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, value: f64);
}

/// A depth gauge labelled by priority (the priority queue's `workqueue_depth{priority}`).
pub trait DepthMetricWithPriority: Send + Sync {
    /// Adds one at `priority`.
    fn inc(&self, priority: i32);
    /// Subtracts one at `priority`.
    fn dec(&self, priority: i32);
}

/// Makes the metrics of one named queue (client-go's `MetricsProvider`).
///
/// Every method has a no-op default, so a provider implements only what it exports. The
/// Prometheus names used by controller-runtime are `workqueue_depth`, `workqueue_adds_total`,
/// `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`,
/// `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds` and
/// `workqueue_retries_total`, each labelled with the queue name.
pub trait MetricsProvider: Send + Sync + fmt::Debug {
    /// Items waiting to be processed.
    fn new_depth_metric(&self, _name: &str) -> Box<dyn GaugeMetric> {
        Box::new(Noop)
    }
    /// Items waiting, by priority (priority queue only). Defaults to the plain depth metric.
    fn new_depth_metric_with_priority(&self, name: &str) -> Box<dyn DepthMetricWithPriority> {
        Box::new(IgnorePriority(self.new_depth_metric(name)))
    }
    /// Adds that made an item need processing.
    fn new_adds_metric(&self, _name: &str) -> Box<dyn CounterMetric> {
        Box::new(Noop)
    }
    /// Seconds an item waited in the queue before being handed out.
    fn new_latency_metric(&self, _name: &str) -> Box<dyn HistogramMetric> {
        Box::new(Noop)
    }
    /// Seconds from hand-out to `done`.
    fn new_work_duration_metric(&self, _name: &str) -> Box<dyn HistogramMetric> {
        Box::new(Noop)
    }
    /// Sum of seconds the items in flight have been processed so far.
    fn new_unfinished_work_seconds_metric(&self, _name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(Noop)
    }
    /// Seconds the longest-running item in flight has been processed so far.
    fn new_longest_running_processor_seconds_metric(
        &self,
        _name: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        Box::new(Noop)
    }
    /// Delayed (retried) adds.
    fn new_retries_metric(&self, _name: &str) -> Box<dyn CounterMetric> {
        Box::new(Noop)
    }
}

/// The provider that records nothing (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopMetricsProvider;

impl MetricsProvider for NoopMetricsProvider {}

static GLOBAL_PROVIDER: OnceLock<Arc<dyn MetricsProvider>> = OnceLock::new();

/// Sets the process-wide provider used by named queues that were not given one (client-go's
/// `SetProvider`): the first call wins; returns false if a provider was already set. Queues
/// created earlier keep recording nothing.
pub fn set_global_metrics_provider(provider: Arc<dyn MetricsProvider>) -> bool {
    GLOBAL_PROVIDER.set(provider).is_ok()
}

/// The process-wide provider, if one was set.
pub fn global_metrics_provider() -> Option<Arc<dyn MetricsProvider>> {
    GLOBAL_PROVIDER.get().cloned()
}

/// Records nothing.
struct Noop;

impl GaugeMetric for Noop {
    fn inc(&self) {}
    fn dec(&self) {}
}

impl SettableGaugeMetric for Noop {
    fn set(&self, _value: f64) {}
}

impl CounterMetric for Noop {
    fn inc(&self) {}
}

impl HistogramMetric for Noop {
    fn observe(&self, _value: f64) {}
}

/// Adapts a plain depth gauge to the priority-labelled one.
struct IgnorePriority(Box<dyn GaugeMetric>);

impl DepthMetricWithPriority for IgnorePriority {
    fn inc(&self, _priority: i32) {
        self.0.inc();
    }
    fn dec(&self, _priority: i32) {
        self.0.dec();
    }
}
