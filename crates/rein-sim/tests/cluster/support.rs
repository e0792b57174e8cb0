//! Shared helpers: a rein-testenv server with a simulated cluster on it, fast timings, Pod
//! manifests, and waits on conditions with deadlines.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod};
use kube_client::Api;
use kube_client::api::{ListParams, PostParams};
use rein_sim::cluster::{SimCluster, SimConfig};
use rein_testenv::TestEnv;
use serde_json::Value;

/// How long any wait in these tests may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);

/// A server and a simulated cluster on it.
pub(crate) struct Sim {
    pub(crate) env: TestEnv,
    pub(crate) cluster: SimCluster,
}

impl Sim {
    /// Starts a server and a cluster with `config`.
    pub(crate) async fn start(config: SimConfig) -> Sim {
        let env = TestEnv::start().await.expect("starting rein-testenv");
        let cluster = SimCluster::start(env.config(), config)
            .await
            .expect("starting the simulated cluster");
        Sim { env, cluster }
    }

    /// The default cluster with fast timings.
    pub(crate) async fn fast() -> Sim {
        Sim::start(fast_config(3)).await
    }

    pub(crate) fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.env.client(), "default")
    }

    /// Creates a Pod from a JSON manifest in `default`.
    pub(crate) async fn create(&self, manifest: Value) -> Pod {
        let pod: Pod = serde_json::from_value(manifest).expect("a Pod manifest");
        self.pods()
            .create(&PostParams::default(), &pod)
            .await
            .expect("creating the Pod")
    }

    /// Waits until `check` holds for the Pod `name`, returning it; fails after the deadline
    /// with `what` and the last state seen.
    pub(crate) async fn wait_pod(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&Pod) -> bool,
    ) -> Pod {
        let api = self.pods();
        let started = tokio::time::Instant::now();
        let mut last = None;
        loop {
            if let Ok(Some(pod)) = api.get_opt(name).await {
                if check(&pod) {
                    return pod;
                }
                last = Some(pod);
            }
            assert!(
                started.elapsed() < DEADLINE,
                "pod {name}: {what} did not happen within {DEADLINE:?}; last seen: {}",
                serde_json::to_string_pretty(&last).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Waits until the Pod `name` is gone.
    pub(crate) async fn wait_gone(&self, name: &str) {
        let api = self.pods();
        let started = tokio::time::Instant::now();
        while api.get_opt(name).await.ok().flatten().is_some() {
            assert!(
                started.elapsed() < DEADLINE,
                "pod {name} was not deleted within {DEADLINE:?}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Waits until an Event with `reason` about the Pod `name` exists; returns its message.
    pub(crate) async fn wait_event(&self, name: &str, reason: &str) -> String {
        let api: Api<Event> = Api::namespaced(self.env.client(), "default");
        let started = tokio::time::Instant::now();
        loop {
            let events = api
                .list(&ListParams::default())
                .await
                .expect("listing Events");
            if let Some(e) = events.items.iter().find(|e| {
                e.involved_object.name.as_deref() == Some(name)
                    && e.reason.as_deref() == Some(reason)
            }) {
                return e.message.clone().unwrap_or_default();
            }
            assert!(
                started.elapsed() < DEADLINE,
                "no {reason} event about {name} within {DEADLINE:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) async fn shutdown(self) {
        self.cluster
            .shutdown()
            .await
            .expect("shutting the cluster down");
    }
}

/// `count` default nodes, with heartbeats and back-offs short enough for tests.
pub(crate) fn fast_config(count: usize) -> SimConfig {
    let mut config = SimConfig::with_nodes(count);
    config.heartbeat.lease_renew_interval = Duration::from_millis(300);
    config.heartbeat.status_report_interval = Duration::from_millis(500);
    config.kubelet.restart_backoff = Duration::from_millis(300);
    config.kubelet.max_restart_backoff = Duration::from_secs(1);
    config.kubelet.crash_after = Duration::from_millis(200);
    config.kubelet.job_pod_duration = Duration::from_millis(200);
    // The scheduler keeps kube's 5-minute periodic retry: tests that see an unschedulable Pod
    // bound later prove the event-driven retry.
    config
}

/// A one-container Pod manifest, to extend.
pub(crate) fn pod(name: &str) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    })
}

/// The condition `type_` of `pod`.
pub(crate) fn condition<'a>(
    pod: &'a Pod,
    type_: &str,
) -> Option<&'a k8s_openapi::api::core::v1::PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// Whether the condition `type_` of `pod` has `status`.
pub(crate) fn has_condition(pod: &Pod, type_: &str, status: &str) -> bool {
    condition(pod, type_).is_some_and(|c| c.status == status)
}

pub(crate) fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

pub(crate) fn node_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or_default()
}

/// The Unschedulable message of `pod`, once it has one.
pub(crate) fn unschedulable_message(pod: &Pod) -> Option<&str> {
    condition(pod, "PodScheduled")
        .filter(|c| c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
        .and_then(|c| c.message.as_deref())
}
