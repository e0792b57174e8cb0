//! The simulated nodes: what they register, their Leases, NotReady and taint eviction.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube_client::Api;
use rein_sim::nodes::NodeHealth;
use serde_json::json;

use crate::support::{DEADLINE, Sim, condition, has_condition, node_name, pod};

async fn node(sim: &Sim, name: &str) -> Node {
    Api::<Node>::all(sim.env.client())
        .get(name)
        .await
        .expect("getting the Node")
}

fn ready_status(node: &Node) -> Option<String> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

fn taint_keys(node: &Node) -> Vec<(String, String)> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .map(|t| (t.key.clone(), t.effect.clone()))
        .collect()
}

#[tokio::test]
async fn nodes_register_as_a_kubelet_does() {
    let sim = Sim::fast().await;
    assert_eq!(
        sim.cluster.node_names(),
        ["sim-node-0", "sim-node-1", "sim-node-2"]
    );
    for (i, name) in sim.cluster.node_names().iter().enumerate() {
        let n = node(&sim, name).await;
        let labels = n.metadata.labels.clone().unwrap_or_default();
        for (k, v) in [
            ("kubernetes.io/hostname", name.as_str()),
            ("kubernetes.io/os", "linux"),
            ("kubernetes.io/arch", "amd64"),
            ("node.kubernetes.io/instance-type", "sim"),
        ] {
            assert_eq!(
                labels.get(k).map(String::as_str),
                Some(v),
                "{name}: label {k}"
            );
        }
        let spec = n.spec.clone().unwrap_or_default();
        assert_eq!(spec.pod_cidr, Some(format!("10.244.{i}.0/24")));
        let status = n.status.clone().unwrap_or_default();
        let allocatable = status.allocatable.clone().unwrap_or_default();
        assert_eq!(allocatable.get("cpu").map(|q| q.0.as_str()), Some("4"));
        assert_eq!(
            allocatable.get("memory").map(|q| q.0.as_str()),
            Some("16Gi")
        );
        assert_eq!(allocatable.get("pods").map(|q| q.0.as_str()), Some("110"));
        let conditions: Vec<(String, String)> = status
            .conditions
            .iter()
            .flatten()
            .map(|c| (c.type_.clone(), c.status.clone()))
            .collect();
        for expected in [
            ("MemoryPressure", "False"),
            ("DiskPressure", "False"),
            ("PIDPressure", "False"),
            ("Ready", "True"),
        ] {
            assert!(
                conditions.contains(&(expected.0.to_owned(), expected.1.to_owned())),
                "{name}: {conditions:?}"
            );
        }
        let addresses = status.addresses.clone().unwrap_or_default();
        assert!(
            addresses.iter().any(|a| a.type_ == "InternalIP"),
            "{addresses:?}"
        );
        let info = status.node_info.clone().unwrap_or_default();
        assert_eq!(info.operating_system, "linux");
        assert!(!info.kubelet_version.is_empty());
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn node_leases_are_renewed_and_status_kept_fresh() {
    let sim = Sim::fast().await;
    let leases: Api<Lease> = Api::namespaced(sim.env.client(), "kube-node-lease");
    let lease = leases.get("sim-node-0").await.expect("the node Lease");
    let spec = lease.spec.clone().unwrap_or_default();
    assert_eq!(spec.holder_identity.as_deref(), Some("sim-node-0"));
    assert_eq!(spec.lease_duration_seconds, Some(40));
    let owner = lease.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owner.first().map(|o| o.kind.as_str()), Some("Node"));
    let first = spec.renew_time.expect("a renewTime");

    let heartbeat = |n: &Node| {
        n.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .and_then(|c| c.last_heartbeat_time.clone())
    };
    let first_heartbeat = heartbeat(&node(&sim, "sim-node-0").await);

    let started = tokio::time::Instant::now();
    loop {
        let renewed = leases
            .get("sim-node-0")
            .await
            .ok()
            .and_then(|l| l.spec)
            .and_then(|s| s.renew_time);
        if renewed.as_ref().is_some_and(|r| r.0 > first.0) {
            break;
        }
        assert!(started.elapsed() < DEADLINE, "the Lease was not renewed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The Ready condition's heartbeat moves on too (whole seconds: wait for the next one).
    loop {
        if heartbeat(&node(&sim, "sim-node-0").await) > first_heartbeat {
            break;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "the node status was not reported again"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn a_not_ready_node_is_tainted_and_its_pods_evicted_after_their_toleration() {
    let sim = Sim::fast().await;
    let pin = |name: &str, tolerations: serde_json::Value| {
        let mut manifest = pod(name);
        manifest["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": "sim-node-1"});
        manifest["spec"]["tolerations"] = tolerations;
        manifest["spec"]["terminationGracePeriodSeconds"] = json!(1);
        manifest
    };
    let not_ready = |seconds: Option<i64>| {
        let mut t = json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"});
        if let Some(s) = seconds {
            t["tolerationSeconds"] = json!(s);
        }
        json!([t])
    };
    sim.create(pin("brief", not_ready(Some(1)))).await;
    sim.create(pin("forever", not_ready(None))).await;
    for name in ["brief", "forever"] {
        sim.wait_pod(name, "Ready", |p| has_condition(p, "Ready", "True"))
            .await;
    }

    sim.cluster
        .set_ready("sim-node-1", false)
        .await
        .expect("making the node NotReady");
    let tainted = node(&sim, "sim-node-1").await;
    assert_eq!(ready_status(&tainted).as_deref(), Some("False"));
    let keys = taint_keys(&tainted);
    for effect in ["NoSchedule", "NoExecute"] {
        assert!(
            keys.contains(&("node.kubernetes.io/not-ready".to_owned(), effect.to_owned())),
            "{keys:?}"
        );
    }

    // The Pods on it stop being ready; the one tolerating the taint for a second goes.
    let unready = sim
        .wait_pod("forever", "not Ready", |p| {
            has_condition(p, "Ready", "False")
        })
        .await;
    assert_eq!(node_name(&unready), "sim-node-1");
    let evicted = sim
        .wait_pod("brief", "evicted", |p| {
            p.metadata.deletion_timestamp.is_some()
        })
        .await;
    let disruption = condition(&evicted, "DisruptionTarget").expect("DisruptionTarget");
    assert_eq!(disruption.reason.as_deref(), Some("DeletionByTaintManager"));
    assert_eq!(
        sim.wait_event("brief", "TaintManagerEviction").await,
        "Marking for deletion Pod default/brief"
    );
    // Its containers stop within the grace period and the kubelet finishes the deletion.
    sim.wait_gone("brief").await;
    // Nothing new lands there.
    sim.create(pod("new")).await;
    let placed = sim
        .wait_pod("new", "bound", |p| !node_name(p).is_empty())
        .await;
    assert_ne!(node_name(&placed), "sim-node-1");

    sim.cluster
        .set_ready("sim-node-1", true)
        .await
        .expect("making the node Ready");
    let healed = node(&sim, "sim-node-1").await;
    assert_eq!(ready_status(&healed).as_deref(), Some("True"));
    assert!(taint_keys(&healed).is_empty(), "{:?}", taint_keys(&healed));
    sim.wait_pod("forever", "Ready again", |p| {
        has_condition(p, "Ready", "True")
    })
    .await;
    assert!(sim.pods().get_opt("forever").await.ok().flatten().is_some());
    assert!(matches!(
        sim.cluster.set_ready("no-such-node", false).await,
        Err(rein_sim::cluster::Error::UnknownNode(_))
    ));
    sim.shutdown().await;
}

#[tokio::test]
async fn an_unreachable_node_goes_stale_and_its_evictions_wait_for_it() {
    let sim = Sim::fast().await;
    let mut manifest = pod("stranded");
    manifest["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": "sim-node-2"});
    manifest["spec"]["terminationGracePeriodSeconds"] = json!(1);
    manifest["spec"]["tolerations"] = json!([{
        "key": "node.kubernetes.io/unreachable", "operator": "Exists",
        "effect": "NoExecute", "tolerationSeconds": 1
    }]);
    sim.create(manifest).await;
    sim.wait_pod("stranded", "Ready", |p| has_condition(p, "Ready", "True"))
        .await;

    sim.cluster
        .set_health("sim-node-2", NodeHealth::Unreachable)
        .await
        .expect("making the node unreachable");
    let stale = node(&sim, "sim-node-2").await;
    assert_eq!(ready_status(&stale).as_deref(), Some("Unknown"));
    let ready = stale
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .cloned()
        .expect("Ready");
    assert_eq!(ready.reason.as_deref(), Some("NodeStatusUnknown"));
    assert_eq!(
        ready.message.as_deref(),
        Some("Kubelet stopped posting node status.")
    );
    let keys = taint_keys(&stale);
    assert!(
        keys.contains(&(
            "node.kubernetes.io/unreachable".to_owned(),
            "NoExecute".to_owned()
        )),
        "{keys:?}"
    );

    // Marked not Ready, then evicted after its second of toleration ...
    let evicted = sim
        .wait_pod("stranded", "evicted", |p| {
            p.metadata.deletion_timestamp.is_some() && has_condition(p, "Ready", "False")
        })
        .await;
    // ... but nobody finishes the deletion while the kubelet is gone: it is still there a
    // second after its grace period ended.
    let deadline = evicted
        .metadata
        .deletion_timestamp
        .as_ref()
        .map(|t| t.0)
        .expect("a deletionTimestamp");
    let leases: Api<Lease> = Api::namespaced(sim.env.client(), "kube-node-lease");
    let renewed = |l: Lease| l.spec.and_then(|s| s.renew_time).map(|t| t.0);
    let frozen = renewed(leases.get("sim-node-2").await.expect("the Lease"));
    loop {
        assert!(
            sim.pods()
                .get_opt("stranded")
                .await
                .ok()
                .flatten()
                .is_some(),
            "the Pod went while its node was unreachable"
        );
        let now = k8s_openapi::jiff::Timestamp::now();
        if now.as_second() > deadline.as_second() + 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        renewed(leases.get("sim-node-2").await.expect("the Lease")),
        frozen,
        "the Lease of an unreachable node is not renewed"
    );

    // Back: the kubelet finishes the deletion.
    sim.cluster
        .set_health("sim-node-2", NodeHealth::Ready)
        .await
        .expect("making the node Ready");
    sim.wait_gone("stranded").await;
    sim.shutdown().await;
}
