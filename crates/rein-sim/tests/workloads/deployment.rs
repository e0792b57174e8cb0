//! The Deployment controller: its ReplicaSets (name, hash label, revision annotations), the
//! Available and Progressing conditions, rolling updates within maxSurge and maxUnavailable,
//! Recreate, rollback, pausing, revision history, and `kubectl rollout status`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, ReplicaSet, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube_client::api::{ListParams, Patch, PatchParams, PostParams};
use rein_sim::workloads::deployment::{
    DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, POD_TEMPLATE_HASH_LABEL,
    REVISION_ANNOTATION, REVISION_HISTORY_ANNOTATION,
};

use crate::support::{Sim, events, eventually, labels, live, meta, names, selector, template};

fn deployment(name: &str, replicas: i32, image: &str) -> Deployment {
    let l = labels(&[("app", name)]);
    Deployment {
        metadata: meta(name),
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: selector(&l),
            template: template(&l, image),
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

fn rolling(d: &mut Deployment, max_surge: IntOrString, max_unavailable: IntOrString) {
    if let Some(spec) = d.spec.as_mut() {
        spec.strategy = Some(DeploymentStrategy {
            type_: Some("RollingUpdate".into()),
            rolling_update: Some(RollingUpdateDeployment {
                max_surge: Some(max_surge),
                max_unavailable: Some(max_unavailable),
            }),
        });
    }
}

async fn create(sim: &Sim, d: &Deployment) {
    sim.api::<Deployment>()
        .create(&PostParams::default(), d)
        .await
        .expect("the Deployment is created");
}

async fn set_image(sim: &Sim, name: &str, image: &str) {
    let patch = serde_json::json!({
        "spec": { "template": { "spec": { "containers": [{ "name": "app", "image": image }] } } }
    });
    sim.api::<Deployment>()
        .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .expect("the Deployment's image is changed");
}

/// The Deployment's ReplicaSets, oldest first.
async fn replica_sets(sim: &Sim, name: &str) -> Vec<ReplicaSet> {
    let mut list = sim
        .api::<ReplicaSet>()
        .list(&ListParams::default().labels(&format!("app={name}")))
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    list.sort_by(|a, b| {
        a.metadata
            .creation_timestamp
            .cmp(&b.metadata.creation_timestamp)
            .then_with(|| revision(a).cmp(&revision(b)))
    });
    list
}

fn revision(rs: &ReplicaSet) -> i64 {
    annotation(rs, REVISION_ANNOTATION)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn annotation<'a>(rs: &'a ReplicaSet, key: &str) -> Option<&'a str> {
    rs.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0)
}

fn condition(d: &Deployment, type_: &str) -> Option<(String, String)> {
    d.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()))
}

/// kubectl's `rollout status` check (polymorphichelpers/rollout_status.go), as a predicate.
fn rolled_out(d: &Deployment) -> bool {
    let status = d.status.clone().unwrap_or_default();
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    d.metadata.generation <= status.observed_generation
        && condition(d, "Progressing").map(|c| c.1) != Some("ProgressDeadlineExceeded".into())
        && status.updated_replicas.unwrap_or(0) >= want
        && status.replicas.unwrap_or(0) <= status.updated_replicas.unwrap_or(0)
        && status.available_replicas.unwrap_or(0) >= status.updated_replicas.unwrap_or(0)
}

async fn wait_deployment(
    sim: &Sim,
    name: &str,
    what: &str,
    check: impl Fn(&Deployment) -> bool,
) -> Deployment {
    eventually(what, || async {
        let d = sim
            .api::<Deployment>()
            .get(name)
            .await
            .map_err(|e| e.to_string())?;
        if check(&d) {
            Ok(d)
        } else {
            Err(format!("{:?}", d.status))
        }
    })
    .await
}

async fn wait_rolled_out(sim: &Sim, name: &str) -> Deployment {
    wait_deployment(sim, name, "the rollout to finish", |d| {
        rolled_out(d)
            && condition(d, "Available") == Some(("True".into(), "MinimumReplicasAvailable".into()))
            && condition(d, "Progressing") == Some(("True".into(), "NewReplicaSetAvailable".into()))
    })
    .await
}

