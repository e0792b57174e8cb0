//! What the workload tests share: an API server with the workload controllers running, a
//! bounded wait for a condition, object builders, and marking Pods Running and Ready.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube_client::Api;
use kube_client::api::ListParams;
use rein_sim::cluster::{SimCluster, SimConfig};
use rein_testenv::TestEnv;

/// How long any wait in these tests may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

/// An API server and a simulated cluster on it (nodes, scheduler, kubelet and the workload
/// controllers), with fast timings; stops the cluster when dropped.
pub(crate) struct Sim {
    /// A client without a cache, as a user's.
    pub(crate) kube: kube_client::Client,
    /// The server.
    pub(crate) env: TestEnv,
    cluster: Option<SimCluster>,
}

impl Sim {
    /// Starts rein-testenv and a simulated cluster of three nodes on it.
    pub(crate) async fn start() -> Sim {
        Sim::start_with(|_| {}).await
    }

    /// Like [`Sim::start`], with the configuration changed by `configure` first (say, a node
    /// tainted from its creation, so no controller can have seen it untainted).
    pub(crate) async fn start_with(configure: impl FnOnce(&mut SimConfig)) -> Sim {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let env = TestEnv::start().await.expect("rein-testenv starts");
        let mut config = SimConfig::with_nodes(3);
        config.heartbeat.lease_renew_interval = Duration::from_millis(300);
        config.heartbeat.status_report_interval = Duration::from_millis(500);
        config.kubelet.job_pod_duration = Duration::from_millis(200);
        config.kubelet.crash_after = Duration::from_millis(200);
        config.kubelet.restart_backoff = Duration::from_millis(300);
        config.kubelet.max_restart_backoff = Duration::from_secs(1);
        configure(&mut config);
        let cluster = SimCluster::start(env.config(), config)
            .await
            .expect("the simulated cluster starts");
        Sim {
            kube: env.client(),
            env,
            cluster: Some(cluster),
        }
    }

    /// A namespaced API of the default namespace.
    pub(crate) fn api<K>(&self) -> Api<K>
    where
        K: kube_client::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as kube_client::Resource>::DynamicType: Default,
    {
        Api::namespaced(self.kube.clone(), "default")
    }

    /// The Pods of the default namespace matching `labels` (a label selector).
    pub(crate) async fn pods(&self, labels: &str) -> Vec<Pod> {
        self.api::<Pod>()
            .list(&ListParams::default().labels(labels))
            .await
            .map(|l| l.items)
            .unwrap_or_default()
    }

    /// Stops the simulated cluster and waits for it.
    pub(crate) async fn stop(mut self) {
        if let Some(cluster) = self.cluster.take() {
            let _ = cluster.shutdown().await;
        }
    }
}

/// Polls `check` every 50 ms until it answers `Some`, failing the test after [`DEADLINE`]
/// with `what` and the last answer's description.
pub(crate) async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "timed out waiting for {what}; last seen: {last}"
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `{key: value}`.
pub(crate) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A selector matching `labels`.
pub(crate) fn selector(labels: &BTreeMap<String, String>) -> LabelSelector {
    LabelSelector {
        match_labels: Some(labels.clone()),
        ..LabelSelector::default()
    }
}

/// A Pod template with one container of `image`, whose Pods stop at once when deleted.
pub(crate) fn template(labels: &BTreeMap<String, String>, image: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels.clone()),
            annotations: Some(self::labels(&[(rein_sim::kubelet::TERMINATION_DELAY, "0")])),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    }
}

/// Object metadata naming `name` in the default namespace.
pub(crate) fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        ..ObjectMeta::default()
    }
}

/// The names of `pods`.
pub(crate) fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect()
}

/// The Pods of `pods` not being deleted.
pub(crate) fn live(pods: Vec<Pod>) -> Vec<Pod> {
    pods.into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

/// The `(reason, message)` of every core/v1 Event about the `kind` named `name` in the default
/// namespace.
pub(crate) async fn events(sim: &Sim, kind: &str, name: &str) -> Vec<(String, String)> {
    let list = sim
        .api::<k8s_openapi::api::core::v1::Event>()
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    list.into_iter()
        .filter(|e| {
            e.involved_object.kind.as_deref() == Some(kind)
                && e.involved_object.name.as_deref() == Some(name)
        })
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}
