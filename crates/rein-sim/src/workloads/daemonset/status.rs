//! A DaemonSet's status, as kube's `updateDaemonSetStatus` and `storeDaemonSetStatus` write
//! it: per node that should run the set, whether it has a daemon Pod (the oldest counts),
//! whether that is ready, available (`minReadySeconds`) and up to date; daemon Pods on nodes
//! that should not run them are misscheduled.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use rein_client::{Client, PostParams};
use rein_scheme::ObjectKey;

use super::super::Error;
use super::super::pods;
use super::super::replicaset::nonzero;
use super::placement;
use super::{by_creation_and_phase, is_updated, min_ready_seconds};

/// The counts of a status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub(super) desired: i32,
    pub(super) current: i32,
    pub(super) misscheduled: i32,
    pub(super) ready: i32,
    pub(super) updated: i32,
    pub(super) available: i32,
}

/// The counts for `ds` over `nodes` and its Pods by node.
pub(super) fn count(
    ds: &DaemonSet,
    nodes: &[Arc<Node>],
    node_pods: &BTreeMap<String, Vec<Arc<Pod>>>,
    hash: &str,
) -> Counts {
    let spec = super::template(ds).spec.unwrap_or_default();
    let min_ready = min_ready_seconds(ds);
    let now = Timestamp::now();
    let mut counts = Counts::default();
    for node in nodes {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let fit = placement::fit(&spec, node);
        let on_node = node_pods.get(name).filter(|p| !p.is_empty());
        if !fit.should_run {
            if on_node.is_some() {
                counts.misscheduled += 1;
            }
            continue;
        }
        counts.desired += 1;
        let Some(on_node) = on_node else { continue };
        counts.current += 1;
        let mut sorted = on_node.clone();
        sorted.sort_by(|a, b| by_creation_and_phase(a, b));
        let pod = &sorted[0];
        if pods::is_ready(pod) {
            counts.ready += 1;
            if pods::is_available(pod, min_ready, now) {
                counts.available += 1;
            }
        }
        if is_updated(ds, pod, hash) {
            counts.updated += 1;
        }
    }
    counts
}

/// `storeDaemonSetStatus`: writes the counts and `observedGeneration` unless they are
/// already there, retrying once with the object read from the server.
pub(super) async fn store(client: &Client, ds: &DaemonSet, counts: Counts) -> Result<(), Error> {
    let current = ds.status.clone().unwrap_or_default();
    let unavailable = counts.desired - counts.available;
    let unchanged = current.desired_number_scheduled == counts.desired
        && current.current_number_scheduled == counts.current
        && current.number_misscheduled == counts.misscheduled
        && current.number_ready == counts.ready
        && current.updated_number_scheduled.unwrap_or(0) == counts.updated
        && current.number_available.unwrap_or(0) == counts.available
        && current.number_unavailable.unwrap_or(0) == unavailable
        && current.observed_generation >= ds.metadata.generation;
    if unchanged {
        return Ok(());
    }
    let apply = |status: Option<DaemonSetStatus>| DaemonSetStatus {
        observed_generation: ds.metadata.generation,
        desired_number_scheduled: counts.desired,
        current_number_scheduled: counts.current,
        number_misscheduled: counts.misscheduled,
        number_ready: counts.ready,
        updated_number_scheduled: nonzero(counts.updated),
        number_available: nonzero(counts.available),
        number_unavailable: nonzero(unavailable),
        ..status.unwrap_or_default()
    };
    let mut obj = ds.clone();
    obj.status = Some(apply(obj.status.take()));
    match client.status().update(&obj, &PostParams::default()).await {
        Ok(_) => Ok(()),
        Err(err) if err.is_conflict() => {
            let fresh = client
                .api_reader()
                .get::<DaemonSet>(&ObjectKey::from_object(ds))
                .await?;
            let mut obj = Arc::unwrap_or_clone(fresh);
            obj.status = Some(apply(obj.status.take()));
            client.status().update(&obj, &PostParams::default()).await?;
            Ok(())
        }
        Err(err) => Err(err.into()),
    }
}