#[tokio::test]
async fn a_deployment_creates_its_replica_set_and_becomes_available() {
    let sim = Sim::start().await;
    create(&sim, &deployment("web", 3, "nginx:1.27")).await;

    let d = wait_rolled_out(&sim, "web").await;
    let status = d.status.clone().unwrap_or_default();
    assert_eq!(status.replicas, Some(3));
    assert_eq!(status.updated_replicas, Some(3));
    assert_eq!(status.ready_replicas, Some(3));
    assert_eq!(status.available_replicas, Some(3));
    assert_eq!(status.unavailable_replicas, None);
    assert_eq!(
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION_ANNOTATION))
            .map(String::as_str),
        Some("1")
    );

    let rss = replica_sets(&sim, "web").await;
    assert_eq!(rss.len(), 1);
    let rs = &rss[0];
    let hash = rs
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(POD_TEMPLATE_HASH_LABEL))
        .cloned()
        .expect("the ReplicaSet has the pod-template-hash label");
    assert_eq!(
        rs.metadata.name.as_deref(),
        Some(format!("web-{hash}").as_str())
    );
    let rs_spec = rs.spec.clone().unwrap_or_default();
    assert_eq!(
        rs_spec
            .selector
            .match_labels
            .as_ref()
            .and_then(|m| m.get(POD_TEMPLATE_HASH_LABEL)),
        Some(&hash)
    );
    assert_eq!(annotation(rs, REVISION_ANNOTATION), Some("1"));
    assert_eq!(annotation(rs, DESIRED_REPLICAS_ANNOTATION), Some("3"));
    // maxSurge defaults to 25%, rounded up: one.
    assert_eq!(annotation(rs, MAX_REPLICAS_ANNOTATION), Some("4"));
    let owner = rs
        .metadata
        .owner_references
        .as_ref()
        .and_then(|r| r.first())
        .expect("the ReplicaSet has an owner");
    assert_eq!(owner.kind, "Deployment");
    assert_eq!(owner.controller, Some(true));
    assert_eq!(Some(&owner.uid), d.metadata.uid.as_ref());

    let pods = live(sim.pods("app=web").await);
    assert_eq!(pods.len(), 3);
    for pod in &pods {
        assert_eq!(
            pod.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(POD_TEMPLATE_HASH_LABEL)),
            Some(&hash)
        );
        assert!(
            pod.metadata
                .name
                .as_deref()
                .unwrap_or_default()
                .starts_with(&format!("web-{hash}-"))
        );
    }
    let events = events(&sim, "Deployment", "web").await;
    assert!(
        events
            .iter()
            .any(|(reason, message)| reason == "ScalingReplicaSet"
                && message == &format!("Scaled up replica set web-{hash} from 0 to 3")),
        "{events:?}"
    );
    sim.stop().await;
}

