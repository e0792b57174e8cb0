//! The per-queue metrics recorder: client-go's recording rules over the provider's metrics.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::{
    CounterMetric, DepthMetricWithPriority, GaugeMetric, HistogramMetric, MetricsProvider,
    SettableGaugeMetric, global_metrics_provider,
};
use crate::sync::Closed;

/// How often the unfinished-work gauges are refreshed (client-go's
/// `defaultUnfinishedWorkUpdatePeriod`).
pub(crate) const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// When an item was added (while waiting) and when its processing started (while in flight).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ItemTimes {
    pub(crate) added: Option<Instant>,
    pub(crate) started: Option<Instant>,
}

enum Depth {
    Plain(Box<dyn GaugeMetric>),
    ByPriority(Box<dyn DepthMetricWithPriority>),
}

/// The metrics of one named queue.
pub(crate) struct Recorder {
    depth: Depth,
    adds: Box<dyn CounterMetric>,
    latency: Box<dyn HistogramMetric>,
    work_duration: Box<dyn HistogramMetric>,
    unfinished: Box<dyn SettableGaugeMetric>,
    longest: Box<dyn SettableGaugeMetric>,
    retries: Box<dyn CounterMetric>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

impl Recorder {
    /// The recorder for a queue, or `None` when the queue records nothing (no name, or no
    /// provider given and none set globally).
    pub(crate) fn new(
        name: &str,
        provider: Option<&Arc<dyn MetricsProvider>>,
        by_priority: bool,
    ) -> Option<Self> {
        if name.is_empty() {
            return None;
        }
        let provider = match provider {
            Some(provider) => provider.clone(),
            None => global_metrics_provider()?,
        };
        let depth = if by_priority {
            Depth::ByPriority(provider.new_depth_metric_with_priority(name))
        } else {
            Depth::Plain(provider.new_depth_metric(name))
        };
        Some(Self {
            depth,
            adds: provider.new_adds_metric(name),
            latency: provider.new_latency_metric(name),
            work_duration: provider.new_work_duration_metric(name),
            unfinished: provider.new_unfinished_work_seconds_metric(name),
            longest: provider.new_longest_running_processor_seconds_metric(name),
            retries: provider.new_retries_metric(name),
        })
    }

    /// An item newly needs processing.
    pub(crate) fn added(&self, times: &mut ItemTimes, now: Instant, priority: i32) {
        self.adds.inc();
        self.depth_inc(priority);
        if times.added.is_none() {
            times.added = Some(now);
        }
    }

    /// An item was handed out.
    pub(crate) fn got(&self, times: &mut ItemTimes, now: Instant, priority: i32) {
        self.depth_dec(priority);
        times.started = Some(now);
        if let Some(added) = times.added.take() {
            self.latency.observe(seconds(now - added));
        }
    }

    /// A handed-out item is done.
    pub(crate) fn done(&self, times: &mut ItemTimes, now: Instant) {
        if let Some(started) = times.started.take() {
            self.work_duration.observe(seconds(now - started));
        }
    }

    /// A waiting item moved between priorities.
    pub(crate) fn moved(&self, from: i32, to: i32) {
        self.depth_dec(from);
        self.depth_inc(to);
    }

    /// A delayed add.
    pub(crate) fn retried(&self) {
        self.retries.inc();
    }

    /// Refreshes the unfinished-work gauges from the start times of the items in flight.
    pub(crate) fn update_unfinished(&self, starts: impl Iterator<Item = Instant>, now: Instant) {
        let mut total = 0.0;
        let mut longest = 0.0_f64;
        for start in starts {
            let running = seconds(now.saturating_duration_since(start));
            total += running;
            longest = longest.max(running);
        }
        self.unfinished.set(total);
        self.longest.set(longest);
    }

    fn depth_inc(&self, priority: i32) {
        match &self.depth {
            Depth::Plain(gauge) => gauge.inc(),
            Depth::ByPriority(gauge) => gauge.inc(priority),
        }
    }

    fn depth_dec(&self, priority: i32) {
        match &self.depth {
            Depth::Plain(gauge) => gauge.dec(),
            Depth::ByPriority(gauge) => gauge.dec(priority),
        }
    }
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// A queue whose unfinished-work gauges a background task refreshes.
pub(crate) trait UnfinishedWork: Send + Sync + 'static {
    /// Refreshes the gauges now.
    fn update_unfinished_work(&self);
}

/// Spawns the task refreshing the gauges every 500 ms until `closed` is closed or the queue is
/// dropped (client-go's `updateUnfinishedWorkLoop`). Does nothing outside a tokio runtime.
pub(crate) fn spawn_unfinished_work_loop<Q: UnfinishedWork>(queue: Weak<Q>, closed: Arc<Closed>) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let first = Instant::now() + UNFINISHED_WORK_UPDATE_PERIOD;
    handle.spawn(async move {
        let mut ticker = tokio::time::interval_at(first, UNFINISHED_WORK_UPDATE_PERIOD);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = closed.closed() => return,
            }
            if closed.is_closed() {
                return;
            }
            let Some(queue) = queue.upgrade() else { return };
            queue.update_unfinished_work();
        }
    });
}
