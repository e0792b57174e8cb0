//! The DaemonSet controller: one ready Pod per eligible node (node taints against
//! tolerations), Pods pinned by node affinity with the daemon tolerations and the revision
//! label, ControllerRevisions, and rolling updates within `maxUnavailable` and `maxSurge`.

use std::cell::Cell;
use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategy, RollingUpdateDaemonSet,
};
use k8s_openapi::api::core::v1::{Pod, Toleration};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube_client::Api;
use kube_client::api::{ListParams, Patch, PatchParams, PostParams};

use crate::support::{Sim, eventually, labels, live, meta, names, selector, template};

fn daemon_set(name: &str, image: &str) -> DaemonSet {
    let l = labels(&[("app", name)]);
    DaemonSet {
        metadata: meta(name),
        spec: Some(DaemonSetSpec {
            selector: selector(&l),
            template: template(&l, image),
            ..DaemonSetSpec::default()
        }),
        status: None,
    }
}

/// What `kubectl rollout status daemonset/<name>` waits for.
fn rolled_out(ds: &DaemonSet) -> bool {
    let Some(status) = ds.status.as_ref() else {
        return false;
    };
    ds.metadata.generation <= status.observed_generation
        && status.updated_number_scheduled.unwrap_or(0) >= status.desired_number_scheduled
        && status.number_available.unwrap_or(0) >= status.desired_number_scheduled
}

/// Waits until the DaemonSet satisfies `check`.
async fn wait_for(
    sim: &Sim,
    name: &str,
    what: &str,
    check: impl Fn(&DaemonSet) -> bool,
) -> DaemonSet {
    eventually(what, || async {
        let ds = sim
            .api::<DaemonSet>()
            .get(name)
            .await
            .map_err(|e| e.to_string())?;
        if check(&ds) {
            Ok(ds)
        } else {
            Err(format!("{:?}", ds.status))
        }
    })
    .await
}

fn node_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn image_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

/// The nodes with a ready daemon Pod of `name` that is not being deleted.
async fn ready_nodes(sim: &Sim, name: &str) -> BTreeSet<String> {
    live(sim.pods(&format!("app={name}")).await)
        .iter()
        .filter(|p| is_ready(p))
        .map(node_of)
        .collect()
}

#[tokio::test]
async fn a_daemon_set_runs_one_ready_pod_per_node_but_not_on_a_tainted_node() {
    // Tainted from its creation: a taint added later may reach the DaemonSet controller's
    // cache after it placed a Pod there, and kube keeps such a Pod (a NoSchedule taint does not
    // evict) and counts it misscheduled.
    let sim = Sim::start_with(|config| {
        let node = std::mem::take(&mut config.nodes[2]);
        config.nodes[2] = node.taint("dedicated", "infra", "NoSchedule");
    })
    .await;

    sim.api::<DaemonSet>()
        .create(&PostParams::default(), &daemon_set("agent", "fluentd"))
        .await
        .expect("the DaemonSet is created");
    let ds = wait_for(
        &sim,
        "agent",
        "2 of 2 scheduled, ready and available",
        |ds| {
            ds.status.as_ref().is_some_and(|s| {
                s.desired_number_scheduled == 2
                    && s.current_number_scheduled == 2
                    && s.number_ready == 2
                    && s.number_available == Some(2)
                    && s.updated_number_scheduled == Some(2)
                    && s.number_misscheduled == 0
                    && s.number_unavailable.is_none()
            }) && rolled_out(ds)
        },
    )
    .await;
    assert_eq!(
        ds.status.as_ref().and_then(|s| s.observed_generation),
        ds.metadata.generation
    );

    let pods = live(sim.pods("app=agent").await);
    let on: BTreeSet<String> = pods.iter().map(node_of).collect();
    assert_eq!(
        on,
        BTreeSet::from(["sim-node-0".to_owned(), "sim-node-1".to_owned()]),
        "one Pod on each untainted node, none on the tainted one"
    );
    let revisions: Api<ControllerRevision> = sim.api();
    let history = revisions
        .list(&ListParams::default().labels("app=agent"))
        .await
        .expect("the revisions")
        .items;
    assert_eq!(history.len(), 1, "{:?}", names_of(&history));
    let revision = &history[0];
    let hash = revision
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("controller-revision-hash"))
        .cloned()
        .expect("the revision's hash label");
    assert_eq!(revision.metadata.name, Some(format!("agent-{hash}")));
    assert_eq!(revision.revision, 1);
    for pod in &pods {
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("agent-"));
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("controller-revision-hash"), Some(&hash));
        // Pinned by affinity, bound by the scheduler.
        let terms = pod
            .spec
            .as_ref()
            .and_then(|s| s.affinity.as_ref())
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|r| r.node_selector_terms.clone())
            .expect("a required node affinity");
        let fields = terms[0].match_fields.clone().unwrap_or_default();
        assert_eq!(fields[0].key, "metadata.name");
        assert_eq!(fields[0].operator, "In");
        assert_eq!(fields[0].values, Some(vec![node_of(pod)]));
        let tolerated: BTreeSet<String> = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|t| t.operator.as_deref() == Some("Exists"))
            .filter_map(|t| t.key)
            .collect();
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
            "node.kubernetes.io/disk-pressure",
            "node.kubernetes.io/memory-pressure",
            "node.kubernetes.io/pid-pressure",
            "node.kubernetes.io/unschedulable",
        ] {
            assert!(tolerated.contains(key), "{key} in {tolerated:?}");
        }
        let owner = pod
            .metadata
            .owner_references
            .as_ref()
            .and_then(|r| r.first())
            .expect("an owner");
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("DaemonSet", Some(true))
        );
    }

    // A DaemonSet tolerating the taint runs there too.
    let mut tolerant = daemon_set("tolerant", "node-exporter");
    if let Some(spec) = tolerant
        .spec
        .as_mut()
        .and_then(|s| s.template.spec.as_mut())
    {
        spec.tolerations = Some(vec![Toleration {
            key: Some("dedicated".into()),
            operator: Some("Equal".into()),
            value: Some("infra".into()),
            effect: Some("NoSchedule".into()),
            ..Toleration::default()
        }]);
    }
    sim.api::<DaemonSet>()
        .create(&PostParams::default(), &tolerant)
        .await
        .expect("the tolerant DaemonSet is created");
    wait_for(&sim, "tolerant", "3 of 3 ready", |ds| {
        ds.status
            .as_ref()
            .is_some_and(|s| s.desired_number_scheduled == 3 && s.number_ready == 3)
            && rolled_out(ds)
    })
    .await;
    assert_eq!(ready_nodes(&sim, "tolerant").await.len(), 3);
    sim.stop().await;
}

