//! Controller and work-queue metrics under controller-runtime's names, registered in
//! `rein_client::metrics::registry()` so existing dashboards work.
//!
//! `controller_runtime_reconcile_total{controller,result}`, `…_reconcile_errors_total`,
//! `…_terminal_reconcile_errors_total`, `…_reconcile_panics_total`, `…_reconcile_timeouts_total`,
//! `…_reconcile_time_seconds`, `…_max_concurrent_reconciles`, `…_active_workers`, and (from
//! [`WorkqueueMetrics`], the one work-queue metrics provider) the `workqueue_*` family labelled
//! `{name, controller}`.

mod workqueue;

use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

pub use workqueue::WorkqueueMetrics;

/// controller-runtime's `reconcile_time_seconds` buckets.
const RECONCILE_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: String,
}

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS)
}

struct Families {
    total: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabel, Counter>,
    terminal: Family<ControllerLabel, Counter>,
    panics: Family<ControllerLabel, Counter>,
    timeouts: Family<ControllerLabel, Counter>,
    time: Family<ControllerLabel, Histogram, fn() -> Histogram>,
    max_concurrent: Family<ControllerLabel, Gauge>,
    active_workers: Family<ControllerLabel, Gauge>,
}

fn families() -> &'static Families {
    static FAMILIES: OnceLock<Families> = OnceLock::new();
    FAMILIES.get_or_init(|| {
        let f = Families {
            total: Family::default(),
            errors: Family::default(),
            terminal: Family::default(),
            panics: Family::default(),
            timeouts: Family::default(),
            time: Family::new_with_constructor(reconcile_histogram),
            max_concurrent: Family::default(),
            active_workers: Family::default(),
        };
        let mut r = rein_client::metrics::registry().lock();
        r.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            f.total.clone(),
        );
        r.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            f.errors.clone(),
        );
        r.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            f.terminal.clone(),
        );
        r.register(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            f.panics.clone(),
        );
        r.register(
            "controller_runtime_reconcile_timeouts",
            "Total number of reconciliation timeouts per controller",
            f.timeouts.clone(),
        );
        r.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            f.time.clone(),
        );
        r.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            f.max_concurrent.clone(),
        );
        r.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            f.active_workers.clone(),
        );
        drop(r);
        f
    })
}

/// One controller's reconcile metrics, label values resolved once.
#[derive(Debug, Clone)]
pub(crate) struct ControllerMetrics {
    pub(crate) success: Counter,
    pub(crate) error: Counter,
    pub(crate) requeue: Counter,
    pub(crate) requeue_after: Counter,
    pub(crate) errors: Counter,
    pub(crate) terminal: Counter,
    pub(crate) panics: Counter,
    pub(crate) timeouts: Counter,
    pub(crate) time: Histogram,
    pub(crate) max_concurrent: Gauge,
    pub(crate) active_workers: Gauge,
}

impl ControllerMetrics {
    /// The metrics of `controller`, every series initialised (to zero on first use).
    pub(crate) fn new(controller: &str) -> Self {
        let f = families();
        let label = ControllerLabel {
            controller: controller.to_owned(),
        };
        let result = |r: &str| {
            f.total
                .get_or_create(&ResultLabels {
                    controller: controller.to_owned(),
                    result: r.to_owned(),
                })
                .clone()
        };
        ControllerMetrics {
            success: result("success"),
            error: result("error"),
            requeue: result("requeue"),
            requeue_after: result("requeue_after"),
            errors: f.errors.get_or_create(&label).clone(),
            terminal: f.terminal.get_or_create(&label).clone(),
            panics: f.panics.get_or_create(&label).clone(),
            timeouts: f.timeouts.get_or_create(&label).clone(),
            time: f.time.get_or_create(&label).clone(),
            max_concurrent: f.max_concurrent.get_or_create(&label).clone(),
            active_workers: f.active_workers.get_or_create(&label).clone(),
        }
    }
}