/// Samples the Deployment's ReplicaSets and Pods until stopped, failing on a moment with more
/// than `max_total` replicas wanted or fewer than `min_ready` ready Pods not being deleted.
fn watch_bounds(
    sim: &Sim,
    name: &str,
    max_total: i32,
    min_ready: usize,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<Vec<String>> {
    let (rss, pods) = (sim.api::<ReplicaSet>(), sim.api::<Pod>());
    let selector = format!("app={name}");
    tokio::spawn(async move {
        let mut violations = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            let list = ListParams::default().labels(&selector);
            if let (Ok(r), Ok(p)) = (rss.list(&list).await, pods.list(&list).await) {
                let wanted: i32 = r.items.iter().map(rs_replicas).sum();
                let ready = p
                    .items
                    .iter()
                    .filter(|p| p.metadata.deletion_timestamp.is_none())
                    .filter(|p| {
                        p.status
                            .as_ref()
                            .and_then(|s| s.conditions.as_ref())
                            .is_some_and(|c| {
                                c.iter().any(|c| c.type_ == "Ready" && c.status == "True")
                            })
                    })
                    .count();
                if wanted > max_total {
                    violations.push(format!("{wanted} replicas wanted"));
                }
                if ready < min_ready {
                    violations.push(format!("{ready} ready"));
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        violations
    })
}

#[tokio::test]
async fn a_template_change_rolls_out_within_max_surge_and_max_unavailable() {
    let sim = Sim::start().await;
    let mut d = deployment("api", 4, "nginx:1.27");
    rolling(
        &mut d,
        IntOrString::Int(1),
        IntOrString::String("25%".into()),
    );
    create(&sim, &d).await;
    wait_rolled_out(&sim, "api").await;
    let first = replica_sets(&sim, "api").await;
    assert_eq!(first.len(), 1);

    // 4 replicas, maxSurge 1, maxUnavailable 25% (rounded down: 1).
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch_bounds(&sim, "api", 5, 3, stop.clone());
    set_image(&sim, "api", "nginx:1.28").await;
    let d = wait_deployment(&sim, "api", "the new generation to roll out", |d| {
        d.metadata.generation == Some(2) && rolled_out(d)
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    let violations = watcher.await.expect("the watcher");
    assert!(violations.is_empty(), "bounds broken: {violations:?}");

    let rss = replica_sets(&sim, "api").await;
    assert_eq!(
        rss.len(),
        2,
        "{:?}",
        rss.iter().map(|r| &r.metadata.name).collect::<Vec<_>>()
    );
    let (old, new) = (&rss[0], &rss[1]);
    assert_eq!(old.metadata.name, first[0].metadata.name);
    assert_eq!(rs_replicas(old), 0);
    assert_eq!(rs_replicas(new), 4);
    assert_eq!(annotation(new, REVISION_ANNOTATION), Some("2"));
    assert_eq!(annotation(old, REVISION_ANNOTATION), Some("1"));
    assert_eq!(
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(REVISION_ANNOTATION))
            .map(String::as_str),
        Some("2")
    );
    let pods = live(sim.pods("app=api").await);
    let new_hash = new
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(POD_TEMPLATE_HASH_LABEL))
        .cloned();
    assert!(
        pods.iter().all(|p| p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(POD_TEMPLATE_HASH_LABEL))
            .cloned()
            == new_hash),
        "{:?}",
        names(&pods)
    );
    wait_rolled_out(&sim, "api").await;
    let events = events(&sim, "Deployment", "api").await;
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "ScalingReplicaSet" && m.starts_with("Scaled down replica set")),
        "{events:?}"
    );

    // `kubectl rollout undo` writes the old template back: the old ReplicaSet becomes the new
    // one, with the next revision, and no third ReplicaSet appears.
    set_image(&sim, "api", "nginx:1.27").await;
    wait_deployment(&sim, "api", "the rollback to roll out", |d| {
        d.metadata.generation == Some(3) && rolled_out(d)
    })
    .await;
    let rss = replica_sets(&sim, "api").await;
    assert_eq!(rss.len(), 2);
    let back = rss
        .iter()
        .find(|r| r.metadata.name == first[0].metadata.name)
        .expect("the first ReplicaSet");
    assert_eq!(annotation(back, REVISION_ANNOTATION), Some("3"));
    assert_eq!(annotation(back, REVISION_HISTORY_ANNOTATION), Some("1"));
    assert_eq!(rs_replicas(back), 4);
    sim.stop().await;
}

