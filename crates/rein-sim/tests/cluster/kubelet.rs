//! The kubelet: Running and Ready with addresses and conditions, init containers first,
//! exits, crash loops, image pull failures, readiness, graceful deletion.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube_client::Api;
use kube_client::api::DeleteParams;
use serde_json::json;

use crate::support::{Sim, condition, has_condition, node_name, phase, pod};

/// The container status `name` of `pod` (init containers too).
fn container<'a>(
    pod: &'a Pod,
    name: &str,
) -> Option<&'a k8s_openapi::api::core::v1::ContainerStatus> {
    let status = pod.status.as_ref()?;
    status
        .container_statuses
        .iter()
        .flatten()
        .chain(status.init_container_statuses.iter().flatten())
        .find(|c| c.name == name)
}

fn ready(pod: &Pod) -> bool {
    has_condition(pod, "Ready", "True")
}

#[tokio::test]
async fn a_plain_pod_runs_and_becomes_ready() {
    let sim = Sim::fast().await;
    sim.create(pod("web")).await;
    let running = sim.wait_pod("web", "Running and Ready", ready).await;
    let status = running.status.clone().unwrap_or_default();
    assert_eq!(phase(&running), "Running");

    let node: Node = Api::all(sim.env.client())
        .get(node_name(&running))
        .await
        .expect("the Pod's node");
    let internal_ip = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_ref())
        .and_then(|a| a.iter().find(|a| a.type_ == "InternalIP"))
        .map(|a| a.address.clone())
        .expect("an InternalIP");
    assert_eq!(status.host_ip.as_deref(), Some(internal_ip.as_str()));
    assert_eq!(
        status.host_ips.as_ref().map(|ips| ips[0].ip.clone()),
        Some(internal_ip)
    );
    let cidr = node
        .spec
        .as_ref()
        .and_then(|s| s.pod_cidr.clone())
        .expect("a podCIDR");
    let prefix = cidr.trim_end_matches("0/24");
    let pod_ip = status.pod_ip.clone().expect("a podIP");
    assert!(pod_ip.starts_with(prefix), "{pod_ip} in {cidr}");
    assert_eq!(
        status.pod_ips.as_ref().map(|ips| ips[0].ip.clone()),
        Some(pod_ip)
    );
    assert!(status.start_time.is_some());
    assert_eq!(status.qos_class.as_deref(), Some("BestEffort"));

    for type_ in [
        "PodReadyToStartContainers",
        "Initialized",
        "ContainersReady",
        "Ready",
        "PodScheduled",
    ] {
        let c = condition(&running, type_).unwrap_or_else(|| panic!("condition {type_}"));
        assert_eq!(c.status, "True", "{type_}");
        assert!(
            c.last_transition_time.is_some(),
            "{type_} has a transition time"
        );
    }
    let app = container(&running, "app").expect("the app container's status");
    assert_eq!(app.image, "docker.io/library/nginx:1.27");
    assert!(
        app.image_id.starts_with("docker.io/library/nginx@sha256:"),
        "{}",
        app.image_id
    );
    assert!(
        app.container_id
            .as_deref()
            .is_some_and(|id| id.starts_with("containerd://"))
    );
    assert!(app.ready);
    assert_eq!(app.started, Some(true));
    assert_eq!(app.restart_count, 0);
    assert!(
        app.state
            .as_ref()
            .and_then(|s| s.running.as_ref())
            .and_then(|r| r.started_at.as_ref())
            .is_some()
    );
    assert_eq!(
        sim.wait_event("web", "Started").await,
        "Started container app"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn pod_ips_are_unique_per_node() {
    let sim = Sim::fast().await;
    for i in 0..9 {
        sim.create(pod(&format!("ip-{i}"))).await;
    }
    let mut ips = BTreeSet::new();
    for i in 0..9 {
        let running = sim.wait_pod(&format!("ip-{i}"), "Ready", ready).await;
        let ip = running.status.and_then(|s| s.pod_ip).expect("a podIP");
        assert!(ips.insert(ip.clone()), "{ip} handed out twice");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn init_containers_complete_before_the_containers_start() {
    let sim = Sim::fast().await;
    let mut manifest = pod("init");
    manifest["metadata"]["annotations"] = json!({"sim.rein.dev/init-duration": "700ms"});
    manifest["spec"]["initContainers"] = json!([
        {"name": "migrate", "image": "busybox"},
        {"name": "seed", "image": "busybox"}
    ]);
    sim.create(manifest).await;
    let initializing = sim
        .wait_pod("init", "the first init container running", |p| {
            container(p, "migrate")
                .and_then(|c| c.state.as_ref())
                .is_some_and(|s| s.running.is_some())
        })
        .await;
    assert_eq!(phase(&initializing), "Pending");
    let initialized = condition(&initializing, "Initialized").expect("Initialized");
    assert_eq!(initialized.status, "False");
    assert_eq!(
        initialized.reason.as_deref(),
        Some("ContainersNotInitialized")
    );
    assert_eq!(
        initialized.message.as_deref(),
        Some("containers with incomplete status: [migrate seed]")
    );
    let waiting = container(&initializing, "app")
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.waiting.as_ref())
        .and_then(|w| w.reason.clone());
    assert_eq!(waiting.as_deref(), Some("PodInitializing"));

    let running = sim.wait_pod("init", "Ready", ready).await;
    assert!(has_condition(&running, "Initialized", "True"));
    let mut last_finish = None;
    for name in ["migrate", "seed"] {
        let status = container(&running, name).expect("an init container status");
        let done = status
            .state
            .as_ref()
            .and_then(|s| s.terminated.clone())
            .expect("terminated");
        assert_eq!(done.exit_code, 0);
        assert_eq!(done.reason.as_deref(), Some("Completed"));
        assert!(status.ready);
        if let (Some(prev), Some(started)) = (&last_finish, &done.started_at) {
            assert!(
                started >= prev,
                "{name} started before the previous one finished"
            );
        }
        last_finish = done.finished_at;
    }
    let started = container(&running, "app")
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.running.as_ref())
        .and_then(|r| r.started_at.clone())
        .expect("the app container running");
    assert!(Some(&started) >= last_finish.as_ref());
    sim.shutdown().await;
}

#[tokio::test]
async fn an_annotated_pod_fails_with_its_exit_code() {
    let sim = Sim::fast().await;
    let mut failing = pod("failing");
    failing["metadata"]["annotations"] =
        json!({"sim.rein.dev/run-for": "300ms", "sim.rein.dev/exit-code": "3"});
    failing["spec"]["restartPolicy"] = json!("Never");
    sim.create(failing).await;
    let mut succeeding = pod("succeeding");
    succeeding["metadata"]["annotations"] = json!({"sim.rein.dev/run-for": "300ms"});
    succeeding["spec"]["restartPolicy"] = json!("Never");
    sim.create(succeeding).await;

    let failed = sim
        .wait_pod("failing", "Failed", |p| phase(p) == "Failed")
        .await;
    let terminated = container(&failed, "app")
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.clone())
        .expect("terminated");
    assert_eq!(terminated.exit_code, 3);
    assert_eq!(terminated.reason.as_deref(), Some("Error"));
    assert!(terminated.finished_at >= terminated.started_at);
    let ready = condition(&failed, "Ready").expect("Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_deref()),
        ("False", Some("PodFailed"))
    );

    let succeeded = sim
        .wait_pod("succeeding", "Succeeded", |p| phase(p) == "Succeeded")
        .await;
    let ready = condition(&succeeded, "Ready").expect("Ready");
    assert_eq!(ready.reason.as_deref(), Some("PodCompleted"));
    sim.shutdown().await;
}

