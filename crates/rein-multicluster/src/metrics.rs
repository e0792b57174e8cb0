//! The fleet's metrics, labelled by cluster, in rein's process-wide registry (served by the
//! manager's metrics server):
//!
//! - `rein_multicluster_cluster_engaged{cluster}` — 1 while a member is engaged (the series
//!   goes when it is disengaged);
//! - `rein_multicluster_cluster_healthy{cluster}` — 1 when its last health probe answered,
//!   0 when it did not (unreachable);
//! - `rein_multicluster_reconcile_total{controller, cluster, result}` — reconciles by outcome
//!   (`success`, `requeue`, `error`).

use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use crate::name::ClusterName;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ClusterLabel {
    cluster: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReconcileLabels {
    controller: String,
    cluster: String,
    result: String,
}

struct Families {
    engaged: Family<ClusterLabel, Gauge>,
    healthy: Family<ClusterLabel, Gauge>,
    reconciles: Family<ReconcileLabels, Counter>,
}

fn families() -> &'static Families {
    static FAMILIES: OnceLock<Families> = OnceLock::new();
    FAMILIES.get_or_init(|| {
        let f = Families {
            engaged: Family::default(),
            healthy: Family::default(),
            reconciles: Family::default(),
        };
        let mut r = rein_client::metrics::registry().lock();
        r.register(
            "rein_multicluster_cluster_engaged",
            "Whether the member cluster is engaged (1)",
            f.engaged.clone(),
        );
        r.register(
            "rein_multicluster_cluster_healthy",
            "Whether the member cluster answered its last health probe (1) or not (0)",
            f.healthy.clone(),
        );
        r.register(
            "rein_multicluster_reconcile",
            "Reconciles per fleet controller and cluster, by result",
            f.reconciles.clone(),
        );
        f
    })
}

fn label(cluster: &ClusterName) -> ClusterLabel {
    ClusterLabel {
        cluster: cluster.label(),
    }
}

/// A member was engaged.
pub(crate) fn engaged(cluster: &ClusterName) {
    families().engaged.get_or_create(&label(cluster)).set(1);
}

/// A member was disengaged: its series go.
pub(crate) fn disengaged(cluster: &ClusterName) {
    let f = families();
    f.engaged.remove(&label(cluster));
    f.healthy.remove(&label(cluster));
}

/// A member's health probe answered (or not).
pub(crate) fn set_healthy(cluster: &ClusterName, healthy: bool) {
    families()
        .healthy
        .get_or_create(&label(cluster))
        .set(i64::from(healthy));
}

/// The outcome of one reconcile.
pub(crate) fn reconciled(controller: &str, cluster: &ClusterName, result: &'static str) {
    families()
        .reconciles
        .get_or_create(&ReconcileLabels {
            controller: controller.to_owned(),
            cluster: cluster.label(),
            result: result.to_owned(),
        })
        .inc();
}

/// The health gauge's value now, if the cluster has one (for tests and readiness).
pub fn cluster_healthy_gauge(cluster: &ClusterName) -> Option<i64> {
    let f = families();
    drop(f.engaged.get(&label(cluster))?);
    f.healthy.get(&label(cluster)).map(|g| g.get())
}

/// How many reconciles `controller` ran in `cluster` with `result` (for tests and examples).
pub fn reconcile_count(controller: &str, cluster: &ClusterName, result: &str) -> u64 {
    families()
        .reconciles
        .get(&ReconcileLabels {
            controller: controller.to_owned(),
            cluster: cluster.label(),
            result: result.to_owned(),
        })
        .map(|c| c.get())
        .unwrap_or(0)
}