#[tokio::test]
async fn recreate_removes_every_old_pod_before_creating_new_ones() {
    let sim = Sim::start().await;
    let mut d = deployment("batch", 2, "busybox:1");
    if let Some(spec) = d.spec.as_mut() {
        spec.strategy = Some(DeploymentStrategy {
            type_: Some("Recreate".into()),
            rolling_update: None,
        });
    }
    create(&sim, &d).await;
    wait_rolled_out(&sim, "batch").await;
    let old_hash = replica_sets(&sim, "batch").await[0]
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(POD_TEMPLATE_HASH_LABEL))
        .cloned();

    let stop = Arc::new(AtomicBool::new(false));
    let mixed = {
        let pods = sim.api::<Pod>();
        let stop = stop.clone();
        let old_hash = old_hash.clone();
        tokio::spawn(async move {
            let mut seen_mixed = false;
            while !stop.load(Ordering::SeqCst) {
                if let Ok(list) = pods.list(&ListParams::default().labels("app=batch")).await {
                    let hashes: Vec<Option<String>> = list
                        .items
                        .iter()
                        .map(|p| {
                            p.metadata
                                .labels
                                .as_ref()
                                .and_then(|l| l.get(POD_TEMPLATE_HASH_LABEL))
                                .cloned()
                        })
                        .collect();
                    seen_mixed |=
                        hashes.contains(&old_hash) && hashes.iter().any(|h| *h != old_hash);
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            seen_mixed
        })
    };
    set_image(&sim, "batch", "busybox:2").await;
    wait_deployment(&sim, "batch", "the recreate rollout", |d| {
        d.metadata.generation == Some(2) && rolled_out(d)
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    assert!(
        !mixed.await.expect("the watcher"),
        "old and new Pods existed at the same time"
    );
    sim.stop().await;
}

#[tokio::test]
async fn a_paused_deployment_does_not_roll_out_until_resumed() {
    let sim = Sim::start().await;
    create(&sim, &deployment("paused", 2, "nginx:1.27")).await;
    wait_rolled_out(&sim, "paused").await;
    let pause = serde_json::json!({ "spec": { "paused": true } });
    sim.api::<Deployment>()
        .patch("paused", &PatchParams::default(), &Patch::Merge(&pause))
        .await
        .expect("paused");
    wait_deployment(&sim, "paused", "the DeploymentPaused condition", |d| {
        condition(d, "Progressing") == Some(("Unknown".into(), "DeploymentPaused".into()))
    })
    .await;
    set_image(&sim, "paused", "nginx:1.28").await;
    wait_deployment(&sim, "paused", "the change to be observed", |d| {
        d.status.as_ref().and_then(|s| s.observed_generation) == Some(3)
    })
    .await;
    assert_eq!(
        replica_sets(&sim, "paused").await.len(),
        1,
        "no rollout while paused"
    );

    let resume = serde_json::json!({ "spec": { "paused": false } });
    sim.api::<Deployment>()
        .patch("paused", &PatchParams::default(), &Patch::Merge(&resume))
        .await
        .expect("resumed");
    wait_deployment(&sim, "paused", "the rollout after resuming", |d| {
        d.metadata.generation == Some(4) && rolled_out(d)
    })
    .await;
    assert_eq!(replica_sets(&sim, "paused").await.len(), 2);
    sim.stop().await;
}

#[tokio::test]
async fn old_revisions_beyond_the_history_limit_are_deleted() {
    let sim = Sim::start().await;
    let mut d = deployment("hist", 1, "app:1");
    if let Some(spec) = d.spec.as_mut() {
        spec.revision_history_limit = Some(1);
    }
    create(&sim, &d).await;
    wait_rolled_out(&sim, "hist").await;
    for (generation, image) in [(2, "app:2"), (3, "app:3")] {
        set_image(&sim, "hist", image).await;
        wait_deployment(&sim, "hist", "the rollout", |d| {
            d.metadata.generation == Some(generation) && rolled_out(d)
        })
        .await;
    }
    let rss = eventually("one old revision kept", || async {
        let rss = replica_sets(&sim, "hist").await;
        if rss.len() == 2 {
            Ok(rss)
        } else {
            Err(format!(
                "{:?}",
                rss.iter().map(revision).collect::<Vec<_>>()
            ))
        }
    })
    .await;
    let mut revisions: Vec<i64> = rss.iter().map(revision).collect();
    revisions.sort();
    assert_eq!(revisions, [2, 3]);
    sim.stop().await;
}

#[tokio::test]
async fn kubectl_rollout_status_succeeds_once_rolled_out() {
    let available = tokio::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .await
        .is_ok_and(|o| o.status.success());
    if !available {
        eprintln!("skipping: kubectl is not on PATH");
        return;
    }
    let sim = Sim::start().await;
    let dir =
        std::env::temp_dir().join(format!("rein-sim-workloads-rollout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let kubeconfig = dir.join("kubeconfig");
    sim.env
        .write_kubeconfig(&kubeconfig)
        .expect("writing the kubeconfig");
    create(&sim, &deployment("shop", 3, "nginx:1.27")).await;
    let out = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["rollout", "status", "deployment/shop", "--timeout=30s"])
        .output()
        .await
        .expect("running kubectl");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "kubectl rollout status: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("deployment \"shop\" successfully rolled out"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    sim.stop().await;
}

#[tokio::test]
async fn a_rollout_that_makes_no_progress_exceeds_its_deadline() {
    let sim = Sim::start().await;
    let mut d = deployment("stuck", 2, "nginx:1.27");
    if let Some(spec) = d.spec.as_mut() {
        spec.progress_deadline_seconds = Some(1);
        let meta = spec.template.metadata.get_or_insert_with(Default::default);
        meta.annotations
            .get_or_insert_with(Default::default)
            .insert(rein_sim::kubelet::NEVER_READY.into(), "true".into());
    }
    create(&sim, &d).await;
    let d = wait_deployment(&sim, "stuck", "ProgressDeadlineExceeded", |d| {
        condition(d, "Progressing") == Some(("False".into(), "ProgressDeadlineExceeded".into()))
    })
    .await;
    assert_eq!(
        condition(&d, "Available"),
        Some(("False".into(), "MinimumReplicasUnavailable".into()))
    );
    let status = d.status.unwrap_or_default();
    assert_eq!(status.replicas, Some(2));
    assert_eq!(status.unavailable_replicas, Some(2));
    assert_eq!(status.available_replicas, None);
    sim.stop().await;
}

#[tokio::test]
async fn scaling_mid_rollout_scales_both_replica_sets_in_proportion() {
    let sim = Sim::start().await;
    let mut d = deployment("prop", 4, "nginx:1.27");
    rolling(&mut d, IntOrString::Int(2), IntOrString::Int(0));
    create(&sim, &d).await;
    wait_rolled_out(&sim, "prop").await;
    // The new Pods never become ready, so the rollout stops half way: old 4, new 2.
    let patch = serde_json::json!({ "spec": { "template": {
        "metadata": { "annotations": { rein_sim::kubelet::NEVER_READY: "true" } },
        "spec": { "containers": [{ "name": "app", "image": "nginx:1.28" }] }
    } } });
    sim.api::<Deployment>()
        .patch("prop", &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .expect("the template is changed");
    eventually("the rollout to stall at 4 old and 2 new", || async {
        let sizes: Vec<i32> = replica_sets(&sim, "prop")
            .await
            .iter()
            .map(rs_replicas)
            .collect();
        if sizes == [4, 2] {
            Ok(())
        } else {
            Err(format!("{sizes:?}"))
        }
    })
    .await;
    // Scaled from 4 to 8 (+4, and maxSurge 2 → 10 in all): the 6 extra replicas are shared
    // in proportion to the ReplicaSets' sizes.
    let scale = serde_json::json!({ "spec": { "replicas": 8 } });
    sim.api::<Deployment>()
        .patch("prop", &PatchParams::default(), &Patch::Merge(&scale))
        .await
        .expect("scaled");
    let sizes = eventually("the proportional scale-up", || async {
        let rss = replica_sets(&sim, "prop").await;
        let sizes: Vec<i32> = rss.iter().map(rs_replicas).collect();
        let annotated = rss
            .iter()
            .all(|rs| annotation(rs, DESIRED_REPLICAS_ANNOTATION) == Some("8"));
        if annotated && sizes.iter().sum::<i32>() == 10 {
            Ok(sizes)
        } else {
            Err(format!("{sizes:?}"))
        }
    })
    .await;
    assert_eq!(sizes, [7, 3], "4:2 of 10 is 6.67:3.33");
    sim.stop().await;
}