#[tokio::test]
async fn a_crash_looping_pod_restarts_with_back_off() {
    let sim = Sim::fast().await;
    let mut manifest = pod("crash");
    manifest["metadata"]["annotations"] = json!({"sim.rein.dev/crash-loop": "true"});
    sim.create(manifest).await;
    let backing_off = sim
        .wait_pod("crash", "CrashLoopBackOff", |p| {
            container(p, "app")
                .and_then(|c| c.state.as_ref())
                .and_then(|s| s.waiting.as_ref())
                .is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"))
        })
        .await;
    let app = container(&backing_off, "app").expect("app");
    assert!(app.restart_count >= 1);
    assert!(!app.ready);
    let message = app
        .state
        .as_ref()
        .and_then(|s| s.waiting.as_ref())
        .and_then(|w| w.message.clone())
        .unwrap_or_default();
    assert!(
        message.starts_with("back-off ")
            && message.contains("restarting failed container=app pod=crash_default("),
        "{message}"
    );
    let last = app
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .expect("the last run terminated");
    assert_eq!(last.exit_code, 1);
    assert_eq!(phase(&backing_off), "Running");
    assert!(!has_condition(&backing_off, "Ready", "True"));

    let restarted = sim
        .wait_pod("crash", "three restarts", |p| {
            container(p, "app").is_some_and(|c| c.restart_count >= 3)
        })
        .await;
    assert_eq!(phase(&restarted), "Running");
    sim.wait_event("crash", "BackOff").await;
    sim.shutdown().await;
}

