//! Draining a node of the simulated cluster: Pods leave through the Eviction subresource, a
//! PodDisruptionBudget (whose status rein-testenv computes) refuses with 429 the eviction that
//! would break it until the ReplicaSet has replaced the evicted Pod on another node, and the
//! cordoned node gets nothing new from the scheduler. Once with the typed client, once with
//! `kubectl drain --ignore-daemonsets --delete-emptydir-data` (skipped without kubectl).

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, Node, Pod, PodSpec, PodTemplateSpec, Volume,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube_client::Api;
use kube_client::api::{EvictParams, ListParams, Patch, PatchParams, PostParams};
use rein_sim::cluster::{SimCluster, SimConfig};
use rein_sim::kubelet::{START_LATENCY, TERMINATION_DELAY};
use rein_testenv::TestEnv;
use serde_json::json;
use tokio::process::Command;

/// How long any wait may take.
const DEADLINE: Duration = Duration::from_secs(30);

/// The 429's message (kube-apiserver's words).
const BLOCKED: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// A server and a cluster of two nodes with every workload controller.
struct Sim {
    env: TestEnv,
    cluster: Option<SimCluster>,
}

impl Sim {
    async fn start() -> Sim {
        let env = TestEnv::start().await.expect("rein-testenv starts");
        let mut config = SimConfig::with_nodes(2);
        config.heartbeat.lease_renew_interval = Duration::from_millis(300);
        config.heartbeat.status_report_interval = Duration::from_millis(500);
        let cluster = SimCluster::start(env.config(), config)
            .await
            .expect("the simulated cluster starts");
        Sim {
            env,
            cluster: Some(cluster),
        }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube_client::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube_client::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.env.client(), "default")
    }

    fn nodes(&self) -> Api<Node> {
        Api::all(self.env.client())
    }

    async fn stop(mut self) {
        if let Some(cluster) = self.cluster.take() {
            let _ = cluster.shutdown().await;
        }
    }
}

/// Polls `check` every 50 ms until it answers `Ok`, failing after [`DEADLINE`] with `what` and
/// the last answer.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) => assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}; last seen: {last}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn web_labels() -> BTreeMap<String, String> {
    BTreeMap::from([("app".to_owned(), "web".to_owned())])
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        ..ObjectMeta::default()
    }
}

/// A Pod template of `labels` with an `emptyDir` volume (local data `drain` must be told it
/// may delete), starting half a second after it is bound, stopping at once when deleted.
fn template(labels: BTreeMap<String, String>) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels),
            annotations: Some(BTreeMap::from([
                (TERMINATION_DELAY.to_owned(), "0".to_owned()),
                // Long enough that a replacement is not Ready between two evictions.
                (START_LATENCY.to_owned(), "500ms".to_owned()),
            ])),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some("nginx:1".into()),
                ..Container::default()
            }],
            volumes: Some(vec![Volume {
                name: "scratch".into(),
                empty_dir: Some(EmptyDirVolumeSource::default()),
                ..Volume::default()
            }]),
            ..PodSpec::default()
        }),
    }
}