fn names_of(revisions: &[ControllerRevision]) -> Vec<String> {
    revisions
        .iter()
        .filter_map(|r| r.metadata.name.clone())
        .collect()
}

/// Sets the template's image.
async fn set_image(sim: &Sim, name: &str, image: &str) {
    let patch = serde_json::json!({
        "spec": { "template": { "spec": { "containers": [{ "name": "app", "image": image }] } } }
    });
    sim.api::<DaemonSet>()
        .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .expect("the template is changed");
}

#[tokio::test]
async fn a_template_change_rolls_out_one_node_at_a_time() {
    let sim = Sim::start().await;
    sim.api::<DaemonSet>()
        .create(&PostParams::default(), &daemon_set("logs", "fluentd:1"))
        .await
        .expect("the DaemonSet is created");
    wait_for(&sim, "logs", "3 ready", |ds| {
        ds.status.as_ref().is_some_and(|s| s.number_ready == 3) && rolled_out(ds)
    })
    .await;
    let before: BTreeSet<String> = names(&live(sim.pods("app=logs").await))
        .into_iter()
        .collect();

    set_image(&sim, "logs", "fluentd:2").await;
    // maxUnavailable 1 (the default): at every moment at least two nodes have a ready Pod.
    let least = Cell::new(3);
    let ds = eventually("the new template rolled out", || async {
        least.set(least.get().min(ready_nodes(&sim, "logs").await.len()));
        let ds = sim
            .api::<DaemonSet>()
            .get("logs")
            .await
            .map_err(|e| e.to_string())?;
        let pods = live(sim.pods("app=logs").await);
        let updated = pods.iter().filter(|p| image_of(p) == "fluentd:2").count();
        if rolled_out(&ds) && updated == 3 && pods.len() == 3 {
            Ok(ds)
        } else {
            Err(format!("{updated} updated; {:?}", ds.status))
        }
    })
    .await;
    let least = least.get();
    assert!(
        least >= 2,
        "at most one node lacked a ready Pod, saw {least} ready"
    );
    let after: BTreeSet<String> = names(&live(sim.pods("app=logs").await))
        .into_iter()
        .collect();
    assert!(before.is_disjoint(&after), "every Pod was replaced");

    let revisions: Api<ControllerRevision> = sim.api();
    let mut history = revisions
        .list(&ListParams::default().labels("app=logs"))
        .await
        .expect("the revisions")
        .items;
    history.sort_by_key(|r| r.revision);
    assert_eq!(
        history.iter().map(|r| r.revision).collect::<Vec<_>>(),
        [1, 2],
        "{:?}",
        names_of(&history)
    );
    let new_hash = history[1]
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("controller-revision-hash"))
        .cloned();
    for pod in live(sim.pods("app=logs").await) {
        assert_eq!(
            pod.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("controller-revision-hash"))
                .cloned(),
            new_hash
        );
    }
    let status = ds.status.unwrap_or_default();
    assert_eq!(status.updated_number_scheduled, Some(3));
    assert_eq!(status.number_available, Some(3));
    sim.stop().await;
}