#[tokio::test]
async fn an_image_pull_failure_keeps_the_pod_pending() {
    let sim = Sim::fast().await;
    let mut manifest = pod("pull");
    manifest["metadata"]["annotations"] = json!({"sim.rein.dev/image-pull-error": "true"});
    sim.create(manifest).await;
    let reason = |p: &Pod| {
        container(p, "app")
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.clone())
    };
    let pulling = sim
        .wait_pod("pull", "ErrImagePull", |p| {
            matches!(
                reason(p).as_deref(),
                Some("ErrImagePull" | "ImagePullBackOff")
            )
        })
        .await;
    assert_eq!(phase(&pulling), "Pending");
    let backoff = sim
        .wait_pod("pull", "ImagePullBackOff", |p| {
            reason(p).as_deref() == Some("ImagePullBackOff")
        })
        .await;
    assert_eq!(phase(&backoff), "Pending");
    assert!(!has_condition(&backoff, "Ready", "True"));
    sim.shutdown().await;
}

#[tokio::test]
async fn a_never_ready_pod_runs_unready() {
    let sim = Sim::fast().await;
    let mut manifest = pod("unready");
    manifest["metadata"]["annotations"] = json!({"sim.rein.dev/never-ready": "true"});
    sim.create(manifest).await;
    let running = sim
        .wait_pod("unready", "Running", |p| phase(p) == "Running")
        .await;
    let ready = condition(&running, "Ready").expect("Ready");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason.as_deref(), Some("ContainersNotReady"));
    assert_eq!(
        ready.message.as_deref(),
        Some("containers with unready status: [app]")
    );
    assert_eq!(
        container(&running, "app").and_then(|c| c.started),
        Some(true)
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn graceful_deletion_finishes_after_the_grace_period() {
    let sim = Sim::fast().await;
    let mut slow = pod("slow");
    slow["spec"]["terminationGracePeriodSeconds"] = json!(2);
    sim.create(slow).await;
    let mut quick = pod("quick");
    quick["spec"]["terminationGracePeriodSeconds"] = json!(30);
    quick["metadata"]["annotations"] = json!({"sim.rein.dev/termination-delay": "200ms"});
    sim.create(quick).await;
    sim.wait_pod("slow", "Ready", ready).await;
    sim.wait_pod("quick", "Ready", ready).await;

    let deleted = Instant::now();
    sim.pods()
        .delete("slow", &DeleteParams::default())
        .await
        .expect("deleting");
    let terminating = sim
        .wait_pod("slow", "marked for deletion", |p| {
            p.metadata.deletion_timestamp.is_some()
        })
        .await;
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(2));
    sim.wait_gone("slow").await;
    // deletionTimestamp has whole seconds: at least one of the two seconds passed.
    assert!(
        deleted.elapsed() >= Duration::from_secs(1),
        "{:?}",
        deleted.elapsed()
    );
    sim.wait_event("slow", "Killing").await;

    let deleted = Instant::now();
    sim.pods()
        .delete("quick", &DeleteParams::default())
        .await
        .expect("deleting");
    sim.wait_gone("quick").await;
    assert!(
        deleted.elapsed() < Duration::from_secs(20),
        "{:?}",
        deleted.elapsed()
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn settled_pods_cause_no_more_writes() {
    // Default (slow) heartbeats, so the only writes would be loops of the controllers.
    let sim = crate::support::Sim::start(rein_sim::cluster::SimConfig::default()).await;
    sim.create(pod("steady")).await;
    let mut picky = pod("picky");
    picky["spec"]["nodeSelector"] = json!({"disktype": "ssd"});
    sim.create(picky).await;
    sim.wait_pod("steady", "Ready", ready).await;
    sim.wait_pod("picky", "Unschedulable", |p| {
        crate::support::unschedulable_message(p).is_some()
    })
    .await;
    sim.wait_event("picky", "FailedScheduling").await;
    // Let in-flight writes (and their watch events) land, then watch a quiet window: an
    // absence is what is checked, so a fixed window is the measure, not a wait for an event.
    tokio::time::sleep(Duration::from_millis(500)).await;
    sim.env.clear_requests();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let writes: Vec<String> = sim
        .env
        .requests()
        .into_iter()
        .filter(|r| r.method != "GET" && r.path.contains("/pods"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(
        writes.is_empty(),
        "settled Pods were written again: {writes:?}"
    );
    sim.shutdown().await;
}
