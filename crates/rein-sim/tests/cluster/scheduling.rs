//! The scheduler: binding, spreading, the Unschedulable message, taints and tolerations,
//! retries when room frees up.

use std::collections::{BTreeMap, BTreeSet};

use kube_client::api::DeleteParams;
use rein_sim::cluster::SimConfig;
use rein_sim::nodes::NodeConfig;
use serde_json::json;

use crate::support::{Sim, fast_config, node_name, pod, unschedulable_message};

#[tokio::test]
async fn pods_are_bound_and_spread_over_the_nodes() {
    let sim = Sim::fast().await;
    for i in 0..6 {
        sim.create(pod(&format!("web-{i}"))).await;
    }
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..6 {
        let bound = sim
            .wait_pod(&format!("web-{i}"), "bound", |p| !node_name(p).is_empty())
            .await;
        *per_node.entry(node_name(&bound).to_owned()).or_default() += 1;
    }
    let expected: BTreeMap<String, usize> = sim
        .cluster
        .node_names()
        .into_iter()
        .map(|n| (n, 2))
        .collect();
    assert_eq!(per_node, expected, "best-effort Pods spread evenly");
    let message = sim.wait_event("web-0", "Scheduled").await;
    assert!(
        message.starts_with("Successfully assigned default/web-0 to sim-node-"),
        "{message}"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn an_unsatisfiable_node_selector_is_unschedulable() {
    let sim = Sim::fast().await;
    let mut manifest = pod("picky");
    manifest["spec"]["nodeSelector"] = json!({"disktype": "ssd"});
    sim.create(manifest).await;
    let pending = sim
        .wait_pod("picky", "Unschedulable", |p| {
            unschedulable_message(p).is_some()
        })
        .await;
    assert_eq!(
        unschedulable_message(&pending),
        Some(
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. \
             preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
        )
    );
    assert_eq!(node_name(&pending), "");
    let event = sim.wait_event("picky", "FailedScheduling").await;
    assert_eq!(Some(event.as_str()), unschedulable_message(&pending));
    sim.shutdown().await;
}

#[tokio::test]
async fn required_node_affinity_picks_the_node() {
    let mut config = fast_config(3);
    config.nodes[2] = NodeConfig::default().label("zone", "b");
    let sim = Sim::start(config).await;
    let mut manifest = pod("zoned");
    manifest["spec"]["affinity"] = json!({"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b", "c"]}]}
        ]}
    }});
    sim.create(manifest).await;
    let bound = sim
        .wait_pod("zoned", "bound", |p| !node_name(p).is_empty())
        .await;
    assert_eq!(node_name(&bound), "sim-node-2");

    let mut by_name = pod("named");
    by_name["spec"]["affinity"] = json!({"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["sim-node-1"]}]}
        ]}
    }});
    sim.create(by_name).await;
    let bound = sim
        .wait_pod("named", "bound", |p| !node_name(p).is_empty())
        .await;
    assert_eq!(node_name(&bound), "sim-node-1");
    sim.shutdown().await;
}

#[tokio::test]
async fn too_large_a_request_is_unschedulable_and_taints_count() {
    let mut config = fast_config(3);
    config.nodes[0] = NodeConfig::default().taint("dedicated", "gpu", "NoSchedule");
    let sim = Sim::start(config).await;
    let mut manifest = pod("huge");
    manifest["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "5"}});
    sim.create(manifest).await;
    let pending = sim
        .wait_pod("huge", "Unschedulable", |p| {
            unschedulable_message(p).is_some()
        })
        .await;
    assert_eq!(
        unschedulable_message(&pending),
        Some(
            "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, \
             2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not \
             helpful for scheduling, 2 No preemption victims found for incoming pod."
        )
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn a_toleration_lets_a_pod_onto_a_tainted_node() {
    let mut config = fast_config(3);
    config.nodes[0] = NodeConfig::default().taint("dedicated", "gpu", "NoSchedule");
    let sim = Sim::start(config).await;

    // Pinned to the tainted node: with the toleration it lands there, without it cannot.
    let mut tolerant = pod("tolerant");
    tolerant["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": "sim-node-0"});
    tolerant["spec"]["tolerations"] =
        json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]);
    sim.create(tolerant).await;
    let mut intolerant = pod("intolerant");
    intolerant["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": "sim-node-0"});
    sim.create(intolerant).await;

    let bound = sim
        .wait_pod("tolerant", "bound", |p| !node_name(p).is_empty())
        .await;
    assert_eq!(node_name(&bound), "sim-node-0");
    let pending = sim
        .wait_pod("intolerant", "Unschedulable", |p| {
            unschedulable_message(p).is_some()
        })
        .await;
    assert_eq!(
        unschedulable_message(&pending),
        Some(
            "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, \
             2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are \
             available: 3 Preemption is not helpful for scheduling."
        )
    );

    // Unpinned Pods without the toleration never land on the tainted node.
    for i in 0..4 {
        sim.create(pod(&format!("free-{i}"))).await;
    }
    let mut nodes = BTreeSet::new();
    for i in 0..4 {
        let bound = sim
            .wait_pod(&format!("free-{i}"), "bound", |p| !node_name(p).is_empty())
            .await;
        nodes.insert(node_name(&bound).to_owned());
    }
    assert_eq!(
        nodes,
        BTreeSet::from(["sim-node-1".to_owned(), "sim-node-2".to_owned()])
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn an_unschedulable_pod_is_bound_once_room_frees_up() {
    let mut config = SimConfig {
        nodes: vec![NodeConfig::default()],
        ..fast_config(1)
    };
    config.nodes[0].capacity.cpu =
        k8s_openapi::apimachinery::pkg::api::resource::Quantity("1".into());
    let sim = Sim::start(config).await;
    let big = |name: &str| {
        let mut manifest = pod(name);
        manifest["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "800m"}});
        manifest
    };
    sim.create(big("first")).await;
    sim.wait_pod("first", "bound", |p| !node_name(p).is_empty())
        .await;
    sim.create(big("second")).await;
    let pending = sim
        .wait_pod("second", "Unschedulable", |p| {
            unschedulable_message(p).is_some()
        })
        .await;
    assert_eq!(
        unschedulable_message(&pending),
        Some(
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: \
             1 No preemption victims found for incoming pod."
        )
    );
    sim.pods()
        .delete("first", &DeleteParams::default().grace_period(0))
        .await
        .expect("deleting the first Pod");
    let bound = sim
        .wait_pod("second", "bound after the first went", |p| {
            !node_name(p).is_empty()
        })
        .await;
    assert_eq!(node_name(&bound), "sim-node-0");
    sim.shutdown().await;
}

#[tokio::test]
async fn an_unschedulable_pod_is_bound_once_a_node_matches() {
    let sim = Sim::fast().await;
    let mut manifest = pod("waiting");
    manifest["spec"]["nodeSelector"] = json!({"disktype": "ssd"});
    sim.create(manifest).await;
    sim.wait_pod("waiting", "Unschedulable", |p| {
        unschedulable_message(p).is_some()
    })
    .await;
    let label = json!({"metadata": {"labels": {"disktype": "ssd"}}});
    kube_client::Api::<k8s_openapi::api::core::v1::Node>::all(sim.env.client())
        .patch(
            "sim-node-2",
            &kube_client::api::PatchParams::default(),
            &kube_client::api::Patch::Merge(&label),
        )
        .await
        .expect("labelling the node");
    let bound = sim
        .wait_pod("waiting", "bound once a node matched", |p| {
            !node_name(p).is_empty()
        })
        .await;
    assert_eq!(node_name(&bound), "sim-node-2");
    sim.shutdown().await;
}