#[tokio::test]
async fn with_max_surge_the_new_pod_is_ready_before_the_old_one_goes() {
    let sim = Sim::start().await;
    let mut ds = daemon_set("proxy", "envoy:1");
    if let Some(spec) = ds.spec.as_mut() {
        spec.update_strategy = Some(DaemonSetUpdateStrategy {
            type_: Some("RollingUpdate".into()),
            rolling_update: Some(RollingUpdateDaemonSet {
                max_surge: Some(IntOrString::Int(1)),
                max_unavailable: Some(IntOrString::Int(0)),
            }),
        });
    }
    sim.api::<DaemonSet>()
        .create(&PostParams::default(), &ds)
        .await
        .expect("the DaemonSet is created");
    wait_for(&sim, "proxy", "3 ready", |ds| {
        ds.status.as_ref().is_some_and(|s| s.number_ready == 3) && rolled_out(ds)
    })
    .await;

    set_image(&sim, "proxy", "envoy:2").await;
    let least = Cell::new(3);
    let most_pods = Cell::new(0);
    eventually("the surge rollout", || async {
        least.set(least.get().min(ready_nodes(&sim, "proxy").await.len()));
        let pods = live(sim.pods("app=proxy").await);
        most_pods.set(most_pods.get().max(pods.len()));
        let ds = sim
            .api::<DaemonSet>()
            .get("proxy")
            .await
            .map_err(|e| e.to_string())?;
        let updated = pods.iter().filter(|p| image_of(p) == "envoy:2").count();
        if rolled_out(&ds) && updated == 3 && pods.len() == 3 {
            Ok(())
        } else {
            Err(format!(
                "{updated} updated of {}; {:?}",
                pods.len(),
                ds.status
            ))
        }
    })
    .await;
    assert_eq!(least.get(), 3, "no node was ever without a ready Pod");
    let most_pods = most_pods.get();
    assert!(
        most_pods <= 4,
        "at most one surge Pod at a time, saw {most_pods} Pods"
    );
    sim.stop().await;
}

/// Runs kubectl against the simulated cluster: `None` when kubectl is not on the PATH, else
/// whether it succeeded and what it printed.
async fn kubectl(sim: &Sim, args: &[&str]) -> Option<(bool, String)> {
    let available = tokio::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .await
        .is_ok_and(|o| o.status.success());
    if !available {
        return None;
    }
    let dir = std::env::temp_dir().join(format!("rein-sim-daemonset-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let kubeconfig = dir.join("kubeconfig");
    sim.env
        .write_kubeconfig(&kubeconfig)
        .expect("writing the kubeconfig");
    let out = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(args)
        .output()
        .await
        .expect("running kubectl");
    let _ = std::fs::remove_dir_all(&dir);
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status.success(), printed))
}

#[tokio::test]
async fn kubectl_rollout_status_follows_a_daemon_set() {
    let sim = Sim::start().await;
    sim.api::<DaemonSet>()
        .create(&PostParams::default(), &daemon_set("monitor", "agent:1"))
        .await
        .expect("the DaemonSet is created");
    let args = ["rollout", "status", "daemonset/monitor", "--timeout=30s"];
    let Some((ok, printed)) = kubectl(&sim, &args).await else {
        eprintln!("skipping: kubectl is not on PATH");
        return;
    };
    assert!(ok, "kubectl rollout status: {printed}");
    assert!(
        printed.contains("daemon set \"monitor\" successfully rolled out"),
        "{printed}"
    );
    // And again through a template change.
    set_image(&sim, "monitor", "agent:2").await;
    let (ok, printed) = kubectl(&sim, &args).await.unwrap_or_default();
    assert!(ok, "kubectl rollout status: {printed}");
    let pods = live(sim.pods("app=monitor").await);
    assert!(
        pods.iter().all(|p| image_of(p) == "agent:2"),
        "{:?}",
        names(&pods)
    );
    let (ok, history) = kubectl(&sim, &["rollout", "history", "daemonset/monitor"])
        .await
        .unwrap_or_default();
    assert!(ok, "kubectl rollout history: {history}");
    assert!(history.contains('1') && history.contains('2'), "{history}");
    sim.stop().await;
}