/// Three replicas of `web` on the two nodes, and a budget keeping two available: one Pod may
/// be evicted at a time, and the node holding two of them cannot be drained at once. Answers
/// that node.
async fn three_replicas_two_available(sim: &Sim) -> String {
    let selector = LabelSelector {
        match_labels: Some(web_labels()),
        ..LabelSelector::default()
    };
    let rs = ReplicaSet {
        metadata: meta("web"),
        spec: Some(ReplicaSetSpec {
            replicas: Some(3),
            selector: selector.clone(),
            template: Some(template(web_labels())),
            ..ReplicaSetSpec::default()
        }),
        status: None,
    };
    sim.api::<ReplicaSet>()
        .create(&PostParams::default(), &rs)
        .await
        .expect("the ReplicaSet is created");
    let pdb = PodDisruptionBudget {
        metadata: meta("web"),
        spec: Some(PodDisruptionBudgetSpec {
            min_available: Some(IntOrString::Int(2)),
            selector: Some(selector),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    };
    sim.api::<PodDisruptionBudget>()
        .create(&PostParams::default(), &pdb)
        .await
        .expect("the budget is created");
    wait_disruptions_allowed(sim, 1).await;
    let pods = ready_web_pods(sim).await;
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for pod in &pods {
        *per_node.entry(node_of(pod)).or_default() += 1;
    }
    let (node, count) = per_node
        .into_iter()
        .max_by_key(|(_, count)| *count)
        .expect("the Pods are on nodes");
    assert!(count >= 2, "three Pods on two nodes: {pods:?}");
    node
}

/// Waits for three ready `web` Pods not being deleted and a budget allowing `allowed`.
async fn wait_disruptions_allowed(sim: &Sim, allowed: i32) {
    eventually(&format!("{allowed} disruption(s) allowed"), || async {
        let pdb = sim
            .api::<PodDisruptionBudget>()
            .get("web")
            .await
            .map_err(|e| e.to_string())?;
        let status = pdb.status.unwrap_or_default();
        if status.current_healthy == 3 && status.disruptions_allowed == allowed {
            Ok(())
        } else {
            Err(format!("{status:?}"))
        }
    })
    .await;
}

/// The `web` Pods, when three are ready and none is being deleted.
async fn ready_web_pods(sim: &Sim) -> Vec<Pod> {
    eventually("three ready web Pods", || async {
        let pods = sim
            .api::<Pod>()
            .list(&ListParams::default().labels("app=web"))
            .await
            .map_err(|e| e.to_string())?
            .items;
        let ready = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none() && is_ready(p))
            .count();
        if ready == 3 && pods.len() == 3 {
            Ok(pods)
        } else {
            Err(format!(
                "{:?}",
                pods.iter().map(describe).collect::<Vec<_>>()
            ))
        }
    })
    .await
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn node_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

fn describe(pod: &Pod) -> String {
    format!(
        "{} on {:?} ready={} deleting={}",
        pod.metadata.name.as_deref().unwrap_or_default(),
        node_of(pod),
        is_ready(pod),
        pod.metadata.deletion_timestamp.is_some()
    )
}

/// Waits until the three ready `web` Pods are all off `node`, which is unschedulable.
async fn all_moved_off(sim: &Sim, node: &str) -> Vec<Pod> {
    let pods = eventually("the web Pods off the drained node", || async {
        let pods = ready_web_pods(sim).await;
        if pods.iter().all(|p| node_of(p) != node) {
            Ok(pods)
        } else {
            Err(format!(
                "{:?}",
                pods.iter().map(describe).collect::<Vec<_>>()
            ))
        }
    })
    .await;
    let cordoned = sim.nodes().get(node).await.expect("the drained node");
    assert_eq!(
        cordoned.spec.and_then(|s| s.unschedulable),
        Some(true),
        "the drained node is cordoned"
    );
    pods
}

#[tokio::test]
async fn evictions_honour_the_disruption_budget_until_the_replica_set_has_replaced_the_pod() {
    let sim = Sim::start().await;
    let node = three_replicas_two_available(&sim).await;
    // kube-rs retries 429s by default (until the budget allows): this client shows them.
    let mut config = sim.env.config();
    config.default_retry = false;
    let no_retry = kube_client::Client::try_from(config).expect("a client without retries");
    let pods: Api<Pod> = Api::namespaced(no_retry, "default");
    let on_node: Vec<String> = ready_web_pods(&sim)
        .await
        .iter()
        .filter(|p| node_of(p) == node)
        .filter_map(|p| p.metadata.name.clone())
        .collect();

    // Cordon, as `kubectl cordon` does.
    sim.nodes()
        .patch(
            &node,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .expect("the node is cordoned");

    // The first eviction leaves two available: allowed.
    pods.evict(&on_node[0], &EvictParams::default())
        .await
        .expect("the first eviction is allowed");
    // The second would leave one: refused, with 429 and kube's words.
    match pods.evict(&on_node[1], &EvictParams::default()).await {
        Err(kube_client::Error::Api(status)) => {
            assert_eq!(status.code, 429, "{status:?}");
            assert_eq!(status.reason, "TooManyRequests", "{status:?}");
            assert_eq!(status.message, BLOCKED, "{status:?}");
        }
        other => panic!("the second eviction should be refused, got {other:?}"),
    }
    let still = pods.get(&on_node[1]).await.expect("the refused Pod");
    assert!(still.metadata.deletion_timestamp.is_none());

    // The ReplicaSet replaces the evicted Pod on the other node; once it is ready the budget
    // allows the second eviction.
    wait_disruptions_allowed(&sim, 1).await;
    pods.evict(&on_node[1], &EvictParams::default())
        .await
        .expect("the second eviction is allowed now");
    let moved = all_moved_off(&sim, &node).await;
    assert!(
        moved
            .iter()
            .all(|p| !on_node.contains(p.metadata.name.as_ref().expect("a name"))),
        "the evicted Pods are gone: {:?}",
        moved.iter().map(describe).collect::<Vec<_>>()
    );
    sim.stop().await;
}

/// Runs kubectl with `kubeconfig` (on tokio's process support, so the simulation keeps running
/// on this runtime meanwhile).
async fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--request-timeout=30s")
        .args(args)
        .output()
        .await
        .expect("running kubectl")
}

async fn kubectl_available() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .await
        .is_ok_and(|o| o.status.success())
}

fn output(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test]
async fn kubectl_drain_cordons_evicts_waits_on_the_budget_and_leaves_daemon_set_pods() {
    if !kubectl_available().await {
        eprintln!("skipping: kubectl is not on PATH");
        return;
    }
    let sim = Sim::start().await;
    let agent_labels = BTreeMap::from([("app".to_owned(), "agent".to_owned())]);
    let agent = DaemonSet {
        metadata: meta("agent"),
        spec: Some(DaemonSetSpec {
            selector: LabelSelector {
                match_labels: Some(agent_labels.clone()),
                ..LabelSelector::default()
            },
            template: template(agent_labels),
            ..DaemonSetSpec::default()
        }),
        status: None,
    };
    sim.api::<DaemonSet>()
        .create(&PostParams::default(), &agent)
        .await
        .expect("the DaemonSet is created");
    let node = three_replicas_two_available(&sim).await;
    let agent_on_node = eventually("the DaemonSet's Pod on the node", || async {
        let pods = sim
            .api::<Pod>()
            .list(&ListParams::default().labels("app=agent"))
            .await
            .map_err(|e| e.to_string())?
            .items;
        pods.iter()
            .find(|p| node_of(p) == node && is_ready(p))
            .and_then(|p| p.metadata.name.clone())
            .ok_or_else(|| format!("{:?}", pods.iter().map(describe).collect::<Vec<_>>()))
    })
    .await;

    let dir = std::env::temp_dir().join(format!("rein-sim-drain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let kubeconfig = dir.join("kubeconfig");
    sim.env
        .write_kubeconfig(&kubeconfig)
        .expect("writing the kubeconfig");

    // Without the flags, drain refuses the DaemonSet's Pod and the emptyDir data.
    let refused = kubectl(&kubeconfig, &["drain", &node, "--timeout=30s"]).await;
    let said = output(&refused);
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains(&format!("node/{node} cordoned")), "{said}");
    assert!(
        said.contains("cannot delete DaemonSet-managed Pods"),
        "{said}"
    );
    assert!(
        said.contains("cannot delete Pods with local storage"),
        "{said}"
    );

    let drained = kubectl(
        &kubeconfig,
        &[
            "drain",
            &node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=30s",
        ],
    )
    .await;
    let said = output(&drained);
    assert!(drained.status.success(), "kubectl drain: {said}");
    assert!(
        said.contains(&format!("node/{node} already cordoned")),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "Warning: ignoring DaemonSet-managed Pods: default/{agent_on_node}"
        )),
        "{said}"
    );
    // One of the two Pods waited on the budget (kubectl retries every 5 s).
    assert!(said.contains(BLOCKED), "{said}");
    assert_eq!(said.matches(" evicted").count(), 2, "{said}");
    assert!(said.contains(&format!("node/{node} drained")), "{said}");

    all_moved_off(&sim, &node).await;
    let agent = sim
        .api::<Pod>()
        .get(&agent_on_node)
        .await
        .expect("the DaemonSet's Pod stays");
    assert!(agent.metadata.deletion_timestamp.is_none());
    let _ = std::fs::remove_dir_all(&dir);
    sim.stop().await;
}
